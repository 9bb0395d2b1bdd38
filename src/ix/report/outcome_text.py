"""The words and cells of a report's outcomes section (tokens, time and cost with intervals,
`TrialDigest.outcomes`), shared by the terminal and Markdown reports."""

import math
from collections.abc import Mapping
from typing import Any

LABELS = {"tokens_input": "input tokens", "tokens_output": "output tokens",
          "cost_usd": "cost (USD)", "duration_ms": "time (s)", "tool_calls": "tool calls",
          "turns": "turns", "score": "score", "cost_per_success": "cost per success"}


def label(metric: str) -> str:
    """A quantity's name in a table: `output tokens`, a judge's dimension `quality: clarity`."""
    if metric in LABELS:
        return LABELS[metric]
    judge, dot, dimension = metric.rpartition(".")
    return f"{judge}: {dimension}" if dot else metric


def _plain(x: float, digits: int) -> str:
    """`x` to `digits` significant digits, never in exponent form (`1.3e-05` would read as
    two values, and a narrow table could cut it)."""
    if x == 0:
        return "0"
    places = max(0, digits - 1 - math.floor(math.log10(abs(x))))
    return f"{x:,.{places}f}"


def number(metric: str, x: float | None) -> str:
    """`x` in `metric`'s unit (seconds for a duration), to a few digits, never cut."""
    if x is None or not math.isfinite(x):
        return "–"
    if metric == "cost_usd":
        return _plain(x, 4)
    if metric == "duration_ms":
        return _plain(x / 1000, 3)
    return f"{x:,.0f}" if abs(x) >= 100 else _plain(x, 3)


def value_cell(metric: str, e: Mapping[str, Any]) -> str:
    """`mean [lo, hi]` in the metric's unit."""
    lo, hi = e["ci"]
    interval = f" [{number(metric, lo)}, {number(metric, hi)}]" if lo is not None else ""
    return number(metric, e["value"]) + interval


def _percent(r: float | None) -> str:
    return "–" if r is None or not math.isfinite(r) else f"{(r - 1) * 100:+.0f}%"


def ratio_cell(e: Mapping[str, Any]) -> str:
    """A ratio as a change: `+38% [+21%, +57%]`."""
    lo, hi = e["ci"]
    return _percent(e["value"]) + (f" [{_percent(lo)}, {_percent(hi)}]" if lo is not None
                                   else "")


def subject_rows(outcomes: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """(subjects, one row per quantity: its label, then each subject's cell); cost per
    success last, when there is a cost."""
    subjects = list(outcomes["by_subject"])
    rows = [[label(m), *(value_cell(m, outcomes["by_subject"][s][m]) for s in subjects)]
            for m in outcomes["metrics"]]
    if outcomes["cost_per_success"]:
        rows.append([label("cost_per_success"),
                     *(_per_success(outcomes, s) for s in subjects)])
    return subjects, rows


def _no_success(outcomes: Mapping[str, Any], subject: str) -> bool:
    """Whether the subject spent with no right trial, so that it has no cost per success."""
    e = outcomes["cost_per_success"].get(subject)
    return e is None or e["value"] is None


def _per_success(outcomes: Mapping[str, Any], subject: str) -> str:
    """A subject's cost per success, or why it has none."""
    return "– (no right trial)" if _no_success(outcomes, subject) else \
        value_cell("cost_usd", outcomes["cost_per_success"][subject])


def comparison_rows(outcomes: Mapping[str, Any]) -> list[list[str]]:
    """Each other subject against the control: subject, quantity, the change of its mean
    [interval], P(lower), the paired difference's two-sided p adjusted by Holm across the
    subjects; then cost per success."""
    rows = [[c["subject"], label(c["metric"]), ratio_cell(c["ratio"]),
             "–" if c["p_lower"] is None else f"{c['p_lower']:.2f}",
             "–" if c.get("p_holm") is None else f"{c['p_holm']:.3f}"]
            for c in outcomes["comparisons"]]
    for subject, e in outcomes["cost_per_success_ratio"].items():
        cell = ratio_cell(e)
        if e["value"] is None:  # say which side had no right trial, if one had none
            control = outcomes["comparisons"][0]["control"]  # a ratio has its comparisons
            cell = next((f"– ({who}: no right trial)" for who in (control, subject)
                         if _no_success(outcomes, who)), cell)
        rows.append([subject, label("cost_per_success"), cell, "", ""])
    return rows


#: What `ix run`'s screen says of the cost, of the quantities there are (one screen: the
#: report has them all): output tokens, time, and cost per success (else cost).
BRIEF = ("tokens_output", "duration_ms", "cost_per_success", "cost_usd")


def brief_lines(outcomes: Mapping[str, Any]) -> list[str]:
    """At what cost, a line per subject against the control: `with-skill: output tokens
    +38% [+21%, +57%], time ...` (of `BRIEF`); the first line says against whom. A cost per
    success that has no value (the control, or the subject, had no right trial) gives way to
    the cost per trial. Nothing when no subject spent tokens or money."""
    if not outcomes or not outcomes["comparisons"] or not {
            "tokens_input", "tokens_output", "cost_usd"} & set(outcomes["metrics"]):
        return []  # nothing spent (an offline router): its time alone is not the question
    control = outcomes["comparisons"][0]["control"]
    level = f"{outcomes['level'] * 100:g}%"
    lines = [f"at what cost against {control} (mean's change [{level} CI], paired by case):"]
    for subject in dict.fromkeys(c["subject"] for c in outcomes["comparisons"]):
        cells = {c["metric"]: c["ratio"] for c in outcomes["comparisons"]
                 if c["subject"] == subject}
        per_success = outcomes["cost_per_success_ratio"].get(subject)
        if per_success is not None and per_success["value"] is not None:
            cells["cost_per_success"] = per_success
        chosen = [m for m in BRIEF if m in cells]
        if "cost_per_success" in chosen and "cost_usd" in chosen:
            chosen.remove("cost_usd")
        parts = [f"{label(m)} {ratio_cell(cells[m])}" for m in chosen]
        lines.append(f"  {subject}: " + ", ".join(parts))
    return lines


__all__ = ["BRIEF", "LABELS", "brief_lines", "comparison_rows", "label", "number", "ratio_cell",
           "subject_rows", "value_cell"]
