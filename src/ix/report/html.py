"""`ix report --format html`: one self-contained page (docs/reports.md, "The HTML report").

`render_report_html(report)` is the whole page; `report_body_html(report)` its sections
without `<html>`/`<head>`, for a host page (the `ix view` run page) that also inlines
`REPORT_CSS` (every rule is scoped to `.ix-report`). `report` is the data of
`ix.api.reports.report` (`ix report --json`).

Safety: jinja2 autoescapes every value; the only markup marked safe is the SVG of
`ix.report.charts`, which escapes its own texts. The page loads nothing (no script, font,
image or stylesheet from anywhere) and its Content-Security-Policy forbids it anyway.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from markupsafe import Markup

from ix._lazy import lazy
from ix.report import charts, load_test, outcome_text
from ix.report.answer import metric_name
from ix.report.case_stats import correlation_lines, frontier_lines, percentile_table
from ix.report.judge_text import judge_lines
from ix.report.pairwise_text import pairwise_lines
from ix.report.terminal import ci, fmt, rate_cell, rate_word, several_sensors

if TYPE_CHECKING:
    import jinja2
else:  # imported when a page is rendered
    jinja2 = lazy("jinja2")

#: The report's stylesheet, to inline in a `<style>` element.
REPORT_CSS: str = resources.files("ix.report").joinpath("templates/report.css").read_text(
    encoding="utf-8")
#: Nothing may load or run: styles are inline, images only `data:` (there are none).
CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
       "form-action 'none'")
#: Rows of the long lists (failing cases, flips) shown; the JSON keeps them all.
TOP_FAILURES = 25
_EXPECT = {"must_trigger": "must", "should_not_trigger": "not", "acceptable": "edge"}
_RATES = (("must_trigger", "Trials that {passed}, must_trigger cases (higher is better)"),
          ("should_not_trigger", "Trials that {passed}, should_not_trigger cases (lower is "
                                 "better)"),
          ("correct", "Trials whose outcome is right, all cases"))


@cache
def _env() -> jinja2.Environment:
    # a key missing from older or imported data renders as empty or n/a, never fails
    env = jinja2.Environment(loader=jinja2.PackageLoader("ix.report", "templates"), autoescape=True,
                      undefined=jinja2.ChainableUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(fmt=_fmt, ci=_ci, p=_p, expect=lambda e: _EXPECT.get(e, e),
                       metric=lambda m, sensor=None: metric_name(
                           m, sensor if isinstance(sensor, str) else None))
    # the `load` block, in the words `ix report` prints on a terminal
    env.filters.update(rps=load_test.rps, percentiles=load_test.percentiles,
                       sla=load_test.sla_lines,
                       schedule=load_test.schedule_text,
                       error_rate=lambda s: load_test.rate_text(s["error_rate"],
                                                                s["error_rate_ci"]))
    return env


def render_report_html(report: Mapping[str, Any]) -> str:
    """The report as one HTML page that needs nothing else: no network, no script."""
    run = report["run"]
    return _env().get_template("report.html.j2").render(
        title=f"{run['experiment']} · run {run['run_id']}", csp=CSP, css=Markup(REPORT_CSS),
        body=Markup(report_body_html(report)))


def report_body_html(report: Mapping[str, Any]) -> str:
    """The report's sections in a `<div class="ix-report">`, to embed in a page that
    inlines `REPORT_CSS`."""
    return _env().get_template("report_body.html.j2").render(**_context(report))


def _number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _fmt(x: Any, digits: int = 3) -> str:
    return fmt(x, digits) if _number(x) else "n/a"


def _ends(x: Any) -> tuple[float | None, float | None]:
    """An interval's two ends, or (None, None) when it is missing or malformed."""
    if isinstance(x, list | tuple) and len(x) == 2 and all(v is None or _number(v) for v in x):
        return x[0], x[1]
    return None, None


def _ci(x: Any) -> str:
    return ci(list(_ends(x)))


