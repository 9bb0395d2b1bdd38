"""A corrupt line in `results/trials.jsonl` costs that line, never a command (issue 14, item 7).

A line holding a 5,000-digit integer (Python refuses to convert it) or nested 50,000 deep (the
decoder gives up), in the middle of the log or as its torn last line: `ix report`, `ix
results`, `ix export`, `ix run` and `ix run --resume` skip it with a warning that names the
file and the line, and finish (exit 0, no traceback). The writer cuts such a torn last line
off instead of crashing on it, and a completed run that is resumed stays completed, also when
the resume itself fails.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import _ix_argv, flat, ix_in_process, mock_experiment, run_ix
from faults_support import faulty, no_bytecode

BIG = "9" * 5000
DEEP = "[" * 50_000 + "]" * 50_000


def _completed_run(lab: Path) -> tuple[Path, str]:
    """The set-up of every test: a completed run (`ix run` in this process, `ix_in_process`;
    the commands under test, which meet the corrupt line, run as subprocesses for one case,
    `REAL`, and in process for the others)."""
    exp = mock_experiment(lab, rates={"must-001": 1.0, "must-002": 0.5}, trials=2)
    r = ix_in_process("run", "--lab", str(lab), "exp", "--json")
    assert r.code == 0, r.output
    return exp / "results" / "trials.jsonl", json.loads(r.stdout)["run_id"]


def _hostile(log: Path, kind: str) -> bytes:
    """A line of the run that no reader can decode: a copy of its first line with a
    5,000-digit trial number, or with a value nested 50,000 deep."""
    first = json.loads(log.read_bytes().splitlines()[0])
    if kind == "big":
        return json.dumps({**first, "trial": 7}).replace('"trial": 7', f'"trial": {BIG}').encode()
    return json.dumps({**first, "trial": 7})[:-1].encode() + b', "x": ' + DEEP.encode() + b"}"


def _insert(log: Path, line: bytes, where: str) -> int:
    """`line` put in the middle of the log (with its newline) or at its end as a torn last
    line (without one); the line's number."""
    lines = log.read_bytes().splitlines(keepends=True)
    if where == "middle":
        lines.insert(3, line + b"\n")
        number = 4
    else:
        lines.append(line)
        number = len(lines)
    log.write_bytes(b"".join(lines))
    return number


def _clean(r, log: Path, number: int) -> None:
    assert r.code == 0, r.output
    assert "Traceback" not in r.output
    assert f"{log}: line {number}: " in flat(r.stderr), r.stderr


def _status(log: Path, run_id: str) -> str:
    spec = yaml.safe_load((log.parent / "runs" / run_id / "spec.yaml").read_text())
    return spec["status"]


CASES = [(kind, where) for kind in ("big", "deep") for where in ("middle", "torn")]
#: The case the commands under test meet as real processes (the nesting a fresh interpreter's
#: stack decodes, the torn last line); they meet the other cases in process.
REAL = ("deep", "torn")


def _ix(kind: str, where: str):
    return run_ix if (kind, where) == REAL else ix_in_process


@pytest.mark.parametrize("kind, where", CASES)
def test_reading_commands_skip_a_corrupt_line_naming_it(lab: Path, tmp_path: Path, kind: str,
                                                       where: str):
    log, run_id = _completed_run(lab)
    trials = len(log.read_bytes().splitlines())
    number = _insert(log, _hostile(log, kind), where)
    before = log.read_bytes()

    cli = _ix(kind, where)
    r = cli("report", "--lab", str(lab), run_id, "--json")
    _clean(r, log, number)
    report = json.loads(r.stdout)
    assert report["cost"]["total"]["attempts"] == trials  # every real trial, nothing else
    for fmt in ("md", "table"):
        _clean(cli("report", "--lab", str(lab), run_id, "--format", fmt), log, number)
    for fmt in ("jsonl", "json", "inspect"):
        out = tmp_path / f"export-{fmt}"
        _clean(cli("export", "--lab", str(lab), run_id, "--format", fmt, "--out", str(out)),
               log, number)
    exported = (tmp_path / "export-jsonl").read_bytes().splitlines()
    assert len(exported) == trials and BIG.encode() not in b"".join(exported)
    for args in (("results",), ("results", "--json"), ("export", run_id, "--format", "csv",
                                                       "--out", str(tmp_path / "t.csv"))):
        r = cli(*args, "--lab", str(lab))
        assert r.code == 0 and "Traceback" not in r.output, r.output
    assert log.read_bytes() == before  # reading never changes the log


@pytest.mark.parametrize("kind, where", CASES)
def test_resume_of_a_completed_run_skips_a_corrupt_line_and_stays_completed(
        lab: Path, kind: str, where: str):
    log, run_id = _completed_run(lab)
    summary = json.loads((log.parent / "summary-latest.json").read_text())
    number = _insert(log, _hostile(log, kind), where)
    r = _ix(kind, where)("run", "--lab", str(lab), "exp", "--resume", "--json")
    _clean(r, log, number)
    assert _status(log, run_id) == "completed"
    after = json.loads((log.parent / "summary-latest.json").read_text())
    assert after["run_status"] == "completed"
    assert after["subjects"][0]["metrics"] == summary["subjects"][0]["metrics"]
    if where == "torn":  # the writer cut the torn line off: the log is whole again
        assert log.read_bytes().endswith(b"}\n")
        assert all(json.loads(line) for line in log.read_bytes().splitlines())


