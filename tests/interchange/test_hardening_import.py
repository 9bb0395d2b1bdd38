"""`ix import` attacked (issue 14, items 5, 6, 8b, 9): racing, killed, repeated, on a full
disk, and fed hostile values. The imports under attack are the real `ix` in a subprocess;
faults are real (SIGKILL at seeded points found by watching the lab's folders, `RLIMIT_FSIZE`),
with no hook inside ix. Each contract of the command also goes through a real `ix` once (an
import's exit 0 and its JSON, the exit 2 of a re-import and of a hostile value, each one line
on stderr); the set-up and the checks after a fault (the next import, `report`, `validate`)
and the repeated cases run in process (`ix_in_process`).

What must hold: an import appears whole or leaves no trace; a killed one that got as far as
appending its lines is completed, once, by the next import; the same bytes are not imported
twice into an experiment without `--force`; imports racing to create one experiment create
it once and never touch each other's runs; a full disk gives one line and changes nothing
(`summary-latest.json` included, byte for byte); and every hostile value is refused naming the
file, the row and the field, before anything is written.
"""

import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import _ix_argv, flat, ix_in_process, run_ix, tree_digest, write
from faults_support import faulty, no_bytecode
from ix.api import transfer
from ix.api.query import run_query
from ix.domain.errors import ConfigError

RUN_ID = "20260101T000000Z-abcdef"
STAMP = "2026-01-01T00:00:00.000Z"


# --------------------------------------------------------------------------- building blocks

def trial(subject: str, case: str, n: int, *, expectation: str = "must_trigger",
          passed: bool = True, experiment: str = "e", run_id: str = RUN_ID) -> dict[str, Any]:
    """A trial line as `ix run` writes it (the mock runtime's shape)."""
    return {"run_id": run_id, "experiment": experiment, "subject": subject, "probe_id": case,
            "trial": n, "seed": 1000 + n, "attempt": 0, "expectation": expectation,
            "started_at": STAMP, "duration_ms": 1.5,
            "observation": {"content": "ok", "tool_calls": [{"name": "Skill",
                                                             "input": {"skill": "t"}}],
                            "duration_ms": 1, "tokens_input": 10, "tokens_output": 5,
                            "cost_usd": 0.001},
            "reading": {"sensor_name": "activation", "passed": passed, "score": float(passed),
                        "metrics": {}, "details": ""},
            "error": None}


def lines_for(cases: int, trials: int, subjects: tuple[str, ...] = ("a", "b"), *,
              experiment: str = "e", run_id: str = RUN_ID, salt: int = 0) -> list[dict]:
    rng = random.Random(salt)
    return [trial(s, f"c{c:03d}", t, passed=rng.random() < 0.6, experiment=experiment,
                  run_id=run_id)
            for s in subjects for c in range(cases) for t in range(trials)]


