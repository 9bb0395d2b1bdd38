"""`standing_errors`: a resumed run's errored trials, each by its latest attempt's error, read
from the log without decoding the lines that are not the run's errors."""

import json
from pathlib import Path

from ix.store.trial_scan import standing_errors


def _line(run_id: str, trial: int, attempt: int, error: dict | None, *,
          compact: bool = False) -> str:
    record = {"run_id": run_id, "experiment": "e", "subject": "s", "probe_id": "c",
              "trial": trial, "attempt": attempt, "error": error}
    return json.dumps(record, separators=(",", ":") if compact else None) + "\n"


def test_the_latest_attempt_of_each_errored_trial_stands(tmp_path: Path):
    log = tmp_path / "trials.jsonl"
    log.write_text(
        _line("r1", 0, 0, {"kind": "timeout", "message": "first"})
        + _line("r1", 0, 1, {"kind": "rate_limited", "message": "second"}, compact=True)
        + _line("r1", 0, 1, {"kind": "runtime_error", "message": "tie: the later line"})
        + _line("r1", 1, 2, {"kind": "timeout", "message": "attempt 2"})
        + _line("r1", 1, 0, {"kind": "runtime_error", "message": "older, read later"})
        + _line("r1", 2, 0, None)
        + _line("r2", 3, 0, {"kind": "timeout", "message": "another run"})
        + "not json, but names r1 and \"error\": {\n")
    assert standing_errors(log, "r1") == {
        ("s", "c", 0): ("runtime_error", "tie: the later line"),
        ("s", "c", 1): ("timeout", "attempt 2"),
    }


def test_a_log_that_does_not_read_has_none(tmp_path: Path):
    assert standing_errors(tmp_path / "missing.jsonl", "r1") == {}
