"""The trial log's fast reader, beside its writer (`ix.store.trials.TrialWriter`): what a run
recorded, read back a block of lines at a time (`read_state`).

What is kept of a run is compact — two bytes per trial (outcome and attempt) in arrays per
(subject, case), and the usage per subject — so reading back a run of a million trials needs
a few megabytes, not the records themselves, and takes about a second. The reader depends on
the bytes the writer produces (`ix.store.trial_lines.TrialRecord`); a line that does not look
exactly like them is decoded in full (`trial_lines.trial_line`), so the result is always that
of decoding every line. tests/store/test_trial_scan.py holds the two to the same answer.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy is imported where a log is read: other commands start faster
    import numpy as np

from ix.fs.paths import readable_file
from ix.store.trial_lines import (
    LONG_LINE,
    MAX_COUNT,
    MAX_TRIAL,
    decode_line,
    might_not_decode,
    supersedes,
    suspects,
    trial_line,
)
from ix.store.trials import skipped_line

MISSING, PASSED, FAILED, ERRORED = 0, 1, 2, 3


@dataclass
class RunState:
    """The latest outcome and attempt of every trial a run recorded, and what it spent."""

    codes: dict[tuple[str, str], bytearray] = field(default_factory=dict)
    attempts: dict[tuple[str, str], bytearray] = field(default_factory=dict)
    usage: dict[str, list[float]] = field(default_factory=dict)  # tokens in, out, cost
    lines: int = 0
    #: (subject, case) -> the cost of every attempt (cost per success counts retries)
    spent: dict[tuple[str, str], float] = field(default_factory=dict)

    def record(self, subject: str, probe_id: str, trial: int, attempt: int, code: int) -> None:
        pair = (subject, probe_id)
        codes = self.codes.setdefault(pair, bytearray())
        attempts = self.attempts.setdefault(pair, bytearray())
        if trial >= len(codes):
            grow = trial + 1 - len(codes)
            codes.extend(bytes(grow))
            attempts.extend(bytes(grow))
        attempt = min(attempt, 255)
        if codes[trial] == MISSING or attempt >= attempts[trial]:
            codes[trial], attempts[trial] = code, attempt

    def code(self, subject: str, probe_id: str, trial: int) -> int:
        codes = self.codes.get((subject, probe_id))
        return codes[trial] if codes is not None and trial < len(codes) else MISSING

    def attempt(self, subject: str, probe_id: str, trial: int) -> int:
        return self.attempts[(subject, probe_id)][trial]

    def outcomes(self) -> Iterator[tuple[str, str, int, int]]:
        for (subject, probe_id), codes in self.codes.items():
            for trial, code in enumerate(codes):
                if code != MISSING:
                    yield subject, probe_id, trial, code



def read_state(trials: Path, run_id: str, warn: Callable[[str], None] | None = None, *,
               block: int = 1 << 22, per_case: int | None = None) -> RunState:
    """Read the log once, keeping only what continuing the run needs.

    The log is read in blocks of whole lines, each parsed at once with numpy's string
    functions on a window at the start and one at the end of every line (the run id, subject,
    case, trial and attempt lead a line ix writes; the usage, reading and error close it):
    a million lines take about a second, where a loop over lines took six. A line that does
    not look exactly like ix's own is read on its own as before (`_fast_fields`, then a full
    JSON decode), so the result is always that of decoding every line.

    `per_case` (the run's trials per case, from its spec) bounds the trial numbers kept: a
    line naming a later trial was not written by the run (a hand-edited or hostile log), and
    keeping it would cost a byte per trial up to it (trial 2**31 - 1: gigabytes).
    """
    scan = _Scan(run_id, trials, warn, per_case)
    if readable_file(trials):  # a FIFO is refused, not read (it would block)
        scan.read(block)
    return scan.state()


_HEAD_W = 256  # bytes from a line's start: run id, experiment, subject, case, trial, attempt
_TAIL_W = 320  # bytes before a line's end: usage, reading, error (and a trace's path)
_WIDE_W = 2048  # the same, for lines that did not fit (several readings, longer observations)


class _Style:
    """The bytes around a trial line's keys in one spacing: the stdlib encoder's `", "` and
    `": "` (the logs of ix before 0.?), or the compact `","` and `":"` of today's encoder.
    A log may hold both (an old run continued by a newer ix); each line is read by its own."""

    def __init__(self, run_id: str, comma: bytes, colon: bytes):
        c, k = comma, colon
        self.comma, self.colon = c, k
        self.marker = b'"run_id"' + k + json.dumps(run_id, ensure_ascii=False).encode()
        self.prefix = b"{" + self.marker + c + b'"experiment"' + k + b'"'
        self.any_run = b'{"run_id"' + k + b'"'
        self.head: bytes | None = None  # the prefix up to the subject, learned from a line
        self.subject = b'"' + c + b'"subject"' + k + b'"'
        self.probe = b'"' + c + b'"probe_id"' + k + b'"'
        self.trial = b'"' + c + b'"trial"' + k
        self.seed = c + b'"seed"' + k
        self.attempt = c + b'"attempt"' + k
        self.key = c + b'"'
        self.error = c + b'"error"' + k
        self.no_error = self.error + b"null}"
        self.kind = b'{"kind"' + k + b'"'
        self.trace = b"null" + c + b'"trace"' + k + b'"'
        self.readings = b"null" + c + b'"readings"' + k + b"[{"
        self.reading = c + b'"reading"' + k
        self.sensor = b'{"sensor_name"' + k + b'"'
        self.passed = b'"' + c + b'"passed"' + k
        self.zero = (b'"tokens_input"' + k + b"0" + c + b'"tokens_output"' + k + b"0" + c
                     + b'"cost_usd"' + k + b"0.0}")
        self.no_observation = b'"observation"' + k + b"null"
        self.tokens = b'"tokens_input"' + k
        self.duration = b'"duration_ms"' + k


def styles(run_id: str) -> tuple[_Style, _Style]:
    """The run's line in the stdlib's spacing and in the compact one."""
    return _Style(run_id, b", ", b": "), _Style(run_id, b",", b":")


def run_markers(run_id: str) -> tuple[bytes, ...]:
    """The bytes of `"run_id": "<run_id>"` as either spacing writes them: a line of the run
    holds one (a reader that decodes only the run's lines looks for them first)."""
    return tuple(style.marker for style in styles(run_id))


#: `"error": {` in either spacing: a line holding neither recorded no error.
ERROR_OBJECTS = (b'"error": {', b'"error":{')


def _numpy() -> tuple[Any, Any, Any]:
    """numpy, its string functions (numpy >= 2: fast ufuncs) and `sliding_window_view`."""
    import numpy
    from numpy.lib.stride_tricks import sliding_window_view

    return numpy, getattr(numpy, "strings", numpy.char), sliding_window_view


class _Scan:
    """The state of one run, gathered from blocks of a trial log (see `read_state`)."""

    def __init__(self, run_id: str, path: Path, warn: Callable[[str], None] | None,
                 per_case: int | None = None):
        self.run_id, self.path, self.warn, self.per_case = run_id, path, warn, per_case
        self.styles = styles(run_id)
        self.ids: dict[tuple[str, str], int] = {}     # (subject, case) -> pair id
        self.names: list[tuple[str, str]] = []
        # per line of the run, in the log's order: pair id << 31 | trial, attempt, outcome
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.slow: list[tuple[int, int, int, int]] = []  # the same and the line's number, of
        # lines read alone, until they join `parts` in their place
        self.usage: dict[str, list[float]] = {}
        self.spent: dict[tuple[str, str], float] = {}
        self.lines = 0

    def read(self, block: int) -> None:
        np = _numpy()[0]
        lead = _WIDE_W  # room before the data, so that every line's tail window is in bounds
        buf = np.zeros(lead + 2 * block + _HEAD_W, np.uint8)
        filled = number = 0  # bytes of a partial line carried over; lines read so far
        with self.path.open("rb", buffering=0) as f:
            while True:
                if lead + filled + block + _HEAD_W > len(buf):  # a very long line
                    bigger = np.zeros(2 * len(buf), np.uint8)
                    bigger[:lead + filled] = buf[:lead + filled]
                    buf = bigger
                got = f.readinto(buf[lead + filled:lead + filled + block].data)
                if not got:
                    break
                n = filled + got
                ends = np.flatnonzero(buf[lead:lead + n] == 10)
                cut = 0
                if len(ends):
                    self._block(buf, ends + lead, number)
                    number += len(ends)
                    cut = int(ends[-1]) + 1
                filled = n - cut
                buf[lead:lead + filled] = buf[lead + cut:lead + n]
        if filled:  # no newline at the end: a torn last line, or one missing its newline
            self._line(buf[lead:lead + filled].tobytes(), number + 1)
        self._keep(*(np.empty(0, t) for t in (np.int64, np.uint8, np.uint8, np.int64)))

    def _block(self, buf: np.ndarray, ends: np.ndarray, number: int) -> None:
        """The lines ending at `ends` (positions of their newlines in `buf`), the first of
        which is line `number + 1` of the log."""
        np, strings, sliding_window_view = _numpy()
        starts = np.empty_like(ends)
        starts[0] = _WIDE_W
        starts[1:] = ends[:-1] + 1
        lens = ends - starts
        heads = sliding_window_view(buf, _HEAD_W)[starts]
        hs = heads.view(f"S{_HEAD_W}").ravel()
        alone: list[int] = []
        labelled = np.zeros(len(hs), bool)  # starts with this run's id, in either spacing
        ix_like = np.zeros(len(hs), bool)   # starts with a run id, as ix writes lines
        mine = []
        for style in self.styles:
            ours = strings.startswith(hs, style.prefix)
            if style.head is None and ours.any():  # the run's experiment, as its first line has it
                i = int(np.argmax(ours))
                line = buf[starts[i]:ends[i]].tobytes()
                at = line.find(style.subject, len(style.prefix))
                if at > 0 and b"\\" not in line[:at]:
                    style.head = line[:at + len(style.subject)]
            mine.append(strings.startswith(hs, style.head) if style.head
                        else np.zeros_like(ours))
            marked = strings.startswith(hs, b"{" + style.marker)
            alone.extend(np.flatnonzero(marked & ~mine[-1]).tolist())
            labelled |= marked
            ix_like |= strings.startswith(hs, style.any_run)
        # another run's line starts with its own run id; any other line may still be ours
        odd = np.flatnonzero(~labelled & ~ix_like)
        alone.extend(int(i) for i in odd if self._marked(buf[starts[i]:ends[i] + 1].tobytes()))
        spending: list[tuple[int, int, int, float]] = []  # (line index, tokens in, out, cost)
        subject_of: dict[int, tuple[str, str]] = {}
        kept = [tuple(np.empty(0, t) for t in (np.int64, np.uint8, np.uint8, np.int64))]
        for style, rows in zip(self.styles, mine, strict=True):
            rows = np.flatnonzero(rows)
            if len(rows):
                kept.append(self._rows(style, buf, starts, ends, lens, heads[rows], hs[rows],
                                       rows, number, alone, spending, subject_of))
        if len(kept) > 2:  # lines of both spacings: in the log's order
            merged = [np.concatenate(k) for k in zip(*kept, strict=True)]
            order = np.argsort(merged[3], kind="stable")
            kept = [tuple(m[order] for m in merged)]
        # lines read one by one, and what the others spent, in log order: costs add up in the
        # same order, to the same float, as when every line was read one by one
        events = sorted([(i, None) for i in set(alone)]
                        + [(s[0], s[1:]) for s in spending if s[0] in subject_of])
        for i, spend in events:
            if spend is None:
                self._line(buf[starts[i]:ends[i] + 1].tobytes(), number + 1 + i)
                continue
            pair = subject_of[i]
            usage = self.usage[pair[0]]
            usage[0] += spend[0]
            usage[1] += spend[1]
            usage[2] += spend[2]
            if spend[2]:
                self.spent[pair] = self.spent.get(pair, 0.0) + spend[2]
        self._keep(*kept[-1])

    def _rows(self, style: _Style, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray,
              lens: np.ndarray, heads: np.ndarray, hs: np.ndarray, rows: np.ndarray,
              number: int, alone: list[int], spending: list[tuple[int, int, int, float]],
              subject_of: dict[int, tuple[str, str]]) -> tuple[np.ndarray, ...]:
        """The lines `rows` of a block, which begin as this run's do in `style`: what each
        keeps (see `_keep`). Those that do not read join `alone`; what lines spent other than
        nothing joins `spending` (and their subjects `subject_of`)."""
        np, _, sliding_window_view = _numpy()
        s0 = len(style.head or b"")
        fields = _parse(heads, hs, sliding_window_view(buf, _TAIL_W)[ends[rows] - _TAIL_W],
                        lens[rows], s0, style)
        wide = np.flatnonzero(~fields[0] & (lens[rows] > _TAIL_W))
        if len(wide):  # lines longer than the tail window, which did not read in it
            again = _parse(heads[wide], hs[wide],
                           sliding_window_view(buf, _WIDE_W)[ends[rows[wide]] - _WIDE_W],
                           lens[rows[wide]], s0, style)
            for field, value in zip(fields, again, strict=True):
                field[wide] = value
        ok, trial, attempt, code, spent, p1 = fields
        if (lens[rows] >= LONG_LINE).any():  # nested deep, a number of 5,000 digits: decoded
            base = int(starts[0])           # in full, alone (few lines, if any)
            ok &= ~suspects(buf[base:int(ends[-1])], starts[rows] - base, ends[rows] - base)
        alone.extend(rows[~ok].tolist())
        fast = rows[ok]
        if not len(fast):
            return tuple(np.empty(0, t) for t in (np.int64, np.uint8, np.uint8, np.int64))
        spent_before = len(spending)
        trial, attempt, code, spent, p1 = trial[ok], attempt[ok], code[ok], spent[ok], p1[ok]
        width = max(1, int((p1 - s0).max()))
        keys = np.where(np.arange(width) < (p1 - s0)[:, None], heads[ok, s0:s0 + width], 0)
        pairs, named = self._pairs(np.ascontiguousarray(keys, np.uint8)
                                   .view(f"S{width}").ravel(), style)
        for j in np.flatnonzero(spent < 0).tolist():  # usage other than nothing: read it
            i = int(fast[j])
            read = _usage(buf[int(ends[i]) + int(spent[j]):ends[i] + 1].tobytes())
            if read is None:
                named[j] = False
            else:
                spending.append((i, *read))
        if not named.all():
            alone.extend(fast[~named].tolist())
            fast, pairs, trial, attempt, code = (
                fast[named], pairs[named], trial[named], attempt[named], code[named])
        self.lines += len(fast)
        if len(spending) > spent_before:
            subject_of.update((int(i), self.names[p])
                              for i, p in zip(fast.tolist(), pairs.tolist(), strict=True))
        for p in np.unique(pairs).tolist():
            self.usage.setdefault(self.names[p][0], [0, 0, 0.0])
        return (pairs.astype(np.int64) << 31 | trial, np.minimum(attempt, 255).astype(np.uint8),
                code.astype(np.uint8), number + 1 + fast)

    def _marked(self, raw: bytes) -> bool:
        return any(style.marker in raw for style in self.styles)

    def _keep(self, keys: np.ndarray, attempts: np.ndarray, codes: np.ndarray,
              lines: np.ndarray) -> None:
        """Add lines of the run, with those read alone since, in the log's order."""
        np = _numpy()[0]
        if self.slow:
            slow = np.array(self.slow, np.int64).reshape(-1, 4)
            self.slow.clear()
            lines = np.concatenate([lines, slow[:, 3]])
            order = np.argsort(lines, kind="stable")
            keys = np.concatenate([keys, slow[:, 0]])[order]
            attempts = np.concatenate([attempts, slow[:, 1].astype(np.uint8)])[order]
            codes = np.concatenate([codes, slow[:, 2].astype(np.uint8)])[order]
        if len(keys):
            self.parts.append((keys, attempts, codes))

    def _pairs(self, keys: np.ndarray, style: _Style) -> tuple[np.ndarray, np.ndarray]:
        """The pair id of each `subject", "probe_id": "case`, and whether its names decoded."""
        np = _numpy()[0]
        firsts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])  # runs of one pair
        unique, inverse = np.unique(keys[firsts], return_inverse=True)
        ids = np.full(len(unique), -1, np.int32)
        for u, key in enumerate(unique.tolist()):
            try:
                subject, probe_id = key.decode().split(style.probe.decode())
            except (UnicodeDecodeError, ValueError):
                continue
            ids[u] = self._id(subject, probe_id)
        pairs = np.repeat(ids[inverse.ravel()], np.diff(np.r_[firsts, len(keys)]))
        return pairs, pairs >= 0

    def _id(self, subject: str, probe_id: str) -> int:
        pair = self.ids.get((subject, probe_id))
        if pair is None:
            pair = self.ids[(subject, probe_id)] = len(self.names)
            self.names.append((subject, probe_id))
        return pair

    def _line(self, raw: bytes, number: int) -> None:
        """One line read on its own, as every line once was."""
        trials, warn = self.path, self.warn
        if not self._marked(raw):  # another run's line (ix writes this key verbatim)
            if raw.strip() and not raw.endswith(b"\n") and warn is not None:
                warn(f"{trials}: line {number}: skipped torn last line (a run stopped "
                     "mid-write)")
            return
        try:
            fields = (_fast_fields(raw, self.run_id)
                      if raw.endswith(b"\n") and not might_not_decode(raw) else None)
        except (ValueError, RecursionError):  # what `might_not_decode` did not foresee
            fields = None
        if fields is None:
            fields = _json_fields(raw, self.run_id)
        if fields and not (0 <= fields[2] <= MAX_TRIAL and 0 <= fields[3] <= MAX_TRIAL):
            fields = None  # a trial or attempt number no run writes
        if fields is None:
            if warn is not None:
                warn(skipped_line(trials, number, raw))
            return
        if not fields:  # another run's line
            return
        subject, probe_id, trial, attempt, code, tokens_in, tokens_out, cost = fields
        self.lines += 1
        self.slow.append((self._id(subject, probe_id) << 31 | trial, min(attempt, 255), code,
                          number))
        usage = self.usage.setdefault(subject, [0, 0, 0.0])
        usage[0] += tokens_in
        usage[1] += tokens_out
        usage[2] += cost
        if cost:
            self.spent[subject, probe_id] = self.spent.get((subject, probe_id), 0.0) + cost

    def state(self) -> RunState:
        """The latest attempt of each trial: the highest attempt, the later line on a tie."""
        np = _numpy()[0]
        state = RunState(usage=self.usage, lines=self.lines, spent=self.spent)
        if not self.parts:
            return state
        key, attempt, code = (np.concatenate([p[k] for p in self.parts]) for k in range(3))
        self.parts.clear()
        if self.per_case is not None:
            inside = (key & ((1 << 31) - 1)) < self.per_case
            if not inside.all():
                if self.warn is not None:
                    self.warn(f"{self.path}: skipped {int((~inside).sum())} line(s) of run "
                              f"{self.run_id} naming a trial beyond its {self.per_case} "
                              "trials per case (not written by the run)")
                key, attempt, code = key[inside], attempt[inside], code[inside]
                if not len(key):
                    return state
        if len(key) > 1 and not np.all(key[1:] > key[:-1]):  # not each trial once, in order
            order = np.argsort(key, kind="stable")  # stable: the log's order on a tie
            ordered = key[order]
            again = ordered[1:] == ordered[:-1]
            if again.any():  # a trial recorded more than once (retried): rank its records
                order = np.lexsort((attempt, key))
                ordered = key[order]
                again = ordered[1:] == ordered[:-1]
            del ordered
            won = order[np.r_[~again, True]]  # the last of each trial's records
            key, attempt, code = key[won], attempt[won], code[won]
        pair, trial = key >> 31, key & ((1 << 31) - 1)
        firsts = np.flatnonzero(np.r_[True, pair[1:] != pair[:-1]])
        lasts = np.r_[firsts[1:], len(pair)] - 1
        sizes = trial[lasts].astype(np.int64) + 1
        offsets = np.r_[0, np.cumsum(sizes)[:-1]]
        at = np.repeat(offsets, np.diff(np.r_[firsts, len(pair)])) + trial
        codes = np.zeros(int(sizes.sum()), np.uint8)
        attempts = np.zeros_like(codes)
        codes[at], attempts[at] = code, attempt
        for f, o, size in zip(firsts.tolist(), offsets.tolist(), sizes.tolist(), strict=True):
            name = self.names[pair[f]]
            state.codes[name] = bytearray(codes[o:o + size])
            state.attempts[name] = bytearray(attempts[o:o + size])
        return state


