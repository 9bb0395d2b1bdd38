"""Which subjects of a run are compared (DESIGN.md §7: comparisons in a factorial design).

With `context:` and `sweep:` the subjects of a run are the cells of a grid: a *condition*
(a subject as the experiment lists it, or one of the first subject's sweep cells) at a
*length*. A comparison changes one factor at a time:

- each condition against the control condition (the first subject, unswept) at the same
  length — factor `sweep` for a sweep cell, `subject` for another subject;
- each length against the same condition's shortest (the `context` block's
  `versus_shortest`, `ix.eval.context_summary`).

A pair that differs in two factors (`plus-all[ctx=64]` against `only[ctx=0]`) is never made.
Without `context:` every subject is compared with the first, as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Pair", "condition_of", "factor_pairs"]

Factor = Literal["subject", "sweep"]


@dataclass(frozen=True)
class Pair:
    """`variant` against `control` (indices into the run's subjects), which differ in
    `factor` only, both at context length `length` (None without `context:`)."""

    control: int
    variant: int
    factor: Factor
    length: int | None = None


def condition_of(name: str, context: Mapping[str, Any] | None) -> tuple[str, int | None]:
    """(condition, length) of a run's subject: `s[ctx=8]` → ("s", 8); without `context:`
    (or a subject it did not expand) the subject itself at no length."""
    if context is not None and name in context["of"]:
        condition, length = context["of"][name]
        return str(condition), int(length)
    return name, None


def factor_pairs(names: Sequence[str], context: Mapping[str, Any] | None = None,
                 sweep: Mapping[str, Any] | None = None) -> list[Pair]:
    """The within-factor comparisons of a run whose subjects are `names` (the control
    first): `context` is the summary's context input ({…, of: {subject: [condition,
    length]}}), `sweep` the summary's `sweep` block (its `conditions` are the sweep cells).
    Ordered by condition, then length."""
    if len(names) < 2:
        return []
    cells = {c["subject"] for c in (sweep or {}).get("conditions") or []}
    base = (sweep or {}).get("subject")

    def factor(condition: str) -> Factor:
        return "sweep" if condition in cells and condition != base else "subject"

    where = [condition_of(n, context) for n in names]
    control = where[0][0]
    at = {(c, length): i for i, (c, length) in enumerate(where) if length is not None}
    pairs: list[Pair] = []
    done: set[str] = set()
    for i, (condition, length) in enumerate(where):
        if i == 0:
            continue
        if length is None:  # not expanded by `context:`: against the first subject
            pairs.append(Pair(0, i, factor(condition)))
            continue
        if condition == control or condition in done:
            continue
        done.add(condition)
        for (c, n), j in sorted(((k, j) for k, j in at.items() if k[0] == condition),
                                key=lambda kv: kv[0][1]):
            if (control, n) in at:
                pairs.append(Pair(at[(control, n)], j, factor(c), n))
    return pairs
