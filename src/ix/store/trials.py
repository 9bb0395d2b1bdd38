"""`results/`: the trial log (single source of truth) and the summaries derived from it.

`trials.jsonl` is appended one line per trial, each with a single `write` under an exclusive
lock that every ix process takes, so a crash loses at most the line being written and two
runs never interleave their bytes; a reader skips such a torn line with a warning and keeps
every line before it, and the next writer cuts it off. Summaries are written to a temporary
file and renamed, so they are never half-written. docs/reliability.md has the guarantees.
"""

import contextlib
import errno
import json
import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from ix.domain.errors import ConfigError, Warn
from ix.fs.files import located
from ix.fs.paths import FOLDER, check_entry, open_regular, readable_file
from ix.store.trial_lines import decode_line, trial_line

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: appends are still single writes
    fcntl = None  # type: ignore[assignment]
_flock = fcntl.flock if fcntl is not None else None
_LOCK_EX = fcntl.LOCK_EX if fcntl is not None else 0
_LOCK_UN = fcntl.LOCK_UN if fcntl is not None else 0

#: `IX_FSYNC`: when the trial log is forced to the disk. `end` (the default): every line is
#: handed to the operating system as it is written (it survives the process being killed)
#: and fsynced when the run ends; `line`: each line is fsynced before the trial is counted
#: (it also survives a power cut), at a cost docs/reliability.md measures.
FSYNC_ENV = "IX_FSYNC"
FSYNC_POLICIES = ("end", "line")

_log = logging.getLogger("ix.results")

# What orjson does not write as ix always did, the stdlib writes (in the same compact spacing).
_STDLIB = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _nulls(record: Mapping[str, Any]) -> int:
    """The `null`s the trial line's own None values write (of the keys whose None is usual)."""
    n = 0
    for key in ("observation", "reading", "error"):
        if key in record and record[key] is None:
            n += 1
    for reading in (record.get("reading"), *(record.get("readings") or ())):
        if type(reading) is dict and "score" in reading and reading["score"] is None:
            n += 1
    return n


def encode_line(record: Mapping[str, Any]) -> bytes:
    """One trial line: the record's JSON, compact, keys in its order, text as UTF-8, and a
    newline — written by orjson (under a microsecond; the stdlib's encoder took 10-18 us of
    a trial). The same JSON values as ever, with two guards: what orjson refuses (an integer
    beyond 64 bits, a key that is not a string) the stdlib writes; and a float that is not
    finite, which orjson would write as `null`, is refused (`ValueError`) as it always was —
    seen cheaply, as a `null` more than the record's usual None values write (`_nulls`)."""
    try:
        data = orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE)
    except orjson.JSONEncodeError:
        return (_STDLIB.encode(record) + "\n").encode("utf-8")
    if data.count(b"null") != _nulls(record):  # a None elsewhere, a "null" in a text, or NaN
        _STDLIB.encode(record)  # raises on NaN and infinities
    return data


def stamp(moment: datetime) -> str:
    """UTC `YYYYMMDDTHHMMSSZ`, the timestamp of file names."""
    return moment.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def fsync_policy(env: Mapping[str, str] | None = None) -> str:
    """The trial log's fsync policy from `IX_FSYNC` (`end` when unset)."""
    raw = (os.environ if env is None else env).get(FSYNC_ENV, "").strip().lower()
    if not raw:
        return "end"
    if raw not in FSYNC_POLICIES:
        raise ConfigError(f"unknown fsync policy {raw!r}; allowed: {', '.join(FSYNC_POLICIES)}",
                          field=FSYNC_ENV)
    return raw


