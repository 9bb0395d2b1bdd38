"""A trial's workspace (DESIGN.md §10): the files a case brings, copied fresh for each trial,
and the files the subject leaves there.

The loader resolves a case's fixtures (`Workspace`: each file's place in the workspace, where
it comes from and its sha256); the engine copies them into a new folder per trial, runs the
subject there (`current_workspace` tells a runtime where), and afterwards keeps what the
subject created or changed (`Output`). Pure: no file is read or written here.
"""

import hashlib
from contextvars import ContextVar
from pathlib import Path

from pydantic import ConfigDict

from ix.domain.model import Model

_frozen = ConfigDict(frozen=True)


class Fixture(Model):
    """One file of a case's workspace: `path` inside it (POSIX, relative), the file it is
    copied from (`source`, absolute), its size and sha256 when the experiment was loaded."""

    model_config = _frozen

    path: str
    source: str
    size: int
    sha256: str


class Workspace(Model):
    """What a trial's workspace starts with: every fixture, in the order they were laid
    (the template, then the case's folder, then its `files:`; a later one replaces an
    earlier one at the same path). An empty workspace is a workspace too."""

    model_config = _frozen

    files: tuple[Fixture, ...] = ()

    @property
    def digest(self) -> str:
        """What keys the cache and the resume check: each file's path and content, not where
        it was copied from (a lab moved to another machine keys the same)."""
        text = "\n".join(f"{f.path}\t{f.sha256}" for f in sorted(self.files,
                                                                  key=lambda f: f.path))
        return hashlib.sha256(text.encode()).hexdigest()

    def by_path(self) -> dict[str, Fixture]:
        """The fixture at each path (the last laid wins)."""
        return {f.path: f for f in self.files}


class Output(Model):
    """A file the subject created or changed in its workspace, as kept with the trial
    (`outputs` of the trial line): its path in the workspace, size and sha256; or, with
    `refused`, why it was not kept (a symlink, a special file, over a size limit)."""

    model_config = _frozen

    path: str
    size: int | None = None
    sha256: str | None = None
    refused: str | None = None


#: The workspace of the trial running in this task (None: the trial has none). Set by the
#: engine around a runtime's `invoke`, so the runtime protocol keeps its signature.
WORKSPACE: ContextVar[Path | None] = ContextVar("ix_workspace", default=None)


def current_workspace() -> Path | None:
    """The folder the running trial's subject works in, if its case has a workspace."""
    return WORKSPACE.get()


__all__ = ["WORKSPACE", "Fixture", "Output", "Workspace", "current_workspace"]