def _parse(heads: np.ndarray, hs: np.ndarray, tails: np.ndarray, lens: np.ndarray,
           s0: int, style: _Style) -> list[np.ndarray]:
    """Lines that begin like this run's, up to the subject (at `s0`): whether each reads as
    ix writes it, its trial, attempt and outcome, where its usage starts if it spent
    something (bytes before the line's end; 0: nothing), and where its case id ends.

    Every check is of text ix writes around a key of the line's top-level object (a quote
    inside a string is escaped, so `", "trial": ` and the like only occur as keys); the
    line's last `}` closes that object, so what ends right before it, or before the `, "`
    of a top-level key, belongs to it. `style`: the spacing the lines are written in.
    """
    y = style
    np, strings, _ = _numpy()
    find, rfind = strings.find, strings.rfind
    starts, ends = strings.startswith, strings.endswith
    near = np.minimum(lens, _HEAD_W)  # the head window ends at the line's end
    s1 = find(hs, y.probe, s0, near)
    p1 = find(hs, y.trial, s1 + len(y.probe), near)
    t1 = find(hs, y.seed, p1 + len(y.trial), near)
    d1 = find(hs, y.attempt, t1 + len(y.seed), near)
    a1 = find(hs, y.key, d1 + len(y.attempt), near)
    ok = (s1 >= 0) & (p1 >= 0) & (t1 >= 0) & (d1 >= 0) & (a1 >= 0)
    ok &= find(hs, b"\\", s0, p1) < 0  # names without escapes: their bytes are the names
    trial = _integer(heads, p1 + len(y.trial), t1, ok)
    attempt = _integer(heads, d1 + len(y.attempt), a1, ok)

    width = tails.shape[1]
    ts = tails.view(f"S{width}").ravel()
    lo = np.maximum(width - lens, 0)  # where the line starts in its tail window
    # The line must end as only a whole line of ix's does (a torn one is a prefix of one):
    # `, "error": null}`; an error `{"kind": "…", "message": "…"}}`, a trace's path `"…"}`
    # or several readings `…"}]}` whose last quote is not escaped. Others are read alone.
    error = np.full(len(ts), width - len(y.no_error))
    errored = np.zeros(len(ts), bool)
    other = np.flatnonzero(~ends(ts, y.no_error))  # most lines end so
    if len(other):
        sub = ts[other]
        at = rfind(sub, y.error, lo[other], width)
        v = at + len(y.error)
        closed = ~ends(sub, b'\\"}}') & ~ends(sub, b'\\"}') & ~ends(sub, b'\\"}]}')
        failed = starts(sub, y.kind, v) & ends(sub, b'"}}') & closed
        traced = (starts(sub, y.trace, v) & ends(sub, b'"}') & closed
                  & (find(sub, b'"', v + len(y.trace), width) == width - 2))
        several = starts(sub, y.readings, v) & ends(sub, b'"}]}') & closed
        ok[other] &= (at >= 0) & (failed | traced | several)
        error[other], errored[other] = at, failed
    reading = rfind(ts, y.reading, lo, error)
    r = reading + len(y.reading)
    name_end = find(ts, y.passed, r + len(y.sensor), error)
    told = (name_end >= 0) & starts(ts, y.sensor, r) & ends(ts, b"}", 0, error)
    passed = told & starts(ts, b"true", name_end + len(y.passed))
    ok &= (reading >= 0) & (passed | (told & starts(ts, b"false", name_end + len(y.passed)))
                            | ((r + 4 == error) & starts(ts, b"null", r)))
    code = np.where(errored, ERRORED, np.where(passed, PASSED, FAILED))

    # usage: nothing spent (the mock; no observation) is seen at once; anything else is where
    # the observation's `"duration_ms": N, "tokens_input": ...` (`_USAGE`) is, read after
    spent = np.zeros(len(ts), np.int64)
    other = np.flatnonzero(ok & ~ends(ts, y.zero, 0, reading)
                           & ~ends(ts, y.no_observation, 0, reading))
    if len(other):
        sub = ts[other]
        tokens = rfind(sub, y.tokens, lo[other], reading[other])
        duration = rfind(sub, y.duration, lo[other], tokens)
        counted = ((tokens >= 0) & (duration >= 0)
                   & (find(sub, b",", duration, tokens) == tokens - len(y.comma))
                   & (find(sub, b'"', duration + len(y.duration), tokens) < 0))
        ok[other] &= counted
        spent[other] = duration - width
    return [ok, trial, attempt, code, spent, p1]


