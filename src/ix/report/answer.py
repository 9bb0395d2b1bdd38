"""The answer of a run in sentences: the goal's verdict, each variant against the control,
and each subject's interpretation (status, issues, suggestions).

One place writes these sentences; the run's terminal summary, `ix report` in every format
(table, md, json, html) and `ix batch`'s report print them as they are, so the same run
reads the same everywhere. Plain text, no markup: each renderer escapes and styles it.
"""

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ix.report import outcome_text

if TYPE_CHECKING:
    from ix.report.schemas import Answer, SubjectInterpretation

#: The display name of each metric (the JSON keeps the key).
METRIC_NAMES = {"f1": "F1", "precision": "precision", "recall": "recall",
                "pass_rate": "correct rate", "activation_rate": "activation rate (must)"}


def metric_name(key: str, sensor: str | None = None) -> str:
    """The display name of a metric; `sensor` is the run's first sensor kind: "activation
    rate" is only the skill under test's (DESIGN.md §8), so for a capability sensor the
    `activation_rate` key reads "pass rate (must)"."""
    if key == "activation_rate" and sensor not in (None, "activation"):
        return "pass rate (must)"
    return METRIC_NAMES.get(key, key)


#: The metrics a run can be judged by (`ix.report.leaderboard` ranks on each).
METRICS = ("f1", "precision", "recall", "pass_rate", "activation_rate")


def primary_metric(summary: Mapping[str, Any]) -> str:
    """The metric an experiment is judged by: its goal's metric, else F1 for the activation
    sensor, else the pass rate (capability sensors)."""
    goal = summary.get("goal") or {}
    metric = goal.get("metric") or (goal.get("effect") or {}).get("metric")
    if metric in METRICS:
        return str(metric)
    return "f1" if summary.get("sensor", "activation") == "activation" else "pass_rate"


def num_text(x: float | None, digits: int = 3, sign: bool = False) -> str:
    """A number as every view prints it: 3 digits, `n/a` for none."""
    if x is None:
        return "n/a"
    return f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"


def interval_text(ci: Any) -> str:
    """An interval as every view prints it, `[0.22, 0.88]`; `[n/a]` when either end is none."""
    if not isinstance(ci, list | tuple) or len(ci) != 2 or None in ci:
        return "[n/a]"
    return f"[{ci[0]:.2f}, {ci[1]:.2f}]"


def _p(x: float | None) -> str:
    if x is None:
        return "n/a"
    return "< 0.001" if 0 < x < 0.001 else f"{x:.3f}"


def goal_verdict(goal: Mapping[str, Any] | None) -> str | None:
    """One line, verdict first: `SUPPORTED — goal: <hypothesis>`; None without a goal."""
    if not goal:
        return None
    verdict = goal.get("verdict")
    word = verdict.upper() if verdict else "NO VERDICT"
    return f"{word} — goal: {goal.get('hypothesis', '')}".rstrip()


def looks_line(looks: Mapping[str, Any] | None) -> str | None:
    """`stop: goal`'s one line: where the run stopped, why, and the calls it saved."""
    if not looks:
        return None
    return (f"stop: goal — {looks.get('stopped')}; {looks.get('calls')} of "
            f"{looks.get('planned_calls')} planned trials ({looks.get('calls_saved')} saved)")


