"""`ix report`, `ix leaderboard`, `ix tag`, `ix annotate` (docs/reports.md)."""

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import RenderableType
from rich.text import Text

from ix.api import annotations as api_notes
from ix.api import lab_goals as api_lab_goals
from ix.api import reports as api_reports
from ix.api import sessions as api_sessions
from ix.cli.options import JsonFormat as Json
from ix.cli.options import Lab
from ix.cli.output import diagnostic, err, note, out, print_json, warn
from ix.domain.errors import ConfigError
from ix.report.github import report_github
from ix.report.junit import report_junit
from ix.report.markdown import leaderboards_markdown, report_markdown
from ix.report.outputs import plain_text, report_text
from ix.report.sessions_text import lab_goal_lines, sessions_lines
from ix.report.terminal import leaderboards_renderable, report_renderable

if TYPE_CHECKING:
    from ix.report.schemas import ReportOutput

#: Formats printed as they are (never wrapped: a line break would split a row or a tag).
TEXT_FORMATS = ("md", "github", "junit")

Format = Annotated[str | None, typer.Option(
    "--format", "-f", help="table (default), md (Markdown) or json.", show_default=False)]
Out = Annotated[Path | None, typer.Option(
    "--out", "-o", help="Write the report to this file instead of stdout.",
    show_default=False)]
Metric = Annotated[str | None, typer.Option(
    "--metric", help="Rank on this metric: f1, precision, recall, pass_rate (the correct "
                     "rate; correct_rate is the same), activation_rate (default: the "
                     "experiment's goal metric, else F1 for activation, else the correct "
                     "rate).", show_default=False)]


def _format(fmt: str | None, json_out: bool, allowed: tuple[str, ...] = api_reports.FORMATS) -> str:
    if fmt is not None and fmt not in allowed:
        raise ConfigError(f"unknown format {fmt!r}; allowed: {', '.join(allowed)}",
                          field="--format")
    if json_out and fmt not in (None, "json"):
        raise ConfigError(f"--json asks for JSON but --format asks for {fmt}", field="--format")
    return "json" if json_out else (fmt or "table")


def _check_out(path: Path | None) -> None:
    if path is not None and not path.parent.resolve().is_dir():
        raise ConfigError("no such directory for the output file", file=path, field="--out")


def _emit(fmt: str, data: Mapping[str, Any], renderable: Any, markdown: Any,
          path: Path | None) -> None:
    """Print or write `data` as JSON, Markdown (`markdown`: a function of `data` to text, also
    for the report's other text formats) or a plain-text table."""
    if fmt == "json":
        if path is None:
            print_json(data)
            return
        text = json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n"
    elif fmt in TEXT_FORMATS:
        text = markdown(data)
        if path is None:
            sys.stdout.write(text)  # Markdown is never wrapped: a line break would split a row
            sys.stdout.flush()
            return
    else:
        view: RenderableType = renderable(data)
        if path is None:
            out.print(view)
            return
        text = plain_text(view)
    api_reports.write_report(path, text)  # atomic: no half file
    err.print(f"wrote {path}", highlight=False, soft_wrap=True)


def _write_html(data: "ReportOutput", path: Path | None) -> None:
    """The HTML report to `path`, by default `report.html` in the run's folder (DESIGN.md §2)."""
    target = path or Path(data["run"]["folder"]) / "report.html"
    api_reports.write_report(target, report_text("html", data))
    err.print(f"wrote {target}", highlight=False, soft_wrap=True)


def _text_renderer(fmt: str, per_case: bool) -> Any:
    """The function that writes the report's data as text in `fmt`."""
    if fmt == "junit":
        return lambda data: report_junit(data, per_case=per_case)
    if fmt == "github":
        return report_github
    return report_markdown


