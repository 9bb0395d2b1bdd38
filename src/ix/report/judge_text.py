"""The summary's `judges` block in words (issue 36, docs/judges.md): the caveat beside a
verdict that rests on a judge, and each judge's line in `ix report`.

A verdict rests on a judge when the goal's metric is one of its dimensions
(`<judge>.<dimension>`), or when the run's first sensor (whose verdict every rate counts) is
a judge. The caveat says whether people's labels checked it (κ against `min_kappa`), and
what its repeats said of its own noise.
"""

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ix.eval.sensors import JUDGE_KINDS
from ix.report.answer import interval_text, num_text


def resting_judge(summary: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The judge the run's verdict rests on, or None."""
    judges = list(summary.get("judges") or [])
    if not judges:
        return None
    metric = str((summary.get("goal") or {}).get("metric") or "")
    by_name = {j["name"]: j for j in judges}
    name, _, dimension = metric.rpartition(".")
    if name in by_name and dimension in (by_name[name].get("dimensions") or ()):
        return by_name[name]
    return judges[0] if summary.get("sensor") in JUDGE_KINDS else None


def who(judge: Mapping[str, Any]) -> str:
    """`quality (claude-sonnet-4-5)`, `panel (3 judges)`, or the name alone."""
    if judge.get("members"):
        return f"{judge['name']} (a panel of {len(judge['members'])})"
    model = judge.get("model")
    return f"{judge['name']} ({model})" if model else str(judge["name"])


def caveat_lines(summary: Mapping[str, Any], run_id: str | None = None) -> list[str]:
    """What to keep in mind of the judge a verdict rests on; empty when none does."""
    judge = resting_judge(summary)
    if judge is None:
        return []
    status = judge.get("status")
    lines = []
    if status == "unchecked":
        run = f" {run_id}" if run_id else ""
        lines.append(f"judged by {who(judge)}, not checked against labels "
                     f"(`ix label{run}` labels a sample)")
    elif status in ("checked", "disagrees"):
        a = judge.get("agreement") or {}
        kappa = a.get("kappa") or {}
        below = (f", below its min_kappa {num_text(judge.get('min_kappa'), 2)}"
                 if status == "disagrees" else "")
        lines.append(f"judged by {who(judge)}: κ {num_text(kappa.get('value'), 2)} "
                     f"{interval_text(kappa.get('ci'))} against {a.get('labelled', 0)} "
                     f"labels{below}")
    noise = noise_line(judge)
    if noise:
        lines.append(noise)
    flip = flip_line(summary, judge)
    if flip:
        lines.append(flip)
    return lines


def flip_line(summary: Mapping[str, Any], judge: Mapping[str, Any]) -> str | None:
    """For a goal on one of the judge's dimensions, judged with repeats: whether the judge's
    own noise could carry the effect across the goal's threshold. Its error of the effect
    (paired case means over T trials of R repeats, n cases) is √(2σ²/(R·T·n)), σ² the
    judge's variance within an output; it could flip the verdict when the effect lies
    within twice that of a threshold (docs/judges.md, "Repeats")."""
    goal = summary.get("goal") or {}
    name, _, dimension = str(goal.get("metric") or "").rpartition(".")
    noise = ((judge.get("noise") or {}).get("dimensions") or {}).get(dimension)
    effect = goal.get("effect") or {}
    diff, trials = effect.get("diff"), summary.get("trials_per_case")
    blocks = summary.get("subjects") or []
    if (name != judge.get("name") or not noise or noise.get("within_var") is None
            or diff is None or not isinstance(trials, int) or not blocks):
        return None
    cases = len(blocks[0].get("probe_results") or ()) or 1
    se = math.sqrt(2 * noise["within_var"] / (int(judge.get("repeats") or 1) * trials * cases))
    if goal.get("relative"):
        control = effect.get("control")
        if not control:
            return None
        se /= abs(control)
    bound = float(goal["at_most"] if goal.get("at_most") is not None
                  else goal.get("min_effect") or 0.0)
    direction = goal.get("direction")
    thresholds = [bound] if direction == "increase" else [-bound] if direction == "decrease" \
        else [-bound, bound]
    gap = min(abs(diff - t) for t in thresholds)
    said = (f"the effect lies {num_text(gap, 3)} from the goal's threshold; the judge's own "
            f"error of it is {num_text(se, 3)}")
    if gap < 2 * se:
        return f"judge noise alone could flip this verdict: {said} (more repeats settle it)"
    return f"judge noise alone could not flip this verdict: {said}"


def noise_line(judge: Mapping[str, Any]) -> str | None:
    """How much the judge's repeats disagreed, and whether that alone could flip verdicts."""
    noise = judge.get("noise")
    if not noise:
        return None
    icc = (noise.get("score") or {}).get("icc_mean") or {}
    line = (f"judge noise: reliability of the mean of {judge.get('repeats')} repeats "
            f"{num_text(icc.get('value'), 2)} {interval_text(icc.get('ci'))}")
    if noise.get("unsettled"):
        line += (f"; {noise['unsettled']} of {noise['outputs']} outputs changed verdict "
                 "between repeats: judge noise alone could flip a case")
    return line


def judge_lines(judges: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each judge of a run in a few lines: who, whether people checked it, its corrected
    pass rate, its noise, a panel's agreement."""
    out: list[str] = []
    for j in judges:
        head = f"{who(j)}: {j.get('status')}"
        if j.get("repeats", 1) > 1:
            head += f", {j['repeats']} repeats"
        out.append(head)
        a = j.get("agreement")
        if a and a.get("labelled"):
            out.append(f"  against {a['labelled']} labels: "
                       + ", ".join(f"{k} {num_text((a.get(key) or {}).get('value'), 2)} "
                                   f"{interval_text((a.get(key) or {}).get('ci'))}"
                                   for k, key in (("accuracy", "accuracy"), ("TPR", "tpr"),
                                                  ("TNR", "tnr"), ("κ", "kappa"))))
            rate, judged = a.get("corrected_rate") or {}, a.get("judged_rate") or {}
            out.append(f"  pass rate by the judge {num_text(judged.get('value'))}; true pass "
                       f"rate {num_text(rate.get('value'))} {interval_text(rate.get('ci'))} "
                       "given its error rates"
                       + (" (the judge carries no information)" if rate.get("uninformative")
                          else ""))
        for s in j.get("scores") or []:
            wk, rho = s.get("weighted_kappa") or {}, s.get("spearman") or {}
            out.append(f"  {s['dimension']} against {s['labelled']} scores: weighted κ "
                       f"{num_text(wk.get('value'), 2)} {interval_text(wk.get('ci'))}, "
                       f"Spearman {num_text(rho.get('value'), 2)} "
                       f"{interval_text(rho.get('ci'))}")
        noise = noise_line(j)
        if noise:
            out.append(f"  {noise}")
        alpha = j.get("alpha")
        if alpha:
            v, s = alpha.get("verdicts") or {}, alpha.get("scores") or {}
            whose = "its judges" if j.get("members") else \
                f"the judges of rubric {j.get('rubric')}"
            out.append(f"  {whose} agree: Krippendorff's α {num_text(v.get('value'), 2)} "
                       f"{interval_text(v.get('ci'))} on verdicts, "
                       f"{num_text(s.get('value'), 2)} {interval_text(s.get('ci'))} on scores")
    return out


__all__ = ["caveat_lines", "flip_line", "judge_lines", "noise_line", "resting_judge", "who"]
