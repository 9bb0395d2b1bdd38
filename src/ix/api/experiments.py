"""Find, check, run and list experiments."""

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ix._lazy import preload
from ix.api.executors import executing
from ix.domain.errors import ConfigError
from ix.engine.plan import Overrides, Plan, build_plan
from ix.engine.resume import Continuation, Mode, find_continuation
from ix.engine.run import STATISTICS, Limits, OnTrial, RunResult, run_plan
from ix.lab.audit import record
from ix.lab.importing import refuse_unrunnable_import
from ix.lab.loader import LoadedExperiment, load_experiment
from ix.lab.resolve import find_lab, is_experiment, select_experiments
from ix.lab.resolve import list_experiments as _experiment_dirs
from ix.lab.results import LATEST_SUMMARY
from ix.lab.runs import RUNS_DIR, read_spec


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
    from ix.domain.errors import flatten
    from ix.lab.loader import check_experiment

    loaded, problems = check_experiment(path, lab)
    if loaded is None:
        return None, problems
    try:
        planned = build_plan(loaded, overrides)
    except ConfigError as exc:
        return None, flatten([*problems, exc])
    return (None, problems) if problems else (planned, [])


def run(lab: str | Path | None = None, experiments: Sequence[str] = (),
        overrides: Overrides = Overrides(), *, artifacts: bool = False,
        command: list[str] | None = None, on_plan: Any = None,
        on_trial: OnTrial | None = None, continue_mode: Mode | None = None,
        run_id: str | None = None, limits: Limits = Limits(),
        warn: Callable[[str], None] | None = None,
        cache: str | None = None, executor: str = "local",
        address: str | None = None, strict: bool = False,
        on_design: "OnDesign | None" = None) -> list[RunResult]:
    """Validate every chosen experiment first (so a bad one stops all), then run each.

    A new run's design is checked first (`ix.api.design`): each experiment's warnings go to
    `on_design(plan, warnings)` (else one line each to `warn`); with `strict` any warning
    raises `DesignError` and nothing runs.

    `continue_mode` ("resume" or "retry_failed") continues a run of each experiment — `run_id`,
    or its latest — with the overrides that run was started with. `executor` "ray" runs the
    trials as tasks on the Ray cluster at `address` (None: a private local one).
    """
    preload(*STATISTICS)  # the summary's numpy and scipy, while the experiments load
    lab_path, paths = resolve(lab, experiments)
    jobs: list[tuple[Plan, Continuation | None]] = []
    for path in paths:
        loaded = load_experiment(path, lab_path)
        refuse_unrunnable_import(loaded.spec, loaded.config_file,  # its placeholders (F, §8)
                                 runtime_override=overrides.runtime)
        if continue_mode is None:
            jobs.append((build_plan(loaded, overrides), None))
            continue
        found = find_continuation(loaded.results_dir, run_id, continue_mode, warn)
        plan = build_plan(loaded, Overrides.from_dict(found.spec.get("overrides")))
        _same_experiment(plan, found)
        jobs.append((plan, found))
    _check_designs([plan for plan, cont in jobs if cont is None], strict, on_design, warn)
    with executing(executor, address) as (where, place):
        jobs = [(place(plan), cont) for plan, cont in jobs]
        if cache is not None:  # the cache answers here; only its misses reach the executor
            jobs = [(_cached(plan, lab_path, cache), cont) for plan, cont in jobs]
        results = []
        for plan, cont in jobs:
            if on_plan is not None:
                on_plan(plan)
            result = run_plan(plan, artifacts=artifacts, command=command, on_trial=on_trial,
                              continuation=cont, limits=limits, executor=where, warn=warn)
            results.append(result)
            record(lab_path, "run", experiment=plan.loaded.experiment.name,
                   run_id=result.run_id, status=result.status, trials=result.written,
                   mode=cont.mode if cont is not None else "new", command=command)
            # a signal or a budget stops the invocation; a subject's circuit breaker only
            # its own run
            if result.status == "cancelled" and result.summary.get("stop_cause") != "breaker":
                break
    return results


