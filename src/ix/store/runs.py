"""Run folders: `results/runs/<run_id>/spec.yaml`, the exact record of how a run was made.

A run folder appears whole: it is made under a temporary name with its `spec.yaml` inside
and renamed into place, so every run folder has a spec, and two processes never share a run
id. While a process executes a run it holds an exclusive lock on the folder's `run.lock`,
which the kernel releases however the process ends, so a run is never continued twice at once.
"""

from __future__ import annotations

import contextlib
import errno
import os
import platform
import secrets
import shutil
import subprocess
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ix._lazy import Loading, in_background
from ix.domain.errors import RunBusy
from ix.fs.paths import FILE, FOLDER, check_entries, open_regular
from ix.store.layout import ARTIFACTS_DIR, RESULTS_DIR, ExperimentDir, RunDir
from ix.store.spec import environment, write_spec
from ix.store.trials import stamp

if TYPE_CHECKING:  # TypedDicts: building them costs more than reading a spec
    from ix.eval.schemas import SpecPlugin
    from ix.store.spec_schema import RunSpec, SpecVersions

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no run locks
    fcntl = None  # type: ignore[assignment]


def new_run_id(started: datetime) -> str:
    """Sortable by start time and unique: `20261126T021500Z-3f9a1c`. The suffix's first
    three hex digits are the millisecond (so two runs started within one second still sort
    by start, and "the latest run" is the last started), the last three are random."""
    return f"{stamp(started)}-{started.microsecond // 1000:03x}{secrets.token_hex(2)[:3]}"


def run_dir(results_dir: Path, run_id: str) -> Path:
    return ExperimentDir(results_dir).run(run_id).path


#: What runs write inside an experiment folder (`ix.store.layout`): no source of the
#: experiment, so no change that makes its commit dirty.
OUTPUTS = (RESULTS_DIR, ARTIFACTS_DIR)


def git_commit(path: Path) -> str | None:
    """The commit of the git checkout holding the experiment folder `path`, with `+dirty`
    if its sources have changes (what runs write there, `OUTPUTS`, is not a source: a run's
    own folder, made as it starts, never makes its commit dirty)."""
    outputs = [f":(exclude){name}" for name in OUTPUTS]
    try:
        head = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(path), "status", "--porcelain", "--", ".",
                                *outputs],
                               capture_output=True, text=True, timeout=5, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}+dirty" if dirty.strip() else head


class Ahead:
    """What `look_ahead` is finding for one new run: `found` once `loading` has ended."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.found: dict[str, Any] = {}

        def work() -> None:
            self.found["git_commit"] = git_commit(path)
            self.found["versions"] = environment()

        self.loading: Loading = in_background(work, "ix-provenance")


#: The look-aheads no run has taken yet, by experiment folder (`_lock` guards it: runs of
#: the API may start and end in several threads at once, as `ix mcp` runs them).
_ahead: dict[Path, Ahead] = {}
_lock = threading.Lock()


def look_ahead(path: Path) -> Ahead:
    """Find in a background thread what a new run of the experiment at `path` records of
    where it ran (`provenance`): the git commit (two `git` commands) and the environment
    (Python asks `uname -p` for the platform), while the experiment loads and is planned,
    instead of ~0.1 s before the run's first trial. The caller gives the result to
    `forget_ahead` once its runs are over, so that a look-ahead no run took (a run refused
    before it started) is never taken later, stale."""
    ahead = Ahead(path)
    with _lock:
        _ahead[path] = ahead
    return ahead


def forget_ahead(looked: Sequence[Ahead]) -> None:
    """Drop the look-aheads of `looked` that no run took (another's, for the same folder
    meanwhile, stays)."""
    with _lock:
        for mine in looked:
            if _ahead.get(mine.path) is mine:
                del _ahead[mine.path]


def provenance(path: Path, plugins: list[SpecPlugin]) -> tuple[SpecVersions, str | None]:
    """The environment (`ix.store.spec.environment`, with `plugins`) and git commit a new run
    of the experiment at `path` records: what `look_ahead` found, else found now."""
    with _lock:
        ahead = _ahead.pop(path, None)
    if ahead is not None:
        ahead.loading.join()
        found = ahead.found
        if "versions" in found:  # else the thread failed: found again below
            versions = cast("SpecVersions", {**found["versions"]})
            if plugins:
                versions["plugins"] = list(plugins)
            return versions, found["git_commit"]
    return environment(plugins), git_commit(path)


class RunLock:
    """An exclusive hold on a run folder while this process executes the run."""

    def __init__(self, fd: int):
        self._fd = fd

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # closing releases the flock
            self._fd = -1


def lock_run(directory: Path) -> RunLock:
    """Hold the run's lock, or raise `RunBusy` at once if another process holds it."""
    fd = open_regular(RunDir(directory).lock, os.O_RDWR | os.O_CREAT, 0o666)  # no symlink
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
                raise RunBusy(directory, holder or "pid unknown") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {platform.node()}\n".encode(), 0)
    except OSError as exc:
        os.close(fd)
        if exc.filename is None and exc.errno is not None:  # (a full disk: name the file)
            raise type(exc)(exc.errno, exc.strerror, str(RunDir(directory).lock)) from None
        raise
    except BaseException:
        os.close(fd)
        raise
    return RunLock(fd)


