"""The data behind the report's figures that `summary.json` does not hold: the execution
timeline (from the trial lines' `started_at` and `duration_ms`), the correct rate by case
difficulty (from the case files), and each subject's trial-level rates.

Plain JSON data, part of `ix report --json`; `ix.report.html` draws it.
"""

import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from ix._lazy import lazy
from ix.eval.models import Difficulty
from ix.eval.numbers import num
from ix.stats.clustered import hierarchical_interval
from ix.stats.intervals import beta_interval

if TYPE_CHECKING:
    import numpy as np

    from ix.report.schemas import DifficultyFigure, DifficultyRow, RateFigure, Timeline
else:
    np = lazy("numpy")

#: Up to this many attempts the timeline keeps each trial; above, it keeps per-bin counts.
TIMELINE_TRIALS = 600
#: How many time bins a big run's timeline has.
TIMELINE_BINS = 80
#: A timeline point's statuses (`outcome`), by code.
STATUSES = ("ok", "wrong", "error")
#: Difficulty levels in order (DESIGN.md §2).
LEVELS: tuple[Difficulty, ...] = ("easy", "medium", "hard")


class TrialPoint(NamedTuple):
    subject: str
    probe_id: str
    trial: int
    attempt: int
    start_ms: float  # since the epoch
    duration_ms: float
    status: str  # ok | wrong | error
    error: str | None  # the error kind


def outcome(trial: Mapping[str, Any]) -> str:
    """`error`, `wrong` (the reading goes against the case's expectation) or `ok`."""
    if trial.get("error"):
        return "error"
    passed = bool((trial.get("reading") or {}).get("passed"))
    expectation = trial.get("expectation")
    if (expectation == "must_trigger" and not passed) or \
            (expectation == "should_not_trigger" and passed):
        return "wrong"
    return "ok"


def point(t: Mapping[str, Any]) -> TrialPoint | None:
    """The attempt's point on the timeline (None without a readable `started_at`)."""
    at = start_ms(t)
    if at is None:
        return None
    error = t.get("error")
    return TrialPoint(
        str(t.get("subject")), str(t.get("probe_id")), int(t.get("trial") or 0),
        int(t.get("attempt") or 0), at, duration_ms(t), outcome(t),
        str(error.get("kind")) if isinstance(error, dict) else None)


def start_ms(t: Mapping[str, Any]) -> float | None:
    """The attempt's `started_at` in ms since the epoch (None if missing or unreadable)."""
    started = t.get("started_at")
    if not isinstance(started, str):
        return None
    try:
        return datetime.fromisoformat(started).timestamp() * 1000.0
    except ValueError:
        return None


def duration_ms(t: Mapping[str, Any]) -> float:
    """The attempt's `duration_ms`, 0 when it is not a finite number (NaN, 1e400 in an
    edited line)."""
    duration = t.get("duration_ms")
    return float(duration) if isinstance(duration, int | float) \
        and math.isfinite(duration) else 0.0


def timeline(points: Sequence[TrialPoint], subjects: Sequence[str], *,
             limit: int = TIMELINE_TRIALS, bins: int = TIMELINE_BINS) -> "Timeline | None":
    """Every attempt on a time axis from the run's first start, one lane per subject: each
    trial (`marks`) when there are at most `limit`, else counts per status in `bins` equal
    time bins (by start time, `binned`), so the report stays small. None without
    timestamps."""
    if not points:
        return None
    if len(points) > limit:
        names = list(dict.fromkeys(p.subject for p in points))
        index = {name: i for i, name in enumerate(names)}
        return binned([p.start_ms for p in points],
                      max(p.start_ms + p.duration_ms for p in points),
                      [STATUSES.index(p.status) for p in points],
                      [index[p.subject] for p in points], names, subjects, bins=bins)
    t0 = min(p.start_ms for p in points)
    span = max(p.start_ms + p.duration_ms for p in points) - t0
    lanes = _lanes(subjects, {p.subject for p in points})
    for lane in lanes.values():
        lane["marks"] = []
    for p in sorted(points, key=lambda p: (p.start_ms, p.subject, p.probe_id, p.trial)):
        lane = lanes[p.subject]
        lane["trials"] += 1
        lane["errors"] += p.status == "error"
        lane["marks"].append({"t": num(p.start_ms - t0), "d": num(p.duration_ms),
                              "status": p.status, "probe_id": p.probe_id,
                              "trial": p.trial, "attempt": p.attempt, "error": p.error})
    return _timeline(t0, span, len(points), sum(p.status == "error" for p in points), None,
                     lanes)


def binned(starts: Sequence[float], end: float, statuses: Sequence[int],
           lane_of: Sequence[int], names: Sequence[str], subjects: Sequence[str], *,
           bins: int = TIMELINE_BINS) -> "Timeline | None":
    """`timeline`'s counts per status (`STATUSES[statuses[i]]`) in `bins` equal time bins,
    from each attempt's start, its lane (`names[lane_of[i]]`) and the latest end."""
    if not starts:
        return None
    t0 = min(starts)
    span = end - t0
    lanes = _lanes(subjects, set(names))
    for lane in lanes.values():
        lane["bins"] = [{"ok": 0, "wrong": 0, "error": 0} for _ in range(bins)]
    bin_ms = max(span, 1.0) / bins
    by_index = [lanes[name] for name in names]
    errors = 0
    for start, status, i in zip(starts, statuses, lane_of, strict=True):
        lane = by_index[i]
        lane["trials"] += 1
        lane["errors"] += status == 2
        errors += status == 2
        lane["bins"][min(bins - 1, int((start - t0) / bin_ms))][STATUSES[status]] += 1
    return _timeline(t0, span, len(starts), errors, bin_ms, lanes)


