"""Appending one line to a small log (the audit log, a run's annotations): whole, or not at all.

Each line is written on a file opened for appending, under an exclusive `flock` (released
when the file is closed), so concurrent commands never interleave lines. A line cut short by
a full disk is taken back, and a log this call created is removed again, so a failed append
leaves the file exactly as it was. (`trials.jsonl` has its own writer, `TrialWriter`.)
"""

import contextlib
import os
from pathlib import Path

from ix.fs.paths import open_regular

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