def _p(x: Any) -> str:
    if not _number(x) or isinstance(x, jinja2.Undefined):
        return "n/a"
    return "< 0.001" if 0 < x < 0.001 else f"{x:.3f}"


def _svg(text: str) -> Markup:
    """Chart SVG from `ix.report.charts` (which escapes every text it draws)."""
    return Markup(text)


def _context(report: Mapping[str, Any]) -> dict[str, Any]:
    subjects = report["summary"]["subjects"]
    colors = {s: charts.color(i) for i, s in enumerate(subjects)}
    return {"r": report, "run": report["run"], "summary": report["summary"],
            "subjects": subjects, "heatmap": _heatmap(report),
            "bars": _bars(report, colors), "histogram": _histogram(report, colors),
            "difficulty": _difficulty(report, colors), "timeline": _timeline(report),
            "comparisons": _comparisons(report), "failing": _failing(report),
            "context_curve": _context_curve(report), "sweep_bars": _sweep_bars(report),
            "top": TOP_FAILURES, "rate_word": rate_word(report["run"].get("sensor")),
            "sensor_rows": _sensor_rows(report), **_outcomes(report.get("outcomes")),
            "judge_lines": judge_lines(report.get("judges") or []),
            "pairwise_lines": pairwise_lines(report.get("pairwise")),
            "frontier_lines": frontier_lines(report),
            "percentiles": percentile_table(report),
            "correlation_lines": correlation_lines(report)}


def _outcomes(outcomes: Any) -> dict[str, Any]:
    """The outcomes section (tokens, time and cost per trial) in the words of
    `ix.report.outcome_text`, as the terminal and Markdown reports write it: `costs`, each
    subject against the control (none without a comparison); `outcome_table`, the quantities
    per subject. Both None for a run from before the section (or without a trial that stood)."""
    if not isinstance(outcomes, Mapping) or not outcomes:
        return {"costs": None, "outcome_table": None}
    # nulls where a list or mapping is expected read as empty
    o = {**outcomes, **{k: outcomes.get(k) or default for k, default in (
        ("metrics", []), ("by_subject", {}), ("comparisons", []), ("cost_per_success", {}),
        ("cost_per_success_ratio", {}))}}
    level = f"{o['level'] * 100:g}%" if _number(o.get("level")) else None
    note = o.get("note") if isinstance(o.get("note"), str) else None
    subjects, rows = outcome_text.subject_rows(o) if o["by_subject"] else ([], [])
    table = {"subjects": subjects, "rows": rows, "level": level, "note": note} if rows else None
    costs = None
    if o["comparisons"]:
        costs = {"control": o["comparisons"][0].get("control"), "level": level,
                 "rows": outcome_text.comparison_rows(o)}
    return {"costs": costs, "outcome_table": table}


def _sensor_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """With more than one sensor: per sensor, its pass rate cell per subject (issue 20)."""
    by_subject = report.get("sensors") or {}
    return [{"name": name, "cells": [rate_cell(by_subject[s].get(name)) for s in by_subject]}
            for name in several_sensors(by_subject)]


def _context_curve(report: Mapping[str, Any]) -> Markup | None:
    """`context:`: each subject's activation rate by length, with its 95% interval."""
    c = report.get("context")
    if not c:
        return None
    unit = str(c["unit"]).replace("_", " ")
    series = []
    for i, s in enumerate(c["subjects"]):
        rows = {row["length"]: row for row in s["lengths"]}
        points = [charts.Point(rows[n]["activation_rate"], *_ends(rows[n]["activation_rate_ci"]),
                               title=f"{s['subject']} after {n} {unit}: activation rate "
                                     f"{fmt(rows[n]['activation_rate'])} "
                                     f"{ci(rows[n]['activation_rate_ci'])}")
                  if n in rows and rows[n]["activation_rate"] is not None else None
                  for n in c["lengths"]]
        series.append(charts.Series(s["subject"], points, charts.color(i)))
    return _svg(charts.line_plot([f"{n} {unit}" for n in c["lengths"]], series,
                                 label="activation rate by context length",
                                 y_label="activation rate", bands=True))


