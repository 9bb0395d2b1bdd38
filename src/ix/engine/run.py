"""One run of one experiment: plan -> execute on the Matrix -> record -> aggregate -> summary.

Every completed trial is on disk (flushed) before it is counted, so a crash or Ctrl-C loses
at most the trials in flight. The run's `spec.yaml` says `running` while it is under way and
`completed`, `cancelled` or `failed` at the end, the same value as the summary's `run_status`.
"""

import asyncio
import contextlib
import gc
import gzip
import hashlib
import io
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from ix._lazy import preload
from ix.domain.errors import ConfigError, StorageError, Warn
from ix.domain.redaction import Redactor
from ix.domain.secrets import redact_secrets
from ix.domain.types import Reading
from ix.engine import workspaces
from ix.engine.adaptive import AdaptiveFeed
from ix.engine.curriculum import CURRICULUM, CurriculumFeed
from ix.engine.judged import judges_summary
from ix.engine.load_test import LoadFeed
from ix.engine.outcome import (
    ErrorLog,
    breaker_reason,
    errors_by_kind,
    failed_subjects,
    failure_reason,
    stop_cause,
)
from ix.engine.pairwise import judge_pairs, latest_judgements
from ix.engine.pausing import PauseGate
from ix.engine.pipeline import (
    GIVEN,
    OBSERVATION,
    READING,
    STIMULUS,
    SUBJECT,
    VERDICT,
    SensorFailure,
    TrialOutcome,
    components,
)
from ix.engine.plan import Plan, TrialKey
from ix.engine.probes import GENERATED_BY
from ix.engine.recorded_sensors import recorded_sensors
from ix.engine.resume import (
    ERRORED,
    FAILED,
    PASSED,
    Continuation,
    cases_digest,
    current,
    recorded_seeding,
)
from ix.engine.routes import recorded_routes
from ix.engine.workspaces import OutputRules
from ix.eval.case_gates import gates_block
from ix.eval.frontier import frontier_block
from ix.eval.models import EvalCase, EvalObservation
from ix.eval.outcomes import facts_of, finite, wrong
from ix.eval.pairwise import pairwise_block
from ix.eval.run_summary import summarise_tallies
from ix.eval.schemas import FailedSubjectOut, LooksOut, Summary, SweepCondition, SweepOut
from ix.eval.scorers import DEFAULT as DEFAULT_SCORER
from ix.eval.scoring import Tally
from ix.eval.sequential_goal import judge_look, look_entry, looks_block, rounds, subset_tally
from ix.fs.names import file_part
from ix.fs.paths import inside, open_regular
from ix.fs.storage_faults import HINT
from ix.lab.context import KEY as CONTEXT_KEY
from ix.lab.context import ORIGIN
from ix.lab.sweep import KEY as SWEEP_KEY
from ix.matrix import Artifact, Construct, JsonDirectorySink, Orchestrator, Outcome
from ix.runtimes.batches import Batcher, BatchJournal
from ix.runtimes.judge import judge_names
from ix.runtimes.sdks import required_sdks
from ix.store.layout import ARTIFACTS_DIR, ExperimentDir, RunDir
from ix.store.lookup import is_completed, run_folders
from ix.store.recorder import RunRecorder
from ix.store.runs import check_results, iso, provenance
from ix.store.spec_schema import RunSpec, SpecBatch, SpecCases, SpecGenerated, SpecStatus
from ix.store.trial_lines import invoked_skills
from ix.store.trial_scan import standing_errors
from ix.store.trials import TrialWriter, fsync_policy

OnTrial = Callable[[dict[str, Any]], None]
#: Told when a run pauses (True) or goes on (False): its id and the new state.
OnRunPause = Callable[[str, bool], None]


@dataclass(frozen=True)
class RunResult:
    run_id: str
    status: str
    summary: Summary
    summary_path: Path
    run_dir: Path
    plan: Plan
    written: int

    @property
    def trials_path(self) -> Path:
        """The trial log the run appended to (`results/trials.jsonl` of its experiment)."""
        return RunDir(self.run_dir).experiment.trials


#: What every summary computes with, imported while the trials run. The ix modules of the
#: statistics are imported with this one and take these on first use (`ix._lazy`), so only
#: the libraries are named.
STATISTICS = ("numpy", "scipy.special")


#: What comparing subjects adds: the difference's posterior CDF by quadrature and its
#: quantiles by brentq (~0.5 s to import together, on top of the above).
COMPARISONS = ("scipy.integrate", "scipy.optimize")


def statistics(plan: Plan) -> tuple[str, ...]:
    """The libraries `plan`'s summary needs, to import while its trials run. Never scipy.stats
    (~0.5 s, more than numpy and scipy.special together): comparisons take Student's t from
    scipy.special, and a goal's sizing its tails (`ix.stats.tails`)."""
    return (*STATISTICS, *COMPARISONS) if len(plan.subjects) > 1 else STATISTICS


@dataclass(frozen=True)
class Limits:
    """When to stop scheduling before every planned trial ran (the run is then `cancelled`,
    and `--resume` finishes it), and when to give up on a subject."""

    max_trials: int | None = None         # trials this invocation may run
    max_cost_usd: float | None = None     # spend of this invocation
    time_limit_s: float | None = None     # wall time of this invocation
    max_consecutive_errors: int | None = 50  # the circuit breaker, per subject
    #: Set from any thread to stop scheduling as a first Ctrl-C does (trials in flight
    #: finish, the run ends `cancelled`); how `ix mcp` cancels a run it executes.
    stop: threading.Event | None = None
    #: Released from any thread once per Ctrl-C to deliver (a `threading.Semaphore(0)`): the
    #: run takes each as SIGINT reaching `ix run` (the first stops scheduling, the second
    #: cancels the trials in flight); how a signalled `ix mcp` ends a run it executes.
    interrupts: threading.Semaphore | None = None


#: The default executor: trials run in this process, on its asyncio loop.
LOCAL: dict[str, Any] = {"kind": "local"}

#: After the first Ctrl-C, how long the trials in flight may take to finish.
GRACE_S = 30.0
#: Trials counted into the tallies together (`_execute`): a run's trials interleave the
#: engine's steps, and counting a batch of them in one loop keeps the counting's code in the
#: processor's caches (about 0.5 s of 7.8 at 100k mock trials). As each trial ends, the
#: batch is counted once it holds `COUNT_BATCH` trials or its first is `COUNT_WAIT_S` old
#: (slow trials, whose transcripts may be large, are held one at a time at most); and before
#: any look at the goal, at the end of each round and however the run stops: the summary
#: never lags.
COUNT_BATCH = 64
COUNT_WAIT_S = 0.05


