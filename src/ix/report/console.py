"""Rich renderables for a run's summary: the per-case table and the metrics beneath it."""

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

_STATUS_STYLE = {"excellent": "bold green", "good": "green", "needs_work": "yellow",
                 "poor": "bold red"}
_EXPECT = {"must_trigger": "must", "should_not_trigger": "not", "acceptable": "edge"}


def subject_table(block: dict[str, Any], title: str) -> Table:
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    table.add_column("case")
    table.add_column("expect")
    table.add_column("activation", justify="right")
    table.add_column("correct", justify="center")
    table.add_column("errors", justify="right")
    for p in block["probe_results"]:
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
    text.append("n/a" if value is None else f"{value:.3f}")
    text.append(f" {_ci(ci)}", style="dim")
    return text


def metrics_text(block: dict[str, Any]) -> Text:
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
        for label, key in (("activation on must", "must_trigger"),
                           ("on not", "should_not_trigger")):
            rate = trial[key]
            if rate["rate"] is None:
                continue
            text.append_text(_estimate(label, rate["rate"], rate["ci"]))
            text.append(f" (clustered SE {rate['se_clustered']:.3f})  ", style="dim")
    at, hat = block.get("pass_at_k") or {}, block.get("pass_hat_k") or {}
    if at:
        last = max(at, key=int)
        shown = [f"pass@1 {_fmt(at.get('1'))}", f"pass@{last} {_fmt(at.get(last))}",
                 f"pass^{last} {_fmt(hat.get(last))}"]
        text.append("\n" + "  ".join(shown))
    if block["errors"]:
        text.append(f"\n{block['errors']} errored trial(s) excluded from the metrics",
                    style="red")
    for issue in i["issues"]:
        text.append(f"\n  issue: {issue}", style="yellow")
    for suggestion in i["suggestions"]:
        text.append(f"\n  suggestion: {suggestion}", style="cyan")
    return text


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def summary_renderable(summary: dict[str, Any]) -> RenderableType:
    parts: list[RenderableType] = []
    for block in summary["subjects"]:
        title = f"{summary['experiment_name']} · {block['name']}"
        parts += [subject_table(block, title), metrics_text(block), Text("")]
    footer = Text(f"run {summary['run_id']} · {summary['run_status']}", style="dim")
    stats = summary.get("statistics")
    if stats:
        footer.append(f" · intervals: {stats['level']:.0%} credible (see statistics.methods "
                      "in the summary)")
    if summary.get("skipped_cases"):
        footer.append(f" · {len(summary['skipped_cases'])} acceptable case(s) not run")
    parts.append(footer)
    return Group(*parts)
