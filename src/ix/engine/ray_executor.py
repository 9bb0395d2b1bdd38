"""`--executor ray`: trials run as Ray tasks on a cluster; everything else stays here.

Only the subject's call moves: the trials a subject starts together go as one Ray task (up to
`IX_RAY_BATCH` of them), which builds the subject's runtime on a worker (once per worker
process), runs them concurrently there and answers with each one's observation or trial
error, and the node it ran on (each trial line's `node`). Sensors, scoring, the single trial
writer, resume, budgets and Ctrl-C stay in this process, so a run on Ray records exactly what
a local run records: the same seeds, the same observations, the same lines. A cancelled trial
(second Ctrl-C, timeout) is dropped from its task, and the task cancelled once all its
trials are. A task lost with its node or worker is submitted again (`RESUBMITS` times) to
the nodes still up: a dead node costs time, not trials, and no trial is written twice.

The cluster's workers need ix (`pip install ix-lab`, the same version) and whatever the
subjects need (API keys in their environment, CLIs, skills at the same paths); nothing of the
driver's environment is sent along, so no secret travels through Ray. A cluster's token
(`RAY_AUTH_MODE=token`) is Ray's business: its client reads it from this process's
environment or `~/.ray/auth_token`; ix never reads, prints or records it (docs/running.md).
"""


import asyncio
import dataclasses
import json
import logging
import os
import socket
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ix.domain.errors import ConfigError, TrialError
from ix.domain.types import Subject
from ix.engine.pipeline import NODE, error_record
from ix.runtimes import RuntimeContext, build_runtime

if TYPE_CHECKING:
    from ix.engine.plan import Plan, SubjectPlan

#: Runtime kinds that cannot leave this process: `human` asks the person at this terminal.
LOCAL_ONLY = frozenset({"human"})

#: CPUs a trial task asks of the cluster (`IX_RAY_NUM_CPUS`; fractions such as 0.25 let
#: several I/O-bound trials share one CPU).
DEFAULT_NUM_CPUS = 1.0

#: Trials one Ray task carries at most (`IX_RAY_BATCH`): a task costs the driver about as
#: much as 30 mock trials, so one per trial caps a run near 300 trials/s; smaller batches
#: spread a subject's `concurrency` over more nodes.
DEFAULT_BATCH = 32

#: How many times a task lost with its node or worker is submitted again before its trials
#: are recorded as `executor_error` (a cluster that keeps dying still ends the run).
RESUBMITS = 3

#: Resources every node has that say nothing of what it was given (`spec.yaml` leaves them
#: out): its memory, as Ray measured it, and the `node:<ip>` markers.
_IMPLICIT = ("memory", "object_store_memory")


def connect(address: str | None) -> dict[str, Any]:
    """Join the Ray cluster at `address` (None: start a private local one); what it is."""
    try:
        import ray
    except ImportError:
        raise ConfigError("--executor ray needs Ray: pip install 'ix-lab[ray]'",
                          field="--executor") from None
    if not ray.is_initialized():
        if address is not None:
            _reachable(address)
        failed: tuple[type[BaseException], ...] = (ConnectionError, RuntimeError, ValueError,
                                                    *_refused())
        try:
            ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR,
                     configure_logging=False, include_dashboard=False)
        except failed as exc:
            where = address or "a new local cluster"
            raise ConfigError(f"cannot join the Ray cluster at {where}: {_why(exc)}",
                              field="--address") from None
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    return {"kind": "ray", "address": address, "ray_version": ray.__version__,
            "nodes": len(nodes),
            "cpus": sum(n.get("Resources", {}).get("CPU", 0) for n in nodes),
            "cluster": [_described(n) for n in nodes]}


#: Where Ray looks for a cluster's token (Ray reads it; ix never does).
_TOKEN_FROM = "RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token"


def _why(exc: BaseException) -> str:
    """Why `ray.init` failed, in a line. A cluster with token authentication refuses a client
    without its token (`InvalidAuthToken`, which Ray buries in the exception's cause): say
    what ix needs then, never the token."""
    chain: list[BaseException] = []
    cause: BaseException | None = exc
    while cause is not None and cause not in chain:
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    text = " ".join(str(e) for e in chain)
    if "no authentication token was found" in text:
        return (f"RAY_AUTH_MODE=token but no token was found: set {_TOKEN_FROM} to the "
                "cluster's token (docs/running.md)")
    if "InvalidAuthToken" in text:
        if os.environ.get("RAY_AUTH_MODE", "").lower() != "token":
            return ("the cluster asks for a token (InvalidAuthToken): set RAY_AUTH_MODE=token "
                    f"and the cluster's token ({_TOKEN_FROM}) where ix runs (docs/running.md)")
        return (f"the cluster refused the token (InvalidAuthToken): the token ix was given "
                f"({_TOKEN_FROM}) is not the cluster's (docs/running.md)")
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _described(node: Mapping[str, Any]) -> dict[str, Any]:
    """One node of the cluster as `spec.yaml` lists it: what a trial line's `node` names,
    and the resources it offers (as `ray start` was given them)."""
    given = {k: int(v) if float(v).is_integer() else v
             for k, v in sorted(node.get("Resources", {}).items())
             if k not in _IMPLICIT and not k.startswith("node:")}
    return {"id": node.get("NodeID"), "ip": node.get("NodeManagerAddress"),
            "host": node.get("NodeManagerHostname"), "resources": given}


