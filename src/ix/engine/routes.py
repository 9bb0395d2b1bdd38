"""Which skill took each recorded trial of a continued run, for its summary's routing table.

`--resume` and `--retry-failed` count a run's recorded trials from their outcomes alone
(`ix.engine.resume`); the routing table also needs the skills each invoked. Only the run's
lines that hold a Skill call are decoded (the others took no skill), so this costs one pass
over the log's bytes.
"""

from collections.abc import Collection, Iterator, Mapping
from pathlib import Path
from typing import Any

from ix.engine.resume import FAILED, PASSED, Continuation
from ix.eval.scoring import Tally
from ix.fs.paths import readable_file
from ix.store.trial_lines import LineFacts, decode_line, invoked_skills, trial_line


def standing_lines(log: Path, continuation: Continuation, tallies: Mapping[str, Tally],
                   case_ids: Collection[str], needle: bytes = b""
                   ) -> Iterator[tuple[LineFacts, dict[str, Any]]]:
    """The continued run's recorded trials that stand and are valid (each its latest
    attempt's line, passed or failed), of a subject in `tallies` and a case in `case_ids`:
    (line, record). Only lines holding `needle` are decoded (one pass over the bytes)."""
    state = continuation.state
    marker = continuation.run_id.encode()
    if not readable_file(log):
        return
    with log.open("rb") as f:
        for raw in f:
            if marker not in raw or needle not in raw:
                continue
            record = decode_line(raw)
            line = trial_line(record)
            if line is None or line.run_id != continuation.run_id or line.errored:
                continue
            if line.subject not in tallies or line.probe_id not in case_ids:
                continue
            if state.code(line.subject, line.probe_id, line.trial) not in (PASSED, FAILED) \
                    or state.attempt(line.subject, line.probe_id, line.trial) != line.attempt:
                continue
            yield line, record


def recorded_routes(log: Path, continuation: Continuation, tallies: Mapping[str, Tally],
                    case_ids: Collection[str]) -> None:
    """Route every recorded trial that stands and is valid: to the first skill it invoked
    (its latest attempt's), else to none."""
    state = continuation.state
    taken: dict[tuple[str, str, int], str] = {}
    for line, record in standing_lines(log, continuation, tallies, case_ids, b'"Skill"'):
        invoked = invoked_skills(record.get("observation"))
        if invoked:
            taken[(line.subject, line.probe_id, line.trial)] = invoked[0]
    for (subject, probe_id), codes in state.codes.items():
        tally = tallies.get(subject)
        if tally is None or probe_id not in case_ids:
            continue
        for trial, code in enumerate(codes):
            if code in (PASSED, FAILED):
                tally.route(probe_id, taken.get((subject, probe_id, trial)))
