"""Line logs in object storage: trial logs, annotations and the audit log as segments.

An object store cannot append, so a log is kept remotely as immutable segments, each named by
the SHA-256 of its bytes (`<sha>.jsonl`): a push writes only the lines the remote lacks, as
new segments, and never rewrites an object another machine wrote; a half-written segment
(a `file://` copy cut short) does not match its name and is ignored, then written again by
the next push that needs it. Lines are told apart by identity: a trial line by its trial and
attempt (run, subject, case, trial, attempt), any other log line by its bytes.
"""

import hashlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from ix.fs.paths import readable_file
from ix.store.trial_lines import MAX_TRIAL, decode_line

#: What tells two trial lines apart: (run_id, subject, probe_id, trial, attempt).
LineId = tuple[str, str, str, int, int]
SEGMENT = ".jsonl"
SEGMENT_LINES = 100_000     # lines per segment: a re-run after an interruption resends at most
SEGMENT_BYTES = 64 << 20    # this much, and progress moves at least this often


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def segment_name(data: bytes) -> str:
    return digest(data) + SEGMENT


def intact(rel: str, data: bytes) -> bool:
    """Whether a segment holds the bytes its name promises."""
    return rel.rsplit("/", 1)[-1] == segment_name(data)


def whole_lines(data: bytes) -> list[bytes]:
    """The non-blank lines of `data`, each with its newline; a last line without one (torn by
    a crash mid-write) is left out, as every reader of ix leaves it."""
    lines = data.split(b"\n")
    lines.pop()  # b"" after the final newline, else the torn fragment
    return [line + b"\n" for line in lines if line.strip()]


def read_log(path: Path) -> bytes:
    return path.read_bytes() if readable_file(path) else b""


def decode(raw: bytes) -> Any:
    """A line's JSON value (orjson, falling back to the store's own decoder on what it
    refuses), None when it holds none."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return decode_line(raw)


def line_id(record: Any) -> LineId | None:
    """A trial line's identity, or None when the line has none (not an object, or its run,
    subject, case, trial or attempt of the wrong type). Only these five are checked: a sync
    copies a log, and every reader judges the rest of a line by its own rule
    (`ix.store.trial_lines.trial_line`), on either side alike."""
    if type(record) is not dict:
        return None
    run, subject, case = record.get("run_id"), record.get("subject"), record.get("probe_id")
    trial, attempt = record.get("trial"), record.get("attempt")
    if type(run) is str and type(subject) is str and type(case) is str \
            and type(trial) is int and 0 <= trial <= MAX_TRIAL \
            and (attempt is None or (type(attempt) is int and 0 <= attempt <= MAX_TRIAL)):
        return run, subject, case, trial, attempt or 0
    return None


def trial_lines(data: bytes) -> Iterator[tuple[LineId, bytes, dict[str, Any]]]:
    """(identity, line, decoded line) of each trial line of a log or segment, in order."""
    for raw in whole_lines(data):
        record = decode(raw)
        ident = line_id(record)
        if ident is not None:
            yield ident, raw, record


def segments(lines: list[bytes]) -> Iterator[bytes]:
    """`lines` cut into segments of at most `SEGMENT_LINES` lines and about `SEGMENT_BYTES`.

    The cut depends only on the lines, so a push re-run after an interruption makes the
    same segments of what is still missing, and writes the same names."""
    chunk: list[bytes] = []
    size = 0
    for line in lines:
        chunk.append(line)
        size += len(line)
        if len(chunk) >= SEGMENT_LINES or size >= SEGMENT_BYTES:
            yield b"".join(chunk)
            chunk, size = [], 0
    if chunk:
        yield b"".join(chunk)


def segment_rels(listing: Iterable[str], folder: str) -> list[str]:
    """The segments directly in `folder` (relative paths), sorted."""
    prefix = folder.rstrip("/") + "/"
    return sorted(rel for rel in listing if rel.startswith(prefix) and rel.endswith(SEGMENT)
                  and "/" not in rel[len(prefix):])


def missing_log_lines(local: list[bytes], remote: Iterable[bytes]) -> list[bytes]:
    """The lines of `local` that `remote` lacks, each once, in `local`'s order (lines of a
    log other than the trial log are told apart by their bytes)."""
    have = set(remote)
    return [line for line in dict.fromkeys(local) if line not in have]


def by_time(lines: list[bytes]) -> list[bytes]:
    """Log lines ordered by their `at` (ISO-8601 UTC) where they have one, else kept in place:
    lines pulled from several machines' segments read in the order they were written."""
    def at(line: bytes) -> str:
        value = decode(line)
        return str(value.get("at") or "") if isinstance(value, dict) else ""
    return sorted(lines, key=at)


__all__ = ["SEGMENT", "SEGMENT_BYTES", "SEGMENT_LINES", "LineId", "by_time", "decode", "digest",
           "intact", "line_id", "missing_log_lines", "read_log", "segment_name", "segment_rels",
           "segments", "trial_lines", "whole_lines"]
