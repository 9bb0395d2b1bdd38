"""`command`: run a program per trial (capability testing of CLIs, scripts, local agents).

The program is started directly (`asyncio.create_subprocess_exec`), never through a shell, so
a prompt full of `;`, `$(...)` or `|` is one argument like any other. It runs in a session of
its own: when the trial is cancelled (the per-trial timeout, Ctrl-C) the whole process group
is killed and reaped before the trial ends.

When the case has a workspace (DESIGN.md §10) the program runs in it (`cwd`, if given, is
then relative to it), and `{{ workspace }}` names it; `{{ seed }}` is the trial's seed,
`{{ attempt }}` its retry (or a judge's repeat).

It does not inherit ix's environment, which holds API keys: only `BASE_ENV` (what a program
needs to start and to speak the user's language), the names listed in `env_passthrough`, and
the `env` option's variables.
"""

import math
import os
import re
from typing import Annotated, Any

from pydantic import AfterValidator, ConfigDict, Field, field_validator

from ix.domain.model import Model
from ix.domain.types import Subject
from ix.domain.workspace import current_workspace
from ix.eval.models import EvalObservation
from ix.eval.process import MIB, last_json_object, program_env, run_process
from ix.runtimes import _templates, sandbox
from ix.runtimes._templates import TemplateStr
from ix.runtimes.registry import RuntimeContext, RuntimeKind, register
from ix.runtimes.sandbox import SandboxOptions

_ENV_HINT = ("environment variables are available only in the `env` option of the command "
             "runtime (or pass them through by name: `env_passthrough`)")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _env_name(name: str) -> str:
    if not _ENV_NAME.fullmatch(name):
        raise ValueError("not an environment variable name (letters, digits and '_', not "
                         "starting with a digit)")
    return name


def check_argv(value: list[str], *, program: bool = True) -> list[str]:
    """An argv option: every item a template that parses, the program (unless `program` is
    False: more arguments) not empty."""
    for i, item in enumerate(value):  # the index in the message: errors name the option
        try:
            _templates.check(item)
        except ValueError as exc:
            raise ValueError(f"argv[{i}]: {exc}") from None
    if program and not value[0].strip():
        raise ValueError("argv[0] (the program) is empty")
    return value


def check_env(value: dict[str, str]) -> dict[str, str]:
    """An env option: names a program's environment can hold."""
    for name in value:
        if not name or "=" in name or "\0" in name:
            raise ValueError(f"{name!r} is not a valid environment variable name")
    return value


#: An environment variable's name, as `env_passthrough` lists them.
EnvName = Annotated[str, AfterValidator(_env_name)]


class CommandOptions(Model):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    argv: list[str] = Field(min_length=1)
    stdin: TemplateStr | None = None
    cwd: str | None = None
    env: dict[str, TemplateStr] = Field(default_factory=dict)
    env_passthrough: list[EnvName] = Field(default_factory=list)
    max_output_bytes: int = Field(MIB, ge=1)
    #: the program reports what it spent: a JSON object on its last line of output with
    #: `tokens_input`, `tokens_output`, `cost_usd` (any of them) is the trial's usage
    report_usage: bool = False
    #: `{network: false}`: the program runs with no network (`ix.runtimes.sandbox`)
    sandbox: SandboxOptions | None = None

    @field_validator("argv")
    @classmethod
    def _argv(cls, value: list[str]) -> list[str]:
        return check_argv(value)

    @field_validator("env")
    @classmethod
    def _env(cls, value: dict[str, str]) -> dict[str, str]:
        return check_env(value)



class CommandRuntime:
    """One program run per trial: argv, stdin and env rendered from the case."""

    def __init__(self, options: CommandOptions, context: RuntimeContext):
        self.options = options
        self._argv = [_templates.Template(a, f"argv[{i}]") for i, a in enumerate(options.argv)]
        self._stdin = (_templates.Template(options.stdin, "stdin")
                       if options.stdin is not None else None)
        self._env = {k: _templates.Template(v, f"env.{k}") for k, v in options.env.items()}
        self._cwd = options.cwd
        sandbox.check(options.sandbox)  # before any trial: exit 2 where it cannot be had
        self._prefix = sandbox.prefix() if options.sandbox and not options.sandbox.network \
            else []
        #: whether a case's history reaches the program (`ix.engine.plan` refuses it if not)
        self.reads_history = _templates.reads_history(
            [*self._argv, *([self._stdin] if self._stdin else []), *self._env.values()])

    async def invoke(
        self, subject: Subject, stimulus: Any, *, seed: int = 0, attempt: int = 0
    ) -> EvalObservation:
        ctx = _templates.context(subject, stimulus, env_hint=_ENV_HINT, seed=seed,
                                 attempt=attempt)
        argv = [*self._prefix, *(t.render(ctx) for t in self._argv)]
        stdin = self._stdin.render(ctx).encode("utf-8") if self._stdin is not None else None
        env = program_env(os.environ, self.options.env_passthrough)
        if self._env:
            env_ctx = _templates.with_env(ctx)
            env.update({k: t.render(env_ctx) for k, t in self._env.items()})
        # in its case's workspace, if it has one (a relative `cwd` is inside it)
        workspace = current_workspace()
        cwd = self._cwd
        if workspace is not None:
            cwd = str(workspace / cwd) if cwd is not None else str(workspace)
        done = await run_process(argv, stdin=stdin, cwd=cwd, env=env,
                                 max_output_bytes=self.options.max_output_bytes)
        if self.options.report_usage:
            usage = reported_usage(done.stdout or "")
            if usage:
                return done.model_copy(update=usage)
        return done


def reported_usage(stdout: str) -> dict[str, Any]:
    """`tokens_input`, `tokens_output` (integers ≥ 0) and `cost_usd` (a number ≥ 0) of a JSON
    object on the last line of `stdout`; what is missing or of another type is left out."""
    data = last_json_object(stdout)
    out: dict[str, Any] = {}
    for key in ("tokens_input", "tokens_output"):
        value = data.get(key)
        if type(value) is int and 0 <= value < 2**63:
            out[key] = value
    cost = data.get("cost_usd")
    if isinstance(cost, int | float) and not isinstance(cost, bool) \
            and math.isfinite(cost) and cost >= 0:
        out["cost_usd"] = float(cost)
    return out


def _default_concurrency() -> int:
    return max(4, min(32, (os.cpu_count() or 4) * 2))


register(RuntimeKind(
    name="command",
    history="template",
    options=CommandOptions,
    build=CommandRuntime,
    default_concurrency=_default_concurrency(),
    summary="runs a program per trial (argv/stdin/env templated from the case); no shell",
))
