"""Every sensor's readings of a continued run's recorded trials, for its summary's `sensors`,
and their tokens, time, cost and scores, for its `outcomes`.

`--resume` and `--retry-failed` count a run's recorded trials from their outcomes alone
(`ix.engine.resume`: the first sensor's); the summary's `sensors` block (issue 20) needs
every sensor's reading too, and its `outcomes` block each trial's numbers. The run's
standing, valid lines are decoded once, each counted as if the trial had just run
(`Tally.sense`, `OutcomeSums.measure`); every attempt's cost, by case, comes from the scan
of the log (`RunState.spent`).
"""

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from ix.engine.resume import Continuation
from ix.engine.routes import standing_lines
from ix.eval.judge_agreement import readings_of
from ix.eval.outcomes import facts_of, finite, wrong
from ix.eval.scoring import Tally


def _readings(record: dict[str, Any]) -> list[tuple[str, bool | None]]:
    return [(str(r.get("sensor_name")), None if r.get("passed") is None  # n/a
             else r.get("passed") is True) for r in readings_of(record)]


def recorded_sensors(log: Path, continuation: Continuation, tallies: Mapping[str, Tally],
                     case_ids: Collection[str]) -> None:
    """Count the readings and numbers of every recorded trial that stands and is valid (its
    latest attempt's line) into its subject's tally, and every attempt's cost."""
    for line, record in standing_lines(log, continuation, tallies, case_ids):
        tally = tallies[line.subject]
        tally.sense(line.probe_id, _readings(record))
        reading = record.get("reading") if isinstance(record.get("reading"), dict) else None
        observation = record.get("observation")
        tally.outcomes.measure(
            line.probe_id,
            facts_of(observation if isinstance(observation, dict) else None,
                     record.get("duration_ms")),
            finite(reading.get("score")) if reading else None,
            reading is not None and not wrong(str(record.get("expectation")),
                                              reading.get("passed") is True))
        if tally.judges:
            for r in readings_of(record):
                if r.get("sensor_name") in tally.judges and isinstance(r.get("metrics"), dict):
                    tally.outcomes.judged(line.probe_id, r["sensor_name"], r["metrics"])
    for (subject, case), cost in continuation.state.spent.items():
        if subject in tallies and case in case_ids:
            tallies[subject].outcomes.spend(case, cost)
