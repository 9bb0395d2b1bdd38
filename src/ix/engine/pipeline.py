"""The eval pipeline as Matrix components: trial (runtime) -> sensor -> row scorer.

The probe's stimulus and the subject are given to each construct up front (the probe ran
once, when the experiment was loaded), so per trial the graph is three levels of one
component each, and the orchestrator awaits them without creating tasks.

Secrets: what the runtime answered (observation, trace, error) and what the sensors read are
passed through the run's `Redactor` as they are produced, so every known secret is already
`[REDACTED]` in what the sensors judge and in all that is written after (the trial line, the
trace, the artifacts).
"""

import asyncio
import inspect
import time
from collections import deque
from contextvars import ContextVar
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from ix.domain.errors import TrialError
from ix.domain.redaction import Redactor
from ix.domain.types import Interaction, Reading
from ix.domain.workspace import WORKSPACE, Output, Workspace
from ix.engine import workspaces
from ix.engine.plan import TrialKey
from ix.engine.workspaces import OutputRules
from ix.matrix import Component, Construct
from ix.store.trial_lines import ErrorRecord, TrialRecord

STIMULUS = "probe.stimulus"
SUBJECT = "subject.config"
OBSERVATION = "trial.observation"
READING = "sensor.reading"
VERDICT = "scorer.verdict"
GIVEN = frozenset({STIMULUS, SUBJECT})
MAX_ERROR_MESSAGE = 2000

#: The machine that ran the current trial, as its trial line's `node`: set by a runtime that
#: runs trials elsewhere (`--executor ray`), read once its `invoke` returns or raises; a
#: context variable, so it passes through any wrapper (the cache) and stays None here.
NODE: ContextVar[dict[str, str] | None] = ContextVar("ix_trial_node", default=None)


@dataclass(frozen=True, slots=True)
class TrialOutcome:
    """What the runtime did: an observation, or an error (never both)."""

    observation: Any
    error: ErrorRecord | None
    started_at: datetime
    duration_ms: float
    node: dict[str, str] | None = None  # where it ran, when not here (`NODE`)
    #: the trial's workspace, as the subject left it, until the sensors read it; what the
    #: subject created or changed there (DESIGN.md §10); None both without a workspace
    workspace: Path | None = None
    outputs: tuple[Output, ...] | None = None


def error_record(exc: BaseException, redactor: Redactor | None = None) -> ErrorRecord:
    """The `error` of a trial line: kind and message (cut short, secrets redacted)."""
    if isinstance(exc, TrialError):
        kind, message = exc.kind, exc.message
    elif isinstance(exc, TimeoutError):
        kind, message = "timeout", str(exc) or "the trial did not finish in time"
    else:
        kind, message = type(exc).__name__, str(exc)
    if redactor is not None:
        message = redactor.text(message)
    if len(message) > MAX_ERROR_MESSAGE:
        message = message[:MAX_ERROR_MESSAGE] + "…"
    return {"kind": kind, "message": message}


_DEADLINE, _TASK, _EXPIRED = 0, 1, 2  # a trial in flight: [deadline, task, expired]
_FINISHED: Any = object()  # an entry's task once the trial is no longer in flight
_RESOLUTION = time.get_clock_info("monotonic").resolution  # what the loop counts as due


