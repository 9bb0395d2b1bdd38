"""A run's report as the text of one format: what `ix report --format` prints and what a
run's `reporters:` write (`ix.api.reporters`), from one function so that both say the same.

`table` (the console's, plain: no colour, fitted to `width`), `md`, `json`, `html`,
`github`, `junit`.
"""

import io
import json
from collections.abc import Mapping
from typing import Any

from rich.console import Console, RenderableType

from ix.report.github import report_github
from ix.report.junit import report_junit
from ix.report.markdown import report_markdown
from ix.report.tables import fit
from ix.report.terminal import report_renderable

__all__ = ["plain_text", "report_text"]


def plain_text(view: RenderableType, width: int = 160) -> str:
    """A renderable as plain text (no colour, no control codes), as a file holds it."""
    buffer = io.StringIO()
    Console(file=buffer, width=width, no_color=True, highlight=False,
            force_terminal=False).print(fit(view))
    return buffer.getvalue()


def report_text(fmt: str, report: Mapping[str, Any], *, per_case: bool = False) -> str:
    """`report` (`ix report --format json`'s data) as the text of `fmt`."""
    if fmt == "json":
        return json.dumps(report, indent=2, ensure_ascii=False, default=str) + "\n"
    if fmt == "md":
        return report_markdown(report)
    if fmt == "github":
        return report_github(report)
    if fmt == "junit":
        return report_junit(report, per_case=per_case)
    if fmt == "html":
        from ix.report.html import render_report_html  # jinja2 and the charts: html only

        return render_report_html(report)
    return plain_text(report_renderable(report))
