"""Rich renderables for a run's summary: the per-case table and the metrics beneath it.

`ix run` prints the cases that matter when there are more than a screenful (`run_cases`);
`ix report` (`ix.report.terminal`) prints every case."""

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ix.eval.scorers import scorer_name
from ix.report import tables as layout
from ix.report.answer import goal_lines, metric_name, robustness_sentence
from ix.report.case_stats import frontier_lines
from ix.report.load_test import load_parts, sla_parts
from ix.report.outcome_text import LABELS, brief_lines
from ix.report.pairwise_text import pairwise_parts
from ix.report.screen import screen
from ix.report.screen_text import VERDICT_STYLE, screen_renderable, verdict_parts, verdict_word
from ix.report.sweep import sweep_report
from ix.report.terminal import (
    comparison_table,
    config_changes_text,
    context_parts,
    flips_text,
    rate_cell,
    rate_word,
    sweep_parts,
    verdict_text,
)

_STATUS_STYLE = {"excellent": "bold green", "good": "green", "needs_work": "yellow",
                 "poor": "bold red"}
_EXPECT = {"must_trigger": "must", "should_not_trigger": "not", "acceptable": "edge"}


#: Rows of the per-case table `ix run` prints at most (a screenful); `ix report` prints all.
CASES_SHOWN = 20


def cases_that_matter(block: dict[str, Any],
                      flipped: Collection[str] = ()) -> list[dict[str, Any]]:
    """The cases of a subject a reader should look at, most urgent first: wrong, without a
    score (every trial errored), unsettled (a vote that may flip), flipped against the control
    (`flipped`, probe ids)."""
    unsettled = {u["probe_id"] for u in block.get("unsettled") or []}

    def rank(p: dict[str, Any]) -> int | None:
        if p["score"] is not None and not p["correct"]:
            return 0
        if p["score"] is None:
            return 1
        if p["probe_id"] in unsettled:
            return 2
        return 3 if p["probe_id"] in flipped else None

    ranked = [(r, i, p) for i, p in enumerate(block["probe_results"])
              if (r := rank(p)) is not None]
    return [p for _, _, p in sorted(ranked, key=lambda t: (t[0], t[1]))]


def subject_table(block: dict[str, Any], title: str, sensor: str = "activation",
                  cases: list[dict[str, Any]] | None = None) -> Table:
    """One row per case of `block` (only `cases` when given, in that order)."""
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    table.add_column("case")
    table.add_column("expect")
    table.add_column(rate_word(sensor),
                     justify="right")
    table.add_column("correct", justify="center")
    table.add_column("errors", justify="right")
    for p in block["probe_results"] if cases is None else cases:
        if p["score"] is None:
            rate, mark = Text("n/a", style="dim"), Text("-", style="dim")
        else:
            rate = Text(f"{p['score']:.2f} ")
            rate.append(_ci(p.get("score_ci")), style="dim")
            rate.append(f"  {p['passed']}/{p['n']}")
            mark = Text("✓", style="green") if p["correct"] else Text("✗", style="bold red")
        errors = Text(str(p["errors"]), style="red" if p["errors"] else "dim")
        table.add_row(p["probe_id"], _EXPECT.get(p["expectation"], p["expectation"]), rate,
                      mark, errors)
    return table


def _ci(ci: list[float | None] | None) -> str:
    if not ci or ci[0] is None or ci[1] is None:
        return "[n/a]"
    return f"[{ci[0]:.2f}, {ci[1]:.2f}]"


def _estimate(label: str, value: float | None, ci: list[float | None] | None) -> Text:
    text = Text(f"{label} ")
    if value is None:  # undefined (an empty denominator): no estimate, no interval to print
        text.append("n/a")
        return text
    text.append(f"{value:.3f}")
    text.append(f" {_ci(ci)}", style="dim")
    return text


