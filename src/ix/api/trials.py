"""One trial, whole: its `trials.jsonl` line and the transcript its `trace` field points to
(`results/runs/<run_id>/traces/...jsonl.gz`). The web viewer's drill-down reads these.

The trace path comes from the lab's data, so it is never trusted: it must resolve (symlinks
followed) to a regular file inside the run's own folder, or the trace is refused. A trace is
read up to a size limit, so a huge (or hostile, e.g. a gzip bomb) file cannot exhaust memory.
"""

import gzip
import hashlib
import json
import os
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from ix.api.runs import RunEntry
from ix.domain.errors import ConfigError
from ix.fs.names import file_part
from ix.fs.paths import lies_within, open_regular
from ix.store.layout import ExperimentDir, RunDir
from ix.store.trials import parse_line

#: How much of a transcript is read (decompressed bytes) before the rest is left out.
TRACE_BYTES = 8 * 1024 * 1024


def reading_word(passed: bool | None, sensor: str | None) -> str:
    """A trial's reading in ix's words (DESIGN.md §8): "invoked" / "not invoked" with the
    activation sensor, else the sensor's "passed" / "failed"; "-" when it has none (it
    errored)."""
    if passed is None:
        return "-"
    if sensor in (None, "activation"):
        return "invoked" if passed else "not invoked"
    return "passed" if passed else "failed"


def outcome_of(record: dict[str, Any]) -> str | None:
    """A trial line's outcome: "right" when its reading matches the case's expectation,
    "wrong" when it goes against it; None when it errored or the case is acceptable."""
    reading = record.get("reading")
    if record.get("error") or not isinstance(reading, dict) or reading.get("passed") is None:
        return None
    expectation = record.get("expectation")
    if expectation not in ("must_trigger", "should_not_trigger"):
        return None
    return "right" if bool(reading["passed"]) == (expectation == "must_trigger") else "wrong"


def trial_record(run: RunEntry, subject: str, case: str, trial: int,
                 attempt: int | None = None) -> dict[str, Any] | None:
    """The run's line for (subject, case, trial): that `attempt`, else the latest; None if
    there is none. Lines are matched on their bytes first, so only candidates are parsed."""
    path = ExperimentDir.at(run.experiment_dir).trials
    if not path.is_file():
        return None
    run_needle = json.dumps(run.run_id, ensure_ascii=False).encode("utf-8")
    case_needles = {json.dumps(case, ensure_ascii=False)[1:-1].encode("utf-8"),
                    json.dumps(case)[1:-1].encode("ascii")}
    found: dict[str, Any] | None = None
    with path.open("rb") as f:
        for raw in f:
            if run_needle not in raw or not any(n in raw for n in case_needles):
                continue
            record = parse_line(raw)
            if record is None or record.get("run_id") != run.run_id \
                    or record.get("subject") != subject or record.get("probe_id") != case \
                    or record.get("trial") != trial:
                continue
            number = record.get("attempt") or 0
            if attempt is not None:
                if number == attempt:
                    return record
            elif found is None or number >= (found.get("attempt") or 0):
                found = record
    return found


#: A trial's identity within a run: (subject, case, trial, attempt).
TrialKey = tuple[str, str, int, int]


def trial_lines(run: RunEntry, keys: Collection[TrialKey]) -> dict[TrialKey, dict[str, Any]]:
    """The run's lines of the given trials, in one pass over the experiment's log that stops
    once every one is found (lines of other runs and cases are skipped on their bytes,
    unparsed). Keys with no line are left out."""
    path = ExperimentDir.at(run.experiment_dir).trials
    wanted = set(keys)
    found: dict[TrialKey, dict[str, Any]] = {}
    if not wanted or not path.is_file():
        return found
    run_needle = json.dumps(run.run_id, ensure_ascii=False).encode("utf-8")
    case_needles = {needle for _, case, _, _ in wanted
                    for needle in (json.dumps(case, ensure_ascii=False)[1:-1].encode("utf-8"),
                                   json.dumps(case)[1:-1].encode("ascii"))}
    with path.open("rb") as f:
        for raw in f:
            if run_needle not in raw or not any(n in raw for n in case_needles):
                continue
            record = parse_line(raw)
            if record is None or record.get("run_id") != run.run_id:
                continue
            key = (record.get("subject"), record.get("probe_id"), record.get("trial"),
                   record.get("attempt") or 0)
            if key in wanted:
                found[key] = record  # type: ignore[index]  # the key's parts were compared
                if len(found) == len(wanted):
                    break
    return found


def routing_of(record: dict[str, Any]) -> dict[str, Any] | None:
    """The routing decision a runtime recorded in the trial's `observation.meta.routing`
    (the `lexical` runtime does: docs/runtimes.md); None when it recorded none."""
    observation = record.get("observation")
    meta = observation.get("meta") if isinstance(observation, dict) else None
    routing = meta.get("routing") if isinstance(meta, dict) else None
    return routing if isinstance(routing, dict) else None


@dataclass(frozen=True)
class DamagedLine:
    """A transcript line that looks like JSON but does not decode: torn, not UTF-8, nested
    deeper than the decoder goes, or holding a number longer than Python converts. The
    trace page shows it as damaged, with the start of its text."""

    number: int  # among the transcript's lines that are not blank, from 1
    reason: str
    excerpt: str


#: How much of a damaged line the trace page shows.
EXCERPT_CHARS = 300


@dataclass(frozen=True)
class Trace:
    """A transcript's lines, each parsed as JSON where it is JSON (else the text; a line that
    should be JSON and is not is a `DamagedLine`)."""

    path: str
    lines: list[Any]
    truncated: bool