def run_plan(plan: Plan, *, artifacts: bool = False, command: list[str] | None = None,
             on_trial: OnTrial | None = None, continuation: Continuation | None = None,
             limits: Limits = Limits(), executor: dict[str, Any] | None = None,
             warn: Warn | None = None,
             on_batch: Callable[[dict[str, Any]], None] | None = None,
             on_pause: OnRunPause | None = None) -> RunResult:
    """Execute `plan` and write everything it produces under the experiment's `results/`.

    With a `continuation`, the run is an earlier one resumed (or its failed trials retried):
    its recorded trials are counted again and only the others run, under the same run id.
    `executor` says where the trials ran (`spec.yaml` keeps it); None: here, on asyncio.
    `warn` hears of a torn last line the trial writer repaired, `on_batch` of each batch of a
    `batch: true` subject (`Batcher.on_status`), `on_pause` of the run paused or continued
    (`ix.engine.pausing`: `ix pause`, SIGTSTP, SIGCONT). Results that cannot be
    written (a full disk, a read-only folder, a deleted lab) raise `StorageError`, after
    recording the run as failed where that can still be written. The trials run on a new
    asyncio loop, which takes SIGINT/SIGTERM in the main thread; `arun_plan` is the same run
    on the caller's loop.
    """
    steps = _recording(plan, artifacts, command, on_trial, continuation, limits, executor,
                       warn, signals=True, on_batch=on_batch, on_pause=on_pause)
    trials = _open(steps)
    if isinstance(trials, RunResult):
        return trials
    try:
        stop_reason = asyncio.run(trials)
    except BaseException as exc:
        return _finish(steps, exc)
    return _finish(steps, stop_reason)


async def arun_plan(plan: Plan, *, artifacts: bool = False, command: list[str] | None = None,
                    on_trial: OnTrial | None = None,
                    continuation: Continuation | None = None, limits: Limits = Limits(),
                    executor: dict[str, Any] | None = None,
                    warn: Warn | None = None,
                    on_batch: Callable[[dict[str, Any]], None] | None = None,
                    on_pause: OnRunPause | None = None) -> RunResult:
    """`run_plan` on the running asyncio loop: the trials are a task of the caller's loop;
    opening and closing the run (file writes, the summary's statistics) run in a worker
    thread, so the loop never waits on them. No signal handlers are installed (the loop is
    the caller's): stop a run with `Limits.stop` or `Limits.interrupts`. Cancelling the
    awaiting task cancels the trials in flight, records the run `cancelled` with every
    completed trial kept, and then lets the cancellation through.
    """
    steps = _recording(plan, artifacts, command, on_trial, continuation, limits, executor,
                       warn, signals=False, on_batch=on_batch, on_pause=on_pause)
    trials = await asyncio.to_thread(_open, steps)
    if isinstance(trials, RunResult):
        return trials
    # its own task: an interrupt's second Ctrl-C cancels the trials, not the caller
    task = asyncio.ensure_future(trials)
    try:
        stop_reason = await task
    except BaseException as exc:
        if not task.done():  # the caller was cancelled: the trials are cancelled with it
            task.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.shield(task)
        result = await asyncio.to_thread(_finish, steps, exc)
        current = asyncio.current_task()
        if isinstance(exc, asyncio.CancelledError) and current is not None \
                and current.cancelling():
            raise
        return result
    return await asyncio.to_thread(_finish, steps, stop_reason)


def _open(steps: Generator[Any, str | None, RunResult]) -> Any:
    """Open the run: the coroutine of its trials (or its result, when it ended opening)."""
    try:
        return next(steps)
    except StopIteration as done:
        return done.value


def _finish(steps: Generator[Any, str | None, RunResult],
            ended: str | BaseException | None) -> RunResult:
    """Hand the trials' end (why they stopped, or what they raised) to the recording."""
    try:
        if isinstance(ended, BaseException):
            steps.throw(ended)
        else:
            steps.send(ended)
    except StopIteration as done:
        result: RunResult = done.value
        return result
    raise RuntimeError("the run recording yielded twice")  # pragma: no cover


