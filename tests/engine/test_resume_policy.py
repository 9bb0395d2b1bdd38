"""The resume policy's reading of a log in either spacing: the errors a resumed run reports
come from the errored lines that stand, whether an older ix (the stdlib's `", "` / `": "`)
or today's encoder (compact) wrote them."""

import json

from ix.engine.outcome import ErrorLog
from ix.engine.resume import Continuation
from ix.engine.run import _earlier_errors
from ix.eval.scoring import Tally
from ix.store.trial_scan import read_state
from ix.store.trials import encode_line

RUN = "20261127T001500000Z-p17b"


def _line(trial: int, kind: str | None, attempt: int = 0) -> dict:
    return {"run_id": RUN, "experiment": "e", "subject": "s", "probe_id": "p", "trial": trial,
            "seed": 1, "attempt": attempt, "expectation": "must_trigger",
            "started_at": "2026-11-27T00:15:00.000Z", "duration_ms": 1.0, "observation": None,
            "reading": None,
            "error": None if kind is None else {"kind": kind, "message": f"{kind} happened"}}


def test_earlier_errors_are_read_from_lines_of_either_spacing(tmp_path):
    log = tmp_path / "trials.jsonl"
    records = [_line(0, "timeout"), _line(1, "runtime_error"), _line(2, None),
               _line(3, "timeout"), _line(3, None, attempt=1)]  # trial 3 passed on retry
    with log.open("wb") as f:
        for i, record in enumerate(records):
            f.write(encode_line(record) if i % 2 else
                    (json.dumps(record, ensure_ascii=False) + "\n").encode())
    state = read_state(log, RUN)
    tally = Tally(cases=[])
    tally.errors = 2
    errlog = ErrorLog()
    _earlier_errors(log, Continuation(RUN, "resume", {}, state), errlog, {"s": tally})
    assert errlog.counts == {"s": {"timeout": 1, "runtime_error": 1}}
    assert errlog.examples == {"timeout": "timeout happened",
                               "runtime_error": "runtime_error happened"}