class TrialWriter:
    """Appends trial records to `trials.jsonl`.

    Each line is one `write` on a file opened for appending, under an exclusive `flock` of
    the log that every ix writer takes (the kernel drops it when its holder dies), so lines
    of concurrent runs never interleave, whatever their length. Before writing after someone
    else, the writer checks the log's last byte: a line torn by a killed writer is cut off
    (or, if it is a whole record missing its newline, completed), so it never swallows ours.
    A failed write takes back its partial line. `fsync`: see `FSYNC_POLICIES`; `warn` hears
    of a repaired line (else the `ix.results` logger does).
    """

    def __init__(self, path: Path, *, fsync: str = "end", warn: Warn | None = None):
        path.parent.mkdir(parents=True, exist_ok=True)
        check_entry(path.parent, FOLDER)  # `results/` a symlink: refused, as the log would be
        self.path = path
        self.fsync = fsync
        self._warn = warn
        self.written = 0
        self.repaired: str | None = None  # what was done to a torn last line, if anything
        # never through a symlink, never into a FIFO or a device (`UnsafePath`)
        self._fd = open_regular(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)
        self._end = -1  # where our last line ended: the log's size if nobody wrote since
        try:
            with self._locked():
                self._end = self._tail()
            if fsync == "line":  # the log's own name must survive a power cut too
                _fsync_dir(path.parent)
        except OSError as exc:
            os.close(self._fd)
            self._fd = -1
            raise located(exc, path) from None

    def write(self, record: dict[str, Any]) -> None:
        data = encode_line(record)
        fd = self._fd
        if _flock is not None:  # (not `log_lock`: a generator context costs a microsecond)
            _flock(fd, _LOCK_EX)
        try:
            size, began = self._end, -1
            try:
                st = os.fstat(fd)
                if st.st_nlink == 0:
                    raise FileNotFoundError(errno.ENOENT, "the trial log was deleted while "
                                            "the run was writing it")
                if st.st_size != size:  # another writer was here, or died mid-line
                    size = self._tail()
                began = size
                done = os.write(fd, data)
                while done < len(data):  # a full disk: the next write says why
                    done += os.write(fd, data[done:])
                if self.fsync == "line":
                    os.fsync(fd)
            except OSError as exc:
                _truncate(fd, began)  # take back our partial (or unsynced) line
                self._end = -1
                raise located(exc, self.path) from None
            self._end = size + len(data)
        finally:
            if _flock is not None:
                _flock(fd, _LOCK_UN)
        self.written += 1

    def write_all(self, records: Sequence[Mapping[str, Any]], *,
                  along: "Callable[[], contextlib.AbstractContextManager[Any]] | None" = None,
                  ) -> tuple[int, int]:
        """Append every record in one `write` under the lock (an import: all or nothing) and
        fsync; the log's (size before, size after) the lines.

        `along` (an import's) is entered right after the write, while the lock is still held
        and before the fsync, and left after it: there the import renames its run folder and
        summaries into place, so they appear with the lines (no fsync's wait between), and no
        other writer appends in between. If entering it or the fsync fails, the lines are
        taken back (`along` undoes its own steps when its block raises)."""
        return self.write_lines(b"".join(encode_line(dict(r)) for r in records),
                                len(records), along=along)

    def write_lines(self, data: bytes, count: int, *,
                    along: "Callable[[], contextlib.AbstractContextManager[Any]] | None" = None,
                    ) -> tuple[int, int]:
        """`write_all` of `count` lines already encoded as ix writes them (`data`, each line
        ending in a newline): `ix sync pull` appends another lab's lines byte for byte."""
        with self._locked():
            began = -1
            try:
                began = self._tail()
                done = os.write(self._fd, data)
                while done < len(data):
                    done += os.write(self._fd, data[done:])
                with along() if along is not None else contextlib.nullcontext():
                    os.fsync(self._fd)
            except OSError as exc:
                _truncate(self._fd, began)
                raise located(exc, self.path) from None
            except BaseException:
                _truncate(self._fd, began)
                raise
        self.written += count
        self._end = began + len(data)
        return began, self._end

    def close(self) -> None:
        """fsync the log and close it (an fsync that fails is raised, after closing)."""
        if self._fd < 0:
            return
        fd, self._fd = self._fd, -1
        try:
            os.fsync(fd)
        except OSError as exc:
            raise located(exc, self.path) from None
        finally:
            os.close(fd)

    def __enter__(self) -> "TrialWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _locked(self) -> "contextlib.AbstractContextManager[None]":
        return log_lock(self._fd)

    def _tail(self) -> int:
        """The log's size once its last line is whole (under the lock): a torn last line
        is cut off and reported, a record that only lacks its newline gets one."""
        fd = self._fd
        size = os.fstat(fd).st_size
        if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
            return size
        start = _line_start(fd, size)
        fragment = os.pread(fd, size - start, start)
        whole = parse_line(fragment) is not None  # what no reader reads is cut off
        number = _count_lines(fd, start) + 1
        if whole:
            os.write(fd, b"\n")
            self.repaired = f"line {number}: ended the last line, which lacked its newline"
            return size + 1
        os.ftruncate(fd, start)
        self.repaired = (f"line {number}: removed a torn last line ({size - start} bytes; a "
                         "run stopped mid-write); that trial was not recorded")
        if self._warn is not None:
            self._warn(f"{self.path}: {self.repaired}")
        else:
            _log.warning("%s: %s", self.path, self.repaired)
        return start


