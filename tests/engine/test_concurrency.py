"""Several `ix` processes on one experiment at once: runs never share an id, the trial log
never interleaves, readers always see whole lines, and locks die with their holder.

The real `ix` in subprocesses. Half the trial lines here are ~140 KB (the mock names a very
long skill), far larger than any I/O buffer, so a line written in pieces would interleave
with the other run's lines and fail to parse.
"""

import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from conftest import _ix_argv, ix_in_process, run_ix, stable_summary, write

LONG_SKILL = "x" * 70_000
CASES, TRIALS = 16, 5
TOTAL = CASES * TRIALS


def experiment(lab: Path, latency_ms: int = 40) -> Path:
    d = lab / "e"
    for i in range(CASES):
        e = "must_trigger" if i % 2 else "should_not_trigger"
        write(d / "cases" / f"c{i:02d}.md", f"---\nexpectation: {e}\n---\nprompt {i}\n")
    write(d / "experiment.yaml",
          f"name: e\nskill: t\ntrials: {TRIALS}\nconcurrency: 4\nseed: 3\n"
          f"runtime: {{kind: mock, default_rate: 0.5, latency_ms: {latency_ms}, "
          f"error_rates: {{c05: 0.3}}, skill: {LONG_SKILL}}}\n")
    return d


def start(lab: Path, *args: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IX_")}
    env["XDG_CONFIG_HOME"] = str(lab / ".no-user-config")
    return subprocess.Popen([*_ix_argv(), *args, "--lab", str(lab)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def lines(d: Path) -> list[bytes]:
    path = d / "results" / "trials.jsonl"
    return path.read_bytes().splitlines() if path.is_file() else []


def records(d: Path) -> list[dict]:
    return [json.loads(x) for x in lines(d)]  # every line must parse




def wait_for_lines(d: Path, n: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while len(lines(d)) < n:
        assert time.monotonic() < deadline, f"fewer than {n} trial lines"
        time.sleep(0.01)


def reference(tmp_path: Path) -> tuple[dict, set]:
    d = experiment(tmp_path / "reference", latency_ms=0)  # to compare with: in process
    assert ix_in_process("run", "--lab", str(d.parent)).code == 0
    s = json.loads((d / "results" / "summary-latest.json").read_text())
    return stable_summary(s), {(x["subject"], x["probe_id"], x["trial"]) for x in records(d)}


def test_two_runs_at_once_and_readers_meanwhile_all_see_a_valid_log(lab, tmp_path):
    ref, keys = reference(tmp_path)
    d = experiment(lab)
    first = ix_in_process("run", "--lab", str(lab))  # so that `ix report` has a finished run
    assert first.code == 0, first.output
    a, b = start(lab, "run"), start(lab, "run")
    reads = 0
    while a.poll() is None or b.poll() is None:
        for argv in (["results", "--json", "--group-by", "run"], ["report", "--json"]):
            r = run_ix(*argv, "--lab", str(lab))
            assert r.code == 0, r.output
            data = json.loads(r.stdout)
            if argv[0] == "results":
                assert all(row["n"] <= TOTAL for row in data)
            reads += 1
    assert reads >= 2
    for proc in (a, b):
        _, err = proc.communicate()
        assert proc.returncode == 0, err
        assert "Traceback" not in err
    log = records(d)  # every line parses: no bytes of one line inside another
    assert max(map(len, lines(d))) > 100_000  # (the long lines were written)
    by_run: dict[str, list[tuple]] = {}
    for x in log:
        by_run.setdefault(x["run_id"], []).append((x["subject"], x["probe_id"], x["trial"]))
    assert len(by_run) == 3  # three runs, three ids
    for run_id, seen in by_run.items():
        assert len(seen) == len(set(seen)) and set(seen) == keys, run_id
        summary = json.loads((d / "results" / "runs" / run_id / "summary.json").read_text())
        assert stable_summary(summary) == ref  # each run counted its own trials, all of them
        spec = yaml.safe_load((d / "results" / "runs" / run_id / "spec.yaml").read_text())
        assert spec["status"] == "completed" and spec["trials_written"] == TOTAL


def test_runs_started_in_the_same_second_never_share_a_run_id(lab):
    d = experiment(lab, latency_ms=0)
    procs = [start(lab, "run", "--trials", "1", "--filter", "c0*") for _ in range(6)]
    for proc in procs:
        _, err = proc.communicate()
        assert proc.returncode == 0, err
    folders = sorted((d / "results" / "runs").iterdir())
    assert len(folders) == 6
    assert all((f / "spec.yaml").is_file() for f in folders)  # a run folder is never empty
    ids = [x["run_id"] for x in records(d)]
    assert sorted(set(ids)) == [f.name for f in folders]
    assert all(ids.count(i) == 10 for i in set(ids))
    assert not [p for p in (d / "results").iterdir() if p.name.startswith(".run-")]


def test_a_colliding_run_id_is_drawn_again(tmp_path, monkeypatch):
    from ix.store import runs

    results = tmp_path / "results"
    started = datetime(2026, 11, 26, 2, 15, tzinfo=UTC)
    taken = runs.run_dir(results, "20261126T021500Z-000aaa")
    taken.mkdir(parents=True)
    (taken / "spec.yaml").write_text("run_id: someone else's\n")
    draws = iter(["aaaa", "aaaa", "bbbb"])
    real = runs.secrets.token_hex
    monkeypatch.setattr(runs.secrets, "token_hex",
                        lambda n=None: next(draws) if n == 2 else real(n))
    run_id, folder, lock = runs.create_run(results, started, lambda i: {"run_id": i})
    lock.release()
    assert run_id == "20261126T021500Z-000bbb" and folder.name == run_id
    assert (taken / "spec.yaml").read_text() == "run_id: someone else's\n"
    assert yaml.safe_load((folder / "spec.yaml").read_text()) == {"run_id": run_id}


@pytest.mark.slow
def test_one_run_is_executed_by_one_process_and_its_lock_dies_with_it(lab, tmp_path):
    ref, keys = reference(tmp_path)
    d = experiment(lab, latency_ms=150)  # the resume lasts seconds: time to try a second
    killed = start(lab, "run")
    wait_for_lines(d, 8)
    killed.send_signal(signal.SIGKILL)
    killed.communicate()
    # the lock of the killed run died with it: a resume proceeds ...
    resuming = start(lab, "run", "--resume")
    wait_for_lines(d, len(lines(d)) + 4)
    # ... and while it runs, a second one is refused instead of running trials twice. The
    # resume is paused (it keeps its lock) so that it cannot finish before the second starts,
    # however slow the machine.
    resuming.send_signal(signal.SIGSTOP)
    try:
        second = run_ix("run", "--lab", str(lab), "--resume")
    finally:
        resuming.send_signal(signal.SIGCONT)
    assert second.code == 2, second.output
    assert "is being executed by another ix process" in second.stderr
    assert "Traceback" not in second.stderr
    _, err = resuming.communicate()
    assert resuming.returncode == 0, err
    seen = [(x["subject"], x["probe_id"], x["trial"]) for x in records(d)]
    assert len(seen) == len(set(seen)) and set(seen) == keys
    assert stable_summary(json.loads((d / "results" / "summary-latest.json").read_text())) == ref


HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_APPEND | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
os.write(fd, b'{"run_id": "a writer that dies mid-line", "probe_id": "c0')
print("locked", flush=True)
time.sleep(120)
"""


@pytest.mark.slow
def test_a_writer_killed_mid_line_while_holding_the_log_lock_blocks_no_one(lab):
    d = experiment(lab, latency_ms=0)
    log = d / "results" / "trials.jsonl"
    log.parent.mkdir(parents=True)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(log)],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
    run = start(lab, "run")
    runs = d / "results" / "runs"
    while not list(runs.glob("*/spec.yaml")):  # the run has started: its writer is next
        assert run.poll() is None, run.communicate()
        time.sleep(0.01)
    time.sleep(0.5)
    # it waits for the lock: no line of it can appear while the holder lives
    assert run.poll() is None and b"\n" not in log.read_bytes()
    holder.send_signal(signal.SIGKILL)  # the kernel releases its lock
    holder.wait()
    _, err = run.communicate(timeout=60)
    assert run.returncode == 0, err
    assert "removed a torn last line" in err  # the dead writer's half line is gone
    assert len(records(d)) == TOTAL  # and every line parses