def run_holder(directory: Path) -> str | None:
    """Who executes the run now (`pid 123 on host`, from its lock), or None when no process
    holds its lock (it ended, or never started here). Asks without waiting and without
    creating the lock file."""
    try:
        fd = open_regular(RunDir(directory).lock, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        if fcntl is None:  # pragma: no cover - Windows: no run locks, nothing is known
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "pid unknown"
        return None
    finally:
        os.close(fd)  # closing lets go of the shared hold taken to ask


def check_results(results_dir: Path, run_id: str | None = None) -> None:
    """Before a run (new, or `run_id` continued) writes anything: what stands where it will
    write is missing or of the kind it writes, never a symlink (a lab cloned from elsewhere
    may carry one pointing at the user's files), a FIFO or a device. `UnsafePath` if not."""
    place = ExperimentDir(results_dir)
    entries = [(results_dir, FOLDER), (place.trials, FILE), (place.latest_summary, FILE),
               (place.runs, FOLDER)]
    if run_id is not None:
        run = place.run(run_id)
        entries += [(run.path, FOLDER), (run.spec, FILE), (run.lock, FILE),
                    (run.summary, FILE), (run.report, FILE), (run.batches, FILE),
                    (run.paused, FILE), (run.traces, FOLDER)]
    check_entries(entries)


def create_run(results_dir: Path, started: datetime,
               spec_for: Callable[[str], RunSpec]) -> tuple[str, Path, RunLock]:
    """A new run folder holding `spec_for(run_id)` as its `spec.yaml`, and its lock.

    The folder is built under a temporary name in `results_dir` and renamed into
    `runs/<run_id>`: it never exists without its spec, and a rename onto a run folder that
    exists fails, so a colliding id is drawn again instead of shared. On failure nothing
    is left behind (the folders this call made are removed again).
    """
    runs = ExperimentDir(results_dir).runs
    made = [d for d in (results_dir, runs) if not d.is_dir()]
    try:
        runs.mkdir(parents=True, exist_ok=True)
        for _ in range(100):
            run_id = new_run_id(started)
            final = run_dir(results_dir, run_id)
            if final.exists():
                continue
            tmp = results_dir / f".run-{run_id}-{secrets.token_hex(4)}.tmp"
            try:
                tmp.mkdir()
            except OSError as exc:  # name the folder the user knows, not our temporary one
                raise type(exc)(exc.errno, exc.strerror, str(results_dir)) from None
            lock: RunLock | None = None
            try:
                lock = lock_run(tmp)
                write_spec(tmp, spec_for(run_id), create=False)
                os.rename(tmp, final)
            except OSError as exc:
                if lock is not None:
                    lock.release()
                shutil.rmtree(tmp, ignore_errors=True)
                if exc.errno in (errno.EEXIST, errno.ENOTEMPTY) and final.exists():
                    continue  # another process took this id a moment ago
                named = str(exc.filename or "")
                if exc.errno is None or not named.startswith(str(tmp)):
                    raise
                # name the file the user would look for, not our temporary one
                raise type(exc)(exc.errno, exc.strerror,
                                str(final) + named[len(str(tmp)):]) from None
            except BaseException:
                if lock is not None:
                    lock.release()
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            return run_id, final, lock
        raise FileExistsError(errno.EEXIST, "no free run id after 100 tries",
                              str(runs))
    except BaseException:
        for d in reversed(made):
            with contextlib.suppress(OSError):
                d.rmdir()
        raise


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