@contextmanager
def log_lock(fd: int) -> Iterator[None]:
    """The exclusive lock that every writer of a trial log holds while it appends (`flock`
    on the open log; the kernel releases it if the holder dies)."""
    if fcntl is None:  # pragma: no cover
        yield
        return
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def _line_start(fd: int, size: int, chunk: int = 1 << 16) -> int:
    """The offset just after the last newline before `size` (0 if there is none)."""
    end = size
    while end > 0:
        begin = max(0, end - chunk)
        at = os.pread(fd, end - begin, begin).rfind(b"\n")
        if at >= 0:
            return begin + at + 1
        end = begin
    return 0


def _count_lines(fd: int, end: int, chunk: int = 1 << 22) -> int:
    count = offset = 0
    while offset < end:
        block = os.pread(fd, min(chunk, end - offset), offset)
        if not block:
            break
        count += block.count(b"\n")
        offset += len(block)
    return count


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - Windows cannot open a folder
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _truncate(fd: int, size: int) -> None:
    if size < 0:
        return
    with contextlib.suppress(OSError):  # the write failed already: that error is reported
        os.ftruncate(fd, size)


def parse_line(raw: bytes | str) -> dict[str, Any] | None:
    """The JSON object a trial-log line holds, or None when it holds none: not UTF-8, not JSON,
    not an object, an integer of more than 4,300 digits (Python will not convert it), or
    nesting deeper than the decoder goes. Every reader of a log decodes with it
    (`trial_lines.decode_line`, as the resume reader and the index do), so no line crashes
    any of them and they all skip the same ones."""
    record = decode_line(raw)
    return record if isinstance(record, dict) else None


def skipped_line(path: Path, number: int, raw: bytes, decoded: bool = False) -> str:
    """The warning for a line a reader skips: the file, the line, and why (torn, corrupt, or
    `decoded` but no trial record)."""
    if decoded:
        what = "line that is no trial record"
    elif not raw.endswith(b"\n"):
        what = "torn last line (a run stopped mid-write)"
    else:
        what = "corrupt line"
    return f"{path}: line {number}: skipped {what}"


def read_trials(path: Path, warn: Warn | None = None, *,
                trials_only: bool = False) -> Iterator[dict[str, Any]]:
    """Every well-formed record of a trial log; torn or corrupt lines are skipped with a
    warning. `trials_only`: also objects that are no trial record by the rule the resume
    reader and the index apply (`trial_lines.trial_line`), so a report counts what they count."""
    if not readable_file(path):  # a FIFO is refused, not read (it would block)
        return
    with path.open("rb") as f:
        for number, raw in enumerate(f, start=1):
            if not raw.strip():
                continue
            record = parse_line(raw)
            if record is None or (trials_only and trial_line(record) is None):
                if warn is not None:
                    warn(skipped_line(path, number, raw, record is not None))
                continue
            yield record