OnDesign = Callable[[Plan, list[Any]], None]


def _check_designs(plans: Sequence[Plan], strict: bool, on_design: OnDesign | None,
                   warn: Callable[[str], None] | None) -> None:
    """Design warnings of every new run, reported before any runs; `strict` refuses them."""
    from ix.api.design import DesignError, design_warnings

    found = [(plan, design_warnings(plan)) for plan in plans]
    for plan, warnings in found:
        if on_design is not None:
            on_design(plan, warnings)
        elif warn is not None:
            for w in warnings:
                warn(f"{plan.loaded.config_file}: {w.field}: {w.message} [{w.code}]")
    if strict and any(w for _, w in found):
        raise DesignError([(p, w) for p, w in found if w])


def _cached(plan: Plan, lab: Path, mode: str) -> Plan:
    """Every subject's runtime behind the lab's record/replay cache (`--cache`)."""
    from dataclasses import replace

    from ix.engine.cache import check_mode, with_cache
    from ix.lab.cache import ObservationCache

    store = ObservationCache(lab)
    checked = check_mode(mode)
    return replace(plan, subjects=tuple(with_cache(sp, store, checked, plan.redactor)
                                        for sp in plan.subjects))


def _same_experiment(plan: Plan, cont: Continuation) -> None:
    """A run continues only on the cases and subjects it started with."""
    from ix.engine.run import _spec  # the same digest the run recorded

    then = (cont.spec.get("config") or {}).get("cases", {}).get("sha256")
    now = _spec(plan, cont.run_id, datetime.now(UTC), [])["config"]["cases"]["sha256"]
    if then and then != now:
        raise ConfigError(f"the cases changed since run {cont.run_id} started; a continued run "
                          "must run the same cases (start a new run instead)",
                          field=f"--{cont.mode.replace('_', '-')}")
    names_then = [s["name"] for s in (cont.spec.get("config") or {}).get("subjects", [])]
    names_now = [sp.subject.name for sp in plan.subjects]
    if names_then and names_then != names_now:
        raise ConfigError(f"the subjects changed since run {cont.run_id} started "
                          f"({', '.join(names_then)} then, {', '.join(names_now)} now)",
                          field=f"--{cont.mode.replace('_', '-')}")


def dry_run(lab: str | Path | None = None, experiments: Sequence[str] = (),
            overrides: Overrides = Overrides()) -> list[dict[str, Any]]:
    """The full plan of each experiment, nothing executed, nothing written."""
    from ix.runtimes import get_kind
    from ix.runtimes._prices import estimate_cost

    out = []
    for plan in validate(lab, experiments, overrides):
        refuse_unrunnable_import(plan.loaded.spec, plan.loaded.config_file,  # as `run` (F)
                                 runtime_override=overrides.runtime)
        subjects = []
        for sp in plan.subjects:
            trials = len(plan.cases) * plan.trials
            chars = sum(len(c.prompt) for c in plan.cases) * plan.trials
            listing = sum(len(k["name"]) + len(k["description"]) + 4
                          for k in sp.subject.config.get("skills", []))
            model = sp.runtime_spec.get("model")
            # only runtimes that bill tokens get an estimate (lexical, mock, command: None)
            tokens = ((chars + listing * trials) // 4
                      if get_kind(str(sp.runtime_spec.get("kind"))).spends_tokens else None)
            subjects.append({
                "name": sp.subject.name, "runtime": sp.runtime_spec.get("kind"),
                "model": model, "trials": trials,
                "estimated_input_tokens": tokens,
                "estimated_cost_usd": (estimate_cost(model, tokens)
                                       if model and tokens is not None else
                                       None if tokens is None else 0.0),
            })
        out.append({
            "experiment": plan.loaded.experiment.name, "path": str(plan.loaded.path),
            "cases": len(plan.cases), "skipped_acceptable": len(plan.skipped),
            "trials_per_case": ("auto, up to " if plan.adaptive else "") + str(plan.trials),
            "total_trials": plan.total, "concurrency": plan.concurrency,
            "filters": list(plan.overrides.filters), "subjects": subjects,
        })
    return out


