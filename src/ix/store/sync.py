"""`ix sync push|pull`: a lab's results to and from an object-storage prefix (docs/sync.md).

The prefix mirrors the lab, with the logs kept as segments (`ix.store.sync_lines`):

```
<prefix>/ix-sync.json                               what makes it a sync prefix (`MANIFEST`)
<prefix>/audit/<sha>.jsonl                          the audit log's lines
<prefix>/tags/<tag>.json                            one object per tag
<prefix>/<experiment>/experiment.yaml, cases/...    the definition (pulled only where missing)
<prefix>/<experiment>/results/trials/<run_id>/<sha>.jsonl      trial lines
<prefix>/<experiment>/results/summary-<stamp>.json             archived summaries
<prefix>/<experiment>/results/runs/<run_id>/...                the run folder
<prefix>/<experiment>/results/runs/<run_id>/annotations/<sha>.jsonl
```

Sync merges; it never replaces. Logs merge by line identity: nothing on either side is
lost, no line is duplicated, and a log (`trials.jsonl`, `annotations.jsonl`, `audit.jsonl`,
`batches.jsonl`) is never copied as a file: a remote object of that name is ignored. Other
files are copied only where the other side has none; where both have one and they differ,
each side keeps its own and the path is reported as a conflict (`SyncCounts.conflicts`),
never settled by modification time. A pull reads only the paths a push writes, and only from
a prefix a push made (`MANIFEST`): pointed at another lab's folder it stops before writing
anything. `summary-latest.json` is derived: a pull writes it from the newest archived
summary where the lab has none. A pull writes each file atomically and appends trial lines
through the trial log's own writer, so a pull cut short leaves every file whole and a re-run
completes it.
"""

import json
import os
import re
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ix.domain.errors import Warn
from ix.fs.appending import append_line
from ix.fs.files import shared_mode
from ix.fs.names import name_problem
from ix.fs.paths import UnsafePath, inside
from ix.fs.resolve import list_experiments
from ix.store.annotations import annotations_path
from ix.store.audit import audit_path
from ix.store.layout import (
    ANNOTATIONS_FILE,
    BATCHES_FILE,
    LATEST_SUMMARY,
    LOCK_FILE,
    RESULTS_DIR,
    RUNS_DIR,
    ExperimentDir,
)
from ix.store.remote import Remote, RemoteError, RemoteObject
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

