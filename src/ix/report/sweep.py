"""The sweep table of a report (DESIGN.md §7): the metric of every condition of a `sweep:`
with its interval, and the probability that each is the best, from the leaderboard's
posteriors (`ix.report.leaderboard`) over the conditions alone. With `context:` too, the
sweep is judged at every length (`by_length`: P(best) among the conditions at that length);
its judgement by trend is each condition's interaction with the unswept subject (the
summary's `context` block)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ix.report.answer import primary_metric
from ix.report.leaderboard import counts_of, leaderboard

if TYPE_CHECKING:  # TypedDicts cost ~50 ms to build: only the type checker needs them
    from ix.report.schemas import SweepReport, SweepRow

__all__ = ["sweep_report"]


def sweep_report(summary: Mapping[str, Any], metric: str | None = None) -> SweepReport | None:
    """None unless the summary has a `sweep` block. With `context:` too, the row's `value`,
    `ci` and `p_best` are at the shortest length (`at_length`) and `by_length` holds every
    length's."""
    sweep = summary.get("sweep")
    if not sweep:
        return None
    metric = metric or primary_metric(summary)
    blocks = {b["name"]: b for b in summary["subjects"]}
    context = summary.get("context")
    lengths: list[int | None] = list(context["lengths"]) if context else [None]
    at: dict[int | None, dict[str, Mapping[str, Any]]] = {}
    for n in lengths:
        suffix = "" if n is None else f"[ctx={n}]"
        found = [(c, blocks.get(c["subject"] + suffix) or
                  (blocks.get(c["subject"]) if n == lengths[0] else None))
                 for c in sweep["conditions"]]
        board = leaderboard([{"subject": b["name"], "counts": counts_of(b)}
                             for _, b in found if b is not None], metric)
        by_subject = {row["subject"]: row for row in board["rows"]}
        at[n] = {c["subject"]: by_subject[b["name"]] for c, b in found if b is not None}
    rows: list[SweepRow] = []
    for c in sweep["conditions"]:
        row = at[lengths[0]].get(c["subject"])
        if row is None:
            continue
        out: SweepRow = {"subject": row["subject"], "values": c["values"],
                         "without": c["without"], "value": row["value"], "ci": row["ci"],
                         "p_best": row["p_best"]}
        if context:
            out["by_length"] = []
            for n in lengths:
                r = at[n].get(c["subject"])
                if n is not None and r is not None:
                    out["by_length"].append({"length": n, "subject": r["subject"],
                                             "value": r["value"], "ci": r["ci"],
                                             "p_best": r["p_best"]})
        rows.append(out)
    best = max(rows, key=lambda r: -1.0 if r["p_best"] is None else r["p_best"], default=None)
    return {"subject": sweep["subject"], "metric": metric, "keys": sweep["keys"],
            "ablate": sweep["ablate"], "at_length": context["lengths"][0] if context else None,
            "rows": rows,
            "best": None if best is None else {"subject": best["subject"],
                                               "p_best": best["p_best"]}}
