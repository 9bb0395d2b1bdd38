"""The MCP server: ix's tools for one lab, over stdio (`ix mcp --lab LAB`, docs/mcp.md).

While it serves, stdout carries the protocol and nothing else: the SDK points file
descriptor 1 at stderr for everything but its own writer, and ix itself prints only through
the command line, which is not used here. Errors a caller can fix come back as error results
naming the argument; an unexpected one also names its exception, its traceback goes to
stderr. A malformed message gets the JSON-RPC error the spec defines (`ix.mcp.stdio`).
"""

import contextlib
import json
import logging
import re
import signal
import sys
import threading
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import anyio
from anyio.abc import TaskStatus
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.types import CallToolResult, TextContent
from pydantic import ConfigDict, Field, ValidationError

from ix import api
from ix._version import __version__
from ix.api.optimize import Settings, optimize
from ix.mcp import cap
from ix.mcp.inputs import (
    NOT_A_BOOL,
    TRIALS_HELP,
    Budget,
    Concurrency,
    ExperimentName,
    Filters,
    Seed,
    Text,
    Trials,
)
from ix.mcp.running import run_experiment
from ix.mcp.stdio import stdio_transport
from ix.mcp.tools import LabTools

ConfigError = api.ConfigError
IxError = api.IxError
log = logging.getLogger("ix.mcp")

INSTRUCTIONS = """\
ix runs experiments on stochastic subjects (Claude Code skills, agents, LLM APIs, CLIs) and
reports statistics that are right at small N. The lifecycle is Goal -> Design -> Run ->
Analysis: turn the user's hypothesis into a `goal` (metric, control vs treatment, direction,
min_effect); design cases (must_trigger / should_not_trigger / acceptable) and a control
subject (create_experiment, validate_experiment); size it with plan_power; run it
(run_experiment: progress is streamed, cancelling keeps the completed trials); then read
get_summary, compare_runs and query_results. To improve a skill's description, use
optimize_description: it proposes on train cases and judges on held-out ones; recommend a
description only when it says `recommended`. Report every estimate with its credible
interval, say when a verdict is inconclusive and what more data would settle it, and do not
call a difference real when its interval includes zero."""

#: The tools in the order a client lists them (the lifecycle's order).
TOOL_NAMES = ("list_experiments", "show_experiment", "create_experiment",
              "validate_experiment", "plan_power", "run_experiment", "get_summary",
              "compare_runs", "query_results", "optimize_description")

#: Fields named by `ix.api` errors (command-line spellings) that a tool calls otherwise.
_ALIASES = {"p1": "p", "max_cost": "budget.max_cost", "max_trials": "budget.max_trials",
            "time_limit": "budget.time_limit"}
#: Parts of a pydantic error location that name a member of a union, not a field.
_UNION_TAG = re.compile(r"^(str|int|float|bool|dict|list|none)$|[^A-Za-z0-9_]")
#: After SIGTERM or Ctrl-C, how long the trials in flight of a run may take to finish before
#: they are cancelled (a client that signals the server wants it gone; `--resume` reruns them).
SHUTDOWN_GRACE_S = 1.0
#: The exit code of a server ended by SIGTERM or Ctrl-C (DESIGN.md: 130, cancelled).
SIGNALLED = 130