AUDIT_DIR = "audit"
TAGS_DIR = "tags"
TRIALS_DIR = "trials"
ANNOTATIONS_DIR = "annotations"
DEFINITION = ("experiment.yaml", "cases")
MANIFEST = "ix-sync.json"
SYNC_FORMAT = 1
#: Files of a run folder that never travel: its lock, its logs (annotations go as segments;
#: the batch journal is this machine's record of what it sent a provider).
LOCAL_ONLY = (LOCK_FILE, ANNOTATIONS_FILE, BATCHES_FILE)
SEGMENT_NAME = re.compile(r"[0-9a-f]{64}\.jsonl")
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
    already there, the same; `conflicts`: files both sides hold with different bytes, each
    side's left as it is (`kept`: how many); `lines`/`lines_skipped`: log lines sent (or
    appended) / already there, of which `trials`/`trials_skipped` trial lines; `damaged`:
    segments that do not match their name (an interrupted `file://` push), ignored;
    `refused`: entries of a `file://` prefix that are links or special files, never read or
    written through; `ignored`: remote objects at paths a push never writes. A pull also
    lists the experiments whose definition it added and the runs whose first trial lines it
    brought, and counts the trial lines that are a later attempt of a trial the lab holds
    (`superseded`: they now count instead of the lab's)."""

    objects: int = 0
    objects_skipped: int = 0
    lines: int = 0
    lines_skipped: int = 0
    trials: int = 0
    trials_skipped: int = 0
    damaged: int = 0
    superseded: int = 0
    experiments: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    experiments_added: list[str] = field(default_factory=list)
    runs_added: list[str] = field(default_factory=list)

    @property
    def kept(self) -> int:
        return len(self.conflicts)


# --------------------------------------------------------------------------- push


def push(lab: Path, remote: Remote, *, experiments: Iterable[str] | None = None,
         runs: set[str] | None = None, progress: SyncProgress | None = None,
         warn: Warn | None = None) -> SyncCounts:
    """Send what the remote lacks. `experiments` (folder names) and `runs` (run ids) narrow
    it, as `ix run --sync` does to the runs it made; the audit log and tags always go."""
    progress = progress or _Quiet()
    counts = SyncCounts()
    claim_prefix(remote)
    wanted = None if experiments is None else set(experiments)
    uploads: dict[str, bytes] = {}
    for exp in list_experiments(lab):
        if wanted is not None and exp.name not in wanted:
            continue
        counts.experiments.append(exp.name)
        listing = remote.listing(exp.name)
        _push_files(remote, listing, _local_files(lab, exp, runs, warn), uploads, counts)
        _push_trials(remote, listing, exp, runs, uploads, counts, progress, warn)
        for run in _run_folders(exp, runs):
            rel = f"{_rel(lab, run)}/{ANNOTATIONS_DIR}"
            _push_log(remote, listing, annotations_path(run), rel, uploads, counts, warn)
    listing = remote.listing(AUDIT_DIR)
    _push_log(remote, listing, audit_path(lab), AUDIT_DIR, uploads, counts, warn)
    tag_uploads = _push_tags(remote, lab, counts)
    _send(remote, uploads, progress)
    if tag_uploads:
        remote.write_many(tag_uploads, replace=True)  # a tag is a pointer: the later one wins
    _refusals(remote, counts, warn)
    return counts


def claim_prefix(remote: Remote) -> None:
    """Make sure `remote` is an ix sync prefix before a push writes to it: one that a push
    made (it has `MANIFEST`), or an empty one, which gets `MANIFEST` now. A prefix holding
    anything else (a lab's folder, another tool's bucket) is refused: nothing is written."""
    if _manifest(remote) is not None:
        return
    # (asked again when not empty: a push starting at the same moment writes it first)
    if not remote.is_empty() and _manifest(remote) is None:
        raise RemoteError(f"holds objects but no {MANIFEST}, so it is not a prefix `ix sync "
                          "push` made (a lab's folder?); nothing was written. Push to an "
                          "empty prefix, or to one ix already pushes to", field=remote.url)
    remote.write(MANIFEST, (json.dumps({"format": "ix-sync", "version": SYNC_FORMAT},
                                       sort_keys=True) + "\n").encode("utf-8"))


def check_prefix(remote: Remote) -> None:
    """Refuse to pull from anything but a prefix a push made (`MANIFEST`), before anything
    is written: pointed at another lab's folder, a pull would read its logs as files."""
    if _manifest(remote) is None:
        empty = remote.is_empty()
        raise RemoteError(
            ("holds nothing: nothing was ever pushed there" if empty else
             f"is not an ix sync prefix: it has no {MANIFEST} (which `ix sync push` writes "
             "first). Is it a lab's folder? Pull from the URL you pushed to") +
            "; nothing was written", field=remote.url)


def _manifest(remote: Remote) -> dict[str, Any] | None:
    data = remote.read_if_any(MANIFEST)
    if data is None:
        return None
    value = decode(data.strip())
    if not isinstance(value, dict) or value.get("format") != "ix-sync" \
            or type(value.get("version")) is not int:
        raise RemoteError(f"{MANIFEST} is not one ix wrote; nothing was written",
                          field=remote.url)
    if value["version"] > SYNC_FORMAT:
        raise RemoteError(f"{MANIFEST}: written by a newer ix (sync format "
                          f"{value['version']}); upgrade ix to use this prefix",
                          field=remote.url)
    return value


def _refusals(remote: Remote, counts: SyncCounts, warn: Warn | None) -> None:
    for rel, what in sorted(remote.refused.items()):
        counts.refused.append(rel)
        _say(warn, f"{remote.url}: {rel}: is {what}; refused (nothing is read or written "
                   "through a link or into a special file)")


def _send(remote: Remote, uploads: dict[str, bytes], progress: SyncProgress) -> None:
    """Small objects first, in batches; then each segment on its own (progress per object).
    A segment goes last of its log, so a remote never has a run's lines without its files.
    A file is put only where none stands (what the listing showed missing: one written
    meanwhile is left alone); a segment may replace its damaged copy (its name is its
    content's hash, so nothing else can stand there honestly)."""
    progress.start("pushing", len(uploads))
    batch: dict[str, bytes] = {}
    replace = False

    def flush() -> None:
        nonlocal batch
        if batch:
            remote.write_many(batch, replace=replace)
            progress.advance(len(batch))
            batch = {}

    for rel in sorted(uploads, key=lambda r: (_is_segment(r), len(uploads[r]) >= BIG)):
        data = uploads[rel]
        if _is_segment(rel) != replace:
            flush()
            replace = _is_segment(rel)
        if len(data) >= BIG:
            flush()
            remote.write(rel, data, replace=replace)
            progress.advance()
            continue
        batch[rel] = data
        if len(batch) >= 32:
            flush()
    flush()


def _is_segment(rel: str) -> bool:
    return SEGMENT_NAME.fullmatch(rel.rsplit("/", 1)[-1]) is not None


def _push_files(remote: Remote, listing: dict[str, RemoteObject],
                files: list[tuple[str, Path]], uploads: dict[str, bytes],
                counts: SyncCounts) -> None:
    for rel, path in files:
        try:
            data = path.read_bytes()
        except OSError:  # gone meanwhile (a run rewrote it): the next push sends it
            continue
        obj = listing.get(rel)
        if obj is None:
            if rel not in remote.refused:
                uploads[rel] = data
                counts.objects += 1
        elif remote.same(obj, data):
            counts.objects_skipped += 1
        else:
            counts.conflicts.append(rel)


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
        missing = []
        for ident, raw in lines:  # each trial once, even where the lab's log has it twice
            if ident not in have:
                have.add(ident)
                missing.append(raw)
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


def _push_tags(remote: Remote, lab: Path, counts: SyncCounts) -> dict[str, bytes]:
    """The tags to send: those the remote lacks, and those whose remote copy is older (by
    `tagged_at`: a tag is a pointer, the later one wins; a newer remote one is left)."""
    tags = read_tags(lab)
    if not tags:
        return {}
    uploads = {}
    listing = remote.listing(TAGS_DIR)
    for name, tag in tags.items():
        rel = f"{TAGS_DIR}/{name}.json"
        data = _tag_bytes(tag)
        obj = listing.get(rel)
        if rel in remote.refused:
            continue
        if obj is None or (not remote.same(obj, data)
                           and _tagged_at(remote.read(rel)) < tag.tagged_at):
            uploads[rel] = data
            counts.objects += 1
        else:
            counts.objects_skipped += 1
    return uploads


def _tag_bytes(tag: Tag) -> bytes:
    return (json.dumps(tag.as_dict(), sort_keys=True) + "\n").encode("utf-8")


def _tagged_at(data: bytes) -> str:
    value = decode(data.strip())
    return str(value.get("tagged_at") or "") if isinstance(value, dict) else ""


# --------------------------------------------------------------------------- what is local


def _rel(lab: Path, path: Path) -> str:
    return path.relative_to(lab).as_posix()


def _run_folders(exp: Path, runs: set[str] | None) -> list[Path]:
    """The experiment's run folders (those of `runs`), real folders only: a link is never
    followed to send what it points at."""
    folder = ExperimentDir.at(exp).runs
    if not folder.is_dir() or folder.is_symlink():
        return []
    return sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink()
                  and not p.name.startswith(".") and (runs is None or p.name in runs))


