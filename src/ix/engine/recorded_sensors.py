"""Every sensor's readings of a continued run's recorded trials, for its summary's `sensors`.

`--resume` and `--retry-failed` count a run's recorded trials from their outcomes alone
(`ix.engine.resume`: the first sensor's); the summary's `sensors` block (issue 20) needs
every sensor's reading too. The run's standing, valid lines are decoded once, each sensor's
reading counted as if the trial had just run (`Tally.sense`).
"""

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from ix.engine.resume import FAILED, PASSED, Continuation
from ix.eval.scoring import Tally
from ix.lab.paths import readable_file
from ix.store.trial_lines import decode_line, trial_line


def _readings(record: dict[str, Any]) -> list[tuple[str, bool]]:
    listed = record.get("readings")
    if not isinstance(listed, list) or not listed:
        listed = [record.get("reading")]
    return [(str(r.get("sensor_name")), r.get("passed") is True)
            for r in listed if isinstance(r, dict)]


def recorded_sensors(log: Path, continuation: Continuation, tallies: Mapping[str, Tally],
                     case_ids: Collection[str]) -> None:
    """Count the readings of every recorded trial that stands and is valid (its latest
    attempt's line) into its subject's tally."""
    state = continuation.state
    marker = continuation.run_id.encode()
    if not readable_file(log):
        return
    with log.open("rb") as f:
        for raw in f:
            if marker not in raw:
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
            tallies[line.subject].sense(line.probe_id, _readings(record))
