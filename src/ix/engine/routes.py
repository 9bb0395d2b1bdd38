"""Which skill took each recorded trial of a continued run, for its summary's routing table.

`--resume` and `--retry-failed` count a run's recorded trials from their outcomes alone
(`ix.engine.resume`); the routing table also needs the skills each invoked. Only the run's
lines that hold a Skill call are decoded (the others took no skill), so this costs one pass
over the log's bytes.
"""

from collections.abc import Collection, Mapping
from pathlib import Path

from ix.engine.resume import FAILED, PASSED, Continuation
from ix.eval.scoring import Tally
from ix.lab.paths import readable_file
from ix.store.trial_lines import decode_line, invoked_skills, trial_line


def recorded_routes(log: Path, continuation: Continuation, tallies: Mapping[str, Tally],
                    case_ids: Collection[str]) -> None:
    """Route every recorded trial that stands and is valid: to the first skill it invoked
    (its latest attempt's), else to none."""
    state = continuation.state
    taken: dict[tuple[str, str, int], str] = {}
    marker = continuation.run_id.encode()
    if readable_file(log):
        with log.open("rb") as f:
            for raw in f:
                if b'"Skill"' not in raw or marker not in raw:
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