def _reachable(address: str, timeout_s: float = 5.0) -> None:
    """Fail fast on an address nobody listens at (Ray itself retries for minutes)."""
    if address == "auto":
        return
    hostport = address.removeprefix("ray://").rsplit("/", 1)[0]
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(f"expected HOST:PORT or ray://HOST:PORT, got {address!r}",
                          field="--address")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise ConfigError(f"no Ray cluster answers at {address}: {exc.strerror or exc}",
                          field="--address") from None


def disconnect() -> None:
    try:
        import ray
    except ImportError:
        return
    if ray.is_initialized():
        ray.shutdown()


def on_ray(plan: "Plan") -> "Plan":
    """The same plan, each subject's runtime answering through Ray tasks."""
    import ray

    for sp in plan.subjects:
        if sp.runtime_spec.get("kind") in LOCAL_ONLY:
            raise ConfigError(f"subject {sp.subject.name!r} uses the "
                              f"{sp.runtime_spec['kind']!r} runtime, which must run here; "
                              "drop --executor ray", field="--executor")
        if sp.runtime_spec.get("batch") is True:  # the provider's batch API is its scale-out
            raise ConfigError(f"subject {sp.subject.name!r} sends its trials through the "
                              "provider's batch API (batch: true), which runs here; drop "
                              "--executor ray", field="--executor")
    cpus = _positive("IX_RAY_NUM_CPUS", DEFAULT_NUM_CPUS, float)
    batch = int(_positive("IX_RAY_BATCH", DEFAULT_BATCH, int))
    # no retries by Ray: a lost task is submitted again here, where it is counted and
    # bounded; spread over the nodes, as Ray would otherwise keep them on this one's workers
    task = ray.remote(num_cpus=cpus, max_retries=0,
                      scheduling_strategy="SPREAD")(invoke_on_worker)
    return dataclasses.replace(plan, subjects=tuple(_wrapped(sp, task, batch)
                                                    for sp in plan.subjects))


def _positive(name: str, default: float, kind: type[float] | type[int]) -> float:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = kind(raw)
    except ValueError:
        value = -1
    if value <= 0:
        what = "CPUs" if kind is float else "trials"
        raise ConfigError(f"must be a positive number of {what}, got {raw!r}", field=name)
    return value


def _wrapped(sp: "SubjectPlan", task: Any, batch: int) -> "SubjectPlan":
    spec = json.dumps(sp.runtime_spec, sort_keys=True, default=str)
    return dataclasses.replace(sp, runtime=RayRuntime(sp.runtime, spec, sp.target_skill, task,
                                                      batch))


def _refused() -> tuple[type[BaseException], ...]:
    """What `ray.init` raises for a token it lacks (Ray 2.52+; a `RayError`, not a
    `ConnectionError`)."""
    from ray import exceptions as e

    error = getattr(e, "AuthenticationError", None)
    return (error,) if isinstance(error, type) else ()


def _lost() -> tuple[type[BaseException], ...]:
    """What Ray raises for a task that died with its node or worker (not by its own fault)."""
    from ray import exceptions as e

    return (e.NodeDiedError, e.WorkerCrashedError, e.ObjectLostError)


