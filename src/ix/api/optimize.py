"""`ix optimize`, its sessions, and applying what it recommends (`ix.engine.optimize`).

`optimize` resolves the experiment and the proposer, runs (or continues) the session with
the observer hearing every run, writes the session's reports, and with `apply=True` puts a
recommended description into the skill — the lab's own `skills/<name>/SKILL.md` as the
lab names it, never a path read from the session — atomically, the old file kept beside it
(`SKILL.md.<stamp>.bak`), a line in the lab's audit log. Nothing touches the skill otherwise.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ix.api.loading import resolve
from ix.api.options import Observer, trial_listener
from ix.domain.errors import ConfigError, NotFound, did_you_mean
from ix.engine.optimize import (
    FINALISTS,
    SESSION_ID,
    Hooks,
    Outcome,
    Settings,
    read_session,
    sessions,
)
from ix.engine.optimize import optimize as run_session
from ix.engine.proposers import KEYWORDS, KeywordsProposer, Proposer, RuntimeProposer
from ix.engine.run import Limits
from ix.eval.optimize import CREDIBILITY, MIN_CHANGED, TOLERANCE
from ix.fs.files import shared_mode, write_json_atomic, write_text_atomic
from ix.fs.paths import FILE, UnsafePath, check_entry, check_tree, open_regular
from ix.fs.resolve import find_lab, list_experiments
from ix.fs.yamlio import MAX_TEXT_BYTES
from ix.lab.loader import LoadedExperiment, load_experiment
from ix.lab.subjects import load_registry
from ix.report.optimize import optimize_html, optimize_markdown
from ix.runtimes.registry import available
from ix.store.audit import record
from ix.store.layout import OptimizeDir
from ix.store.runs import iso

__all__ = ["CREDIBILITY", "FINALISTS", "MIN_CHANGED", "SESSION_ID", "TOLERANCE",
           "OptimizeResult", "Settings", "apply_session", "list_sessions", "make_proposer",
           "optimize", "session"]


#: What `optimize` returns: the session's folder and `optimize.json`'s content, and whether
#: a completed session was shown again (`reused`).
OptimizeResult = Outcome


def make_proposer(name: str, loaded: LoadedExperiment) -> Proposer:
    """`keywords`, a registry profile (`claude-sonnet-api`, one added with `ix subjects add`)
    or a runtime kind (`anthropic`, taking the experiment's own options of that kind, such as
    `model` and `base_url`, when its runtime is that kind)."""
    if name == KEYWORDS:
        return KeywordsProposer()
    registry = load_registry()
    if name in registry:
        spec = registry[name].runtime_spec()
    elif name in available():
        own = loaded.experiment.runtime
        spec = dict(own) if own.get("kind") == name else {"kind": name}
    else:
        known = [KEYWORDS, *registry, *available()]
        raise ConfigError(f"unknown proposer {name!r}{did_you_mean(name, known)}: give "
                          f"`{KEYWORDS}` (offline), a subject profile ({', '.join(registry)}) "
                          f"or a runtime kind ({', '.join(available())})", field="--proposer")
    try:
        return RuntimeProposer(name, spec)
    except ConfigError as exc:
        raise ConfigError(f"proposer {name!r}: {exc.message}", field="--proposer") from None


def optimize(lab: str | Path | None, experiment: str, settings: Settings = Settings(), *,
             proposer: str = KEYWORDS, apply: bool = False, limits: Limits = Limits(),
             observer: Observer | None = None, command: Sequence[str] | None = None,
             cache: str | None = None) -> OptimizeResult:
    """Improve the experiment's skill description (see `ix optimize --help`); the session
    is continued when the same arguments left one unfinished, and shown again when they
    completed one. `apply` writes a recommended description into the skill; `cache` (use,
    refresh, replay) puts the runs behind the lab's observation cache."""
    observer = observer or Observer()
    lab_path, paths = resolve(lab, [experiment])
    loaded = load_experiment(paths[0], lab_path)
    chosen = make_proposer(proposer, loaded)
    hooks = Hooks(on_plan=observer.on_plan, on_trial=trial_listener(observer),
                  warn=observer.on_warning, say=observer.on_step)
    outcome: Outcome = run_session(loaded, chosen, settings, hooks=hooks, limits=limits,
                                   command=None if command is None else list(command),
                                   cache=cache)
    if not outcome.reused:
        write_reports(outcome.folder, outcome.state)
        record(lab_path, "optimize", experiment=loaded.experiment.name,
               session=outcome.folder.session_id, status=outcome.status,
               recommended=outcome.state.get("recommended"),
               command=None if command is None else list(command))
    if apply and outcome.status == "completed" and outcome.state.get("recommended"):
        assert outcome.skill_file is not None
        return replace(outcome, state=apply_session(lab_path, outcome.folder,
                                                    outcome.skill_file))
    return outcome


