"""A portable run folder read back (`ix import DIR --format folder`): its manifest, every
file checked against its digest, then its trial lines read as `--format jsonl` reads them.
The folder's layout: `ix.interchange.run_folder`.
"""

import hashlib
import json
from pathlib import Path
from typing import Any

from ix.domain.errors import ConfigError
from ix.fs.yamlio import load_yaml_file
from ix.interchange.importing import Imported, read_import
from ix.interchange.run_folder import FORMAT, MANIFEST, ROLES, VERSION
from ix.store.layout import SPEC_FILE, TRIALS_FILE


def read_manifest(folder: Path) -> dict[str, Any]:
    """The folder's manifest, after every file it lists was checked against its digest; a
    `ConfigError` naming the file and the field otherwise."""
    path = folder / MANIFEST
    if not path.is_file():
        raise ConfigError(f"not a run folder of `ix export --folder`: no {MANIFEST}",
                          file=folder)
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"not readable JSON ({exc})", file=path) from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ConfigError(f"not a manifest of `ix export --folder` (format is not {FORMAT!r})",
                          file=path, field="format")
    if manifest.get("version") != VERSION:
        raise ConfigError(f"version {manifest.get('version')!r}; this ix reads version "
                          f"{VERSION}", file=path, field="version")
    files = manifest.get("files")
    if not isinstance(files, list) or not any(
            isinstance(f, dict) and f.get("name") == TRIALS_FILE for f in files):
        raise ConfigError(f"lists no {TRIALS_FILE}", file=path, field="files")
    for i, entry in enumerate(files):
        name = entry.get("name") if isinstance(entry, dict) else None
        if name not in ROLES:
            raise ConfigError(f"names no file of a run folder ({name!r})", file=path,
                              field=f"files[{i}].name")
        try:
            digest = hashlib.sha256((folder / name).read_bytes()).hexdigest()
        except OSError as exc:
            raise ConfigError(f"cannot read {name}: {exc.strerror or exc}", file=path,
                              field=f"files[{i}]") from None
        if digest != entry.get("sha256"):
            raise ConfigError(f"{name} changed since it was exported (its sha256 is "
                              f"{digest[:12]}…, the manifest says "
                              f"{str(entry.get('sha256'))[:12]}…)", file=path,
                              field=f"files[{i}].sha256")
    return manifest


def read_folder(folder: Path) -> Imported:
    """What `ix import DIR --format folder` brings in: the folder's trial lines (read and
    checked as `--format jsonl` reads them), with the run's order of subjects and the goal
    its spec recorded; its digest is the manifest's (so the same export is recognised)."""
    manifest = read_manifest(folder)
    imported = read_import(folder / TRIALS_FILE, "jsonl")
    imported.path, imported.format = folder, "folder"
    imported.sha256 = hashlib.sha256((folder / MANIFEST).read_bytes()).hexdigest()
    if not imported.experiments and isinstance(manifest.get("experiment"), str):
        imported.experiments.append(manifest["experiment"])
    subjects = manifest.get("subjects")
    if isinstance(subjects, list):
        imported.subject_order = [str(s) for s in subjects]
    imported.origin = {"run_id": manifest.get("run_id"), "manifest": str(folder / MANIFEST)}
    imported.goal = _spec_goal(folder / SPEC_FILE)
    return imported


def _spec_goal(path: Path) -> dict[str, Any] | None:
    try:
        spec = load_yaml_file(path)
    except (OSError, ConfigError):
        return None
    config = spec.get("config") if isinstance(spec, dict) else None
    goal = config.get("goal") if isinstance(config, dict) else None
    return goal if isinstance(goal, dict) else None


__all__ = ["read_folder", "read_manifest"]
