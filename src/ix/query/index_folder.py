"""The folder of the trial index, and how ix writes and deletes there without leaving it.

The index lives in `<lab>/.ix/index`. A lab can come from someone else and carry a symlink
there (`.ix/index -> ~/.ssh`): ix refuses such a folder (`UnsafePath`, exit 2), as it does
for `.ix/cache`, so that refreshing the index never writes, and its clean-up never deletes,
outside the lab. When the lab is not writable the index lives in a private folder of the
user's instead: `<tmp>/ix-<uid>/index-<hash of the lab>`, where `<tmp>/ix-<uid>` is made
0700 and, before each use, checked to be a real folder that the user owns and no one else
may write to. A folder someone else made there first (or a symlink) is never used: the
index then goes to a fresh private temporary folder for this process, with a warning.

Inside the folder, files are opened without following symlinks (`locked`, `intact`) and the
clean-up (`collect_garbage`) deletes through a descriptor of the folder itself, only regular
files and never what a symlink points at.
"""

import atexit
import contextlib
import hashlib
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from ix.domain.errors import Warn
from ix.fs.paths import FOLDER, UnsafePath, check_entry, check_tree

INDEX_DIR = Path(".ix") / "index"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_PARQUET_MAGIC = b"PAR1"
_scratch: Path | None = None  # this process's own index folder, when the shared one is unsafe


def index_root(lab: Path, warn: Warn | None = None) -> Path:
    """`<lab>/.ix/index`, or the user's private folder when the lab is not writable.

    `UnsafePath` when `.ix` or `.ix/index` is a symlink or not a folder."""
    root = lab / INDEX_DIR
    check_tree(lab, root)
    existing = next(p for p in (root, root.parent, lab) if p.exists())
    if os.access(existing, os.W_OK):
        return root
    digest = hashlib.sha256(str(lab).encode()).hexdigest()[:16]
    base = _private_base(warn)
    return base / f"index-{digest}"


def make_root(root: Path) -> None:
    """Create the index folder (0700) and make sure it is a real folder, not a symlink."""
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    check_entry(root, FOLDER)


def _private_base(warn: Warn | None) -> Path:
    """`<tmp>/ix-<uid>`, made 0700 if missing, used only once checked to be the user's own
    private folder; else a fresh private temporary folder for this process."""
    user = os.getuid() if hasattr(os, "getuid") else None
    base = Path(tempfile.gettempdir()) / f"ix-{user if user is not None else 'user'}"
    with contextlib.suppress(FileExistsError):
        os.mkdir(base, 0o700)
    problem = _not_private(base, user)
    if problem is None:
        return base
    if warn is not None:
        warn(f"{base}: {problem}; someone else may have made it, so ix does not use it "
             "(remove it): the lab's index is kept in a new private folder for now")
    return _scratch_folder()


def _not_private(path: Path, user: int | None) -> str | None:
    """Why `path` is not a private folder of `user` (None: it is one, now mode 0700)."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"cannot be checked ({exc.strerror or exc})"
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a folder"
    if user is not None and st.st_uid != user:
        return f"belongs to another user (uid {st.st_uid})"
    if st.st_mode & 0o022:
        return f"others may write into it (mode {stat.S_IMODE(st.st_mode):o})"
    if st.st_mode & 0o077:
        os.chmod(path, 0o700)  # ours, and no one else could write in it: close it
    return None


def _scratch_folder() -> Path:
    global _scratch
    if _scratch is None or not _scratch.is_dir():
        _scratch = Path(tempfile.mkdtemp(prefix="ix-index-"))
        atexit.register(shutil.rmtree, _scratch, True)
    return _scratch


@contextlib.contextmanager
def locked(root: Path) -> Iterator[None]:
    """One refresher at a time (readers never wait); a no-op where flock does not exist.
    The lock file is opened without following a symlink."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    path = root / ".lock"
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC, 0o600)
    except OSError:
        check_entry(path)  # a symlink or a folder there: say so (`UnsafePath`)
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafePath("is not a regular file; the index's lock must be one (remove it)",
                             file=path)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def read_file(path: Path, limit: int = 1 << 28) -> bytes | None:
    """The bytes of the regular file `path` (None: nothing there), opened without following
    a symlink; `OSError` for a symlink, a FIFO, a folder or a file over `limit` bytes, which
    the caller treats as damage (a FIFO would block, `/dev/zero` never end)."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            raise OSError(f"not a regular file of at most {limit} bytes")
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read(limit + 1)
    finally:
        os.close(fd)


def intact(root: Path, name: str) -> bool:
    """Whether the index file `name` is there as a regular file (not a symlink) and, for a
    Parquet part, still starts and ends as one: else the index is rebuilt."""
    path = root / name
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return False
        if not name.endswith(".parquet"):
            return True
        if st.st_size < 2 * len(_PARQUET_MAGIC):
            return False
        head = os.pread(fd, 4, 0)
        tail = os.pread(fd, 4, st.st_size - 4)
        return head == tail == _PARQUET_MAGIC
    except OSError:
        return False
    finally:
        os.close(fd)


def collect_garbage(root: Path, keep: set[str], retired: set[str], grace_s: float) -> None:
    """Delete the files of `root` that are not in `keep` and older than `grace_s`; the files
    just `retired` get their grace period from now (a reader of the previous manifest may
    still open them). Works on a descriptor of `root` opened without following a symlink, so
    it deletes inside that folder only, and only regular files and symlinks themselves."""
    if not _AT_FUNCTIONS:  # pragma: no cover - no *at() system calls (Windows)
        _collect_by_path(root, keep, retired, grace_s)
        return
    try:
        fd = os.open(root, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC)
    except OSError:
        return
    try:
        now = time.time()
        for name in retired:
            with contextlib.suppress(OSError):
                os.utime(name, (now, now), dir_fd=fd, follow_symlinks=False)
        with os.scandir(fd) as entries:
            names = [e.name for e in entries]
        for name in names:
            if name in keep:
                continue
            with contextlib.suppress(OSError):
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                    continue
                if st.st_mtime < now - grace_s:
                    os.unlink(name, dir_fd=fd)
    finally:
        os.close(fd)


_AT_FUNCTIONS = (os.scandir in os.supports_fd and os.unlink in os.supports_dir_fd
                 and os.stat in os.supports_dir_fd and os.utime in os.supports_dir_fd)


def _collect_by_path(root: Path, keep: set[str], retired: set[str],
                     grace_s: float) -> None:  # pragma: no cover - Windows
    check_entry(root, FOLDER)
    now = time.time()
    for name in retired:
        with contextlib.suppress(OSError):
            os.utime(root / name, (now, now))
    for path in root.iterdir():
        with contextlib.suppress(OSError):
            st = path.lstat()
            if path.name not in keep and stat.S_ISREG(st.st_mode) and \
                    st.st_mtime < now - grace_s:
                path.unlink()


def clear_entry(path: Path) -> None:
    """Remove whatever stands at `path` in the index folder and is not a regular file (a
    folder, a symlink, a FIFO), so that the file can be written there; never follows a link."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISREG(st.st_mode):
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path)  # does not follow the symlinks inside
    else:
        os.unlink(path)


__all__ = ["INDEX_DIR", "clear_entry", "collect_garbage", "index_root", "intact", "locked",
           "make_root", "read_file"]
