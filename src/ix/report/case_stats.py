"""The report's view of the cases as a population: the percentiles of the per-case scores,
each with a distribution-free interval, and (`ix report --by PROPERTY`) the rank correlation
of each case's share of right trials with a property of the case.

The unit is the case: a case's trials are not independent draws, so a percentile is of the
per-case scores (`probe_results[].score`, the share of its valid trials that passed) and a
correlation pairs one number per case. Both are computed from the summary (and, for
`--by`, the case files' properties), never stored: a report made today of an old run has them.
"""

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from ix.domain.errors import ConfigError
from ix.eval.numbers import num
from ix.stats.describe import correlation
from ix.stats.quantiles import quantile_interval

if TYPE_CHECKING:
    from ix.report.schemas import Correlations, PercentileRow, ScorePercentiles

#: The percentiles of the per-case scores a report shows.
PERCENTILES = (0.1, 0.5, 0.9)
#: A case's scope, by expectation (DESIGN.md §8: a rate names its scope).
SCOPES = {"must_trigger": "must", "should_not_trigger": "not", "acceptable": "acceptable"}
#: The properties `--by` takes, besides `tag:NAME` and `metadata.KEY`.
PLAIN = ("difficulty", "prompt_length", "history_length")
PERCENTILE_METHOD = ("nearest-rank percentile of the per-case scores; interval [X_(l), X_(u)] "
                     "of order statistics chosen by the exact binomial (distribution-free, "
                     "coverage >= the level; an end no order statistic bounds is the score's "
                     "own bound, 0 or 1); cases as independent units")
CORRELATION_METHOD = ("Spearman rank correlation of each case's share of right trials (score "
                      "for must_trigger, 1 - score for should_not_trigger; acceptable cases "
                      "left out) with the property; interval tanh(atanh(r) +- z*s), "
                      "s = sqrt((1 + r^2/2)/(n - 3)) (Bonett & Wright 2000), none below 4 cases")


def score_percentiles(summary: Mapping[str, Any], level: float = 0.95
                      ) -> "ScorePercentiles | None":
    """Per subject and scope (must, not, acceptable): the 10th, 50th and 90th percentiles of
    its cases' scores with their intervals; None when no case has a score."""
    by_subject: dict[str, list[dict[str, Any]]] = {}
    for block in summary["subjects"]:
        scored: dict[str, list[float]] = {}
        for p in block["probe_results"]:
            if p.get("score") is not None:
                scope = SCOPES.get(p.get("expectation") or "", "other")
                scored.setdefault(scope, []).append(float(p["score"]))
        rows = []
        for scope, scores in scored.items():
            rows.append({"scope": scope, "n": len(scores),
                         "percentiles": [_percentile(scores, q, level) for q in PERCENTILES]})
        if rows:
            by_subject[block["name"]] = rows
    if not by_subject:
        return None
    return cast("ScorePercentiles", {"level": level, "by_subject": by_subject,
                                     "method": PERCENTILE_METHOD})


def _percentile(scores: Sequence[float], q: float, level: float) -> "PercentileRow":
    est = quantile_interval(scores, q, level)
    return {"q": q, "value": num(est.value),
            "ci": [num(0.0 if est.lo is None else est.lo), num(1.0 if est.hi is None else est.hi)],
            "coverage": num(est.coverage)}


def check_property(text: str) -> str:
    """`text` when `--by` can read it (`difficulty`, `prompt_length`, `history_length`,
    `tag:NAME`, `metadata.KEY`), else a `ConfigError` naming what it takes."""
    name = text.strip()
    if name in PLAIN or (name.startswith("tag:") and len(name) > 4) or (
            name.startswith("metadata.") and len(name) > 9):
        return name
    raise ConfigError(f"cannot correlate with {text!r}; allowed: {', '.join(PLAIN)}, "
                      "tag:NAME, metadata.KEY", field="--by")


