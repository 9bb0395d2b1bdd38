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
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson


def dumps(data: Any) -> str:
    """JSON as ix writes it to files: indented, UTF-8, and never NaN (which JSON lacks)."""
    return indented(data) + "\n"


def indented(data: Any, *, default: Callable[[Any], Any] | None = None,
             allow_nan: bool = False) -> str:
    """`json.dumps(data, ensure_ascii=False, indent=2, default=...)`, byte for byte, by
    orjson: a 1,000-case summary (1.2 MB) in ~4 ms, where the stdlib, which indents in pure
    Python, takes ~0.13 s. A float that is not finite is written `null`, as `compact` and
    `ix.eval.numbers.num` write an undefined figure (JSON has no NaN). What orjson refuses or
    would spell otherwise (a subclass of a JSON type, an integer beyond 64 bits, a key that is
    not a string, nesting beyond 254 levels or a cycle, a date, an object for `default`) is
    left to the stdlib, which then says or does exactly what it always did (`allow_nan` is for
    it); only a plain `Enum` or a `UUID`, which ix never writes, orjson writes as its value."""
    try:
        text = orjson.dumps(data, default=_refuse, option=_INDENTED)
    except orjson.JSONEncodeError:
        return json.dumps(data, ensure_ascii=False, indent=2, allow_nan=allow_nan,
                          default=default)
    return _as_repr(text).decode("utf-8")


#: orjson's indented JSON, with what it would write its own way (a subclass, a date, a
#: dataclass) handed to `_refuse`, so to the stdlib
_INDENTED = (orjson.OPT_INDENT_2 | orjson.OPT_PASSTHROUGH_SUBCLASS
             | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS)


def _refuse(value: Any) -> Any:
    raise TypeError(f"left to the stdlib: {type(value).__name__}")


# orjson spells a float of exponent -5 in decimals (0.000099) and one of -6 to -9 without the
# exponent's leading zero (1.5e-7), where `float.__repr__`, so the stdlib, writes 9.9e-05 and
# 1.5e-07. Each literal is found at C speed (together in one pattern they are not); the line
# it is on is then respelt only when the number is that line's value, not a string's text.
_DECIMAL = re.compile(rb"0\.0000[1-9]")
_EXPONENT = re.compile(rb"e-[6-9]")
_NUMBER_LINE = re.compile(
    rb' *(?:"(?:[^"\\\n]|\\.)*": )?(-?(?:0\.0000[1-9][0-9]*|[0-9](?:\.[0-9]+)?e-[6-9])),?')


def _as_repr(text: bytes) -> bytes:
    """`text` with each float orjson spells otherwise spelt as `float.__repr__` does."""
    starts = {text.rfind(b"\n", 0, found.start()) + 1
              for pattern in (_DECIMAL, _EXPONENT) for found in pattern.finditer(text)}
    if not starts:
        return text
    parts: list[bytes] = []
    done = 0
    for start in sorted(starts):
        end = text.find(b"\n", start)
        line = _NUMBER_LINE.fullmatch(text, start, len(text) if end < 0 else end)
        if line is not None:
            parts += [text[done:line.start(1)], float(line[1]).__repr__().encode()]
            done = line.end(1)
    parts.append(text[done:])
    return b"".join(parts)


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
