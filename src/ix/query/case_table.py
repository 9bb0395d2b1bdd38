"""The cases of the query layer: each case's expectation, tags and difficulty, from its file.

Trial lines do not carry tags or difficulty, so the query layer joins them from the case
files (`cases/*.md` frontmatter, DESIGN.md §2). Reading is lenient where loading is strict:
results stay queryable when a case file was later broken or removed (its trials then have
no tags and no difficulty), and a broken file is reported, not fatal.
"""

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

from ix.domain.errors import ConfigError
from ix.eval.models import Difficulty
from ix.lab.frontmatter import read_frontmatter
from ix.lab.resolve import EXPERIMENT_FILE
from ix.lab.yamlio import load_yaml_file

Warn = Callable[[str], None]

#: The ordinal of each difficulty, for correlations: easy = 1, medium = 2, hard = 3.
DIFFICULTY_LEVELS: dict[str, int] = {d: i for i, d in enumerate(get_args(Difficulty), start=1)}


def suite_dir(experiment: Path) -> Path:
    """The experiment's cases folder (`cases.suite`, default `cases/`), read leniently."""
    try:
        data = load_yaml_file(experiment / EXPERIMENT_FILE)
    except ConfigError:
        data = None
    cases = data.get("cases") if isinstance(data, dict) else None
    suite = cases.get("suite") if isinstance(cases, dict) else None
    return experiment / (suite if isinstance(suite, str) and suite else "cases")


def cases_signature(experiment: Path) -> str:
    """Changes whenever experiment.yaml or a case file is added, removed or modified."""
    h = hashlib.sha256()
    for path in (experiment / EXPERIMENT_FILE,):
        try:
            st = path.stat()
            h.update(f"{path.name}\t{st.st_size}\t{st.st_mtime_ns}\n".encode())
        except OSError:
            h.update(b"-\n")
    suite = suite_dir(experiment)
    try:
        entries = sorted((e.name, e.stat()) for e in os.scandir(suite)
                         if e.name.endswith(".md") and e.is_file())
    except OSError:
        entries = []
    h.update(str(suite).encode() + b"\n")
    for name, st in entries:
        h.update(f"{name}\t{st.st_size}\t{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def case_rows(experiment: Path, warn: Warn | None = None) -> list[dict[str, Any]]:
    """`probe_id`, `expectation`, `tags`, `difficulty`, `difficulty_level` of every case file."""
    suite = suite_dir(experiment)
    try:
        files = sorted(p for p in suite.iterdir() if p.suffix == ".md" and p.is_file())
    except OSError:
        return []
    rows: dict[str, dict[str, Any]] = {}
    for path in files:
        try:
            meta, _ = read_frontmatter(path)
        except ConfigError as exc:
            if warn is not None:
                warn(f"{exc.render()} (its trials are listed without tags or difficulty)")
            continue
        given = meta.get("id")
        case_id = given if isinstance(given, str) and given else path.stem
        tags = meta.get("tags")
        difficulty = meta.get("difficulty")
        if difficulty not in DIFFICULTY_LEVELS:
            difficulty = None
        rows.setdefault(case_id, {
            "probe_id": case_id,
            "expectation": meta.get("expectation") if isinstance(meta.get("expectation"),
                                                                 str) else None,
            "tags": [str(t) for t in tags] if isinstance(tags, list) else [],
            "difficulty": difficulty,
            "difficulty_level": DIFFICULTY_LEVELS.get(difficulty) if difficulty else None,
        })
    return list(rows.values())


def case_prompts(experiment: Path) -> dict[str, str]:
    """Each case file's prompt (its body), by case id; a file that does not read is left out
    (leniently, as `case_rows`, which reports it)."""
    suite = suite_dir(experiment)
    try:
        files = sorted(p for p in suite.iterdir() if p.suffix == ".md" and p.is_file())
    except OSError:
        return {}
    prompts: dict[str, str] = {}
    for path in files:
        try:
            meta, body = read_frontmatter(path)
        except ConfigError:
            continue
        given = meta.get("id")
        prompts.setdefault(given if isinstance(given, str) and given else path.stem,
                           body.strip())
    return prompts
