"""`stop: goal`: run an experiment's cases in rounds and stop once the goal is settled
(STATS.md §15, docs/cost.md).

The cases are put in an order drawn from the experiment's seed and cut into `looks` rounds of
(nearly) equal size; after each round the goal is judged on every case run so far, at the
credibility `ix.stats.sequential.look_credibility` gives for that many looks (a Pocock-type
constant threshold: a verdict reached at any look is wrong at most 1 − credibility of the
time). The run stops at the first look that gives "supported" or "refuted"; after the last
round the goal is "inconclusive" if it is neither. `judge_look` is the one function that
decides a look: the engine calls it after each round, and benchmarks/cost_to_verdict.py
simulates runs through it.
"""

from __future__ import annotations

import copy
import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ix.eval import comparisons
from ix.eval.estimates import num, pair
from ix.eval.models import EvalCase
from ix.eval.scoring import Tally, compute_metrics
from ix.stats.decisions import goal_verdict
from ix.stats.sequential import look_credibility

#: Looks planned when `stop: goal` does not say.
DEFAULT_LOOKS = 5
RULE = "pocock"


def rule_words(credibility: float, looks: int) -> str:
    """The rule in one line, with its numbers."""
    return (f"Pocock-type constant credibility over {looks} planned looks: each look judges "
            f"the goal at {look_credibility(credibility, looks):.4f} (for {credibility:g} "
            "overall)")


def rounds(cases: Sequence[EvalCase], seed: int, looks: int) -> list[tuple[EvalCase, ...]]:
    """`cases` in the order the experiment's seed draws, cut into `looks` rounds (fewer when
    there are fewer cases): round r holds the cases that are new at look r."""
    digest = hashlib.sha256(f"{seed}:stop-goal".encode()).digest()
    order = list(cases)
    random.Random(int.from_bytes(digest[:8], "big")).shuffle(order)
    k = max(1, min(looks, len(order)))
    cuts = [round(len(order) * r / k) for r in range(k + 1)]
    return [tuple(order[cuts[r]:cuts[r + 1]]) for r in range(k)]


@dataclass(frozen=True)
class Look:
    """One look: its decision ("supported", "refuted", or "continue"; "inconclusive" at the
    last) and the goal's posterior on the cases so far."""

    decision: str
    p_supported: float | None
    p_refuted: float | None
    diff: float | None
    interval: tuple[float, float] | None


def subset_tally(tally: Tally, cases: Sequence[EvalCase]) -> Tally:
    """`tally` on `cases` only (their counts shared, not copied; sensors, routes and
    outcomes as they are: they hold only cases that ran)."""
    sub = copy.copy(tally)
    sub.cases = list(cases)
    sub.counts = {c.id: tally.counts[c.id] for c in cases}
    sub.trials = sum(tally.counts[c.id].valid + tally.counts[c.id].errors for c in cases)
    return sub


def _metrics(tally: Tally) -> dict[str, Any]:
    probes = tally.probe_results()
    return compute_metrics([p for p, c in zip(probes, tally.cases, strict=True)
                            if tally.counts[c.id].valid])


def judge_look(goal: dict[str, Any], control: Tally, treatment: Tally,
               cases: Sequence[EvalCase], *, looks: int, last: bool,
               interval: bool = True) -> Look:
    """Decide one look on `cases` (every case run so far) from the two subjects' tallies
    (which may count other cases too): the goal's posterior as the summary computes it
    (`ix.eval.comparisons`), judged by `goal_verdict` at `look_credibility(goal's
    credibility, looks)`. `interval`: also the interval of the difference (a root search
    the decision does not need)."""
    c, t = subset_tally(control, cases), subset_tally(treatment, cases)
    metric = goal["metric"]
    mc, mt = _metrics(c), _metrics(t)
    e = (comparisons.effect(metric, c, t, cases, mc, mt) if interval
         else comparisons._posterior(metric, c, t, cases, mc, mt, None))
    if e.n == 0:
        return Look("inconclusive" if last else "continue", None, None, None, None)
    v = goal_verdict(e.cdf, direction=goal["direction"], min_effect=float(goal["min_effect"]),
                     credibility=look_credibility(float(goal["credibility"]), looks))
    diff = e.diff
    if diff is None and e.control is not None and e.variant is not None:
        diff = e.variant - e.control
    decision = (v.verdict if v.verdict != "inconclusive" else
                "inconclusive" if last else "continue")
    return Look(decision, v.p_supported, v.p_refuted, diff, e.interval if interval else None)


def look_entry(number: int, cases: int, trials: int, look: Look) -> dict[str, Any]:
    """A look as the summary's `looks` block lists it."""
    return {"look": number, "cases": cases, "trials": trials, "diff": num(look.diff),
            "diff_ci": pair(*look.interval) if look.interval is not None else None,
            "p_supported": num(look.p_supported), "p_refuted": num(look.p_refuted),
            "decision": look.decision}


def looks_block(goal: dict[str, Any], looks: int, entries: list[dict[str, Any]],
                calls: int, planned: int, why: str | None) -> dict[str, Any]:
    """The summary's `looks` block: the rule, each look, where it stopped and why, and the
    calls saved against the fixed design (every case, every planned trial)."""
    credibility = float(goal["credibility"])
    last = entries[-1] if entries else None
    if why is None:
        why = (f"goal {last['decision']} at look {last['look']} of {looks}"
               if last is not None and last["decision"] in ("supported", "refuted")
               else f"all {looks} looks run; the goal is not settled" if last is not None
               else "no look was taken")
    return {"rule": RULE, "rule_text": rule_words(credibility, looks), "planned_looks": looks,
            "credibility": num(look_credibility(credibility, looks)),
            "goal_credibility": credibility, "looks": entries, "stopped": why,
            "calls": calls, "planned_calls": planned, "calls_saved": max(0, planned - calls)}
