"""The lab's trial index: every experiment's `trials.jsonl` as Parquet under `<lab>/.ix/index/`.

A cache, never the truth. Each log is indexed as one or more Parquet parts (of at most
`CHUNK_BYTES` of the log each, so memory does not grow with the log); the manifest
records the log's inode, size and mtime, and `open_index` re-indexes whatever changed: lines
appended to an unchanged prefix (checked by the sha256 of its first and last 4 KiB) become a
new part; any other change rebuilds that experiment. Parts and the manifest are written to a
temporary file and renamed, so a concurrent reader sees the old index or the new one, never
half of one; parts a manifest no longer names are deleted only after a grace period.

Lines that are not trial records (torn or corrupt lines, JSON that is not a trial record by
the rule of `ix.store.trial_lines`, which the resume reader applies too) are skipped and
counted. An unfinished last line (no newline yet) is left for the next refresh.

The folder is checked and written as `ix.query.index_folder` says (never through a symlink).
A damaged manifest (not JSON, the wrong shape, a folder in its place) or a damaged part is
rebuilt, with a warning, never a traceback.
"""

import hashlib
import json
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

from pydantic import ConfigDict, StringConstraints, ValidationError

from ix.domain.errors import ConfigError, Warn
from ix.domain.model import Model
from ix.fs.files import write_text_atomic
from ix.fs.resolve import list_experiments
from ix.query.case_table import case_rows, cases_signature, suite_dir
from ix.query.index_folder import (
    INDEX_DIR,
    clear_entry,
    collect_garbage,
    index_root,
    intact,
    locked,
    make_root,
    read_file,
)
from ix.query.index_parts import (
    complete_end,
    copy_to_parquet,
    file_state,
    parquet_list,
    quote,
    run_ids,
    safe_name,
    write_part,
    write_superseded,
)
from ix.store.layout import ExperimentDir
from ix.store.spec import read_spec

if TYPE_CHECKING:
    import duckdb

FORMAT = 5  # bump when the part schema or what a part keeps changes: older indexes are rebuilt
#            (3: the columns `invoked` and `first_invoked`; 4: each source's `runs`; 5: its
#            `suite` and each run's `specs`)
MANIFEST = "manifest.json"
MAX_PARTS = 16         # more parts than this are merged into one (16 chunks: a 2 GB log)
GRACE_S = 600          # unreferenced files younger than this may still be read by someone
_CHECK_BYTES = 4096


@dataclass(frozen=True)
class SourceIndex:
    """One experiment's indexed log: its parts, superseded attempts and cases (file names)."""

    name: str
    trials_file: Path
    parts: tuple[str, ...]
    rows: int
    skipped: int
    torn: bool
    superseded: str | None
    cases: str | None
    #: run id -> the experiment its lines name: one run's trials seen in two folders (a
    #: copied experiment) are one run's, counted once (`TrialIndex.copies`)
    runs: dict[str, str] = field(default_factory=dict)
    #: run id -> what its spec.yaml says of it (`RunFacts`), read when the spec last changed
    specs: dict[str, "RunFacts"] = field(default_factory=dict)


class RunFacts(TypedDict):
    """What a run's spec.yaml says that a query's scope needs (`ix results`), with the spec's
    `file_state` then: a spec that changed is read again."""

    #: None: the run has no spec.yaml
    state: dict[str, int] | None
    #: `status` as written (a run with no spec: completed), or `unreadable`
    status: str
    #: the ix run ids an imported run's trials came from; empty for a run ix made
    origins: list[str]


#: A run with no spec.yaml (trials written before run folders had one): completed, made by ix.
NO_SPEC: RunFacts = {"state": None, "status": "completed", "origins": []}


@dataclass(frozen=True)
class Copy:
    """A folder whose log repeats runs of another: its trials of `runs` are counted once, as
    those of `kept` (DESIGN.md §3: a trial is its run, subject, case and trial)."""

    source: SourceIndex
    kept: str
    runs: tuple[str, ...]