@pytest.mark.parametrize("kind, where", CASES)
def test_a_new_run_after_a_corrupt_line_records_every_trial(lab: Path, kind: str, where: str):
    log, _ = _completed_run(lab)
    trials = len(log.read_bytes().splitlines())
    _insert(log, _hostile(log, kind), where)
    r = _ix(kind, where)("run", "--lab", str(lab), "exp", "--json")
    assert r.code == 0 and "Traceback" not in r.output, r.output
    new = json.loads(r.stdout)["run_id"]
    assert _status(log, new) == "completed"
    lines = log.read_bytes().splitlines(keepends=True)
    mine = [line for line in lines if f'"run_id":"{new}"'.encode() in line.replace(b": ", b":")]
    assert len(mine) == trials and all(line.endswith(b"}\n") for line in mine)
    if where == "torn":
        assert "removed a torn last line" in flat(r.stderr), r.stderr
        assert not any(BIG.encode() in line or b"[[[[" in line for line in lines)


def test_a_resume_that_fails_leaves_a_completed_run_completed(lab: Path):
    """The run's own line of one trial is corrupt, so the resume runs that trial again; the
    disk is full (RLIMIT_FSIZE at the log's size): the resume fails with one error line, and
    the run is recorded as it was, completed, with its summary."""
    log, run_id = _completed_run(lab)
    lines = log.read_bytes().splitlines(keepends=True)
    lines[0] = lines[0].replace(b'"trial":0', f'"trial":{BIG}'.encode(), 1)  # ix's spacing
    log.write_bytes(b"".join(lines))
    summary = (log.parent / "summary-latest.json").read_bytes()
    size = log.stat().st_size

    env = {k: v for k, v in os.environ.items() if not k.startswith("IX_")}
    env.update({"XDG_CONFIG_HOME": str(lab / ".no-user-config"), "NO_COLOR": "1",
                "COLUMNS": "1000"})
    proc = subprocess.run([*_ix_argv(), "run", "--lab", str(lab), "exp", "--resume"],
                          env=no_bytecode(env), preexec_fn=faulty(file_size=size),
                          capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"{log}: line 1: skipped corrupt line" in flat(proc.stderr)
    [error] = [x for x in flat(proc.stderr).splitlines() if x.startswith("ix: error:")]
    assert "recorded as failed" not in error, error
    assert _status(log, run_id) == "completed"
    assert json.loads((log.parent / "summary-latest.json").read_bytes())["run_status"] \
        == json.loads(summary)["run_status"] == "completed"


@pytest.mark.parametrize("kind", ["big", "deep"])
def test_a_corrupt_annotation_line_is_skipped_by_the_report(lab: Path, kind: str):
    log, run_id = _completed_run(lab)
    assert ix_in_process("annotate", "--lab", str(lab), run_id, "first note").code == 0
    notes = log.parent / "runs" / run_id / "annotations.jsonl"
    with notes.open("ab") as f:
        f.write(_hostile(log, kind) + b"\n")
    assert ix_in_process("annotate", "--lab", str(lab), run_id, "second note").code == 0
    cli = run_ix if kind == REAL[0] else ix_in_process  # the real report for one kind
    r = cli("report", "--lab", str(lab), run_id, "--format", "md")
    assert r.code == 0 and "Traceback" not in r.output, r.output
    assert f"{notes}: line 2: skipped" in flat(r.stderr)
    assert "first note" in r.stdout and "second note" in r.stdout


def test_a_line_naming_trial_two_billion_costs_no_memory_on_resume(lab: Path):
    """A hostile line of the run naming trial 2**31 - 1 (valid JSON, a valid trial number)
    once made `--resume` allocate a byte per trial up to it for each case it named: gigabytes.
    Under a 1 GiB address-space limit the resume skips it, naming why, and completes."""
    log, run_id = _completed_run(lab)
    first = json.loads(log.read_bytes().splitlines()[0])
    hostile = b"".join((json.dumps({**first, "probe_id": f"h-{i}", "trial": (1 << 31) - 1})
                        + "\n").encode() for i in range(3))
    with log.open("ab") as f:
        f.write(hostile)

    env = {k: v for k, v in os.environ.items() if not k.startswith("IX_")}
    env["XDG_CONFIG_HOME"] = str(lab / ".no-user-config")
    proc = subprocess.run([*_ix_argv(), "run", "--lab", str(lab), "exp", "--resume", "--json"],
                          env=env, capture_output=True, text=True, timeout=120,
                          preexec_fn=faulty(address_space=1 << 30))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    said = flat(proc.stderr)
    assert "skipped 3 line(s) of run" in said and "beyond its 2 trials" in said
    assert _status(log, run_id) == "completed"