class Deadlines:
    """The trials in flight, oldest first, and one timer, set for the oldest's deadline: each
    trial is cancelled at its deadline as by a timer of its own, without a timer handle made,
    pushed on the loop's heap and cancelled per trial (nor the heap rebuilds that many
    cancelled handles cause): at most one timer set per `timeout_s`. Every trial gets the same
    `timeout_s`, so deadlines come in the order trials start and the queue stays sorted."""

    __slots__ = ("_live", "_queue", "_timeout_s", "_timer", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop, timeout_s: float) -> None:
        self.loop = loop
        self._timeout_s = timeout_s
        self._queue: deque[list[Any]] = deque()
        self._timer: asyncio.TimerHandle | None = None
        self._live = 0

    def start(self, task: asyncio.Task[Any] | None) -> list[Any]:
        """Watch `task` from now on: the entry `done` takes when it finishes; `entry[2]` is
        set when the deadline cancelled it."""
        deadline = self.loop.time() + self._timeout_s
        entry = [deadline, task, False]
        self._queue.append(entry)
        self._live += 1
        if self._timer is None:
            self._timer = self.loop.call_at(deadline, self._expire)
        return entry

    def done(self, entry: list[Any]) -> None:
        """The trial of `entry` finished (or was cancelled): no deadline applies to it now."""
        if entry[_TASK] is _FINISHED:
            return
        entry[_TASK] = _FINISHED
        self._live -= 1
        queue = self._queue
        while queue and queue[0][_TASK] is _FINISHED:
            queue.popleft()
        # the timer stays set, even with nothing in flight (a trial that never waits: the
        # mock's): when it comes, it sets itself for the trial then oldest, if any
        if len(queue) > 2 * self._live + 64:  # one slow trial at the head: keep it small
            self._queue = deque(e for e in queue if e[_TASK] is not _FINISHED)

    def _expire(self) -> None:
        """Cancel every trial whose deadline has come; set the timer for the next one."""
        self._timer = None
        queue = self._queue
        due = self.loop.time() + _RESOLUTION
        while queue:
            head = queue[0]
            task = head[_TASK]
            if task is not _FINISHED:
                if head[_DEADLINE] > due:
                    self._timer = self.loop.call_at(head[_DEADLINE], self._expire)
                    return
                head[_EXPIRED] = True
                head[_TASK] = _FINISHED
                self._live -= 1
                if task is not None:
                    task.cancel()
            queue.popleft()


