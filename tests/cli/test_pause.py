"""`ix pause` / `ix continue`, and SIGTSTP / SIGCONT to `ix run`: while paused no trial starts,
the trials in flight finish, and the run, continued, completes with every trial."""

import json
import os
import signal
import subprocess
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from conftest import _ix_argv, _ix_env, flat, mock_experiment, run_ix

#: 10 cases x 4 trials, 0.3 s each, two at a time: about 6 s unpaused, time enough for a
#: loaded machine to start `ix pause` before the last trials are under way
TRIALS = 40


def _start(lab: Path, *progress: str
           ) -> tuple[subprocess.Popen[str], list[str], threading.Thread]:
    """The real `ix run` in the background; its stderr lines gathered as they come by the
    returned reader (the only one to read stderr: `communicate` would race it)."""
    proc = subprocess.Popen([*_ix_argv(), "run", "--lab", str(lab), *progress],
                            env=_ix_env(lab, None), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    lines: list[str] = []

    def read() -> None:
        assert proc.stderr is not None
        lines.extend(iter(proc.stderr.readline, ""))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return proc, lines, reader


def _wait(what: str, ready, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _lines(exp: Path) -> list[dict]:
    log = exp / "results" / "trials.jsonl"
    return [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []


def _started(record: dict) -> datetime:
    return datetime.fromisoformat(record["started_at"].replace("Z", "+00:00"))


def _run_folder(exp: Path) -> Path:
    folders = list((exp / "results" / "runs").glob("*/spec.yaml")) \
        if (exp / "results" / "runs").exists() else []
    return folders[0].parent if folders else Path("/nonexistent")


def _paused_then_continued(exp: Path, proc: subprocess.Popen[str], reader: threading.Thread,
                           is_paused, continue_it) -> None:
    """Once paused: nothing starts for 1.5 s, the in-flight trials are written, the process
    waits; continued, it completes every trial."""
    paused_at = datetime.now(UTC)
    time.sleep(1.5)  # longer than a trial (0.3 s) and a look at the marker (0.2 s)
    written = _lines(exp)
    assert 0 < len(written) < TRIALS
    assert all(_started(r) < paused_at for r in written), "a trial started while paused"
    time.sleep(0.5)
    assert len(_lines(exp)) == len(written), "a trial ended that started while paused"
    assert proc.poll() is None and is_paused()
    assert (_run_folder(exp) / "paused").is_file()
    continue_it()
    proc.wait(timeout=60)
    assert proc.stdout is not None
    out = proc.stdout.read()
    reader.join(timeout=10)  # every line the run wrote is in its list
    assert proc.returncode == 0, out
    records = _lines(exp)
    assert len(records) == TRIALS
    assert len({(r["probe_id"], r["trial"]) for r in records}) == TRIALS
    summary = json.loads((exp / "results" / "summary-latest.json").read_text())
    assert summary["run_status"] == "completed"
    assert not (_run_folder(exp) / "paused").exists()


def _experiment(lab: Path) -> Path:
    return mock_experiment(lab, n_must=5, n_not=5, n_edge=0, trials=4,
                           runtime_extra="latency_ms: 300", extra_yaml="concurrency: 2\n")


@pytest.mark.slow
def test_ix_pause_stops_new_trials_and_ix_continue_completes_the_run(lab):
    exp = _experiment(lab)
    proc, stderr, reader = _start(lab, "--progress", "json")
    try:
        _wait("the first trial", lambda: len(_lines(exp)) >= 1)
        paused = run_ix("pause", "--lab", str(lab))  # no RUN: the lab's one running run
        assert paused.code == 0, paused.output
        run_id = _run_folder(exp).name
        assert f"paused run {run_id}" in paused.stdout

        def event(name: str) -> bool:
            return any(f'"event": "{name}"' in line for line in stderr)

        _wait("the run to pause", lambda: event("paused"), timeout=10)

        def continue_it() -> None:
            again = run_ix("continue", run_id[-6:], "--lab", str(lab), "--json")
            assert again.code == 0, again.output
            assert json.loads(again.stdout) | {"holder": ""} == {
                "run": run_id, "experiment": "exp", "paused": False, "changed": True,
                "holder": ""}

        _paused_then_continued(exp, proc, reader,
                               lambda: event("paused") and not event("continued"), continue_it)
        assert event("continued")
    finally:
        if proc.poll() is None:
            proc.kill()
    # a run that is not running: nothing to pause, exit 2, one clear line
    late = run_ix("pause", run_id, "--lab", str(lab))
    assert late.code == 2 and f"run {run_id} is not running" in flat(late.stderr), late.output
    assert "Traceback" not in late.output and not (_run_folder(exp) / "paused").exists()


@pytest.mark.slow
def test_sigtstp_pauses_ix_run_in_process_and_sigcont_continues_it(lab):
    exp = _experiment(lab)
    proc, stderr, reader = _start(lab)  # off a terminal: no bar, the pause said in a line
    try:
        _wait("the first trial", lambda: len(_lines(exp)) >= 1)
        proc.send_signal(signal.SIGTSTP)
        _wait("the run to pause", lambda: any("paused run" in x for x in stderr), timeout=10)
        said = next(x for x in stderr if "paused run" in x)
        assert f"ix continue {_run_folder(exp).name}" in said
        assert f"kill -CONT {proc.pid}" in said
        _paused_then_continued(exp, proc, reader,
                               lambda: not any("continued" in x for x in stderr),
                               lambda: os.kill(proc.pid, signal.SIGCONT))
    finally:
        if proc.poll() is None:
            proc.kill()
