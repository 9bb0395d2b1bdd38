"""`ix sync push|pull URL`: a lab's results in object storage (docs/sync.md).

The transfer itself is `ix.store.sync` (what goes where, how logs merge); this module opens
the URL, times the transfer, and after a pull brings the query index up to date so `ix
results` and `ix query` see the pulled trials at once.
"""

import importlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ix.domain.errors import ConfigError, IxError, Warn
from ix.fs.resolve import find_lab
from ix.fs.storage_faults import storage_faults
from ix.query.index import open_index
from ix.store import sync as store_sync
from ix.store.layout import RunDir
from ix.store.remote import BACKENDS, Remote, check_url
from ix.store.sync import SyncProgress


@dataclass(frozen=True)
class SyncResult:
    """What a push or pull did (`SyncCounts`), where, and in how long."""

    direction: Literal["push", "pull"]
    url: str
    lab: Path
    counts: store_sync.SyncCounts
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        c = self.counts
        return {"direction": self.direction, "url": self.url, "lab": str(self.lab),
                "experiments": list(c.experiments), "objects": c.objects,
                "objects_skipped": c.objects_skipped, "kept": c.kept,
                "conflicts": list(c.conflicts), "lines": c.lines,
                "lines_skipped": c.lines_skipped, "trials": c.trials,
                "trials_skipped": c.trials_skipped, "superseded": c.superseded,
                "damaged": c.damaged, "refused": list(c.refused),
                "ignored": len(c.ignored), "experiments_added": list(c.experiments_added),
                "runs_added": list(c.runs_added), "seconds": round(self.seconds, 3)}


def check_sync_url(url: str) -> None:
    """Refuse a bad URL, or one whose backend is not installed, before anything runs (`ix run
    --sync` checks it before the first trial): a `ConfigError` naming `URL`. No request is
    made."""
    scheme, extra = check_url(url)
    if scheme == "file":
        return  # ix's own confined folder code, no backend
    module = BACKENDS.get(scheme)
    for name in ("fsspec", *([module] if module else [])):
        try:
            importlib.import_module(name)
        except ImportError:
            raise ConfigError(f"{scheme}:// needs {name}: pip install 'ix-lab[{extra}]'",
                              field="URL") from None


def push(url: str, lab: str | Path | None = None, *, experiments: Iterable[str] | None = None,
         runs: Iterable[str] | None = None, progress: SyncProgress | None = None,
         warn: Warn | None = None) -> SyncResult:
    """Send the lab's results (or those of `experiments` / `runs`) to `url`."""
    lab_path = find_lab(lab)
    remote = Remote(url)
    began = time.perf_counter()
    counts = store_sync.push(lab_path, remote, experiments=experiments,
                             runs=None if runs is None else set(runs), progress=progress,
                             warn=warn)
    return SyncResult("push", url, lab_path, counts, time.perf_counter() - began)


def pull(url: str, lab: str | Path | None = None, *, progress: SyncProgress | None = None,
         warn: Warn | None = None) -> SyncResult:
    """Bring `url`'s results into the lab, then refresh the query index."""
    lab_path = find_lab(lab)
    remote = Remote(url)
    began = time.perf_counter()
    with storage_faults("the pull stopped; what it wrote is whole, run it again to finish"):
        counts = store_sync.pull(lab_path, remote, progress=progress, warn=warn)
        if counts.lines:
            open_index(lab_path, warn)
    return SyncResult("pull", url, lab_path, counts, time.perf_counter() - began)


def push_after_runs(url: str, run_dirs: Iterable[Path], *, warn: Warn,
                    note: Callable[[str], None] | None = None) -> bool:
    """`ix run --sync` / `ix batch --sync`: push the runs just made (their folders), each
    experiment's with its lab. A failure does not undo the runs: it is told to `warn` (with
    the command that retries it) and False is returned."""
    groups: dict[tuple[Path, str], set[str]] = {}
    for run_dir in run_dirs:
        exp = RunDir(Path(run_dir)).experiment
        groups.setdefault((exp.path.parent, exp.name), set()).add(exp.run(Path(run_dir).name)
                                                                  .run_id)
    ok = True
    for (lab, name), runs in groups.items():
        try:
            result = push(url, lab, experiments={name}, runs=runs, warn=warn)
        except IxError as exc:
            warn(f"--sync: the push to {url} failed ({exc.render()}); the runs are kept: "
                 f"`ix sync push {url} --lab {lab}` sends them")
            ok = False
            continue
        if note is not None:
            c = result.counts
            note(f"synced {len(runs)} run(s) of {name} to {url}: {c.trials:,} trial lines, "
                 f"{c.objects:,} objects")
    return ok


__all__ = ["SyncResult", "check_sync_url", "pull", "push", "push_after_runs"]
