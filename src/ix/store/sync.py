"""`ix sync push|pull`: a lab's results to and from an object-storage prefix (docs/sync.md).

The prefix mirrors the lab, with the logs kept as segments (`ix.store.sync_lines`):

```
<prefix>/audit/<sha>.jsonl                          the audit log's lines
<prefix>/tags/<tag>.json                            one object per tag
<prefix>/<experiment>/experiment.yaml, cases/...    the definition (pulled only where missing)
<prefix>/<experiment>/results/trials/<run_id>/<sha>.jsonl      trial lines
<prefix>/<experiment>/results/summary-<stamp>.json             archived summaries
<prefix>/<experiment>/results/runs/<run_id>/...                the run folder
<prefix>/<experiment>/results/runs/<run_id>/annotations/<sha>.jsonl
```

Logs merge: nothing on either side is lost, no line is duplicated. Other files are copied
where missing; where both sides have a file and they differ, the newer one (by modification
time) wins, and the other side's copy is kept and counted as `kept`. `summary-latest.json` is
derived: a pull writes it from the newest archived summary where the lab has none. A pull
writes each file atomically and appends trial lines through the trial log's own writer, so a
pull cut short leaves every file whole and a re-run completes it.
"""

import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from ix.lab.files import shared_mode
from ix.lab.names import name_problem
from ix.lab.paths import UnsafePath, inside
from ix.lab.resolve import list_experiments
from ix.store.annotations import annotations_path
from ix.store.appending import append_line
from ix.store.audit import audit_path
from ix.store.layout import (
    ANNOTATIONS_FILE,
    LATEST_SUMMARY,
    LOCK_FILE,
    RESULTS_DIR,
    RUNS_DIR,
    ExperimentDir,
)
from ix.store.remote import Remote, RemoteObject
from ix.store.sync_lines import (
    by_time,
    decode,
    intact,
    missing_log_lines,
    read_log,
    segment_name,
    segment_rels,
    segments,
    trial_lines,
    whole_lines,
)
from ix.store.tags import Tag, check_tag_name, read_tags, set_tag
from ix.store.trials import TrialWriter

Warn = Callable[[str], None]
AUDIT_DIR = "audit"
TAGS_DIR = "tags"
TRIALS_DIR = "trials"
ANNOTATIONS_DIR = "annotations"
DEFINITION = ("experiment.yaml", "cases")
APPEND_BATCH = 50_000  # trial lines appended per write (each write whole or not at all)
BIG = 1 << 20  # bytes: an object this large is sent on its own, smaller ones in batches


class SyncProgress(Protocol):
    """Hears how far a transfer is: a phase with its number of objects, then each one."""

    def start(self, what: str, total: int) -> None: ...

    def advance(self, n: int = 1) -> None: ...


class _Quiet:
    def start(self, what: str, total: int) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass


@dataclass
class SyncCounts:
    """What a push or pull did. `objects`: written to the other side; `objects_skipped`:
    already there, the same; `kept`: differing, and the other side's copy is newer, so left
    alone; `lines`/`lines_skipped`: log lines sent (or appended) / already there, of which
    `trials`/`trials_skipped` trial lines; `damaged`: segments that do not match their name
    (an interrupted `file://` push), ignored."""

    objects: int = 0
    objects_skipped: int = 0
    kept: int = 0
    lines: int = 0
    lines_skipped: int = 0
    trials: int = 0
    trials_skipped: int = 0
    damaged: int = 0
    experiments: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- push


