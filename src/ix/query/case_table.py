"""The cases of the query layer: each case's expectation, tags and difficulty, from its file.

Trial lines do not carry tags or difficulty, so the query layer joins them from the case
files (`cases/*.md` frontmatter, DESIGN.md §2). Reading is lenient where loading is strict:
results stay queryable when a case file was later broken or removed (its trials then have
no tags and no difficulty), and a broken file is reported, not fatal.

Cases generated from a file have rows too, with the file's expectation, tags and difficulty:
a file with `variants:` stands for `<id>~1` … `<id>~N` (`variant_of`: the file's id; the
file's own id never runs, so it has no row), and the cases a probe generated
(`results/probes/*.json`, `probe: paraphrase`) are read from its records (`paraphrase_of`).
Every row has its `family`: the original it was generated from, at the root, or its own id
(STATS.md §10: a family is one unit).
"""

import hashlib
import json
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from operator import attrgetter
from pathlib import Path
from typing import Any

from ix.domain.errors import ConfigError, Warn
from ix.fs.frontmatter import read_frontmatter
from ix.fs.resolve import EXPERIMENT_FILE
from ix.fs.yamlio import load_yaml_file, read_text
from ix.lab.variants import MAX_VARIANTS
from ix.lab.variants import SEPARATOR as VARIANT_SEPARATOR
from ix.store.layout import ExperimentDir

#: The ordinal of each difficulty, for correlations: easy = 1, medium = 2, hard = 3 (the
#: difficulties of `ix.eval.models`, in their order; spelled out here, as reading a case file
#: leniently needs none of the models).
DIFFICULTY_LEVELS: dict[str, int] = {"easy": 1, "medium": 2, "hard": 3}


def suite_dir(experiment: Path) -> Path:
    """The experiment's cases folder (`cases.suite`, default `cases/`), read leniently."""
    try:
        data = load_yaml_file(experiment / EXPERIMENT_FILE)
    except ConfigError:
        data = None
    cases = data.get("cases") if isinstance(data, dict) else None
    suite = cases.get("suite") if isinstance(cases, dict) else None
    return experiment / (suite if isinstance(suite, str) and suite else "cases")


#: Where an experiment's probes record what they generated (`ix.engine.probes.PROBES_DIR`).
PROBES_DIR = "probes"
#: Bumped when the rows change shape: an index whose case table is older rewrites it
#: (2: generated cases, `variant_of`, `paraphrase_of`, `family`).
ROWS_VERSION = 2


def _probe_records(experiment: Path) -> list[Path]:
    folder = ExperimentDir.at(experiment).results / PROBES_DIR
    try:
        return sorted(p for p in folder.iterdir() if p.suffix == ".json" and p.is_file())
    except OSError:
        return []


