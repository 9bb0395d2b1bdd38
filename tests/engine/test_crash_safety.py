"""SIGKILL `ix run` anywhere: `ix run --resume` completes the run, nothing lost or counted twice.

The real `ix` in a subprocess is killed at seeded random points of its life — while Python
starts, while its run folder is made, after N trial lines, and while the summary files are
written (found by watching the results folder, not by any hook inside ix). At every kill point
every JSON and YAML file under `results/` parses (they are written atomically) and every whole
line of `trials.jsonl` parses. Some kill points also leave a torn last line, written here as
a crash mid-write would leave it. Then `ix run --resume` must finish the run: each (subject,
case, trial) recorded exactly once, one run id, the torn line reported (by line number) and
removed, and a summary equal to that of an uninterrupted run. `benchmarks/kill_resume.py`
sweeps 200 kill points with the same harness and prints survived / tried.
"""

import json
import os
import random
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from conftest import _ix_argv, ix_in_process, run_ix, stable_summary, write

CASES, TRIALS = 12, 8
TOTAL = CASES * TRIALS
PHASES = ("startup", "run-folder", "lines", "torn", "summary")


def experiment(lab: Path, latency_ms: float = 3) -> Path:
    """12 cases x 8 trials on the mock runtime; one case errs sometimes."""
    d = lab / "e"
    for i in range(CASES):
        e = "must_trigger" if i % 2 else "should_not_trigger"
        write(d / "cases" / f"c{i:02d}.md", f"---\nexpectation: {e}\n---\nprompt {i}\n")
    write(d / "experiment.yaml",
          f"name: e\nskill: t\ntrials: {TRIALS}\nconcurrency: 4\nseed: 7\n"
          f"runtime: {{kind: mock, default_rate: 0.5, latency_ms: {latency_ms}, "
          "error_rates: {c03: 0.3}}\n")
    return d




@dataclass(frozen=True)
class KillPoint:
    phase: str        # one of PHASES
    value: float      # seconds after start (startup), lines (lines, torn), or an event


@dataclass
class Outcome:
    point: KillPoint
    lines_at_kill: int = 0
    torn_line: int | None = None       # the line number of the torn line, if one was left
    fresh_start: bool = False          # killed before the run folder existed
    failures: list[str] = field(default_factory=list)

    @property
    def survived(self) -> bool:
        return not self.failures


def kill_points(seed: int, n: int) -> list[KillPoint]:
    """`n` kill points spread over a run's life, reproducible from `seed`."""
    rng = random.Random(seed)
    turns = {"run-folder": rng.randrange(len(FOLDER_EVENTS)),  # then each event in turn
             "summary": rng.randrange(len(SUMMARY_EVENTS))}
    points = []
    for i in range(n):
        phase = PHASES[i % len(PHASES)]
        value: float = 0
        if phase == "startup":
            value = rng.uniform(0.0, 1.5)
        elif phase in ("lines", "torn"):
            value = rng.randrange(1, TOTAL)
        else:
            events = FOLDER_EVENTS if phase == "run-folder" else SUMMARY_EVENTS
            value, turns[phase] = turns[phase] % len(events), turns[phase] + 1
        points.append(KillPoint(phase, value))
    return points


# The making of the run folder: `runs/` made, the temporary folder made (its spec being
# written), the run folder renamed into place (before the first trial).
FOLDER_EVENTS = (
    lambda names, runs: "runs" in names,
    lambda names, runs: any(n.startswith(".run-") for n in names),
    lambda names, runs: bool(_names(runs)),
)


# The files of a run's end, in the order ix writes them: the archived summary, the latest,
# the run folder's copy, then the final spec. A name seen while it is still a temporary file
# (`.summary-....tmp`) is a kill in the middle of that write.
SUMMARY_EVENTS = (
    lambda names, run: any(n.startswith(".summary-") and "latest" not in n for n in names),
    lambda names, run: any(n.startswith("summary-") and "latest" not in n for n in names),
    lambda names, run: any(n.startswith(".summary-latest.json") for n in names),
    lambda names, run: "summary-latest.json" in names,
    lambda names, run: run is not None and any(n.startswith(".summary.json") or
                                               n == "summary.json" for n in _names(run)),
    lambda names, run: run is not None and any(n.startswith(".spec.yaml") for n in _names(run)),
)


def _names(directory: Path | None) -> list[str]:
    try:
        return os.listdir(directory) if directory is not None else []
    except OSError:
        return []


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except OSError:
        return 0


