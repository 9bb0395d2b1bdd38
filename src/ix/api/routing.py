"""Why a trial went where it did: the routing decision a runtime recorded for each trial of a
case (`ix results --explain CASE`, the viewer's case page).

Only runtimes that route by a score record one — the `lexical` runtime writes, in each trial's
`observation.meta.routing`, the best skills' scores, the threshold and the stems that carried
each score (docs/runtimes.md). For other runtimes `routing` is None, and the caller says so.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ix.api.results import Scope, Values, query_results
from ix.api.runs import lab_run
from ix.api.trials import TrialKey, outcome_of, reading_word, routing_of, trial_lines
from ix.domain.errors import ConfigError


@dataclass(frozen=True)
class Explained:
    """The trials of the case (the latest attempt of each, at most `limit`), each with its
    routing decision or None; `total` counts every match, `scope` says which runs."""

    trials: list[dict[str, Any]]
    total: int
    scope: Scope | None

    @property
    def recorded(self) -> int:
        """How many of the listed trials carry a routing decision."""
        return sum(t["routing"] is not None for t in self.trials)


def explain_routing(lab: str | Path | None, case: str, *, experiment: Values = None,
                    subject: Values = None, run: Values = None, all_runs: bool = False,
                    limit: int | None = None, warn: Any = None) -> Explained:
    """The routing decisions of the trials of `case` (an id or a glob), filtered as
    `query_results` filters (by default the latest completed run of each experiment)."""
    if not isinstance(case, str) or not case:
        raise ConfigError("name a case (an id or a glob such as must-*)", field="--explain")
    found = query_results(lab, experiment=experiment, subject=subject, case=case, run=run,
                          all_runs=all_runs, limit=limit, warn=warn)
    with found.snapshot():
        rows = found.rows()
        total = len(rows) if limit is None or len(rows) < limit else found.total()
    by_run: dict[str, list[TrialKey]] = {}
    for r in rows:
        if r["run_id"] is not None:
            by_run.setdefault(r["run_id"], []).append(_key(r))
    lines: dict[tuple[str, TrialKey], dict[str, Any]] = {}
    for run_id, keys in by_run.items():
        try:
            info = lab_run(found.lab, run_id)
        except ConfigError:  # trials of a run without a folder: no line to read
            continue
        for key, record in trial_lines(info, keys).items():
            lines[(run_id, key)] = record
    trials = [_trial(r, lines.get((r["run_id"], _key(r)))) for r in rows]
    return Explained(trials, total, found.scope)


def _key(row: dict[str, Any]) -> TrialKey:
    return (row["subject"], row["probe_id"], int(row["trial"]), int(row["attempt"] or 0))


def _trial(row: dict[str, Any], record: dict[str, Any] | None) -> dict[str, Any]:
    return {"experiment": row["experiment"], "run_id": row["run_id"],
            "subject": row["subject"], "case": row["probe_id"], "trial": row["trial"],
            "attempt": row["attempt"] or 0, "expectation": row["expectation"],
            "reading": None if row["passed"] is None else reading_word(row["passed"],
                                                                        row["sensor"]),
            "outcome": row["outcome"] if record is None else outcome_of(record),
            "error": row["error"], "invoked": list(row["invoked"] or []),
            "routing": routing_of(record) if record is not None else None}


def routing_summary(routing: dict[str, Any]) -> dict[str, Any]:
    """The facts a reader wants first: the chosen skill (None: no skill), its score, the
    threshold, and the best-scoring skill when none was chosen."""
    skills: Sequence[dict[str, Any]] = routing.get("skills") or []
    chosen = routing.get("chosen")
    winner = next((s for s in skills if s.get("skill") == chosen), None) if chosen else None
    best = skills[0] if skills else None
    return {"chosen": chosen, "score": winner.get("score") if winner else None,
            "threshold": routing.get("threshold"), "best": best}


__all__ = ["Explained", "explain_routing", "routing_summary"]