def _integer(rows: np.ndarray, start: Any, stop: Any, ok: np.ndarray, width: int = 7
             ) -> np.ndarray:
    """The non-negative integer written at [start, stop) of each row; rows where there is
    none (or a longer one) are struck from `ok`."""
    np = _numpy()[0]
    length = stop - start
    width = max(1, min(width, int(length[ok].max(initial=1))))  # the digits this block has
    columns = np.minimum(start[:, None] + np.arange(width), rows.shape[1] - 1)
    digits = np.take_along_axis(rows, columns, axis=1) - np.uint8(48)  # others wrap past 9
    inside = np.arange(width) < length[:, None]
    ok &= (length >= 1) & (length <= width) & ~np.any(inside & (digits > 9), axis=1)
    value = np.zeros(len(rows), np.int64)
    for j in range(width):
        value = np.where(j < length, value * 10 + digits[:, j], value)
    return value


Fields = tuple[str, str, int, int, int, int, int, float]

# ix writes trial lines with one encoder and a fixed key order (engine/pipeline.py), so the
# few fields a resume needs can be read without decoding the whole line; any line that does
# not look exactly like that (escapes in names, another writer) is decoded in full instead.
# Either spacing reads (`", "` and `": "` of the stdlib encoder, or none: `_Style`).
_HEAD = re.compile(rb'\{"run_id": ?"([^"\\]*)", ?"experiment": ?"(?:[^"\\]|\\.)*", ?'
                   rb'"subject": ?"([^"\\]*)", ?"probe_id": ?"([^"\\]*)", ?"trial": ?(\d+), ?'
                   rb'"seed": ?\d+, ?"attempt": ?(\d+),')