def _sweep_bars(report: Mapping[str, Any]) -> Markup | None:
    """`sweep:`: every condition on the report's metric, with its 95% interval."""
    sw = report.get("sweep")
    if not sw or not sw["rows"]:
        return None
    name = metric_name(sw["metric"], report["run"].get("sensor"))
    bars = [charts.Bar(row["subject"], row["value"], *_ends(row["ci"]),
                       title=f"{row['subject']}: {name} {fmt(row['value'])} {ci(row['ci'])}, "
                             f"P(best) {fmt(row['p_best'])}", color=charts.color(i))
            for i, row in enumerate(sw["rows"])]
    return _svg(charts.bar_chart(bars, label=f"{name} per condition"))


def _heatmap(report: Mapping[str, Any]) -> Markup | None:
    s = report["summary"]
    if not s["cases"] or not s["subjects"]:
        return None
    cells = {}
    word = rate_word(report["run"].get("sensor"))
    counted = "skill invoked" if word == "activation rate" else "passed"
    for row in s["cases"]:
        for name, c in row["by_subject"].items():
            if c["score"] is None:
                tip = f"{row['probe_id']} · {name}: no valid trial ({c['errors']} errored)"
                cells[(row["probe_id"], name)] = charts.Cell(None, tip)
                continue
            vote = {True: "right", False: "wrong", None: "none"}[c.get("correct")]
            tip = (f"{row['probe_id']} · {name}: {word} {c['score']:.2f}, "
                   f"{counted} in {c['passed']}/{c['n']} valid trials"
                   + (f" ({c['errors']} errored)" if c["errors"] else "")
                   + f"\n95% interval {ci(c['score_ci'])}\nmajority vote {vote} "
                   f"({row['expectation']})")
            cells[(row["probe_id"], name)] = charts.Cell(c["score"], tip,
                                                         flagged=c.get("correct") is False)
    rows = [f"{r['probe_id']}" for r in s["cases"]]
    return _svg(charts.heatmap(rows, s["subjects"], cells, label=f"{word} per case and "
                               "subject", show_values=len(s["subjects"]) <= 12))


def _bars(report: Mapping[str, Any], colors: dict[str, str]) -> list[dict[str, Any]]:
    subjects = report["summary"]["subjects"]
    metric = report["metric"]
    name = metric_name(metric, report["run"].get("sensor"))
    # one subject: no leaderboard, so no chart of its metric (the rates below remain)
    values = {row["subject"]: row for row in (report.get("leaderboard") or {}).get("rows", [])}
    out = []
    primary = [charts.Bar(s, values[s]["value"], *_ends(values[s]["ci"]),
                          title=f"{s}: {name} {fmt(values[s]['value'])} "
                                f"{ci(values[s]['ci'])}, n = {values[s]['n']}",
                          color=colors[s]) for s in subjects if s in values]
    if primary:
        out.append({"title": f"{name[:1].upper()}{name[1:]}, the leaderboard's metric",
                    "svg": _svg(charts.bar_chart(primary, label=name))})
    rates = report.get("rates") or {}
    passed = ("invoked the skill" if rate_word(report["run"].get("sensor")) == "activation rate"
              else "passed")
    for key, words in _RATES:
        title = words.format(passed=passed)
        bars = []
        for s in subjects:
            r = (rates.get(s) or {}).get(key)
            if not r or r.get("rate") is None:
                continue
            lo, hi = _ends(r.get("ci"))
            bars.append(charts.Bar(s, r["rate"], lo, hi, color=colors[s],
                                   title=f"{s}: {fmt(r['rate'])} {ci(r.get('ci'))}, "
                                         f"{r.get('n_trials')} trials of {r.get('n_cases')} "
                                         "cases (interval clustered by case)"))
        if bars:
            out.append({"title": title, "svg": _svg(charts.bar_chart(bars, label=title))})
    return out