def _recording(plan: Plan, artifacts: bool, command: list[str] | None,
               on_trial: OnTrial | None, continuation: Continuation | None, limits: Limits,
               executor: dict[str, Any] | None, warn: Warn | None,
               signals: bool, on_batch: Callable[[dict[str, Any]], None] | None = None,
               on_pause: OnRunPause | None = None,
               ) -> Generator[Any, str | None, RunResult]:
    """One run, opened and closed around its trials: yields the coroutine that runs them
    and is sent why they stopped (or thrown what they raised); returns the `RunResult`."""
    loading = preload(*required_sdks(), *statistics(plan))  # the SDKs: the first trial's
    if plan.load is not None:  # nothing may import in the background while requests are timed
        loading.join()
    loaded = plan.loaded
    place = ExperimentDir.at(loaded.path)
    fsync = fsync_policy()
    # a symlink, FIFO or folder where the run writes is refused before anything is written
    check_results(place.results, continuation.run_id if continuation else None)
    now = datetime.now(UTC)
    scorer = plan.scorers[0] if plan.scorers else None  # asked once the trials are in
    tallies = {sp.subject.name: Tally(plan.cases, judges=judge_names(sp.sensors),
                                      scorer=scorer)
               for sp in plan.subjects}
    kept: str | None = None  # a completed run stays completed, whatever becomes of a resume
    if continuation is None:
        started = now
        specs: dict[str, RunSpec] = {}

        def spec_for(new_id: str) -> RunSpec:
            specs[new_id] = {**_spec(plan, new_id, started, command),
                             "executor": executor or LOCAL}
            return specs[new_id]

        try:
            recorder = RunRecorder.start(place.results, started, spec_for)
        except OSError as exc:
            raise _storage_error(exc, f"the run could not start; {_NOTHING}") from None
        run_id, directory = recorder.run_id, recorder.run.path
        spec = specs[run_id]
    else:
        run_id = continuation.run_id
        directory = place.run(run_id).path
        _same_seeding(plan, continuation)
        try:
            recorder = RunRecorder.reopen(place.results, run_id)
        except OSError as exc:
            raise _storage_error(exc, f"run {run_id} could not continue; "
                                      f"{_NOTHING}") from None
        try:
            continuation = current(continuation, directory, place.results)
            spec = cast(RunSpec, dict(continuation.spec))
            kept = "completed" if spec.get("status") == "completed" else None
            started = _parse_time(spec.get("started_at")) or now
            spec["continued"] = [*spec.get("continued", []),
                                 {"mode": continuation.mode, "at": iso(now),
                                  "command": command if command is not None else list(sys.argv),
                                  "executor": executor or LOCAL}]
            _preload(tallies, continuation, plan)
            # which skill took each recorded trial's prompt (the summary's routing)
            recorded_routes(place.trials, continuation, tallies,
                            {c.id for c in plan.cases})
            # every sensor's readings (the summary's `sensors`)
            recorded_sensors(place.trials, continuation, tallies,
                             {c.id for c in plan.cases})
            spec["trials_written"] = continuation.recorded
            recorder.write_spec({**spec, "status": "running"})
        except OSError as exc:
            recorder.release()
            raise _storage_error(exc, f"run {run_id} could not continue; "
                                      f"{_NOTHING}") from None
        except BaseException:
            recorder.release()
            raise
    batchers = _batchers(plan, directory, spec, recorder, on_batch, warn)
    stopped: dict[str, dict[str, str]] = {}  # trials: auto — why each case stopped
    looked: list[dict[str, Any]] = []         # stop: goal — each look at the goal
    load = LoadFeed(plan, plan.load) if plan.load is not None else None  # `load:`'s sender
    broken: dict[str, str] = {}               # subjects stopped by the circuit breaker
    errlog = ErrorLog()                       # errored trials by subject and kind
    judged: list[dict[str, Any]] = []         # the pairwise judge's judgements that stand
    status, stop_reason = "failed", None
    reason: str | None = None                 # why the run failed, in words
    fault: OSError | None = None              # the results could not be written
    # Everything alive now (modules, the plan, the cases) lives for the whole run: keep the
    # cyclic garbage collector from re-scanning it on every collection of per-trial garbage.
    gc.freeze()
    try:
        writer = recorder.open_log(fsync=fsync, warn=warn)
        if continuation is not None and continuation.keeps(ERRORED):
            _earlier_errors(place.trials, continuation, errlog, tallies)
        trials = _execute(plan, run_id, writer, tallies, on_trial, artifacts, stopped,
                          continuation, limits, broken, errlog, signals, load, batchers, warn,
                          on_pause, looked)
        if plan.pairwise is not None:
            trials = _then_pairs(trials, plan, run_id, directory, place.trials, judged,
                                 continuation is not None and continuation.mode != "resume",
                                 warn)
        stop_reason = yield trials
        status = "completed" if stop_reason is None else "cancelled"
    except (KeyboardInterrupt, asyncio.CancelledError):
        status, stop_reason = "cancelled", ("interrupted (SIGINT or SIGTERM); trials in "
                                            "flight were cancelled")
    except OSError as exc:  # a full disk, a read-only folder, a deleted lab
        fault, stop_reason = exc, f"the results could not be written: {_reason(exc)}"
    finally:
        # So, too, does what the trials left (the tallies, the report's digest) until the run
        # is summarised and recorded: the summary of a large run makes ~10^5 objects, whose
        # collections would otherwise walk it all again (~70 ms at 1,000 cases).
        gc.freeze()
        for batcher in batchers:
            batcher.close()  # the batches go on at the provider; `--resume` collects them
        written = recorder.written
        try:
            recorder.close_log()
        except OSError as exc:
            if fault is None:
                fault, status = exc, "failed"
                stop_reason = f"the trial log could not be synced to disk: {_reason(exc)}"
        finished = datetime.now(UTC)
        trials_written = int(spec.get("trials_written") or 0) + written
        runtimes = {sp.subject.name: sp.runtime_spec for sp in plan.subjects}
        failed: list[FailedSubjectOut] = []
        if fault is not None:
            reason = stop_reason
        else:
            status, stop_reason, reason, failed = _outcome(status, stop_reason, broken,
                                                           tallies, errlog, runtimes)
        try:
            summary = _summarise(plan, tallies, run_id, kept or status, started, finished,
                                 stopped, looked)
            summary["stop_reason"] = stop_reason
            if "looks" in summary and stop_reason:
                summary["looks"]["stopped"] = f"stopped before the goal was settled: {stop_reason}"
            summary["stop_cause"] = stop_cause(stop_reason) if status == "cancelled" else None
            summary["reason"] = reason
            summary["failed_subjects"] = failed
            summary["errors_by_kind"] = errors_by_kind(errlog, runtimes)
            summary["circuit_breaker"] = broken or None
            if plan.gates:
                summary["gates"] = gates_block(
                    plan.gates, summary["subjects"], summary["statistics"]["level"],
                    str(summary["statistics"].get("prior") or "uniform"))
            judged_by = judges_summary(plan, place.trials, run_id,
                                       summary["statistics"]["level"], warn)
            if judged_by is not None:
                summary["judges"] = judged_by
            if plan.pairwise is not None:
                summary["pairwise"] = pairwise_block(
                    judged, plan.subjects[0].subject.name,
                    [sp.subject.name for sp in plan.subjects[1:]], plan.pairwise.name,
                    plan.pairwise.swap, summary["statistics"]["level"])
            if load is not None:
                listed = plan.loaded.spec.sensors
                summary["load"] = load.block(listed or [{"kind": plan.loaded.experiment.sensor,
                                                         **plan.loaded.experiment.sensor_options}],
                                             listed=bool(listed))
            summary_path = recorder.finish(summary, {
                **spec, "status": cast(SpecStatus, kept or status),
                "finished_at": iso(finished), "stop_reason": stop_reason,
                "stop_cause": summary["stop_cause"], "reason": reason,
                "observed": {name: sorted(t.versions)
                             for name, t in tallies.items() if t.versions},
                "trials_written": trials_written}, finished)
        except BaseException as exc:
            # the trials are safe on disk; the run folder must not claim to be running
            recorder.abandon({**spec, "status": cast(SpecStatus, kept or "failed"),
                              "finished_at": iso(finished), "stop_reason": stop_reason,
                              "reason": reason or stop_reason,
                              "trials_written": trials_written})
            recorder.release()
            if isinstance(exc, OSError):
                raise _storage_error(fault or exc,
                                     _stopped(run_id, written, fault or exc, False)) from None
            raise
        recorder.release()
    if fault is not None:
        raise _storage_error(fault, _stopped(run_id, written, fault, True, kept or "failed"))
    return RunResult(run_id, status, summary, summary_path, directory, plan, written)


async def _then_pairs(trials: Any, plan: Plan, run_id: str, directory: Path, log: Path,
                      judged: list[dict[str, Any]], retry: bool,
                      warn: Warn | None) -> str | None:
    """The trials, then the pairwise judge's pass over them (`ix.engine.pairwise`), unless
    the user stopped the run (then the judgements an earlier session made): its judgements
    go to `judged`."""
    stop: str | None = await trials
    if not (stop or "").startswith("interrupted"):
        await judge_pairs(plan, run_id, directory, log, judged, retry, warn)
    elif plan.pairwise is not None:
        judged.extend(latest_judgements(directory, warn))
    return stop


def _batchers(plan: Plan, directory: Path, spec: RunSpec, recorder: RunRecorder,
              on_batch: Callable[[dict[str, Any]], None] | None,
              warn: Warn | None) -> list[Batcher]:
    """The `batch: true` runtimes of the run, each given the run's batch journal (read and
    appended never through a symlink; `warn` hears of the lines it skips); every batch
    created is added to `spec.yaml` at once (`batches`)."""
    found = [b for sp in plan.subjects if (b := getattr(sp.runtime, "batcher", None))]
    if not found:
        return []

    def created(entry: dict[str, Any]) -> None:
        spec.setdefault("batches", []).append(cast(SpecBatch, entry))
        recorder.write_spec({**spec, "status": "running"})

    journal = BatchJournal.open(RunDir(directory).batches, created, opener=open_regular,
                                warn=warn)
    for batcher in found:
        batcher.attach(journal)
        if on_batch is not None:
            batcher.on_status = on_batch
    return found


