"""An import's staging area as readers see it: which names are one, and which runs it holds
back (`ix.store.import_run` writes them).

Apart from the writer so that a reader — the query layer, on every `ix results` — pays for a
listing of the results folder, not for the import machinery.
"""

import os
import re
from pathlib import Path

from ix.store.layout import ExperimentDir

STAGE_PREFIX = ".ix-import-"
STAGE_SUFFIX = ".tmp"
RUN_ID = re.compile(r"\d{8}T\d{6}Z-[0-9a-f]{6}")


def staged(name: str) -> bool:
    """Whether a file or folder name is an import's staging area (no reader looks at one)."""
    return name.startswith(STAGE_PREFIX) and name.endswith(STAGE_SUFFIX)


def pending_runs(results: Path) -> set[str]:
    """The runs of `results` whose import has not appeared yet: staged, and without their run
    folder. Their lines may already be in the log (an import between its append and its
    first rename, or killed there); readers that count lines leave them out (`ix.query.views`),
    so an import appears to them with its run folder, all at once, or not at all."""
    try:
        names = os.listdir(results)
    except OSError:
        return set()
    found = set()
    for name in names:
        run_id = name[len(STAGE_PREFIX):-len(STAGE_SUFFIX)] if staged(name) else ""
        if RUN_ID.fullmatch(run_id) and \
                not os.path.lexists(ExperimentDir(results).run(run_id).path):
            found.add(run_id)
    return found


__all__ = ["RUN_ID", "STAGE_PREFIX", "STAGE_SUFFIX", "pending_runs", "staged"]