def report(
    run: Annotated[str | None, typer.Argument(
        help="A run id (or unique prefix or suffix), a tag, a run folder, or an experiment "
             "(its latest completed run). Default: the latest run of the experiment the "
             "working directory is in, else the lab's latest run.",
        show_default=False, metavar="RUN|EXPERIMENT")] = None,
    lab: Lab = None,
    fmt: Annotated[str | None, typer.Option(
        "--format", "-f", help="table (default), md (Markdown), json, html (one "
                               "self-contained page; default file: the run folder's "
                               "report.html), github (the first screen as GitHub Markdown, "
                               "for a pull request or a job summary) or junit (JUnit XML).",
        show_default=False)] = None,
    out_file: Out = None,
    metric: Metric = None,
    per_case: Annotated[bool, typer.Option(
        "--per-case", help="With --format junit: a test case per case of each subject too "
                           "(failing when its majority vote is wrong).")] = False,
    baseline: Annotated[str | None, typer.Option(
        "--baseline", help="A tag (or run) to compare with: exit 1 when a metric regressed "
                           "(its 95% interval of run − baseline lies below 0).",
        show_default=False)] = None,
    sessions: Annotated[bool, typer.Option(
        "--sessions", help="A longitudinal study (`sessions:`): the sessions done, when the "
                           "next is due, and each subject's trend over time.")] = False,
    goal: Annotated[str | None, typer.Option(
        "--goal", help="A goal of the lab's goals.yaml: one verdict from its experiments' "
                       "latest runs, pooled (`ix ls` lists the goals).",
        show_default=False, metavar="NAME")] = None,
    by: Annotated[list[str] | None, typer.Option(
        "--by", help="Correlate each case's share of right trials with this case property "
                     "(difficulty, prompt_length, history_length, tag:NAME, metadata.KEY): "
                     "Spearman's r with its 95% interval; repeatable.",
        show_default=False)] = None,
    json_out: Json = False,
) -> None:
    """One run's report: summary table, leaderboard, score breakdown per case, failure
    analysis, cost, annotations, and with --baseline the regressions. An experiment's name
    means its latest completed run. --format html writes one offline page with the charts
    (to --out, else the run folder's report.html). --sessions reports a longitudinal study
    over its runs; --goal NAME a goal of the lab's goals.yaml.

    Exit codes: 0 done, 1 a regression against --baseline (or a --goal refuted), 2 bad
    input.
    """
    if sessions or goal is not None:
        for given, option in ((baseline, "--baseline"), (metric, "--metric"),
                              (per_case, "--per-case")):
            if given:
                raise ConfigError(f"{option} is for one run's report, not with "
                                  f"{'--sessions' if sessions else '--goal'}", field=option)
        _study(run, lab, fmt, json_out, out_file, sessions, goal)
        return
    chosen = _format(fmt, json_out, (*api_reports.FORMATS, "html", "github", "junit"))
    if per_case and chosen != "junit":
        raise ConfigError("--per-case is for --format junit", field="--per-case")
    _check_out(out_file)
    data = api_reports.report(lab, run, metric=metric, baseline=baseline, warn=warn,
                              note=note, by=by or ())
    if chosen == "html":
        _write_html(data, out_file)
    else:
        _emit(chosen, data, report_renderable, _text_renderer(chosen, per_case), out_file)
    base = data.get("baseline")
    if base and base["regressed"]:
        found = ", ".join(f"{r['subject']} {r['metric']}" for r in base["regressions"])
        diagnostic("regression", f"against {base['tag']} ({base['run']}): {found}", "bold red")
        raise typer.Exit(1)


def _study(run: str | None, lab: str | None, fmt: str | None, json_out: bool,
           out_file: Path | None, sessions: bool, goal: str | None) -> None:
    """`--sessions` and `--goal`: text or JSON of data that spans several runs."""
    if sessions and goal is not None:
        raise ConfigError("--sessions reports one experiment, --goal a lab goal: choose one",
                          field="--goal")
    if goal is not None and run is not None:
        raise ConfigError("a lab goal names its own experiments: give --goal NAME alone",
                          field="RUN|EXPERIMENT")
    chosen = _format(fmt, json_out, ("table", "json"))
    _check_out(out_file)
    data: Any
    if goal is not None:
        data = api_lab_goals.lab_goal(lab, goal)
        lines = lab_goal_lines(data)
    else:
        data = api_sessions.sessions_report(lab, [run] if run else [])
        lines = [line for block in data for line in [*sessions_lines(block), ""]][:-1]
    text = "\n".join(lines) + "\n"
    _emit(chosen, data, lambda _: Text(text.rstrip("\n")), lambda _: text, out_file)
    if goal is not None and data["verdict"] == "refuted":
        raise typer.Exit(1)


def leaderboard(
    lab: Lab = None,
    experiment: Annotated[list[str] | None, typer.Option(
        "--experiment", "-e", help="Rank this experiment's latest completed run "
                                   "(repeatable). Default: every experiment of the lab.",
        show_default=False)] = None,
    run: Annotated[list[str] | None, typer.Option(
        "--run", "-r", help="Rank this run (id, prefix or tag; repeatable).",
        show_default=False)] = None,
    metric: Metric = None,
    fmt: Format = None,
    out_file: Out = None,
    json_out: Json = False,
) -> None:
    """Subjects ranked per experiment (its latest completed run), with intervals and the
    probability that each rank is right; over several experiments, a pooled board too."""
    chosen = _format(fmt, json_out)
    _check_out(out_file)
    data = api_reports.leaderboard(lab, experiment or (), run or (), metric=metric)
    _emit(chosen, data, leaderboards_renderable, leaderboards_markdown, out_file)


