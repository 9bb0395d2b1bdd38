"""The sweep table of a report (DESIGN.md §7): the metric of every condition of a `sweep:`
with its interval, and the probability that each is the best, from the leaderboard's
posteriors (`ix.report.leaderboard`) over the conditions alone."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ix.report.leaderboard import counts_of, leaderboard, primary_metric
from ix.report.schemas import SweepReport, SweepRow

__all__ = ["sweep_report"]


def sweep_report(summary: Mapping[str, Any], metric: str | None = None) -> SweepReport | None:
    """None unless the summary has a `sweep` block. With `context:` too, each condition is
    read at the shortest length (its subject `<condition>[ctx=<shortest>]`)."""
    sweep = summary.get("sweep")
    if not sweep:
        return None
    metric = metric or primary_metric(summary)
    blocks = {b["name"]: b for b in summary["subjects"]}
    context = summary.get("context")
    suffix = f"[ctx={context['lengths'][0]}]" if context else ""
    found: list[tuple[Mapping[str, Any], Mapping[str, Any]]] = []
    for c in sweep["conditions"]:
        block = blocks.get(c["subject"]) or blocks.get(c["subject"] + suffix)
        if block is not None:
            found.append((c, block))
    board = leaderboard([{"subject": b["name"], "counts": counts_of(b)} for _, b in found], metric)
    by_subject = {row["subject"]: row for row in board["rows"]}
    rows: list[SweepRow] = []
    for c, b in found:
        row = by_subject[b["name"]]
        rows.append({"subject": b["name"], "values": c["values"], "without": c["without"],
                     "value": row["value"], "ci": row["ci"], "p_best": row["p_best"]})
    best = max(rows, key=lambda r: -1.0 if r["p_best"] is None else r["p_best"], default=None)
    return {"subject": sweep["subject"], "metric": metric, "keys": sweep["keys"],
            "ablate": sweep["ablate"], "at_length": context["lengths"][0] if context else None,
            "rows": rows,
            "best": None if best is None else {"subject": best["subject"],
                                               "p_best": best["p_best"]}}
