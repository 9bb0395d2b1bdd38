"""`ix serve`: a resident worker that keeps ix's imports warm for the `ix` command.

The server imports the command tree, every command's module and the heavy libraries they
use (typer, rich, pydantic, numpy, scipy, DuckDB, ...) once, then listens on a Unix socket
(`ix.cli.warm.socket_path`: in a folder of mode 0700, the socket 0600, and only a peer of
the same user is heard). For each command an `ix` sends, it forks a waiter, which forks the
command: a new session on the client's stdin, stdout and stderr, in its folder, with its
environment, and its own fresh `ix.cli` modules (their consoles read that environment).
The waiter sends back the command's pid (signals go there) and then its exit code. No
thread ever runs in the server, so forking it is safe; the query index and the runtimes
are not kept (they hold files, connections and loops that a fork must not share).
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import random
import select
import signal
import socket
import sys
import time
import traceback
from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from ix.cli import run_here
from ix.cli.main import COMMANDS
from ix.cli.options import JsonFormat as Json
from ix.cli.output import out, print_json
from ix.cli.warm import connect, identity, receive, same_user, send, socket_path
from ix.domain.errors import ConfigError

#: Libraries the commands load on demand (`ix._lazy`), imported by the server up front.
#: Not DuckDB: importing it starts a thread, and a process with threads must not fork.
HEAVY = ("numpy", "scipy.special", "scipy.stats", "scipy.optimize", "jinja2", "orjson",
         "yaml", "httpx")
#: The numerical libraries' thread pools, kept at one thread: none runs when the server forks.
ONE_THREAD = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
#: The modules a command's process keeps of the server's `ix.cli`: the rest are imported
#: again there, so that what they build at import (the consoles) sees the client's terminal.
KEPT = ("ix.cli", "ix.cli.warm", "ix.cli.serve")
_kept_streams: list[Any] = []  # the server's own sys.std* objects: never closed by the GC


def serve(
    stop: Annotated[bool, typer.Option("--stop", help="Stop the running server.")] = False,
    status: Annotated[bool, typer.Option(
        "--status", help="Say whether a server runs, where, and since when.")] = False,
    detach: Annotated[bool, typer.Option(
        "--detach", help="Serve in the background: return once the server answers.")] = False,
    json_out: Json = False,
) -> None:
    """Keep ix warm: a resident worker that runs each `ix` command in a forked child with
    the imports already done.

    `ix` uses it when it answers on the socket ($IX_SERVE_SOCKET, else ix/serve.sock under
    $XDG_RUNTIME_DIR or ~/.cache) and runs the same ix; otherwise, or with IX_NO_SERVE=1,
    commands run as usual. It serves in the foreground until Ctrl-C or `ix serve --stop`."""
    path = socket_path()
    if stop or status:
        if stop and status:
            raise ConfigError("give --stop or --status, not both", field="--stop")
        state = _control(path, "stop" if stop else "status")
        if json_out:
            print_json({"socket": path, "serving": state is not None, **(state or {})})
        elif state is None:
            out.print(f"no ix server answers on {path}", markup=False, soft_wrap=True)
        elif stop:
            out.print(f"stopped the ix server (pid {state['server_pid']}) on {path}",
                      markup=False, soft_wrap=True)
        else:
            out.print(f"serving on {path} (pid {state['server_pid']}, since "
                      f"{state['since']}, {state['served']} commands served)", markup=False,
                      soft_wrap=True)
        return
    _check_free(path)
    _preload()  # before listening: a client that connects is answered at once
    listener = _listen(path)
    if detach:
        _detach(listener, path, json_out)
        return
    out.print(f"serving on {path} (pid {os.getpid()}); `ix serve --stop` stops it",
              markup=False, soft_wrap=True)
    sys.stdout.flush()
    _serve(listener, path)


def _control(path: str, what: str) -> dict[str, Any] | None:
    """Ask the server on `path` for its status, or to stop: its answer, None if none."""
    sock = connect(path)
    if sock is None:
        return None
    with sock:
        try:
            send(sock, {"control": what})
            answer, _ = receive(sock)
        except (OSError, ValueError):
            return None
    if answer is not None and what == "stop":  # gone once its socket is
        deadline = time.monotonic() + 10
        while os.path.exists(path) and time.monotonic() < deadline:
            time.sleep(0.02)
    return answer


def _check_free(path: str) -> None:
    """`path` may be served: its folder is the user's, and no server answers there."""
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, mode=0o700, exist_ok=True)
    if os.stat(folder).st_uid != os.getuid():
        raise ConfigError(f"{folder} belongs to another user; set IX_SERVE_SOCKET to a path "
                          "in a folder of yours", field="IX_SERVE_SOCKET")
    probe = connect(path)
    if probe is not None:
        probe.close()
        raise ConfigError(f"an ix server already answers on {path} (`ix serve --status`; "
                          "`ix serve --stop` stops it)", field="IX_SERVE_SOCKET")


def _listen(path: str) -> socket.socket:
    """The server's socket, bound at `path` (0600, in a folder of the user's, 0700)."""
    if os.path.lexists(path):  # a stale socket: its server is gone
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    mask = os.umask(0o177)
    try:
        listener.bind(path)
    except OSError as exc:
        listener.close()
        raise ConfigError(f"cannot listen on {path}: {exc.strerror or exc}",
                          field="IX_SERVE_SOCKET") from None
    finally:
        os.umask(mask)
    os.chmod(path, 0o600)
    listener.listen(64)
    return listener


