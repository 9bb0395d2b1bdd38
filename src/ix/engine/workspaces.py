"""Each trial's workspace (DESIGN.md §10): made fresh from the case's fixtures (and the
subject's skills, under `.claude/skills/`) before the subject runs, read afterwards for what
the subject created or changed, those files kept under the run folder
(`artifacts/<subject>/<case>/<trial>/`), and removed once the sensors read it.

A workspace is a new temporary folder (`ix-ws-*`), never the fixtures themselves: a subject
that deletes or rewrites a fixture changes its copy only. What it leaves is read without
following a link: a symlink or a special file is listed as refused, never followed or kept,
and so is a file over the size limits.
"""

import contextlib
import hashlib
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ix.domain.workspace import Fixture, Output, Workspace
from ix.fs.names import file_part
from ix.fs.paths import UnsafePath, entry_kind, inside, open_regular

_MIB = 1 << 20


@dataclass(frozen=True)
class OutputRules:
    """Where a run keeps its trials' outputs (`root`: the run folder's `artifacts/`), and how
    much of one trial's (`workspace:`'s limits)."""

    root: Path
    max_file_bytes: int = 10 * _MIB
    max_total_bytes: int = 100 * _MIB
    max_files: int = 1000

    def folder(self, subject: str, case_id: str, trial: int) -> Path:
        """The trial's folder: one per subject, case and trial (injective names, as traces)."""
        return self.root / file_part(subject) / file_part(case_id) / str(trial)


def make(workspace: Workspace) -> Path:
    """A new folder holding a copy of every fixture (the last laid at a path wins)."""
    root = Path(tempfile.mkdtemp(prefix="ix-ws-"))
    try:
        for fixture in workspace.by_path().values():
            dest = root / fixture.path
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(fixture.source, dest)
    except BaseException:
        remove(root)
        raise
    return root


def install_skills(root: Path, skills: list[dict[str, str]]) -> list[Fixture]:
    """Copy each of the subject's skills (the folder of its SKILL.md) to
    `.claude/skills/<name>/` in the workspace, where Claude Code and the user's own agents
    look for project skills; what was copied, as fixtures (they are no outputs). A link or a
    special file in a skill's folder is not copied."""
    laid: list[Fixture] = []
    for skill in skills:
        source = Path(skill.get("path") or "").parent
        name = skill.get("name")
        if not name or not source.is_dir():
            continue
        place = Path(".claude") / "skills" / name
        for folder, _dirs, files in os.walk(source, followlinks=False):
            rel = Path(folder).relative_to(source)
            for file in files:
                path = Path(folder) / file
                if not stat.S_ISREG(os.lstat(path).st_mode):
                    continue
                dest = root / place / rel / file
                dest.parent.mkdir(parents=True, exist_ok=True)
                digest = _copy(path, dest)
                laid.append(Fixture(path=(place / rel / file).as_posix(), source=str(path),
                                    size=dest.stat().st_size, sha256=digest))
    return laid


def capture(root: Path, workspace: Workspace, rules: OutputRules, subject: str,
            case_id: str, trial: int) -> list[Output]:
    """What the subject created or changed in `root` (by sha256 against the fixtures), each
    file kept in the trial's folder of `rules` within its limits; a link, a special file or a
    file over a limit is listed as refused. A retry's outputs replace the earlier attempt's."""
    fixtures = {f.path: f for f in workspace.by_path().values()}
    dest = rules.folder(subject, case_id, trial)
    if dest.exists():
        shutil.rmtree(inside(rules.root, dest))
    outputs: list[Output] = []
    kept = total = 0
    for rel, path, mode, size in _entries(root, rules.max_files * 10):
        if mode is None:
            outputs.append(Output(path=rel, refused=f"more than {rules.max_files * 10:,} "
                                                    "entries: the rest was not read"))
            break
        if not stat.S_ISREG(mode):
            outputs.append(Output(path=rel, refused=entry_kind(mode)))
            continue
        fixture = fixtures.get(rel)
        try:
            if fixture is not None and fixture.size == size \
                    and _sha256(path) == fixture.sha256:
                continue  # left as it was
        except (OSError, UnsafePath) as exc:
            outputs.append(Output(path=rel, refused=f"could not be read: {_why(exc)}"))
            continue
        if size > rules.max_file_bytes:
            outputs.append(Output(path=rel, size=size, refused=(
                f"{size:,} bytes, over max_file_mb ({rules.max_file_bytes / _MIB:g})")))
            continue
        if kept >= rules.max_files or total + size > rules.max_total_bytes:
            outputs.append(Output(path=rel, size=size, refused=(
                "over the trial's limit (max_files, max_total_mb)")))
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        inside(rules.root, target)  # no link out of the run folder
        try:
            digest = _copy(path, target)
        except UnsafePath as exc:  # replaced by a link or a FIFO since it was listed
            target.unlink(missing_ok=True)
            outputs.append(Output(path=rel, refused=f"could not be read: {_why(exc)}"))
            continue
        outputs.append(Output(path=rel, size=size, sha256=digest))
        kept, total = kept + 1, total + size
    return outputs


def _why(exc: BaseException) -> str:
    return exc.message if isinstance(exc, UnsafePath) else (
        getattr(exc, "strerror", None) or str(exc))


def remove(root: Path) -> None:
    """Delete the workspace, even where the subject took its own write permission away."""
    def unlock(_function: object, path: str, _error: object) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(path), 0o700)
            os.chmod(path, 0o700)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)

    shutil.rmtree(root, onerror=unlock)


def _entries(root: Path, most: int) -> list[tuple[str, Path, int | None, int]]:
    """(relative path, path, mode, size) of everything under `root` but folders, sorted,
    never following a link; `most` entries at most (then one with mode None)."""
    out: list[tuple[str, Path, int | None, int]] = []
    todo = [(root, "")]
    while todo:
        folder, prefix = todo.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            rel = f"{prefix}{entry.name}"
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                todo.append((Path(entry.path), rel + "/"))
                continue
            if len(out) >= most:
                return [*out, (rel, Path(entry.path), None, 0)]
            out.append((rel, Path(entry.path), st.st_mode, st.st_size))
    return sorted(out, key=lambda e: e[0])


def _sha256(path: Path) -> str:
    with open(open_regular(path, os.O_RDONLY), "rb") as f:  # never through a link made since
        return hashlib.file_digest(f, "sha256").hexdigest()


def _copy(source: Path, target: Path) -> str:
    """Copy `source` to a new file `target`; the sha256 of what was copied."""
    digest = hashlib.sha256()
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
    with open(open_regular(source, os.O_RDONLY), "rb") as src, open(fd, "wb") as out:
        while block := src.read(1 << 20):
            digest.update(block)
            out.write(block)
    return digest.hexdigest()


__all__ = ["OutputRules", "capture", "install_skills", "make", "remove"]