_USAGE = re.compile(rb'"duration_ms": ?-?\d+, ?"tokens_input": ?(\d+), ?"tokens_output": ?'
                    rb'(\d+), ?"cost_usd": ?(-?[0-9.eE+-]+)')
_READING = (b', "reading": ', b',"reading":')
_NO_ERROR = (', "error": null}\n', ',"error":null}\n')
_ERROR = re.compile(r', ?"error": ?')
_DECODER = json.JSONDecoder()


def _fast_fields(raw: bytes, run_id: str) -> Fields | tuple[()] | None:
    head = _HEAD.match(raw)
    if head is None:
        return None
    if head.group(1).decode() != run_id:
        return ()
    at, key = max((raw.rfind(key), key) for key in _READING)
    if at < 0:
        return None
    text = raw[at + len(key):].decode("utf-8", "replace")
    try:
        reading, end = _DECODER.raw_decode(text)
    except ValueError:
        return None
    if reading is not None and not isinstance(reading, dict):
        return None
    if type((reading or {}).get("passed", False)) not in (bool, type(None)):
        return None  # as `trial_line` says: decoded in full, it is no trial record
    rest = text[end:]
    if rest in _NO_ERROR:
        errored = False
    else:  # the keys after the reading must close the line's object: a torn line does not
        if not _ERROR.match(rest):
            return None
        skip = 2 if rest[1] == " " else 1  # to the key `"error"`
        try:
            after, end = _DECODER.raw_decode("{" + rest[skip:])
        except ValueError:
            return None
        if rest[end - 1 + skip:] != "\n" or not isinstance(after, dict):
            return None
        error = after["error"]
        if error is not None and not (isinstance(error, dict)
                                      and isinstance(error.get("kind"), str)):
            return None
        errored = error is not None
    code = ERRORED if errored else PASSED if (reading or {}).get("passed") else FAILED
    found = _USAGE.search(raw, 0, at)
    if found is None and not (raw.endswith(b'"observation": null', 0, at)
                              or raw.endswith(b'"observation":null', 0, at)):
        return None  # no usage where ix writes it: the observation is read in full
    usage = _usage(raw, found.start()) if found else (0, 0, 0.0)
    if usage is None:
        return None
    return (head.group(2).decode(), head.group(3).decode(), int(head.group(4)),
            int(head.group(5)), code, *usage)


