"""Files ix writes whole: to a temporary file beside the target, fsynced, then renamed over it,
so a reader sees the old file or the new one and never half of one (summaries, `spec.yaml`,
`tags.yaml`, `subjects.yaml`, the index manifest, reports, exports).

The temporary file is `.<name>.<random>.tmp` (`fs/storage_faults.py` names the file a
user knows when the disk refuses one). A file is private to the user (0600) unless `shared`:
then it keeps the mode of the file it replaces, or gets the usual 0666 less the umask.
"""

import contextlib
import json
import os
import tempfile
from collections.abc import Callable
from json.encoder import encode_basestring
from math import isfinite
from pathlib import Path
from typing import Any

import orjson


def dumps(data: Any) -> str:
    """JSON as ix writes it to files: indented, UTF-8, and never NaN (which JSON lacks)."""
    return indented(data) + "\n"


def indented(data: Any, *, default: Callable[[Any], Any] | None = None,
             allow_nan: bool = False) -> str:
    """`json.dumps(data, ensure_ascii=False, indent=2, allow_nan=..., default=...)`,
    byte for byte, at a few times its speed (the stdlib indents in pure Python, a generator
    per level: 0.1-0.2 s for a 1,000-case summary). Plain JSON types only (exact `dict` with
    `str` keys, `list`, `tuple`, `str`, `int`, `float`, `bool`, None); anything else (a
    subclass, a non-str key, a NaN, a cycle, an object for `default`) is left to the stdlib,
    which then says or does exactly what it always did."""
    parts: list[str] = []
    try:
        _indent(data, parts.append, "\n")
    except (_Unplain, RecursionError):
        return json.dumps(data, ensure_ascii=False, indent=2, allow_nan=allow_nan,
                          default=default)
    return "".join(parts)


class _Unplain(Exception):
    """A value the fast path does not spell: the stdlib encodes the whole document."""


def _scalar(o: Any) -> str:
    """A leaf's JSON; `_Unplain` for a container or anything the fast path does not spell."""
    t = type(o)
    if t is str:
        return encode_basestring(o)
    if o is None:
        return "null"
    if o is True:
        return "true"
    if o is False:
        return "false"
    if t is int:
        return int.__repr__(o)
    if t is float and isfinite(o):
        return float.__repr__(o)
    raise _Unplain


_CONTAINERS = frozenset({dict, list, tuple})


def _indent(o: Any, put: Callable[[str], object], newline: str) -> None:
    """Append `o`'s JSON at the indentation `newline` ("\\n" and two spaces per level)."""
    t = type(o)
    if t is dict:
        if not o:
            put("{}")
            return
        inner = newline + "  "
        sep = "{" + inner
        for k, v in o.items():
            if type(k) is not str:
                raise _Unplain
            if type(v) is str:  # the common leaves inline: a call per value is the cost
                put(sep + encode_basestring(k) + ": " + encode_basestring(v))
            elif type(v) in _CONTAINERS:
                put(sep + encode_basestring(k) + ": ")
                _indent(v, put, inner)
            else:
                put(sep + encode_basestring(k) + ": " + _scalar(v))
            sep = "," + inner
        put(newline + "}")
    elif t is list or t is tuple:
        if not o:
            put("[]")
            return
        inner = newline + "  "
        sep = "[" + inner
        for v in o:
            if type(v) in _CONTAINERS:
                put(sep)
                _indent(v, put, inner)
            else:
                put(sep + _scalar(v))
            sep = "," + inner
        put(newline + "]")
    else:
        put(_scalar(o))


def compact(data: Any) -> str:
    """JSON for ix to read back, not people (a cache: a run's `report.json`): compact, UTF-8,
    by orjson (a 1 MB document in ~3 ms; `indented` takes ~80). What orjson refuses (an
    integer beyond 64 bits, a key that is not a string) the stdlib writes; a float that is
    not finite is written `null`, as `ix.eval.numbers.num` writes an undefined figure."""
    try:
        return orjson.dumps(data).decode("utf-8")
    except orjson.JSONEncodeError:
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def write_json_atomic(path: Path, data: Any, *, shared: bool = False,
                      machine: bool = False) -> None:
    """`data` as JSON, written whole (`write_text_atomic`): indented for people (`dumps`),
    or `machine`: compact, for a file only ix reads (`compact`)."""
    write_text_atomic(path, compact(data) if machine else dumps(data), shared=shared)


def write_text_atomic(path: Path, text: str, *, parents: bool = True,
                      shared: bool = False) -> None:
    """Write to a temporary file beside `path`, fsync, then rename: never a half-written file.

    `parents`: create missing folders (False: a folder deleted meanwhile is an error, not
    recreated). The file is private to the user (0600) unless `shared`: then it keeps the
    mode of the file it replaces, or gets the usual one (0666 less the umask), as
    `trials.jsonl` does. On failure nothing is left: no temporary file, and no folder this
    call created.
    """
    made = _missing_folders(path.parent) if parents else []
    try:
        if made:
            path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except BaseException:
        _remove_folders(made)
        raise
    try:
        if shared:
            os.fchmod(fd, _shared_mode(path))
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        _remove_folders(made)
        raise located(exc, path) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        _remove_folders(made)
        raise


def _missing_folders(folder: Path) -> list[Path]:
    """`folder` and those of its parents that do not exist, the deepest first."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


def _remove_folders(folders: list[Path]) -> None:
    for folder in folders:  # the deepest first; only while empty
        with contextlib.suppress(OSError):
            folder.rmdir()


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _umask()  # read once, at import (setting it to read it is not thread-safe)


def shared_mode(path: Path) -> int:
    """The mode of a file meant to be read by others (reports, exports, trials.jsonl): that
    of the file it replaces, else 0666 less the umask (0644 usually), as any tool writes."""
    return _shared_mode(path)


def _shared_mode(path: Path) -> int:
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        return 0o666 & ~_UMASK


def located(exc: OSError, path: Path) -> OSError:
    """`exc` naming `path` (errors of `os.write` and friends name no file)."""
    if exc.filename is not None or exc.errno is None:
        return exc
    return type(exc)(exc.errno, exc.strerror, str(path))


__all__ = ["compact", "dumps", "indented", "located", "shared_mode", "write_json_atomic",
           "write_text_atomic"]
