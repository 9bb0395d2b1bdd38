"""The summary's `judges` block (issue 36, STATS.md §14): how far each judge of a run can be
trusted, beside the verdicts that rest on it.

One entry per judge (an `llm_judge`, a `panel` and each of its members), from the run's
standing trial lines and the experiment's labels:

- `status`: `checked` (labelled, Cohen's κ at or above its `min_kappa`), `disagrees` (κ
  below it), `unchecked` (no label matched its readings), or `human` (a person judges:
  its readings are labels for the other judges of its rubric);
- `agreement`, `scores`: `ix.eval.judge_agreement`'s entries (accuracy, TPR, TNR, κ, the
  corrected pass rate; weighted κ and Spearman per dimension);
- `noise` (`repeats` ≥ 2): the variance components of its repeated judgements of the same
  outputs (`ix.stats.judges.judge_noise`), and how many outputs' verdicts changed between
  repeats (`unsettled`);
- `alpha`: Krippendorff's α — of a panel's members, or of the judges that grade one rubric
  outside a panel (each of them carries the group's) — nominal on the verdicts and interval on
  the scores.
"""

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from ix.eval.judge_agreement import estimate_out, judge_agreement, readings_of
from ix.eval.numbers import LEVEL, num
from ix.stats import judges as stats

if TYPE_CHECKING:
    from ix.eval.schemas import JudgeOut

#: The key of a reading's `metrics` holding each repeat's scores (no dimension may take it).
REPEATS = "repeats"


def judges_block(described: Sequence[Mapping[str, Any]],
                 records: Iterable[Mapping[str, Any]], labels: Sequence[Mapping[str, Any]],
                 level: float = LEVEL) -> "list[JudgeOut]":
    """The `judges` block of a run: `described`, each judge's `describe()` (the plan's, or
    the summary's own entries read back); `records`, the run's standing lines."""
    by_name = {d["name"]: d for d in described}
    lines = [r for r in records if not r.get("error")]
    people = [d["name"] for d in described if d.get("runtime") == "human"]
    labels = [*labels, *_human_labels(lines, people, by_name)]
    agreement = judge_agreement(lines, labels, level) if labels else []
    panels = {m for d in described for m in d.get("members") or ()}
    groups: dict[Any, list[str]] = {}  # several judges of one rubric, outside any panel
    for d in described:
        if d["kind"] != "panel" and d["name"] not in panels and d.get("runtime") != "human":
            groups.setdefault(d.get("rubric"), []).append(d["name"])
    alphas = {rubric: _alpha(lines, {"members": names}, level)
              for rubric, names in groups.items() if len(names) > 1}
    out: list[JudgeOut] = []
    for d in described:
        name = d["name"]
        mine = [a for a in agreement if a["sensor"] == name]
        verdict = next((a for a in mine if a["dimension"] is None), None)
        entry = {key: d.get(key) for key in (
            "name", "kind", "rubric", "model", "runtime", "repeats", "dimensions", "scale",
            "pass_threshold", "min_kappa", "members", "combine")}
        entry.update(
            status=_status(d, verdict), labelled=max((a["labelled"] for a in mine), default=0),
            agreement=verdict, scores=[a for a in mine if a["dimension"] is not None],
            noise=_noise(lines, d, level) if (d.get("repeats") or 1) > 1 else None,
            alpha=_alpha(lines, d, level) if d.get("members") else
            alphas.get(d.get("rubric")) if d["name"] in groups.get(d.get("rubric"), ()) else None)
        out.append(cast("JudgeOut", entry))
    return out


def _status(judge: Mapping[str, Any], verdict: Mapping[str, Any] | None) -> str:
    if judge.get("runtime") == "human":
        return "human"
    kappa = ((verdict or {}).get("kappa") or {}).get("value")
    if not verdict or not verdict["labelled"] or kappa is None:
        return "unchecked"
    return "checked" if kappa >= float(judge.get("min_kappa") or 0.0) else "disagrees"


