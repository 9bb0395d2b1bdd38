"""A run's judges against people (issue 36): `ix judge check` and `ix label --import`.

The labels live in the experiment's `results/labels.jsonl` (`ix.store.labels`); the run's
standing trial lines carry the judges' readings; `ix.eval.judge_agreement` pairs them.
"""

from pathlib import Path
from typing import TYPE_CHECKING, cast

from ix.domain.errors import ConfigError, Warn
from ix.eval.judge_agreement import judge_agreement
from ix.fs.resolve import find_lab, select_experiments
from ix.store.audit import identity
from ix.store.labels import (
    add_labels,
    labels_path,
    latest_labels,
    parse_label_file,
    read_labels,
)
from ix.store.layout import RunDir
from ix.store.lookup import report_run
from ix.store.trial_lines import standing
from ix.store.trials import read_trials

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
    experiment = RunDir(run_dir).experiment
    labels = latest_labels(read_labels(experiment.path, warn))
    run_id = RunDir(run_dir).run_id
    lines = (t for t in read_trials(experiment.trials, warn, trials_only=True)
             if t.get("run_id") == run_id)
    records = standing(lines).values()
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


__all__ = ["import_labels", "judge_check"]