def write_reports(folder: OptimizeDir, state: Mapping[str, Any]) -> None:
    write_text_atomic(folder.report("md"), optimize_markdown(state), shared=True)
    write_text_atomic(folder.report("html"), optimize_html(state), shared=True)


def apply_session(lab: Path, folder: OptimizeDir, skill_file: Path) -> dict[str, Any]:
    """Write the session's recommended SKILL.md over `skill_file`, the skill's file as the
    lab names it (`Outcome.skill_file`; never a path read from the session): refused unless
    one is recommended, the file is `<lab>/skills/<name>/SKILL.md` reached through no
    symlink, and it is still the file the session started from. The old file is kept as
    `SKILL.md.<stamp>.bak` beside it; the audit log records both."""
    state = read_session(folder)
    if state.get("applied"):
        return state
    if not state.get("recommended") or not folder.recommended.is_file():
        raise ConfigError("this session recommends no description, so there is nothing to "
                          "apply", field="--apply")
    target = _own_skill(lab, skill_file)
    old = _read_regular(target)
    if hashlib.sha256(_text(old, target).encode()).hexdigest() != state.get("skill_sha256"):
        raise ConfigError(f"{target} changed since the session started; run ix optimize "
                          "again on the skill as it is now", field="--apply")
    new = _text(_read_regular(folder.recommended), folder.recommended)
    check_tree(folder.path.parents[2], folder.path)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    backup = target.with_name(f"{target.name}.{stamp}.bak")
    _write_new(backup, old, mode=shared_mode(target))
    write_text_atomic(target, new, shared=True)
    state["skill_file"] = str(target)
    state["applied"] = {"at": iso(datetime.now(UTC)), "file": str(target),
                        "backup": str(backup)}
    write_json_atomic(folder.state, state, shared=True)
    write_reports(folder, state)
    record(lab, "optimize-apply", experiment=state["experiment"], session=state["id"],
           skill=state["skill"], file=str(target), backup=str(backup),
           candidate=(state.get("holdout") or {}).get("candidate"))
    return state


def _own_skill(lab: Path, skill_file: Path) -> Path:
    """`skill_file` as `<lab>/skills/<name>/SKILL.md`, once sure that it is one of the lab's
    skills and that no symlink leads there (the skills folder, the skill's, the file)."""
    skills = lab / "skills"
    real = Path(os.path.realpath(skill_file))
    try:
        parts = real.relative_to(os.path.realpath(skills)).parts
    except ValueError:
        parts = ()
    if len(parts) != 2 or parts[1] != "SKILL.md":
        raise ConfigError(f"--apply writes only a skill of the lab ({skills}/<name>/SKILL.md), "
                          f"and the skill's file is {real}; copy the recommended SKILL.md "
                          "there yourself if you mean it", file=skill_file, field="--apply")
    target = skills / parts[0] / parts[1]
    try:
        check_tree(lab, target.parent)
        check_entry(target, FILE)
    except UnsafePath as exc:
        raise UnsafePath(exc.message, file=exc.file, field="--apply") from None
    return target


def _read_regular(path: Path) -> bytes:
    """A file's bytes, read without following a symlink (at most `read_text`'s limit)."""
    try:
        fd = open_regular(path, os.O_RDONLY)
        with os.fdopen(fd, "rb") as f:
            data = f.read(MAX_TEXT_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror or exc}", file=path) from None
    if len(data) > MAX_TEXT_BYTES:
        raise ConfigError(f"too large: more than {MAX_TEXT_BYTES >> 20} MiB", file=path)
    return data


def _text(data: bytes, path: Path) -> str:
    """`data` as `read_text` decodes a file."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not UTF-8 text (byte {exc.start})", file=path) from None


def _write_new(path: Path, data: bytes, *, mode: int) -> None:
    """Create `path` holding `data`: never over a file (or a symlink) already there."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL
                     | getattr(os, "O_NOFOLLOW", 0), mode)
    except FileExistsError:
        raise ConfigError("exists already; ix never writes a backup over a file",
                          file=path, field="--apply") from None
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def list_sessions(lab: str | Path | None = None,
                  experiments: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Every optimize session of the chosen experiments (all: the lab's), newest first; one
    whose `optimize.json` cannot be read is left out."""
    paths = resolve(lab, experiments)[1] if experiments else list_experiments(find_lab(lab))
    out = []
    for path in paths:
        for folder in sessions(path):
            try:
                out.append({**read_session(folder), "folder": str(folder.path)})
            except ConfigError:
                continue
    return sorted(out, key=lambda s: str(s["id"]), reverse=True)


def session(lab: str | Path | None, session_id: str) -> dict[str, Any]:
    """One session by its id (or a unique prefix), with its folder."""
    hits = [s for s in list_sessions(lab) if str(s["id"]).startswith(session_id)]
    if len(hits) != 1:
        raise NotFound(f"{'no' if not hits else 'more than one'} optimize session "
                       f"{session_id!r}", field="SESSION")
    return hits[0]
