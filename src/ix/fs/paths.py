"""Where ix may write: inside the lab, never through a symlink, never into a FIFO or a device.

A lab can come from someone else (a clone, an archive), and such a lab can carry a symlink
where ix writes (`results/trials.jsonl -> ~/notes.txt`), a FIFO that swallows every line, or
a name that climbs out of its folder. Writers check with these helpers before they write:
`inside` for a path built from a name, `check_entry`/`check_results` for what already
stands where ix writes, and `open_regular` to open a file without following a link (so a
link made after the check is refused too). Each refusal is an `UnsafePath`: exit 2, one line.
"""

import contextlib
import errno
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from ix.domain.errors import ConfigError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)

FILE = "file"
FOLDER = "folder"


class UnsafePath(ConfigError):
    """ix was asked to write outside its folder, through a symlink, or into something that is
    not a regular file or folder; nothing was written there."""


def inside(root: Path, path: Path, *, field: str | None = None) -> Path:
    """`path`, once sure it stays inside `root`: as written (no `..` climbing out) and as the
    file system resolves it (no symlink leading out). Else `UnsafePath`."""
    base, target = os.path.abspath(root), os.path.abspath(path)
    if not _under(target, base) or not lies_within(target, base):
        raise UnsafePath(f"would write outside {root} (to {os.path.realpath(target)}); ix "
                         "writes only inside its own folders", file=path, field=field)
    return path


def lies_within(path: str | Path, root: str | Path) -> bool:
    """`path` is `root` or lies under it once both are resolved (every symlink followed): the
    one "inside the lab" check, for what ix reads from a lab as much as for what it writes."""
    return _under(os.path.realpath(path), os.path.realpath(root))


def _under(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip(os.sep) + os.sep)


def entry_kind(mode: int) -> str:
    """What a file of `mode` is, in words ("a symbolic link", "a FIFO (named pipe)", ...)."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _refusal(path: Path, mode: int, expected: str) -> UnsafePath:
    what = entry_kind(mode)
    if stat.S_ISLNK(mode):
        with contextlib.suppress(OSError):
            what += f" (to {os.readlink(path)})"
        why = ("ix never writes through a symlink (a lab from elsewhere may carry one that "
               "points at your files); replace it with a real "
               f"{'folder' if expected == FOLDER else 'file'}, or remove it")
    else:
        why = f"ix writes a {'folder' if expected == FOLDER else 'regular file'} here; move it away"
    return UnsafePath(f"is {what}; {why}", file=path)


def check_entry(path: Path, expected: str = FILE) -> bool:
    """Whether `path` exists, once sure that it is not a symlink and is of the `expected`
    kind (`FILE`: a regular file, `FOLDER`: a folder); else `UnsafePath`. Never follows a
    link, never opens anything (a FIFO would block, a device could act)."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as exc:
        raise UnsafePath(f"cannot check it: {exc.strerror or exc}", file=path) from None
    ok = stat.S_ISDIR(mode) if expected == FOLDER else stat.S_ISREG(mode)
    if not ok:
        raise _refusal(path, mode, expected)
    return True


def check_entries(entries: Iterable[tuple[Path, str]]) -> None:
    """`check_entry` for each `(path, kind)`; the first refusal is raised."""
    for path, expected in entries:
        check_entry(path, expected)


def check_tree(root: Path, path: Path) -> None:
    """Every folder from `root` (exclusive) down to `path` (inclusive, a folder) that exists
    is a real folder, not a symlink: what ix then creates or deletes there stays in `root`."""
    try:
        parts = Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).parts
    except ValueError:
        raise UnsafePath(f"is not inside {root}", file=path) from None
    current = Path(root)
    for part in parts:
        current = current / part
        if not check_entry(current, FOLDER):
            return


def readable_file(path: Path) -> bool:
    """Whether there is a file to read at `path`: False when nothing is there, True for a
    regular file (or a symlink to one: reading follows it). A FIFO, socket, device or folder
    is `UnsafePath`: a reader would block on a FIFO forever, or read what is not a log."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return False  # nothing there (or a dangling symlink)
    except OSError as exc:
        raise UnsafePath(f"cannot read it: {exc.strerror or exc}", file=path) from None
    if stat.S_ISREG(mode):
        return True
    raise UnsafePath(f"is {entry_kind(mode)}, not a regular file; ix reads only regular files "
                     "here (move it away)", file=path)


def open_regular(path: Path, flags: int, mode: int = 0o666) -> int:
    """`os.open` for a regular file that is not a symlink: a symlink (even one made a moment
    ago), a FIFO or a device is refused with `UnsafePath`, the file left as it was. Other
    failures raise `OSError` as `os.open` does."""
    check_entry(path, FILE)
    try:
        fd = os.open(path, flags | _NOFOLLOW | _NONBLOCK | _CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP or (exc.errno == errno.ENXIO and _NONBLOCK):
            check_entry(path, FILE)  # replaced meanwhile: say by what
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refusal(path, st.st_mode, FILE)
        if fcntl is not None and _NONBLOCK:
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd


__all__ = ["FILE", "FOLDER", "UnsafePath", "check_entries", "check_entry", "check_tree",
           "entry_kind", "inside", "open_regular", "readable_file"]