def push(lab: Path, remote: Remote, *, experiments: Iterable[str] | None = None,
         runs: set[str] | None = None, progress: SyncProgress | None = None,
         warn: Warn | None = None) -> SyncCounts:
    """Send what the remote lacks. `experiments` (folder names) and `runs` (run ids) narrow
    it, as `ix run --sync` does to the runs it made; the audit log and tags always go."""
    progress = progress or _Quiet()
    counts = SyncCounts()
    wanted = None if experiments is None else set(experiments)
    uploads: dict[str, bytes] = {}
    for exp in list_experiments(lab):
        if wanted is not None and exp.name not in wanted:
            continue
        counts.experiments.append(exp.name)
        listing = remote.listing(exp.name)
        _push_files(remote, listing, _local_files(lab, exp, runs), uploads, counts)
        _push_trials(remote, listing, exp, runs, uploads, counts, progress, warn)
        for run in _run_folders(exp, runs):
            rel = f"{_rel(lab, run)}/{ANNOTATIONS_DIR}"
            _push_log(remote, listing, annotations_path(run), rel, uploads, counts, warn)
    listing = remote.listing(AUDIT_DIR)
    _push_log(remote, listing, audit_path(lab), AUDIT_DIR, uploads, counts, warn)
    _push_tags(remote, lab, uploads, counts)
    _send(remote, uploads, progress)
    return counts


def _send(remote: Remote, uploads: dict[str, bytes], progress: SyncProgress) -> None:
    """Small objects first, in batches; then each segment on its own (progress per object).
    A segment goes last of its log, so a remote never has a run's lines without its files."""
    progress.start("pushing", len(uploads))
    batch: dict[str, bytes] = {}
    for rel in sorted(uploads, key=lambda r: (f"/{TRIALS_DIR}/" in r, len(uploads[r]) >= BIG)):
        data = uploads[rel]
        if len(data) >= BIG:
            if batch:
                remote.write_many(batch)
                progress.advance(len(batch))
                batch = {}
            remote.write(rel, data)
            progress.advance()
            continue
        batch[rel] = data
        if len(batch) >= 32:
            remote.write_many(batch)
            progress.advance(len(batch))
            batch = {}
    if batch:
        remote.write_many(batch)
        progress.advance(len(batch))


def _push_files(remote: Remote, listing: dict[str, RemoteObject],
                files: list[tuple[str, Path]], uploads: dict[str, bytes],
                counts: SyncCounts) -> None:
    for rel, path in files:
        try:
            data = path.read_bytes()
            mtime = datetime.fromtimestamp(path.stat().st_mtime, UTC)
        except OSError:  # gone meanwhile (a run rewrote it): the next push sends it
            continue
        obj = listing.get(rel)
        if obj is None:
            uploads[rel] = data
            counts.objects += 1
        elif remote.same(obj, data):
            counts.objects_skipped += 1
        elif obj.modified is None or mtime > obj.modified:
            uploads[rel] = data
            counts.objects += 1
        else:
            counts.kept += 1


def _push_trials(remote: Remote, listing: dict[str, RemoteObject], exp: Path,
                 runs: set[str] | None, uploads: dict[str, bytes], counts: SyncCounts,
                 progress: SyncProgress, warn: Warn | None) -> None:
    by_run: dict[str, list[tuple[Any, bytes]]] = {}
    for ident, raw, _ in trial_lines(read_log(ExperimentDir.at(exp).trials)):
        if runs is None or ident[0] in runs:
            by_run.setdefault(ident[0], []).append((ident, raw))
    base = f"{exp.name}/{RESULTS_DIR}/{TRIALS_DIR}"
    runs_with_segments = {r for r in by_run if segment_rels(listing, f"{base}/{r}")}
    if runs_with_segments:
        progress.start("comparing", sum(len(segment_rels(listing, f"{base}/{r}"))
                                        for r in runs_with_segments))
    for run, lines in by_run.items():
        if not _safe_name(run):
            _say(warn, f"{exp.name}: run id {run!r} cannot name a remote folder; not pushed")
            continue
        folder = f"{base}/{run}"
        have: set[Any] = set()
        for _, data in _intact(_one_by_one(remote, segment_rels(listing, folder), progress),
                               remote, counts, warn, "ignored, its lines are sent again"):
            have.update(ident for ident, _, _ in trial_lines(data))
        missing = [raw for ident, raw in lines if ident not in have]
        counts.lines_skipped += len(lines) - len(missing)
        counts.trials_skipped += len(lines) - len(missing)
        counts.lines += len(missing)
        counts.trials += len(missing)
        for data in segments(missing):
            uploads[f"{folder}/{segment_name(data)}"] = data
            counts.objects += 1