def _outcome(status: str, stop_reason: str | None, broken: dict[str, str],
             tallies: dict[str, Tally], errlog: ErrorLog,
             runtimes: dict[str, dict[str, Any]]
             ) -> tuple[str, str | None, str | None, list[FailedSubjectOut]]:
    """The run's final status, `stop_reason`, `reason` and failed subjects (DESIGN.md §8).

    A subject every trial of which errored fails the run (unless a signal stopped it: the
    user asked); else a circuit breaker that stopped a subject cancels it, as a budget does.
    """
    if status == "completed" and broken:
        status, stop_reason = "cancelled", breaker_reason(broken)
    failed = failed_subjects({name: (t.trials, t.errors) for name, t in tallies.items()},
                             errlog, runtimes)
    if not failed or (status == "cancelled" and stop_cause(stop_reason) == "signal"):
        return status, stop_reason, None, []
    return "failed", stop_reason, failure_reason(failed), failed


def _earlier_errors(trials: Path, continuation: Continuation, errlog: ErrorLog,
                    tallies: dict[str, Tally]) -> None:
    """The kinds and messages of a resumed run's errored trials that stand (its state keeps
    only their count): read from the run's errored lines of the log."""
    if not any(t.errors for t in tallies.values()):
        return
    for (subject, probe_id, trial), (kind, message) in standing_errors(
            trials, continuation.run_id).items():
        codes = continuation.state.codes.get((subject, probe_id))
        if subject in tallies and codes is not None and trial < len(codes) \
                and codes[trial] == ERRORED:
            errlog.add(subject, kind, message)


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _stopped(run_id: str, written: int, exc: OSError, summarised: bool,
             recorded: str = "failed") -> str:
    """What became of a run whose results could not be written (`recorded`: its status)."""
    if isinstance(exc, FileNotFoundError):  # the lab, or its results, deleted under the run
        return f"run {run_id} stopped (its results are gone)"
    kept = f"the {written} trials it wrote are kept"
    then = "Make room or fix the folder's permissions, then `ix run --resume` finishes it"
    if summarised:
        return f"run {run_id} stopped and is recorded as {recorded}; {kept}. {then}"
    return f"run {run_id} stopped; {kept}, but its summary could not be written. {then}"


#: What a run that stopped before writing anything says, and what to do about it.
_NOTHING = f"nothing was written. {HINT}"


def _storage_error(exc: OSError, consequence: str) -> StorageError:
    """The one-line error for results that could not be written: the file, why, and what
    became of the run."""
    return StorageError(f"{_reason(exc)}; {consequence}", file=exc.filename)


def _summarise(plan: Plan, tallies: dict[str, Tally], run_id: str, status: str,
               started: datetime, finished: datetime,
               stopped: dict[str, dict[str, str]],
               looked: list[dict[str, Any]] | None = None) -> Summary:
    """Aggregate the tallies into the summary: blocks, comparisons, the goal's verdict.
    Under `stop: goal` (`plan.looks`), the cases of the rounds that ran, the goal judged at
    the looks' credibility, and the `looks` block."""
    preload(*statistics(plan)).join()  # what `run_plan` started importing: finished, not raced
    exp = plan.loaded.experiment
    taught = stopped.get(CURRICULUM)
    goal, cases = exp.goal, plan.cases
    if plan.looks and goal is not None:
        ran = {c.id for t in tallies.values() for c in plan.cases
               if t.counts[c.id].valid or t.counts[c.id].errors}
        cases = tuple(c for c in plan.cases if c.id in ran) or plan.cases
        tallies = {name: subset_tally(t, cases) for name, t in tallies.items()}
        looks = looks_block(goal, len(rounds(plan.cases, plan.seed, plan.looks)), looked or [],
                            sum(t.trials for t in tallies.values()), plan.total, None)
        goal = {**goal, "credibility": looks["credibility"]}
    try:  # a scorer plugin whose verdict() raises: exit 2 naming it, the trials kept
        summary = summarise_tallies(
            experiment_name=exp.name, run_id=run_id, run_status=status,
            subjects=[(sp.subject.name, sp.subject.description) for sp in plan.subjects],
            tallies=tallies, cases=cases, goal=goal,
            # `load:`: a case's requests are not repeated trials; pass@k for k = 1 only
            trials_per_case=1 if plan.load is not None else plan.trials,
            stopped=stopped if plan.adaptive else None, prior=exp.prior,
            targets=_targets(plan), context=_context(plan), sweep=sweep_block(plan),
            runtimes={sp.subject.name: str(sp.runtime_spec.get("kind")) for sp in plan.subjects},
            also=list(zip((plan.loaded.spec.scorers or [])[1:], plan.scorers[1:], strict=True)),
            info={"sensor": (plan.loaded.spec.sensors or [{"kind": exp.sensor}])[0]["kind"],
                  "seed": plan.seed, "trials_per_case": plan.trials,
                  "trials_mode": ({"mode": "auto", "min_trials": plan.min_trials,
                                   "max_trials": plan.trials, "credibility": plan.credibility}
                                  if plan.adaptive else {"mode": "fixed"}),
                  "started_at": iso(started), "finished_at": iso(finished),
                  "skipped_cases": [c.id for c in plan.skipped],
                  "scorer": dict((plan.loaded.spec.scorers or [DEFAULT_SCORER])[0])},
        )
    except ConfigError as exc:
        raise exc.at(plan.loaded.config_file) from None
    if plan.looks and exp.goal is not None:
        summary["looks"] = cast(LooksOut, looks)
    if plan.curriculum is not None:
        summary["frontier"] = frontier_block(plan.curriculum, plan.cases, tallies,
                                             taught or {})
    return summary


def _context(plan: Plan) -> dict[str, Any] | None:
    """What the summary's `context` block needs of an experiment with `context:`."""
    context = plan.loaded.context
    if context is None:
        return None
    of = {sp.subject.name: [sp.subject.config[CONTEXT_KEY]["of"],
                            sp.subject.config[CONTEXT_KEY]["length"]]
          for sp in plan.subjects if CONTEXT_KEY in sp.subject.config}
    return {"prefix": context.source, "unit": context.unit, "lengths": list(context.lengths),
            "of": of}