def metrics_text(block: dict[str, Any], sensor: str | None = None) -> Text:
    """A subject's metrics under its case table; `sensor` is the run's first sensor kind
    (a capability sensor's rate is a pass rate, not an activation rate)."""
    if block.get("trials") and block["errors"] >= block["trials"]:  # 0.000s would mislead
        return Text(f"no metrics: all {block['trials']} trials of {block['name']} errored "
                    "(see the errors below)", style="bold red")
    m, i = block["metrics"], block["interpretation"]
    text = Text()
    for label, key in (("precision", "precision"), ("recall", "recall"), ("F1", "f1")):
        text.append_text(_estimate(label, m[key], m.get(f"{key}_ci")))
        text.append("  ")
    text.append(f"(TP {m['tp']} FP {m['fp']} FN {m['fn']} TN {m['tn']})  ", style="dim")
    text.append(i["status"], style=_STATUS_STYLE.get(i["status"], ""))
    trial = block.get("trial_level")
    if trial:
        text.append("\ntrial level: ")
        labels = (("activation rate (must)", "(not)") if rate_word(sensor) == "activation rate"
                  else ("pass rate (must)", "(not)"))
        for label, key in zip(labels, ("must_trigger", "should_not_trigger"), strict=True):
            rate = trial[key]
            if rate["rate"] is None:
                continue
            text.append_text(_estimate(label, rate["rate"], rate["ci"]))
            text.append(f" (clustered SE {rate['se_clustered']:.3f})  ", style="dim")
        correct = trial.get("correct") or {}
        if correct.get("n_families") is not None:  # perturbed cases: a family is one unit
            text.append(f"\n{correct['n_cases']} cases in {correct['n_families']} families "
                        "(variants, paraphrases): every interval counts families",
                        style="dim")
    if block.get("robustness"):
        text.append("\n" + robustness_sentence(block["robustness"]))
    at, hat = block.get("pass_at_k") or {}, block.get("pass_hat_k") or {}
    if at:
        last = max(at, key=int)
        at_ci, hat_ci = block.get("pass_at_k_ci") or {}, block.get("pass_hat_k_ci") or {}
        # pass@ on one line and pass^ on the next: a line of both passes 80 columns
        shown = [("\n", "pass@", "1", at, at_ci), ("  ", "pass@", last, at, at_ci),
                 ("\n", "pass^", last, hat, hat_ci)]
        for sep, label, k, values, cis in shown if last != "1" else shown[::2]:
            text.append(sep)
            text.append_text(_estimate(f"{label}{k}", values.get(k), cis.get(k)))
    text.append_text(diagnostics_text(block))
    sensors = block.get("sensors") or {}
    if len(sensors) > 1:  # every sensor's pass rate (one sensor: the table above shows it)
        for name, r in sensors.items():
            text.append(f"\nsensor {name}: pass rate ")
            text.append(rate_cell(r))
            if r.get("primary"):
                text.append(" (decides the trial)", style="dim")
    if block["errors"]:
        text.append(f"\n{block['errors']} errored trial(s) excluded from the metrics",
                    style="red")
    usage = block.get("usage") or {}
    if usage.get("tokens_input") or usage.get("tokens_output") or usage.get("cost_usd"):
        text.append(f"\nusage: {usage['tokens_input']:,} input + {usage['tokens_output']:,} "
                    f"output tokens, ${usage['cost_usd']:.4f}", style="dim")
    for issue in i["issues"]:
        text.append(f"\n  issue: {issue}", style="yellow")
    for suggestion in i["suggestions"]:
        text.append(f"\n  suggestion: {suggestion}", style="cyan")
    return text


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def diagnostics_text(block: dict[str, Any]) -> Text:
    """Specificity, the between-case ICC with its design effect, and the unsettled cases, one
    short line each (summaries written before them have none of these keys)."""
    text = Text()
    m = block["metrics"]
    if m.get("specificity") is not None:
        text.append("\n")
        text.append_text(_estimate("specificity", m["specificity"], m.get("specificity_ci")))
    parts = []
    for label, key in (("must", "must_trigger"), ("not", "should_not_trigger")):
        r = (block.get("reliability") or {}).get(key) or {}
        if r.get("icc") is not None:
            floored = ", floored: ICC < 0 is noise" if r["icc"] < 0 else ""
            parts.append(f"{label} {r['icc']:.2f} (design effect {r['design_effect']:.2f}"
                         f"{floored})")
    if parts:
        text.append("\nbetween-case ICC: " + ", ".join(parts))
    if "unsettled" in block:
        cases = block["unsettled"]
        text.append("\nunsettled votes (P(flip) > 0.2): ", style="" if cases else "dim")
        shown = ", ".join(f"{u['probe_id']} {u['p_flip']:.2f}" for u in cases[:8])
        text.append(shown + (f", +{len(cases) - 8} more" if len(cases) > 8 else "")
                    if cases else "none", style="yellow" if cases else "dim")
    return text