def _first_line(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"Ray: {type(exc).__name__}: {text}"


Call = tuple[Subject, Any, int, int]  # subject, stimulus, seed, attempt


class RayRuntime:
    """An `ExperimentRuntime` whose calls are Ray tasks running the subject's runtime: the
    calls made in one turn of the loop go together, `batch` at most per task."""

    def __init__(self, local: Any, spec: str, target_skill: str | None, task: Any,
                 batch: int = DEFAULT_BATCH):
        self.local = local  # the runtime built here at plan time: its attributes stand
        self.spec = spec
        self.target_skill = target_skill
        self.task = task
        self.batch = batch
        self.resubmitted = 0  # tasks submitted again after their node or worker died
        self._calls: list[Call] = []
        self._waiting: list[asyncio.Future[Any]] = []
        self._due = False  # a flush of `_calls` is scheduled
        self._jobs: set[asyncio.Task[None]] = set()  # the loop keeps only weak references

    async def invoke(self, subject: Subject, stimulus: Any, *, seed: int = 0,
                     attempt: int = 0) -> Any:
        loop = asyncio.get_running_loop()
        answered = loop.create_future()
        self._calls.append((subject, stimulus, seed, attempt))
        self._waiting.append(answered)
        if len(self._calls) >= self.batch:
            self._flush()
        elif not self._due:
            self._due = True
            loop.call_soon(self._flush)
        node, answer = await answered
        NODE.set(node)  # the trial line's `node`, read by the trial component
        if answer[0] == "error":
            raise TrialError(answer[1], answer[2])
        return answer[1]

    def _flush(self) -> None:
        """Send the calls gathered so far as one task."""
        self._due = False
        if not self._calls:
            return
        calls, waiting = self._calls, self._waiting
        self._calls, self._waiting = [], []
        job = asyncio.ensure_future(self._submit(calls, waiting))
        self._jobs.add(job)
        job.add_done_callback(self._jobs.discard)

        def dropped(future: asyncio.Future[Any]) -> None:  # every trial cancelled: the task
            if future.cancelled() and not job.done() and all(w.done() for w in waiting):
                job.cancel()

        for future in waiting:
            future.add_done_callback(dropped)

    async def _submit(self, calls: list[Call], waiting: list[asyncio.Future[Any]]) -> None:
        import ray

        lost: BaseException | None = None
        for _ in range(1 + RESUBMITS):
            ref = self.task.remote(self.spec, self.target_skill, calls)
            try:
                node, answers = await ref
            except asyncio.CancelledError:
                ray.cancel(ref)
                raise
            except _lost() as exc:  # the node or worker died: run its trials elsewhere
                lost = exc
                self.resubmitted += 1
                live = [i for i, w in enumerate(waiting) if not w.done()]
                calls, waiting = [calls[i] for i in live], [waiting[i] for i in live]
                if not calls:
                    return
                continue
            except ray.exceptions.RayError as exc:  # the task itself failed (ix missing, ...)
                _answer(waiting, None, [("error", "executor_error", _first_line(exc))]
                        * len(calls))
                return
            _answer(waiting, node, answers)
            return
        assert lost is not None
        message = f"{_first_line(lost)} (lost {1 + RESUBMITS} times)"
        _answer(waiting, None, [("error", "executor_error", message)] * len(calls))

    def __getattr__(self, name: str) -> Any:
        if name == "local":
            raise AttributeError(name)
        return getattr(self.local, name)


def _answer(waiting: list[asyncio.Future[Any]], node: dict[str, str] | None,
            answers: list[tuple[Any, ...]]) -> None:
    for future, answer in zip(waiting, answers, strict=True):
        if not future.done():  # a trial cancelled meanwhile (its timeout, a second Ctrl-C)
            future.set_result((node, answer))


# --- on the worker -------------------------------------------------------------------------

_runtimes: dict[tuple[str, str | None], Any] = {}
_loop: asyncio.AbstractEventLoop | None = None
_node: dict[str, str] | None = None


def invoke_on_worker(spec: str, target_skill: str | None, calls: list[Call]
                     ) -> tuple[dict[str, str], list[tuple[Any, ...]]]:
    """Trials on a Ray worker, run concurrently: this node, and for each trial ("ok",
    observation) or ("error", kind, message).

    The runtime is built once per worker process and kept, with one event loop, so its
    clients and connections are reused across the trials the worker runs.
    """
    global _loop

    if _loop is None:
        _loop = asyncio.new_event_loop()
    try:
        runtime = _runtimes.get((spec, target_skill))
        if runtime is None:
            built: Mapping[str, Any] = json.loads(spec)
            runtime = _runtimes[(spec, target_skill)] = build_runtime(
                built, RuntimeContext(target_skill=target_skill))
    except Exception as exc:  # as a local trial records it: kind and message
        error = error_record(exc)
        return _here(), [("error", error["kind"], error["message"])] * len(calls)
    return _here(), _loop.run_until_complete(_all(runtime, calls))


async def _all(runtime: Any, calls: list[Call]) -> list[tuple[Any, ...]]:
    return list(await asyncio.gather(*(_one(runtime, *call) for call in calls)))


async def _one(runtime: Any, subject: Subject, stimulus: Any, seed: int,
               attempt: int) -> tuple[Any, ...]:
    try:
        observation = await runtime.invoke(subject, stimulus, seed=seed, attempt=attempt)
    except Exception as exc:  # as a local trial records it: kind and message
        error = error_record(exc)
        return ("error", error["kind"], error["message"])
    return ("ok", observation)


def _here() -> dict[str, str]:
    """This worker's node: Ray's id for it, its address, its host name."""
    global _node

    if _node is None:
        import ray

        _node = {"id": ray.get_runtime_context().get_node_id(),
                 "ip": ray.util.get_node_ip_address(), "host": socket.gethostname()}
    return _node