@dataclass(frozen=True)
class TrialIndex:
    """The index as one manifest describes it: read the files it names, nothing else."""

    lab: Path
    root: Path
    sources: tuple[SourceIndex, ...]
    #: (source, part, line) of every row of a copied run that is not the one counted, and
    #: `same_attempt` when it repeats an attempt counted (`_write_copies`); None: no copy
    copied: str | None = None

    def paths(self, kind: str) -> list[str]:
        """The files of one kind (`parts`, `superseded`, `cases`) of every source."""
        names: list[str] = []
        for s in self.sources:
            value = getattr(s, kind)
            names += list(value) if isinstance(value, tuple) else [value] if value else []
        return [str(self.root / n) for n in names]

    def copies(self) -> list[Copy]:
        """The folders holding runs another folder holds too. Of the folders of one run, the
        one named as the run's experiment is kept, else the first by name; the others are
        its copies. Cheap: run ids per folder, from the manifest."""
        by_name = {s.name: s for s in self.sources}
        found: dict[str, tuple[str, list[str]]] = {}
        for run_id, ranked in _holders({s.name: s.runs for s in self.sources}).items():
            for copy in ranked[1:]:
                found.setdefault(copy, (ranked[0], []))[1].append(run_id)
        return [Copy(by_name[name], kept, tuple(sorted(runs)))
                for name, (kept, runs) in found.items()]


def _holders(runs: dict[str, dict[str, str]]) -> dict[str, list[str]]:
    """Each run held by more than one folder (`runs`: folder -> its run ids -> experiment):
    its folders, the one counted first — named as the run's experiment, else first by name
    (as `_KEEP` orders the rows)."""
    where: dict[str, list[str]] = {}
    for name, held in runs.items():
        for run_id in held:
            where.setdefault(run_id, []).append(name)
    return {run_id: sorted(names, key=lambda n: (n != runs[n][run_id], n))
            for run_id, names in where.items() if len(names) > 1}


def open_index(lab: Path, warn: Warn | None = None) -> TrialIndex:
    """The lab's index, brought up to date with every `trials.jsonl` (and case file) first."""
    lab = Path(lab).resolve()
    root = index_root(lab, warn)
    experiments = [p for p in list_experiments(lab) if ExperimentDir.at(p).trials.is_file()]
    manifest = _read_manifest(root, warn)
    if not _stale(lab, root, manifest, experiments):
        return _as_index(lab, root, manifest)
    make_root(root)
    with locked(root):
        manifest = _read_manifest(root)  # another process may have refreshed meanwhile
        if _stale(lab, root, manifest, experiments):
            before = _referenced(manifest)
            manifest = _refresh(lab, root, manifest, experiments, warn)
            clear_entry(root / MANIFEST)  # a folder (or a symlink) in its place goes
            write_text_atomic(root / MANIFEST, json.dumps(manifest, indent=1) + "\n")
            collect_garbage(root, {MANIFEST, ".lock", *_referenced(manifest)},
                            retired=before - _referenced(manifest), grace_s=GRACE_S)
    return _as_index(lab, root, manifest)


# --------------------------------------------------------------------------- the manifest

_FileName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]+\.(parquet|jsonl)$")]


class _Shape(Model):
    model_config = ConfigDict(strict=True, extra="forbid")


class _State(_Shape):
    ino: int
    size: int
    mtime_ns: int


class _Facts(_Shape):
    state: _State | None
    status: str
    origins: list[str]


class _Entry(_Shape):
    state: _State
    offset: int
    head: str
    tail: str
    next_part: int
    parts: list[_FileName]
    torn: bool
    rows: int
    skipped: int
    superseded: _FileName | None
    cases: _FileName | None
    cases_signature: str | None
    suite: str | None
    trials_file: str
    runs: dict[str, str]
    specs: dict[str, _Facts]


class _Manifest(_Shape):
    """The manifest's shape, checked when it is read (the index works on the plain dict)."""

    format: int
    sources: dict[str, _Entry]
    copied: _FileName | None = None