class TrialComponent:
    """Runs the subject's runtime on the stimulus; a failure becomes a recorded error."""

    name = "trial"
    requires = GIVEN
    provides = OBSERVATION

    def __init__(self, timeout_s: float, redactor: Redactor | None = None,
                 outputs: OutputRules | None = None):
        self.timeout_s = timeout_s
        self.redactor = redactor or Redactor()
        self.outputs = outputs  # where a workspace's outputs are kept (None: not kept)
        # per-subject limits (a subject's `concurrency`, else its runtime kind's default),
        # under the run's global one; made in the running loop, at first use
        self._limits: dict[str, asyncio.Semaphore] = {}
        self._batched: dict[str, bool] = {}  # per subject: its runtime sends batches
        self._deadlines: Deadlines | None = None

    async def run(self, construct: Construct[TrialKey]) -> TrialOutcome:
        sp = construct.subject.subject
        limit = self._limits.get(sp.subject.name)
        if limit is None and sp.limit:
            limit = self._limits[sp.subject.name] = asyncio.Semaphore(sp.limit)
        run = self._run if construct.subject.case.workspace is None else self._in_workspace
        if limit is None:
            return await run(construct)
        async with limit:
            return await run(construct)

    async def _in_workspace(self, construct: Construct[TrialKey]) -> TrialOutcome:
        """The trial in a fresh copy of its case's workspace (the runtime finds it with
        `current_workspace`); what the subject made there is kept."""
        key = construct.subject
        workspace = key.case.workspace
        assert workspace is not None
        root = await asyncio.to_thread(workspaces.make, workspace)
        token = WORKSPACE.set(root)
        try:
            skills = key.subject.subject.config.get("skills") or []
            if skills:  # the subject's skills, where agents look for a project's own
                laid = await asyncio.to_thread(workspaces.install_skills, root,
                                               cast(list[dict[str, str]], skills))
                workspace = Workspace(files=(*workspace.files, *laid))
            outcome = await self._run(construct)
            outputs: tuple[Output, ...] = ()
            if self.outputs is not None:
                outputs = tuple(await asyncio.to_thread(
                    workspaces.capture, root, workspace, self.outputs,
                    key.subject.subject.name, key.case.id, key.trial))
        except BaseException:
            workspaces.remove(root)
            raise
        finally:
            WORKSPACE.reset(token)
        return replace(outcome, workspace=root, outputs=outputs)

    async def _run(self, construct: Construct[TrialKey]) -> TrialOutcome:
        key = construct.subject
        started = datetime.now(UTC)
        t0 = time.perf_counter()
        # One timer for all the trials in flight instead of `asyncio.timeout()` (or a timer
        # each): the same cancel-on-deadline, at a fraction of the cost per trial.
        task = asyncio.current_task()
        deadlines = self._deadlines
        if deadlines is None or deadlines.loop is not asyncio.get_running_loop():
            deadlines = self._deadlines = Deadlines(asyncio.get_running_loop(), self.timeout_s)
        # a `batch: true` trial waits for its batch (hours, at worst): the batch's own expiry
        # is its deadline, not `timeout_s`
        name = key.subject.subject.name
        batched = self._batched.get(name)
        if batched is None:  # once per subject, not per trial
            batched = self._batched[name] = getattr(key.subject.runtime, "batcher",
                                                    None) is not None
        entry = None if batched else deadlines.start(task)
        NODE.set(None)  # the task's own context: what a remote runtime sets is this trial's
        try:
            stimulus = key.case
            if key.subject.context:  # `context:`'s prefix, before the case's own history
                stimulus = stimulus.model_copy(
                    update={"history": key.subject.context + stimulus.history})
            observation = await key.subject.runtime.invoke(
                key.subject.subject, stimulus, seed=key.seed, attempt=key.attempt)
        except asyncio.CancelledError:
            if entry is None or not entry[_EXPIRED]:
                raise
            if task is not None:
                task.uncancel()
            return TrialOutcome(None, {"kind": "timeout", "message":
                                       f"no answer within timeout_s={self.timeout_s:g}"},
                                started, (time.perf_counter() - t0) * 1000)
        except Exception as exc:  # a subject's failure is data, never fatal to the run
            return TrialOutcome(None, error_record(exc, self.redactor), started,
                                (time.perf_counter() - t0) * 1000, NODE.get())
        finally:
            if entry is not None:
                deadlines.done(entry)
        return TrialOutcome(self.redactor.tree(observation), None, started,
                            (time.perf_counter() - t0) * 1000, NODE.get())


@dataclass(frozen=True, slots=True)
class SensorFailure:
    """A sensor that could not judge the trial: the trial is recorded as errored."""

    error: ErrorRecord


_READINGS = frozenset({list, tuple})  # what a sensor that does not wait returns


class SensorComponent:
    """Reads the observation with every sensor of the subject; no readings for an errored trial."""

    name = "sensor"
    requires = frozenset({OBSERVATION})
    provides = READING

    def __init__(self, redactor: Redactor | None = None):
        self.redactor = redactor or Redactor()

    async def run(self, construct: Construct[TrialKey]) -> tuple[Reading, ...] | SensorFailure:
        outcome: TrialOutcome = construct.data(OBSERVATION)
        if outcome.error is not None:
            return ()
        key = construct.subject
        interaction = Interaction(stimulus=key.case, trial_index=key.trial,
                                  observation=outcome.observation, workspace=outcome.workspace,
                                  outputs=outcome.outputs or ())
        readings: list[Reading] = []
        for sensor in key.subject.sensors:
            try:
                got = sensor.sense(interaction)
                if type(got) in _READINGS:  # the common case, without asking `inspect`
                    readings.extend(got)  # type: ignore[arg-type]
                    continue
                if inspect.isawaitable(got):  # a sensor that asks a model (llm_judge)
                    got = await got
                readings.extend(got)
            except TrialError as exc:
                # the sensor could not judge (a judge's unparseable answer): the trial has
                # no verdict, so it is an errored trial, not a failed one
                return SensorFailure(error_record(exc, self.redactor))
            except Exception as exc:  # a sensor bug on one trial must not sink the run
                readings.append(Reading(sensor_name=sensor.name, passed=False, details=(
                    f"sensor error: {error_record(exc, self.redactor)}")))
        if readings and readings[0].passed is None:
            # the first sensor, whose verdict the trial's outcome is, has none (n/a: `turns`
            # on a runtime that reports no turns): no verdict, as for a judge that could not
            # judge — an errored trial, left out of the metrics, never a failed one
            first = readings[0]
            return SensorFailure(error_record(TrialError(
                "not_applicable", f"{first.sensor_name}: {first.details}"), self.redactor))
        # a judge's reasoning may quote what it was shown, or what it knows
        return tuple(self.redactor.tree(readings))