def goal_text(goal: dict[str, Any], sensor: str | None = None) -> Text:
    """The goal's verdict in words, with the evidence and, if inconclusive, what would settle
    it: the sentences of `ix.report.answer`, as `ix report` prints them."""
    return verdict_text(goal_lines(goal, sensor))


def errors_text(summary: Mapping[str, Any]) -> Text:
    """The block under a run's table when trials errored (`errors_by_kind`, issue 16): a
    count per error kind (and per subject when several), one example message each and what
    to do; empty when none errored."""
    groups = summary.get("errors_by_kind") or []
    text = Text()
    if not groups:
        return text
    total = sum(g["count"] for g in groups)
    text.append(f"{total} errored trial(s), not counted in the metrics:", style="bold red")
    several = len(summary.get("subjects") or []) > 1
    for g in groups:
        text.append(f"\n  {g['kind']}: {g['count']}")
        if several:
            text.append(" (" + ", ".join(f"{name} {n}" for name, n in g["subjects"].items())
                        + ")")
        text.append(f"\n    e.g. {g['example']}", style="dim")
        if g.get("hint"):
            text.append(f"\n    → {g['hint']}", style="yellow")
    text.append("\n")
    return text


def run_cases(summary: Mapping[str, Any], block: dict[str, Any]) -> list[RenderableType]:
    """A subject's per-case table as `ix run` prints it: every case when they fit a screen
    (`CASES_SHOWN`), else only the cases that matter and a line counting the rest and naming
    the command that lists them all (rendering every row of a large run costs seconds)."""
    title = f"{summary['experiment_name']} · {block['name']}"
    sensor = summary.get("sensor", "activation")
    probes = block["probe_results"]
    if len(probes) <= CASES_SHOWN:
        return [subject_table(block, title, sensor)]
    flipped = {f["probe_id"] for c in summary.get("comparisons") or []
               if block["name"] in (c.get("variant"), c.get("control"))
               for f in c.get("flips") or []}
    matter = cases_that_matter(block, flipped)
    order = {p["probe_id"]: i for i, p in enumerate(probes)}
    shown = sorted(matter[:CASES_SHOWN], key=lambda p: order[p["probe_id"]])
    every = f"`ix report {summary['run_id']}` lists every case"
    if not shown:
        return [Text(title, style="italic"),
                Text(f"all {len(probes):,} cases right and settled; {every}", style="dim")]
    if len(matter) > len(shown):
        note = (f"{len(shown)} of the {len(matter):,} wrong, unsettled or flipped cases shown "
                f"({len(probes):,} cases in all)")
    else:
        note = (f"the {len(shown)} wrong, unsettled or flipped cases of {len(probes):,} "
                "shown")
    return [subject_table(block, title, sensor, shown), Text(f"{note}; {every}", style="dim")]