def property_value(props: Mapping[str, Any], name: str) -> float | None:
    """A case's `name` property as a number: a difficulty's ordinal, a length, 1/0 for having
    a tag, a metadata field that is a number or a boolean (dots reach into mappings); None
    when the case has none."""
    if name.startswith("tag:"):
        return float(name[4:] in props.get("tags", ()))
    if name.startswith("metadata."):
        value: Any = props.get("metadata") or {}
        for part in name[9:].split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
    else:
        value = props.get(name)
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    return None


def right_share(p: Mapping[str, Any]) -> float | None:
    """A case's share of right trials: its score where it must pass, 1 − score where it must
    not; None for an acceptable case or one without a valid trial."""
    score = p.get("score")
    if score is None or p.get("expectation") not in ("must_trigger", "should_not_trigger"):
        return None
    return float(score) if p["expectation"] == "must_trigger" else 1.0 - float(score)


def correlations(summary: Mapping[str, Any], properties: Mapping[str, Mapping[str, Any]],
                 names: Sequence[str], level: float = 0.95) -> "Correlations":
    """Per property of `names` and subject: Spearman's r of the cases' right share with the
    property, its interval, the cases paired (`n`) and those left out for want of the
    property (`missing`)."""
    out = []
    for name in dict.fromkeys(check_property(n) for n in names):
        by_subject = {}
        for block in summary["subjects"]:
            x, y, missing = [], [], 0
            for p in block["probe_results"]:
                share = right_share(p)
                if share is None:
                    continue
                value = property_value(properties.get(p["probe_id"]) or {}, name)
                if value is None:
                    missing += 1
                    continue
                x.append(value)
                y.append(share)
            r = correlation(x, y, level, "spearman")
            by_subject[block["name"]] = {"r": num(r.r), "ci": [num(r.lo), num(r.hi)]
                                         if num(r.lo) is not None else None,
                                         "n": r.n, "missing": missing}
        out.append({"property": name, "by_subject": by_subject})
    return cast("Correlations", {"level": level, "properties": out,
                                 "method": CORRELATION_METHOD})


def percentile_table(report: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The percentiles as a table: header and rows (subject and scope, cases, then p10, p50
    and p90 each with its interval)."""
    block = report.get("percentiles")
    if not block:
        return [], []
    header = ["subject (scope)", "cases", *(f"p{round(q * 100)}" for q in PERCENTILES)]
    rows = [[f"{name} ({row['scope']})", str(row["n"]),
             *(f"{_f(c['value'])} [{_f(c['ci'][0])}, {_f(c['ci'][1])}]"
               for c in row["percentiles"])]
            for name, rows_ in block["by_subject"].items() for row in rows_]
    return header, rows


def correlation_lines(report: Mapping[str, Any]) -> list[str]:
    """One line per property and subject: r, interval, cases."""
    block = report.get("correlations")
    if not block:
        return []
    lines = []
    for prop in block["properties"]:
        for name, c in prop["by_subject"].items():
            ci = (f" [{_f(c['ci'][0])}, {_f(c['ci'][1])}]" if c["ci"] is not None
                  else " (no interval below 4 cases)")
            left = f", {c['missing']} without it" if c["missing"] else ""
            lines.append(f"{prop['property']} ~ right share per case, {name}: "
                         f"r = {_f(c['r'])}{ci} (n = {c['n']}{left})")
    return lines


def frontier_lines(report: Mapping[str, Any]) -> list[str]:
    """`curriculum:` runs: one line per subject — the frontier, its interval, the trials it
    rests on and why the subject stopped."""
    block = report.get("frontier")
    if not block:
        return []
    scale = " (easy 1, medium 2, hard 3)" if block["by"] == "difficulty" else ""
    lines = []
    for name, f in block["subjects"].items():
        if f["estimate"] is None:
            lines.append(f"frontier of {name}: n/a (no valid trial)")
            continue
        beyond = (" — harder than any case tried" if f["open_above"] else
                  " — easier than any case tried" if f["open_below"] else "")
        lines.append(f"frontier of {name}: {block['by']} {f['estimate']:.2f} "
                     f"[{_f(f['ci'][0])}, {_f(f['ci'][1])}]{scale} where P(right) crosses "
                     f"50%, {f['trials']} trials, {f['stopped'] or 'run stopped'}{beyond}")
    return lines


def _f(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"
