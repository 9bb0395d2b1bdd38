"""Appending one line to a small log (the audit log, a run's annotations, an experiment's
labels): whole, or not at all; and reading such a log back past a torn line (`read_log`).

Each line is written on a file opened for appending, under an exclusive `flock` (released
when the file is closed), so concurrent commands never interleave lines. A line cut short by
a full disk is taken back, and a log this call created is removed again, so a failed append
leaves the file exactly as it was. (`trials.jsonl` has its own writer, `TrialWriter`.)
"""

import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ix.domain.errors import ConfigError
from ix.fs.paths import open_regular

T = TypeVar("T")

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: appends are still single writes
    fcntl = None  # type: ignore[assignment]


def append_line(path: Path, line: str, *, fsync: bool = True) -> None:
    """Append `line` (one line, ending with a newline) to `path`, creating it if missing.

    A torn last line left by a crash stays on its own line. An `OSError` names `path`."""
    while True:
        created = not path.exists()
        # never through a symlink, never into a FIFO (`UnsafePath`): a run's folder may
        # come from elsewhere
        fd = open_regular(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            st = os.fstat(fd)
        except BaseException:
            os.close(fd)
            raise
        if st.st_nlink:
            break
        os.close(fd)  # removed by an append that failed while we waited: open it again
    try:
        size = st.st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = "\n" + line
        append_whole(fd, line.encode("utf-8"), path, fsync=fsync)
    except OSError:
        if created:
            with contextlib.suppress(OSError):
                if os.fstat(fd).st_size == 0:
                    path.unlink()
        raise
    finally:
        os.close(fd)  # closing releases the lock


def append_whole(fd: int, data: bytes, path: Path, *, fsync: bool = True) -> None:
    """Append `data` to the file open as `fd` (`O_APPEND`) whole, or not at all: a write cut
    short by a full disk is taken back, so the file keeps exactly the bytes it had. The caller
    holds the file's lock. An `OSError` names `path`."""
    size = os.fstat(fd).st_size
    try:
        done = os.write(fd, data)
        while done < len(data):  # a short write: the next one says why
            done += os.write(fd, data[done:])
        if fsync:
            os.fsync(fd)
    except OSError as exc:
        with contextlib.suppress(OSError):  # the write failed already: that error is reported
            os.ftruncate(fd, size)
        if exc.filename is None and exc.errno is not None:
            raise type(exc)(exc.errno, exc.strerror, str(path)) from None
        raise


def read_log(path: Path, parse: Callable[[Any], T], what: str,
             warn: Callable[[str], None] | None = None) -> list[T]:
    """Each line of a small append-only log as `parse` makes it, oldest first; none when the
    file is missing. A line that is not JSON, or that `parse` refuses with a `ValueError`
    (torn by a crash, edited by hand), is skipped with a warning naming it (`skipped (not
    <what>: <why>)`); every other line is kept. An unreadable file is a `ConfigError`."""
    if not path.is_file():
        return []
    try:
        raw_lines = path.read_bytes().split(b"\n")
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror or exc}", file=path) from None
    out = []
    for number, raw in enumerate(raw_lines, start=1):
        if not raw.strip():
            continue
        try:
            item = json.loads(raw)
        except (ValueError, RecursionError):  # not JSON or UTF-8, 5,000 digits, nested deep
            item = None
        try:
            out.append(parse(item))
        except ValueError as exc:
            if warn is not None:
                warn(f"{path}: line {number}: skipped (not {what}: {exc})")
    return out
