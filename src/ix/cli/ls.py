"""`ix ls`: the lab's experiments, each with its answer and its last run."""

from typing import TYPE_CHECKING

import typer
from rich.text import Text

from ix import api
from ix.api import lab_goals as api_lab_goals
from ix.cli.options import Json, Lab
from ix.cli.output import out, print_json
from ix.domain.errors import ConfigError
from ix.report.answer import METRICS, effect_text, interval_text, metric_name, num_text
from ix.report.outcome_text import label
from ix.report.tables import table

if TYPE_CHECKING:
    from ix.api.listing import ExperimentInfo
    from ix.api.schemas import LsOutput

_COLUMNS = ("experiment", "verdict", "metric [95% CI]", "last run", "status", "when",
            "cases (must/not/edge)", "subjects")


def list_(lab: Lab = None, json_out: Json = False) -> None:
    """List the lab's experiments: each one's verdict (or F1) and last run. The verdict is
    the last run's goal verdict with the goal metric's difference and its interval (without
    a goal, the control's F1 with its interval); the run's id, status and time follow."""
    lab_path, infos = api.list_experiments(lab)
    if json_out:
        listing: LsOutput = {"lab": str(lab_path), "experiments": [
            {"name": i.name, "path": str(i.path), "cases": i.cases, "subjects": i.subjects,
             "last_run": i.last_run, "status": i.status, "f1": i.f1, "error": i.error,
             "last_run_at": i.last_run_at, "goal": i.goal, "headline": i.headline}
            for i in infos]}
        print_json(listing)
        return
    # one row per experiment, keyed by its folder's name (what `ix report NAME` takes); at
    # 80 columns each row becomes a record (ix.report.tables): no value is cut
    errors = any(i.error for i in infos)
    t = table(f"lab {lab_path}", *_COLUMNS, *(("error",) if errors else ()),
              right=("subjects",), prose=("error",))
    for i in infos:
        verdict, metric = _answer(i)
        run = (i.last_run or "never", i.status or "-", _when(i.last_run_at))
        if i.error:
            t.add_row(i.path.name, "", "", *run, "", "", Text(i.error, style="red"))
            continue
        c = i.cases
        t.add_row(i.path.name, verdict, metric, *run,
                  f"{c['must_trigger']}/{c['should_not_trigger']}/{c['acceptable']}",
                  str(len(i.subjects)), *(("",) if errors else ()))
    out.print(t)
    _goals(lab)


def _goals(lab: str | None) -> None:
    """The lab's goals.yaml goals (`ix report --goal NAME` decides one): names only, so
    listing stays one small file per experiment; a bad goals.yaml is said, not fatal."""
    try:
        _, goals = api_lab_goals.lab_goals(lab)
    except ConfigError as exc:
        out.print(Text(exc.render(), style="red"))
        return
    if goals:
        out.print(Text(f"lab goals (`ix report --goal NAME`): {', '.join(goals)}"))


def _answer(info: "ExperimentInfo") -> tuple[Text | str, str]:
    """The verdict word and the number it rests on: the goal's difference with its interval
    (`recall -0.294 [-0.46, -0.02]`), else the control's F1 (`F1 0.667 [0.40, 0.86]`)."""
    if info.last_run is None:
        return "-", "-"
    goal, head = info.goal, info.headline
    if goal is not None:
        word = (goal["verdict"] or "no verdict").upper()
        style = {"SUPPORTED": "bold green", "REFUTED": "bold red"}.get(word, "yellow")
        metric = goal["metric"] or "?"
        diff = (f"{metric_name(metric) if metric in METRICS else label(metric)} "
                + effect_text(metric, goal["diff"], goal["diff_ci"],
                              bool(goal.get("relative"))))
        return Text(word, style=style), diff if goal["diff"] is not None else "-"
    if head is not None:
        return "no goal", f"F1 {num_text(head['value'])} {interval_text(head['ci'])}"
    return "-", "-"


def _when(iso: str | None) -> str:
    """`2026-11-29 05:37` (UTC, to the minute) from the spec's ISO 8601 time."""
    if not iso:
        return "-"
    return iso[:16].replace("T", " ") if len(iso) >= 16 and iso[10] == "T" else iso


def register(app: typer.Typer) -> None:
    """Add the command to the `ix` application."""
    app.command("ls")(list_)
