"""The lab's observation cache (`ix cache stats|clear`, and `ix run --cache`).

The cache lives in `<lab>/.ix/cache/observations/`; `docs/cache.md` describes what it holds.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ix.fs.resolve import find_lab
from ix.store.cache import ObservationCache

if TYPE_CHECKING:
    from ix.api.schemas import CacheClearOutput, CacheStatsOutput


@dataclass(frozen=True)
class CacheStats:
    """What the cache holds: entries, bytes on disk, shard folders in use."""

    lab: Path
    path: Path
    entries: int
    bytes: int
    shards: int

    def as_dict(self) -> "CacheStatsOutput":
        return {"lab": str(self.lab), "path": str(self.path), "entries": self.entries,
                "bytes": self.bytes, "shards": self.shards}


@dataclass(frozen=True)
class CacheCleared:
    lab: Path
    path: Path
    removed: int

    def as_dict(self) -> "CacheClearOutput":
        return {"lab": str(self.lab), "path": str(self.path), "removed": self.removed}


def open_cache(lab: str | Path | None = None, *, cwd: Path | None = None) -> ObservationCache:
    """The observation cache of the lab `lab` names (`--lab`), else of the lab around cwd."""
    return ObservationCache(find_lab(lab, cwd=cwd))


def cache_stats(lab: str | Path | None = None, *, cwd: Path | None = None) -> CacheStats:
    cache = open_cache(lab, cwd=cwd)
    stats = cache.stats()
    return CacheStats(lab=cache.lab, path=cache.root, entries=stats["entries"],
                      bytes=stats["bytes"], shards=stats["shards"])


def clear_cache(lab: str | Path | None = None, *, cwd: Path | None = None) -> CacheCleared:
    """Remove every recorded observation of the lab; `trials.jsonl` files are not touched."""
    cache = open_cache(lab, cwd=cwd)
    return CacheCleared(lab=cache.lab, path=cache.root, removed=cache.clear())
