"""`ix report --goal NAME`: a goal of the lab's `goals.yaml`, whose evidence is several
experiments' latest completed runs pooled into one verdict (ix.eval.pooled_goal).

```yaml
# <lab>/goals.yaml
goals:
  skill-helps-everywhere:
    hypothesis: "The skill raises activation in every domain"
    metric: activation_rate          # or pass_rate
    compare: [baseline, with-skill]  # control, treatment: subjects of every experiment
    direction: increase
    min_effect: 0.05
    experiments: [billing, search, notes]
```
"""

from pathlib import Path
from typing import Any

from ix.domain.errors import ConfigError, did_you_mean
from ix.eval.pooled_goal import POOLED_METRICS, ExperimentEvidence, case_pairs, pooled_goal
from ix.fs.resolve import find_lab, select_experiments
from ix.fs.yamlio import load_yaml_file
from ix.lab.schema import GoalsFile, LabGoalSpec, validate
from ix.store.layout import ExperimentDir
from ix.store.lookup import is_completed, latest_run
from ix.store.summaries import read_summary

__all__ = ["GOALS_FILE", "lab_goal", "lab_goals"]

GOALS_FILE = "goals.yaml"


def lab_goals(lab: str | Path | None = None) -> tuple[Path, dict[str, LabGoalSpec]]:
    """The lab and its goals.yaml's goals (none without the file); ConfigError naming the
    file and the field for a bad one."""
    lab_path = find_lab(lab)
    path = lab_path / GOALS_FILE
    if not path.is_file():
        return lab_path, {}
    spec = validate(GoalsFile, load_yaml_file(path), file=path, what="goals file")
    for name, goal in spec.goals.items():
        where = f"goals.{name}"
        if len(goal.compare) != 2 or goal.compare[0] == goal.compare[1]:
            raise ConfigError("compare names two subjects, control then treatment",
                              file=path, field=f"{where}.compare")
        if goal.metric not in POOLED_METRICS:
            raise ConfigError(f"a lab goal pools {' or '.join(POOLED_METRICS)} (a per-case "
                              f"difference), not {goal.metric}", file=path,
                              field=f"{where}.metric")
    return lab_path, dict(spec.goals)


def lab_goal(lab: str | Path | None, name: str) -> dict[str, Any]:
    """The goal `name` of goals.yaml decided on its experiments' latest completed runs."""
    lab_path, goals = lab_goals(lab)
    path = lab_path / GOALS_FILE
    if name not in goals:
        known = ", ".join(goals) or "none"
        raise ConfigError(f"no goal {name!r}{did_you_mean(name, list(goals))} "
                          f"(goals: {known})", file=path, field="--goal")
    goal = goals[name]
    where = f"goals.{name}"
    evidence = []
    for ref in goal.experiments:
        try:
            (folder,) = select_experiments(lab_path, [ref], cwd=lab_path)
        except ConfigError as exc:
            raise ConfigError(exc.message, file=path, field=f"{where}.experiments") from None
        run = latest_run(ExperimentDir.at(folder).results, is_completed)
        if run is None:
            evidence.append(ExperimentEvidence(folder.name, None, [], "no completed run yet"))
            continue
        blocks = {str(b["name"]): b for b in read_summary(run).get("subjects") or []}
        missing = [s for s in goal.compare if s not in blocks]
        if missing:
            raise ConfigError(f"experiment {folder.name}'s latest run {run.name} has no "
                              f"subject {', '.join(missing)} (it has: {', '.join(blocks)})",
                              file=path, field=f"{where}.compare")
        control, treatment = (blocks[s]["probe_results"] for s in goal.compare)
        evidence.append(ExperimentEvidence(folder.name, run.name,
                                           case_pairs(goal.metric, control, treatment)))
    stated = {**goal.as_goal(), "experiments": list(goal.experiments)}
    return {"lab": str(lab_path), "file": str(path),
            **pooled_goal(name, stated, evidence)}
