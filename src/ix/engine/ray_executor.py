"""`--executor ray`: trials run as Ray tasks on a cluster; everything else stays here.

Only the subject's call moves: each trial's `invoke` becomes one Ray task that builds the
subject's runtime on a worker (once per worker process) and answers with the observation or
the trial error. Sensors, scoring, the single trial writer, resume, budgets and Ctrl-C stay in
this process, so a run on Ray records exactly what a local run records: the same seeds, the
same observations, the same lines. A cancelled trial (second Ctrl-C, timeout) cancels its task.

The cluster's workers need ix (`pip install ix-lab`, the same version) and whatever the
subjects need (API keys in their environment, CLIs, skills at the same paths); nothing of the
driver's environment is sent along, so no secret travels through Ray.
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
from ix.engine.pipeline import error_record
from ix.runtimes import RuntimeContext, build_runtime

if TYPE_CHECKING:
    from ix.engine.plan import Plan, SubjectPlan

#: Runtime kinds that cannot leave this process: `human` asks the person at this terminal.
LOCAL_ONLY = frozenset({"human"})

#: CPUs a trial task asks of the cluster (`IX_RAY_NUM_CPUS`; fractions such as 0.25 let
#: several I/O-bound trials share one CPU).
DEFAULT_NUM_CPUS = 1.0


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
        try:
            ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR,
                     configure_logging=False, include_dashboard=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = address or "a new local cluster"
            raise ConfigError(f"cannot join the Ray cluster at {where}: "
                              f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
                              field="--address") from None
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    return {"kind": "ray", "address": address, "ray_version": ray.__version__,
            "nodes": len(nodes),
            "cpus": sum(n.get("Resources", {}).get("CPU", 0) for n in nodes)}


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
    cpus = _num_cpus()
    task = ray.remote(num_cpus=cpus, max_retries=0)(invoke_on_worker)
    return dataclasses.replace(plan, subjects=tuple(_wrapped(sp, task) for sp in plan.subjects))


def _num_cpus() -> float:
    raw = os.environ.get("IX_RAY_NUM_CPUS")
    if raw is None:
        return DEFAULT_NUM_CPUS
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise ConfigError(f"must be a positive number of CPUs, got {raw!r}",
                          field="IX_RAY_NUM_CPUS")
    return value


def _wrapped(sp: "SubjectPlan", task: Any) -> "SubjectPlan":
    spec = json.dumps(sp.runtime_spec, sort_keys=True, default=str)
    return dataclasses.replace(sp, runtime=RayRuntime(sp.runtime, spec, sp.target_skill, task))


class RayRuntime:
    """An `ExperimentRuntime` whose every call is a Ray task running the subject's runtime."""

    def __init__(self, local: Any, spec: str, target_skill: str | None, task: Any):
        self.local = local  # the runtime built here at plan time: its attributes stand
        self.spec = spec
        self.target_skill = target_skill
        self.task = task

    async def invoke(self, subject: Subject, stimulus: Any, *, seed: int = 0,
                     attempt: int = 0) -> Any:
        import ray

        ref = self.task.remote(self.spec, self.target_skill, subject, stimulus, seed, attempt)
        try:
            answer = await ref
        except asyncio.CancelledError:
            ray.cancel(ref)
            raise
        except ray.exceptions.RayError as exc:  # the worker died, the task was lost
            raise TrialError("executor_error", f"Ray: {type(exc).__name__}: "
                             f"{str(exc).splitlines()[0] if str(exc) else ''}") from None
        if answer[0] == "error":
            raise TrialError(answer[1], answer[2])
        return answer[1]

    def __getattr__(self, name: str) -> Any:
        if name == "local":
            raise AttributeError(name)
        return getattr(self.local, name)


# --- on the worker -------------------------------------------------------------------------

_runtimes: dict[tuple[str, str | None], Any] = {}
_loop: asyncio.AbstractEventLoop | None = None


def invoke_on_worker(spec: str, target_skill: str | None, subject: Subject, stimulus: Any,
                     seed: int, attempt: int) -> tuple[Any, ...]:
    """One trial on a Ray worker: ("ok", observation) or ("error", kind, message).

    The runtime is built once per worker process and kept, with one event loop, so its
    clients and connections are reused across the trials the worker runs.
    """
    global _loop

    try:
        runtime = _runtimes.get((spec, target_skill))
        if runtime is None:
            built: Mapping[str, Any] = json.loads(spec)
            runtime = _runtimes[(spec, target_skill)] = build_runtime(
                built, RuntimeContext(target_skill=target_skill))
        if _loop is None:
            _loop = asyncio.new_event_loop()
        observation = _loop.run_until_complete(
            runtime.invoke(subject, stimulus, seed=seed, attempt=attempt))
    except Exception as exc:  # as a local trial records it: kind and message
        error = error_record(exc)
        return ("error", error["kind"], error["message"])
    return ("ok", observation)
