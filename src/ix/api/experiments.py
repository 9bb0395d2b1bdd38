"""Run, dry-run and list experiments (finding, loading and checking them: `ix.api.loading`,
re-exported here)."""

import asyncio
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ix.api.design import DesignError, design_warnings
from ix.api.executors import executing
from ix.api.imported import refuse_unrunnable_import
from ix.api.listing import ExperimentInfo, list_experiments
from ix.api.loading import check, load, resolve, subject_credentials, validate
from ix.api.options import Observer, RunOptions, trial_listener
from ix.api.reporters import write_reports
from ix.api.reports import (
    compare_runs,  # its old home: `ix.api.experiments.compare_runs`
    keep_sections,
)
from ix.engine.cache import check_mode, with_cache
from ix.engine.load_test import refuse_load_with
from ix.engine.outcome import is_configuration
from ix.engine.plan import Overrides, Plan, build_plan
from ix.engine.probes import GENERATE, drafts, with_probe
from ix.engine.resume import Continuation, continuing, find_continuation
from ix.engine.run import OnTrial, RunResult, arun_plan, run_plan, sweep_block
from ix.lab.context import chars as turn_chars
from ix.lab.loader import LoadedExperiment, load_experiment
from ix.lab.sweep import grid_words
from ix.report.digest import TrialDigest
from ix.runtimes import get_kind
from ix.runtimes.batches import BATCH_DISCOUNT
from ix.runtimes.prices import estimate_cost
from ix.store.audit import record
from ix.store.cache import ObservationCache
from ix.store.layout import ExperimentDir
from ix.store.runs import Ahead, forget_ahead, look_ahead
from ix.store.summaries import warm_checker

if TYPE_CHECKING:  # the output types: for the type checker only (no import cost)
    from ix.api.schemas import DryRunPlan, DryRunSubject

__all__ = ["ExperimentInfo", "arun", "check", "compare_runs", "dry_run", "failure_exit_code",
           "list_experiments", "load", "resolve", "run", "subject_credentials", "validate"]

Job = tuple[Plan, Continuation | None]

#: `run`'s keyword arguments before `RunOptions` and `Observer` (deprecated; still accepted).
_OLD_OPTIONS = ("artifacts", "command", "continue_mode", "run_id", "limits", "cache",
                "executor", "address", "strict")
_OLD_CALLBACKS = ("on_plan", "on_trial", "warn", "on_design")


def run(lab: str | Path | None = None, experiments: Sequence[str] = (),
        overrides: Overrides = Overrides(), *, options: RunOptions | None = None,
        observer: Observer | None = None, **deprecated: Any) -> list[RunResult]:
    """Validate every chosen experiment first (so a bad one stops all), then run each; the
    result of each run started, in order.

    `overrides` choose what runs (trials, seed, runtime, subjects, filters); `options` how
    (`RunOptions`: limits, continuing a run, the cache, the executor, `strict`, ...);
    `observer` hears the design warnings, each plan, each recorded trial and each warning
    (`Observer`). A new run's design is checked first (`ix.api.design`); under
    `options.strict` any warning raises `DesignError` and nothing runs. A run continued
    (`options.continue_mode`) uses the overrides it was started with. A signal or a budget
    stops the invocation (the runs not started are left out); a subject's circuit breaker
    only its own run. `arun` is the same on a running asyncio loop.

    The keyword arguments of earlier versions (`artifacts=`, `on_trial=`, `warn=`, ...)
    still work and emit a `DeprecationWarning`.
    """
    options, observer = _settle(options, observer, deprecated)
    results: list[RunResult] = []
    looked: list[Ahead] = []
    try:
        lab_path, jobs = _prepare(lab, experiments, overrides, options, observer, looked)
        with executing(options.executor, options.address) as (where, place):
            for plan, cont in _placed(jobs, place, lab_path, options.cache):
                observer.on_plan(plan)
                digest = _digest(cont)
                result = run_plan(plan, **_engine_args(options, observer, cont, where,
                                                       digest))
                results.append(result)
                _record(lab_path, plan, result, cont, options, digest, observer.on_warning)
                if _stops_all(result):
                    break
    finally:
        forget_ahead(looked)  # what `_prepare` looked up for a run that did not start
    return results


