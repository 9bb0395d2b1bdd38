"""The agent loop of an API subject with tools (DESIGN.md §11): model → tools → model, until
the model answers without calling a tool, `max_turns` model calls, or a per-trial limit.

The provider (`anthropic`, `openai`) sends one request and reads its response; this module
answers the calls in between and keeps the whole trial as one observation: the last answer's
text, every tool call in order with its input, the tokens, cost and time of every request
summed, `meta.turns` (the model's calls), and a trace with each request, response and tool
result, so the transcript sensors read an API agent as they read Claude Code. A call of the
`Skill` tool is answered with the skill's SKILL.md, as Claude Code loads it.
"""

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Annotated, Any

from pydantic import Field

from ix.domain.errors import ConfigError
from ix.domain.model import Model
from ix.domain.types import Subject
from ix.eval.models import EvalObservation
from ix.runtimes._skills import SKILL_TOOL_NAME
from ix.runtimes.tools import Limits, ToolSpec, call_tool

#: (call id, tool name, input) of one call a response asks for
Call = tuple[str, str, dict[str, Any]]
#: (call id, result, is_error) of one answered call
Result = tuple[str, str, bool]


class ToolLoopOptions(Model):
    """The options an API runtime takes for its own tools (mixed into its options)."""

    #: the subject's tools; none: one request per trial, as before tools existed
    tools: list[ToolSpec] = Field(default_factory=list)
    #: the most model calls in one trial
    max_turns: Annotated[int, Field(ge=1, le=1000)] = 20
    #: a trial's own limits: the loop stops before the call that would go past one
    limits: Limits | None = None


def refuse_batched_tools(options: Any) -> None:
    """A batch holds one request a trial: a loop of them cannot be batched."""
    if getattr(options, "batch", False) and options.tools:
        raise ConfigError("batch: true sends one request per trial; a subject with tools "
                          "makes several (drop batch, or the tools)", field="runtime.batch")


async def tool_loop(body: dict[str, Any], *, subject: Subject, options: ToolLoopOptions,
                    send: Callable[[dict[str, Any]], Awaitable[tuple[dict[str, Any],
                                                                     EvalObservation]]],
                    calls_of: Callable[[dict[str, Any]], list[Call]],
                    follow: Callable[[dict[str, Any], dict[str, Any], list[Result]],
                                     dict[str, Any]]) -> EvalObservation:
    """One trial of a tool-using subject: `send` one request (the response's data and its
    observation), `calls_of` a response's tool calls, `follow` the next request after it
    with the calls answered."""
    tools = {t.name: t for t in options.tools}
    start = time.perf_counter()
    steps: list[EvalObservation] = []
    trace: list[Any] = []
    answered = 0
    stop: str | None = None
    while True:
        data, step = await send(body)
        steps.append(step)
        trace += step.trace if isinstance(step.trace, list) else [step.trace]
        pending = calls_of(data)
        if not pending:
            break
        results: list[Result] = []
        for call_id, name, arguments in pending:
            text, failed = await _answer(name, arguments, tools, subject)
            trace.append({"type": "tool_result", "name": name, "input": arguments,
                          "result": text, "is_error": failed})
            results.append((call_id, text, failed))
        answered += len(results)
        stop = _stopped(steps, options, start)
        if stop is not None:
            break
        body = follow(body, data, results)
    return _merged(steps, trace, answered, stop, start)


async def _answer(name: str, arguments: dict[str, Any], tools: Mapping[str, ToolSpec],
                  subject: Subject) -> tuple[str, bool]:
    if name in tools:
        return await call_tool(tools[name], arguments)
    if name == SKILL_TOOL_NAME:
        return skill_text(subject, str(arguments.get("skill", ""))), False
    return f"error: there is no tool named {name!r}", True


def skill_text(subject: Subject, name: str) -> str:
    """What a call of the Skill tool loads: the skill's SKILL.md, as Claude Code does."""
    for skill in subject.config.get("skills") or ():
        if isinstance(skill, Mapping) and skill.get("name") == name and skill.get("path"):
            try:
                with open(skill["path"], encoding="utf-8") as f:
                    return f.read()
            except OSError:
                break
    return f"Launching skill: {name}"


def _stopped(steps: Sequence[EvalObservation], options: ToolLoopOptions,
             start: float) -> str | None:
    """Why the loop ends before its next model call: `max_turns`, or a limit it reached."""
    if len(steps) >= options.max_turns:
        return "max_turns"
    limits = options.limits
    if limits is None:
        return None
    tokens = sum(s.tokens_input + s.tokens_output for s in steps)
    if limits.tokens is not None and tokens >= limits.tokens:
        return "tokens"
    if limits.cost_usd is not None and sum(s.cost_usd for s in steps) >= limits.cost_usd:
        return "cost_usd"
    if limits.time_s is not None and time.perf_counter() - start >= limits.time_s:
        return "time_s"
    return None


def _merged(steps: Sequence[EvalObservation], trace: list[Any], answered: int,
            stop: str | None, start: float) -> EvalObservation:
    last = steps[-1]
    meta: dict[str, Any] = {**(last.meta or {}), "turns": len(steps), "tool_results": answered}
    if stop is not None:
        meta["limit"] = stop
    retries = sum(int((s.meta or {}).get("retries") or 0) for s in steps)
    if retries:
        meta["retries"] = retries
    if any((s.meta or {}).get("price_unknown") for s in steps):
        meta["price_unknown"] = True
    return EvalObservation(
        content=last.content, tool_calls=tuple(c for s in steps for c in s.tool_calls),
        duration_ms=round((time.perf_counter() - start) * 1000),
        tokens_input=sum(s.tokens_input for s in steps),
        tokens_output=sum(s.tokens_output for s in steps),
        cost_usd=round(sum(s.cost_usd for s in steps), 9), meta=meta, trace=trace)


__all__ = ["Call", "Result", "ToolLoopOptions", "refuse_batched_tools", "skill_text",
           "tool_loop"]