@dataclass(frozen=True)
class ExperimentInfo:
    name: str
    path: Path
    cases: dict[str, int]
    subjects: list[str]
    last_run: str | None
    status: str | None
    f1: float | None
    error: str | None = None


def list_experiments(lab: str | Path | None = None) -> tuple[Path, list[ExperimentInfo]]:
    """Every experiment of the lab with its last run; one that fails to load says why."""
    lab_path = find_lab(lab)
    infos = []
    for path in _experiment_dirs(lab_path):
        last_run, status, f1 = _last_run(path / "results")
        try:
            exp = load_experiment(path, lab_path).experiment
        except ConfigError as exc:
            infos.append(ExperimentInfo(path.name, path, {}, [], last_run, status, f1,
                                        error=exc.render()))
            continue
        counts = {e: sum(1 for c in exp.cases if c.expectation == e)
                  for e in ("must_trigger", "should_not_trigger", "acceptable")}
        infos.append(ExperimentInfo(exp.name, path, counts, [s.name for s in exp.subjects],
                                    last_run, status, f1))
    return lab_path, infos


def _last_run(results: Path) -> tuple[str | None, str | None, float | None]:
    runs = results / RUNS_DIR
    if not runs.is_dir():
        return None, None, None
    ids = sorted(p.name for p in runs.iterdir() if p.is_dir())
    if not ids:
        return None, None, None
    last = ids[-1]
    try:
        status = read_spec(runs / last).get("status")
    except ConfigError:
        status = "unreadable"
    f1 = None
    try:
        summary = json.loads((results / LATEST_SUMMARY).read_text(encoding="utf-8"))
        if summary.get("run_id") == last:
            f1 = summary.get("metrics", {}).get("f1")
    except (OSError, ValueError):
        pass
    return last, status, f1


def compare_runs(lab: str | Path | None, run_ids: Sequence[str]) -> dict[str, Any]:
    """Two or more runs of an experiment, each later one against the first."""
    from ix.api.reports import config_changes, resolve_run
    from ix.report.runs import compare_runs as compare

    if len(run_ids) < 2:
        raise ConfigError("give at least two runs to compare (the first is the baseline)",
                          field="RUN")
    lab_path = find_lab(lab)
    summaries = []
    for run_id in run_ids:
        directory = resolve_run(lab_path, run_id)
        path = directory / "summary.json"
        try:
            summaries.append(json.loads(path.read_text(encoding="utf-8")))
        except OSError:
            raise ConfigError("this run has no summary (it is still running, or it died "
                              "before writing one)", file=path) from None
        except ValueError:
            raise ConfigError("not valid JSON", file=path) from None
    result = compare(summaries)
    if not result["comparisons"]:
        raise ConfigError("the runs share no subject by name", field="RUN")
    if all("error" in c for c in result["comparisons"]):
        raise ConfigError("the runs have no case in common", field="RUN")
    result["config_changes"] = config_changes([resolve_run(lab_path, r) for r in run_ids])
    return result


def failure_exit_code(summaries: Sequence[dict[str, Any]]) -> int:
    """The exit code of failed runs (DESIGN.md §5): 2 when every one failed of the lab's
    configuration (a missing key, no skills, a program not found), else 1."""
    from ix.engine.outcome import is_configuration

    return 2 if summaries and all(is_configuration(s.get("failed_subjects") or [])
                                  for s in summaries) else 1


def subject_credentials(plan: Plan) -> list[dict[str, Any]]:
    """For each subject of a plan: its runtime kind, the environment variables its
    credentials come from (any one suffices; none for offline runtimes) and whether one is
    set now — what `ix validate` reports before a run spends anything."""
    from ix.runtimes.credentials import credentials

    out = []
    for sp in plan.subjects:
        found = credentials(sp.runtime_spec)
        out.append({"subject": sp.subject.name, "runtime": found.kind,
                    "credentials_env": list(found.env), "credentials_present": found.present})
    return out
