"""Tags and annotations on runs (`ix tag`, `ix annotate`), each recorded in the audit log.

Storage (docs/reports.md): tags in `<lab>/tags.yaml` (a tag names exactly one run of the
lab), annotations in `<run folder>/annotations.jsonl`, the audit log in `<lab>/audit.jsonl`.
Bad input raises `ConfigError` before anything is written.
"""

from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, cast

from ix.api.reports import run_trials
from ix.api.runs import resolve_run
from ix.domain.errors import ConfigError, Warn
from ix.fs.paths import check_tree
from ix.fs.resolve import find_lab
from ix.store.annotations import add_annotation, make_annotation, read_annotations
from ix.store.audit import identity, now_utc, record
from ix.store.layout import RunDir
from ix.store.spec import read_spec
from ix.store.summaries import summary_as_written
from ix.store.tags import Tag, check_tag_name, read_tags, set_tag
from ix.store.tags import delete_tag as delete

if TYPE_CHECKING:
    from ix.api.schemas import (
        AnnotationAdded,
        AnnotationLine,
        AnnotationList,
        TagDeleted,
        TagEntry,
        Tagged,
    )


class _RunRef(TypedDict):
    run: str
    experiment: str


def _run_info(run_dir: Path) -> _RunRef:
    spec = read_spec(run_dir)
    experiment = str(spec.get("experiment") or RunDir(run_dir).experiment.name)
    return {"run": run_dir.name, "experiment": experiment}


def list_tags(lab: str | Path | None = None) -> "list[TagEntry]":
    lab_path = find_lab(lab)
    return [cast("TagEntry", {"tag": t.name, **t.as_dict()})
            for t in sorted(read_tags(lab_path).values(), key=lambda t: t.name)]


def tag_run(lab: str | Path | None, run: str, name: str, *,
            force: bool = False) -> "Tagged":
    """Tag a run; `force` moves a tag that names another run. Returns what happened:
    `{tag, run, experiment, moved_from, unchanged}`."""
    lab_path = find_lab(lab)
    check_tag_name(name)
    run_dir = resolve_run(lab_path, run)
    info = _run_info(run_dir)
    who = identity()
    try:
        folder = str(run_dir.relative_to(lab_path))
    except ValueError:
        raise ConfigError(f"run folder {run_dir} is not inside lab {lab_path}",
                          field="RUN") from None
    tag = Tag(name=name, run_id=info["run"], experiment=info["experiment"], folder=folder,
              tagged_at=now_utc(), tagged_by=f"{who['user']}@{who['host']}")
    old = set_tag(lab_path, tag, force=force)
    unchanged = old is not None and old.run_id == tag.run_id
    moved_from = old.run_id if old is not None and not unchanged else None
    if not unchanged:
        record(lab_path, "tag", tag=name, run=info["run"], experiment=info["experiment"],
               moved_from=moved_from)
    return {"tag": name, **info, "moved_from": moved_from, "unchanged": unchanged}


def delete_tag(lab: str | Path | None, name: str) -> "TagDeleted":
    lab_path = find_lab(lab)
    old = delete(lab_path, name)
    record(lab_path, "untag", tag=name, run=old.run_id, experiment=old.experiment)
    return {"tag": name, "run": old.run_id, "experiment": old.experiment, "deleted": True}


def _case_ids(run_dir: Path) -> set[str]:
    """The cases a run ran (from its summary, else from its trial lines)."""
    path = RunDir(run_dir).summary
    if path.is_file():
        summary = summary_as_written(path)
        ids = {p["probe_id"] for b in summary.get("subjects", [])
               for p in b.get("probe_results", []) if isinstance(p, dict) and "probe_id" in p}
        return ids | set(summary.get("skipped_cases") or [])
    return {str(t.get("probe_id")) for t in run_trials(run_dir, run_dir.name)}


def annotate(lab: str | Path | None, run: str, text: str,
             case: str | None = None) -> "AnnotationAdded":
    """Add a note to a run, or to one of its cases; returns the annotation written."""
    lab_path = find_lab(lab)
    run_dir = resolve_run(lab_path, run)
    line = make_annotation(text, case)
    if case is not None:
        known = _case_ids(run_dir)
        if case not in known:
            shown = ", ".join(sorted(known)[:8]) + (", ..." if len(known) > 8 else "")
            raise ConfigError(f"run {run_dir.name} has no case {case!r} (cases: "
                              f"{shown or 'none'})", field="CASE")
    info = _run_info(run_dir)
    # `results/`, `runs/` and the run folder are real folders: never a symlink out of the lab
    check_tree(RunDir(run_dir).experiment.path, run_dir)
    add_annotation(run_dir, line)
    record(lab_path, "annotate", **info, case=case, text=line["text"])
    return cast("AnnotationAdded", {**info, **line})  # line: ix.store.annotations'


def list_annotations(lab: str | Path | None, run: str,
                     warn: Warn | None = None) -> "AnnotationList":
    lab_path = find_lab(lab)
    run_dir = resolve_run(lab_path, run)
    return {**_run_info(run_dir),
            "annotations": cast("list[AnnotationLine]", read_annotations(run_dir, warn))}
