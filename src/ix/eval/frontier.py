"""The summary's `frontier` block (`curriculum:` runs): per subject, the difficulty at which
its share of right trials crosses 50%, with its interval (`ix.stats.frontier`).

A trial is right when its outcome matches its case's expectation (must_trigger: the sensor
passed; should_not_trigger: it did not); acceptable cases are not part of a curriculum.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ix.domain.errors import ConfigError
from ix.eval.models import EvalCase
from ix.eval.numbers import num
from ix.eval.scoring import Tally
from ix.stats.frontier import frontier, frontier_mle, next_difficulty

if TYPE_CHECKING:
    from ix.eval.schemas import FrontierOut

#: Why a subject's curriculum stopped.
SETTLED, MAX_TRIALS, EXHAUSTED = "settled", "max_trials", "exhausted"
#: A difficulty's number (DESIGN.md §2: easy, medium, hard).
DIFFICULTY_LEVELS = {"easy": 1, "medium": 2, "hard": 3}
#: The expectations a curriculum runs (a right trial is defined for them).
JUDGED = ("must_trigger", "should_not_trigger")
_KEYS = ("by", "stop_width", "max_trials")
METHOD = ("P(right) = logistic(a * (frontier - difficulty)), a > 0; grid posterior, flat "
          "prior on the frontier over the difficulties' range widened by `pad`, log-uniform "
          "on a; estimate the posterior median, interval equal-tailed; trials independent "
          "given their difficulty")


@dataclass(frozen=True)
class Curriculum:
    """`curriculum:` resolved: what the difficulty is read from, when a subject stops."""

    by: str
    stop_width: float
    max_trials: int
    level: float = 0.95

    def describe(self) -> dict[str, Any]:
        return {"by": self.by, "stop_width": self.stop_width, "max_trials": self.max_trials}


def curriculum_options(raw: Any, cases: Sequence[EvalCase], trials: int,
                       file: Path | None) -> Curriculum | None:
    """experiment.yaml's `curriculum:` (`true`, or a mapping of `by`, `stop_width`,
    `max_trials`), checked against the cases: exit 2 naming the field."""
    if raw is None or raw is False:
        return None
    given: Mapping[str, Any] = {} if raw is True else raw if isinstance(raw, Mapping) else {
        "": raw}
    for key in given:
        if key not in _KEYS:
            raise ConfigError(f"unknown key {key!r}; allowed: {', '.join(_KEYS)}", file=file,
                              field=f"curriculum.{key}" if key else "curriculum")
    by = given.get("by", "difficulty")
    if not isinstance(by, str) or not (by == "difficulty" or (
            by.startswith("metadata.") and len(by) > 9)):
        raise ConfigError(f"must be difficulty or metadata.KEY, got {by!r}", file=file,
                          field="curriculum.by")
    width = given.get("stop_width", 0.5)
    if isinstance(width, bool) or not isinstance(width, int | float) or width <= 0:
        raise ConfigError(f"must be a positive number, got {width!r}", file=file,
                          field="curriculum.stop_width")
    most = given.get("max_trials", len(cases) * trials)
    if isinstance(most, bool) or not isinstance(most, int) or most < 1:
        raise ConfigError(f"must be a whole number of trials, at least 1, got {most!r}",
                          file=file, field="curriculum.max_trials")
    rated = {case_difficulty(c, by) for c in cases} - {None}
    if len(rated) < 2:
        raise ConfigError(f"needs must_trigger or should_not_trigger cases of at least two "
                          f"difficulties (by {by}); found {len(rated)}", file=file,
                          field="curriculum")
    return Curriculum(by, float(width), most)


def case_difficulty(case: EvalCase, by: str) -> float | None:
    """The case's difficulty as a number (easy 1, medium 2, hard 3, or its `metadata` field
    named by `by`, dots reaching into mappings); None for a case the curriculum leaves out."""
    if case.expectation not in JUDGED:
        return None
    if by == "difficulty":
        return float(DIFFICULTY_LEVELS[case.difficulty]) if case.difficulty else None
    value: Any = case.metadata
    for part in by.removeprefix("metadata.").split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else None


def pad_of(levels: Sequence[float]) -> float:
    """How far beyond the difficulties tried the frontier may lie: half their range, ≥ 1."""
    return max(1.0, (max(levels) - min(levels)) / 2)


def next_step(rule: Curriculum, counts: Mapping[float, Sequence[int]],
              open_levels: Sequence[float], trials: int, pad: float) -> float | str:
    """The curriculum's rule, one subject at a time: given its [right, valid] trials per
    difficulty so far (`counts`), the `trials` it was handed and the difficulties that still
    have a trial left, either the difficulty of its next trial or why it stops (`SETTLED`:
    the frontier's interval is at most `stop_width` wide; `MAX_TRIALS`; `EXHAUSTED`)."""
    xs = sorted(counts)
    k, n = [int(counts[x][0]) for x in xs], [int(counts[x][1]) for x in xs]
    if sum(n) and frontier(xs, k, n, rule.level, pad).width <= rule.stop_width:
        return SETTLED
    if trials >= rule.max_trials:
        return MAX_TRIALS
    if not open_levels:
        return EXHAUSTED
    return next_difficulty(open_levels, xs, k, n, pad)


def right_counts(tally: Tally, cases: Sequence[EvalCase], by: str
                 ) -> dict[float, list[int]]:
    """Difficulty -> [right, valid] trials of the subject's tally."""
    out: dict[float, list[int]] = {}
    for case in cases:
        x = case_difficulty(case, by)
        c = tally.counts.get(case.id)
        if x is None or c is None or not c.valid:
            continue
        cell = out.setdefault(x, [0, 0])
        cell[0] += c.passed if case.expectation == "must_trigger" else c.valid - c.passed
        cell[1] += c.valid
    return out


def frontier_block(rule: Curriculum, cases: Sequence[EvalCase], tallies: Mapping[str, Tally],
                   stopped: Mapping[str, str]) -> "FrontierOut":
    """The summary's `frontier`: the rule, and per subject its estimate and interval, the
    trials they rest on, whether an end is open, the MLE for comparison, why it stopped."""
    levels = sorted({x for c in cases if (x := case_difficulty(c, rule.by)) is not None})
    pad = pad_of(levels)
    subjects = {}
    for name, tally in tallies.items():
        counts = right_counts(tally, cases, rule.by)
        xs = sorted(counts)
        k, n = [counts[x][0] for x in xs], [counts[x][1] for x in xs]
        row: dict[str, Any] = {"estimate": None, "ci": None, "trials": sum(n),
                               "open_below": None, "open_above": None, "mle": None,
                               "by_difficulty": [{"difficulty": x, "right": counts[x][0],
                                                  "valid": counts[x][1]} for x in xs],
                               "stopped": stopped.get(name)}
        if sum(n):
            f = frontier(xs, k, n, rule.level, pad)
            row.update(estimate=num(f.estimate), ci=[num(f.lo), num(f.hi)],
                       open_below=bool(f.open_below), open_above=bool(f.open_above),
                       mle=num(frontier_mle(xs, k, n)) if len(xs) > 1 else None)
        subjects[name] = row
    return cast("FrontierOut", {**rule.describe(), "level": rule.level,
                                "difficulties": levels, "pad": pad, "subjects": subjects,
                                "method": METHOD})
