"""Find, load, plan and check experiments without running anything: what `ix validate` and
`ix plan` need, and nothing that runs (`ix.api.experiments` holds the running)."""

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ix.domain.errors import ConfigError, flatten
from ix.engine.plan import Overrides, Plan, build_plan
from ix.engine.probe_agent import AGENT, check_agent
from ix.engine.proxies import check_proxies
from ix.fs.resolve import find_lab, is_experiment, select_experiments
from ix.lab.loader import LoadedExperiment, check_experiment, load_experiment
from ix.runtimes.credentials import credentials

__all__ = ["check", "load", "plan", "resolve", "subject_credentials", "validate"]


def resolve(lab: str | Path | None = None, experiments: Sequence[str] = (),
            cwd: Path | None = None) -> tuple[Path, list[Path]]:
    """The lab and the experiment directories a command means (DESIGN.md §5)."""
    cwd = (cwd or Path.cwd()).resolve()
    if lab is None and experiments:
        first = Path(experiments[0]).expanduser()
        first = first if first.is_absolute() else cwd / first
        if first.is_dir() and is_experiment(first):
            lab = first.resolve().parent
    lab_path = find_lab(lab, cwd=cwd)
    return lab_path, select_experiments(lab_path, experiments, cwd=cwd)


def load(path: Path, lab: Path | None = None) -> LoadedExperiment:
    return load_experiment(path, lab)


def plan(loaded: LoadedExperiment, overrides: Overrides = Overrides()) -> Plan:
    return build_plan(loaded, overrides)


def validate(lab: str | Path | None = None, experiments: Sequence[str] = (),
             overrides: Overrides = Overrides()) -> list[Plan]:
    """Load and plan every chosen experiment without running anything."""
    lab_path, paths = resolve(lab, experiments)
    return [build_plan(load_experiment(p, lab_path), overrides) for p in paths]


def check(path: Path, lab: Path, overrides: Overrides = Overrides()
          ) -> tuple[Plan | None, list[ConfigError]]:
    """Every problem of one experiment (`ix validate`): loading goes past each one, and what
    loads is planned too (runtimes, sensors); the plan when there is none."""
    loaded, problems = check_experiment(path, lab)
    if loaded is None:
        return None, problems
    try:
        planned = build_plan(loaded, overrides)
        probe = loaded.spec.probe or {}
        if probe.get("kind") == AGENT:  # its file is read now: asked only by `ix run`
            check_agent(loaded, {k: v for k, v in probe.items() if k != "kind"})
    except ConfigError as exc:
        return None, flatten([*problems, exc])
    problems = [*problems, *check_proxies(loaded)]  # `proxy:`, read by `ix calibrate`
    return (None, problems) if problems else (planned, [])


def subject_credentials(plan: Plan) -> list[dict[str, Any]]:
    """For each subject of a plan: its runtime kind, the environment variables its
    credentials come from (any one suffices; none for offline runtimes) and whether one is
    set now — what `ix validate` reports before a run spends anything."""
    out = []
    for sp in plan.subjects:
        found = credentials(sp.runtime_spec)
        out.append({"subject": sp.subject.name, "runtime": found.kind,
                    "credentials_env": list(found.env), "credentials_present": found.present})
    return out