def _start(lab: Path, *args: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IX_")}
    env["XDG_CONFIG_HOME"] = str(lab / ".no-user-config")
    return subprocess.Popen([*_ix_argv(), "run", "--lab", str(lab), *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _wait(proc: subprocess.Popen, ready, pause: float, deadline_s: float = 60) -> None:
    """Poll until `ready()` holds or `proc` has ended."""
    deadline = time.monotonic() + deadline_s
    while proc.poll() is None and time.monotonic() < deadline and not ready():
        if pause:
            time.sleep(pause)


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)


def kill(lab: Path, point: KillPoint) -> None:
    """Start `ix run` and SIGKILL it at `point` (if it has not ended by then)."""
    results = lab / "e" / "results"
    log = results / "trials.jsonl"
    runs = results / "runs"
    proc = _start(lab)
    if point.phase == "startup":
        _wait(proc, lambda: False, pause=0.005, deadline_s=point.value)
    elif point.phase == "run-folder":  # as the run folder is made (it appears whole)
        event = FOLDER_EVENTS[int(point.value)]
        _wait(proc, lambda: event(_names(results), runs), pause=0.0002)
    elif point.phase in ("lines", "torn"):
        _wait(proc, lambda: _lines(log) >= point.value, pause=0.002)
    else:  # the summary: near the last trial, watch the files of the run's end closely
        event = SUMMARY_EVENTS[int(point.value)]
        _wait(proc, lambda: _lines(log) >= TOTAL - 4, pause=0.002)
        _wait(proc, lambda: event(_names(results), next((runs / n for n in _names(runs)), None)),
              pause=0)
    _kill(proc)


def _unparsable(results: Path) -> list[str]:
    """Every JSON or YAML file under `results/` that does not parse, and every whole line
    of the trial log that does not."""
    bad = []
    for path in sorted(results.rglob("*")):
        if not path.is_file():
            continue
        try:
            if path.suffix == ".json":
                json.loads(path.read_bytes())
            elif path.suffix in (".yaml", ".yml"):
                yaml.safe_load(path.read_bytes())
        except (ValueError, yaml.YAMLError) as exc:
            bad.append(f"{path.relative_to(results)} does not parse: {exc}")
    log = results / "trials.jsonl"
    if log.is_file():
        whole = log.read_bytes().split(b"\n")[:-1]  # a torn last line may follow them
        for number, line in enumerate(whole, 1):
            try:
                json.loads(line)
            except ValueError:
                bad.append(f"trials.jsonl line {number} does not parse")
    return bad


def tear(log: Path) -> int | None:
    """Leave a torn last line, as a crash in the middle of a write would: half of a line."""
    data = log.read_bytes() if log.is_file() else b""
    if not data.endswith(b"\n"):
        return None  # the kill tore one already (or there is no line)
    last = data[:-1].rsplit(b"\n", 1)[-1]
    with log.open("ab") as f:
        f.write(last[: len(last) // 2])
    return data.count(b"\n") + 1


def kill_and_resume(lab: Path, point: KillPoint, reference: dict, keys: set) -> Outcome:
    """Kill a run at `point`, resume it, and say what (if anything) went wrong."""
    outcome = Outcome(point)
    results = lab / "e" / "results"
    log = results / "trials.jsonl"
    kill(lab, point)
    outcome.lines_at_kill = _lines(log)
    if results.is_dir():
        outcome.failures += [f"at the kill: {b}" for b in _unparsable(results)]
    if point.phase == "torn":
        outcome.torn_line = tear(log)
    data = log.read_bytes() if log.is_file() else b""
    if outcome.torn_line is None and data and not data.endswith(b"\n"):
        outcome.torn_line = data.count(b"\n") + 1  # the kill itself tore the last line
    runs = results / "runs"
    # the run killed was a real `ix`; what resumes it is asked in process (the same command
    # tree, its stderr as a process shows it): test_a_torn_last_line_... and tests/engine/
    # test_resume.py hold the real `ix run --resume` to its contract
    r = ix_in_process("run", "--lab", str(lab), "--resume")
    if not (runs.is_dir() and any(runs.iterdir())):
        # killed before the run folder existed: there is no run, and no trial, to resume
        outcome.fresh_start = True
        if r.code != 2 or "no run to continue" not in r.stderr or _lines(log):
            outcome.failures.append(f"resume without a run: exit {r.code}: {r.stderr[-300:]}")
        r = ix_in_process("run", "--lab", str(lab))
    if r.code != 0:
        outcome.failures.append(f"exit {r.code}: {r.stderr[-500:]}")
        return outcome
    if "Traceback" in r.output:
        outcome.failures.append("a traceback")
    if outcome.torn_line is not None and not (
            f"line {outcome.torn_line}" in r.stderr and "torn" in r.stderr):
        outcome.failures.append(f"torn line {outcome.torn_line} not reported: {r.stderr[-300:]}")
    outcome.failures += _unparsable(results)  # the torn line was removed: every line parses
    records = [json.loads(x) for x in log.read_bytes().splitlines()]
    seen = [(x["subject"], x["probe_id"], x["trial"]) for x in records]
    if len(seen) != len(set(seen)):
        outcome.failures.append(f"{len(seen) - len(set(seen))} trials recorded twice")
    if set(seen) != keys:
        outcome.failures.append(f"{len(keys - set(seen))} trials lost")
    if len({x["run_id"] for x in records}) != 1:
        outcome.failures.append("the log holds more than one run")
    summary = json.loads((results / "summary-latest.json").read_text())
    if stable_summary(summary) != reference:
        outcome.failures.append("the summary differs from an uninterrupted run's")
    spec = yaml.safe_load((results / "runs" / summary["run_id"] / "spec.yaml").read_text())
    if spec["status"] != "completed" or spec["trials_written"] != TOTAL:
        outcome.failures.append(f"spec says {spec['status']}, {spec['trials_written']} trials")
    return outcome


def reference_run(root: Path) -> tuple[dict, set]:
    lab = root / "reference"
    d = experiment(lab, latency_ms=0)
    r = ix_in_process("run", "--lab", str(lab))  # the uninterrupted run to compare with
    assert r.code == 0, r.output
    summary = json.loads((d / "results" / "summary-latest.json").read_text())
    keys = {(x["subject"], x["probe_id"], x["trial"])
            for x in map(json.loads, (d / "results" / "trials.jsonl").read_bytes().splitlines())}
    assert len(keys) == TOTAL
    return stable_summary(summary), keys


def sweep(root: Path, seed: int, n: int) -> list[Outcome]:
    reference, keys = reference_run(root)
    template = root / "template"
    experiment(template)
    outcomes = []
    for i, point in enumerate(kill_points(seed, n)):
        lab = root / f"kill-{i:03d}"
        shutil.copytree(template, lab)
        outcomes.append(kill_and_resume(lab, point, reference, keys))
        shutil.rmtree(lab, ignore_errors=True)
    return outcomes


# --------------------------------------------------------------------------- the tests

@pytest.mark.slow
def test_a_run_killed_at_random_points_resumes_with_nothing_lost_or_doubled(tmp_path):
    outcomes = sweep(tmp_path, seed=20261126, n=15)
    failed = [(o.point, o.failures) for o in outcomes if not o.survived]
    assert not failed, failed
    # the kill points did land all over the run's life
    assert any(o.lines_at_kill == 0 for o in outcomes)                # before any trial
    assert any(0 < o.lines_at_kill < TOTAL for o in outcomes)         # among the trials
    assert any(o.lines_at_kill == TOTAL for o in outcomes)            # in the summary
    assert sum(o.torn_line is not None for o in outcomes) >= 3        # torn lines repaired


def test_a_torn_last_line_is_reported_by_number_and_removed_on_resume(lab, tmp_path):
    reference, keys = reference_run(tmp_path)
    d = experiment(lab)
    assert ix_in_process("run", "--lab", str(lab), "--max-trials", "30").code == 130  # set-up
    log = d / "results" / "trials.jsonl"
    line = tear(log)
    assert line == 31
    r = run_ix("run", "--lab", str(lab), "--resume")
    assert r.code == 0, r.output
    assert "line 31: skipped torn last line" in r.stderr            # the reader reports it
    assert "line 31: removed a torn last line" in r.stderr          # and the writer removes it
    records = [json.loads(x) for x in log.read_bytes().splitlines()]  # every line parses
    assert sorted((x["subject"], x["probe_id"], x["trial"]) for x in records) == sorted(keys)
    latest = json.loads((d / "results" / "summary-latest.json").read_text())
    assert stable_summary(latest) == reference


def test_a_whole_last_record_missing_its_newline_is_kept(lab):
    d = experiment(lab, latency_ms=0)
    assert ix_in_process("run", "--lab", str(lab), "--max-trials", "10").code == 130  # set-up
    log = d / "results" / "trials.jsonl"
    log.write_bytes(log.read_bytes()[:-1])  # the write stopped just before the newline
    r = run_ix("run", "--lab", str(lab), "--resume")
    assert r.code == 0, r.output
    records = [json.loads(x) for x in log.read_bytes().splitlines()]
    assert len(records) == TOTAL  # the tenth trial was kept, not run again
    assert len({(x["probe_id"], x["trial"]) for x in records}) == TOTAL