def _local_files(lab: Path, exp: Path, runs: set[str] | None,
                 warn: Warn | None = None) -> list[tuple[str, Path]]:
    """(remote path, file) of every file a push compares: the definition, the archived
    summaries and the run folders (logs go as segments; locks, the batch journal and
    temporary files not; nothing behind a symlink)."""
    out: list[tuple[str, Path]] = []

    def add(path: Path) -> None:
        if path.is_file() and not path.is_symlink() and not path.name.startswith("."):
            out.append((_rel(lab, path), path))

    add(exp / DEFINITION[0])
    cases = exp / DEFINITION[1]
    if cases.is_symlink():
        _say(warn, f"{_rel(lab, cases)}: is a symbolic link; not pushed")
    elif cases.is_dir():
        for path in sorted(cases.rglob("*")):
            add(path)
    place = ExperimentDir.at(exp)
    if place.results.is_dir():
        for path in sorted(place.results.glob("summary-*.json")):
            if path.name != LATEST_SUMMARY:
                add(path)
    for run in _run_folders(exp, runs):
        for path in sorted(run.rglob("*")):
            if path.name not in LOCAL_ONLY:
                add(path)
    return out


# --------------------------------------------------------------------------- pull


def pull(lab: Path, remote: Remote, *, progress: SyncProgress | None = None,
         warn: Warn | None = None) -> SyncCounts:
    """Bring in what the lab lacks: definitions where missing, files where missing, then
    trial lines, annotations, tags and the audit log. Nothing the lab has is lost or
    replaced; only a prefix a push made is read (`check_prefix`)."""
    progress = progress or _Quiet()
    counts = SyncCounts()
    check_prefix(remote)
    listing = remote.listing()
    by_exp: dict[str, dict[str, RemoteObject]] = {}
    for rel, obj in listing.items():
        top = rel.split("/", 1)[0]
        if top not in (AUDIT_DIR, TAGS_DIR) and "/" in rel:
            by_exp.setdefault(top, {})[rel] = obj
        elif rel != MANIFEST and not _is_segment_of(rel, AUDIT_DIR) \
                and not rel.startswith(f"{TAGS_DIR}/"):
            counts.ignored.append(rel)
    for name in sorted(by_exp):
        if not _safe_name(name) or name in (AUDIT_DIR, TAGS_DIR):
            _say(warn, f"{remote.url}: {name!r} cannot name an experiment folder; skipped")
            continue
        counts.experiments.append(name)
        _pull_experiment(lab, remote, name, by_exp[name], counts, progress, warn)
    _pull_tags(lab, remote, listing, counts, warn)
    audit = [rel for rel in segment_rels(listing, AUDIT_DIR)]
    _pull_log(remote, audit, audit_path(lab), counts, warn)
    if counts.ignored:
        shown = ", ".join(counts.ignored[:5]) + (" ..." if len(counts.ignored) > 5 else "")
        _say(warn, f"{remote.url}: {len(counts.ignored)} object(s) at paths ix sync does not "
                   f"write, ignored: {shown}")
    _refusals(remote, counts, warn)
    return counts


