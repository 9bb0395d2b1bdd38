"""An import written into the lab all at once (`ix import`): the whole run, or no trace of it.

Imports in a lab take turns (`import_turn`: an exclusive `flock` on the lab's folder, which
the kernel drops if its holder dies), so two of them never both create one experiment, and
whatever a killed import left is settled by the next one (`settle`) before it looks around.

- A new experiment is built whole in `<lab>/.ix-import-<random>.tmp/<name>/` and renamed to
  `<lab>/<name>`: one rename makes it appear with its run, its lines and its summaries.
- A run added to an existing experiment is staged in `results/.ix-import-<run_id>.tmp/`: its
  run folder, its summaries, and its trial lines (kept to finish a killed import). Its lines
  are then appended in one write under the trial log's lock, and before that lock is let go
  (and before the fsync) the run folder, the archived summary and `summary-latest.json` are
  renamed into place, in that order: the append is the commit point, the renames follow it
  within microseconds; until the run folder is in place, readers that count lines leave the
  run's lines out (`pending_runs`). A failure undoes the steps taken, newest first — the old
  `summary-latest.json` comes back by a rename, never by rewriting it — and the lines are
  taken back. A kill leaves the staging folder, which no reader looks at: the next import
  completes the run if any of its lines reached the log, and removes the folder if none did.
"""

import contextlib
import errno
import functools
import json
import os
import secrets
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from ix.domain.errors import ConfigError, Warn
from ix.fs.files import dumps, write_text_atomic
from ix.fs.resolve import list_experiments
from ix.store.layout import ARCHIVED_SUMMARIES, LATEST_SUMMARY, ExperimentDir, RunDir
from ix.store.lookup import run_folders
from ix.store.runs import check_results
from ix.store.spec import read_spec, write_spec
from ix.store.spec_schema import RunSpec
from ix.store.staging import RUN_ID, STAGE_PREFIX, STAGE_SUFFIX, pending_runs, staged
from ix.store.summaries import save_summary, write_run_summary
from ix.store.trial_scan import run_markers
from ix.store.trials import TrialWriter, stamp

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: imports do not take turns
    fcntl = None  # type: ignore[assignment]

_RUN = "run"                     # the staged run folder, renamed to runs/<run_id>
_PREVIOUS = "previous-latest.json"  # a hard link to the summary-latest.json replaced


