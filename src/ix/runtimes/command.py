"""`command`: run a program per trial (capability testing of CLIs, scripts, local agents).

The program is started directly (`asyncio.create_subprocess_exec`), never through a shell, so
a prompt full of `;`, `$(...)` or `|` is one argument like any other. It runs in a session of
its own: when the trial is cancelled (the per-trial timeout, Ctrl-C) the whole process group
is killed and reaped before the trial ends.

It does not inherit ix's environment, which holds API keys: only `BASE_ENV` (what a program
needs to start and to speak the user's language), the names listed in `env_passthrough`, and
the `env` option's variables.
"""

import asyncio
import codecs
import contextlib
import os
import re
import signal
import time
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, ConfigDict, Field, field_validator

from ix.domain.errors import TrialError
from ix.domain.model import Model
from ix.domain.types import Subject
from ix.eval.models import EvalObservation
from ix.runtimes import _templates
from ix.runtimes._templates import TemplateStr
from ix.runtimes.registry import RuntimeContext, RuntimeKind, register

MIB = 1 << 20
_CHUNK = 1 << 16
_ENV_HINT = ("environment variables are available only in the `env` option of the command "
             "runtime (or pass them through by name: `env_passthrough`)")
#: Variables a program gets from ix's environment without asking; `LC_` covers every
#: `LC_*` locale category. Everything else (API keys first) stays out unless it is named in
#: `env_passthrough` or set in `env`.
BASE_ENV = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR",
            "TERM")
BASE_ENV_PREFIXES = ("LC_",)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _env_name(name: str) -> str:
    if not _ENV_NAME.fullmatch(name):
        raise ValueError("not an environment variable name (letters, digits and '_', not "
                         "starting with a digit)")
    return name