def run_screen(summary: Mapping[str, Any], files: Sequence[str] = (),
               outcomes: Mapping[str, Any] | None = None) -> RenderableType:
    """What `ix run` prints per experiment: the first screen (`ix.report.screen`), with the
    errored trials under the title and the verdict last; `outcomes` (the run's kept section)
    adds at what cost, against the control."""
    errors = errors_text(summary) if summary.get("errors_by_kind") else None
    swept = sweep_report(summary) if summary.get("sweep") else None
    return screen_renderable(screen(summary, swept), sensor=summary.get("sensor"), errors=errors,
                             files=files, extra=[*load_parts(summary.get("load")),
                                                 *_cost(outcomes),
                                                 *pairwise_parts(summary.get("pairwise")),
                                                 *_scorer(summary),
                                                 *_frontier(summary)],
                             sla=sla_parts(summary.get("load")))


def _scorer(summary: Mapping[str, Any]) -> list[RenderableType]:
    """Which scorer decided the cases, when it is not the majority vote (`scorers:`)."""
    spec = summary.get("scorer")
    if not spec or spec.get("kind") == "majority":
        return []
    return [Text(""), Text(f"verdicts by the {scorer_name(spec)} scorer (scorers: in "
                           "experiment.yaml)", style="dim")]


def _frontier(summary: Mapping[str, Any]) -> list[RenderableType]:
    """A curriculum's frontier, a line per subject (`ix.report.case_stats`)."""
    lines = frontier_lines(summary)
    return [Text(""), *(Text(line) for line in lines)] if lines else []


def _cost(outcomes: Mapping[str, Any] | None) -> list[RenderableType]:
    """At what cost, briefly (a line per subject: the screen stays one screen)."""
    lines = brief_lines(outcomes) if outcomes else []
    return [Text(""), layout.Prose(Text("\n".join(lines)), whole=list(LABELS.values()))] \
        if lines else []


def summary_renderable(summary: Mapping[str, Any], files: Sequence[str] = ()) -> RenderableType:
    """`ix run --detail`: every subject's case table and metrics, every comparison table, the
    context and sweep tables; the run's `files` and the goal's verdict last."""
    parts: list[RenderableType] = []
    for block in summary["subjects"]:
        parts += [*run_cases(summary, block), metrics_text(block, summary.get("sensor")),
                  Text("")]
    if summary.get("errors_by_kind"):
        parts.append(errors_text(summary))
    if summary.get("comparisons"):
        parts += [comparison_table(summary), flips_text(summary)]
    parts += context_parts(summary.get("context"))
    parts += sweep_parts(sweep_report(summary))
    parts += load_parts(summary.get("load"))
    footer = Text(f"run {summary['run_id']} · {summary['run_status']}", style="dim")
    failed = summary.get("failed_subjects") or []
    if summary.get("run_status") == "failed" and failed:  # the full reason is on stderr
        footer.append(" (every trial of " + ", ".join(f"{f['subject']} ({f['kind']})"
                                                      for f in failed) + " errored)")
    elif summary.get("run_status") != "completed" and summary.get("stop_reason"):
        footer.append(f" ({summary['stop_reason']})")
    stats = summary.get("statistics")
    if stats:
        prior = stats.get("prior") or "uniform"
        footer.append(f" · intervals: {stats['level']:.0%} credible"
                      + (f", {prior} prior" if prior != "uniform" else "")
                      + " (see statistics.methods in the summary)")
    if summary.get("skipped_cases"):
        footer.append(f" · {len(summary['skipped_cases'])} acceptable case(s) not run")
    parts += [footer, *(Text(f, style="dim") for f in files)]
    if summary.get("goal"):
        parts += [Text(""), *verdict_parts(screen(summary, None), last=True)]
    return Group(*parts)