def _read_manifest(root: Path, warn: Warn | None = None) -> dict[str, Any]:
    """The manifest, or an empty one (so the index is rebuilt) when it is missing, of an
    older format, or damaged: not a file, not JSON, or not of the manifest's shape (a file
    name in it that is not a plain name of the index folder is damage too)."""
    empty: dict[str, Any] = {"format": FORMAT, "sources": {}}
    path = root / MANIFEST
    try:
        text = read_file(path)  # never through a symlink, never a FIFO
        if text is None:
            return empty
        data = json.loads(text)
    except OSError as exc:
        return _damaged(path, warn, exc.strerror or str(exc), empty)
    except (ValueError, RecursionError):
        return _damaged(path, warn, "not JSON", empty)
    if isinstance(data, dict) and isinstance(data.get("format"), int) \
            and data["format"] != FORMAT:
        return empty  # an index of an older ix: rebuilt, as it is no damage
    try:
        _Manifest.model_validate(data)
    except ValidationError as exc:
        where = ".".join(str(p) for p in exc.errors()[0]["loc"]) or "the top"
        return _damaged(path, warn, f"not of the manifest's shape at {where}", empty)
    return data


def _damaged(path: Path, warn: Warn | None, why: str, empty: dict[str, Any]) -> dict[str, Any]:
    if warn is not None:
        warn(f"{path}: the query index's manifest is damaged ({why}); the index is rebuilt")
    return empty


def _as_index(lab: Path, root: Path, manifest: dict[str, Any]) -> TrialIndex:
    sources = []
    for name, e in sorted(manifest["sources"].items()):
        sources.append(SourceIndex(name=name, trials_file=lab / e["trials_file"],
                                   parts=tuple(e["parts"]), rows=e["rows"],
                                   skipped=e["skipped"], torn=e["torn"],
                                   superseded=e["superseded"], cases=e["cases"],
                                   runs=e["runs"], specs=e["specs"]))
    return TrialIndex(lab=lab, root=root, sources=tuple(sources),
                      copied=manifest.get("copied"))


def _stale(lab: Path, root: Path, manifest: dict[str, Any], experiments: list[Path]) -> bool:
    entries = manifest["sources"]
    if sorted(entries) != sorted(p.name for p in experiments):
        return True
    for exp in experiments:
        e = entries[exp.name]
        if e["state"] != file_state(ExperimentDir.at(exp).trials):
            return True
        if e["suite"] is None or e["cases_signature"] != cases_signature(exp, Path(e["suite"])):
            return True  # experiment.yaml (which names the suite) or a case file changed
        if any(_spec_state(exp, run_id) != facts["state"]
               for run_id, facts in e["specs"].items()):
            return True
        files = [*e["parts"], e["superseded"], e["cases"]]
        if not all(intact(root, f) for f in files if f):
            return True  # a file missing, damaged, or a symlink: rebuilt
    copied = manifest.get("copied")
    return isinstance(copied, str) and not intact(root, copied)


def _referenced(manifest: dict[str, Any]) -> set[str]:
    names: set[str] = set()
    for e in manifest["sources"].values():
        names.update(f for f in [*e["parts"], e["superseded"], e["cases"]] if f)
    if manifest.get("copied"):
        names.add(manifest["copied"])
    return names


# --------------------------------------------------------------------------- refreshing

def _refresh(lab: Path, root: Path, manifest: dict[str, Any], experiments: list[Path],
             warn: Warn | None) -> dict[str, Any]:
    import duckdb

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    sources: dict[str, Any] = {}
    try:
        for exp in experiments:
            old = manifest["sources"].get(exp.name)
            sources[exp.name] = _refresh_source(con, lab, root, exp, old, warn)
        copied = _write_copies(con, root, sources)
    finally:
        con.close()
    return {"format": FORMAT, "sources": sources, "copied": copied}


