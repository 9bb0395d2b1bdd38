"""`ix report --format github`: the first screen of a run as GitHub-flavoured Markdown, for a
pull request's comment or a job's step summary (docs/reports.md, docs/scheduling.md).

The Markdown is `ix.report.markdown`'s first screen (the verdict, one line per subject, the
deltas with their intervals, the flipped and wrong cases), under a heading naming the run, and
with `--baseline` the regressions. It keeps within GitHub's limits (a comment holds 65,536
characters, a step summary 1 MiB) by leaving out whole sections from the end, never a value,
and says what it left out and which command shows it.
"""

from collections.abc import Mapping, Sequence
from typing import Any

from ix._version import __version__
from ix.report.markdown import baseline_lines, md_code, md_text, screen_markdown

#: The most characters GitHub keeps in an issue or pull-request comment.
COMMENT_LIMIT = 65_536
#: The most bytes GitHub shows of a job's step summary (`$GITHUB_STEP_SUMMARY`).
STEP_SUMMARY_LIMIT = 1024 * 1024


def report_github(report: Mapping[str, Any], limit: int = COMMENT_LIMIT) -> str:
    """The first screen of `report` (`ix report --format json`'s data) in at most `limit`
    characters (at least the heading and the verdict: those are never left out)."""
    r = report["run"]
    command = f"ix report {r['run_id']}"
    head = [f"## {md_text(r['experiment'])} · run {md_code(r['run_id'])}", "",
            f"Status **{md_text(r['status'] or 'n/a')}** · "
            f"{md_text(r['trials_per_case'])} trial(s) per case"
            + (f" · git {md_code(r['git_commit'])}" if r.get("git_commit") else ""), ""]
    if r.get("reason"):
        head += [f"**{md_text(r['status'])}:** {md_text(r['reason'])}", ""]
    body = screen_markdown(report["screen"], r.get("sensor")) if report.get("screen") else []
    # the screen's own headings go one level down, under the run's
    body = ["#" + line if line.startswith("## ") else line for line in body]
    if report.get("baseline"):
        body += ["", *("#" + line if line.startswith("## ") else line
                       for line in baseline_lines(report["baseline"]))]
    sections = _sections(body)
    foot = [f"<sub>ix {md_text(__version__)} · the whole report: {md_code(command)}</sub>"]
    return fit([*head, *sections[0]], sections[1:], foot, limit, command)


def _sections(lines: Sequence[str]) -> list[list[str]]:
    """`lines` cut at blank lines into blocks, a block of one line (a title: `### Answer`,
    `**Cases that matter**: ...`) kept with the block after it; the first is the verdict."""
    blocks: list[list[str]] = []
    current: list[str] = []
    for line in [*lines, ""]:
        if line.strip():
            current.append(line)
            continue
        if current and blocks and len(blocks[-1]) == 1:
            blocks[-1] += ["", *current]
        elif current:
            blocks.append(current)
        current = []
    return [[*b, ""] for b in blocks] or [[]]


def fit(head: list[str], sections: Sequence[list[str]], foot: list[str], limit: int,
        command: str) -> str:
    """`head`, as many of `sections` as fit in `limit` characters (in order: a section that
    does not fit is left out with all after it) and `foot`, with a line naming what was left
    out and `command`, which shows it."""
    def text(kept: int) -> str:
        dropped = len(sections) - kept
        note = [] if not dropped else [
            f"_{dropped} more section(s) left out to keep within GitHub's limit of "
            f"{limit:,} characters: {md_code(command)} shows them._", ""]
        lines = [*head, *(line for s in sections[:kept] for line in s), *note, *foot]
        return "\n".join(lines).rstrip("\n") + "\n"

    kept = len(sections)
    while kept > 0 and len(text(kept)) > limit:
        kept -= 1
    return text(kept)


def combine(texts: Sequence[str], limit: int = COMMENT_LIMIT, prefix: str = "") -> str:
    """Several reports' Markdown (one per experiment) in one text of at most `limit`
    characters: whole reports in order, and a line counting those left out."""
    parts = [t.strip("\n") for t in texts if t.strip()]
    if not parts:
        parts = ["No report was written (did the run fail before its gates?)."]
    kept = len(parts)
    while True:
        dropped = len(parts) - kept
        note = [] if not dropped else [
            f"_{dropped} more experiment report(s) left out to keep within GitHub's limit of "
            f"{limit:,} characters: the job's step summary and its `ix-reports` artifact "
            "hold them all._"]
        text = (prefix + "\n" if prefix else "") + "\n\n---\n\n".join([*parts[:kept], *note]) \
            + "\n"
        if len(text) <= limit or kept <= 1:
            return text
        kept -= 1