def sweep_block(plan: Plan) -> SweepOut | None:
    """The summary's `sweep` block: the grid of the first subject's conditions (each at
    every context length too, when the experiment has both)."""
    sweep = plan.loaded.spec.sweep
    if sweep is None:
        return None
    first = plan.loaded.experiment.subjects[0]  # the control: the subject swept, as written
    base = first.config.get(ORIGIN, first.name)
    conditions: list[SweepCondition] = []
    for sp in plan.subjects:
        config = sp.subject.config
        if config.get(ORIGIN, sp.subject.name) != base:
            continue
        # with `context:` too, a condition is the subject its lengths were expanded from
        name = (config.get(CONTEXT_KEY) or {}).get("of", sp.subject.name)
        if any(c["subject"] == name for c in conditions):
            continue
        swept = config.get(SWEEP_KEY) or {}
        conditions.append({"subject": name, "values": dict(swept.get("values") or {}),
                           "without": swept.get("without")})
    skills = [s["name"] for s in first.config.get("skills") or []]
    return {"subject": base,
            "keys": {k: list(v) for k, v in sweep.items() if k != "ablate"},
            "ablate": skills if sweep.get("ablate") == "skills" else [],
            "conditions": conditions}


def _targets(plan: Plan) -> dict[str, str] | None:
    """Each subject's skill under test, when the primary sensor reads activation (then the
    summary says which skill took each prompt)."""
    sensors = plan.loaded.spec.sensors or [{"kind": plan.loaded.experiment.sensor}]
    if sensors[0].get("kind") != "activation":
        return None
    return {sp.subject.name: sp.target_skill for sp in plan.subjects}


def _preload(tallies: dict[str, Tally], continuation: Continuation, plan: Plan) -> None:
    """Count the recorded trials that stand, as if they had just run, and what was spent.

    Counted a case at a time from its outcome bytes (what `Tally.add` would do for each
    trial, in a few C-speed calls), not a trial at a time: a million trials take
    milliseconds.
    """
    _same_rule(plan, continuation)
    case_ids = {c.id for c in plan.cases}
    errors_stand = continuation.keeps(ERRORED)
    for (subject, probe_id), codes in continuation.state.codes.items():
        tally = tallies.get(subject)
        if tally is None or probe_id not in case_ids:
            continue
        passed, failed = codes.count(PASSED), codes.count(FAILED)
        errors = codes.count(ERRORED) if errors_stand else 0
        counts = tally.counts[probe_id]
        counts.valid += passed + failed
        counts.passed += passed
        counts.errors += errors
        if passed + failed:
            # bit t of `valid_bits` / `passed_bits`: trial t was valid / passed
            counts.valid_bits |= int(codes.translate(_VALID)[::-1], 2)
            counts.passed_bits |= int(codes.translate(_PASSED)[::-1], 2)
        if errors:  # and of `error_bits`: it errored (`Tally.trial_verdicts`)
            counts.error_bits |= int(codes.translate(_ERRORED)[::-1], 2)
        tally.trials += passed + failed + errors
        tally.errors += errors
    for subject, (tokens_in, tokens_out, cost) in continuation.state.usage.items():
        if subject in tallies:
            tallies[subject].spend(int(tokens_in), int(tokens_out), cost)


_VALID = bytes.maketrans(bytes(range(4)), b"0110")
_PASSED = bytes.maketrans(bytes(range(4)), b"0100")
_ERRORED = bytes.maketrans(bytes(range(4)), b"0001")


def _same_rule(plan: Plan, continuation: Continuation) -> None:
    """A continued run keeps its trials rule: fixed, or `trials: auto` with the same bounds
    (its stopping rule is re-applied to the recorded trials, so it must be the same)."""
    if plan.curriculum is not None:
        raise ConfigError(f"run {continuation.run_id}: a curriculum chooses each trial from "
                          "the outcomes before it and is not continued; start a new run",
                          field=f"--{continuation.mode.replace('_', '-')}")
    spec = continuation.spec
    then = spec.get("trials_mode") or {"mode": "fixed"}
    now = ({"mode": "auto", "min_trials": plan.min_trials} if plan.adaptive
           else {"mode": "fixed"})
    if (then.get("mode") == "auto" or plan.adaptive) and (
            then.get("mode") != now["mode"] or then.get("min_trials") != now.get("min_trials")
            or spec.get("trials") != plan.trials):
        def rule(mode: dict[str, Any], trials: Any) -> str:
            return (f"trials: auto ({mode.get('min_trials')} to {trials})"
                    if mode.get("mode") == "auto" else f"trials: {trials}")

        raise ConfigError(f"run {continuation.run_id} ran with {rule(then, spec.get('trials'))}"
                          f" but the experiment now says {rule(now, plan.trials)}; a "
                          "continued run keeps its rule (start a new run instead)",
                          field=f"--{continuation.mode.replace('_', '-')}")


def _same_seeding(plan: Plan, continuation: Continuation) -> None:
    """A continued run derives its trial seeds as it did (`ix.engine.resume.continuing` sets
    the plan so): else its remaining trials would draw other numbers than it planned."""
    then = recorded_seeding(continuation.spec, continuation.run_id)
    if plan.seeding != then:
        raise ConfigError(f"run {continuation.run_id} derived its trial seeds {then}, the plan "
                          f"to continue it {plan.seeding}; build it with "
                          "`ix.engine.resume.continuing`",
                          field=f"--{continuation.mode.replace('_', '-')}")