def _write_copies(con: "duckdb.DuckDBPyConnection", root: Path,
                  sources: dict[str, Any]) -> str | None:
    """(source, part, line) of the rows a copied folder repeats (DESIGN.md §3: a trial is its
    run, subject, case and trial, wherever its line is): of one trial, every row but the
    latest attempt's in the folder counted first (`_holders`); `same_attempt` when the row
    repeats an attempt kept (`trials_all` drops those only). Written when the index is
    refreshed, ranking the copied runs' rows only, so a query pays an anti-join, as for
    superseded attempts. None when no run is in two folders."""
    held = _holders({name: e["runs"] for name, e in sources.items()})
    if not held:
        return None
    names = sorted({n for ranked in held.values() for n in ranked})
    parts = [p for n in names for p in sources[n]["parts"]]
    trial = "run_id, subject, probe_id, trial"
    keep = "(source = experiment) DESC, source, part DESC, line DESC"
    runs = ", ".join(quote(r) for r in sorted(held))
    file = f"copied-{secrets.token_hex(6)}.parquet"
    copy_to_parquet(con, f"""
        SELECT source, part, line, same_attempt FROM (
            SELECT source, part, line,
                   row_number() OVER (PARTITION BY {trial} ORDER BY attempt DESC, {keep})
                       AS by_trial,
                   row_number() OVER (PARTITION BY {trial}, attempt ORDER BY {keep}) > 1
                       AS same_attempt
            FROM read_parquet({parquet_list(root, parts)}) WHERE run_id IN ({runs}))
        WHERE by_trial > 1""", root / file)
    return file


def _refresh_source(con: "duckdb.DuckDBPyConnection", lab: Path, root: Path, exp: Path,
                    old: dict[str, Any] | None, warn: Warn | None) -> dict[str, Any]:
    log = ExperimentDir.at(exp).trials
    state = file_state(log)
    entry = dict(old) if old else None
    if entry is not None and not all(intact(root, f) for f in
                                     [*entry["parts"], entry["superseded"]] if f):
        entry = None
    if entry is None or entry["state"] != state:
        entry = _index_log(con, root, exp.name, log, state, entry if entry and
                           _appended(log, entry, state) else None)
    suite = suite_dir(exp)
    signature = cases_signature(exp, suite)
    if old is not None and old["cases_signature"] == signature and (
            old["cases"] is None or intact(root, old["cases"])):
        entry["cases"] = old["cases"]
    else:
        entry["cases"] = _write_cases(root, exp, warn)
    entry["cases_signature"] = signature
    entry["suite"] = str(suite)
    entry["trials_file"] = str(log.relative_to(lab))
    before = old["specs"] if old else {}
    entry["specs"] = {run_id: _facts(exp, run_id, before.get(run_id)) for run_id in entry["runs"]}
    return entry


def _spec_state(exp: Path, run_id: str) -> dict[str, int] | None:
    try:
        return file_state(ExperimentDir.at(exp).run(run_id).spec)
    except OSError:
        return None


def _facts(exp: Path, run_id: str, old: RunFacts | None) -> RunFacts:
    """The run's `RunFacts`: as known while its spec.yaml did not change, else read."""
    state = _spec_state(exp, run_id)
    if old is not None and old["state"] == state:
        return old
    if state is None:
        return NO_SPEC
    try:
        spec = read_spec(ExperimentDir.at(exp).run(run_id).path)
    except ConfigError:
        return {"state": state, "status": "unreadable", "origins": []}
    status = spec.get("status", "completed")
    return {"state": state, "status": status if isinstance(status, str) else "unreadable",
            "origins": sorted(_origins(spec))}


def _origins(spec: Any) -> set[str]:
    """The ix run ids an imported run's trials came from (empty for a run ix made)."""
    if not isinstance(spec.get("import"), dict) and "imported_from" not in spec:
        return set()
    origin = spec.get("origin")
    found: set[str] = set()
    if isinstance(origin, dict):
        if origin.get("run_id"):
            found.add(str(origin["run_id"]))
        for log in origin.get("logs") or ():
            if isinstance(log, dict) and log.get("ix_run_id"):
                found.add(str(log["ix_run_id"]))
    return found


def _appended(log: Path, entry: dict[str, Any], state: dict[str, int]) -> bool:
    """The log only grew since it was indexed: same inode, longer, same first and last bytes."""
    old = entry["state"]
    offset = entry["offset"]
    if state["ino"] != old["ino"] or state["size"] <= old["size"] or offset > state["size"]:
        return False
    head, tail = _checks(log, offset)
    return head == entry["head"] and tail == entry["tail"]


