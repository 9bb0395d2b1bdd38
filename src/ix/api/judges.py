"""A run's judges against people (issue 36): `ix judge check` and `ix label --import`.

The labels live in the experiment's `results/labels.jsonl` (`ix.store.labels`); the run's
standing trial lines carry the judges' readings; `ix.eval.judge_agreement` pairs them.
"""

import random
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ix.api.reports import run_trials
from ix.domain.errors import ConfigError, Warn
from ix.eval.judge_agreement import judge_agreement, readings_of
from ix.fs.resolve import find_lab, select_experiments
from ix.query.case_table import case_prompts
from ix.store.audit import identity
from ix.store.labels import (
    add_labels,
    labels_path,
    latest_labels,
    make_label,
    parse_label_file,
    read_labels,
)
from ix.store.layout import RunDir
from ix.store.lookup import report_run
from ix.store.trial_lines import standing

if TYPE_CHECKING:
    from ix.api.schemas import JudgeCheckOutput, LabelsImported


def judge_check(lab: str | Path | None = None, run: str | None = None, *,
                warn: Warn | None = None, note: Warn | None = None,
                cwd: Path | None = None) -> "JudgeCheckOutput":
    """Each labelled judge of a run (`run`: a run, or an experiment's latest, as `ix report`
    chooses) against the experiment's labels: agreement, the corrected pass rate, score
    agreement (docs/judges.md)."""
    lab_path = find_lab(lab, cwd=cwd)
    run_dir = report_run(lab_path, run, cwd=cwd, note=note, warn=warn)
    experiment, run_id = RunDir(run_dir).experiment, RunDir(run_dir).run_id
    labels = latest_labels(read_labels(experiment.path, warn))
    records = standing(run_trials(run_dir, run_id, warn)).values()
    return cast("JudgeCheckOutput", {
        "experiment": experiment.path.name, "run_id": run_id,
        "labels": len(labels), "labels_file": str(experiment.labels),
        "judges": judge_agreement(records, labels)})


def import_labels(lab: str | Path | None, experiment: str, file: Path, *,
                  labeller: str | None = None, cwd: Path | None = None) -> "LabelsImported":
    """Append the labels of a CSV or JSON Lines file to an experiment's label set: every one
    checked first (a `ConfigError` naming the file, line and key, nothing written)."""
    lab_path = find_lab(lab, cwd=cwd)
    paths = select_experiments(lab_path, (experiment,), cwd=cwd)
    if len(paths) != 1:
        raise ConfigError(f"names {len(paths)} experiments; name one", field="--experiment")
    labels = parse_label_file(file, labeller=labeller or identity().get("user"))
    if not labels:
        raise ConfigError("holds no label", file=file)
    added = add_labels(paths[0], labels)
    return {"experiment": paths[0].name, "added": added,
            "labels_file": str(labels_path(paths[0]))}


def label_queue(lab: str | Path | None, run: str, *, sensor: str | None = None,
                sample: int = 20, seed: int = 0, labeller: str | None = None,
                warn: Warn | None = None, note: Warn | None = None,
                cwd: Path | None = None) -> dict[str, Any]:
    """What `ix label RUN` shows: a seeded sample of the run's judged trials that `labeller`
    has not labelled yet (so a second session goes on where the first stopped), each with its
    case's prompt, the answer and the files the subject made, never the judge's verdict."""
    if sample < 1:
        raise ConfigError(f"must be at least 1, got {sample}", field="--sample")
    lab_path = find_lab(lab, cwd=cwd)
    run_dir = report_run(lab_path, run, cwd=cwd, note=note, warn=warn)
    experiment, run_id = RunDir(run_dir).experiment, RunDir(run_dir).run_id
    records = [r for r in standing(run_trials(run_dir, run_id, warn)).values()
               if not r.get("error")]
    names = list(dict.fromkeys(str(x.get("sensor_name")) for r in records
                               for x in readings_of(r) if x.get("sensor_name")))
    if sensor is None:
        if len(names) != 1:
            carried = ", ".join(names) or "no sensor"
            raise ConfigError(f"the run's trials carry readings of {carried}: name the judge "
                              "to label with --sensor", field="--sensor")
        sensor = names[0]
    elif sensor not in names:
        raise ConfigError(f"no reading of {sensor!r} in run {run_id}; its sensors: "
                          f"{', '.join(names) or 'none'}", field="--sensor")
    who = labeller or identity()["user"]
    done = {(x["subject"], x["probe_id"], x["trial"])
            for x in read_labels(experiment.path, warn)
            if x["labeller"] == who and x["sensor"] == sensor and x["run_id"] == run_id
            and x["dimension"] is None}
    todo = [r for r in records if (r.get("subject"), r.get("probe_id"), r.get("trial"))
            not in done]
    random.Random(seed).shuffle(todo)
    prompts = case_prompts(experiment.path)
    items = [{"subject": r.get("subject"), "probe_id": r.get("probe_id"),
              "trial": r.get("trial"), "prompt": prompts.get(str(r.get("probe_id")), ""),
              "answer": str((r.get("observation") or {}).get("content") or ""),
              "outputs": [o.get("path") for o in r.get("outputs") or []
                          if isinstance(o, dict) and not o.get("refused")]}
             for r in todo[:sample]]
    return {"experiment": experiment.path, "run_id": run_id, "sensor": sensor,
            "labeller": who, "labelled_before": len(done), "items": items,
            "labels_file": str(experiment.labels)}


def add_label(experiment: Path, run_id: str, sensor: str, item: dict[str, Any], value: bool,
              labeller: str) -> None:
    """One pass/fail label of one trial, appended at once (a session stopped keeps it)."""
    add_labels(experiment, [make_label({
        "run_id": run_id, "subject": item["subject"], "probe_id": item["probe_id"],
        "trial": item["trial"], "sensor": sensor, "value": value}, labeller=labeller)])


__all__ = ["add_label", "import_labels", "judge_check", "label_queue"]