class CommandOptions(Model):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    argv: list[str] = Field(min_length=1)
    stdin: TemplateStr | None = None
    cwd: str | None = None
    env: dict[str, TemplateStr] = Field(default_factory=dict)
    env_passthrough: list[Annotated[str, AfterValidator(_env_name)]] = \
        Field(default_factory=list)
    max_output_bytes: int = Field(MIB, ge=1)

    @field_validator("argv")
    @classmethod
    def _argv(cls, value: list[str]) -> list[str]:
        for i, item in enumerate(value):  # the index in the message: errors name the option
            try:
                _templates.check(item)
            except ValueError as exc:
                raise ValueError(f"argv[{i}]: {exc}") from None
        if not value[0].strip():
            raise ValueError("argv[0] (the program) is empty")
        return value

    @field_validator("env")
    @classmethod
    def _env(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not name or "=" in name or "\0" in name:
                raise ValueError(f"{name!r} is not a valid environment variable name")
        return value



class CommandRuntime:
    """One program run per trial: argv, stdin and env rendered from the case."""

    def __init__(self, options: CommandOptions, context: RuntimeContext):
        self.options = options
        self._argv = [_templates.Template(a, f"argv[{i}]") for i, a in enumerate(options.argv)]
        self._stdin = (_templates.Template(options.stdin, "stdin")
                       if options.stdin is not None else None)
        self._env = {k: _templates.Template(v, f"env.{k}") for k, v in options.env.items()}
        self._cwd = options.cwd
        #: whether a case's history reaches the program (`ix.engine.plan` refuses it if not)
        self.reads_history = _templates.reads_history(
            [*self._argv, *([self._stdin] if self._stdin else []), *self._env.values()])

    async def invoke(
        self, subject: Subject, stimulus: Any, *, seed: int = 0, attempt: int = 0
    ) -> EvalObservation:
        ctx = _templates.context(subject, stimulus, env_hint=_ENV_HINT)
        argv = [t.render(ctx) for t in self._argv]
        stdin = self._stdin.render(ctx).encode("utf-8") if self._stdin is not None else None
        env = program_env(os.environ, self.options.env_passthrough)
        if self._env:
            env_ctx = _templates.with_env(ctx)
            env.update({k: t.render(env_ctx) for k, t in self._env.items()})
        return await run_process(argv, stdin=stdin, cwd=self._cwd, env=env,
                                 max_output_bytes=self.options.max_output_bytes)


def program_env(environ: Mapping[str, str], passthrough: list[str]) -> dict[str, str]:
    """What the program inherits of `environ`: `BASE_ENV`, `LC_*`, and `passthrough`."""
    names = set(BASE_ENV) | set(passthrough)
    return {k: v for k, v in environ.items()
            if k in names or k.startswith(BASE_ENV_PREFIXES)}


async def run_process(argv: list[str], *, stdin: bytes | None, cwd: str | None,
                      env: dict[str, str] | None, max_output_bytes: int) -> EvalObservation:
    """Run `argv` to completion; cancelled, it kills the process group and reaps the process."""
    t0 = time.perf_counter()
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, cwd=cwd, env=env, start_new_session=True,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    except FileNotFoundError as exc:
        if cwd is not None and exc.filename == cwd:
            raise TrialError("cwd_not_found",
                             f"working directory {cwd!r} does not exist") from None
        raise TrialError("command_not_found", f"no such program: {argv[0]!r}") from None
    except NotADirectoryError:
        raise TrialError("cwd_not_found", f"working directory {cwd!r} is not a directory") \
            from None
    except PermissionError as exc:
        raise TrialError("permission_denied", f"{argv[0]!r}: {exc.strerror}") from None
    except OSError as exc:
        raise TrialError("command_failed", f"{argv[0]!r} could not start: {exc}") from None
    try:
        _, (out, out_n), (err, err_n) = await asyncio.gather(
            _feed(proc.stdin, stdin),
            _read(proc.stdout, max_output_bytes),
            _read(proc.stderr, max_output_bytes),
        )
        code = await proc.wait()
    except BaseException:
        _kill_group(proc)
        await _reap(proc)
        raise
    duration_ms = int((time.perf_counter() - t0) * 1000)
    meta = None
    if out_n > max_output_bytes or err_n > max_output_bytes:
        meta = {"truncated": True, "stdout_bytes": out_n, "stderr_bytes": err_n,
                "max_output_bytes": max_output_bytes}
    stdout = _decode(out, truncated=out_n > max_output_bytes)
    return EvalObservation(content=stdout, exit_code=code, stdout=stdout,
                           stderr=_decode(err, truncated=err_n > max_output_bytes),
                           duration_ms=duration_ms, meta=meta)


async def _feed(pipe: asyncio.StreamWriter | None, data: bytes | None) -> None:
    if pipe is None:
        return
    try:
        if data:
            pipe.write(data)
            await pipe.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the program did not read all of its input: its business
    finally:
        pipe.close()


async def _read(pipe: asyncio.StreamReader | None, limit: int) -> tuple[bytes, int]:
    """Up to `limit` bytes of the stream, and how many it had in all (the rest is drained)."""
    if pipe is None:
        return b"", 0
    kept = bytearray()
    total = 0
    while chunk := await pipe.read(_CHUNK):
        total += len(chunk)
        room = limit - len(kept)
        if room > 0:
            kept += chunk[:room]
    return bytes(kept), total


def _decode(data: bytes, *, truncated: bool) -> str:
    if not truncated:
        return data.decode("utf-8", errors="replace")
    # Cut mid-character: drop the incomplete tail rather than show a replacement character.
    return codecs.getincrementaldecoder("utf-8")(errors="replace").decode(data, final=False)


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    """SIGKILL the program's process group: also what it started that still holds a pipe."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()


async def _reap(proc: asyncio.subprocess.Process) -> None:
    """Wait for the killed process even if the trial is cancelled again meanwhile."""
    waiter = asyncio.ensure_future(proc.wait())
    while not waiter.done():
        try:
            await asyncio.shield(waiter)
        except asyncio.CancelledError:
            continue


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
