"""Perturbation families: which cases were generated from one original (STATS.md §10).

`variants:` expands a case file into `<id>~1` … `<id>~N` with `metadata.variant_of` (the
original itself does not run); `probe: paraphrase` adds `<id>~p1` … beside the case with
`metadata.paraphrase_of` (the original runs too); a hand-written case may carry either key.
A case's **original** is its `paraphrase_of`, else its `variant_of`; its **family** is the
root of that chain (a paraphrase of a variant belongs to the variant's case file), or its own
id when it was generated from nothing. Every interval and comparison whose unit is the case
treats a family as one unit; a run whose families all have one case has no families
(`family_labels` is None) and keeps its numbers exactly.
"""

from collections.abc import Sequence

from ix.eval.models import EvalCase

__all__ = ["KEYS", "family_labels", "family_of", "original_of"]

#: The metadata keys that name the case a case was generated from.
KEYS = ("variant_of", "paraphrase_of")


def original_of(case: EvalCase) -> str | None:
    """The id of the case `case` was generated from, or None."""
    for key in ("paraphrase_of", "variant_of"):
        value = case.metadata.get(key)
        if value is not None and str(value) and str(value) != case.id:
            return str(value)
    return None


def family_of(case: EvalCase, by_id: dict[str, EvalCase] | None = None) -> str:
    """The root of `case`'s chain of originals (followed through the cases of `by_id`), or its
    own id."""
    current, parent = case.id, original_of(case)
    seen = {current}
    while parent is not None and parent not in seen:
        seen.add(parent)
        current = parent
        up = (by_id or {}).get(parent)
        parent = original_of(up) if up is not None else None
    return current


def family_labels(cases: Sequence[EvalCase]) -> list[str] | None:
    """Each case's family, in order; None when no two cases share one (no perturbations)."""
    if not any(original_of(c) is not None for c in cases):
        return None
    by_id = {c.id: c for c in cases}
    labels = [family_of(c, by_id) for c in cases]
    return labels if len(set(labels)) < len(labels) else None
