"""Tags: names for runs, kept in `<lab>/tags.yaml`.

Like git tags, a tag names exactly one run of the whole lab; a run may have several tags.
Tagging a name that already names another run is refused unless forced (the tag moves).
A tag name starts with a letter (run ids start with a digit, so the two never collide) and
holds letters, digits, `.`, `_` and `-`. The file is rewritten atomically under a lock on
the lab folder, so two commands tagging at once never lose a tag.
"""

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ix.domain.errors import ConfigError
from ix.fs.files import write_text_atomic
from ix.fs.names import name_problem
from ix.fs.paths import UnsafePath, inside
from ix.fs.storage_faults import storage_faults
from ix.fs.yamlio import dump_yaml, load_yaml_file
from ix.store.layout import RESULTS_DIR, RUNS_DIR

TAGS_FILE = "tags.yaml"
TAG_NAME = re.compile(r"[A-Za-z][A-Za-z0-9._-]{0,99}")

_HEADER = ("# ix tags: each names exactly one run of this lab.\n"
           "# Written by `ix tag RUN TAG` / `ix tag --delete TAG`; see docs/reports.md.\n")


@dataclass(frozen=True)
class Tag:
    name: str
    run_id: str
    experiment: str
    folder: str          # the run folder, relative to the lab
    tagged_at: str
    tagged_by: str

    def as_dict(self) -> dict[str, str]:
        return {"run": self.run_id, "experiment": self.experiment, "folder": self.folder,
                "tagged_at": self.tagged_at, "tagged_by": self.tagged_by}


def tags_path(lab: Path) -> Path:
    return lab / TAGS_FILE


def is_tag_name(text: str) -> bool:
    return TAG_NAME.fullmatch(text) is not None


def check_tag_name(text: str) -> str:
    if not is_tag_name(text):
        raise ConfigError(f"invalid tag name {text!r}: it must start with a letter and hold "
                          "only letters, digits, '.', '_' and '-' (at most 100)", field="TAG")
    return text


def read_tags(lab: Path) -> dict[str, Tag]:
    """Every tag of the lab; a malformed file is a `ConfigError` naming it and the field."""
    path = tags_path(lab)
    if not path.is_file():
        return {}
    data = load_yaml_file(path)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError("must be a mapping of tag name to {run, experiment, ...}", file=path)
    tags = {}
    for name, item in data.items():
        if not isinstance(name, str) or not is_tag_name(name):
            raise ConfigError("invalid tag name", file=path, field=str(name))
        if not isinstance(item, dict) or not isinstance(item.get("run"), str):
            raise ConfigError("must be a mapping with the run id under `run`", file=path,
                              field=name)
        tags[name] = Tag(name=name, run_id=item["run"],
                         experiment=str(item.get("experiment") or ""),
                         folder=str(item.get("folder") or ""),
                         tagged_at=str(item.get("tagged_at") or ""),
                         tagged_by=str(item.get("tagged_by") or ""))
    return tags


def tags_by_run(lab: Path) -> dict[str, list[str]]:
    """Run id -> its tag names, sorted."""
    out: dict[str, list[str]] = {}
    for tag in sorted(read_tags(lab).values(), key=lambda t: t.name):
        out.setdefault(tag.run_id, []).append(tag.name)
    return out


def tag_folder(lab: Path, tag: Tag) -> Path:
    """The run folder a tag names; a `ConfigError` if that run is gone from the lab."""
    if name_problem(tag.run_id) is not None:  # `tags.yaml` may come from elsewhere
        raise ConfigError(f"tag {tag.name!r} names {tag.run_id!r}, which is not a run id",
                          file=tags_path(lab), field=tag.name)
    folder = lab / tag.folder if tag.folder else None
    if folder is not None and folder.is_dir():
        try:
            inside(lab, folder)  # never a folder out of the lab (ix annotate writes there)
        except UnsafePath:
            raise ConfigError(f"tag {tag.name!r} names the folder {tag.folder!r}, which is "
                              "not inside the lab", file=tags_path(lab), field=tag.name) from None
    if folder is None or not folder.is_dir():
        hits = [p for p in lab.glob(f"*/{RESULTS_DIR}/{RUNS_DIR}/{tag.run_id}") if p.is_dir()]
        if not hits:
            raise ConfigError(f"tag {tag.name!r} names run {tag.run_id}, which is no longer "
                              "in the lab", file=tags_path(lab), field=tag.name)
        folder = hits[0]
    return folder


def _write(lab: Path, tags: dict[str, Tag]) -> None:
    """The whole file, atomically; a storage fault is a `StorageError` (nothing changed)."""
    body: dict[str, Any] = {name: tags[name].as_dict() for name in sorted(tags)}
    path = tags_path(lab)
    with storage_faults("the tags were not changed", file=path):
        write_text_atomic(path, _HEADER + (dump_yaml(body) if body else "{}\n"))


@contextmanager
def _locked(lab: Path) -> Iterator[None]:
    """An exclusive lock on the lab folder itself (no lock file is left behind)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    fd = os.open(lab, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def set_tag(lab: Path, tag: Tag, *, force: bool = False) -> Tag | None:
    """Add `tag`, or move it with `force`; returns the tag it replaced (None if new).

    Re-tagging the run a tag already names changes nothing and returns that tag.
    """
    check_tag_name(tag.name)
    with _locked(lab):
        tags = read_tags(lab)
        old = tags.get(tag.name)
        if old is not None and old.run_id == tag.run_id:
            return old
        if old is not None and not force:
            raise ConfigError(f"tag {tag.name!r} already names run {old.run_id} "
                              f"({old.experiment}); pass --force to move it", field="TAG")
        tags[tag.name] = tag
        _write(lab, tags)
        return old


def delete_tag(lab: Path, name: str) -> Tag:
    """Remove a tag; returns it. An unknown tag is a `ConfigError`."""
    check_tag_name(name)
    with _locked(lab):
        tags = read_tags(lab)
        if name not in tags:
            raise ConfigError(f"no tag {name!r} in lab {lab}", field="TAG")
        old = tags.pop(name)
        _write(lab, tags)
        return old
