"""The observation cache of a lab: `<lab>/.ix/cache/observations/` (`--cache`, `ix cache`).

One entry per (subject, stimulus, trial seed, attempt): the key is the sha256 of a canonical
JSON of those four (`entry_key`), and the entry a gzipped JSON file in a shard folder named by
the key's first two hex digits, `ab/abcdef….json.gz`. The value is whatever the caller stored
(the engine stores an observation with its trace, or a recorded error).

Crash safety: an entry is written to a temporary file beside it and renamed into place, so a
reader sees the whole entry or none. Anything else found under an entry's name (a torn or
corrupt file, a file holding another key) is treated as a miss, never returned. Entries are
not fsynced: after a power loss an entry may be lost, which costs one more call of the
subject, never a wrong answer.

Symlinks: the cache is written and deleted only inside the lab. A cache folder (`.ix`,
`.ix/cache`, `observations/` or a shard) that is a symlink is refused (`UnsafePath`, exit 2)
when the cache is opened, so `ix cache clear` never deletes, and a run never writes, through
one into another folder (a lab from elsewhere may carry such a link).

Secrets: what is stored has passed through the run's redactor (`ix.engine.cache`: every known
secret is `[REDACTED]`, an echoed key included), and the key is a hash, so nothing secret is
written here. The cache is
a convenience: `trials.jsonl` stays the single source of truth of what a run observed.
"""

import contextlib
import gzip
import hashlib
import json
import os
import shutil
import tempfile
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ix.fs.paths import FOLDER, check_entry, check_tree
from ix.fs.storage_faults import storage_error

CACHE_DIR = Path(".ix") / "cache" / "observations"
ENTRY_SUFFIX = ".json.gz"
FORMAT = 1  # bump when the entry or key format changes: older entries then never match

_KEY_CHARS = frozenset("0123456789abcdef")


def canonical_json(data: Any) -> str:
    """One text per value: sorted keys, no spaces, UTF-8, never NaN."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def entry_key(subject_key: str, stimulus: Mapping[str, Any], seed: int, attempt: int) -> str:
    """The sha256 (hex) of a canonical JSON of (subject, stimulus, trial seed, attempt)."""
    doc = {"format": FORMAT, "subject": subject_key, "stimulus": dict(stimulus),
           "seed": seed, "attempt": attempt}
    return hashlib.sha256(canonical_json(doc).encode()).hexdigest()


def is_key(key: str) -> bool:
    return len(key) == 64 and set(key) <= _KEY_CHARS


class ObservationCache:
    """A lab's store of recorded observations, addressed by `entry_key`s."""

    def __init__(self, lab: Path):
        self.lab = Path(lab)
        self.root = self.lab / CACHE_DIR
        self.check()

    def check(self) -> None:
        """`UnsafePath` if a folder of the cache (`.ix`, `.ix/cache`, `observations/`, a
        shard) is a symlink or not a folder: ix neither writes nor deletes through one."""
        check_tree(self.lab, self.root)
        try:
            shards = list(os.scandir(self.root))
        except (FileNotFoundError, NotADirectoryError):
            return
        for shard in shards:
            if shard.is_symlink():
                check_entry(Path(shard.path), FOLDER)

    def path(self, key: str) -> Path:
        if not is_key(key):
            raise ValueError(f"not a cache key (64 lowercase hex digits): {key!r}")
        return self.root / key[:2] / f"{key}{ENTRY_SUFFIX}"

    def get(self, key: str) -> dict[str, Any] | None:
        """The value stored under `key`, or None: missing, torn, corrupt or another key's."""
        try:
            raw = self.path(key).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        try:
            entry = json.loads(gzip.decompress(raw))
        except (OSError, EOFError, zlib.error, UnicodeDecodeError, ValueError):
            return None  # torn or corrupt (gzip's CRC and length catch a partial file)
        if (not isinstance(entry, dict) or entry.get("format") != FORMAT
                or entry.get("key") != key or not isinstance(entry.get("value"), dict)):
            return None
        value: dict[str, Any] = entry["value"]
        return value

    def put(self, key: str, value: Mapping[str, Any]) -> None:
        """Store `value` (JSON-serialisable, no NaN) under `key`, replacing any entry there.

        Raises `ValueError`/`TypeError` for a value JSON cannot hold (nothing is written) and
        `OSError` when the disk refuses.
        """
        path = self.path(key)
        # key order is kept (not sorted): a replayed value must read back exactly as stored
        text = json.dumps({"format": FORMAT, "key": key, "value": dict(value)},
                          separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        data = gzip.compress(text.encode(), compresslevel=6, mtime=0)
        try:
            check_entry(path.parent, FOLDER)  # a shard made a symlink since `check`
            fd, tmp = tempfile.mkstemp(prefix=f".{key[:16]}.", suffix=".tmp", dir=path.parent)
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{key[:16]}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and is_key(key) and self.get(key) is not None

    def stats(self) -> dict[str, Any]:
        """`entries` (entry files), `bytes` (everything under the cache folder, leftover
        temporary files included), `shards` (shard folders holding at least one entry) and
        `path` (the cache folder)."""
        entries = size = 0
        shards = set()
        for path in self._files():
            with contextlib.suppress(OSError):
                size += path.stat().st_size
            if _is_entry(path):
                entries += 1
                shards.add(path.parent.name)
        return {"path": str(self.root), "entries": entries, "bytes": size, "shards": len(shards)}

    def clear(self) -> int:
        """Remove every entry (and any leftover temporary file); returns how many entries.
        Never through a symlink (`check`; `rmtree` does not follow the links inside)."""
        self.check()
        before = sum(1 for path in self._files() if _is_entry(path))
        fault: OSError | None = None
        for path in list(self._files()):
            try:
                path.unlink()
            except FileNotFoundError:
                pass
            except OSError as exc:  # a read-only cache: said, not hidden behind "removed 0"
                fault = fault or exc
        if self.root.is_dir():
            shutil.rmtree(self.root, ignore_errors=True)
        removed = before - sum(1 for path in self._files() if _is_entry(path))
        if fault is not None:
            raise storage_error(fault, f"{removed} of {before} cached observation(s) were "
                                       "removed", file=self.root) or fault
        return removed

    def _files(self) -> Iterator[Path]:
        if not self.root.is_dir():
            return
        for shard in sorted(self.root.iterdir()):
            if not shard.is_dir() or shard.is_symlink():
                continue
            with contextlib.suppress(OSError):
                yield from (p for p in shard.iterdir() if p.is_file() and not p.is_symlink())


def _is_entry(path: Path) -> bool:
    name = path.name
    return (name.endswith(ENTRY_SUFFIX) and is_key(name[:-len(ENTRY_SUFFIX)])
            and path.parent.name == name[:2])
