"""Which skill took the prompt: each valid trial goes to the first skill it invoked, or none.

A subject's routing table counts, per expectation, the trials that went to the skill under
test (a plugin's `plugin:skill` counts for `skill`, as the activation sensor reads it), to
each other skill, and to no skill; each case keeps the same counts as `routes`, the most
taken first. Errored trials are left out, as they are of every rate.
"""

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from ix.eval.models import EvalCase

if TYPE_CHECKING:
    from ix.eval.schemas import RouteOut, RoutingOut, RoutingRowOut

EXPECTATIONS: tuple[Literal["must_trigger"], Literal["should_not_trigger"]] = (
    "must_trigger", "should_not_trigger")


def is_target(skill: str, target: str) -> bool:
    """Whether `skill` (as invoked) is the skill under test `target`."""
    return skill == target or skill.endswith(f":{target}")


def case_routes(counts: Counter[str | None]) -> "list[RouteOut]":
    """`[{skill, trials}]`, the most taken first (`skill: null` is no skill; ties by name)."""
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0] is None, kv[0] or ""))
    return [{"skill": skill, "trials": n} for skill, n in ordered if n]


def routing_table(target: str, cases: Sequence[EvalCase],
                  routes: Mapping[str, Counter[str | None]]) -> "RoutingOut":
    """The subject's routing block: per expectation, trials to the target, to others, to none."""
    rows: list[RoutingRowOut] = []
    for expectation in EXPECTATIONS:
        total: Counter[str | None] = Counter()
        ids = [c.id for c in cases if c.expectation == expectation]
        for case_id in ids:
            total.update(routes.get(case_id, Counter()))
        taken = sum(n for s, n in total.items() if s is not None and is_target(s, target))
        others = {s: n for s, n in sorted(total.items(), key=lambda kv: (-kv[1], kv[0] or ""))
                  if s is not None and not is_target(s, target) and n}
        rows.append({"expectation": expectation, "cases": len(ids),
                     "trials": sum(total.values()), "target": taken,
                     "other": others, "none": total.get(None, 0)})
    return {"target": target, "expectations": rows}


def taken_by(routes: Sequence[dict[str, Any]], n: int) -> str:
    """"pdf 4/9, none 2/9": who took a case's trials, the most taken first."""
    return ", ".join(f"{r['skill'] if r['skill'] is not None else 'none'} {r['trials']}/{n}"
                     for r in routes)


__all__ = ["case_routes", "is_target", "routing_table", "taken_by"]