class IxTools(LabTools):
    """Every tool of `ix mcp`: the read, plan and create tools, and the run."""

    def __init__(self, lab: Path, max_trials: int = cap.DEFAULT_MAX_TRIALS):
        super().__init__(lab)
        self.max_trials = max_trials  # what one call may start (`ix mcp --max-trials`)
        #: experiments with a run going on (one at a time each), and its Ctrl-C
        self.running: dict[Path, threading.Semaphore] = {}

    def interrupt(self) -> None:
        """Ctrl-C to every run going on: the first stops scheduling, the second cancels
        the trials in flight (`Limits.interrupts`)."""
        for interrupts in list(self.running.values()):
            interrupts.release()

    async def run_experiment(
        self,
        experiment: ExperimentName,
        ctx: Context,
        trials: Annotated[Trials | None, Field(description=TRIALS_HELP)] = None,
        filters: Filters = [],  # noqa: B006 - never mutated
        subjects: Annotated[list[Text], Field(description=(
            "Run only these subjects (by name); default: all."))] = [],  # noqa: B006
        seed: Seed | None = None,
        runtime: Annotated[Text | None, Field(description=(
            "Run every subject with this runtime kind (e.g. mock, lexical)."))] = None,
        concurrency: Concurrency | None = None,
        smoke: Annotated[bool, Field(description=(
            "One trial of a few cases per subject: a quick check before a full run."))]
        = False,
        budget: Budget | None = None,
        strict: Annotated[bool, Field(description=(
            "Refuse to run when the design has warnings (validate_experiment lists them)."))]
        = False,
    ) -> dict[str, Any]:
        """Run an experiment: every case x subject x trial, recorded in its results/ and
        summarised. Streams a progress notification per completed trial (done/total). A
        client cancel stops scheduling: the trials in flight finish and the run is recorded
        `cancelled` with its completed trials (get_summary reads it). Returns the run id, its
        status and stop reason, the design warnings, and the summary (see get_summary). Can
        take long and cost money on real runtimes: validate_experiment first, and set a
        budget. One call may start at most the server's limit of trials (trials x cases x
        subjects; 10,000 unless the server was started with another): more is refused, or
        give budget.max_trials to run part of it."""
        path = self.experiment_dir(experiment)
        if path in self.running:
            raise ConfigError(f"a run of {path.name} is already going on in this server; "
                              "wait for it or cancel it first", field="experiment")
        overrides = api.Overrides(trials=trials, seed=seed, runtime=runtime,
                                  concurrency=concurrency, subjects=tuple(subjects),
                                  filters=tuple(filters), smoke=smoke)
        budget = budget or Budget()
        interrupts = threading.Semaphore(0)
        limits = api.Limits(max_trials=budget.max_trials, max_cost_usd=budget.max_cost,
                            time_limit_s=budget.time_limit, interrupts=interrupts)
        self.running[path] = interrupts
        try:
            return await run_experiment(
                self.lab, path, overrides, limits, ctx.report_progress, strict,
                check_plan=partial(cap.check, budget=budget.max_trials, limit=self.max_trials))
        finally:
            del self.running[path]


    async def optimize_description(
        self,
        experiment: ExperimentName,
        ctx: Context,
        skill: Annotated[Text | None, Field(description=(
            "The skill whose description to improve; default: the experiment's skill under "
            "test."))] = None,
        proposer: Annotated[Text, Field(description=(
            "Who writes candidates: 'keywords' (offline baseline), a subject profile, or a "
            "runtime kind such as 'anthropic'."))] = "keywords",
        rounds: Annotated[int, Field(ge=1, le=50, description="Rounds at most."),
                          NOT_A_BOOL] = 5,
        candidates: Annotated[int, Field(ge=1, le=20, description=(
            "Candidates per round."))] = 3,
        holdout: Annotated[float, Field(gt=0, lt=1, description=(
            "Share of the cases held out to judge the final candidate."))] = 0.4,
        seed: Seed | None = None,
        credibility: Annotated[float, Field(ge=0.5, lt=1, description=(
            "Recommend only if P(holdout F1 better) reaches this and the exact paired "
            "test's p is at most 1 − this."))] = Settings.credibility,
        tolerance: Annotated[float, Field(ge=0, lt=1, description=(
            "Recommend only if the 95% interval of the holdout F1 difference ends above "
            "−this."))] = Settings.tolerance,
        min_changed: Annotated[int, Field(ge=1, description=(
            "Recommend only if the gain rests on at least this many held-out cases the "
            "candidate gets right and the original wrong.")),
                               NOT_A_BOOL] = Settings.min_changed,
        screen_with: Annotated[Text | None, Field(description=(
            "A cheap proxy that ranks each round's candidates (a runtime kind such as "
            "'lexical', or a subject of the experiment); only the top `finalists` run on the "
            "real subject, whose holdout still decides."))] = None,
        finalists: Annotated[int, Field(ge=1, le=20, description=(
            "With screen_with: the candidates of a round run on the real subject.")),
                             NOT_A_BOOL] = Settings.finalists,
        apply: Annotated[bool, Field(description=(
            "Write a recommended description into SKILL.md (the old file is kept as a "
            ".bak beside it; the audit log records it)."))] = False,
        budget: Budget | None = None,
    ) -> dict[str, Any]:
        """Improve a skill's description with held-out evidence (`ix optimize`): the cases
        are split into train and holdout; each round a proposer sees only train prompts the
        description gets wrong and proposes candidates, which run on the train cases; the
        best by train F1 and the original then run on the holdout cases, compared case by
        case. Returns the session (optimize.json): `holdout.verdict` is `recommended` only
        if P(holdout F1 better) reaches the credibility, the exact paired test agrees, the
        interval ends above −tolerance and at least min_changed held-out cases improved
        (`holdout.why` says which failed) — otherwise say there is no credible
        improvement. Streams a progress notification per step; a client cancel stops it
        (calling again with the same arguments continues it). Each run may start at most
        the server's limit of trials."""
        path = self.experiment_dir(experiment)
        if path in self.running:
            raise ConfigError(f"a run of {path.name} is already going on in this server; "
                              "wait for it or cancel it first", field="experiment")
        budget = budget or Budget()
        stop, interrupts = threading.Event(), threading.Semaphore(0)
        limits = api.Limits(max_trials=budget.max_trials, time_limit_s=budget.time_limit,
                            stop=stop, interrupts=interrupts)
        settings = Settings(skill=skill, rounds=rounds, candidates=candidates,
                            holdout=holdout, seed=seed, credibility=credibility,
                            max_cost_usd=budget.max_cost, tolerance=tolerance,
                            min_changed=min_changed, screen_with=screen_with,
                            finalists=finalists)
        observer = _Steps(ctx, partial(cap.check, budget=budget.max_trials,
                                       limit=self.max_trials))

        def call() -> Any:
            return optimize(self.lab, str(path), settings, proposer=proposer, apply=apply,
                            limits=limits, observer=observer,
                            command=["ix", "mcp", "optimize_description", path.name])

        self.running[path] = interrupts
        try:
            async with anyio.create_task_group() as tg:
                async def watch() -> None:
                    try:
                        await anyio.sleep_forever()
                    finally:
                        stop.set()  # the client's cancel: stop scheduling, keep the trials
                tg.start_soon(watch)
                with anyio.CancelScope(shield=True):
                    try:
                        result = await anyio.to_thread.run_sync(call)
                    finally:
                        tg.cancel_scope.cancel()
        except BaseExceptionGroup as group:  # bad input raised in the task group: say it
            bad = [e for e in group.exceptions if isinstance(e, IxError)]
            if len(group.exceptions) == 1 and bad:
                raise bad[0] from None
            raise
        finally:
            del self.running[path]
        return {**result.state, "folder": str(result.folder.path), "reused": result.reused}