def _push_log(remote: Remote, listing: dict[str, RemoteObject], path: Path, folder: str,
              uploads: dict[str, bytes], counts: SyncCounts, warn: Warn | None) -> None:
    local = whole_lines(read_log(path))
    if not local:
        return
    remote_lines = [line for _, data in _intact(
        remote.read_many(segment_rels(listing, folder)), remote, counts, warn)
        for line in whole_lines(data)]
    missing = missing_log_lines(local, remote_lines)
    counts.lines_skipped += len(local) - len(missing)
    if missing:
        data = b"".join(missing)
        uploads[f"{folder}/{segment_name(data)}"] = data
        counts.objects += 1
        counts.lines += len(missing)


def _push_tags(remote: Remote, lab: Path, uploads: dict[str, bytes], counts: SyncCounts) -> None:
    tags = read_tags(lab)
    if not tags:
        return
    listing = remote.listing(TAGS_DIR)
    for name, tag in tags.items():
        rel = f"{TAGS_DIR}/{name}.json"
        data = _tag_bytes(tag)
        obj = listing.get(rel)
        if obj is None:
            uploads[rel] = data
            counts.objects += 1
        elif remote.same(obj, data):
            counts.objects_skipped += 1
        elif _tagged_at(remote.read(rel)) < tag.tagged_at:
            uploads[rel] = data
            counts.objects += 1
        else:
            counts.kept += 1


def _tag_bytes(tag: Tag) -> bytes:
    return (json.dumps(tag.as_dict(), sort_keys=True) + "\n").encode("utf-8")


def _tagged_at(data: bytes) -> str:
    value = decode(data.strip())
    return str(value.get("tagged_at") or "") if isinstance(value, dict) else ""


# --------------------------------------------------------------------------- what is local


def _rel(lab: Path, path: Path) -> str:
    return path.relative_to(lab).as_posix()


def _run_folders(exp: Path, runs: set[str] | None) -> list[Path]:
    folder = ExperimentDir.at(exp).runs
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")
                  and (runs is None or p.name in runs))


def _local_files(lab: Path, exp: Path, runs: set[str] | None) -> list[tuple[str, Path]]:
    """(remote path, file) of every file a push compares: the definition, the archived
    summaries and the run folders (logs go as segments, locks and temporary files not)."""
    out: list[tuple[str, Path]] = []

    def add(path: Path) -> None:
        if path.is_file() and not path.is_symlink() and not path.name.startswith("."):
            out.append((_rel(lab, path), path))

    add(exp / DEFINITION[0])
    cases = exp / DEFINITION[1]
    if cases.is_dir():
        for path in sorted(cases.rglob("*")):
            add(path)
    place = ExperimentDir.at(exp)
    if place.results.is_dir():
        for path in sorted(place.results.glob("summary-*.json")):
            if path.name != LATEST_SUMMARY:
                add(path)
    for run in _run_folders(exp, runs):
        for path in sorted(run.rglob("*")):
            if path.name not in (LOCK_FILE, ANNOTATIONS_FILE):
                add(path)
    return out


# --------------------------------------------------------------------------- pull


def pull(lab: Path, remote: Remote, *, progress: SyncProgress | None = None,
         warn: Warn | None = None) -> SyncCounts:
    """Bring in what the lab lacks: definitions where missing, files, then trial lines,
    annotations, tags and the audit log. Nothing the lab has is lost."""
    progress = progress or _Quiet()
    counts = SyncCounts()
    listing = remote.listing()
    by_exp: dict[str, dict[str, RemoteObject]] = {}
    for rel, obj in listing.items():
        top = rel.split("/", 1)[0]
        if top not in (AUDIT_DIR, TAGS_DIR) and "/" in rel:
            by_exp.setdefault(top, {})[rel] = obj
    for name in sorted(by_exp):
        if not _safe_name(name) or name in (AUDIT_DIR, TAGS_DIR):
            _say(warn, f"{remote.url}: {name!r} cannot name an experiment folder; skipped")
            continue
        counts.experiments.append(name)
        _pull_experiment(lab, remote, name, by_exp[name], counts, progress, warn)
    _pull_tags(lab, remote, listing, counts, warn)
    audit = [rel for rel in segment_rels(listing, AUDIT_DIR)]
    _pull_log(remote, audit, audit_path(lab), counts, warn)
    return counts