def _detach(listener: socket.socket, path: str, json_out: bool) -> None:
    """Serve from a background process of its own session; return once it answers."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            _serve(listener, path)
        finally:
            os._exit(0)
    listener.close()
    deadline = time.monotonic() + 60
    while (state := _control(path, "status")) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    if state is None:
        raise ConfigError(f"the server (pid {pid}) did not answer on {path}",
                          field="--detach")
    if json_out:
        print_json({"socket": path, "serving": True, **state})
    else:
        out.print(f"serving on {path} (pid {pid}); `ix serve --stop` stops it", markup=False,
                  soft_wrap=True)


def _preload() -> None:
    """Import what the commands use, then keep it out of the collector's sight (`freeze`),
    so that no collection in a child touches (and copies) the pages it lies on."""
    gc.disable()
    for name in ONE_THREAD:
        os.environ.setdefault(name, "1")
    for entry in COMMANDS.values():
        with contextlib.suppress(Exception):
            importlib.import_module(entry.module)
    for name in HEAVY:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    gc.freeze()
    gc.enable()


def _serve(listener: socket.socket, path: str) -> None:
    """Accept commands until SIGTERM, SIGINT or `--stop`; then remove the socket."""
    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, _: stopping.append(signum))
    signal.signal(signal.SIGINT, lambda signum, _: stopping.append(signum))
    listener.settimeout(0.2)
    since = datetime.now(UTC).isoformat(timespec="seconds")
    served = 0
    mine = os.stat(path).st_ino
    try:
        while not stopping:
            _reap()
            try:
                conn, _ = listener.accept()
            except (TimeoutError, InterruptedError):
                continue
            with conn:
                served += _answer(conn, listener, {"since": since, "served": served},
                                  stopping)
    finally:
        listener.close()
        try:
            if os.stat(path).st_ino == mine:
                os.unlink(path)
        except OSError:
            pass


def _reap() -> None:
    """Collect the waiters that ended."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def _answer(conn: socket.socket, listener: socket.socket, state: dict[str, Any],
            stopping: list[int]) -> int:
    """One request: a control (status, stop) or a command, forked. 1 if a command ran."""
    conn.settimeout(5)
    fds: list[int] = []
    try:
        if not same_user(conn):
            return 0
        message, fds = receive(conn, fds=3)
        if message is None:
            return 0
        if "control" in message:
            send(conn, {"server_pid": os.getpid(), "since": state["since"],
                        "served": state["served"], "identity": identity()})
            if message["control"] == "stop":
                stopping.append(0)
            return 0
        if message.get("identity") != identity() or len(fds) != 3:
            send(conn, {"refused": "this server runs another ix"})
            return 0
        send(conn, {"ready": True})
        go, _ = receive(conn)
        if not go or not go.get("go"):  # the client gave up: it runs the command itself
            return 0
        sys.stdout.flush()
        sys.stderr.flush()
        if os.fork() == 0:  # the waiter
            code = 0
            try:
                listener.close()
                _wait_for(conn, message, fds)
            except BaseException:
                code = 1
            os._exit(code)
        return 1
    except (OSError, ValueError):
        return 0
    finally:
        for fd in fds:
            os.close(fd)


def _wait_for(conn: socket.socket, message: dict[str, Any], fds: list[int]) -> None:
    """The waiter: fork the command, tell the client its pid, then its exit code."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server's Ctrl-C is not the command's
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    pid = os.fork()
    if pid == 0:
        _command(conn, message, fds)
    conn.settimeout(None)
    send(conn, {"pid": pid})
    if hasattr(os, "pidfd_open"):  # Linux: wait for the command or the client's hang-up
        ended = os.pidfd_open(pid)
        watched: list[Any] = [ended, conn]
        while True:
            readable, _, _ = select.select(watched, [], [])
            if ended in readable:
                break
            if not conn.recv(1):  # the client is gone (killed): the command hears it as
                watched = [ended]  # a closed terminal, and the waiter waits on
                with contextlib.suppress(OSError):
                    os.killpg(pid, signal.SIGHUP)
        os.close(ended)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    send(conn, {"exit": code if code >= 0 else 128 - code})


def _command(conn: socket.socket, message: dict[str, Any], fds: list[int]) -> None:
    """The command's process: the client's streams, folder, environment; never returns."""
    code: int = 1
    try:
        os.setsid()  # no controlling terminal: reading the client's is no background job's
        conn.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for name in ("SIGTERM", "SIGTSTP", "SIGCONT", "SIGCHLD", "SIGHUP"):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in message["env"].items()})
        os.chdir(message["cwd"])
        sys.argv = ["ix", *[str(a) for a in message["run"]]]
        _fresh_streams()
        for name in [m for m in sys.modules if m.startswith("ix.cli.") and m not in KEPT]:
            del sys.modules[name]
        random.seed()
        if "numpy" in sys.modules:
            sys.modules["numpy"].random.seed()
        run_here()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
    except KeyboardInterrupt:
        code = 130
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def _fresh_streams() -> None:
    """sys.stdin, stdout and stderr made anew on descriptors 0-2 as Python makes them: line
    buffered on a terminal, in the client's PYTHONIOENCODING (else UTF-8)."""
    _kept_streams.extend([sys.stdin, sys.stdout, sys.stderr])
    encoding = os.environ.get("PYTHONIOENCODING", "").split(":")[0] or "utf-8"
    sys.stdin = open(0, encoding=encoding, closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", encoding=encoding, closefd=False,  # noqa: SIM115
                      buffering=1 if os.isatty(1) else -1)
    sys.stderr = open(2, "w", encoding=encoding, closefd=False,  # noqa: SIM115
                      errors="backslashreplace", buffering=1)
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = (  # type: ignore[misc]
        sys.stdin, sys.stdout, sys.stderr)


def register(app: typer.Typer) -> None:
    """Add the command to the `ix` application."""
    app.command("serve")(serve)
