"""`run_experiment`: one run in a worker thread, its progress streamed, its cancel honoured.

The engine runs its own asyncio loop, so the run goes to a worker thread and talks back to
the server's loop in two ways:
- each completed trial (`on_trial`) is handed to the server's loop without blocking the
  engine, and forwarded as an MCP progress notification (coalesced when they come faster
  than they can be sent);
- when the client cancels the request (or the session ends), the forwarding task is
  cancelled and sets `Limits.stop`: the engine schedules nothing more, the trials in flight
  finish, and the run is recorded `cancelled` with every completed trial kept. The handler
  waits for that (the thread is not abandoned) before it lets the cancellation through, so
  the run's files are complete when the next request arrives;
- when the server is signalled (SIGTERM, Ctrl-C), it releases `Limits.interrupts`, which the
  engine takes as Ctrl-C reaching `ix run` (`ix.mcp.server.serve_stdio` says when).
"""

import asyncio
import contextlib
import math
import sys
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from ix import api
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
    if record.get("error"):
        outcome = f"error ({record['error'].get('kind')})"
    else:
        reading = record.get("reading") or {}
        outcome = "passed" if reading.get("passed") else "failed"
    return f"{record['subject']} {record['probe_id']} trial {record['trial']}: {outcome}"


async def run_experiment(lab: Path, experiment: Path, overrides: api.Overrides,
                         limits: api.Limits, report: Report, strict: bool = False,
                         check_plan: Callable[[Any], None] | None = None) -> dict[str, Any]:
    """Run `experiment` (a folder of `lab`): its result, summary and design warnings; with
    `strict`, design warnings refuse the run (`DesignError`); `check_plan(plan)` may refuse
    it (raise `ConfigError`) before anything is written."""
    loop = asyncio.get_running_loop()
    stop = threading.Event()
    send, receive = anyio.create_memory_object_stream[Progress](math.inf)
    counts = {"done": 0, "total": 0}
    warnings: list[dict[str, Any]] = []

    def offer(item: Progress | None) -> None:  # on the server's loop
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            if item is None:
                send.close()
            else:
                send.send_nowait(item)

    def post(item: Progress | None) -> None:  # from the worker thread, never blocking it
        with contextlib.suppress(RuntimeError):  # the server's loop is gone
            loop.call_soon_threadsafe(offer, item)

    def on_design(plan: Any, found: list[Any]) -> None:
        warnings.extend(w.model_dump() for w in found)

    def on_plan(plan: Any) -> None:
        if check_plan is not None:
            check_plan(plan)
        counts["total"] = plan.total

    def on_trial(record: dict[str, Any]) -> None:
        counts["done"] += 1
        post(Progress(counts["done"], counts["total"] or None, _describe(record)))

    def work() -> tuple[list[Any] | None, BaseException | None]:
        try:
            return api.run(lab, [str(experiment)], overrides, on_plan=on_plan,
                           on_trial=on_trial, limits=_with_stop(limits, stop), warn=_warn,
                           strict=strict, on_design=on_design,
                           command=["ix", "mcp", "run_experiment", experiment.name]), None
        except Exception as exc:  # handed back to the loop, raised there
            return None, exc
        finally:
            post(None)

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

    async with anyio.create_task_group() as tg:
        tg.start_soon(forward)
        # not abandoned on cancel: the run stops scheduling (above) and is waited for
        results, error = await anyio.to_thread.run_sync(work)
    if error is not None:
        raise error
    assert results is not None
    result = results[0]
    return jsonable({
        "run_id": result.run_id, "experiment": result.plan.loaded.experiment.name,
        "status": result.status, "stop_reason": result.summary.get("stop_reason"),
        "reason": result.summary.get("reason"),
        "trials_written": result.written, "run_dir": result.run_dir,
        "summary_path": result.summary_path, "design_warnings": warnings,
        "summary": result.summary,
    })


async def _send(report: Report, item: Progress) -> None:
    """One progress notification; failing to send one never stops the run."""
    try:
        await report(item.done, item.total, item.message)
    except Exception as exc:
        _warn(f"could not send a progress notification: {exc!r}")


def _with_stop(limits: api.Limits, stop: threading.Event) -> api.Limits:
    return replace(limits, stop=stop)
