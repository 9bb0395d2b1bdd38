"""A run paused: the `paused` marker in its folder (`RunDir.paused`).

While the marker is there the engine starts no new trial of the run and lets the trials in
flight finish (`ix.engine.pausing`); removing it lets the run go on. A file, so that `ix pause`
in another shell, the run's own SIGTSTP handler and anything that can touch a file all say the
same thing, and `ls` shows it. The engine removes the marker when the run ends or starts.
"""

from __future__ import annotations

import os
import platform
from datetime import UTC, datetime
from pathlib import Path

from ix.fs.paths import open_regular
from ix.store.layout import RunDir


def is_paused(directory: Path) -> bool:
    """Whether the run's `paused` marker is there."""
    return RunDir(directory).paused.exists()


def mark_paused(directory: Path, by: str) -> None:
    """Put the marker (never through a symlink), saying who paused the run and when."""
    fd = open_regular(RunDir(directory).paused, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    with open(fd, "w", encoding="utf-8") as f:
        f.write(f"paused by {by} (pid {os.getpid()} on {platform.node()}) at "
                f"{datetime.now(UTC).isoformat(timespec='seconds')}\n")


def unmark_paused(directory: Path) -> bool:
    """Remove the marker; whether it was there."""
    try:
        RunDir(directory).paused.unlink()
    except FileNotFoundError:
        return False
    return True
