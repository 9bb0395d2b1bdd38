"""Longitudinal studies: `sessions:` in experiment.yaml, and the time trend of its runs.

An experiment with `sessions: {every: 1w, count: 8}` is run once a session (`ix run`, by hand
or on the schedule `ix ci init` derives from `every`), each time on the same cases. Every
completed run is one session, in the order the runs started, at the time its `spec.yaml`
says it started: the times are the recorded ones, never the schedule's.

The question is "does the extension keep helping over weeks?": per subject, the slope over
time of each case's rate of right trials (`correct_rate`: must_trigger cases right when the
sensor passed, should_not_trigger when it did not; acceptable cases do not count), with the
case as the unit (`ix.stats.trend.case_level_slope`: the mean of the per-case least-squares
slopes, a t interval on N − 1 degrees of freedom — the case-clustered regression of the rates
on case and time). Time is measured in `every`'s unit (hours, days or weeks since the first
session), so the slope reads "per week" for `every: 1w`. A case without a valid trial in one
of a subject's sessions leaves that subject's trend; a session a subject did not run is not
one of its points.

Each other subject's trend is also compared with the control's (the first subject), paired
by case on the sessions both ran (`case_level_slope_difference`: the mean over cases of the
difference of their slopes): does the treatment's advantage grow or fade? Their two-sided
p-values are Holm-adjusted together (`sessions:versus_control`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Annotated, Any

from pydantic import ConfigDict, Field, field_validator

from ix.domain.model import Model
from ix.eval.numbers import LEVEL, num, pair
from ix.stats.power import holm
from ix.stats.trend import case_level_slope, case_level_slope_difference

__all__ = ["EVERY", "METRIC", "VERSUS_FAMILY", "Session", "SessionsSpec", "case_rights",
           "every_delta", "sessions_block"]

#: `every`: a whole number of hours, days or weeks.
EVERY = re.compile(r"([1-9][0-9]{0,3})([hdw])")
UNITS = {"h": "hour", "d": "day", "w": "week"}
_UNIT_DELTA = {"h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1)}
#: the rate whose trend is reported: the share of right trials per case
METRIC = "correct_rate"


class SessionsSpec(Model):
    """`sessions:` — the experiment is a longitudinal study: `count` sessions, one every
    `every` (`12h`, `1d`, `1w`, `2w`: a whole number of hours, days or weeks)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    every: str
    count: Annotated[int, Field(ge=2, le=1000)]

    @field_validator("every")
    @classmethod
    def _every(cls, v: str) -> str:
        if not EVERY.fullmatch(v):
            raise ValueError(f"{v!r} is not a period: a whole number of hours, days or weeks "
                             "(e.g. 12h, 1d, 1w, 2w)")
        return v


def every_delta(every: str) -> tuple[timedelta, str]:
    """The period `every` as a timedelta, and its unit's name (`week`)."""
    m = EVERY.fullmatch(every)
    if m is None:
        raise ValueError(f"not a period: {every!r}")
    return int(m.group(1)) * _UNIT_DELTA[m.group(2)], UNITS[m.group(2)]


@dataclass(frozen=True)
class Session:
    """One completed run of the study: its run id, start time, and per subject the counts
    (right trials, valid trials) of each case (`case_rights`)."""

    run_id: str
    started_at: datetime
    subjects: Mapping[str, Mapping[str, tuple[int, int]]] = field(default_factory=dict)


