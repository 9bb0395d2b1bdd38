"""`ix calibrate`: how far a cheap proxy subject stands in for the real one
(`ix.engine.calibrate`; docs/subjects.md, "Proxy subjects")."""

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ix.api.loading import resolve
from ix.api.options import Observer, trial_listener
from ix.engine.calibrate import Settings
from ix.engine.calibrate import calibrate as run_calibration
from ix.engine.optimize import Hooks
from ix.engine.run import Limits
from ix.lab.loader import load_experiment
from ix.store.audit import record

__all__ = ["Settings", "calibrate"]


def calibrate(lab: str | Path | None, experiment: str, settings: Settings = Settings(), *,
              limits: Limits = Limits(), observer: Observer | None = None,
              command: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the subject and its proxy on a seeded sample of the experiment's cases (one
    ordinary run in the experiment's `results/`) and return the agreement: the verdict first,
    then sensitivity, specificity, Cohen's κ, the correlation of per-case rates and Kendall's
    τ of the candidates' order, each with its 95% interval (`ix calibrate --json`)."""
    observer = observer or Observer()
    lab_path, paths = resolve(lab, [experiment])
    loaded = load_experiment(paths[0], lab_path)
    hooks = Hooks(on_plan=observer.on_plan, on_trial=trial_listener(observer),
                  warn=observer.on_warning)
    out = run_calibration(loaded, settings, hooks=hooks, limits=limits,
                          command=None if command is None else list(command))
    record(lab_path, "calibrate", experiment=loaded.experiment.name, run_id=out["run_id"],
           subject=out["subject"], proxy=out["proxy"]["name"], good_enough=out["good_enough"],
           command=None if command is None else list(command))
    return out