def _usage(raw: bytes, at: int = 0) -> tuple[int, int, float] | None:
    """Tokens in, out and cost as `_USAGE` reads them at `at`; None when they do not read."""
    match = _USAGE.match(raw, at)
    if match is None:
        return None
    try:
        cost = float(match.group(3))
        tokens_in, tokens_out = int(match.group(1)), int(match.group(2))
        if not (math.isfinite(cost) and tokens_in <= MAX_COUNT and tokens_out <= MAX_COUNT):
            return None
        return tokens_in, tokens_out, cost
    except ValueError:  # a cost like "1-2", which the pattern lets through; 5,000 digits
        return None


def _json_fields(raw: bytes, run_id: str) -> Fields | tuple[()] | None:
    """A line decoded in full and read by the rule every reader of a log applies
    (`ix.store.trial_lines`: the query index counts the same lines)."""
    line = trial_line(decode_line(raw))
    if line is None:
        return None
    if line.run_id != run_id:
        return ()
    code = ERRORED if line.errored else PASSED if line.passed else FAILED
    return (line.subject, line.probe_id, line.trial, line.attempt, code, line.tokens_input,
            line.tokens_output, line.cost_usd)


def standing_errors(trials: Path, run_id: str) -> dict[tuple[str, str, int], tuple[str, str]]:
    """(subject, probe_id, trial) -> the error's (kind, message), of the run's errored lines
    in the log, the latest attempt of each (`supersedes`: a later line on a tie). What a
    resume's state keeps only as a count; a trial a later attempt got right is still here, so
    the caller keeps those its state calls errored. Nothing when the log does not read."""
    markers = run_markers(run_id)  # in the stdlib's spacing or the compact one
    latest: dict[tuple[str, str, int], dict[str, Any]] = {}
    try:
        with trials.open("rb") as f:
            for line in f:
                if not any(m in line for m in markers) \
                        or not any(e in line for e in ERROR_OBJECTS):
                    continue
                try:
                    rec = json.loads(line)
                    key = (rec["subject"], rec["probe_id"], int(rec["trial"]))
                    error = rec["error"]
                    found = {"attempt": int(rec.get("attempt") or 0), "kind": str(error["kind"]),
                             "message": str(error.get("message") or "")}
                except (ValueError, KeyError, TypeError):
                    continue
                if key not in latest or supersedes(found, latest[key]):
                    latest[key] = found
    except OSError:
        return {}
    return {key: (e["kind"], e["message"]) for key, e in latest.items()}
