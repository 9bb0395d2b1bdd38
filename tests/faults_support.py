"""Real faults for the `ix` process a test starts, made without privileges (`preexec_fn`s).

- a full disk: `RLIMIT_FSIZE` (with SIGXFSZ ignored, a write past the limit fails with EFBIG,
  as one on a full disk fails with ENOSPC);
- a read-only folder: its write bits removed (`set_writable`). Root ignores them by its
  CAP_DAC_OVERRIDE capability, so when the tests run as root the `ix` process is started
  without it (dropped from its bounding set), and meets the permissions as any user would;
- little memory: `RLIMIT_AS`.
"""

import ctypes
import os
import resource
import signal
import stat
from collections.abc import Callable
from pathlib import Path

CAP_DAC_OVERRIDE, PR_CAPBSET_DROP = 1, 24


def no_bytecode(env: dict[str, str]) -> dict[str, str]:
    """`env` for an `ix` process under a fault: one that writes no bytecode. CPython writes a
    `.pyc` with one unchecked write(2), so under `RLIMIT_FSIZE` a module compiled in that
    process leaves a cut `.pyc` in src/ behind, and every later `ix` dies loading it
    ("Aborted!", from marshal's EOFError)."""
    return {**env, "PYTHONDONTWRITEBYTECODE": "1"}


def faulty(file_size: int | None = None, read_only: bool = False,
           address_space: int | None = None) -> Callable[[], None]:
    """A `preexec_fn`: files of at most `file_size` bytes; permissions that bind root too; at
    most `address_space` bytes of memory."""
    def pre() -> None:
        if file_size is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))
        if address_space is not None:
            resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
        if read_only and os.geteuid() == 0:
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP, CAP_DAC_OVERRIDE)")
    return pre


def set_writable(root: Path, writable: bool) -> None:
    """Give `root` and everything under it write permission back, or take it away."""
    for path in [root, *root.rglob("*")]:
        mode = path.stat().st_mode
        bits = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH
        path.chmod((mode | stat.S_IWUSR) if writable else (mode & ~bits))
