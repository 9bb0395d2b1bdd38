"""`ix pause RUN` and `ix continue RUN`: a running run stops starting trials, then goes on.

Only a run that a process is executing now (it holds the run's lock) can be paused or
continued; the process obeys within `ix.engine.pausing.POLL_S`. Without RUN, the one run of
the lab that is running.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

from ix.domain.errors import ConfigError
from ix.fs.resolve import find_lab
from ix.store.layout import RunDir
from ix.store.lookup import lab_run_folder, lab_run_folders
from ix.store.pausing import is_paused, mark_paused, unmark_paused
from ix.store.runs import run_holder


class PauseState(TypedDict):
    """What `ix pause` / `ix continue` did (their `--json`)."""

    run: str
    experiment: str
    paused: bool         # the run's state now
    changed: bool        # False: it already was in that state
    holder: str          # the process executing it: `pid 123 on host`


def pause(lab: str | Path | None, ref: str | None = None) -> PauseState:
    """Pause the run `ref` names (None: the lab's one running run): no new trial starts,
    the ones in flight finish, the run stays open. `ConfigError` if it is not running."""
    folder, holder = _running(lab, ref, "pause")
    was = is_paused(folder)
    if not was:
        mark_paused(folder, "ix pause")
    return _state(folder, True, not was, holder)


def resume(lab: str | Path | None, ref: str | None = None) -> PauseState:
    """Let the paused run `ref` names (None: the lab's one running run) start trials again."""
    folder, holder = _running(lab, ref, "continue")
    return _state(folder, False, unmark_paused(folder), holder)


def running_runs(lab: Path) -> list[tuple[Path, str]]:
    """The lab's runs that a process executes now, with who executes each."""
    return [(folder, holder) for folder in lab_run_folders(lab)
            if (holder := run_holder(folder) or "")]


def _running(lab: str | Path | None, ref: str | None, verb: str) -> tuple[Path, str]:
    lab_path = find_lab(lab)
    if ref is None:
        found = running_runs(lab_path)
        if len(found) != 1:
            names = ", ".join(f.name for f, _ in found)
            raise ConfigError(f"{len(found)} runs of the lab are running{': ' if names else ''}"
                              f"{names}; name the one to {verb}: ix {verb} RUN", field="RUN")
        return found[0]
    folder = lab_run_folder(lab_path, ref)
    holder = run_holder(folder)
    if holder is None:
        raise ConfigError(f"run {folder.name} is not running, so there is nothing to {verb}"
                          " (`ix run --resume` continues a run that stopped)", field="RUN")
    return folder, holder


def _state(folder: Path, paused: bool, changed: bool, holder: str) -> PauseState:
    return {"run": folder.name, "experiment": RunDir(folder).experiment.path.name,
            "paused": paused, "changed": changed, "holder": holder}