class _Steps(api.Observer):
    """`optimize_description` as the client hears it: a progress notification per step (sent
    from the worker thread the session runs in), each run's plan checked against the cap."""

    def __init__(self, ctx: Context, check_plan: Any):
        self._ctx, self._check_plan, self._steps = ctx, check_plan, 0

    def on_plan(self, plan: Any) -> None:
        self._check_plan(plan)

    def on_step(self, message: str) -> None:
        self._steps += 1
        with contextlib.suppress(Exception):  # a lost notification stops nothing
            anyio.from_thread.run(self._ctx.report_progress, self._steps, None, message)

    def on_warning(self, message: str) -> None:
        print(f"ix: warning: {message}", file=sys.stderr, flush=True)


class _Arguments:
    """A tool's arguments, checked strictly and explained in one line when they are wrong."""

    def __init__(self, tool: Tool):
        base = tool.fn_metadata.arg_model
        strict: type[ArgModelBase] = type(f"{tool.name}_arguments", (base,), {
            "model_config": ConfigDict(extra="forbid", arbitrary_types_allowed=True),
            "__module__": __name__})
        tool.fn_metadata.arg_model = strict
        tool.parameters = strict.model_json_schema(by_alias=True)
        self.tool = tool
        self.model = strict
        self.names = set(strict.model_fields)

    def problem(self, arguments: dict[str, Any]) -> str | None:
        try:
            self.model.model_validate(self.tool.fn_metadata.pre_parse_json(arguments))
        except ValidationError as exc:
            found: dict[str, list[str]] = {}
            for error in exc.errors(include_url=False):
                where = _location(error["loc"])
                if error["type"] == "extra_forbidden" and len(error["loc"]) == 1:
                    text = f"unknown argument (allowed: {', '.join(sorted(self.names))})"
                elif error["type"] == "extra_forbidden":
                    text = "unknown key"
                elif error["type"] == "missing":
                    text = "required"
                else:
                    text = f"{error['msg']} (got {_short(error['input'])})"
                if text not in found.setdefault(where, []):
                    found[where].append(text)
            return f"{self.tool.name}: invalid arguments: " + "; ".join(
                f"{where}: {' or '.join(texts)}" for where, texts in found.items())
        return None

    def explain(self, exc: IxError) -> str:
        """`ix.api`'s error, its field named as this tool's argument where it is one."""
        field = exc.field
        if field and exc.file is None:
            key = field.lstrip("-").replace("-", "_")
            for candidate in (key, f"{key}s", key.lower(), f"{key.lower()}s"):
                if candidate in self.names:
                    field = candidate
                    break
            else:
                if key in _ALIASES and _ALIASES[key].split(".")[0] in self.names:
                    field = _ALIASES[key]
        text = IxError(exc.message, file=exc.file, field=field).render()
        for _, found in getattr(exc, "warnings", None) or ():  # a DesignError: say them
            text += "".join(f"; {w.field}: {w.message} [{w.code}]" for w in found)
        return f"{self.tool.name}: {text}"