def verdicts_text(summaries: Sequence[Mapping[str, Any]]) -> Text:
    """After several experiments: one line each, the verdict (or the headline metric)."""
    text = Text("verdicts", style="bold")
    for summary in summaries:
        s = screen(summary)
        text.append(f"\n{s['experiment']}: ")
        word = verdict_word(s)
        text.append(word, style=VERDICT_STYLE.get(word, "bold"))
        goal = summary.get("goal") or {}
        e = goal.get("effect") or {}
        if e.get("diff") is not None:
            text.append(f" ({s['metric_label']} {e['diff']:+.3f} {_ci(e.get('diff_ci'))})")
        elif s.get("headline") and s["headline"]["value"] is not None:
            h = s["headline"]
            text.append(f" ({s['metric_label']} of {h['subject']} {h['value']:.3f} "
                        f"{_ci(h['ci'])})")
    return text


def run_comparison_renderable(result: Mapping[str, Any]) -> RenderableType:
    """`ix compare`: one table per (run, subject) against the baseline, and its verdict."""
    parts: list[RenderableType] = []
    for c in result["comparisons"]:
        if "error" in c:
            parts.append(Text(f"{c['subject']} in {c['run']}: {c['error']}", style="yellow"))
            continue
        table = Table(title=f"{result['experiment']} · {c['subject']}: {c['run']} against "
                            f"{result['baseline']} ({c['cases']} shared cases)",
                      title_justify="left", show_edge=False, pad_edge=False)
        for col in ("metric", "before", "after", "delta [95% CI]", "P(better)"):
            table.add_column(col, justify="left" if col == "metric" else "right",
                             no_wrap=True)
        for metric, m in c["metrics"].items():
            if m.get("not_compared"):  # undefined in a run: no difference, no P(better)
                table.add_row(metric_name(metric, result.get("sensor")), _fmt(m["before"]),
                              _fmt(m["after"]), Text("not compared", style="dim"), "n/a")
                continue
            delta = Text("n/a " if m["diff"] is None else f"{m['diff']:+.3f} ")
            delta.append(_ci(m["diff_ci"]), style="dim")
            table.add_row(metric_name(metric, result.get("sensor")), _fmt(m["before"]),
                          _fmt(m["after"]), delta, _fmt(m["p_better"]))
        parts += [table, *(Text(f"not compared: {m['not_compared']}", style="dim")
                           for m in c["metrics"].values() if m.get("not_compared")),
                  *_sensor_changes(c, result.get("sensor")),
                  flips_text({"comparisons": [{**c, "variant": c["run"]}]}),
                  Text(c["verdict"], style="bold"), Text("")]
    if "config_changes" in result:
        parts.append(config_changes_text(result["config_changes"]))
    return Group(*parts)


def _sensor_changes(c: Mapping[str, Any], sensor: str | None) -> list[RenderableType]:
    """`ix compare`, with more than one sensor (one: its pass rate is already the metrics'):
    each sensor's pass rate in both runs with its interval, and the case-level difference."""
    sensors = c.get("sensors") or {}
    if len(sensors) < 2:
        return []
    table = layout.table(f"pass rate per sensor [95% CI] over the {c['cases']} shared cases "
                         "(first: decides the trial)", "sensor", "before", "after",
                         "delta [95% CI]", right=("before", "after", "delta [95% CI]"))
    for name, m in sensors.items():
        delta = Text("n/a " if m["diff"] is None else f"{m['diff']:+.3f} ")
        delta.append(_ci(m["diff_ci"]), style="dim")
        lo, hi = m["diff_ci"]
        if lo is not None and hi is not None and (lo > 0 or hi < 0):
            delta.stylize("bold")
        table.add_row(name, *(_rate(m[k]) for k in ("rate_before", "rate_after")), delta)
    note = Text("before, after: the pass rate over each run's valid trials, its interval "
                "with cases as clusters; delta: the mean over the "
                "cases of the per-case difference (case-level, as "
                f"{metric_name('activation_rate', sensor)}), unadjusted", style="dim")
    return [table, note]


def _rate(r: Mapping[str, Any]) -> str:
    return "n/a" if r["rate"] is None else f"{r['rate']:.2f} {_ci(r['rate_ci'])}"
