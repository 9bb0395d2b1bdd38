"""The summary's `pairwise` block: each variant's win share against the control by a blind
pairwise judge, with its interval, P(better) and the judge's position bias (STATS.md §14).

Each judgement of `pairwise.jsonl` (`ix.engine.pairwise`) counts for the variant 1 (won),
0 (lost) or ½ (tie); a case's win share is the mean over its trials and orders, and the
case is the unit (`ix.stats.judges.pairwise`). The position bias is the share of judgements
the answer shown first won, − ½: with `swap: true` every pair is shown in both orders, so the
bias cancels out of the win share and is measured exactly; without, the order is a seeded
coin per pair and the bias is still measured, but it adds noise to the share.
"""

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ix.eval.schemas import PairwiseEstimate, PairwiseOut, PairwiseVariant
from ix.stats.continuous import Estimate
from ix.stats.judges import pairwise

_SCORE = {"variant": 1.0, "control": 0.0, "tie": 0.5}


def _number(x: float) -> float | None:
    return None if math.isnan(x) else round(x, 6)


def _estimate(e: Estimate) -> PairwiseEstimate:
    return {"value": _number(e.value), "ci": [_number(e.lo), _number(e.hi)], "n": e.n,
            "method": e.method}


def pairwise_block(judgements: Iterable[Mapping[str, Any]], control: str,
                   variants: Sequence[str], judge: str, swap: bool,
                   level: float = 0.95) -> PairwiseOut:
    """The block from the judgements that stand (one per pair and order shown)."""
    by_variant: dict[str, list[Mapping[str, Any]]] = {v: [] for v in variants}
    for j in judgements:
        if j.get("variant") in by_variant:
            by_variant[str(j["variant"])].append(j)
    return {"level": level, "judge": judge, "swap": swap, "control": control,
            "variants": [_variant(v, control, by_variant[v], level) for v in variants]}


def _variant(variant: str, control: str, judged: Sequence[Mapping[str, Any]],
             level: float) -> PairwiseVariant:
    wins: dict[str, list[float]] = {}
    first_won: list[bool | None] = []
    orders: set[str] = set()
    errors = 0
    for j in judged:
        if j.get("error") or j.get("winner") not in _SCORE:
            errors += 1
            continue
        wins.setdefault(str(j["probe_id"]), []).append(_SCORE[j["winner"]])
        orders.add(str(j["shown_first"]))
        first_won.append(None if j["winner"] == "tie" else j["winner"] == j["shown_first"])
    # the bias needs both orders: with one, "first won" is "this subject won"
    result = pairwise(list(wins.values()), first_won if len(orders) == 2 else None, level)
    valid = sum(len(v) for v in wins.values())
    scores = [s for v in wins.values() for s in v]
    return {
        "variant": variant, "control": control, "cases": len(wins), "judgements": valid,
        "wins": scores.count(1.0), "losses": scores.count(0.0), "ties": scores.count(0.5),
        "errors": errors, "win_share": _estimate(result.share),
        "p_better": _number(result.p_better),
        "position_bias": (_estimate(result.position_bias)
                          if result.position_bias is not None else None),
    }