def _location(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not _UNION_TAG.search(part):
            out += f".{part}" if out else part
    return out or "arguments"


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


class IxServer(MCPServer):
    """`MCPServer` with ix's argument checks and error messages around every tool call."""

    def __init__(self, lab: Path, ix_tools: IxTools, tools: list[Tool]):
        super().__init__(name="ix", title="ix: experiments with error bars",
                         instructions=INSTRUCTIONS, version=__version__, tools=tools,
                         log_level="WARNING")
        self.lab = lab
        self.ix_tools = ix_tools
        self._arguments = {tool.name: _Arguments(tool) for tool in tools}

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Context | None = None) -> Any:
        checked = self._arguments.get(name)
        if checked is not None:
            problem = checked.problem(arguments)
            if problem is not None:
                return _error(problem)
        try:
            result = await super().call_tool(name, arguments, context)
        except UnexpectedToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, IxError) and checked is not None:
                return _error(checked.explain(cause))
            log.error("tool %s failed", name, exc_info=cause or exc)
            return _error(f"{name} failed: {type(cause or exc).__name__}: {cause or exc} "
                          "(the traceback is on the server's stderr)")
        except ToolError as exc:
            return _error(str(exc))
        if isinstance(result, CallToolResult) and result.structured_content is not None:
            # what the model reads: the same data as compact JSON (a third fewer tokens than
            # the SDK's indented text; clients cap a tool's output, see docs/mcp.md)
            text = json.dumps(result.structured_content, ensure_ascii=False)
            result.content = [TextContent(type="text", text=text)]
        return result


def build_server(lab: str | Path | None = None,
                 max_trials: int = cap.DEFAULT_MAX_TRIALS) -> IxServer:
    """The server for `lab` (a path or a name, as `--lab` takes it; None: around the cwd);
    one `run_experiment` call may start at most `max_trials` trials."""
    lab_path = api.Lab(lab).path
    tools = IxTools(lab_path, max_trials)
    return IxServer(lab_path, tools, [Tool.from_function(getattr(tools, name))
                                      for name in TOOL_NAMES])


def serve(lab: str | Path | None = None, max_trials: int | None = None) -> int:
    """Serve `lab` on stdin/stdout until the client closes the connection (0) or SIGTERM or
    Ctrl-C ends the server (130); the exit code. `max_trials`: `ix mcp --max-trials`."""
    server = build_server(lab, cap.max_trials(max_trials))
    print(f"ix mcp: serving lab {server.lab} on stdio (ix {__version__})", file=sys.stderr,
          flush=True)
    return anyio.run(serve_stdio, server)


async def serve_stdio(server: IxServer) -> int:
    """Serve until the client closes stdin (0) or a SIGTERM or Ctrl-C comes (130).

    A signal ends the server at once, whether idle or not: every run going on is interrupted
    as Ctrl-C interrupts `ix run` (nothing more is scheduled; the trials in flight get
    `SHUTDOWN_GRACE_S` to finish, then are cancelled, at once on a second signal) and is
    recorded `cancelled` with its completed trials before the server exits; stdin is not
    waited for.
    """
    serving = anyio.CancelScope()
    signalled: list[int] = []
    async with anyio.create_task_group() as tg:
        if sys.platform != "win32" and threading.current_thread() is threading.main_thread():
            await tg.start(_on_signals, server.ix_tools, serving, signalled)
        with serving:
            async with stdio_transport() as (read, write):
                # what MCPServer.run_stdio_async does, on ix's transport
                lowlevel = server._lowlevel_server
                await lowlevel.run(read, write, lowlevel.create_initialization_options())
        tg.cancel_scope.cancel()
    return SIGNALLED if signalled else 0


async def _on_signals(tools: IxTools, serving: anyio.CancelScope, signalled: list[int], *,
                      task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
                      ) -> None:
    """SIGTERM and SIGINT: interrupt the runs going on, then end the serving."""
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        task_status.started()
        async with anyio.create_task_group() as tg:
            async for signum in signals:
                signalled.append(signum)
                tools.interrupt()
                if len(signalled) == 1:
                    runs = ", ".join(sorted(p.name for p in tools.running))
                    kept = f"; the runs going on ({runs}) are recorded cancelled" if runs else ""
                    print(f"ix mcp: {signal.Signals(signum).name}: stopping{kept}",
                          file=sys.stderr, flush=True)
                    tg.start_soon(_after_grace, tools)
                    serving.cancel()


async def _after_grace(tools: IxTools) -> None:
    await anyio.sleep(SHUTDOWN_GRACE_S)
    tools.interrupt()  # the second Ctrl-C: the trials still in flight are cancelled