def tag(
    args: Annotated[list[str] | None, typer.Argument(
        help="RUN TAG to tag a run (RUN: id, unique prefix or another tag); TAG with "
             "--delete; nothing (or --list) to list the tags.", show_default=False)] = None,
    lab: Lab = None,
    force: Annotated[bool, typer.Option(
        "--force", help="Move the tag if it already names another run.")] = False,
    delete: Annotated[bool, typer.Option("--delete", "-d", help="Delete the tag.")] = False,
    list_: Annotated[bool, typer.Option("--list", "-l", help="List the lab's tags.")] = False,
    json_out: Json = False,
) -> None:
    """Name a run: `ix tag RUN TAG`. A tag names exactly one run of the lab (like a git tag);
    `--force` moves it, `--delete` removes it; `ix tag` lists them."""
    args = list(args or [])
    if delete:
        if len(args) != 1 or list_:
            raise ConfigError("give exactly one tag to delete: ix tag --delete TAG",
                              field="TAG")
        result = api_notes.delete_tag(lab, args[0])
        if json_out:
            print_json(result)
        else:
            out.print(f"deleted tag {result['tag']} (was run {result['run']})", markup=False)
        return
    if list_ or not args:
        if args:
            raise ConfigError("--list takes no arguments", field="--list")
        tags = api_notes.list_tags(lab)
        if json_out:
            print_json(tags)
        elif not tags:
            out.print("no tags", style="dim")
        else:
            for t in tags:
                out.print(f"{t['tag']:<20} {t['run']}  {t['experiment']}  "
                          f"(by {t['tagged_by']} at {t['tagged_at']})", markup=False,
                          soft_wrap=True)
        return
    if len(args) != 2:
        raise ConfigError("usage: ix tag RUN TAG (or ix tag --delete TAG, ix tag --list)",
                          field="TAG")
    tagged = api_notes.tag_run(lab, args[0], args[1], force=force)
    if json_out:
        print_json(tagged)
    elif tagged["unchanged"]:
        out.print(f"tag {tagged['tag']} already names run {tagged['run']}", markup=False)
    elif tagged["moved_from"]:
        out.print(f"moved tag {tagged['tag']} from run {tagged['moved_from']} to "
                  f"{tagged['run']} ({tagged['experiment']})", markup=False)
    else:
        out.print(f"tagged run {tagged['run']} ({tagged['experiment']}) as {tagged['tag']}",
                  markup=False)


def annotate(
    args: Annotated[list[str], typer.Argument(
        help="RUN [CASE] TEXT: a note on a run, or on one of its cases (RUN: id, prefix or "
             "tag). With --list: RUN.", show_default=False)],
    lab: Lab = None,
    list_: Annotated[bool, typer.Option("--list", "-l",
                                        help="List the run's annotations.")] = False,
    json_out: Json = False,
) -> None:
    """Annotate a run or one of its cases: `ix annotate RUN [CASE] "text"`; shown by
    `ix report`, listed by `ix annotate RUN --list`."""
    if list_:
        if len(args) != 1:
            raise ConfigError("usage: ix annotate RUN --list", field="RUN")
        data = api_notes.list_annotations(lab, args[0], warn)
        if json_out:
            print_json(data)
            return
        if not data["annotations"]:
            out.print(f"run {data['run']} has no annotations", style="dim")
        for a in data["annotations"]:
            where = f" [{a['case']}]" if a.get("case") else ""
            out.print(f"{a.get('at', '')} {a.get('user', '')}{where}: {a['text']}",
                      markup=False, soft_wrap=True)
        return
    if len(args) not in (2, 3):
        raise ConfigError('usage: ix annotate RUN [CASE] "text"', field="TEXT")
    run, case, text = (args[0], None, args[1]) if len(args) == 2 else args
    result = api_notes.annotate(lab, run, text, case=case)
    if json_out:
        print_json(result)
    else:
        where = f" case {case}" if case else ""
        out.print(f"annotated run {result['run']}{where}", markup=False)


def register(app: typer.Typer) -> None:
    """Add the commands to the `ix` application."""
    app.command("report")(report)
    app.command("leaderboard")(leaderboard)
    app.command("tag")(tag)
    app.command("annotate")(annotate)