def cases_signature(experiment: Path, suite: Path | None = None) -> str:
    """Changes whenever experiment.yaml, a case file or a probe's record is added, removed or
    modified. `suite`: the cases folder experiment.yaml named when last read (it is part of
    the signature, and so is experiment.yaml's size and time); default: read it now."""
    h = hashlib.sha256()
    h.update(f"rows {ROWS_VERSION}\n".encode())
    _hash_case_files(h, experiment, suite_dir(experiment) if suite is None else suite)
    for path in _probe_records(experiment):
        try:
            st = path.stat()
        except OSError:
            continue
        h.update(f"probe {path.name}\t{st.st_size}\t{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def case_files_state(experiment: Path, suite: Path) -> str:
    """Changes whenever experiment.yaml or a case file of `suite` (the folder experiment.yaml
    named when `suite` was read: a new experiment.yaml may name another) is added, removed or
    modified; read from the files' sizes and times, without parsing one."""
    h = hashlib.sha256()
    _hash_case_files(h, experiment, suite)
    return h.hexdigest()


def _hash_case_files(h: "hashlib._Hash", experiment: Path, suite: Path) -> None:
    try:
        st = (experiment / EXPERIMENT_FILE).stat()
        h.update(f"{EXPERIMENT_FILE}\t{st.st_size}\t{st.st_mtime_ns}\n".encode())
    except OSError:
        h.update(b"-\n")
    try:
        entries = sorted((e.name, e.stat()) for e in os.scandir(suite)
                         if e.name.endswith(".md") and e.is_file())
    except OSError:
        entries = []
    h.update(str(suite).encode() + b"\n")
    for name, st in entries:
        h.update(f"{name}\t{st.st_size}\t{st.st_mtime_ns}\n".encode())


def _row(case_id: str, meta: Mapping[str, Any], **origin: str | None) -> dict[str, Any]:
    """A case row from frontmatter-shaped `meta` (leniently: a bad value reads as none);
    `origin` sets `variant_of` / `paraphrase_of` over what `meta`'s metadata says."""
    tags = meta.get("tags")
    difficulty = meta.get("difficulty")
    if difficulty not in DIFFICULTY_LEVELS:
        difficulty = None
    metadata = meta.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    row: dict[str, Any] = {
        "probe_id": case_id,
        "expectation": meta.get("expectation") if isinstance(meta.get("expectation"),
                                                             str) else None,
        "tags": [str(t) for t in tags] if isinstance(tags, list) else [],
        "difficulty": difficulty,
        "difficulty_level": DIFFICULTY_LEVELS.get(difficulty) if difficulty else None,
    }
    for key in ("variant_of", "paraphrase_of"):
        value = origin[key] if key in origin else metadata.get(key)
        row[key] = str(value) if isinstance(value, str | int) and str(value) else None
    return row


def variant_count(variants: Any) -> int:
    """How many cases a file's `variants:` expands into (`ix.lab.variants`), without
    rendering a prompt; 0 where loading would refuse it (a mistake the run reports)."""
    if isinstance(variants, Mapping):
        sizes = [len(v) if isinstance(v, Sequence) and not isinstance(v, str | bytes) else 0
                 for v in variants.values()]
        count = math.prod(sizes) if sizes else 0
    elif isinstance(variants, Sequence) and not isinstance(variants, str | bytes):
        count = len(variants)
    else:
        count = 0
    return count if count <= MAX_VARIANTS else 0


def _generated(experiment: Path) -> list[dict[str, Any]]:
    """The cases the experiment's probes recorded (`results/probes/*.json`), as frontmatter-
    shaped mappings; a record that does not read is skipped (the run reads it strictly)."""
    out = []
    for path in _probe_records(experiment):
        try:
            record = json.loads(read_text(path))
        except (OSError, ValueError, ConfigError):
            continue
        cases = record.get("cases") if isinstance(record, dict) else None
        out += [c for c in cases or [] if isinstance(c, dict) and isinstance(c.get("id"), str)]
    return out


def _families(rows: dict[str, dict[str, Any]]) -> None:
    """Each row's `family`: the root of its chain of originals (through the rows), or its
    own id (as `ix.eval.families.family_of`)."""
    for row in rows.values():
        current, parent = row["probe_id"], row["paraphrase_of"] or row["variant_of"]
        seen = {current}
        while parent is not None and parent not in seen:
            seen.add(parent)
            current = parent
            up = rows.get(parent)
            parent = (up["paraphrase_of"] or up["variant_of"]) if up is not None else None
        row["family"] = current


def _read_case_files(experiment: Path, warn: Warn | None,
                     ) -> Iterator[tuple[str, Mapping[str, Any], str]]:
    """Each case file that reads: its case id, frontmatter and body (a broken one warned of)."""
    suite = suite_dir(experiment)
    try:
        files = sorted((p for p in suite.iterdir() if p.suffix == ".md" and p.is_file()),
                       key=attrgetter("name"))  # as the loader lists them; Paths compare slowly
    except OSError:
        files = []
    for path in files:
        try:
            meta, body = read_frontmatter(path)
        except ConfigError as exc:
            if warn is not None:
                warn(f"{exc.render()} (its trials are listed without tags or difficulty)")
            continue
        given = meta.get("id")
        yield (given if isinstance(given, str) and given else path.stem), meta, body


def _expanded(case_id: str, meta: Mapping[str, Any]) -> list[tuple[str, dict[str, str]]]:
    """The cases a file stands for: itself, or its `variants:` (`<id>~1` …), each with the
    origin its row records."""
    count = variant_count(meta["variants"]) if meta.get("variants") else 0
    if not count:
        return [(case_id, {})]
    return [(f"{case_id}{VARIANT_SEPARATOR}{i}", {"variant_of": case_id})
            for i in range(1, count + 1)]


def case_properties(experiment: Path, warn: Warn | None = None) -> dict[str, dict[str, Any]]:
    """What `ix report --by` correlates with, per case id: `difficulty` (easy 1, medium 2,
    hard 3), `tags`, `metadata`, `prompt_length` (characters of the case file's body, or of a
    generated case's prompt) and `history_length` (turns before the prompt); read leniently,
    as `case_rows` (a variant has its file's)."""
    out: dict[str, dict[str, Any]] = {}
    for case_id, meta, body in _read_case_files(experiment, warn):
        for each, _ in _expanded(case_id, meta):
            out.setdefault(each, _properties(meta, body))
    for case in _generated(experiment):
        out.setdefault(case["id"], _properties(case, str(case.get("prompt") or "")))
    return out


def _properties(meta: Mapping[str, Any], body: str) -> dict[str, Any]:
    tags, metadata, history = meta.get("tags"), meta.get("metadata"), meta.get("history")
    difficulty = meta.get("difficulty")
    return {"difficulty": DIFFICULTY_LEVELS.get(difficulty) if isinstance(difficulty, str)
            else None,
            "tags": [str(t) for t in tags] if isinstance(tags, list) else [],
            "metadata": dict(metadata) if isinstance(metadata, Mapping) else {},
            "prompt_length": len(body.strip()),
            "history_length": len(history) if isinstance(history, list) else 0}


def case_rows(experiment: Path, warn: Warn | None = None) -> list[dict[str, Any]]:
    """`probe_id`, `expectation`, `tags`, `difficulty`, `difficulty_level`, `variant_of`,
    `paraphrase_of` and `family` of every case file's case, and of every case generated
    from one (module docstring)."""
    return case_files(experiment, warn)[0]


def case_prompts(experiment: Path) -> dict[str, str]:
    """Each case file's prompt (its body), by case id; a file that does not read is left out
    (leniently, as `case_rows`, which reports it)."""
    return case_files(experiment, prompts_only=True)[1]


def case_files(experiment: Path, warn: Warn | None = None, *, prompts_only: bool = False,
               ) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """`case_rows` and `case_prompts` of the experiment, each case file read once."""
    rows: dict[str, dict[str, Any]] = {}
    prompts: dict[str, str] = {}
    for case_id, meta, body in _read_case_files(experiment, warn):
        prompts.setdefault(case_id, body.strip())
        if prompts_only:
            continue
        for each, origin in _expanded(case_id, meta):
            rows.setdefault(each, _row(each, meta, **origin))
    if prompts_only:
        return [], prompts
    for case in _generated(experiment):
        rows.setdefault(case["id"], _row(case["id"], case))
    if not rows:
        return [], prompts
    _families(rows)
    return list(rows.values()), prompts