def _is_segment_of(rel: str, folder: str) -> bool:
    head, _, name = rel.rpartition("/")
    return head == folder and SEGMENT_NAME.fullmatch(name) is not None


def _pull_experiment(lab: Path, remote: Remote, name: str, objects: dict[str, RemoteObject],
                     counts: SyncCounts, progress: SyncProgress, warn: Warn | None) -> None:
    """Sort the experiment's objects by what a push writes there; anything else (a
    `trials.jsonl`, a journal, an optimize session, an index) is ignored, never copied."""
    exp = lab / name
    defined = os.path.lexists(exp / DEFINITION[0])
    files: list[RemoteObject] = []
    trial_segments: list[str] = []
    notes: dict[str, list[str]] = {}
    for rel, obj in sorted(objects.items()):
        parts = rel.split("/")
        if not all(_safe_name(p) for p in parts):
            _say(warn, f"{remote.url}: {rel}: not a path ix writes; skipped")
            continue
        kind = _remote_kind(parts[1:])
        if kind == "definition":
            if not defined:
                files.append(obj)
        elif kind == "file":
            files.append(obj)
        elif kind == "trials":
            trial_segments.append(rel)
        elif kind == "annotations":
            notes.setdefault(parts[3], []).append(rel)
        elif kind in ("local", "ignored"):
            counts.ignored.append(rel)
    if not defined and any(o.rel == f"{name}/{DEFINITION[0]}" for o in files):
        counts.experiments_added.append(name)
    _pull_files(lab, remote, files, counts, progress, warn)
    _pull_trials(exp, remote, trial_segments, counts, progress, warn)
    for run, rels in sorted(notes.items()):
        _pull_log(remote, rels, annotations_path(ExperimentDir.at(exp).run(run).path), counts,
                  warn)
    _latest_summary(exp)


def _remote_kind(parts: list[str]) -> str:
    """What a push writes at `<experiment>/<parts>`: "definition", "file" (a run folder's
    file or an archived summary), "trials" or "annotations" (segments); "local" (what a push
    leaves out on purpose: a lock, a log, a journal) or "ignored" (not a path a push
    writes); both are left alone."""
    if (parts[0], len(parts) > 1) in ((DEFINITION[0], False), (DEFINITION[1], True)):
        return "definition"
    if parts[0] != RESULTS_DIR or len(parts) < 2:
        return "ignored"
    inner = parts[1:]
    if len(inner) == 1:
        name = inner[0]
        return "file" if name.startswith("summary-") and name.endswith(".json") \
            and name != LATEST_SUMMARY else "ignored"
    if inner[0] == TRIALS_DIR:
        return "trials" if len(inner) == 3 and SEGMENT_NAME.fullmatch(inner[2]) else "ignored"
    if inner[0] != RUNS_DIR or len(inner) < 3:
        return "ignored"
    if inner[2] == ANNOTATIONS_DIR:
        return "annotations" if len(inner) == 4 and SEGMENT_NAME.fullmatch(inner[3]) \
            else "ignored"
    return "local" if inner[-1] in LOCAL_ONLY else "file"


