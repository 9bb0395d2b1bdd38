"""`--filter EXPR`: which cases a run takes (003's SCENARIO-FILTER).

An expression is an id glob (`must-*`), or `tag:NAME`, `difficulty:easy|medium|hard`,
`expectation:must_trigger|should_not_trigger|acceptable`. Several expressions combine with
AND; within one expression, commas give alternatives (`tag:csv,excel`). A leading `!`
negates (`!tag:slow`).
"""

import fnmatch
from collections.abc import Sequence

from ix.domain.errors import ConfigError
from ix.eval.models import DIFFICULTIES, EXPECTATIONS, EvalCase

_FIELDS = ("tag", "difficulty", "expectation", "id")


def _matches_one(case: EvalCase, expr: str) -> bool:
    field, sep, value = expr.partition(":")
    if not sep:
        field, value = "id", expr
    alternatives = [v.strip() for v in value.split(",") if v.strip()]
    if field == "id":
        return any(fnmatch.fnmatchcase(case.id, v) for v in alternatives)
    if field == "tag":
        return any(v in case.tags for v in alternatives)
    if field == "difficulty":
        return case.difficulty in alternatives
    return case.expectation in alternatives


def check_filters(filters: Sequence[str]) -> None:
    for expr in filters:
        body = expr[1:] if expr.startswith("!") else expr
        field, sep, value = body.partition(":")
        if not body.strip() or (sep and not value.strip()):
            raise ConfigError(f"empty filter {expr!r}", field="--filter")
        if sep and field not in _FIELDS:
            raise ConfigError(f"unknown filter field {field!r} in {expr!r}; allowed: "
                              f"{', '.join(_FIELDS)} (or a bare id glob)", field="--filter")
        allowed = {"difficulty": DIFFICULTIES, "expectation": EXPECTATIONS}.get(field)
        if sep and allowed:
            bad = [v for v in value.split(",") if v.strip() and v.strip() not in allowed]
            if bad:
                raise ConfigError(f"{field} {bad[0]!r} is not one of {', '.join(allowed)}",
                                  field="--filter")


def apply_filters(cases: Sequence[EvalCase], filters: Sequence[str]) -> list[EvalCase]:
    """The cases every filter accepts (AND), in their order."""
    check_filters(filters)
    out = []
    for case in cases:
        keep = True
        for expr in filters:
            negate = expr.startswith("!")
            hit = _matches_one(case, expr[1:] if negate else expr)
            if hit == negate:
                keep = False
                break
        if keep:
            out.append(case)
    return out
