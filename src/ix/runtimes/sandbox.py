"""`sandbox: {network: false}` (DESIGN.md §10): a subject's program run without a network, in
a new Linux network namespace of its own (`unshare --net`; as a user who is not root, inside a
new user namespace that maps them to root there, `--map-root-user`).

What it isolates: every network interface, loopback included (the namespace's `lo` is down):
no connection to the internet, to a local server or to another process's socket by address.
What it does not: the file system (the program reads and writes what its user may: keep it
in its workspace), other processes (it can see and signal the user's own), CPU and memory,
and Unix-domain sockets on the file system. Where the platform cannot make the namespace
(not Linux, no `unshare`, user namespaces disabled), the run stops before any trial with the
reason (exit 2), never silently unisolated.
"""

import functools
import os
import shutil
import subprocess
import sys

from pydantic import ConfigDict

from ix.domain.errors import ConfigError
from ix.domain.model import Model


class SandboxOptions(Model):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    #: false: the program runs with no network at all (a namespace of its own)
    network: bool = True


def prefix() -> list[str]:
    """What goes before a program's argv to run it in a network namespace of its own."""
    tool = shutil.which("unshare") or "unshare"
    return [tool, "--net"] if os.geteuid() == 0 else [tool, "--user", "--map-root-user",
                                                      "--net"]


@functools.cache
def unavailable() -> str | None:
    """Why a network namespace cannot be made here (None: it can); tried once per process."""
    if not sys.platform.startswith("linux"):
        return f"network isolation needs Linux (network namespaces); this is {sys.platform}"
    if shutil.which("unshare") is None:
        return "network isolation needs `unshare` (util-linux), which is not on PATH"
    try:
        done = subprocess.run([*prefix(), "true"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"`unshare --net` could not run: {exc}"
    if done.returncode != 0:
        why = done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]
        return (f"`{' '.join(prefix())}` failed here: {why[0]} (user namespaces may be "
                "disabled: sysctl kernel.unprivileged_userns_clone)")
    return None


def check(options: SandboxOptions | None, field: str = "runtime.sandbox") -> None:
    """`ConfigError` (exit 2) when `options` ask for what this platform cannot give."""
    if options is not None and not options.network:
        reason = unavailable()
        if reason is not None:
            raise ConfigError(f"network: false cannot be honoured: {reason}", field=field)


__all__ = ["SandboxOptions", "check", "prefix", "unavailable"]