def _pull_experiment(lab: Path, remote: Remote, name: str, objects: dict[str, RemoteObject],
                     counts: SyncCounts, progress: SyncProgress, warn: Warn | None) -> None:
    exp = lab / name
    defined = (exp / DEFINITION[0]).exists()
    results = f"{name}/{RESULTS_DIR}/"
    files: list[RemoteObject] = []
    trial_segments: list[str] = []
    notes: dict[str, list[str]] = {}
    for rel, obj in sorted(objects.items()):
        parts = rel.split("/")
        if not all(_safe_name(p) for p in parts):
            _say(warn, f"{remote.url}: {rel}: not a path ix writes; skipped")
            continue
        if not rel.startswith(results):
            if parts[1] in DEFINITION and not defined:
                files.append(obj)
            continue
        inner = parts[2:]
        if inner[0] == TRIALS_DIR:
            if len(inner) == 3 and rel.endswith(".jsonl"):
                trial_segments.append(rel)
        elif inner[0] == RUNS_DIR and len(inner) == 4 and inner[2] == ANNOTATIONS_DIR:
            notes.setdefault(inner[1], []).append(rel)
        elif inner[-1] not in (LATEST_SUMMARY, LOCK_FILE, ANNOTATIONS_FILE):
            files.append(obj)
    _pull_files(lab, remote, files, counts, progress, warn)
    _pull_trials(exp, remote, trial_segments, counts, progress, warn)
    for run, rels in sorted(notes.items()):
        _pull_log(remote, rels, annotations_path(ExperimentDir.at(exp).run(run).path), counts,
                  warn)
    _latest_summary(exp)


def _pull_files(lab: Path, remote: Remote, files: list[RemoteObject], counts: SyncCounts,
                progress: SyncProgress, warn: Warn | None) -> None:
    wanted = []
    for obj in files:
        local = _local_path(lab, obj.rel, warn)
        if local is None:
            continue
        if not local.exists():
            wanted.append(obj.rel)
            continue
        try:
            st = local.stat()
        except OSError:
            continue
        mtime = datetime.fromtimestamp(st.st_mtime, UTC)
        if st.st_size == obj.size and remote.same(obj, local.read_bytes()):
            counts.objects_skipped += 1
        elif obj.modified is not None and obj.modified > mtime:
            wanted.append(obj.rel)
        else:
            counts.kept += 1
    if not wanted:
        return
    progress.start("pulling files", len(wanted))
    for rel, data in remote.read_many(wanted):
        _write_bytes_atomic(lab / rel, data)
        counts.objects += 1
        progress.advance()


def _pull_trials(exp: Path, remote: Remote, rels: list[str], counts: SyncCounts,
                 progress: SyncProgress, warn: Warn | None) -> None:
    if not rels:
        return
    log = ExperimentDir.at(exp).trials
    have = {ident for ident, _, _ in trial_lines(read_log(log))}
    progress.start(f"pulling {exp.name} trials", len(rels))
    writer: TrialWriter | None = None
    try:
        for _, data in _intact(_one_by_one(remote, rels, progress), remote, counts, warn):
            new: list[bytes] = []  # appended as they are: ix's own encoding, no re-encoding
            added = set()
            for ident, raw, _ in trial_lines(data):
                if ident in have:
                    counts.lines_skipped += 1
                    counts.trials_skipped += 1
                    continue
                added.add(ident)
                new.append(raw)
            have |= added
            counts.objects += 1 if new else 0
            counts.objects_skipped += 0 if new else 1
            if new and writer is None:
                writer = TrialWriter(log)
            for at in range(0, len(new), APPEND_BATCH):
                assert writer is not None
                batch = new[at:at + APPEND_BATCH]
                writer.write_lines(b"".join(batch), len(batch))
                counts.lines += len(batch)
                counts.trials += len(batch)
    finally:
        if writer is not None:
            writer.close()