def _checks(log: Path, offset: int) -> tuple[str, str]:
    with log.open("rb") as f:
        head = f.read(min(offset, _CHECK_BYTES))
        f.seek(max(0, offset - _CHECK_BYTES))
        tail = f.read(offset - max(0, offset - _CHECK_BYTES))
    return hashlib.sha256(head).hexdigest(), hashlib.sha256(tail).hexdigest()


def _index_log(con: "duckdb.DuckDBPyConnection", root: Path, name: str, log: Path,
               state: dict[str, int], appended_to: dict[str, Any] | None) -> dict[str, Any]:
    """Index the log's new bytes as one more part (`appended_to`), or all of it afresh."""
    start = appended_to["offset"] if appended_to else 0
    seq = appended_to["next_part"] if appended_to else 0
    end, torn = complete_end(log, start, state["size"])
    parts = list(appended_to["parts"]) if appended_to else []
    runs = dict(appended_to["runs"]) if appended_to else {}
    rows = skipped = 0
    for at, until in chunks(log, start, end):  # a part each: memory bounded by CHUNK_BYTES
        part = f"{safe_name(name)}-{secrets.token_hex(6)}.parquet"
        n, junk = write_part(con, root, name, seq, log, at, until, state, root / part)
        seq += 1
        rows, skipped = rows + n, skipped + junk
        if n == 0:
            (root / part).unlink(missing_ok=True)
        else:
            parts.append(part)
            runs.update(run_ids(con, root / part))
    head, tail = _checks(log, end)
    entry: dict[str, Any] = {
        "state": state, "offset": end, "head": head, "tail": tail, "next_part": seq,
        "parts": parts, "torn": torn,
        "rows": (appended_to["rows"] if appended_to else 0) + rows,
        "skipped": (appended_to["skipped"] if appended_to else 0) + skipped,
        "superseded": None, "cases": None, "cases_signature": None, "suite": None,
        "runs": runs, "specs": {},
    }
    if appended_to is not None and rows == 0:  # nothing new: what superseded what stands
        entry["superseded"] = appended_to["superseded"]
        return entry
    if len(entry["parts"]) > MAX_PARTS:
        merged = f"{safe_name(name)}-{secrets.token_hex(6)}.parquet"
        every = parquet_list(root, entry["parts"])
        copy_to_parquet(con, f"SELECT * FROM read_parquet({every})", root / merged)
        entry["parts"] = [merged]
    entry["superseded"] = write_superseded(con, root, name, entry["parts"])
    return entry


#: A log's new bytes are indexed in parts of about this size: the rows of one part are held
#: in memory while it is written, so a bigger log costs more parts, not more memory.
CHUNK_BYTES = 1 << 27


def chunks(log: Path, start: int, end: int) -> list[tuple[int, int]]:
    """[start, end) cut into ranges of about `CHUNK_BYTES`, each ending at a line's end."""
    out: list[tuple[int, int]] = []
    with log.open("rb") as f:
        while end - start > CHUNK_BYTES:
            f.seek(start + CHUNK_BYTES)
            piece = b""
            while not piece.endswith(b"\n"):  # to the end of the line the cut falls in,
                piece = f.readline(1 << 16)    # 64 KiB at a time (a line may be huge)
                if not piece:
                    break
            cut = f.tell()
            if cut >= end:
                break
            out.append((start, cut))
            start = cut
    out.append((start, end))
    return out


def _write_cases(root: Path, exp: Path, warn: Warn | None) -> str | None:
    rows = case_rows(exp, warn)
    if not rows:
        return None
    file = f"{safe_name(exp.name)}-cases-{secrets.token_hex(6)}.jsonl"
    text = "".join(json.dumps({"source": exp.name, **r}, ensure_ascii=False) + "\n"
                   for r in rows)
    write_text_atomic(root / file, text)
    return file


__all__ = ["FORMAT", "GRACE_S", "INDEX_DIR", "MANIFEST", "Copy", "SourceIndex", "TrialIndex",
           "index_root", "open_index"]