def _histogram(report: Mapping[str, Any], colors: dict[str, str]) -> Markup | None:
    series: dict[str, list[float]] = {s: [] for s in report["summary"]["subjects"]}
    for row in report["breakdown"]:
        for s, b in row["by_subject"].items():
            if b.get("mean") is not None:
                series.setdefault(s, []).append(b["mean"])
    values = [v for vs in series.values() for v in vs]
    if not values:
        return None
    lo, hi = min(values), max(values)
    domain = (0.0, 1.0) if lo >= 0 and hi <= 1 else (lo, hi) if hi > lo else (lo - .5, hi + .5)
    return _svg(charts.histogram(series, domain=domain, label="per-case mean score",
                                 colors=[colors.get(s, charts.color(i))
                                         for i, s in enumerate(series)]))


def _difficulty(report: Mapping[str, Any], colors: dict[str, str]) -> Markup | None:
    d = report.get("difficulty")
    if not d:
        return None
    series = []
    for i, (s, rows) in enumerate(d["by_subject"].items()):
        points = [charts.Point(r["rate"], *_ends(r["ci"]),
                               title=f"{s}, {r['level']}: {r['k']}/{r['n']} cases right, "
                                     f"95% {ci(r['ci'])}") if r["rate"] is not None else None
                  for r in rows]
        series.append(charts.Series(s, points, colors.get(s, charts.color(i))))
    return _svg(charts.line_plot(d["levels"], series, label="correct rate by difficulty",
                                 y_label="correct rate"))


def _timeline(report: Mapping[str, Any]) -> Markup | None:
    t = report.get("timeline")
    if not t:
        return None
    lanes = []
    for lane in t["lanes"]:
        marks = [charts.Mark(m["t"], m["d"], m["status"],
                             title=f"{lane['subject']} · {m['probe_id']} trial {m['trial']}"
                                   + (f" (attempt {m['attempt']})" if m["attempt"] else "")
                                   + f": started +{m['t']:.0f} ms, took {m['d']:.0f} ms, "
                                   + (f"error {m['error']}" if m["error"] else m["status"]))
                 for m in lane.get("marks", ())]
        lanes.append(charts.Lane(lane["subject"], marks, lane.get("bins", ()),
                                 title=f"{lane['subject']}: {lane['trials']} attempts, "
                                       f"{lane['errors']} errored"))
    return _svg(charts.timeline(lanes, t["span_ms"], bin_ms=t.get("bin_ms"),
                                label="trials over time"))


def _comparisons(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    sensor = report["run"].get("sensor")
    for c in report.get("comparisons") or []:
        metrics = c.get("metrics") or {}
        bars = [charts.Bar(metric_name(k, sensor), m.get("diff"), *_ends(m.get("diff_ci")),
                           title=f"{metric_name(k, sensor)}: {fmt(m.get('diff'))} "
                                 f"{ci(m.get('diff_ci'))}",
                           color=charts.PALETTE[5] if (m.get("diff") or 0) < 0
                           else charts.PALETTE[2])
                for k, m in metrics.items()]
        svg = _svg(charts.bar_chart(bars, domain=(-1.0, 1.0), label="variant − control")) \
            if bars else None
        # the goal's metric is primary; the others exploratory, labelled unadjusted
        roles = [(role, [(k, m) for k, m in metrics.items()
                         if m.get("role", "exploratory") == role])
                 for role in ("primary", "exploratory")]
        sensors = c.get("sensors") or {}
        out.append({"c": c, "metrics": metrics, "roles": roles, "svg": svg,
                    # the changes beyond trial noise (all, in summaries before the test)
                    "flips": [f for f in c.get("flips") or []
                              if f.get("beyond_noise", True)][:TOP_FAILURES],
                    "within_noise": sum(1 for f in c.get("flips") or []
                                        if f.get("beyond_noise") is False),
                    # one sensor: its pass rate is already the metrics'
                    "sensors": list(sensors.items()) if len(sensors) > 1 else []})
    return out


def _failing(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list(report["failures"].get("cases") or [])[:TOP_FAILURES]