def goal_lines(goal: dict[str, Any] | None, sensor: str | None = None,
               looks: Mapping[str, Any] | None = None) -> list[str]:
    """The goal in sentences: the verdict line, then the effect, the evidence and the rule,
    and for an undecided goal what would settle it. Empty without a goal. `sensor`: the
    run's first sensor kind (the metric's name); `looks`: the summary's `looks` block
    (`stop: goal`), whose line follows the verdict's."""
    head = goal_verdict(goal)
    if head is None or goal is None:
        return []
    stopped = looks_line(looks)
    if stopped is not None:
        return [head, stopped, *goal_lines(goal, sensor)[1:]]
    if goal.get("verdict") is None:
        return [head, f"no verdict: {goal.get('note') or 'the compared subjects did not run'}"]
    lines = [head]
    e = goal.get("effect") or {}
    control, treatment = [*(goal.get("compare") or []), "control", "treatment"][:2]
    metric = str(e.get("metric") or goal.get("metric") or "")
    if e and metric not in METRICS:  # a quantity: in its unit, a relative goal in percent
        lines.append(f"{outcome_text.label(metric)}: {control} "
                     f"{outcome_text.number(metric, e.get('control'))} → {treatment} "
                     f"{outcome_text.number(metric, e.get('treatment'))}, "
                     + effect_text(metric, e.get("diff"), e.get("diff_ci"),
                                   bool(goal.get("relative")))
                     + " (paired by case)")
    elif e:
        extra = []
        if e.get("diff_median") is not None:
            extra.append(f"posterior median {num_text(e['diff_median'], sign=True)}")
        if e.get("paired"):
            extra.append("paired")
        lines.append(f"{metric_name(metric, sensor)}: "
                     f"{control} "
                     f"{num_text(e.get('control'))} → {treatment} {num_text(e.get('treatment'))}, "
                     f"difference {num_text(e.get('diff'), sign=True)} "
                     f"{interval_text(e.get('diff_ci'))}"
                     + (f" ({', '.join(extra)})" if extra else ""))
    lines.append(f"P(supported) = {num_text(goal.get('p_supported'))}, P(refuted) = "
                 f"{num_text(goal.get('p_refuted'))}; {goal.get('rule') or ''}".rstrip("; "))
    why = (goal.get("reachable") or {}).get("why")
    if why:     # a verdict the data cannot reach (STATS.md §10)
        lines.append(why)
    s = goal.get("suggestion")
    if s and s.get("cases") is None:
        lines.append(f"more cases would not settle it: {s.get('method')}")
    elif s:
        odds = ("" if s.get("p_settle") is None
                else f", settling it with probability {s['p_settle']:.2f}")
        each = (f" at {s['trials_per_case']} trial(s) each"
                if s.get("trials_per_case") is not None else "")
        said = "; ".join(x for x in (s.get("criterion"), s.get("method")) if x)
        method = f" ({said})" if said else ""
        lines.append(f"to settle it: about {s['cases']} {s.get('unit') or 'cases'} (now "
                     f"{s.get('current_cases')}){each}{odds}{method}")
    return lines


def effect_text(metric: str, diff: float | None, ci: Any, relative: bool) -> str:
    """A goal's effect on `metric` with its interval: a rate's difference (`difference
    +0.250 [0.05, 0.43]`), a quantity's in its unit (`difference +72.9 [+49.0, +96.8]`) or,
    `relative`, as a change (`change +38% [+21%, +57%]`)."""
    if metric in METRICS:
        return f"difference {num_text(diff, sign=True)} {interval_text(ci)}"
    lo, hi = ci if isinstance(ci, list | tuple) and len(ci) == 2 else (None, None)
    if relative:
        def change(x: float | None) -> str:
            return outcome_text.ratio_cell({"value": None if x is None else x + 1,
                                            "ci": [None, None]})
        return f"change {change(diff)} [{change(lo)}, {change(hi)}]"

    def signed(x: float | None) -> str:
        text = outcome_text.number(metric, x)
        return text if x is None or text.startswith("-") else f"+{text}"
    return f"difference {signed(diff)} [{signed(lo)}, {signed(hi)}]"


def _headline_metric(metrics: dict[str, Any], fallback: str | None) -> str | None:
    for key, m in metrics.items():
        if m.get("role") == "primary":
            return key
    for name in (fallback, "f1", "pass_rate"):
        if name in metrics:
            return name
    return next(iter(metrics), None)


def comparison_sentence(c: dict[str, Any], metric: str | None = None,
                        sensor: str | None = None) -> str:
    """`<variant> vs <control> (control): <metric> <diff> [lo, hi], credibly lower; ...`: the
    goal's metric (else `metric`, else F1) of one variant against the control (`sensor`: the
    first sensor's kind, for the metric's name)."""
    metrics = c.get("metrics") or {}
    key = _headline_metric(metrics, metric)
    head = f"{c['variant']} vs {c['control']} (control)"
    if key is None:
        return f"{head}: nothing to compare"
    m = metrics[key]
    ci = m.get("diff_ci")
    lo, hi = ci if isinstance(ci, list | tuple) and len(ci) == 2 else (None, None)
    if lo is not None and lo > 0:
        judged = "credibly higher"
    elif hi is not None and hi < 0:
        judged = "credibly lower"
    else:
        judged = "no credible difference"
    role = "the goal's metric" if m.get("role") == "primary" else "unadjusted"
    return (f"{head}: {metric_name(key, sensor)} {num_text(m.get('control'))} → "
            f"{num_text(m.get('variant'))}, difference {num_text(m.get('diff'), sign=True)} "
            f"{interval_text(m.get('diff_ci'))} ({role}), {judged}; P(variant better) "
            f"{_p(m.get('p_variant_better'))}, p (Holm) {_p(m.get('p_value_holm'))}")