@contextmanager
def import_turn(lab: Path, warn: Warn | None = None) -> Iterator[None]:
    """This process's turn to import into `lab`: an exclusive lock on the lab's folder,
    waited for (with a word to `warn`) while another import holds it."""
    fd = os.open(lab, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if warn is not None:
                    warn(f"another `ix import` is writing into lab {lab}; waiting for it")
                fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


# --------------------------------------------------------------------------- settling

def settle(lab: Path, warn: Warn | None = None) -> list[str]:
    """Settle what killed imports left (call it in `import_turn`): a new experiment never
    renamed into place is removed; a staged run is completed if any of its lines reached the
    trial log, else removed. Returns (and tells `warn`) what was done."""
    done: list[str] = []
    for entry in _staged_in(lab):
        _remove(entry)
        done.append(f"removed {entry}: an import of a new experiment that was stopped "
                     "before it was in place")
    for experiment in list_experiments(lab):
        results = ExperimentDir.at(experiment).results
        if results.is_symlink() or not results.is_dir():
            continue
        for entry in _staged_in(results):
            done.append(_settle_run(results, entry))
    if warn is not None:
        for message in done:
            warn(message)
    return done


def _staged_in(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if staged(p.name))
    except OSError:
        return []


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink()


def _settle_run(results: Path, stage: Path) -> str:
    run_id = stage.name[len(STAGE_PREFIX):-len(STAGE_SUFFIX)]
    place = ExperimentDir(results)
    log = place.trials
    if (not RUN_ID.fullmatch(run_id) or stage.is_symlink() or not stage.is_dir()
            or (not log.is_file() and not place.run(run_id).path.exists())):
        _remove(stage)
        return f"removed {stage}: an import that was stopped before it wrote anything"
    check_results(results)
    with TrialWriter(log) as writer:  # a torn last line (of ours, perhaps) is repaired first
        present = _count_lines(log, run_id)
        if present == 0 and not place.run(run_id).path.exists():
            _remove(stage)
            return f"removed {stage}: an import that was stopped before it wrote anything"
        missing = _kept_lines(stage)[present:]
        writer.write_all(missing, along=lambda: _published(results, stage, run_id,
                                                            settling=True))
    _remove(stage)
    return (f"completed run {run_id} of {results.parent.name}, an import that was stopped "
            f"part way ({present} of its lines were in the log)")


def _count_lines(log: Path, run_id: str) -> int:
    """How many whole lines of `run_id` the log holds (an import's lines begin with it)."""
    prefix = tuple(b"{" + marker + b"," for marker in run_markers(run_id))  # either spacing
    count = 0
    with log.open("rb") as f:
        for raw in f:
            if raw.startswith(prefix) and raw.endswith(b"\n"):
                count += 1
    return count


def _kept_lines(stage: Path) -> list[dict[str, Any]]:
    """The import's lines as staged (written whole, by a rename, before the append)."""
    try:
        raw = ExperimentDir(stage).trials.read_bytes()
        return [json.loads(line) for line in raw.splitlines() if line.strip()]
    except (OSError, ValueError, RecursionError):
        return []


# --------------------------------------------------------------------------- re-imports

def find_import(results: Path, sha256: str) -> str | None:
    """The run of `results` that imported a source with this digest, if one did."""
    runs = ExperimentDir(results).runs
    if not runs.is_dir() or runs.is_symlink():
        return None
    for folder in run_folders(results):
        spec_file = RunDir(folder).spec
        if folder.is_symlink() or not spec_file.is_file() or spec_file.is_symlink():
            continue
        try:
            if sha256 not in spec_file.read_text(encoding="utf-8", errors="replace"):
                continue
            spec = read_spec(folder)
        except (OSError, ConfigError):
            continue
        source = spec.get("import")
        if isinstance(source, dict) and source.get("sha256") == sha256:
            return folder.name
    return None


# --------------------------------------------------------------------------- writing

def write_run(results: Path, run_id: str, spec: RunSpec, summary: Mapping[str, Any],
              lines: Sequence[Mapping[str, Any]], finished: datetime) -> Path:
    """A run into a `results/` folder nobody else sees yet (a new experiment's, staged)."""
    run = ExperimentDir(results).run(run_id)
    write_spec(run.path, spec)
    write_run_summary(run, summary)
    with TrialWriter(ExperimentDir(results).trials) as writer:
        writer.write_all(lines)
    save_summary(results, dict(summary), finished)
    return run.path


def new_experiment(lab: Path, name: str, build: Callable[[Path], None]) -> Path:
    """`build(folder)` writes the experiment in a staging folder; it is then renamed to
    `<lab>/<name>` in one step. On any failure nothing is left."""
    stage = lab / f"{STAGE_PREFIX}{secrets.token_hex(6)}{STAGE_SUFFIX}"
    final = lab / name
    stage.mkdir()
    try:
        build(stage / name)
        try:
            os.rename(stage / name, final)
        except OSError as exc:
            if exc.errno in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR):
                raise ConfigError(f"{final} was made by someone else while the import was "
                                  "being written; nothing was imported: run the import "
                                  "again to add to it", field="--experiment") from None
            raise
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return final