def write_jsonl(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def experiment_lab(lab: Path, cases: int = 4, trials: int = 2) -> Path:
    """A lab with experiment `e` (mock runtime) that has one imported run already, so it has
    a trial log and a `summary-latest.json` an import must not damage."""
    d = lab / "e"
    write(d / "experiment.yaml", f"name: e\ntrials: {trials}\nruntime: {{kind: mock}}\n"
                                 "subjects: [{name: a}, {name: b}]\n")
    for c in range(cases):
        write(d / "cases" / f"c{c:03d}.md", f"---\nexpectation: must_trigger\n---\nprompt {c}\n")
    earlier = write_jsonl(lab.parent / f"{lab.name}-earlier.jsonl",
                          lines_for(cases, trials, run_id="20250101T000000Z-000000",
                                    salt=99))
    transfer.import_results(lab, earlier, "jsonl")
    return d


def visible(lab: Path) -> dict[str, str]:
    """Every file a reader can see (an import's staging area is seen by none), but the audit
    log (a record of what was done, appended after the import) and the query index (a
    cache under `.ix/`), with its digest."""
    return {k: v for k, v in tree_digest(lab).items()
            if not any(part.startswith(".ix-import-") for part in Path(k).parts)
            and k != "audit.jsonl" and Path(k).parts[0] != ".ix"}


def run_lines(log: Path) -> dict[str, int]:
    """How many lines each run has in a trial log."""
    counts: dict[str, int] = {}
    for raw in log.read_bytes().splitlines():
        run = json.loads(raw)["run_id"]
        counts[run] = counts.get(run, 0) + 1
    return counts


def imports_of(results: Path, digest: str) -> list[str]:
    """The runs of `results` whose spec records an import of these bytes."""
    found = []
    for spec_file in sorted((results / "runs").glob("*/spec.yaml")):
        spec = yaml.safe_load(spec_file.read_text())
        if (spec.get("import") or {}).get("sha256") == digest:
            found.append(spec_file.parent.name)
    return found


def counted(lab: Path) -> int:
    """The trials `ix query` (the index every line-counting reader shares) counts in `lab`.
    An inspection of what a command left, not the command under test: the SQL `ix query`
    runs, through the same call (`ix.api.query.run_query`) in this process — a second less
    than a subprocess per count."""
    [row] = run_query(lab, "SELECT count(*) AS n FROM trials_all", warn=lambda _: None).rows()
    return row["n"]


def leftovers(lab: Path) -> list[Path]:
    return [p for p in lab.rglob("*") if p.name.startswith(".ix-import-")]


def one_error_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = [x for x in flat(stderr).splitlines() if x.strip()]
    errors = [x for x in lines if x.startswith("ix: error:")]
    assert len(errors) == 1, stderr
    return errors[0]


def ix_env(lab: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("IX_")}
    return {**clean, "XDG_CONFIG_HOME": str(lab / ".no-user-config"), "NO_COLOR": "1",
            "COLUMNS": "200"}


def start_import(lab: Path, source: Path, *args: str,
                 preexec: Callable[[], None] | None = None) -> subprocess.Popen:
    return subprocess.Popen([*_ix_argv(), "import", str(source), "--format", "jsonl",
                             "--lab", str(lab), *args], env=no_bytecode(ix_env(lab)),
                            preexec_fn=preexec,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def whole_import(lab: Path, before: dict[str, str], before_log: bytes, digest: str,
                 n_lines: int) -> str | None:
    """If the lab holds exactly its state `before` plus the whole import of `digest`, the
    import's run id; else None."""
    results = lab / "e" / "results"
    runs = imports_of(results, digest)
    if len(runs) != 1:
        return None
    run = runs[0]
    log = (results / "trials.jsonl").read_bytes()
    if not log.startswith(before_log) or run_lines(results / "trials.jsonl").get(run) != n_lines:
        return None
    if any(json.loads(x)["run_id"] != run for x in log[len(before_log):].splitlines()):
        return None
    latest = json.loads((results / "summary-latest.json").read_text())
    run_summary = json.loads((results / "runs" / run / "summary.json").read_text())
    if latest != run_summary or latest["run_id"] != run:
        return None
    now = visible(lab)
    added = set(now) - set(before)
    changed = {k for k in set(now) & set(before) if now[k] != before[k]}
    archives = {k for k in added if Path(k).parent == Path("e/results")
                and Path(k).name.startswith("summary-")}
    expected = {f"e/results/runs/{run}/spec.yaml", f"e/results/runs/{run}/summary.json",
                f"e/results/runs/{run}/summary.csv"}
    if added != expected | archives or len(archives) != 1 or set(before) - set(now):
        return None
    if changed != {"e/results/trials.jsonl", "e/results/summary-latest.json"}:
        return None
    return run


# --------------------------------------------------------------------------- item 6: re-import

def test_the_same_file_again_is_refused_naming_the_run_unless_forced(tmp_path: Path) -> None:
    lab = tmp_path / "lab"
    d = experiment_lab(lab)
    source = write_jsonl(tmp_path / "run.jsonl", lines_for(4, 2))
    # the real command: exit 0 and its JSON; then the refusal, exit 2 in one line
    first = run_ix("import", str(source), "--format", "jsonl", "--lab", str(lab), "--json")
    assert first.code == 0, first.output
    run = json.loads(first.stdout)["run_id"]
    before = tree_digest(lab)
    again = run_ix("import", str(source), "--format", "jsonl", "--lab", str(lab))
    assert again.code == 2, again.output
    line = one_error_line(again.stderr)
    assert str(source) in line and run in line and "--force" in line
    assert tree_digest(lab) == before
    spec = yaml.safe_load((d / "results" / "runs" / run / "spec.yaml").read_text())
    assert spec["import"] == {"source": str(source), "format": "jsonl", "sha256": sha256(source)}
    # a copy of the bytes under another name is the same source; --force imports it again
    copy = shutil.copy(source, tmp_path / "renamed.jsonl")
    assert ix_in_process("import", str(copy), "--format", "jsonl", "--lab", str(lab)).code == 2
    forced = ix_in_process("import", str(copy), "--format", "jsonl", "--lab", str(lab),
                           "--force")
    assert forced.code == 0, forced.output
    assert len(imports_of(d / "results", sha256(source))) == 2
    assert "--force" in ix_in_process("import", "--help").stdout


# --------------------------------------------------------------------------- item 6: SIGKILL

N_CASES, N_TRIALS = 60, 25             # x 2 subjects: 3,000 lines, about 1.3 MB
KILLS = 12


@dataclass(frozen=True)
class KillPoint:
    phase: str      # "time" (seconds after the start) or an event of EVENTS
    value: float = 0.0


def _names(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _stage(results: Path) -> Path | None:
    return next((results / n for n in _names(results) if n.startswith(".ix-import-")), None)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1


def _inode(path: Path) -> int:
    try:
        return path.stat().st_ino
    except OSError:
        return -1


# The life of an import into an existing experiment, as its folders show it: the staging
# folder made; its kept lines written (staging done); the trial log grown (the commit); the
# run folder in place; summary-latest.json replaced; the staging folder gone.
EVENTS: dict[str, Callable[[Path, dict[str, Any]], bool]] = {
    "staging": lambda r, s: _stage(r) is not None,
    "staged": lambda r, s: (st := _stage(r)) is not None and "trials.jsonl" in _names(st),
    "appended": lambda r, s: _size(r / "trials.jsonl") > s["log"],
    "run-folder": lambda r, s: len(_names(r / "runs")) > s["runs"],
    "latest": lambda r, s: _inode(r / "summary-latest.json") != s["latest"],
    "unstaged": lambda r, s: _unstaged(r, s),
}


def _unstaged(results: Path, state: dict[str, Any]) -> bool:
    if _stage(results) is not None:
        state["seen"] = True
        return False
    return bool(state.get("seen"))


def kill_points(seed: int, n: int, duration: float) -> list[KillPoint]:
    rng = random.Random(seed)
    events = list(EVENTS)
    points = []
    for i in range(n):
        if i % 2:
            points.append(KillPoint(events[(i // 2) % len(events)]))
        else:
            points.append(KillPoint("time", rng.uniform(0.2, duration)))
    return points


def kill_import(lab: Path, source: Path, point: KillPoint) -> None:
    results = lab / "e" / "results"
    state: dict[str, Any] = {"log": _size(results / "trials.jsonl"),
                             "runs": len(_names(results / "runs")),
                             "latest": _inode(results / "summary-latest.json")}
    proc = start_import(lab, source)
    deadline = time.monotonic() + (point.value if point.phase == "time" else 120)
    event = EVENTS.get(point.phase)
    while proc.poll() is None and time.monotonic() < deadline:
        if event is not None and event(results, state):
            break
        # a poll every half millisecond still sees each stage (each lasts milliseconds at
        # least: a kill in the microseconds between them is what "committed" is for), and
        # leaves the cores to the import it watches and the other tests
        time.sleep(0.002 if event is None else 0.0005)
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)


# 13 `ix` processes (12 kills, each followed by a re-import in process; the lab counted in
# process by `counted`): slow with four test workers on two loaded cores.
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_killed_import_leaves_no_trace_or_the_whole_run_and_is_made_once(
        tmp_path: Path) -> None:
    """SIGKILL `ix import` at 12 seeded points; each time the lab is unchanged, holds the
    whole import, or — killed in the microseconds between the append and the renames — has
    the import's lines (and nothing else half-done), which the next import completes; then
    importing the file again leaves exactly one copy of it."""
    base = tmp_path / "base"
    experiment_lab(base, cases=N_CASES)
    source = write_jsonl(tmp_path / "big.jsonl", lines_for(N_CASES, N_TRIALS, salt=1))
    digest, total = sha256(source), 2 * N_CASES * N_TRIALS
    timing = tmp_path / "timing"
    shutil.copytree(base, timing)
    began = time.monotonic()
    assert run_ix("import", str(source), "--format", "jsonl", "--lab", str(timing)).code == 0
    duration = time.monotonic() - began
    outcomes: dict[str, list[str]] = {"none": [], "whole": [], "committed": []}
    before_count = counted(shutil.copytree(base, tmp_path / "counted"))  # every lab's, at first
    for i, point in enumerate(kill_points(14, KILLS, duration)):
        lab = tmp_path / f"lab{i}"
        shutil.copytree(base, lab)
        results = lab / "e" / "results"
        before, before_log = visible(lab), (results / "trials.jsonl").read_bytes()
        kill_import(lab, source, point)
        where = f"kill {i} at {point}"
        if visible(lab) == before:
            outcome = "none"
            assert counted(lab) == before_count, where
        elif whole_import(lab, before, before_log, digest, total):
            outcome = "whole"
            assert counted(lab) == before_count + total, where
        else:  # only the lines may be ahead of the rest: no run folder without its lines
            log = (results / "trials.jsonl").read_bytes()
            assert log.startswith(before_log), where
            new_runs = {json.loads(x)["run_id"] for x in log[len(before_log):].splitlines()
                        if x.endswith(b"}")}
            assert len(new_runs) == 1, where
            # a reader counts the import's lines with its run folder, all or none of them
            placed = (results / "runs" / new_runs.pop()).is_dir()
            assert counted(lab) == before_count + (total if placed else 0), where
            outcome = "committed"
        outcomes[outcome].append(where)
        # what the next import makes of it: in process (the killed one was a real `ix`, as the
        # timed one above, whose exit code and output are the command's contract)
        r = ix_in_process("import", str(source), "--format", "jsonl", "--lab", str(lab))
        assert "Traceback" not in r.stderr, (where, r.stderr)
        if outcome == "none":
            assert r.code == 0, (where, r.output)
        else:  # the killed import is (made) whole, and this one refused as a re-import
            assert r.code == 2 and "was imported before" in flat(r.stderr), (where, r.output)
        assert whole_import(lab, before, before_log, digest, total), where
        assert not leftovers(lab), (where, leftovers(lab))
        shutil.rmtree(lab)
    assert outcomes["none"] and outcomes["whole"], outcomes  # the kills spanned the import


def test_an_import_killed_in_the_middle_of_its_append_is_completed_once(
        tmp_path: Path) -> None:
    """The append cut short by the kill (half of the lines written, the last one torn, the
    run folder not yet renamed — made here as such a kill leaves it): the next import
    completes the run with exactly the missing lines, removes the torn one, and the
    staging folder is gone."""
    lab = tmp_path / "lab"
    d = experiment_lab(lab)
    results = d / "results"
    source = write_jsonl(tmp_path / "run.jsonl", lines_for(4, 3))
    before, before_log = visible(lab), (results / "trials.jsonl").read_bytes()
    before_latest = (results / "summary-latest.json").read_bytes()
    counted_before = counted(lab)
    done = transfer.import_results(lab, source, "jsonl")
    whole = whole_import(lab, before, before_log, sha256(source), 24)
    assert whole == done.run_id
    # turn that finished import back into one killed half way through its append
    log = (results / "trials.jsonl").read_bytes()
    ours = log[len(before_log):].splitlines(keepends=True)
    stage = results / f".ix-import-{done.run_id}.tmp"
    stage.mkdir()
    (stage / "trials.jsonl").write_bytes(b"".join(ours))
    shutil.move(results / "runs" / done.run_id, stage / "run")
    archive = next(p for p in results.glob("summary-2*.json")
                   if json.loads(p.read_text())["run_id"] == done.run_id)
    shutil.move(archive, stage / archive.name)
    shutil.move(results / "summary-latest.json", stage / "summary-latest.json")
    (results / "summary-latest.json").write_bytes(before_latest)
    staged_at = (stage / "summary-latest.json").stat().st_mtime_ns
    os.utime(results / "summary-latest.json", ns=(staged_at - 10**9, staged_at - 10**9))
    (results / "trials.jsonl").write_bytes(before_log + b"".join(ours[:10]) + ours[10][:30])
    assert counted(lab) == counted_before  # its ten lines are not counted without their run
    # in process: the lab is made by hand, no process was killed (a real re-import's exit 2
    # is the test above's)
    r = ix_in_process("import", str(source), "--format", "jsonl", "--lab", str(lab))
    assert r.code == 2 and "was imported before" in flat(r.stderr), r.output
    assert f"completed run {done.run_id}" in flat(r.stderr)
    assert run_lines(results / "trials.jsonl")[done.run_id] == 24
    assert (results / "trials.jsonl").read_bytes() == log  # the same lines, in order
    assert json.loads((results / "summary-latest.json").read_text())["run_id"] == done.run_id
    assert counted(lab) == counted_before + 24
    assert not leftovers(lab)


# --------------------------------------------------------------------------- item 5: racing

@pytest.mark.slow
def test_imports_racing_to_create_one_experiment_create_it_once(tmp_path: Path) -> None:
    """Four imports naming one new experiment start together (three files, and one of them
    twice), in two rounds: no traceback; the experiment is made once and holds each file's
    run whole; of the two imports of one file, one is refused naming the other's run."""
    sources = [write_jsonl(tmp_path / f"s{i}.jsonl",
                           lines_for(6, 3, experiment="fresh", run_id=f"20250101T00000{i}Z-"
                                     f"00000{i}", salt=i)) for i in range(3)]
    for round_ in range(2):
        lab = tmp_path / f"lab{round_}"
        write(lab / "other" / "experiment.yaml", "name: other\nruntime: {kind: mock}\n")
        write(lab / "other" / "cases" / "x.md", "---\nexpectation: must_trigger\n---\nx\n")
        procs = [start_import(lab, s, "--json") for s in [*sources, sources[0]]]
        outs = [(p, *p.communicate(timeout=120)) for p in procs]
        for _, _, err in outs:
            assert "Traceback" not in err, err
        codes = [p.returncode for p, _, _ in outs]
        assert codes[1] == codes[2] == 0, outs
        assert sorted([codes[0], codes[3]]) == [0, 2], outs
        results = lab / "fresh" / "results"
        made = {json.loads(out)["run_id"] for p, out, _ in outs if p.returncode == 0}
        assert len(made) == 3
        counts = run_lines(results / "trials.jsonl")
        assert counts == {run: 36 for run in made}
        for source in sources:
            [run] = imports_of(results, sha256(source))
            assert run in made and (results / "runs" / run / "summary.json").is_file()
        refused = next(err for p, _, err in outs if p.returncode == 2)
        assert imports_of(results, sha256(sources[0]))[0] in refused
        assert sum(1 for p, out, _ in outs if p.returncode == 0
                   and json.loads(out)["created_experiment"]) == 1
        assert not leftovers(lab)
        # what the racing processes left, checked in process
        assert ix_in_process("validate", "--lab", str(lab), "fresh").code == 0


# --------------------------------------------------------------------------- item 8b: full disk

@pytest.mark.slow
@pytest.mark.parametrize("where", ["staging", "append", "new-experiment"])
def test_an_import_on_a_full_disk_changes_nothing_and_says_so_in_one_line(
        tmp_path: Path, where: str) -> None:
    """With files limited (RLIMIT_FSIZE) below the size of the import's staged lines and of
    the lab's summary-latest.json, or above both but below the trial log's size once the
    lines are appended (the append fails), or for a new experiment: exit 2, one line, no
    traceback, and the lab byte for byte as it was — summary-latest.json never rewritten
    (old ix rewrote it during its rollback, cut short by the limit)."""
    lab = tmp_path / "lab"
    # four trials a case: the log stays larger than the summary, which lists each trial's
    # verdict (`probe_results[].trials`)
    d = experiment_lab(lab, cases=120, trials=4)
    results = d / "results"
    summary_size = (results / "summary-latest.json").stat().st_size
    log_size = (results / "trials.jsonl").stat().st_size
    source = write_jsonl(tmp_path / "run.jsonl", lines_for(120, 1)[:40])
    assert 20_000 < summary_size < log_size
    # the staged lines (17 kB) do not fit; the log with them does not (the append fails)
    limit = {"staging": 8_000, "append": log_size + 2_000, "new-experiment": 8_000}[where]
    args = ("--experiment", "brand-new") if where == "new-experiment" else ()
    before = tree_digest(lab)
    proc = start_import(lab, source, *args, preexec=faulty(limit))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, err
    line = one_error_line(err)
    assert "File too large" in line and "nothing was imported" in line, line
    assert tree_digest(lab) == before
    assert not (lab / "brand-new").exists() and not leftovers(lab)
    # the lab the limited process left, read and imported into again in process
    report = ix_in_process("report", "--lab", str(lab))
    assert report.code == 0, report.output
    again = ix_in_process("import", str(source), "--format", "jsonl", "--lab", str(lab), *args)
    assert again.code == 0, again.output


# --------------------------------------------------------------------------- item 9: values

def _inspect_log(samples: list[dict]) -> dict:
    return {"version": 2, "status": "success",
            "eval": {"task": "e", "model": "openai/gpt-4o", "created": STAMP},
            "results": {"scores": [{"name": "correct"}]}, "samples": samples}


def _sample(case: str, epoch: int) -> dict:
    return {"id": case, "epoch": epoch, "input": f"prompt {case}", "target": "must_trigger",
            "scores": {"correct": {"value": "C"}}, "started_at": STAMP, "total_time": 1.5,
            "model_usage": {"openai/gpt-4o": {"input_tokens": 10, "output_tokens": 5,
                                              "total_cost": 0.01}}}


def _deep(n: int) -> str:
    return '{"a": ' * n + "1" + "}" * n


def _jsonl(change: Callable[[dict], Any] | None = None, raw: tuple[str, str] | None = None,
           ) -> str:
    lines = [trial("a", "c000", 0), trial("a", "c001", 0)]
    if change is not None:
        change(lines[1])
    texts = [json.dumps(x) for x in lines]
    if raw is not None:
        texts[1] = texts[1].replace(raw[0], raw[1], 1)
    return "".join(t + "\n" for t in texts)


_CSV_HEADER = ("experiment,run_id,subject,probe_id,trial,seed,attempt,expectation,passed,score,"
               "sensor,error,error_message,tokens_input,tokens_output,cost,duration,started_at")
_CSV_ROW = {"experiment": "e", "run_id": RUN_ID, "subject": "a", "probe_id": "c001",
            "trial": "0", "seed": "7", "attempt": "0", "expectation": "must_trigger",
            "passed": "true", "score": "1.0", "sensor": "activation", "error": "",
            "error_message": "", "tokens_input": "10", "tokens_output": "5", "cost": "0.01",
            "duration": "1.5", "started_at": STAMP}


def _csv(**changes: str) -> str:
    first = dict(_CSV_ROW, probe_id="c000")
    second = dict(_CSV_ROW, **changes)
    cols = _CSV_HEADER.split(",")
    return "\n".join([_CSV_HEADER, ",".join(first[c] for c in cols),
                      ",".join(second[c] for c in cols)]) + "\n"


def _inspect(change: Callable[[dict], Any] | None = None, raw: tuple[str, str] | None = None,
             ) -> str:
    samples = [_sample("c000", 1), _sample("c001", 1)]
    if change is not None:
        change(samples[1])
    text = json.dumps(_inspect_log(samples))
    if raw is not None:
        at = text.rindex(raw[0])  # in the second sample
        text = text[:at] + raw[1] + text[at + len(raw[0]):]
    return text


def _set(path: str, value: Any) -> Callable[[dict], None]:
    def change(record: dict) -> None:
        *parents, key = path.split(".")
        for p in parents:
            record = record[p]
        record[key] = value
    return change


# name: (format, file content, the field the message must name)
HOSTILE: dict[str, tuple[str, str, str]] = {
    "jsonl-nested-5000-deep": ("jsonl", _jsonl(raw=('"content": "ok"',
                                                    f'"content": {_deep(5000)}')), "line 2"),
    "jsonl-nested-150-deep": ("jsonl", _jsonl(raw=('"content": "ok"', f'"meta": {_deep(150)}')),
                              "line 2.observation.meta"),
    "jsonl-5000-digit-number": ("jsonl", _jsonl(raw=('"seed": 1000', '"seed": ' + "9" * 5000)),
                                "line 2"),
    "jsonl-tokens-lots": ("jsonl", _jsonl(_set("observation.tokens_input", "lots")),
                          "line 2.observation.tokens_input"),
    "jsonl-cost-nan": ("jsonl", _jsonl(raw=('"cost_usd": 0.001', '"cost_usd": NaN')), "line 2"),
    "jsonl-duration-1e400": ("jsonl", _jsonl(raw=('"duration_ms": 1.5', '"duration_ms": 1e400')),
                             "line 2.duration_ms"),
    "jsonl-case-id-300-chars": ("jsonl", _jsonl(_set("probe_id", "c" * 300)), "line 2.probe_id"),
    "jsonl-case-id-a-path": ("jsonl", _jsonl(_set("probe_id", "../../x")), "line 2.probe_id"),
    "jsonl-subject-nul": ("jsonl", _jsonl(_set("subject", "a\x00b")), "line 2.subject"),
    "jsonl-started-in-year-1": ("jsonl", _jsonl(_set("started_at", "0001-01-01T00:00:00+05:00")),
                                "line 2.started_at"),
    "jsonl-seed-2-to-the-70": ("jsonl", _jsonl(_set("seed", 2 ** 70)), "line 2.seed"),
    "jsonl-trial-negative": ("jsonl", _jsonl(_set("trial", -1)), "line 2.trial"),
    "jsonl-trial-true": ("jsonl", _jsonl(_set("trial", True)), "line 2.trial"),
    "jsonl-attempt-a-string": ("jsonl", _jsonl(_set("attempt", "1")), "line 2.attempt"),
    "jsonl-passed-a-string": ("jsonl", _jsonl(_set("reading.passed", "yes")),
                              "line 2.reading.passed"),
    "jsonl-tool-input-a-list": ("jsonl", _jsonl(lambda r: r["observation"]["tool_calls"][0]
                                                .__setitem__("input", [1])),
                                "line 2.observation.tool_calls[0].input"),
    "jsonl-unknown-key": ("jsonl", _jsonl(_set("observation.secret_sauce", 1)),
                          "line 2.observation.secret_sauce"),
    "csv-tokens-lots": ("csv", _csv(tokens_input="lots"), "row 3.tokens_input"),
    "csv-cost-1e400": ("csv", _csv(cost="1e400"), "row 3.cost"),
    "csv-duration-nan": ("csv", _csv(duration="nan"), "row 3.duration"),
    "csv-score-inf": ("csv", _csv(score="inf"), "row 3.score"),
    "csv-seed-2-to-the-70": ("csv", _csv(seed=str(2 ** 70)), "row 3.seed"),
    "csv-tokens-negative": ("csv", _csv(tokens_output="-5"), "row 3.tokens_output"),
    "csv-trial-negative": ("csv", _csv(trial="-1"), "row 3.trial"),
    "csv-trial-true": ("csv", _csv(trial="true"), "row 3.trial"),
    "csv-case-id-300-chars": ("csv", _csv(probe_id="c" * 300), "row 3.probe_id"),
    "csv-started-in-year-1": ("csv", _csv(started_at="0001-01-01T00:00:00Z"), "row 3.started_at"),
    "inspect-tokens-lots": ("inspect", _inspect(lambda s: s["model_usage"]["openai/gpt-4o"]
                                                .__setitem__("input_tokens", "lots")),
                            "samples[1].model_usage.openai/gpt-4o.input_tokens"),
    "inspect-total-time-nan": ("inspect", _inspect(raw=('"total_time": 1.5',
                                                        '"total_time": NaN')),
                               "samples[1].total_time"),
    "inspect-score-infinity": ("inspect", _inspect(raw=('"value": "C"', '"value": Infinity')),
                               "scores.correct.value"),
    "inspect-epoch-a-million": ("inspect", _inspect(_set("epoch", 1_000_000)), ".trial"),
    "inspect-case-id-300-chars": ("inspect", _inspect(_set("id", "c" * 300)), ".probe_id"),
    "inspect-started-in-year-1": ("inspect", _inspect(_set("started_at", "0001-01-01T00:00:00Z")),
                                  ".started_at"),
    "inspect-nested-5000-deep": ("inspect", _inspect(raw=('"input": "prompt c001"',
                                                          f'"input": {_deep(5000)}')),
                                 "nested too deeply"),
}
_SUFFIX = {"jsonl": ".jsonl", "csv": ".csv", "inspect": ".json"}


@pytest.fixture(scope="module")
def hostile_lab(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    lab = root / "lab"
    experiment_lab(lab)
    return lab


def test_the_hostile_table_differs_from_files_that_import(tmp_path: Path) -> None:
    """Each hostile file is a valid file with one value changed: the valid ones import."""
    for fmt, text in (("jsonl", _jsonl()), ("csv", _csv()), ("inspect", _inspect())):
        lab = tmp_path / fmt
        experiment_lab(lab)
        path = tmp_path / f"valid{_SUFFIX[fmt]}"
        path.write_text(text)
        result = transfer.import_results(lab, path, fmt, experiment="e")
        assert result.trials == 2


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_value_is_refused_naming_the_row_and_the_field(
        name: str, hostile_lab: Path, tmp_path: Path) -> None:
    fmt, text, field = HOSTILE[name]
    path = tmp_path / f"{name}{_SUFFIX[fmt]}"
    path.write_text(text)
    before = tree_digest(hostile_lab)
    with pytest.raises(ConfigError) as caught:
        transfer.import_results(hostile_lab, path, fmt, experiment="e")
    message = caught.value.render()
    assert message.startswith(str(path)) and field in message, message
    assert len(message) < 400, message
    assert tree_digest(hostile_lab) == before


@pytest.mark.parametrize("name", ["jsonl-nested-5000-deep", "jsonl-started-in-year-1",
                                  "csv-cost-1e400", "inspect-tokens-lots"])
def test_hostile_values_at_the_command_line_exit_2_and_report_still_works(
        name: str, tmp_path: Path) -> None:
    fmt, text, field = HOSTILE[name]
    lab = tmp_path / "lab"
    experiment_lab(lab)
    path = tmp_path / f"{name}{_SUFFIX[fmt]}"
    path.write_text(text)
    before = tree_digest(lab)
    # the real command for the 5000-deep nesting (a fresh process's stack and recursion
    # limit, its exit 2 in one line); the other values in process
    command = run_ix if name == "jsonl-nested-5000-deep" else ix_in_process
    r = command("import", str(path), "--format", fmt, "--lab", str(lab), "--experiment", "e")
    assert r.code == 2 and not r.stdout, r.output
    line = one_error_line(r.stderr)
    assert str(path) in line and field in line, line
    assert tree_digest(lab) == before
    assert ix_in_process("report", "--lab", str(lab)).code == 0