def _pull_log(remote: Remote, rels: list[str], path: Path, counts: SyncCounts,
              warn: Warn | None) -> None:
    if not rels:
        return
    remote_lines = [line for _, data in _intact(remote.read_many(rels), remote, counts, warn)
                    for line in whole_lines(data)]
    missing = missing_log_lines(remote_lines, whole_lines(read_log(path)))
    counts.lines_skipped += len(set(remote_lines)) - len(missing)
    if missing:
        path.parent.mkdir(parents=True, exist_ok=True)
        append_line(path, b"".join(by_time(missing)).decode("utf-8"))
        counts.lines += len(missing)


def _pull_tags(lab: Path, remote: Remote, listing: dict[str, RemoteObject], counts: SyncCounts,
               warn: Warn | None) -> None:
    rels = sorted(rel for rel in listing if rel.startswith(f"{TAGS_DIR}/")
                  and rel.endswith(".json") and rel.count("/") == 1)
    if not rels:
        return
    local = read_tags(lab)
    for rel, data in remote.read_many(rels):
        name = rel.split("/", 1)[1].removesuffix(".json")
        item = decode(data.strip())
        try:
            check_tag_name(name)
        except Exception:
            item = None
        if not isinstance(item, dict) or not isinstance(item.get("run"), str) \
                or name_problem(item["run"]) is not None:
            _say(warn, f"{remote.url}: {rel}: not a tag; skipped")
            continue
        tag = Tag(name=name, run_id=item["run"], experiment=str(item.get("experiment") or ""),
                  folder=str(item.get("folder") or ""),
                  tagged_at=str(item.get("tagged_at") or ""),
                  tagged_by=str(item.get("tagged_by") or ""))
        old = local.get(name)
        if old is not None and old.as_dict() == tag.as_dict():
            counts.objects_skipped += 1
        elif old is None or tag.tagged_at > old.tagged_at:
            set_tag(lab, tag, force=True)
            counts.objects += 1
        else:
            counts.kept += 1


def _latest_summary(exp: Path) -> None:
    """`summary-latest.json` from the newest archived summary, where the lab has none."""
    place = ExperimentDir.at(exp)
    if place.latest_summary.exists() or not place.results.is_dir():
        return
    archived = sorted(p for p in place.results.glob("summary-*.json")
                      if p.name != LATEST_SUMMARY)
    if archived:
        _write_bytes_atomic(place.latest_summary, archived[-1].read_bytes())


# --------------------------------------------------------------------------- helpers


def _one_by_one(remote: Remote, rels: Iterable[str],
                progress: SyncProgress) -> Iterator[tuple[str, bytes]]:
    """Each segment read on its own (one may be large), the progress told of each."""
    for rel in rels:
        data = remote.read(rel)
        progress.advance()
        yield rel, data


def _intact(segments: Iterable[tuple[str, bytes]], remote: Remote, counts: SyncCounts,
            warn: Warn | None, then: str = "ignored") -> Iterator[tuple[str, bytes]]:
    """The segments whose content matches their name; the others (an interrupted push) are
    counted as `damaged` and said."""
    for rel, data in segments:
        if intact(rel, data):
            yield rel, data
        else:
            counts.damaged += 1
            _say(warn, f"{remote.url}: {rel}: damaged segment (an interrupted push); {then}")


def _safe_name(name: str) -> bool:
    return bool(name) and not name.startswith(".") and "\\" not in name \
        and name_problem(name) is None


def _local_path(lab: Path, rel: str, warn: Warn | None) -> Path | None:
    try:
        return inside(lab, lab / rel)
    except UnsafePath:
        _say(warn, f"{rel}: would be written outside the lab (a symlink); skipped")
        return None


def _write_bytes_atomic(path: Path, data: bytes) -> None:
    """A temporary file beside `path`, fsynced, renamed into place: never half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, shared_mode(path))
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _say(warn: Warn | None, message: str) -> None:
    if warn is not None:
        warn(message)


__all__ = ["SyncCounts", "SyncProgress", "pull", "push"]
