"""Storage that fails under a run: a full disk, a read-only results folder, a deleted lab.

Each gives one clear line on stderr (no traceback) and exit 2; the trials already written
are kept, the run is recorded as failed where that can still be written, and `ix run
--resume` finishes it once the fault is gone. The faults are real, made without privileges:

- a full disk: `RLIMIT_FSIZE` on the `ix` process (with SIGXFSZ ignored, a write past the
  limit fails with EFBIG, as one on a full disk fails with ENOSPC);
- a read-only folder: its write bits removed. Root ignores them by its CAP_DAC_OVERRIDE
  capability, so when the tests run as root the `ix` process is started without it (dropped
  from its bounding set), and meets the permissions as any user would;
- a deleted lab: removed while the run writes.
"""

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import yaml

from conftest import _ix_argv, flat, ix_in_process, run_ix, stable_summary, tree_digest, write
from faults_support import faulty, no_bytecode, set_writable

CASES, TRIALS = 12, 8
TOTAL = CASES * TRIALS


def experiment(lab: Path, latency_ms: int = 0) -> Path:
    d = lab / "e"
    for i in range(CASES):
        e = "must_trigger" if i % 2 else "should_not_trigger"
        write(d / "cases" / f"c{i:02d}.md", f"---\nexpectation: {e}\n---\nprompt {i}\n")
    write(d / "experiment.yaml",
          f"name: e\nskill: t\ntrials: {TRIALS}\nconcurrency: 4\nseed: 5\n"
          f"runtime: {{kind: mock, default_rate: 0.5, latency_ms: {latency_ms}, "
          "error_rates: {c03: 0.3}}\n")
    return d


def env(lab: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("IX_")}
    return {**clean, "XDG_CONFIG_HOME": str(lab / ".no-user-config"), "NO_COLOR": "1",
            "COLUMNS": "200"}


def ix_with(pre: Callable[[], None], lab: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*_ix_argv(), *args, "--lab", str(lab)], env=no_bytecode(env(lab)),
                          preexec_fn=pre, capture_output=True, text=True, timeout=120)




def records(d: Path) -> list[dict]:
    return [json.loads(x) for x in (d / "results" / "trials.jsonl").read_bytes().splitlines()]


def keys(d: Path) -> list[tuple]:
    return sorted((x["subject"], x["probe_id"], x["trial"]) for x in records(d))


def reference(tmp_path: Path) -> tuple[dict, list]:
    d = experiment(tmp_path / "reference")  # the uninterrupted run to compare with: in process
    assert ix_in_process("run", "--lab", str(d.parent)).code == 0
    return stable_summary(json.loads((d / "results" / "summary-latest.json").read_text())), keys(d)


def one_error_line(stderr: str) -> str:
    assert "Traceback" not in stderr
    [line] = [x for x in flat(stderr).splitlines() if x.startswith("ix: error:")]
    return line


# --------------------------------------------------------------------------- a full disk

def test_a_full_disk_stops_the_run_as_failed_and_keeps_its_trials(lab, tmp_path):
    ref, every = reference(tmp_path)
    d = experiment(lab)
    r = ix_with(faulty(file_size=40_000), lab, "run")
    assert r.returncode == 2, r.stderr
    line = one_error_line(r.stderr)
    assert "trials.jsonl: File too large" in line and "recorded as failed" in line
    kept = records(d)  # every line parses: the line cut short by the limit was taken back
    assert 0 < len(kept) < TOTAL and f"the {len(kept)} trials it wrote are kept" in line
    assert (d / "results" / "trials.jsonl").stat().st_size <= 40_000
    summary = json.loads((d / "results" / "summary-latest.json").read_text())
    assert summary["run_status"] == "failed" and "File too large" in summary["stop_reason"]
    assert summary["subjects"][0]["trials"] == len(kept)
    spec = yaml.safe_load((d / "results" / "runs" / summary["run_id"] / "spec.yaml").read_text())
    assert spec["status"] == "failed" and spec["trials_written"] == len(kept)
    # with room again, the run finishes: none lost, none twice, the summary of a whole run
    r2 = run_ix("run", "--lab", str(lab), "--resume")
    assert r2.code == 0, r2.output
    assert keys(d) == every and stable_summary(
        json.loads((d / "results" / "summary-latest.json").read_text())) == ref