def interpretation(summary: Mapping[str, Any]) -> "list[SubjectInterpretation]":
    """Each subject's status, issues and suggestions, as the run's summary states them."""
    out: list[SubjectInterpretation] = []
    for block in summary.get("subjects") or []:
        i = block.get("interpretation") or {}
        out.append({"subject": block["name"], "status": i.get("status"),
                    "issues": list(i.get("issues") or []),
                    "suggestions": list(i.get("suggestions") or [])})
    return out


def interaction_sentence(subject: str, i: Mapping[str, Any],
                         sensor: str | None = None) -> str:
    """`<subject> vs <control> (control), by context length: ...`: the difference of the two
    trends per doubling of (1 + length), with its interval, P and p (Holm)."""
    lo, hi = (i.get("diff_ci") or [None, None])[:2]
    judged = ("declines credibly faster" if hi is not None and hi < 0 else
              "declines credibly slower" if lo is not None and lo > 0 else
              "no credible difference")
    return (f"{subject} vs {i['versus']} (control), by context length: "
            f"{metric_name(i.get('metric', 'activation_rate'), sensor)} trend "
            f"{num_text(i.get('diff'), sign=True)} per doubling against the control's "
            f"{interval_text(i.get('diff_ci'))}, {judged}; P(declines faster) "
            f"{_p(i.get('p_lower'))}, p (Holm) {_p(i.get('p_value_holm'))}")


def robustness_sentence(r: Mapping[str, Any], subject: str | None = None) -> str:
    """`robustness[ of <subject>]: worse when reworded — correct rate 0.85 on originals →
    0.71 reworded, difference -0.14 [-0.25, -0.03], P(worse) 0.990 (12 originals, 36
    rewordings)`: the answer first, then the evidence (`SubjectBlock.robustness`)."""
    lo, hi = (r.get("diff_ci") or [None, None])[:2]
    judged = ("worse when reworded" if hi is not None and hi < 0 else
              "better when reworded" if lo is not None and lo > 0 else
              "no credible change when reworded")
    families = r.get("n_families")
    units = (f", {families} families" if families is not None
             and families != r.get("n_originals") else "")
    return (f"robustness{f' of {subject}' if subject else ''}: {judged} — correct rate "
            f"{num_text(r.get('original'))} on originals → "
            f"{num_text(r.get('perturbed'))} reworded, "
            f"difference {num_text(r.get('diff'), sign=True)} {interval_text(r.get('diff_ci'))}, "
            f"P(worse) {_p(r.get('p_worse'))} ({r.get('n_originals')} originals, "
            f"{r.get('n_perturbed')} rewordings{units})")


def answer(summary: Mapping[str, Any], metric: str | None = None) -> "Answer":
    """The answer block of a report: `verdict` (the goal's lines, empty without a goal),
    `comparisons` (one sentence per variant; with `context:`, one per subject against the
    control: the interaction of their trends, the question a context experiment asks),
    `interpretation` (per subject) and, when originals ran beside rewordings of them,
    `robustness` (one sentence per subject)."""
    sensor = summary.get("sensor")
    context = [(s["subject"], s["interaction"])
               for s in (summary.get("context") or {}).get("subjects") or []
               if s.get("interaction")]
    sentences = ([interaction_sentence(name, i, sensor) for name, i in context] if context
                 else [comparison_sentence(c, metric, sensor)
                       for c in summary.get("comparisons") or []])
    out: Answer = {"verdict": goal_lines(summary.get("goal"), sensor, summary.get("looks")),
                   "comparisons": sentences,
                   "interpretation": interpretation(summary)}
    robust = [robustness_sentence(b["robustness"], b["name"])
              for b in summary.get("subjects") or [] if b.get("robustness")]
    if robust:
        out["robustness"] = robust
    return out