class ScorerComponent:
    """The row scorer: one trial's record, exactly the `trials.jsonl` line (DESIGN.md §3)."""

    name = "scorer"
    requires = frozenset({READING})
    provides = VERDICT

    def __init__(self, run_id: str, experiment: str):
        self.run_id = run_id
        self.experiment = experiment

    async def run(self, construct: Construct[TrialKey]) -> TrialRecord:
        key = construct.subject
        outcome: TrialOutcome = construct.data(OBSERVATION)
        readings = construct.data(READING)
        error = outcome.error
        if isinstance(readings, SensorFailure):
            error = readings.error
            readings = ()
        observation = outcome.observation
        record: TrialRecord = {
            "run_id": self.run_id,
            "experiment": self.experiment,
            "subject": key.subject.subject.name,
            "probe_id": key.case.id,
            "trial": key.trial,
            "seed": key.seed,
            "attempt": key.attempt,
            "expectation": key.case.expectation,
            "started_at": outcome.started_at.isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "duration_ms": round(outcome.duration_ms, 3),
            "observation": _dump(observation),
            "reading": _reading(readings[0]) if readings else None,
            "error": error,
        }
        if len(readings) > 1:
            record["readings"] = [_reading(r) for r in readings]
        if outcome.outputs is not None:
            record["outputs"] = [o.model_dump(exclude_none=True) for o in outcome.outputs]
        if outcome.node is not None:
            return _placed(record, outcome.node)
        return record


def _placed(record: TrialRecord, node: dict[str, str]) -> TrialRecord:
    """`record` with its `node` after `attempt`: the line's head and tail stay as a resume
    reads them without decoding the line (`ix.store.trial_scan`)."""
    placed: dict[str, Any] = {}
    for key, value in record.items():
        placed[key] = value
        if key == "attempt":
            placed["node"] = node
    return placed  # type: ignore[return-value]


def _dump(observation: Any) -> Any:
    if observation is None:
        return None
    dump = getattr(observation, "model_dump", None)
    return dump(mode="json", exclude_none=True) if dump is not None else observation


_SCORE = frozenset({float, type(None)})


def _reading(reading: Reading) -> dict[str, Any]:
    """`reading.model_dump(mode="json")`, built by hand for a plain `Reading` without metrics
    (the common case: the activation sensor's)."""
    if type(reading) is Reading and not reading.metrics:
        fields = reading.__dict__
        if (type(fields["sensor_name"]) is str and type(fields["passed"]) is bool
                and type(fields["score"]) in _SCORE and type(fields["details"]) is str):
            return {"sensor_name": fields["sensor_name"], "passed": fields["passed"],
                    "score": fields["score"], "metrics": {}, "details": fields["details"]}
    return reading.model_dump(mode="json")


def components(run_id: str, experiment: str, timeout_s: float,
               redactor: Redactor | None = None,
               outputs: OutputRules | None = None) -> list[Component]:
    return [TrialComponent(timeout_s, redactor, outputs), SensorComponent(redactor),
            ScorerComponent(run_id, experiment)]
