"""A program run to its end, its output bounded (`command` runs one per trial, the `check`
sensor one per trial's finished workspace).

The program is started directly (`asyncio.create_subprocess_exec`), never through a shell,
in a session of its own: when the caller is cancelled (the per-trial timeout, Ctrl-C) the
whole process group is killed and reaped before the call ends.
"""

import asyncio
import codecs
import contextlib
import json
import os
import signal
import time
from collections.abc import Mapping
from typing import Any

from ix.domain.errors import TrialError
from ix.eval.models import EvalObservation

MIB = 1 << 20
_CHUNK = 1 << 16
#: Variables a program gets from ix's environment without asking; `LC_` covers every
#: `LC_*` locale category. Everything else (API keys first) stays out unless it is named in
#: `env_passthrough` or set in `env`.
BASE_ENV = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR",
            "TERM")
BASE_ENV_PREFIXES = ("LC_",)


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


def last_json_object(stdout: str) -> dict[str, Any]:
    """The JSON object on the last non-blank line of a program's output (how a program tells
    ix what it spent, or its score); {} when there is none."""
    lines = stdout.strip().splitlines()
    try:
        data = json.loads(lines[-1]) if lines else None
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


__all__ = ["BASE_ENV", "BASE_ENV_PREFIXES", "MIB", "last_json_object", "program_env", "run_process"]