def test_a_disk_too_full_for_the_run_folder_leaves_the_lab_as_it_was(lab):
    d = experiment(lab)
    before = tree_digest(lab)
    r = ix_with(faulty(file_size=500), lab, "run")
    assert r.returncode == 2, r.stderr
    line = one_error_line(r.stderr)
    assert "spec.yaml: File too large" in line and "nothing was written" in line
    assert ".tmp" not in line  # it names the file, not a temporary one
    assert tree_digest(lab) == before and not (d / "results").exists()


# --------------------------------------------------------------------------- read-only

def test_a_read_only_results_folder_is_refused_and_left_unchanged(lab, tmp_path):
    ref, every = reference(tmp_path)
    d = experiment(lab)
    assert run_ix("run", "--lab", str(lab), "--max-trials", "20").code == 130
    results = d / "results"
    set_writable(results, False)
    try:
        before = tree_digest(lab)
        fresh = ix_with(faulty(read_only=True), lab, "run")
        resumed = ix_with(faulty(read_only=True), lab, "run", "--resume")
        after = tree_digest(lab)
    finally:
        set_writable(results, True)
    assert fresh.returncode == 2, fresh.stderr
    line = one_error_line(fresh.stderr)
    assert f"{results}: Permission denied" in line and "nothing was written" in line
    assert resumed.returncode == 2, resumed.stderr
    assert "Permission denied" in one_error_line(resumed.stderr)
    assert after == before
    assert not [p for p in results.iterdir() if p.name.startswith(".")]  # no temp files
    r = run_ix("run", "--lab", str(lab), "--resume")  # writable again: the run finishes
    assert r.code == 0, r.output
    assert keys(d) == every
    assert stable_summary(json.loads((results / "summary-latest.json").read_text())) == ref


def test_results_made_read_only_mid_run_keep_every_trial_and_resume_finishes(lab, tmp_path):
    ref, every = reference(tmp_path)
    d = experiment(lab, latency_ms=20)
    results, log = d / "results", d / "results" / "trials.jsonl"
    proc = subprocess.Popen([*_ix_argv(), "run", "--lab", str(lab)], env=env(lab),
                            preexec_fn=faulty(read_only=True), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        while not (log.is_file() and log.read_bytes().count(b"\n") >= 10):
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.01)
        set_writable(results, False)  # the open log stays writable; new files cannot be made
        _, err = proc.communicate(timeout=60)
    finally:
        set_writable(results, True)
    assert proc.returncode == 2, err
    line = one_error_line(err)
    assert "Permission denied" in line and "its summary could not be written" in line
    assert keys(d) == every  # the trials finished, and every one of them is on disk
    spec = yaml.safe_load(next((results / "runs").glob("*/spec.yaml")).read_text())
    assert spec["status"] == "running"  # nothing could be written, not even `failed`
    r = run_ix("run", "--lab", str(lab), "--resume")
    assert r.code == 0, r.output
    assert keys(d) == every
    assert stable_summary(json.loads((results / "summary-latest.json").read_text())) == ref


# --------------------------------------------------------------------------- deleted

def test_a_lab_deleted_mid_run_stops_the_run_and_is_not_recreated(lab):
    d = experiment(lab, latency_ms=20)
    log = d / "results" / "trials.jsonl"
    proc = subprocess.Popen([*_ix_argv(), "run", "--lab", str(lab)], env=env(lab),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    while not (log.is_file() and log.read_bytes().count(b"\n") >= 10):
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.01)
    shutil.rmtree(lab)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    line = one_error_line(err)
    assert "trials.jsonl: the trial log was deleted while the run was writing it" in line
    assert not lab.exists()  # no half-recreated lab of summaries without trials
