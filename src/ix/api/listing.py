"""`ix ls`: the lab's experiments, each with its answer and its last run.

The answer is read from the last run's `summary.json` only — the goal's verdict with the
difference it rests on, or without a goal the control's F1 with its interval — never from the
trial log, and nothing statistical is computed: listing a lab costs one small file per
experiment, however many trials it holds.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ix.api.census import census
from ix.domain.errors import ConfigError
from ix.fs.resolve import find_lab
from ix.fs.resolve import list_experiments as _experiment_dirs
from ix.store.layout import ExperimentDir, RunDir
from ix.store.lookup import latest_run
from ix.store.spec import read_spec
from ix.store.summaries import summary_as_written

if TYPE_CHECKING:
    from ix.api.schemas import LsGoal, LsMetric

__all__ = ["ExperimentInfo", "list_experiments"]


@dataclass(frozen=True)
class ExperimentInfo:
    """One experiment as `ix ls` lists it; `goal` and `headline` come from the summary of
    its last run (None when it has none, or for `goal` when the experiment has no goal)."""

    name: str
    path: Path
    cases: dict[str, int]
    subjects: list[str]
    last_run: str | None
    status: str | None
    f1: float | None
    error: str | None = None
    #: when the last run finished (ISO 8601, UTC), else when it started
    last_run_at: str | None = None
    #: the goal's verdict and the difference it rests on
    goal: "LsGoal | None" = None
    #: the control's F1 with its interval
    headline: "LsMetric | None" = None


def list_experiments(lab: str | Path | None = None) -> tuple[Path, list[ExperimentInfo]]:
    """Every experiment of the lab with its last run; one that fails to load says why."""
    lab_path = find_lab(lab)
    infos = []
    for path, found in census(_experiment_dirs(lab_path), lab_path):
        last = _last_run(ExperimentDir.at(path).results)
        infos.append(ExperimentInfo(found.name, path, found.cases, found.subjects, **last,
                                    error=found.error))
    return lab_path, infos


def _last_run(results: Path) -> dict[str, Any]:
    """The last started run's id, status and time, and its summary's answer."""
    folder = latest_run(results)
    facts: dict[str, Any] = {"last_run": None, "status": None, "f1": None, "last_run_at": None}
    if folder is None:
        return facts
    facts["last_run"] = folder.name
    summary = _summary(folder)
    if summary is not None:  # the run's status and times are in it: spec.yaml is not read
        when = summary.get("finished_at") or summary.get("started_at")
        facts["status"] = summary.get("run_status")
        facts["last_run_at"] = None if when is None else str(when)
        facts["goal"] = _goal(summary.get("goal"))
        facts["headline"] = _headline(summary)
        facts["f1"] = facts["headline"]["value"] if facts["headline"] else None
    if facts["status"] is None:  # still running, or died before its summary
        try:
            spec = read_spec(folder)
            facts["status"] = spec.get("status")
            when = spec.get("finished_at") or spec.get("started_at")
            facts["last_run_at"] = facts["last_run_at"] or (None if when is None else str(when))
        except ConfigError:
            facts["status"] = "unreadable"
    return facts


def _summary(folder: Path) -> Mapping[str, Any] | None:
    """The run's summary as written; None when it has none yet or it does not read (`ix
    report RUN` names what is wrong with it)."""
    try:
        return summary_as_written(RunDir(folder).summary)
    except ConfigError:
        return None


def _goal(goal: Any) -> "LsGoal | None":
    """The goal's verdict and the difference it rests on (treatment − control)."""
    if not isinstance(goal, Mapping):
        return None
    effect = cast(Mapping[str, Any], goal.get("effect") if isinstance(goal.get("effect"),
                                                                      Mapping) else {})
    compare = goal.get("compare")
    verdict = goal.get("verdict")
    return {"verdict": verdict if verdict in ("supported", "refuted", "inconclusive") else None,
            "metric": effect.get("metric") or goal.get("metric"),
            "compare": list(compare) if isinstance(compare, list) else None,
            "diff": _number(effect.get("diff")),
            "diff_ci": _interval(effect.get("diff_ci")),
            "relative": goal.get("relative") is True}


def _headline(summary: Mapping[str, Any]) -> "LsMetric | None":
    """The control's (the first subject's) F1 with its interval."""
    metrics = summary.get("metrics")
    if not isinstance(metrics, Mapping) or "f1" not in metrics:
        return None
    subject = summary.get("subject")
    return {"metric": "f1", "subject": subject if isinstance(subject, str) else None,
            "value": _number(metrics.get("f1")), "ci": _interval(metrics.get("f1_ci"))}


def _number(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


def _interval(ci: Any) -> list[float | None]:
    if isinstance(ci, list) and len(ci) == 2:
        return [_number(ci[0]), _number(ci[1])]
    return [None, None]
