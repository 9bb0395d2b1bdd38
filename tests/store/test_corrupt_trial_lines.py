"""Every reader of a trial log skips a line it cannot decode, naming it, and none crashes
(issue 14, item 7): a number of 5,000 digits (Python refuses to convert it: ValueError), a
value nested 50,000 deep (RecursionError), in the middle of the log or as its torn last line.

The readers: `read_trials` (reports), the resume reader `read_state` (its fast paths too:
the hostile values sit where they do not look), `run_lines` (exports), `trial_record` (the
viewer's trial page) and the writer's check of a torn last line (`TrialWriter`).
"""

import json
from pathlib import Path

import pytest

from ix.api.runs import run_info
from ix.api.trials import trial_record
from ix.engine.resume import read_state
from ix.interchange.export import run_lines
from ix.store.trials import TrialWriter, encode_line, read_trials

RUN = "20260101T000000Z-aaaaaa"


def record(trial: int, **changes) -> dict:
    """A trial line as the engine writes it (key order included)."""
    base = {
        "run_id": RUN, "experiment": "exp", "subject": "s", "probe_id": "must-001",
        "trial": trial, "seed": 12345, "attempt": 0, "expectation": "must_trigger",
        "started_at": "2026-01-01T00:00:00.000Z", "duration_ms": 1.5,
        "observation": {"content": "x" * 1200, "tool_calls": [], "duration_ms": 1,
                        "tokens_input": 3, "tokens_output": 2, "cost_usd": 0.5},
        "reading": {"sensor_name": "activation", "passed": True, "score": 1.0, "metrics": {},
                    "details": ""},
        "error": None,
    }
    base.update(changes)
    return base


def line(value: dict) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode() + b"\n"


#: Lines of the run that look like ix's own at both ends (so the resume reader's fast paths
#: take them) but hold what Python cannot decode in the middle.
HOSTILE = {
    "seed of 5,000 digits": line(record(7)).replace(b'"seed": 12345', b'"seed": ' + b"9" * 5000),
    "trial of 5,000 digits": line(record(7)).replace(b'"trial": 7', b'"trial": ' + b"9" * 5000),
    "nested 50,000 deep": line(record(7)).replace(
        b'"tool_calls": []', b'"tool_calls": ' + b"[" * 50_000 + b"]" * 50_000),
    "nested 20,000 deep": line(record(7)).replace(
        b'"details": ""', b'"details": "", "x": ' + b"[" * 20_000 + b"]" * 20_000),
    "deep, not an object": b"[" * 50_000 + b"]" * 50_000 + b"\n",
}


@pytest.mark.parametrize("name", HOSTILE)
def test_parse_line_refuses_what_no_reader_can_decode(name: str):
    from ix.store.trials import parse_line  # (new in issue 14: the old code has none)

    assert parse_line(HOSTILE[name]) is None
    assert parse_line(HOSTILE[name].rstrip(b"\n")) is None
    assert parse_line(line(record(1))) == record(1)


def _log(tmp_path: Path, hostile: bytes, where: str) -> tuple[Path, int]:
    """Trials 0..3 of the run, and `hostile` in the middle or as a torn last line."""
    lines = [line(record(t)) for t in range(4)]
    if where == "middle":
        lines.insert(2, hostile)
        number = 3
    else:
        lines.append(hostile.rstrip(b"\n"))
        number = 5
    path = tmp_path / "trials.jsonl"
    path.write_bytes(b"".join(lines))
    return path, number


CASES = [(name, where) for name in HOSTILE for where in ("middle", "torn")]


@pytest.mark.parametrize("name, where", CASES)
@pytest.mark.parametrize("block", [64, 4096, 1 << 22])
def test_every_reader_skips_the_line_and_names_it(tmp_path: Path, name: str, where: str,
                                                  block: int):
    log, number = _log(tmp_path, HOSTILE[name], where)
    what = "torn last line" if where == "torn" else "corrupt line"
    expected = f"{log}: line {number}: skipped {what}"
    ours = RUN.encode() in HOSTILE[name]  # the run's readers warn of lines that may be its own

    warned: list[str] = []
    assert [r["trial"] for r in read_trials(log, warned.append)] == [0, 1, 2, 3]
    assert [w.split(" (")[0] for w in warned] == [expected]

    resumed: list[str] = []
    state = read_state(log, RUN, resumed.append, block=block)
    assert state.lines == 4 and sorted(t for _, _, t, _ in state.outcomes()) == [0, 1, 2, 3]
    assert state.usage == {"s": [12, 8, 2.0]}
    assert [w.split(" (")[0] for w in resumed] == ([expected] if ours or where == "torn"
                                                   else [])

    exported: list[str] = []
    assert [json.loads(x)["trial"] for x in run_lines(log, RUN, exported.append)] == [0, 1, 2, 3]
    assert [w.split(" (")[0] for w in exported] == ([expected] if ours else [])


@pytest.mark.parametrize("name", HOSTILE)
def test_the_viewer_finds_a_trial_past_a_corrupt_line(tmp_path: Path, name: str):
    lab = tmp_path / "lab"
    folder = lab / "exp" / "results" / "runs" / RUN
    folder.mkdir(parents=True)
    (folder / "spec.yaml").write_text(f"run_id: {RUN}\nexperiment: exp\nstatus: completed\n")
    log = lab / "exp" / "results" / "trials.jsonl"
    log.write_bytes(line(record(0)) + HOSTILE[name] + line(record(7, attempt=1)))
    run = run_info(folder)
    assert trial_record(run, "s", "must-001", 7) == record(7, attempt=1)
    assert trial_record(run, "s", "must-001", 7, attempt=0) is None


@pytest.mark.parametrize("name", HOSTILE)
def test_the_writer_cuts_off_a_torn_last_line_it_cannot_decode(tmp_path: Path, name: str):
    log = tmp_path / "trials.jsonl"
    log.write_bytes(line(record(0)) + line(record(1)) + HOSTILE[name].rstrip(b"\n"))
    warned: list[str] = []
    with TrialWriter(log, warn=warned.append) as writer:
        writer.write(record(2))
    assert log.read_bytes() == line(record(0)) + line(record(1)) + encode_line(record(2))
    assert len(warned) == 1 and f"{log}: line 3: removed a torn last line" in warned[0]


@pytest.mark.parametrize("name", HOSTILE)
def test_the_other_logs_skip_such_a_line_too(tmp_path: Path, name: str):
    """A run's `annotations.jsonl` (which `ix report` reads) and the lab's `audit.jsonl`."""
    from ix.store.annotations import read_annotations
    from ix.store.audit import audit_path, read_audit

    note = json.dumps({"at": "t", "user": "u", "host": "h", "case": None, "text": "kept"})
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "annotations.jsonl").write_bytes(HOSTILE[name] + note.encode() + b"\n")
    warned: list[str] = []
    assert [a["text"] for a in read_annotations(run_dir, warned.append)] == ["kept"]
    assert len(warned) == 1 and "annotations.jsonl: line 1: skipped" in warned[0]
    audit = audit_path(tmp_path)
    audit.write_bytes(HOSTILE[name] + b'{"action": "run"}\n')
    assert list(read_audit(tmp_path)) == [{"action": "run"}]