async def arun(lab: str | Path | None = None, experiments: Sequence[str] = (),
               overrides: Overrides = Overrides(), *, options: RunOptions | None = None,
               observer: Observer | None = None) -> list[RunResult]:
    """`run` on the running asyncio loop, without blocking it: the trials are tasks of this
    loop (the engine is asyncio; their own CPU work shares it, with a turn for the other
    tasks every few trials), and the blocking steps (loading, the design checks, opening
    and closing each run, the summary) run in worker threads. The observer is called on
    this loop's thread. No signal handlers are installed: stop a run with
    `options.limits.stop` (a `threading.Event`: scheduling stops, the trials in flight
    finish) or cancel the awaiting task (the trials in flight are cancelled; either way the
    run is recorded `cancelled` with its completed trials, and `--resume` finishes it).
    """
    options, observer = _settle(options, observer, {})
    observer = _OnLoop(observer, asyncio.get_running_loop())
    results: list[RunResult] = []
    looked: list[Ahead] = []
    try:
        lab_path, jobs = await asyncio.to_thread(_prepare, lab, experiments, overrides,
                                                 options, observer, looked)
        # entered on the loop's thread: Ray's connect wants the main thread (it blocks while
        # it connects; the local executor is instant)
        with executing(options.executor, options.address) as (where, place):
            for plan, cont in _placed(jobs, place, lab_path, options.cache):
                observer.on_plan(plan)
                digest = _digest(cont)
                result = await arun_plan(plan, **_engine_args(options, observer, cont, where,
                                                              digest))
                results.append(result)
                await asyncio.to_thread(_record, lab_path, plan, result, cont, options,
                                        digest, observer.on_warning)
                if _stops_all(result):
                    break
    finally:
        forget_ahead(looked)
    return results


def _prepare(lab: str | Path | None, experiments: Sequence[str], overrides: Overrides,
             options: RunOptions, observer: Observer,
             looked: list[Ahead] | None = None) -> tuple[Path, list[Job]]:
    """Every chosen experiment loaded and planned (or its run to continue found), and the
    designs of the new runs checked — before anything runs. `looked`: where the provenance
    of each new run, found meanwhile (`look_ahead`), is listed for the caller to forget."""
    lab_path, paths = resolve(lab, experiments)
    jobs: list[Job] = []
    for path in paths:
        if options.continue_mode is None and looked is not None:
            looked.append(look_ahead(path))  # found while it loads and is planned
        loaded = load_experiment(path, lab_path)
        refuse_unrunnable_import(loaded.spec, loaded.config_file,  # its placeholders (F, §8)
                                 runtime_override=overrides.runtime)
        if options.continue_mode is None:
            # generated cases: recorded, or generated and recorded
            loaded = with_probe(loaded, overrides.include_drafts)
            _say_drafts(loaded, observer)
            jobs.append((build_plan(loaded, overrides), None))
            continue
        found = find_continuation(ExperimentDir.at(loaded.path).results, options.run_id,
                                  options.continue_mode, observer.on_warning)
        then = Overrides.from_dict(found.spec.get("overrides"))
        plan = continuing(build_plan(with_probe(loaded, then.include_drafts), then), found)
        jobs.append((plan, found))
    for plan, _ in jobs:  # `load:` times its requests here, on live subjects
        refuse_load_with(plan, cache=options.cache, executor=options.executor)
    _check_designs([plan for plan, cont in jobs if cont is None], options.strict, observer)
    return lab_path, jobs


def _placed(jobs: list[Job], place: Callable[[Plan], Plan], lab_path: Path,
            cache: str | None) -> list[Job]:
    """Each plan placed on the executor, behind the cache (whose misses reach the executor)."""
    jobs = [(place(plan), cont) for plan, cont in jobs]
    if cache is not None:
        jobs = [(_cached(plan, lab_path, cache), cont) for plan, cont in jobs]
    return jobs


def _engine_args(options: RunOptions, observer: Observer, cont: Continuation | None,
                 where: dict[str, Any] | None,
                 digest: TrialDigest | None = None) -> dict[str, Any]:
    """The keyword arguments of `run_plan`/`arun_plan` for one run; each trial recorded is
    also fed to `digest` (what `ix report` will read: `ix.api.reports.keep_sections`)."""
    listener = trial_listener(observer)
    on_trial = listener
    if digest is not None:
        feed = digest.add
        on_trial = feed
        if listener is not None:
            heard = listener

            def both(record: dict[str, Any]) -> None:
                feed(record)
                heard(record)

            on_trial = both
    return {"artifacts": options.artifacts,
            "command": None if options.command is None else list(options.command),
            "on_trial": on_trial,
            "continuation": cont, "limits": options.limits, "executor": where,
            "warn": observer.on_warning, "on_batch": observer.on_batch,
            "on_pause": observer.on_pause}


def _digest(cont: Continuation | None) -> TrialDigest | None:
    """What `ix report` will read of a new run (`keep_sections`), fed as its trials come;
    the summary's checker, which `keep_sections` uses at the end, built meanwhile."""
    if cont is not None:
        return None
    warm_checker()
    return TrialDigest(outcomes=False)  # the summary has them (`ix.eval.outcomes`)


