"""`run_experiment`: one run on the server's own loop, its progress streamed, its cancel
honoured.

The run is `ix.api.arun`: its trials are tasks of the server's asyncio loop, its blocking
steps run in worker threads, so the server keeps answering while it runs.
- each completed trial (`on_trial`) is queued without blocking the engine and forwarded as
  an MCP progress notification (coalesced when they come faster than they can be sent);
- when the client cancels the request (or the session ends), the forwarding task is
  cancelled and sets `Limits.stop`: the engine schedules nothing more, the trials in flight
  finish, and the run is recorded `cancelled` with every completed trial kept. The run is
  shielded from the cancellation and waited for before the cancellation goes through, so
  the run's files are complete when the next request arrives;
- when the server is signalled (SIGTERM, Ctrl-C), it releases `Limits.interrupts`, which the
  engine takes as Ctrl-C reaching `ix run` (`ix.mcp.server.serve_stdio` says when).
"""

import contextlib
import math
import sys
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from ix import api
from ix.api.trials import outcome_of, reading_word
from ix.mcp.tools import jsonable

Report = Callable[[float, float | None, str | None], Awaitable[None]]


@dataclass(frozen=True)
class Progress:
    done: int
    total: int | None
    message: str


def _warn(message: str) -> None:
    print(f"ix: warning: {message}", file=sys.stderr, flush=True)


def _describe(record: dict[str, Any]) -> str:
    """A progress message: the trial's reading and its outcome (DESIGN.md §8)."""
    if record.get("error"):
        outcome = f"error ({record['error'].get('kind')})"
    else:
        reading = record.get("reading") or {}
        outcome = reading_word(reading.get("passed"), reading.get("sensor_name"))
        verdict = outcome_of(record)
        outcome += f", {verdict}" if verdict else ""
    return f"{record['subject']} {record['probe_id']} trial {record['trial']}: {outcome}"


async def run_experiment(lab: Path, experiment: Path, overrides: api.Overrides,
                         limits: api.Limits, report: Report, strict: bool = False,
                         check_plan: Callable[[Any], None] | None = None) -> dict[str, Any]:
    """Run `experiment` (a folder of `lab`): its result, summary and design warnings; with
    `strict`, design warnings refuse the run (`DesignError`); `check_plan(plan)` may refuse
    it (raise `ConfigError`) before anything is written."""
    stop = threading.Event()
    send, receive = anyio.create_memory_object_stream[Progress](math.inf)
    watch = _Watch(send, check_plan)

    async def forward() -> None:
        try:
            async with receive:
                async for item in receive:
                    latest = item  # what came meanwhile: only the newest is sent
                    with contextlib.suppress(anyio.WouldBlock, anyio.EndOfStream):
                        while True:
                            latest = receive.receive_nowait()
                    await _send(report, latest)
        finally:
            stop.set()  # cancelled (the client's cancel, the session's end), or done anyway

    options = api.RunOptions(limits=replace(limits, stop=stop), strict=strict,
                             command=["ix", "mcp", "run_experiment", experiment.name])
    error: Exception | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(forward)
        # not abandoned on cancel: the run stops scheduling (above) and is waited for
        with anyio.CancelScope(shield=True):
            try:
                results = await api.arun(lab, [str(experiment)], overrides, options=options,
                                         observer=watch)
            except Exception as exc:  # raised once the forwarding is done
                error = exc
            finally:
                send.close()
    if error is not None:
        raise error
    result = results[0]
    return jsonable({
        "run_id": result.run_id, "experiment": result.plan.loaded.experiment.name,
        "status": result.status, "stop_reason": result.summary.get("stop_reason"),
        "reason": result.summary.get("reason"),
        "trials_written": result.written, "run_dir": result.run_dir,
        "summary_path": result.summary_path, "design_warnings": watch.design_warnings,
        "summary": result.summary,
    })


class _Watch(api.Observer):
    """The run as the server hears it: progress queued for the client, design warnings kept
    for the answer, other warnings on stderr; `check_plan` may refuse the run."""

    def __init__(self, send: MemoryObjectSendStream[Progress],
                 check_plan: Callable[[Any], None] | None):
        self._send, self._check_plan = send, check_plan
        self.done, self.total = 0, 0
        self.design_warnings: list[dict[str, Any]] = []

    def on_design(self, plan: Any, warnings: list[Any]) -> None:
        self.design_warnings.extend(w.model_dump() for w in warnings)

    def on_plan(self, plan: Any) -> None:
        if self._check_plan is not None:
            self._check_plan(plan)
        self.total = plan.total

    def on_trial(self, record: dict[str, Any]) -> None:
        self.done += 1
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._send.send_nowait(Progress(self.done, self.total or None, _describe(record)))

    def on_warning(self, message: str) -> None:
        _warn(message)


async def _send(report: Report, item: Progress) -> None:
    """One progress notification; failing to send one never stops the run."""
    try:
        await report(item.done, item.total, item.message)
    except Exception as exc:
        _warn(f"could not send a progress notification: {exc!r}")
