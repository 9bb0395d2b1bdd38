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
            rate = Text(f"{p['score']:.2f}  {p['passed']}/{p['n']}")
            mark = Text("✓", style="green") if p["correct"] else Text("✗", style="bold red")
        errors = Text(str(p["errors"]), style="red" if p["errors"] else "dim")
        table.add_row(p["probe_id"], _EXPECT.get(p["expectation"], p["expectation"]), rate,
                      mark, errors)
    return table


def metrics_text(block: dict[str, Any]) -> Text:
    m, i = block["metrics"], block["interpretation"]
    text = Text()
    text.append(f"precision {m['precision']:.3f}  recall {m['recall']:.3f}  "
                f"F1 {m['f1']:.3f}  ")
    text.append(f"(TP {m['tp']} FP {m['fp']} FN {m['fn']} TN {m['tn']})  ", style="dim")
    text.append(i["status"], style=_STATUS_STYLE.get(i["status"], ""))
    if block["errors"]:
        text.append(f"\n{block['errors']} errored trial(s) excluded from the metrics",
                    style="red")
    for issue in i["issues"]:
        text.append(f"\n  issue: {issue}", style="yellow")
    for suggestion in i["suggestions"]:
        text.append(f"\n  suggestion: {suggestion}", style="cyan")
    return text


def summary_renderable(summary: dict[str, Any]) -> RenderableType:
    parts: list[RenderableType] = []
    for block in summary["subjects"]:
        title = f"{summary['experiment_name']} · {block['name']}"
        parts += [subject_table(block, title), metrics_text(block), Text("")]
    footer = Text(f"run {summary['run_id']} · {summary['run_status']}", style="dim")
    if summary.get("skipped_cases"):
        footer.append(f" · {len(summary['skipped_cases'])} acceptable case(s) not run")
    parts.append(footer)
    return Group(*parts)