def read_trace(run: RunEntry, record: dict[str, Any], limit: int = TRACE_BYTES) -> Trace | None:
    """The transcript of a trial line (None when it has none). A `ConfigError` when the
    line's `trace` does not lead to a file inside the run's folder."""
    ref = record.get("trace")
    if ref is None:
        return None
    if not isinstance(ref, str) or not ref or "\x00" in ref or os.path.isabs(ref):
        raise ConfigError(f"the trace path {ref!r} is not a relative path", field="trace")
    results = ExperimentDir.at(run.experiment_dir).results
    path = os.path.realpath(results / ref)
    if not lies_within(path, run.folder) or not os.path.isfile(path):
        raise ConfigError(f"the trace {ref!r} is not a file inside the run's folder",
                          field="trace")
    opener: Any = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            data = f.read(limit + 1)
    except (OSError, EOFError) as exc:
        raise ConfigError(f"cannot read the trace: {exc}", file=ref, field="trace") from None
    truncated = len(data) > limit
    text = data[:limit].decode("utf-8", "replace")
    pieces = text.split("\n")  # not `splitlines`: U+2028 and the like occur inside JSON strings
    if truncated or not pieces[-1]:
        pieces.pop()  # the cut line is incomplete (or the text ended with its newline)
    lines = [_trace_line(piece, number) for number, piece in
             enumerate((p for p in pieces if p.strip()), start=1)]
    return Trace(ref, lines, truncated)


def _trace_line(piece: str, number: int) -> Any:
    """A transcript line as JSON; text that is no JSON as itself; JSON that does not decode
    as a `DamagedLine` (never an exception: a hostile line must not take the page down)."""
    try:
        return json.loads(piece)
    except RecursionError:
        reason = "nested deeper than the viewer decodes"
    except json.JSONDecodeError as exc:
        if not piece.lstrip().startswith(("{", "[")):
            return piece.rstrip("\r")  # plain text, as some transcripts have
        reason = f"not valid JSON ({exc.msg} at character {exc.pos})"
    except ValueError:  # Python's limit on the digits of an integer
        reason = "a number too long to read"
    return DamagedLine(number, reason, piece[:EXCERPT_CHARS])


#: The most of an output the trial page shows inline (as text: UTF-8, no NUL byte).
OUTPUT_INLINE_BYTES = 64 << 10


@dataclass(frozen=True)
class TrialOutput:
    """A file the trial's subject made (`outputs` of its line): where the run keeps it, and
    its text when it is short UTF-8 text (the trial page shows it inline; anything else is a
    download). `refused`: listed but never kept (a link, a special file, over a limit);
    `missing`: listed as kept but not there as the line says (deleted, or changed)."""

    path: str
    size: int | None
    sha256: str | None
    refused: str | None
    text: str | None
    missing: str | None


def trial_outputs(run: RunEntry, record: dict[str, Any]) -> list[TrialOutput]:
    """The files the trial line lists as its subject's outputs, each read as far as the
    trial page needs. A listing that is not what ix writes is left out, never an error."""
    out: list[TrialOutput] = []
    for entry in record.get("outputs") or ():
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            continue
        size, sha = entry.get("size"), entry.get("sha256")
        refused = entry.get("refused")
        text = missing = None
        if refused is None:
            try:
                data = output_bytes(run, record, entry["path"], limit=OUTPUT_INLINE_BYTES)
            except ConfigError as exc:
                missing = exc.message
            else:
                if data is not None and b"\x00" not in data:
                    try:
                        text = data.decode("utf-8")
                    except UnicodeDecodeError:
                        text = None
        out.append(TrialOutput(entry["path"], size if isinstance(size, int) else None,
                               sha if isinstance(sha, str) else None,
                               str(refused) if refused is not None else None, text, missing))
    return out


def output_bytes(run: RunEntry, record: dict[str, Any], path: str,
                 limit: int | None = None) -> bytes | None:
    """The bytes of an output the trial line lists as kept, checked against its sha256; with
    `limit`, None when the file is larger (its size, from the line). A `ConfigError` when
    the line lists no such kept file, or the run's copy is not inside its folder, not a
    regular file, or not what the line says (changed since)."""
    listed = next((e for e in record.get("outputs") or () if isinstance(e, dict)
                   and e.get("path") == path and isinstance(e.get("sha256"), str)), None)
    if listed is None:
        raise ConfigError(f"the trial kept no output {path!r}", field="path")
    if limit is not None and isinstance(listed.get("size"), int) and listed["size"] > limit:
        return None
    place = PurePosixPath(path)
    if place.is_absolute() or ".." in place.parts or "\x00" in path:
        raise ConfigError(f"{path!r} is not a path inside the workspace", field="path")
    folder = RunDir(run.folder).outputs / file_part(str(record.get("subject"))) / file_part(
        str(record.get("probe_id"))) / str(int(record.get("trial") or 0))
    file = folder / place
    if not lies_within(file, run.folder):
        raise ConfigError(f"the output {path!r} is not a file inside the run's folder",
                          field="path")
    try:
        with open(open_regular(file, os.O_RDONLY), "rb") as f:
            data = f.read()
    except (OSError, ConfigError) as exc:
        raise ConfigError(f"the output {path!r} is not in the run's folder "
                          f"({getattr(exc, 'message', None) or exc})", field="path") from None
    if hashlib.sha256(data).hexdigest() != listed["sha256"]:
        raise ConfigError(f"the output {path!r} was changed after the run kept it",
                          field="path")
    return data


__all__ = ["OUTPUT_INLINE_BYTES", "TRACE_BYTES", "DamagedLine", "Trace", "TrialOutput",
           "output_bytes", "read_trace", "trial_outputs", "trial_record"]
