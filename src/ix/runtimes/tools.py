"""An API subject's own tools (DESIGN.md §11, docs/agents.md): what each is, and how a call
of it is answered.

    runtime:
      kind: anthropic
      model: claude-sonnet-4-5
      tools:
        - name: get_weather
          description: The weather in a city now.
          input_schema: {type: object, properties: {city: {type: string}}, required: [city]}
          run: {kind: command, argv: [python, tools/weather.py]}

A tool runs as a program (`command`: the call's input as JSON on stdin, its stdout the
result; in the case's workspace when it has one, with the `command` runtime's allowlisted
environment), as an HTTP endpoint (`http`: the input POSTed as JSON, the body the result) or
as a Python callable (`python`: `function: package.module:name`, called with the input's
keys; what it returns is the result, text or JSON). A tool that fails — a non-zero exit, an
HTTP error, an exception, its time limit — answers the model with the error as its result
(`is_error`): the model sees it and may go on, as it would with any tool. Only the loop's
own failures (the model's API) fail the trial.
"""

import asyncio
import importlib
import inspect
import json
import os
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, field_validator

from ix._lazy import lazy
from ix.domain.errors import TrialError
from ix.domain.model import Model
from ix.domain.workspace import current_workspace
from ix.eval.process import program_env, run_process

httpx = lazy("httpx")

#: What a tool's result may hold before it is cut (the model sees the first part, and that
#: it was cut): a tool that prints a file of a gigabyte must not become the next request.
MAX_RESULT_CHARS = 64_000


class _Strict(Model):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class CommandTool(_Strict):
    kind: Literal["command"]
    argv: Annotated[list[str], Field(min_length=1)]
    env_passthrough: list[str] = Field(default_factory=list)
    timeout_s: Annotated[float, Field(gt=0)] = 30.0


class HttpTool(_Strict):
    kind: Literal["http"]
    url: Annotated[str, Field(pattern=r"^https?://")]
    headers: dict[str, str] = Field(default_factory=dict)
    timeout_s: Annotated[float, Field(gt=0)] = 30.0


class PythonTool(_Strict):
    kind: Literal["python"]
    #: `package.module:name`, importable where ix runs
    function: Annotated[str, Field(pattern=r"^[\w.]+:\w+$")]
    timeout_s: Annotated[float, Field(gt=0)] = 30.0


class ToolSpec(_Strict):
    """One tool offered to the model: its name, description and input schema, and how a call
    of it is answered."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    run: Annotated[CommandTool | HttpTool | PythonTool, Field(discriminator="kind")]

    @field_validator("input_schema")
    @classmethod
    def _object(cls, value: dict[str, Any]) -> dict[str, Any]:
        if value.get("type") != "object":
            raise ValueError("must be a JSON schema of type object (a tool takes named inputs)")
        return value


class Limits(_Strict):
    """A trial's own limits (`limits:`): the loop stops before the call that would go on
    past one, and says which in `meta.limit`."""

    tokens: Annotated[int, Field(ge=1)] | None = None
    cost_usd: Annotated[float, Field(gt=0)] | None = None
    time_s: Annotated[float, Field(gt=0)] | None = None


async def call_tool(spec: ToolSpec, arguments: dict[str, Any]) -> tuple[str, bool]:
    """(result, is_error) of one call: what the model is told."""
    run = spec.run
    try:
        async with asyncio.timeout(run.timeout_s):
            if isinstance(run, CommandTool):
                text, failed = await _command(run, arguments)
            elif isinstance(run, HttpTool):
                text, failed = await _http(run, arguments)
            else:
                text, failed = await _python(run, arguments), False
    except TimeoutError:
        return f"error: the tool {spec.name} did not answer within {run.timeout_s:g} s", True
    except TrialError as exc:
        return f"error: {exc.message}", True
    except Exception as exc:  # a tool's failure is the model's to see, never a crash
        return f"error: {type(exc).__name__}: {exc}", True
    if len(text) > MAX_RESULT_CHARS:
        text = text[:MAX_RESULT_CHARS] + f"\n[cut: {len(text)} characters in all]"
    return text, failed


async def _command(run: CommandTool, arguments: dict[str, Any]) -> tuple[str, bool]:
    workspace = current_workspace()
    done = await run_process(list(run.argv), stdin=json.dumps(arguments).encode(),
                             cwd=str(workspace) if workspace is not None else None,
                             env=program_env(os.environ, run.env_passthrough),
                             max_output_bytes=MAX_RESULT_CHARS * 4)
    if done.exit_code:
        said = (done.stderr or done.stdout or "").strip()
        return f"error: exit {done.exit_code}" + (f": {said}" if said else ""), True
    return (done.stdout or "").rstrip("\n"), False


async def _http(run: HttpTool, arguments: dict[str, Any]) -> tuple[str, bool]:
    async with httpx.AsyncClient(timeout=run.timeout_s) as client:
        response = await client.post(run.url, json=arguments, headers=run.headers)
    if response.status_code >= 400:
        return f"error: HTTP {response.status_code}: {response.text[:2000]}", True
    return response.text, False


async def _python(run: PythonTool, arguments: dict[str, Any]) -> str:
    function = python_function(run.function)
    result = function(**arguments)
    if inspect.isawaitable(result):
        result = await result
    return result if isinstance(result, str) else json.dumps(result, default=str)


def python_function(path: str) -> Callable[..., Any]:
    """The callable `package.module:name` names; a `TrialError` when there is none."""
    module_name, _, name = path.partition(":")
    try:
        function = getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError) as exc:
        raise TrialError("tool_not_found", f"{path}: {exc}") from None
    if not callable(function):
        raise TrialError("tool_not_found", f"{path} is not callable")
    return function


__all__ = ["Limits", "ToolSpec", "call_tool", "python_function"]
