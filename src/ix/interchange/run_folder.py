"""A run as a portable folder (`ix export RUN --folder DIR`) and read back (`ix import DIR
--format folder`, `ix report DIR`); docs/export.md, "A portable run folder".

The lab's `results/trials.jsonl` stays the one source of truth: a run folder in the lab holds
no copy of its lines. The copy is made on export, into a folder of its own:

```
DIR/
  manifest.json   what the folder is: run id, experiment, status, subjects, and per file
                  its sha256, size and role
  spec.yaml       the run's spec.yaml, byte for byte
  summary.json    its summary, byte for byte (absent for a run that has none)
  summary.csv     the summary as a table (`ix.eval.summary_table`)
  trials.jsonl    the line that stands of each trial (its latest attempt), byte for byte,
                  in the log's order
```

Nothing comes from the clock, so the same run exported twice gives the same bytes. Reading
it back (`ix.interchange.folder_import`) checks every digest before any line is believed.
"""

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ix.eval.summary_table import summary_csv
from ix.store.layout import SPEC_FILE, SUMMARY_CSV, SUMMARY_FILE, TRIALS_FILE
from ix.store.trial_lines import standing
from ix.store.trials import parse_line

MANIFEST = "manifest.json"
#: `manifest.json`'s `format`, and the version of the folder's layout
FORMAT, VERSION = "ix-run-folder", 1
ROLES = {TRIALS_FILE: "trials", SPEC_FILE: "spec", SUMMARY_FILE: "summary",
         SUMMARY_CSV: "summary_table"}


def standing_lines(lines: Sequence[bytes]) -> list[bytes]:
    """Of one run's lines (`export.run_lines`), the one that stands for each trial (the
    latest attempt, `ix.store.trial_lines.standing`), byte for byte, in the log's order."""
    parsed = [(raw, parse_line(raw)) for raw in lines]
    records = [r for _, r in parsed if r is not None]
    kept = {id(r) for r in standing(records).values()}
    return [raw for raw, r in parsed if r is not None and id(r) in kept]


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def folder_files(*, run_id: str, experiment: str, spec_text: str,
                 summary: Mapping[str, Any] | None, summary_text: str | None,
                 lines: Sequence[bytes], ix_version: str) -> list[tuple[str, str]]:
    """The folder's files (name, text), `manifest.json` last; `lines` the run's standing
    lines (`standing_lines`)."""
    files = [(SPEC_FILE, spec_text)]
    if summary is not None and summary_text is not None:
        files += [(SUMMARY_FILE, summary_text), (SUMMARY_CSV, summary_csv(summary))]
    files.append((TRIALS_FILE, b"".join(lines).decode("utf-8")))
    subjects = [str(b.get("name")) for b in (summary or {}).get("subjects") or []]
    manifest = {
        "format": FORMAT, "version": VERSION,
        "run_id": run_id, "experiment": experiment,
        "run_status": (summary or {}).get("run_status"),
        "subjects": subjects,
        "trials": len(lines), "attempts": "latest",
        "spec": SPEC_FILE, "summary": SUMMARY_FILE if summary is not None else None,
        "ix_version": ix_version,
        "files": [{"name": name, "role": ROLES[name], "sha256": _sha256(text),
                   "bytes": len(text.encode("utf-8"))} for name, text in files],
    }
    return [*files, (MANIFEST, json.dumps(manifest, ensure_ascii=False, indent=2) + "\n")]


def is_run_folder(path: Path) -> bool:
    """Whether `path` is a folder `ix export --folder` wrote (it holds `manifest.json`)."""
    return path.is_dir() and (path / MANIFEST).is_file()


__all__ = ["FORMAT", "MANIFEST", "ROLES", "VERSION", "folder_files", "is_run_folder",
           "standing_lines"]