def _parse_time(text: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None


async def _execute(plan: Plan, run_id: str, writer: TrialWriter, tallies: dict[str, Tally],
                   on_trial: OnTrial | None, artifacts: bool,
                   stopped: dict[str, dict[str, str]], continuation: Continuation | None,
                   limits: Limits, broken: dict[str, str], errlog: ErrorLog,
                   signals: bool = True, load: LoadFeed | None = None,
                   batchers: Sequence[Batcher] = (),
                   warn: Warn | None = None,
                   on_pause: OnRunPause | None = None,
                   looked: list[dict[str, Any]] | None = None) -> str | None:
    """Run the plan's trials; returns why it stopped early, or None when all ran.
    `looked`: under `stop: goal` (`plan.looks`), the cases run in rounds and each look at
    the goal is appended to it (`ix.eval.sequential_goal`); the rounds stop once it is
    settled.
    `signals`: take SIGINT/SIGTERM (only on a loop of the run's own, in the main thread).
    `load`: the trials are released on its schedule (`load:`) instead of all at once.
    `batchers`: the run's `batch: true` runtimes, whose batches a second Ctrl-C cancels.
    The run pauses while its `paused` marker is there (`ix.engine.pausing`), and on SIGTSTP
    with `signals` (SIGCONT continues it)."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    stop: list[str] = []
    feed: AdaptiveFeed | None = None
    taught: CurriculumFeed | None = None

    def interrupted() -> None:
        """First Ctrl-C / SIGTERM: schedule nothing more and let the trials in flight finish
        (up to `GRACE_S`); a second one cancels them."""
        if task is None:
            return
        if stop and stop[0].startswith("interrupted"):
            if batches_in_flight() and not cancelling:
                cancelling.append(loop.create_task(cancel_batches_then(task)))
            elif not cancelling:
                task.cancel()
            return
        stop.insert(0, "interrupted (SIGINT or SIGTERM); trials in flight were finished")
        waiting = batches_in_flight()
        if waiting and warn is not None:
            warn(f"{len(waiting)} batch(es) still with the provider ({', '.join(waiting)}): "
                 f"Ctrl-C again within {GRACE_S:g} s cancels them; otherwise ix stops and "
                 "`ix run --resume` collects their results later (nothing is sent twice)")
        if feed is not None:
            feed.halt()
        if taught is not None:
            taught.halt()
        if load is not None:
            load.halt()
        pause.release()  # a paused run stops too: its workers take no more trials
        loop.call_later(GRACE_S, task.cancel)

    cancelling: list[asyncio.Task[None]] = []

    def batches_in_flight() -> list[str]:
        return [b for batcher in batchers for b in batcher.in_flight]

    async def cancel_batches_then(task: asyncio.Task[Any]) -> None:
        """A second Ctrl-C with batches in flight: cancel them at the provider, then stop."""
        try:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(GRACE_S):
                    done = [b for batcher in batchers for b in await batcher.cancel_all()]
                if warn is not None:
                    warn(f"cancelled {len(done)} batch(es); `ix run --resume` sends what "
                         "they had not answered in a new batch")
        finally:
            task.cancel()

    run_dir = ExperimentDir.at(plan.loaded.path).run(run_id)
    deadline = (time.monotonic() + limits.time_limit_s) if limits.time_limit_s else None

    def stopping() -> bool:
        """A limit that ends the run even while it is paused (then `admit` says which)."""
        return (limits.stop is not None and limits.stop.is_set()) or (
            deadline is not None and time.monotonic() >= deadline)

    pause = PauseGate(run_dir.path, None if on_pause is None
                      else lambda paused: on_pause(run_id, paused), stopping)
    # signal handlers exist only in the main thread, and only on the run's own loop
    # (`arun_plan` runs on its caller's, e.g. `ix mcp`'s: Limits.stop and .interrupts)
    if signals and task is not None and sys.platform != "win32" \
            and threading.current_thread() is threading.main_thread():
        loop.add_signal_handler(signal.SIGINT, interrupted)
        loop.add_signal_handler(signal.SIGTERM, interrupted)
        loop.add_signal_handler(signal.SIGTSTP, pause.pause, "SIGTSTP")
        loop.add_signal_handler(signal.SIGCONT, pause.resume)
    if limits.interrupts is not None and task is not None:
        delivering = loop.create_task(_deliver(limits.interrupts, interrupted))
        task.add_done_callback(lambda _: delivering.cancel())
    exp = plan.loaded.experiment
    sink = None
    if artifacts:
        root = plan.loaded.path / ARTIFACTS_DIR
        sink = JsonDirectorySink(root, _artifact_name(plan),
                                 guard=lambda path: inside(plan.loaded.path, path))
        for case in plan.cases:
            sink.write(Artifact(STIMULUS, "probe", case), Construct(case.id))
    orchestrator = Orchestrator(components(run_id, exp.name, exp.timeout_s, plan.redactor,
                                           output_rules(plan, run_dir.outputs)),
                                given=GIVEN, sink=sink)
    # the probe ran once, at load: its stimuli and the subjects are shared, immutable facts
    stimuli = {c.id: Artifact(STIMULUS, "probe", c) for c in plan.cases}
    subjects = {sp.subject.name: Artifact(SUBJECT, "subject", sp.subject)
                for sp in plan.subjects}
    def construct(key: TrialKey) -> Construct[TrialKey]:
        return Construct(key, (stimuli[key.case.id], subjects[key.subject.subject.name]))

    traces = run_dir.traces
    in_workspaces = any(c.workspace is not None for c in plan.cases)
    scheduled = 0

    def admit(key: TrialKey) -> bool | None:
        """Whether to schedule `key` now — the one gate of fixed and `trials: auto` runs:
        False leaves it out (the circuit breaker stopped its subject), None stops all
        scheduling (a signal, or a limit, whose reason is then in `stop`)."""
        nonlocal scheduled
        if key.subject.subject.name in broken:
            return False
        if stop:
            return None
        if limits.stop is not None and limits.stop.is_set():
            stop.append("stopped on request (Limits.stop); trials in flight were finished")
            return None
        if limits.max_trials is not None and scheduled >= limits.max_trials:
            stop.append(f"--max-trials {limits.max_trials} reached")
            return None
        if deadline is not None and time.monotonic() >= deadline:
            stop.append(f"--time-limit {limits.time_limit_s:g} s reached")
            return None
        scheduled += 1
        return True

    def wanted(part: Plan) -> Iterator[TrialKey]:
        """The trials to run: all, or those a continuation still needs, until a limit."""
        only = None
        if continuation is not None:
            pending, trials = continuation.pending, plan.trials

            def only(subject: str, case_id: str) -> list[int]:
                return pending(subject, case_id, trials)

        for key in part.each_trial(only):
            if continuation is not None:
                attempt = continuation.to_run(key.subject.subject.name, key.case.id, key.trial)
                if attempt:
                    key = replace(key, attempt=attempt)
            verdict = admit(key)
            if verdict is None:
                return
            if verdict:
                yield key

    if plan.curriculum is not None:
        taught = CurriculumFeed(plan, construct, admit)
        stopped[CURRICULUM] = taught.stopped  # filled as the subjects stop

    def source(part: Plan) -> Any:
        """The constructs of `part` (the plan, or one round of `stop: goal`)."""
        nonlocal feed
        if load is not None:
            return load.start(construct, admit)
        if taught is not None:  # a curriculum chooses its own trials (never with rounds)
            return taught
        feed = AdaptiveFeed(part, construct, continuation, admit) if part.adaptive else None
        return feed if feed is not None else map(construct, wanted(part))

    spent = 0.0
    # the trials written, not yet counted; under --max-cost each is counted at once (the
    # cost spent decides whether to go on)
    uncounted: list[tuple[Construct[TrialKey], bool, dict[str, Any]]] = []
    counted_by = 1 if limits.max_cost_usd is not None else COUNT_BATCH
    clock = time.monotonic
    counted_at = 0.0  # when the batch's first trial came (`COUNT_WAIT_S`)
    streak: dict[str, int] = {}
    # never more workers than trials to run (each worker is a task; a concurrency of a
    # billion would otherwise start a billion of them for a handful of trials)
    workers = max(1, min(plan.concurrency, plan.total, limits.max_trials or plan.total))
    if load is not None:  # one worker more than slots: a free one always takes the next due
        workers = min(load.load.max_in_flight, plan.total) + 1

    def count() -> None:
        """The trials written since the last count, counted into their subjects' tallies."""
        nonlocal spent
        batch = uncounted.copy()  # (a count that raises never counts a trial twice)
        uncounted.clear()
        for construct, internal, record in batch:
            spent += _count(tallies, construct, internal, record)

    def done(outcome: Outcome[TrialKey]) -> None:
        """A trial finished: its line written, then counted (in the worker that ran it, in
        batches of `COUNT_BATCH`)."""
        nonlocal counted_at
        if outcome.error is None:
            record = outcome.construct.data(VERDICT)
        else:  # a bug in a component, not the subject's failure: record it all the same
            record = _internal_error_record(outcome.construct, run_id, exp.name, outcome.error)
            record["error"]["message"] = plan.redactor.text(record["error"]["message"])
        if traces is not None:
            _keep_trace(outcome.construct, record, traces, plan.redactor)
        if in_workspaces:
            _leave_workspace(outcome.construct)
        # a request of `load:` (its facts added to the line): a warm-up one is not counted
        measured = load is None or load.done(record)
        writer.write(record)
        if measured:
            uncounted.append((outcome.construct, outcome.error is not None, record))
            now = clock()
            if len(uncounted) == 1:
                counted_at = now
            if len(uncounted) >= counted_by or now - counted_at >= COUNT_WAIT_S:
                count()
        if limits.max_cost_usd is not None and spent >= limits.max_cost_usd and not stop:
            stop.append(f"--max-cost {limits.max_cost_usd:g} USD reached (spent {spent:.4f})")
        subject = record["subject"]
        streak[subject] = streak.get(subject, 0) + 1 if record["error"] else 0
        if record["error"]:
            errlog.add(subject, str(record["error"]["kind"]),
                       str(record["error"].get("message") or ""))
        if (limits.max_consecutive_errors and subject not in broken
                and streak[subject] >= limits.max_consecutive_errors):
            broken[subject] = (f"stopped after {streak[subject]} consecutive errored trials "
                               f"(last: {record['error']['kind']}: "
                               f"{record['error']['message'][:200]})")
        if feed is not None:
            feed.done(record)
        if taught is not None:
            taught.done(record)
        if on_trial is not None:
            on_trial(record)

    parts = ([replace(plan, cases=chunk) for chunk in rounds(plan.cases, plan.seed, plan.looks)]
             if plan.looks else [plan])
    seen: list[EvalCase] = []
    pause.start()
    try:
        for number, part in enumerate(parts, 1):
            constructs = source(part)
            try:
                await orchestrator.run_each(constructs, concurrency=workers, handle=done,
                                            gate=pause.gate)
            finally:
                count()  # every trial written is in the summary, however the run stops
                if feed is not None:
                    for name, why in feed.stopped.items():
                        stopped.setdefault(name, {}).update(why)
            seen.extend(part.cases)
            if stop or not plan.looks or looked is None:
                break
            if _look(plan, tallies, seen, number, len(parts), looked) != "continue":
                break
    finally:
        pause.close()
    return stop[0] if stop else None


def _look(plan: Plan, tallies: dict[str, Tally], seen: list[EvalCase], number: int,
          looks: int, looked: list[dict[str, Any]]) -> str:
    """`stop: goal`: judge the goal on the cases run so far; the look's decision."""
    goal = plan.loaded.experiment.goal or {}
    names = [sp.subject.name for sp in plan.subjects]
    control, treatment = (goal.get("compare") or names)[:2]
    look = judge_look(goal, tallies[control], tallies[treatment], seen, looks=looks,
                      last=number == looks)
    trials = sum(t.counts[c.id].valid + t.counts[c.id].errors
                 for t in tallies.values() for c in seen)
    looked.append(look_entry(number, len(seen), trials, look))
    return look.decision


async def _deliver(interrupts: threading.Semaphore, interrupted: Callable[[], None]) -> None:
    """Take each release of `Limits.interrupts` (from another thread) as a Ctrl-C."""
    while True:
        while interrupts.acquire(blocking=False):
            interrupted()
        await asyncio.sleep(0.05)


def _keep_trace(construct: Construct[TrialKey], record: dict[str, Any], root: Path,
                redactor: Redactor) -> None:
    """A runtime's raw transcript, gzipped beside the run, each line redacted; the trial line
    points to it."""
    outcome = construct.data(OBSERVATION) if construct.has(OBSERVATION) else None
    trace = getattr(getattr(outcome, "observation", None), "trace", None)
    if trace is None:
        return
    key = construct.subject
    path = root / trace_name(key.subject.subject.name, key.case.id, key.trial, key.attempt)
    root.mkdir(exist_ok=True)  # in the run folder, which is not recreated if it was deleted
    path.parent.mkdir(exist_ok=True)
    inside(root.parent, path)  # no symlink out of the run folder
    lines = trace if isinstance(trace, list | tuple) else [trace]
    fd = open_regular(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    with open(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb") as packed, \
            io.TextIOWrapper(packed, encoding="utf-8") as f:
        for line in lines:
            text = line if isinstance(line, str) else json.dumps(line, default=str)
            f.write(redactor.text(text) + "\n")
    record["trace"] = str(path.relative_to(RunDir(root.parent).experiment.results))


def output_rules(plan: Plan, root: Path) -> OutputRules:
    """Where and how much of what subjects make in their workspaces a run keeps (its
    `workspace:` limits)."""
    spec = plan.loaded.spec.workspace
    if spec is None:
        return OutputRules(root)
    mib = 1 << 20
    return OutputRules(root, max_file_bytes=int(spec.max_file_mb * mib),
                       max_total_bytes=int(spec.max_total_mb * mib), max_files=spec.max_files)


def _leave_workspace(construct: Construct[TrialKey]) -> None:
    """The trial's workspace, read by its sensors, removed."""
    outcome = construct.data(OBSERVATION) if construct.has(OBSERVATION) else None
    if outcome is not None and outcome.workspace is not None:
        workspaces.remove(outcome.workspace)


def trace_name(subject: str, case_id: str, trial: int, attempt: int) -> str:
    """Where a trial's transcript goes in the run's `traces/` folder: a folder per subject, a
    file per (case, trial, attempt). Injective (`file_part`): two subjects or two cases never
    share a file, however alike their names (`a b` and `a_b`)."""
    return f"{file_part(subject)}/{file_part(case_id)}-trial-{trial}-attempt-{attempt}.jsonl.gz"


def _count(tallies: dict[str, Tally], construct: Construct[TrialKey], internal: bool,
           record: dict[str, Any]) -> float:
    """Count one trial into its subject's tally from what the pipeline made of it (the
    runtime's outcome, the sensors' readings), not from the line built out of them; the cost
    it spent. `internal`: a component failed (an errored trial without an observation)."""
    key = construct.subject
    tally = tallies[key.subject.subject.name]
    outcome: TrialOutcome | None = None
    readings: tuple[Reading, ...] | SensorFailure = ()
    if not internal:  # every component ran: the observation and the readings are there
        outcome, readings = construct.data(OBSERVATION), construct.data(READING)
    errored = outcome is None or outcome.error is not None or isinstance(readings, SensorFailure)
    first = readings[0] if readings and not isinstance(readings, SensorFailure) else None
    tally.add(key.case.id, None if errored else first is not None and first.passed, key.trial)
    if not errored and readings:  # every sensor's reading (the summary's `sensors`)
        tally.sense(key.case.id, ((r.sensor_name, r.passed)
                                  for r in cast(tuple[Reading, ...], readings)))
    observation = outcome.observation if outcome is not None else None
    if isinstance(observation, EvalObservation):
        taken = None
        if not errored:
            for call in observation.tool_calls:
                if call.name == "Skill" and isinstance(skill := call.input.get("skill"), str):
                    taken = skill
                    break
        meta = observation.meta
        usage = (observation.tokens_input, observation.tokens_output, observation.cost_usd)
    else:  # a runtime may return anything: read it from the line
        line = record["observation"] or {}
        taken = None if errored else next(iter(invoked_skills(line)), None)
        meta = line.get("meta")
        usage = (line.get("tokens_input", 0), line.get("tokens_output", 0),
                 float(line.get("cost_usd", 0.0)))
    if not errored:  # which skill took the prompt (the summary's routing)
        tally.route(key.case.id, taken)
        _measure(tally, key.case, observation, record, first,
                 cast(tuple[Reading, ...], readings))
    tally.outcomes.spend(key.case.id, float(usage[2] or 0.0))
    if meta:
        for field in ("model", "cli_version", "claude_code_version"):
            if isinstance(meta.get(field), str):
                tally.versions.add(f"{field}={meta[field]}")
    tally.spend(*usage)
    return usage[2]


def _measure(tally: Tally, case: EvalCase, observation: Any, record: dict[str, Any],
             first: Reading | None, readings: tuple[Reading, ...]) -> None:
    """A valid trial's tokens, time, cost, tool calls, turns and score, and its judges'
    scores by dimension, into the tally's outcome sums (the summary's `outcomes`)."""
    if isinstance(observation, EvalObservation):
        meta = observation.meta
        facts: tuple[float | None, ...] = (  # (its counts are ints: added as they are)
            observation.tokens_input, observation.tokens_output,
            finite(observation.cost_usd), finite(record["duration_ms"]),
            len(observation.tool_calls),
            finite(meta.get("num_turns", meta.get("turns"))) if meta else None)
    else:
        facts = facts_of(record["observation"], record["duration_ms"])
    tally.outcomes.measure(case.id, facts, None if first is None else finite(first.score),
                           first is not None and not wrong(case.expectation, first.passed))
    if tally.judges:
        for r in readings:
            if r.sensor_name in tally.judges:
                tally.outcomes.judged(case.id, r.sensor_name, r.metrics)


def _internal_error_record(construct: Construct[TrialKey], run_id: str, experiment: str,
                           error: BaseException) -> dict[str, Any]:
    key = construct.subject
    outcome = construct.data(OBSERVATION) if construct.has(OBSERVATION) else None
    return {
        "run_id": run_id, "experiment": experiment, "subject": key.subject.subject.name,
        "probe_id": key.case.id, "trial": key.trial, "seed": key.seed, "attempt": key.attempt,
        "expectation": key.case.expectation,
        "started_at": iso(outcome.started_at) if outcome else iso(datetime.now(UTC)),
        "duration_ms": round(outcome.duration_ms, 3) if outcome else 0.0,
        "observation": None, "reading": None,
        "error": {"kind": "internal_error", "message": f"{error} ({error.__cause__!r})"},
    }


def _artifact_name(plan: Plan) -> Callable[[Artifact, Construct[Any]], str]:
    several = len(plan.subjects) > 1

    def name(artifact: Artifact, construct: Construct[Any]) -> str:
        """`<case>-trial-<n>`, in a folder per subject when there are several; each part
        encoded by `file_part`, so no two trials share a file and none leaves the folder."""
        key = construct.subject
        if not isinstance(key, TrialKey):
            return file_part(str(key))
        base = f"{file_part(key.case.id)}-trial-{key.trial}"
        return f"{file_part(key.subject.subject.name)}/{base}" if several else base

    return name


def _spec(plan: Plan, run_id: str, started: datetime,
          command: list[str] | None) -> RunSpec:
    loaded = plan.loaded
    exp = loaded.experiment
    versions, commit = provenance(loaded.path, [p.spec() for p in plan.plugins])
    spec: RunSpec = {
        "run_id": run_id,
        "experiment": exp.name,
        "experiment_dir": str(loaded.path),
        "lab": str(loaded.lab),
        "status": "running",
        "started_at": iso(started),
        "finished_at": None,
        "seed": plan.seed,
        "seeding": plan.seeding,
        "trials": plan.trials,
        "trials_mode": ({"mode": "auto", "min_trials": plan.min_trials} if plan.adaptive
                        else {"mode": "fixed"}),
        "concurrency": plan.concurrency,
        "overrides": plan.overrides.as_dict(),
        "command": command if command is not None else list(sys.argv),
        "versions": versions,
        "git_commit": commit,
        "sources": plan.sources,
        "config": {
            "name": exp.name,
            "description": exp.description,
            "sensor": {"kind": exp.sensor, **exp.sensor_options},
            "sensors": loaded.spec.sensors,
            "timeout_s": exp.timeout_s,
            "goal": exp.goal,
            "subjects": [
                {"name": sp.subject.name, "description": sp.subject.description,
                 "profile": sp.subject.config.get("profile"),
                 "runtime": redact_secrets(sp.runtime_spec),
                 "target_skill": sp.target_skill,
                 "skills": [{"name": s["name"], "path": s["path"],
                             "sha256": _sha256(Path(s["path"])),
                             # what routes a prompt: `ix compare` shows how it changed
                             "description": s.get("description")}
                            for s in sp.subject.config.get("skills", [])]}
                for sp in plan.subjects
            ],
            "cases": _spec_cases(plan),
        },
    }
    if plan.load is not None:
        spec["config"]["load"] = dict(plan.load.options)
    sessions = loaded.spec.sessions
    if sessions is not None:  # a longitudinal study: this run is its next session
        before = sum(1 for f in run_folders(ExperimentDir.at(loaded.path).results)
                     if f.name != run_id and is_completed(f))
        spec["session"] = {"index": before + 1, "of": sessions.count, "every": sessions.every}
    return spec


def _spec_cases(plan: Plan) -> SpecCases:
    """The cases of `spec.yaml`: how many, which were skipped, their digest, and what a
    `probe:` generated (so the run folder shows the prompts it ran)."""
    cases: SpecCases = {"run": len(plan.cases),
                        "skipped_acceptable": [c.id for c in plan.skipped],
                        "sha256": cases_digest(plan.cases)}
    generated: list[SpecGenerated] = [
        {"id": c.id, "by": str(c.metadata[GENERATED_BY]), "prompt": c.prompt}
        for c in plan.cases if GENERATED_BY in c.metadata]
    if generated:
        cases["generated"] = generated
    return cases


def _sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None
