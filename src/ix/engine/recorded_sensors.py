"""Every sensor's readings of a continued run's recorded trials, for its summary's `sensors`.

`--resume` and `--retry-failed` count a run's recorded trials from their outcomes alone
(`ix.engine.resume`: the first sensor's); the summary's `sensors` block (issue 20) needs
every sensor's reading too. The run's standing, valid lines are decoded once, each sensor's
reading counted as if the trial had just run (`Tally.sense`).
"""

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from ix.engine.resume import Continuation
from ix.engine.routes import standing_lines
from ix.eval.scoring import Tally


def _readings(record: dict[str, Any]) -> list[tuple[str, bool | None]]:
    listed = record.get("readings")
    if not isinstance(listed, list) or not listed:
        listed = [record.get("reading")]
    return [(str(r.get("sensor_name")), None if r.get("passed") is None  # n/a
             else r.get("passed") is True) for r in listed if isinstance(r, dict)]


def recorded_sensors(log: Path, continuation: Continuation, tallies: Mapping[str, Tally],
                     case_ids: Collection[str]) -> None:
    """Count the readings of every recorded trial that stands and is valid (its latest
    attempt's line) into its subject's tally."""
    for line, record in standing_lines(log, continuation, tallies, case_ids):
        tallies[line.subject].sense(line.probe_id, _readings(record))
