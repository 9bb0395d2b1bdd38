"""`ix judge check` and `ix label --import`: a run's judges against people's labels (issue 36,
docs/judges.md)."""

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ix.api import judges as api_judges
from ix.cli.options import SETTINGS, Lab
from ix.cli.options import JsonText as Json
from ix.cli.output import err, note, out, print_json, warn
from ix.domain.errors import ConfigError
from ix.report.answer import interval_text, num_text
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
            out.print(f"{j['sensor']}: judged pass rate {num_text(judged['value'])} "
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
    run: Annotated[str | None, typer.Argument(
        help="The run whose judged trials to label (id, prefix or tag), or an experiment "
             "(its latest run).", show_default=False)] = None,
    sensor: Annotated[str | None, typer.Option(
        "--sensor", help="The judge to label (its rubric's name); needed when the run has "
                         "several sensors.")] = None,
    sample: Annotated[int, typer.Option(
        "--sample", help="How many trials to show, drawn at random (seeded).")] = 20,
    seed: Annotated[int, typer.Option("--seed", help="The draw of the sample.")] = 0,
    import_: Annotated[Path | None, typer.Option(
        "--import", help="Instead: a CSV (header: probe_id, sensor, value, and as needed "
                         "run_id, subject, trial, dimension, labeller) or JSON Lines file of "
                         "labels to add.", show_default=False)] = None,
    experiment: Annotated[str | None, typer.Option(
        "--experiment", "-e", help="With --import: the experiment the labels are of.",
        show_default=False)] = None,
    labeller: Annotated[str | None, typer.Option(
        "--labeller", help="Who labels (default: your login name).")] = None,
    lab: Lab = None,
    json_out: Json = False,
) -> None:
    """Add people's labels of judged trials to an experiment's label set
    (results/labels.jsonl), which `ix judge check` reads.

    With RUN: shows a random sample of the run's judged trials you have not labelled yet —
    the case's prompt, the answer, the files made, never the judge's verdict — and asks
    pass or fail: a line `y` or `n` (`s` skips, `q` or the end of input stops). Each answer
    is saved at once, so a later session goes on where this one stopped; over a pipe, one
    answer a line. With --import FILE --experiment E: a label is on one trial (run_id,
    subject, probe_id, trial) or on a case (probe_id alone); `value` is pass/fail, or a
    number for a judge's `dimension`; every row is checked before any is kept (exit 2 naming
    the file, line and key; nothing written)."""
    if import_ is not None:
        if run is not None or experiment is None:
            raise ConfigError("--import FILE takes --experiment E and no RUN",
                              field="--experiment")
        result = api_judges.import_labels(lab, experiment, import_, labeller=labeller)
        if json_out:
            print_json(result)
            return
        out.print(f"added {result['added']} label(s) to {result['labels_file']}",
                  markup=False, soft_wrap=True)
        return
    if run is None:
        raise ConfigError("name a run to label (ix label RUN), or --import FILE "
                          "--experiment E", field="RUN")
    queue = api_judges.label_queue(lab, run, sensor=sensor, sample=sample, seed=seed,
                                   labeller=labeller, warn=warn, note=note)
    items = queue["items"]
    err.print(f"labelling {queue['sensor']} in run {queue['run_id']} as {queue['labeller']}: "
              f"{len(items)} trial(s) ({queue['labelled_before']} labelled before)",
              markup=False, soft_wrap=True)
    added = 0
    for i, item in enumerate(items, start=1):
        err.print(f"\n[{i}/{len(items)}] case {item['probe_id']} · subject "
                  f"{item['subject']} · trial {item['trial']}", markup=False, soft_wrap=True)
        err.print(f"prompt:\n{item['prompt'].strip()}\nanswer:\n{item['answer'].strip()}",
                  markup=False, soft_wrap=True)
        if item["outputs"]:
            err.print("files made: " + ", ".join(item["outputs"]), markup=False,
                      soft_wrap=True)
        answer = _ask()
        if answer == "q":
            break
        if answer == "s":
            continue
        api_judges.add_label(queue["experiment"], queue["run_id"], queue["sensor"], item,
                             answer == "y", queue["labeller"])
        added += 1
    done = {"experiment": queue["experiment"].name, "added": added,
            "labels_file": queue["labels_file"]}
    if json_out:
        print_json(done)
        return
    out.print(f"added {added} label(s) to {done['labels_file']}", markup=False,
              soft_wrap=True)


def _ask() -> str:
    """`y`, `n`, `s` or `q` from the next line of input (the end of input is `q`); asks
    again on anything else."""
    while True:
        err.print("pass? [y]es / [n]o / [s]kip / [q]uit: ", end="", markup=False)
        line = sys.stdin.readline()
        if not sys.stdin.isatty():  # a scripted answer: shown, so the log reads as a session
            err.print(line.rstrip("\n") if line else "(end of input)", markup=False)
        if not line:
            return "q"
        word = line.strip().lower()[:1]
        if word in ("y", "n", "s", "q"):
            return word
        err.print(f"answer y, n, s or q (got {line.strip()!r})", markup=False)


def _cell(e: Any) -> str:
    """`0.85 [0.70, 0.94]`; `n/a` for no estimate."""
    if not e or e.get("value") is None:
        return "n/a"
    ends = "" if None in e["ci"] else " " + interval_text(e["ci"])
    return num_text(e["value"], 2) + ends


def register(app: typer.Typer) -> None:
    """Add `ix judge` and `ix label` to the `ix` application."""
    app.add_typer(judge_app, name="judge")
    app.command("label")(label)


__all__ = ["register"]