def _pull_files(lab: Path, remote: Remote, files: list[RemoteObject], counts: SyncCounts,
                progress: SyncProgress, warn: Warn | None) -> None:
    """Each file where the lab has none; where it has one, the same bytes are skipped and
    different ones are a conflict: the lab's copy stays."""
    wanted = []
    for obj in files:
        local = _local_path(lab, obj.rel, warn)
        if local is None:
            continue
        if not os.path.lexists(local):
            wanted.append(obj.rel)
            continue
        try:
            same = local.is_file() and not local.is_symlink() \
                and local.stat().st_size == obj.size and remote.same(obj, local.read_bytes())
        except OSError:
            same = False
        if same:
            counts.objects_skipped += 1
        else:
            counts.conflicts.append(obj.rel)
    if not wanted:
        return
    progress.start("pulling files", len(wanted))
    for rel, data in remote.read_many(wanted):
        if _write_new(lab / rel, data):
            counts.objects += 1
        else:  # written meanwhile (a run): the lab's stays
            counts.conflicts.append(rel)
        progress.advance()


def _pull_trials(exp: Path, remote: Remote, rels: list[str], counts: SyncCounts,
                 progress: SyncProgress, warn: Warn | None) -> None:
    if not rels:
        return
    log = ExperimentDir.at(exp).trials
    have: set[Any] = set()
    latest: dict[tuple[str, str, str, int], int] = {}
    for ident, _, _ in trial_lines(read_log(log)):
        have.add(ident)
        latest[ident[:4]] = max(ident[4], latest.get(ident[:4], -1))
    runs_before = {ident[0] for ident in have}
    progress.start(f"pulling {exp.name} trials", len(rels))
    writer: TrialWriter | None = None
    try:
        for _, data in _intact(_one_by_one(remote, rels, progress), remote, counts, warn):
            new: list[bytes] = []  # appended as they are: ix's own encoding, no re-encoding
            for ident, raw, _ in trial_lines(data):
                if ident in have:  # in the lab, or earlier in this segment or pull
                    counts.lines_skipped += 1
                    counts.trials_skipped += 1
                    continue
                have.add(ident)
                if ident[4] > latest.get(ident[:4], ident[4]):
                    counts.superseded += 1
                if ident[0] not in runs_before and ident[0] not in counts.runs_added:
                    counts.runs_added.append(ident[0])
                new.append(raw)
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
        if old is None or (old.as_dict() != tag.as_dict() and tag.tagged_at > old.tagged_at):
            set_tag(lab, tag, force=True)
            counts.objects += 1
        else:  # the same, or the lab's is the later: a tag is a pointer, the later one wins
            counts.objects_skipped += 1


def _latest_summary(exp: Path) -> None:
    """`summary-latest.json` from the newest archived summary, where the lab has none."""
    place = ExperimentDir.at(exp)
    if place.latest_summary.exists() or not place.results.is_dir():
        return
    archived = sorted(p for p in place.results.glob("summary-*.json")
                      if p.name != LATEST_SUMMARY)
    if archived:
        _write_new(place.latest_summary, archived[-1].read_bytes())


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


def _write_new(path: Path, data: bytes) -> bool:
    """`data` as a new file at `path`, only where nothing stands (a file written meanwhile
    is never replaced); whether it was written. A temporary file beside it, fsynced, linked
    into place (renamed, where the file system has no hard links): never half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, shared_mode(path))
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path, follow_symlinks=False)
        except FileExistsError:
            return False
        except OSError:  # no hard links here
            if os.path.lexists(path):
                return False
            os.rename(tmp, path)
        return True
    finally:
        Path(tmp).unlink(missing_ok=True)


def _say(warn: Warn | None, message: str) -> None:
    if warn is not None:
        warn(message)


__all__ = ["MANIFEST", "SyncCounts", "SyncProgress", "check_prefix", "claim_prefix", "pull",
           "push"]
