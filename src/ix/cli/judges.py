"""`ix judge check` and `ix label --import`: a run's judges against people's labels (issue 36,
docs/judges.md)."""

from pathlib import Path
from typing import Annotated, Any

import typer

from ix.api import judges as api_judges
from ix.cli.options import SETTINGS, Lab
from ix.cli.options import JsonText as Json
from ix.cli.output import note, out, print_json, warn
from ix.report.tables import table

judge_app = typer.Typer(
    name="judge",
    help="How far a run's judges (llm_judge) can be trusted: their agreement with people's "
         "labels, with intervals, and the pass rate corrected for their errors.",
    **SETTINGS,
)


@judge_app.command("check")
def check(
    run: Annotated[str | None, typer.Argument(
        help="A run (id, prefix or tag) or an experiment (its latest run); default: as "
             "`ix report` chooses.", show_default=False)] = None,
    lab: Lab = None,
    json_out: Json = False,
) -> None:
    """Each labelled judge of a run against the experiment's labels (results/labels.jsonl):
    accuracy, TPR, TNR and Cohen's κ with 95% intervals, the judged pass rate and the true one
    corrected for the judge's errors, and for a judge's dimensions weighted κ and Spearman's ρ.

    Exit codes: 0 shown (also when nothing is labelled yet), 2 bad input."""
    data = api_judges.judge_check(lab, run, warn=warn, note=note)
    if json_out:
        print_json(data)
        return
    out.print(f"judges of run {data['run_id']} ({data['experiment']}) against "
              f"{data['labels']} label(s)", markup=False, soft_wrap=True)
    if not data["judges"]:
        out.print(f"no label yet: `ix label --import FILE --experiment {data['experiment']}` "
                  f"adds some ({data['labels_file']})", markup=False, soft_wrap=True)
        return
    verdicts = [j for j in data["judges"] if j["dimension"] is None]
    if verdicts:
        t = table(None, "judge", "labelled", "accuracy", "TPR", "TNR", "kappa",
                  right=("labelled", "accuracy", "TPR", "TNR", "kappa"))
        for j in verdicts:
            t.add_row(j["sensor"], str(j["labelled"]), *(_cell(j[k]) for k in (
                "accuracy", "tpr", "tnr", "kappa")))
        out.print(t)
        for j in verdicts:
            judged, fixed = j["judged_rate"], j["corrected_rate"]
            said = ("the judge carries no information (TPR + TNR <= 1): its pass rate says "
                    "nothing of the true one" if fixed["uninformative"] else
                    f"true pass rate {_cell(fixed)} given its error rates")
            out.print(f"{j['sensor']}: judged pass rate {_num(judged['value'])} "
                      f"({judged['passed']}/{judged['judged']}); {said}",
                      markup=False, soft_wrap=True)
    scored = [j for j in data["judges"] if j["dimension"] is not None]
    if scored:
        t = table(None, "judge: dimension", "labelled", "weighted kappa", "Spearman rho",
                  right=("labelled", "weighted kappa", "Spearman rho"))
        for j in scored:
            t.add_row(f"{j['sensor']}: {j['dimension']}", str(j["labelled"]),
                      _cell(j["weighted_kappa"]), _cell(j["spearman"]))
        out.print(t)


def label(
    import_: Annotated[Path, typer.Option(
        "--import", help="A CSV (header: probe_id, sensor, value, and optionally run_id, "
                         "subject, trial, dimension, labeller) or JSON Lines file of labels.",
        show_default=False)],
    experiment: Annotated[str, typer.Option(
        "--experiment", "-e", help="The experiment the labels are of.", show_default=False)],
    labeller: Annotated[str | None, typer.Option(
        "--labeller", help="Who labelled, for rows that do not say (default: your login "
                           "name).")] = None,
    lab: Lab = None,
    json_out: Json = False,
) -> None:
    """Add people's labels of judged trials to an experiment's label set
    (results/labels.jsonl), which `ix judge check` reads.

    A label is on one trial (run_id, subject, probe_id, trial) or on a case (probe_id alone);
    `value` is pass/fail, or a number for a judge's `dimension`. Every row is checked before
    any is kept: a bad one is exit 2 naming the file, line and key, and nothing is written."""
    result = api_judges.import_labels(lab, experiment, import_, labeller=labeller)
    if json_out:
        print_json(result)
        return
    out.print(f"added {result['added']} label(s) to {result['labels_file']}", markup=False,
              soft_wrap=True)


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def _cell(e: Any) -> str:
    """`0.85 [0.70, 0.94]`; `n/a` for no estimate."""
    if not e or e.get("value") is None:
        return "n/a"
    lo, hi = e["ci"]
    ends = f" [{lo:.2f}, {hi:.2f}]" if lo is not None and hi is not None else ""
    return f"{e['value']:.2f}{ends}"


def register(app: typer.Typer) -> None:
    """Add `ix judge` and `ix label` to the `ix` application."""
    app.add_typer(judge_app, name="judge")
    app.command("label")(label)


__all__ = ["register"]
