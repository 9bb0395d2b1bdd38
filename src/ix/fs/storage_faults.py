"""Storage faults — a full disk, a file-size or quota limit, a read-only folder — as one
user-facing error.

Every command that writes sees them as an `OSError`, or as a DuckDB error when DuckDB wrote
(the query index, csv and parquet exports). `storage_error` recognises both and makes the one
`StorageError` the CLI prints as a single line (the file, the cause, what to do) with exit 2;
`storage_faults()` does it for a block of code. Anything else is left alone: a fault that is
not the disk's is a bug and keeps its traceback. Removing a partial output is the writer's
job (ix writes to a temporary name and renames, or takes back a partial append).
"""

import errno
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ix.domain.errors import StorageError

#: No room: the disk is full, a quota or a file-size limit (`RLIMIT_FSIZE`) is reached.
NO_ROOM = frozenset(e for e in (errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", None))
                    if e is not None)
#: Not allowed: a read-only file system, folder or file.
NOT_ALLOWED = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})
#: Every errno that says the storage, not ix, failed.
STORAGE_ERRNOS = NO_ROOM | NOT_ALLOWED | {errno.EIO}

HINT = "Make room or fix permissions, then run the command again"

# DuckDB reports the OS error in its message: `Could not write file "<path>": File too
# large` and, in a JSON tail, `"errno":"27"`.
_DUCKDB_FILE = re.compile(r'file \\?"(?P<path>[^"\\]+)\\?"')
_DUCKDB_ERRNO = re.compile(r'"errno"\s*:\s*"?(?P<errno>\d+)')
_STRERRORS = {os.strerror(e): e for e in sorted(STORAGE_ERRNOS)}
# `tempfile` on a full disk: it tries a file in each candidate folder, and none can be written
_NO_TEMPORARY = "No usable temporary directory"
# ix writes `.<name>.<random>.tmp` beside `<name>` and renames: name the file a user knows
_TEMPORARY = re.compile(r"^\.(?P<name>.+)\.[A-Za-z0-9_]+\.tmp$")


def storage_error(exc: BaseException, consequence: str | None = None, *,
                  file: Path | str | None = None) -> StorageError | None:
    """`exc` as the one-line `StorageError` when the storage caused it, else None.

    `consequence` says what became of the command (`the tag was not written`); `file` names
    the file when the exception does not (or names a temporary one)."""
    if isinstance(exc, StorageError):
        return exc
    path: object = None
    if isinstance(exc, FileNotFoundError) and exc.filename is None \
            and str(exc.strerror or "").startswith(_NO_TEMPORARY):  # `tempfile` found none
        cause = f"{exc.strerror} (each is full or cannot be written)"
    elif isinstance(exc, OSError):
        if exc.errno is None or exc.errno not in STORAGE_ERRNOS:
            return None
        cause, path = exc.strerror or os.strerror(exc.errno), exc.filename
    else:
        found = _duckdb_fault(exc)
        if found is None:
            return None
        cause, path = os.strerror(found[0]), found[1]
    message = f"{cause}; {consequence}. {HINT}" if consequence else f"{cause}. {HINT}"
    return StorageError(message, file=file if file is not None else _shown(path))


@contextmanager
def storage_faults(consequence: str | None = None, *,
                   file: Path | str | None = None) -> Iterator[None]:
    """Inside the block, a storage fault is raised as `StorageError` (see `storage_error`);
    every other exception passes unchanged."""
    try:
        yield
    except Exception as exc:
        fault = storage_error(exc, consequence, file=file)
        if fault is None or fault is exc:
            raise
        raise fault from None


def _duckdb_fault(exc: BaseException) -> tuple[int, str | None] | None:
    """(errno, file) of a DuckDB error the storage caused; None for any other exception."""
    duckdb = sys.modules.get("duckdb")
    if duckdb is None or not isinstance(exc, duckdb.Error):
        return None  # (an exception of DuckDB's means DuckDB was imported)
    text = str(exc)
    code: int | None = None
    number = _DUCKDB_ERRNO.search(text)
    if number is not None and int(number["errno"]) in STORAGE_ERRNOS:
        code = int(number["errno"])
    else:
        code = next((e for s, e in _STRERRORS.items() if s in text), None)
    if code is None:
        return None
    path = _DUCKDB_FILE.search(text)
    return code, path["path"] if path else None


def _shown(path: object) -> str | None:
    """The file to name, never a temporary one of ix's (`.<name>.<random>.tmp`): a temporary
    file as the file it was to become; anything in a temporary folder as the folder that
    holds it."""
    if path is None:
        return None
    p = Path(os.fsdecode(path) if isinstance(path, bytes) else str(path))
    for depth, part in enumerate(p.parts):
        if part.startswith(".") and part.endswith(".tmp"):
            folder = Path(*p.parts[:depth])
            tmp = _TEMPORARY.match(part)
            last = depth == len(p.parts) - 1
            return str(folder / tmp["name"]) if tmp and last else str(folder)
    return str(p)


__all__ = ["HINT", "NOT_ALLOWED", "NO_ROOM", "STORAGE_ERRNOS", "StorageError", "storage_error",
           "storage_faults"]