def case_rights(probe_results: Sequence[Mapping[str, Any]]) -> dict[str, tuple[int, int]]:
    """A subject's (right trials, valid trials) per case from a summary's `probe_results`:
    must_trigger cases are right when the sensor passed, should_not_trigger when it did not;
    acceptable cases are left out."""
    out: dict[str, tuple[int, int]] = {}
    for p in probe_results:
        n, passed = int(p.get("n") or 0), int(p.get("passed") or 0)
        if p.get("expectation") == "must_trigger":
            out[str(p["probe_id"])] = (passed, n)
        elif p.get("expectation") == "should_not_trigger":
            out[str(p["probe_id"])] = (n - passed, n)
    return out


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _trend(name: str, sessions: Sequence[Session], origin: datetime, unit: timedelta,
           level: float) -> dict[str, Any]:
    mine = [s for s in sessions if name in s.subjects]
    cases = sorted(set().union(*(s.subjects[name] for s in mine))) if mine else []
    rates = []
    for s in mine:
        valid = [k / n for k, n in (s.subjects[name].get(c, (0, 0)) for c in cases) if n]
        rates.append(num(sum(valid) / len(valid)) if valid else None)
    row: dict[str, Any] = {"subject": name, "sessions": len(mine), "rates": rates,
                           "slope": None, "slope_ci": None, "p_decline": None,
                           "p_value": None, "n_cases": 0}
    if len(mine) < 2:
        row["note"] = "a trend needs two sessions"
        return row
    x = [(s.started_at - origin) / unit for s in mine]
    if len(set(x)) < 2:
        row["note"] = "every session started at the same time: no trend"
        return row
    counts = [[s.subjects[name].get(c, (0, 0)) for s in mine] for c in cases]
    t = case_level_slope(counts, x, what="session times")
    if t is None:
        row["note"] = "no case has a valid trial in every session"
        return row
    row.update(slope=num(t.slope + 0.0), slope_ci=pair(*t.interval(level)),
               p_decline=num(t.p_decline), p_value=num(t.p_value), n_cases=t.n)
    return row


#: the Holm family of the subjects' trends against the control's
VERSUS_FAMILY = "sessions:versus_control"


def _versus(control: str, name: str, sessions: Sequence[Session], origin: datetime,
            unit: timedelta, level: float) -> dict[str, Any]:
    """Does the help keep up? `name`'s trend minus the control's, paired by case, on the
    sessions both ran (`case_level_slope_difference`)."""
    both = [s for s in sessions if control in s.subjects and name in s.subjects]
    row: dict[str, Any] = {"subject": name, "control": control, "sessions": len(both),
                           "diff": None, "diff_ci": None, "p_value": None,
                           "p_value_holm": None, "n_cases": 0, "family": VERSUS_FAMILY}
    x = [(s.started_at - origin) / unit for s in both]
    cases = sorted(set().union(*(s.subjects[control] for s in both))) if both else []
    if len(set(x)) < 2:
        row["note"] = "needs two sessions at different times run by both"
        return row
    t = case_level_slope_difference(
        [[s.subjects[control].get(c, (0, 0)) for s in both] for c in cases],
        [[s.subjects[name].get(c, (0, 0)) for s in both] for c in cases], x,
        what="session times")
    if t is None:
        row["note"] = "no case has a valid trial in every session of both"
        return row
    row.update(diff=num(t.slope + 0.0), diff_ci=pair(*t.interval(level)),
               p_value=num(t.p_value), n_cases=t.n)
    return row


def sessions_block(spec: SessionsSpec, sessions: Sequence[Session], now: datetime,
                   level: float = LEVEL) -> dict[str, Any]:
    """The study so far: each session (index, run, time, each subject's mean rate over
    cases), the trend per subject (slope per unit of `every` with its interval, P(decline),
    the two-sided p of no trend), how many sessions are done and when the next is due
    (None once `count` are done). `sessions` in any order; `now` an aware datetime."""
    delta, unit_name = every_delta(spec.every)
    unit = _UNIT_DELTA[spec.every[-1]]
    ordered = sorted(sessions, key=lambda s: (s.started_at, s.run_id))
    names = list(dict.fromkeys(n for s in ordered for n in s.subjects))
    done = len(ordered)
    next_due = ordered[-1].started_at + delta if ordered and done < spec.count else None
    if not ordered and spec.count:
        next_due = now
    origin = ordered[0].started_at if ordered else now
    return {
        "every": spec.every, "count": spec.count, "done": done,
        "complete": done >= spec.count,
        "next_due": _iso(next_due) if next_due is not None else None,
        "due": next_due is not None and now >= next_due,
        "metric": METRIC, "unit": unit_name, "level": level,
        "sessions": [{"index": i, "run_id": s.run_id, "started_at": _iso(s.started_at),
                      "elapsed": num((s.started_at - origin) / unit)}
                     for i, s in enumerate(ordered, 1)],
        "trend": [_trend(n, ordered, origin, unit, level) for n in names],
        "versus_control": _holm([_versus(names[0], n, ordered, origin, unit, level)
                                 for n in names[1:]]),
    }


def _holm(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Holm across the subjects compared with the control (one family, STATS.md §10)."""
    tested = [r for r in rows if r["p_value"] is not None]
    for r, p in zip(tested, holm([r["p_value"] for r in tested]), strict=True):
        r["p_value_holm"] = num(p)
    return rows