def _record(lab_path: Path, plan: Plan, result: RunResult, cont: Continuation | None,
            options: RunOptions, digest: TrialDigest | None = None,
            warn: Callable[[str], None] | None = None) -> None:
    """The run in the lab's audit log, what `ix report` will read beside its summary, and
    the outputs of its `reporters:` (`ix.api.reporters`)."""
    if digest is not None:
        keep_sections(result.run_dir, result.summary, digest, plan.loaded.path)
    write_reports(plan, result, warn)
    record(lab_path, "run", experiment=plan.loaded.experiment.name,
           run_id=result.run_id, status=result.status, trials=result.written,
           mode=cont.mode if cont is not None else "new",
           command=None if options.command is None else list(options.command))


def _stops_all(result: RunResult) -> bool:
    """A signal or a budget stops the invocation; a subject's circuit breaker only its run."""
    return result.status == "cancelled" and result.summary.get("stop_cause") != "breaker"


def _settle(options: RunOptions | None, observer: Observer | None,
            deprecated: dict[str, Any]) -> tuple[RunOptions, Observer]:
    """The options and observer of a call, from the deprecated keywords where given."""
    unknown = sorted(set(deprecated) - {*_OLD_OPTIONS, *_OLD_CALLBACKS})
    if unknown:
        raise TypeError(f"run() got unexpected keyword argument(s) {', '.join(unknown)}")
    if not deprecated:
        return options or RunOptions(), observer or Observer()
    old_options = {k: v for k, v in deprecated.items() if k in _OLD_OPTIONS}
    old_callbacks = {k: v for k, v in deprecated.items() if k in _OLD_CALLBACKS}
    if (old_options and options is not None) or (old_callbacks and observer is not None):
        raise TypeError("give run() either options=/observer= or the deprecated keyword "
                        f"arguments ({', '.join(sorted(deprecated))}), not both")
    warnings.warn(f"ix.api.run({', '.join(f'{k}=' for k in sorted(deprecated))}) is "
                  "deprecated: pass options=RunOptions(...) and observer=Observer subclass",
                  DeprecationWarning, stacklevel=3)
    if old_options:
        options = RunOptions(**old_options)
    if old_callbacks:
        observer = _Callbacks(**old_callbacks)
    return options or RunOptions(), observer or Observer()


class _Callbacks(Observer):
    """The deprecated callbacks of `run` as an observer (a missing one hears nothing)."""

    def __init__(self, on_plan: Callable[[Plan], None] | None = None,
                 on_trial: OnTrial | None = None, warn: Callable[[str], None] | None = None,
                 on_design: "OnDesign | None" = None):
        self._plan, self._design, self._warn = on_plan, on_design, warn
        if on_trial is not None:
            self.on_trial = on_trial  # type: ignore[method-assign,assignment]

    def on_design(self, plan: Plan, warnings: list[Any]) -> None:
        if self._design is not None:
            self._design(plan, warnings)
        else:
            super().on_design(plan, warnings)

    def on_plan(self, plan: Plan) -> None:
        if self._plan is not None:
            self._plan(plan)

    def on_warning(self, message: str) -> None:
        if self._warn is not None:
            self._warn(message)


class _OnLoop(Observer):
    """An observer whose methods always run on `loop`'s thread, called from any thread."""

    def __init__(self, inner: Observer, loop: asyncio.AbstractEventLoop):
        self._inner, self._loop, self._thread = inner, loop, threading.get_ident()
        listener = trial_listener(inner)
        if listener is not None:  # the engine calls it on the loop
            self.on_trial = listener  # type: ignore[method-assign,assignment]

    def _call(self, method: Callable[..., None], *args: Any) -> None:
        if threading.get_ident() == self._thread:
            method(*args)
            return

        async def call() -> None:
            method(*args)
        asyncio.run_coroutine_threadsafe(call(), self._loop).result()

    def on_design(self, plan: Plan, warnings: list[Any]) -> None:
        self._call(self._inner.on_design, plan, warnings)

    def on_plan(self, plan: Plan) -> None:
        self._call(self._inner.on_plan, plan)

    def on_warning(self, message: str) -> None:
        self._call(self._inner.on_warning, message)

    def on_pause(self, run_id: str, paused: bool) -> None:
        self._call(self._inner.on_pause, run_id, paused)


OnDesign = Callable[[Plan, list[Any]], None]


def _say_drafts(loaded: LoadedExperiment, observer: Observer) -> None:
    """Generated cases waiting for review run only when asked: say how many wait."""
    waiting = drafts(loaded.path) if (loaded.spec.probe or {}).get("kind") == GENERATE else []
    if waiting:
        name = loaded.path.name
        observer.on_warning(f"{loaded.config_file}: probe: {len(waiting)} generated draft "
                            f"case(s) wait for review and do not run: `ix cases review "
                            f"{name}` accepts or drops them (`ix run --include-drafts` runs "
                            "them as they are)")


