"""The `ix` command's side of `ix serve` (warm start): hand the command to a running server.

Imported by the console script before anything heavy, so it uses the standard library only,
and imports `socket` and `json` only once a server's socket is there.
When a server answers on `socket_path()` and runs this very ix (same package, version and
Python), the command line, working folder, environment and this process's stdin, stdout and
stderr (the descriptors themselves, SCM_RIGHTS) go to it; it forks a warm child that runs
the command on them, and its exit code comes back. Signals that reach this process (Ctrl-C,
SIGTERM, Ctrl-Z, SIGCONT, a resize) go to the child's process group. No server, a dead or
stale socket, another ix, or `IX_NO_SERVE=1`: `forwarded` returns None and the command runs
here as usual, silently.
"""

from __future__ import annotations

import contextlib
import os
import signal
import struct
import sys
from typing import TYPE_CHECKING, Any

from ix._lazy import lazy
from ix._version import __version__

if TYPE_CHECKING:
    import json
    import socket
else:  # every `ix` starts here: without a server's socket, it needs neither (~7 ms)
    json = lazy("json")
    socket = lazy("socket")

SOCKET_ENV = "IX_SERVE_SOCKET"  # where the server listens (default: `socket_path()`)
OPT_OUT = "IX_NO_SERVE"  # set (not 0): never use a server
_HEADER = struct.Struct(">I")
#: Signals that reach `ix` and go on to the command run by the server.
FORWARDED = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGTSTP", "SIGCONT", "SIGWINCH",
             "SIGUSR1", "SIGUSR2")


def socket_path() -> str:
    """`$IX_SERVE_SOCKET`, else `ix/serve.sock` under `$XDG_RUNTIME_DIR` (else the user's
    cache folder, `$XDG_CACHE_HOME` or `~/.cache`)."""
    given = os.environ.get(SOCKET_ENV)
    if given:
        return given
    base = os.environ.get("XDG_RUNTIME_DIR") or os.environ.get("XDG_CACHE_HOME") \
        or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ix", "serve.sock")


def identity() -> dict[str, str]:
    """What a server must share with the client to run its commands: the same ix (package
    folder and version) on the same Python."""
    return {"ix": os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
            "version": __version__, "python": sys.executable, "python_version": sys.version}


def send(sock: socket.socket, message: dict[str, Any], fds: list[int] | None = None) -> None:
    """One message: its length, then its JSON; `fds` ride on its first bytes."""
    data = json.dumps(message).encode()
    data = _HEADER.pack(len(data)) + data
    sent = socket.send_fds(sock, [data], fds) if fds else 0
    sock.sendall(data[sent:])


def receive(sock: socket.socket, fds: int = 0) -> tuple[dict[str, Any] | None, list[int]]:
    """The next message (None: the peer closed) and the descriptors that came with it."""
    head, got = b"", list[int]()
    while len(head) < _HEADER.size:
        if fds and not got:
            chunk, got, _, _ = socket.recv_fds(sock, _HEADER.size - len(head), fds)
        else:
            chunk = sock.recv(_HEADER.size - len(head))
        if not chunk:
            return None, got
        head += chunk
    (size,) = _HEADER.unpack(head)
    body = bytearray()
    while len(body) < size:
        chunk = sock.recv(min(size - len(body), 1 << 16))
        if not chunk:
            return None, got
        body += chunk
    return json.loads(body), got


def opted_out() -> bool:
    return os.environ.get(OPT_OUT, "") not in ("", "0")


def connect(path: str, timeout: float = 2.0) -> socket.socket | None:
    """A connection to the server on `path`, or None when none answers, or when the socket
    or the process listening on it is not the user's (the environment sent holds secrets)."""
    try:
        if os.stat(path).st_uid != os.getuid():
            return None
    except OSError:
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
        if not same_user(sock):
            sock.close()
            return None
    except OSError:
        sock.close()
        return None
    return sock


def same_user(sock: socket.socket) -> bool:
    """The peer of `sock` runs as this user (Linux: SO_PEERCRED; elsewhere the 0600 socket
    in a 0700 folder is the guard)."""
    if not hasattr(socket, "SO_PEERCRED"):  # pragma: no cover - macOS
        return True
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1] == os.getuid()


def forwarded(argv: list[str]) -> int | None:
    """Run `ix argv` through the server: its exit code, or None when no server took it.

    The server says it is ready, and forks the command only once the client says go: a
    client that gave up waiting (and runs the command itself) never said go, so a command
    never runs twice."""
    if opted_out() or argv[:1] == ["serve"]:  # `ix serve --stop` speaks to it directly
        return None
    sock = connect(socket_path())
    if sock is None:
        return None
    with sock:
        try:
            send(sock, {"run": argv, "cwd": os.getcwd(), "env": dict(os.environ),
                        "identity": identity()}, [0, 1, 2])
            ready, _ = receive(sock)
            if not ready or not ready.get("ready"):
                return None  # refused (another ix) or gone: run here
            # from here the server runs the command, and only it: no fallback may run it too
            sock.settimeout(None)
            send(sock, {"go": True})
        except (OSError, ValueError):
            return None
        ended: dict[str, Any] | None = None
        try:
            started, _ = receive(sock)
            if started is not None and "pid" in started:
                _forward_signals(int(started["pid"]))
                ended, _ = receive(sock)
        except (OSError, ValueError):
            pass
    if ended is None or "exit" not in ended:
        sys.stderr.write("ix: the ix server went away while it ran the command\n")
        return 1
    return int(ended["exit"])


def _forward_signals(pid: int) -> None:
    def forward(signum: int, _frame: Any) -> None:
        try:
            os.killpg(pid, signum)  # the command and what it started, as a terminal does
        except OSError:
            with contextlib.suppress(OSError):
                os.kill(pid, signum)

    for name in FORWARDED:
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), forward)