def add_run(results: Path, run_id: str, spec: RunSpec, summary: Mapping[str, Any],
            lines: Sequence[Mapping[str, Any]], finished: datetime) -> Path:
    """A new run of an existing experiment, all at once (see the module's docstring)."""
    check_results(results)  # no symlink, FIFO or device where the run goes
    place = ExperimentDir(results)
    made = [d for d in (results, place.runs) if not d.is_dir()]
    log = place.trials
    had_log = log.exists()
    stage = results / f"{STAGE_PREFIX}{run_id}{STAGE_SUFFIX}"
    try:
        place.runs.mkdir(parents=True, exist_ok=True)
        stage.mkdir()
        _prepare(stage, spec, summary, lines, finished)
        writer = TrialWriter(log)
        try:
            writer.write_all(lines, along=lambda: _published(results, stage, run_id))
        finally:  # (fsynced already: a failure to close changes nothing written)
            with contextlib.suppress(OSError):
                writer.close()
    except BaseException:
        _remove(stage)
        if not had_log:
            with contextlib.suppress(OSError):
                if log.stat().st_size == 0:
                    log.unlink()
        for d in reversed(made):
            with contextlib.suppress(OSError):
                d.rmdir()
        raise
    _remove(stage)  # what is left in it: the kept lines, the old summary's link
    return place.run(run_id).path


def _prepare(stage: Path, spec: RunSpec, summary: Mapping[str, Any],
             lines: Sequence[Mapping[str, Any]], finished: datetime) -> None:
    """Everything of the run, staged: `run/` (spec and summary), the archived and the latest
    summary, and the trial lines (to complete the import if it is killed after the append)."""
    staged, run = ExperimentDir(stage), RunDir(stage / _RUN)  # `stage` mirrors `results/`
    run.path.mkdir()
    write_spec(run.path, spec, create=False)
    text = dumps(summary)
    write_run_summary(run, summary, text=text, parents=False)
    write_text_atomic(next(staged.archived_summaries(stamp(finished))), text, parents=False,
                      shared=True)
    write_text_atomic(staged.latest_summary, text, parents=False, shared=True)
    write_text_atomic(staged.trials, "".join(
        json.dumps(dict(line), ensure_ascii=False, allow_nan=False) + "\n" for line in lines),
        parents=False)


@contextmanager
def _published(results: Path, stage: Path, run_id: str, *,
               settling: bool = False) -> Iterator[None]:
    """Rename the staged run folder, archived summary and latest summary into place (what is
    still staged); if that or the block fails, undo the renames done, newest first.
    `settling`: a latest summary written since the import was staged is kept."""
    undo: list[Callable[[], None]] = []
    try:
        staged_run, final = stage / _RUN, ExperimentDir(results).run(run_id).path
        if staged_run.is_dir():
            os.rename(staged_run, final)
            undo.append(lambda: os.rename(final, staged_run))
        for archive in sorted(stage.glob(ARCHIVED_SUMMARIES)):
            if archive.name == LATEST_SUMMARY:
                continue
            placed = _place(archive, results)
            undo.append(functools.partial(os.rename, placed, archive))
        pending, latest = ExperimentDir(stage).latest_summary, ExperimentDir(results).latest_summary
        if pending.is_file() and settling and _newer(latest, pending):
            pending.unlink()
        elif pending.is_file():
            previous = stage / _PREVIOUS
            if latest.is_file():
                previous.unlink(missing_ok=True)  # left by an import stopped here before
                os.link(latest, previous)  # no copy: the old file itself, to put back
                undo.append(lambda: os.replace(previous, latest))
            else:
                undo.append(lambda: latest.unlink())
            os.replace(pending, latest)
        yield
    except BaseException:
        for step in reversed(undo):
            with contextlib.suppress(OSError):
                step()
        raise


def _place(archive: Path, results: Path) -> Path:
    """Rename a staged `summary-<stamp>.json` into `results/`, never over an older one."""
    place = ExperimentDir(results)
    target = next(p for p in place.archived_summaries(place.archived_stamp(archive))
                  if not p.exists())
    os.rename(archive, target)
    return target


def _newer(latest: Path, pending: Path) -> bool:
    """Whether `summary-latest.json` was written after the import staged its own."""
    try:
        return latest.stat().st_mtime_ns > pending.stat().st_mtime_ns
    except OSError:
        return False


__all__ = ["STAGE_PREFIX", "STAGE_SUFFIX", "add_run", "find_import", "import_turn",
           "new_experiment", "pending_runs", "settle", "staged", "write_run"]