def _check_designs(plans: Sequence[Plan], strict: bool, observer: Observer) -> None:
    """Design warnings of every new run, reported before any runs; `strict` refuses them."""
    found = [(plan, design_warnings(plan)) for plan in plans]
    for plan, said in found:
        observer.on_design(plan, said)
    if strict and any(w for _, w in found):
        raise DesignError([(p, w) for p, w in found if w])


def _cached(plan: Plan, lab: Path, mode: str) -> Plan:
    """Every subject's runtime behind the lab's record/replay cache (`--cache`)."""
    from dataclasses import replace

    store = ObservationCache(lab)
    checked = check_mode(mode)
    return replace(plan, subjects=tuple(
        with_cache(sp, store, checked, plan.redactor, seeding=plan.seeding)
        for sp in plan.subjects))


def dry_run(lab: str | Path | None = None, experiments: Sequence[str] = (),
            overrides: Overrides = Overrides()) -> "list[DryRunPlan]":
    """The full plan of each experiment, nothing executed, nothing written."""
    out: list[DryRunPlan] = []
    for plan in validate(lab, experiments, overrides):
        refuse_unrunnable_import(plan.loaded.spec, plan.loaded.config_file,  # as `run` (F)
                                 runtime_override=overrides.runtime)
        subjects: list[DryRunSubject] = []
        for sp in plan.subjects:
            trials = plan.total // len(plan.subjects)  # `load:`: its requests
            # the prompt, the case's history and the context's prefix before it: all sent
            before = sum(turn_chars(t) for t in sp.context)
            chars = sum(len(c.prompt) + before + sum(turn_chars(t) for t in c.history)
                        for c in plan.cases) * plan.trials
            listing = sum(len(k["name"]) + len(k["description"]) + 4
                          for k in sp.subject.config.get("skills", []))
            model = sp.runtime_spec.get("model")
            # only runtimes that bill tokens get an estimate (lexical, mock, command: None)
            tokens = ((chars + listing * trials) // 4
                      if get_kind(str(sp.runtime_spec.get("kind"))).spends_tokens else None)
            cost = (estimate_cost(model, tokens) if model and tokens is not None else
                    None if tokens is None else 0.0)
            entry: DryRunSubject = {
                "name": sp.subject.name, "runtime": sp.runtime_spec.get("kind"),
                "model": model, "trials": trials,
                "estimated_input_tokens": tokens, "estimated_cost_usd": cost}
            if sp.runtime_spec.get("batch") is True:  # the batch APIs bill half
                entry["batch"] = True
                entry["standard_cost_usd"] = cost
                entry["estimated_cost_usd"] = (None if cost is None
                                             else round(cost * BATCH_DISCOUNT, 6))
            subjects.append(entry)
        row: DryRunPlan = {
            "experiment": plan.loaded.experiment.name, "path": str(plan.loaded.path),
            "cases": len(plan.cases), "skipped_acceptable": len(plan.skipped),
            "trials_per_case": ("auto, up to " if plan.adaptive else "") + str(plan.trials),
            "total_trials": plan.total, "concurrency": plan.concurrency,
            "filters": list(plan.overrides.filters), "subjects": subjects,
        }
        grid = _grid(plan)
        if grid is not None:
            row["grid"] = grid
        out.append(row)
    return out


def _grid(plan: Plan) -> str | None:
    """How `sweep:` and `context:` expanded the subjects, in words; None if neither."""
    parts = []
    sweep = sweep_block(plan)
    if sweep is not None:
        base = sweep["subject"]
        parts.append(f"sweep of {base}: {grid_words(sweep['keys'], len(sweep['ablate']))} = "
                     f"{len(sweep['conditions']) - 1} condition(s) + {base}")
    if plan.loaded.context is not None:
        c = plan.loaded.context
        parts.append(f"context: every subject at {len(c.lengths)} lengths "
                     f"({', '.join(map(str, c.lengths))} {c.unit.replace('_', ' ')} of "
                     f"{c.source})")
    return "; ".join(parts) + f": {len(plan.subjects)} subjects" if parts else None


def failure_exit_code(summaries: Sequence[Mapping[str, Any]]) -> int:
    """The exit code of failed runs (DESIGN.md §5): 2 when every one failed of the lab's
    configuration (a missing key, no skills, a program not found), else 1."""
    return 2 if summaries and all(is_configuration(s.get("failed_subjects") or [])
                                  for s in summaries) else 1