def _human_labels(lines: Sequence[Mapping[str, Any]], people: Sequence[str],
                  by_name: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A person's readings (a judge whose runtime is `human`) as labels of every other judge
    of the same rubric: its verdict, and its score by dimension."""
    out: list[dict[str, Any]] = []
    for person in people:
        rubric = by_name[person].get("rubric")
        others = [n for n, d in by_name.items() if n != person and d.get("rubric") == rubric
                  and d.get("runtime") != "human"]
        for line in lines:
            for reading in readings_of(line):
                if reading.get("sensor_name") != person or reading.get("passed") is None:
                    continue
                target = {"run_id": line.get("run_id"), "subject": line.get("subject"),
                          "probe_id": line.get("probe_id"), "trial": line.get("trial")}
                for other in others:
                    out.append({**target, "sensor": other, "dimension": None,
                                "value": reading["passed"] is True, "labeller": person})
                    for dim, value in (reading.get("metrics") or {}).items():
                        if dim != REPEATS and _number(value):
                            out.append({**target, "sensor": other, "dimension": dim,
                                        "value": float(value), "labeller": person})
    return out


def _noise(lines: Sequence[Mapping[str, Any]], judge: Mapping[str, Any],
           level: float) -> dict[str, Any] | None:
    """The judge's repeated judgements of each output: variance components of its overall
    score (each dimension rescaled to [0, 1], as the reading's score) and per dimension."""
    low, high = judge.get("scale") or (0.0, 1.0)
    dims = list(judge.get("dimensions") or ())
    overall: list[list[float]] = []
    per_dim: dict[str, list[list[float]]] = {d: [] for d in dims}
    unsettled = 0
    threshold = float(judge.get("pass_threshold") or 0.5)
    for reading in _readings(lines, judge["name"]):
        each = (reading.get("metrics") or {}).get(REPEATS)
        if not isinstance(each, list) or len(each) < 2:
            continue
        raw = [[r.get(d) if isinstance(r, Mapping) else None for d in dims] for r in each]
        if not all(_number(v) for row in raw for v in row):
            continue
        rows = [[float(v) for v in row if v is not None] for row in raw]
        scores = [sum((v - low) / (high - low) for v in row) / len(row) for row in rows]
        overall.append(scores)
        for i, d in enumerate(dims):
            per_dim[d].append([row[i] for row in rows])
        unsettled += len({x >= threshold for x in scores}) > 1
    if len(overall) < 2:
        return None
    return {"outputs": len(overall), "unsettled": unsettled,
            "score": _components(overall, level),
            "dimensions": {d: _components(v, level) for d, v in per_dim.items()}}


def _components(scores: list[list[float]], level: float) -> dict[str, Any]:
    n = stats.judge_noise(scores, level)
    return {"within_var": num(n.within_var), "between_var": num(n.between_var),
            "icc": estimate_out(n.icc), "icc_mean": estimate_out(n.icc_mean),
            "repeats": num(n.repeats)}


def _alpha(lines: Sequence[Mapping[str, Any]], panel: Mapping[str, Any],
           level: float) -> dict[str, Any]:
    """Krippendorff's α of a panel's members over the outputs they all judged."""
    members = list(panel["members"])
    verdicts: list[list[float | None]] = []
    scores: list[list[float | None]] = []
    for line in lines:
        by = {r.get("sensor_name"): r for r in readings_of(line)}
        if not any(m in by for m in members):
            continue
        verdicts.append([None if by.get(m, {}).get("passed") is None
                         else float(by[m]["passed"] is True) for m in members])
        scores.append([by[m]["score"] if m in by and _number(by[m].get("score")) else None
                       for m in members])
    return {"verdicts": estimate_out(stats.krippendorff_alpha(verdicts, "nominal", level)),
            "scores": estimate_out(stats.krippendorff_alpha(scores, "interval", level))}


def _readings(lines: Iterable[Mapping[str, Any]], name: str) -> Iterable[Mapping[str, Any]]:
    for line in lines:
        for reading in readings_of(line):
            if reading.get("sensor_name") == name:
                yield reading


def _number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


__all__ = ["REPEATS", "judges_block"]