def _lanes(subjects: Sequence[str], found: set[str]) -> dict[str, dict[str, Any]]:
    """One lane per subject: `subjects` in order, then the others found, by name."""
    order = list(subjects) + sorted(found - set(subjects))
    return {s: {"subject": s, "trials": 0, "errors": 0} for s in order}


def _timeline(t0: float, span: float, attempts: int, errors: int, bin_ms: float | None,
              lanes: dict[str, dict[str, Any]]) -> "Timeline":
    start = datetime.fromtimestamp(t0 / 1000.0, tz=UTC).isoformat(timespec="milliseconds")
    # the lanes are filled by key and status above: the checker takes their type from here
    return cast("Timeline", {
        "start": start.replace("+00:00", "Z"), "span_ms": num(span), "attempts": attempts,
        "errors": errors, "mode": "trials" if bin_ms is None else "bins",
        "bin_ms": None if bin_ms is None else num(bin_ms), "lanes": list(lanes.values())})


def difficulty(summary: Mapping[str, Any],
               cases: Sequence[dict[str, Any]] | None) -> "DifficultyFigure | None":
    """Per subject and difficulty: the share of cases whose majority vote is right, with its
    95% interval (Beta(k+1, n−k+1)); `cases` are the case files' rows (`probe_id`,
    `difficulty`). None when no case of the run has a difficulty."""
    level_of = {str(c["probe_id"]): c.get("difficulty") for c in cases or ()
                if c.get("difficulty") in LEVELS}
    family_of = {str(c["probe_id"]): str(c.get("family") or c["probe_id"]) for c in cases or ()}
    run_cases = {p["probe_id"] for b in summary["subjects"] for p in b["probe_results"]}
    rated = {c: lvl for c, lvl in level_of.items() if c in run_cases}
    if not rated:
        return None
    levels = [lvl for lvl in LEVELS if lvl in rated.values()]
    by_subject: dict[str, list[DifficultyRow]] = {}
    for block in summary["subjects"]:
        rows: list[DifficultyRow] = []
        for lvl in levels:
            voted = [p for p in block["probe_results"]
                     if rated.get(p["probe_id"]) == lvl and p.get("correct") is not None]
            k, n = sum(bool(p["correct"]) for p in voted), len(voted)
            lo, hi = _level_interval(voted, family_of)
            rows.append({"level": lvl, "k": k, "n": n,
                         "rate": num(k / n) if n else None,
                         "ci": [num(lo), num(hi)] if n else None})
        by_subject[block["name"]] = rows
    return {"levels": list(levels),
            "cases": {lvl: sum(v == lvl for v in rated.values()) for lvl in levels},
            "unrated": len(run_cases - set(rated)), "by_subject": by_subject,
            "method": "share of the level's cases whose majority vote is right; 95% "
                      "equal-tailed interval of Beta(k+1, n-k+1), one-sided at k = 0 and "
                      "k = n (cases generated from one original: hierarchical over their "
                      "families)"}


def _level_interval(voted: Sequence[Mapping[str, Any]],
                    family_of: Mapping[str, str]) -> tuple[float, float]:
    """Beta(k+1, n−k+1) over the votes; where cases generated from one original share a
    family (`variants:`, `probe: paraphrase`), the hierarchical interval with each family's
    votes as its draws (STATS.md §10: a family is one unit, as in the summary)."""
    k = sum(bool(p["correct"]) for p in voted)
    groups: dict[str, list[int]] = {}
    for p in voted:
        cell = groups.setdefault(family_of.get(p["probe_id"], p["probe_id"]), [0, 0])
        cell[0] += bool(p["correct"])
        cell[1] += 1
    if len(groups) in (0, 1, len(voted)):
        return beta_interval(k, len(voted))
    counts = np.array(list(groups.values()), dtype=np.int64)
    return hierarchical_interval(counts[:, 0], counts[:, 1], estimate=k / len(voted))


def subject_rates(summary: Mapping[str, Any]) -> "dict[str, dict[str, RateFigure]]":
    """Each subject's trial-level rates by expectation (`must_trigger`, `should_not_trigger`,
    `correct`): `rate`, `ci` (clustered by case), `n_trials`, from the summary."""
    out: dict[str, dict[str, RateFigure]] = {}
    for block in summary["subjects"]:
        levels = block.get("trial_level") or {}
        out[block["name"]] = {k: {"rate": v.get("rate"), "ci": v.get("ci"),
                                  "n_trials": v.get("n_trials"), "n_cases": v.get("n_cases")}
                              for k, v in levels.items() if isinstance(v, dict)}
    return out
