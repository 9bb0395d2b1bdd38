"""`batch: true`: a run's trials sent as provider batches (half price), answered as results come.

Each trial still calls its runtime's `invoke`; a `Batcher` holds the request instead of
sending it, gathers the requests that arrive together (all of a run's, the engine schedules
them at once), submits them as batches split at the API's count and size limits, polls each
batch and hands every trial its result when the batch ends. The trial lines are then written
by the engine as for any runtime.

Nothing is submitted twice: a `BatchJournal` (the run folder's `batches.jsonl`) records a
batch's custom ids before it is created and its id right after, and the run's `spec.yaml`
lists the ids. `ix run --resume` reads the journal back, so a trial whose request is already in
a batch waits for that batch instead of being sent again; a batch created just before a crash
(its id never written) is found again by `BatchProvider.find`. A retried trial (`--retry-failed`:
a new attempt) has a new custom id, so it goes into a new batch.

The journal may come from elsewhere (a lab cloned or synced), so it is read defensively: a
line that is not a journal line (not JSON, not an object, a key missing or of the wrong type)
is skipped with a warning naming the file and the line, never a traceback; and it is opened
without following a symlink (the engine passes `ix.fs.paths.open_regular`, which refuses a
FIFO or a device too), so ix never appends to the file a link points at.
"""

import asyncio
import contextlib
import errno
import hashlib
import json
import os
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

from ix.domain.errors import ConfigError, TrialError

#: The provider bills batch requests at half the standard rate (input and output alike).
BATCH_DISCOUNT = 0.5
#: Requests that arrive within this long of each other go into one batch (a batch takes
#: minutes to hours: a second more to gather its requests costs nothing).
LINGER_S = 1.0
#: Failures of a status request that only mean "ask again later".
PASSING = frozenset({"rate_limited", "overloaded", "server_error", "connection_error",
                     "http_timeout"})
#: How many of a run's trials may wait on batches at once (the API's largest batch).
BATCH_CONCURRENCY = 100_000

ResultKind = Literal["succeeded", "errored", "canceled", "expired"]


@dataclass(frozen=True)
class BatchResult:
    """One request's outcome in a batch: the response body when it succeeded, else why not."""

    kind: ResultKind
    batch_id: str
    body: dict[str, Any] | None = None
    error_type: str = ""
    message: str = ""


class BatchProvider(Protocol):
    """One provider's batch endpoints, through its official SDK."""

    name: str
    max_requests: int
    max_bytes: int

    async def create(self, requests: list[tuple[str, dict[str, Any]]], token: str) -> str: ...
    async def progress(self, batch_id: str) -> tuple[bool, int]: ...  # (ended, answered)
    def results(self, batch_id: str) -> AsyncIterator[tuple[str, BatchResult]]: ...
    async def cancel(self, batch_id: str) -> None: ...
    async def find(self, token: str, at: datetime, requests: int) -> str | None: ...


def custom_id(subject: str, case_id: str, seed: int, attempt: int) -> str:
    """A trial's request id in a batch: the same for the same trial and attempt (so a resume
    finds it), within the APIs' pattern `^[a-zA-Z0-9_-]{1,64}$`."""
    digest = hashlib.sha256(f"{subject}\0{case_id}\0{seed}\0{attempt}".encode()).hexdigest()
    return f"ix-a{attempt}-{digest[:40]}"


def chunks(requests: list[tuple[str, dict[str, Any]]], max_requests: int,
           max_bytes: int) -> Iterable[list[tuple[str, dict[str, Any]]]]:
    """`requests` cut into batches of at most `max_requests` and about `max_bytes` of JSON
    each (a margin for the envelope around each request)."""
    chunk: list[tuple[str, dict[str, Any]]] = []
    size = 0
    for cid, body in requests:
        n = len(json.dumps(body, ensure_ascii=False).encode()) + len(cid) + 64
        if chunk and (len(chunk) >= max_requests or size + n > max_bytes):
            yield chunk
            chunk, size = [], 0
        chunk.append((cid, body))
        size += n
    if chunk:
        yield chunk


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


#: Opens a file as `os.open(path, flags, mode)` does, never through a symlink.
Opener = Callable[[Path, int, int], int]


def open_nofollow(path: Path, flags: int, mode: int = 0o666) -> int:
    """`os.open` that refuses a symlink at `path` (`ConfigError`: exit 2, naming it); the
    engine passes the richer `ix.fs.paths.open_regular` instead."""
    try:
        return os.open(path, flags | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0),
                       mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ConfigError("is a symbolic link; ix never reads or writes a batch journal "
                              "through one (replace it with the file, or remove it)",
                              file=path) from None
        raise


def _text(line: dict[str, Any], key: str) -> bool:
    return isinstance(line.get(key), str)


def _journal_line(line: Any) -> bool:
    """Whether a decoded line is one `BatchJournal` wrote: an object with its event's keys,
    each of the type the journal gives it."""
    if not isinstance(line, dict):
        return False
    event = line.get("event")
    if event == "submit":
        ids = line.get("custom_ids")
        if not (_text(line, "token") and _text(line, "subject") and _text(line, "at")
                and isinstance(ids, list) and all(isinstance(i, str) for i in ids)):
            return False
        try:
            datetime.fromisoformat(line["at"].replace("Z", "+00:00"))
        except ValueError:
            return False
        return True
    if event == "created":
        return _text(line, "token") and _text(line, "id")
    if event == "failed":
        return _text(line, "token")
    if event == "cancel":
        return _text(line, "id")
    return False


@dataclass
class BatchJournal:
    """`batches.jsonl` of one run: what was submitted, so that nothing is submitted twice.

    Lines: `{"event": "submit", token, provider, subject, at, custom_ids}` before a batch is
    created, `{"event": "created", token, id}` after, `{"event": "failed", token}` when the
    create was refused, `{"event": "cancel", id}` when ix cancelled it. Each line is flushed
    and synced before the call it announces."""

    path: Path
    #: told of each batch created (the engine adds it to `spec.yaml`)
    on_created: Callable[[dict[str, Any]], None] = lambda _: None
    #: how the journal is opened (read and appended): never through a symlink
    opener: Opener = open_nofollow
    members: dict[str, list[str]] = field(default_factory=dict)     # batch id -> custom ids
    latest: dict[str, str] = field(default_factory=dict)            # custom id -> batch id
    cancelled: set[str] = field(default_factory=set)
    orphans: list[dict[str, Any]] = field(default_factory=list)     # submitted, no id known

    @classmethod
    def open(cls, path: Path, on_created: Callable[[dict[str, Any]], None], *,
             opener: Opener = open_nofollow,
             warn: Callable[[str], None] | None = None) -> "BatchJournal":
        """The journal at `path` as far as it was written. A symlink there is refused
        (`opener`'s error); a line that is no journal line, or was cut by a crash (its batch
        is found again: `find`), is skipped, and `warn` told which."""
        journal = cls(path, on_created, opener=opener)
        submits: dict[str, dict[str, Any]] = {}
        try:
            fd = opener(path, os.O_RDONLY, 0o666)
        except FileNotFoundError:
            fd = None
        if fd is not None:
            with os.fdopen(fd, "rb") as f:
                raw_lines = list(f)
            for number, raw in enumerate(raw_lines, start=1):
                if not raw.strip():
                    continue
                try:
                    line = json.loads(raw)
                except (ValueError, RecursionError):  # not JSON, not UTF-8, nested too deep
                    line = None
                if not _journal_line(line):
                    if warn is not None:
                        torn = number == len(raw_lines) and not raw.endswith(b"\n")
                        warn(f"{path}: line {number}: skipped " + (
                            "torn last line (a run stopped mid-write)" if torn else
                            "line that is no batch journal line (a JSON object with an "
                            "event and its keys)"))
                    continue
                event = line["event"]
                if event == "submit":
                    submits[line["token"]] = line
                elif event == "created":
                    entry = submits.pop(line["token"], None)
                    if entry is not None:
                        journal._adopt(line["id"], entry["custom_ids"])
                elif event == "failed":
                    submits.pop(line["token"], None)
                elif event == "cancel":
                    journal.cancelled.add(line["id"])
        journal.orphans = list(submits.values())
        return journal

    def _adopt(self, batch_id: str, ids: list[str]) -> None:
        self.members[batch_id] = ids
        for cid in ids:
            self.latest[cid] = batch_id

    def _append(self, line: dict[str, Any]) -> None:
        fd = self.opener(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        with os.fdopen(fd, "a", encoding="utf-8") as f:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def submitting(self, token: str, provider: str, subject: str, ids: list[str]) -> None:
        self._append({"event": "submit", "token": token, "provider": provider,
                      "subject": subject, "at": _now(), "custom_ids": ids})

    def created(self, token: str, batch_id: str, provider: str, subject: str,
                ids: list[str], at: str | None = None) -> None:
        self._append({"event": "created", "token": token, "id": batch_id})
        self._adopt(batch_id, ids)
        self.on_created({"id": batch_id, "provider": provider, "subject": subject,
                         "requests": len(ids), "submitted_at": at or _now()})

    def failed(self, token: str) -> None:
        self._append({"event": "failed", "token": token})

    def cancel(self, batch_id: str) -> None:
        self._append({"event": "cancel", "id": batch_id})
        self.cancelled.add(batch_id)


class Batcher:
    """Gathers one runtime's requests into batches and hands each trial its result.

    State lives on one event loop (a run's); `attach` starts a run afresh with its journal.
    Without a journal (a runtime used outside a run) batches still work, but a crash forgets
    them."""

    def __init__(self, provider: Callable[[], Awaitable[BatchProvider]], *, subject: str = "",
                 poll_s: float = 30.0, max_requests: int | None = None):
        self._provider = provider
        #: told of each batch's progress: `{subject, id, status: submitted | running |
        #: ended, requests, answered}` (the engine passes it to the run's observer)
        self.on_status: Callable[[dict[str, Any]], None] = lambda _: None
        self.subject = subject
        self.poll_s = poll_s
        self.max_requests = max_requests
        self.journal: BatchJournal | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reset()

    def _reset(self) -> None:
        self._waiting: dict[str, asyncio.Future[BatchResult]] = {}
        self._bodies: dict[str, dict[str, Any]] = {}
        self._results: dict[str, BatchResult] = {}   # arrived before their trial asked
        self._pending: list[tuple[str, dict[str, Any]]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._pollers: dict[str, asyncio.Task[None]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._members: dict[str, list[str]] = {}
        self._latest: dict[str, str] = {}
        self._earlier: set[str] = set()   # batches of an earlier process (the journal's)
        self._found: asyncio.Future[None] | None = None  # the search for orphans
        if self.journal is not None:
            self._members = dict(self.journal.members)
            self._latest = dict(self.journal.latest)
            self._earlier = set(self.journal.members)

    def attach(self, journal: BatchJournal) -> None:
        """A new run (or a resumed one): its journal, and nothing of an earlier run's state."""
        self.close()
        self.journal = journal
        self._loop = None
        self._reset()

    @property
    def in_flight(self) -> list[str]:
        """The ids of the batches still being waited on."""
        return [b for b, t in self._pollers.items() if not t.done()]

    async def call(self, cid: str, body: dict[str, Any]) -> BatchResult:
        """The result of request `body` (id `cid`): from a batch it is already in (a resumed
        run), else from a new one."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._loop = loop
            self._reset()
        if self._found is None:  # every trial waits for it: an orphan's requests are not new
            self._found = asyncio.ensure_future(self._find_orphans())
        await asyncio.shield(self._found)
        early = self._results.pop(cid, None)
        withdrawn = early is not None and self._withdrawn(early)
        if early is not None and not withdrawn and not self._unanswered(early):
            return early
        future: asyncio.Future[BatchResult] = loop.create_future()
        self._waiting[cid] = future
        self._bodies[cid] = body
        batch = self._latest.get(cid)
        if withdrawn:  # the run is ending (a second Ctrl-C): `--resume` sends it again
            pass
        elif early is None and batch is not None:
            self._watch(batch)
        else:
            self._enqueue(cid, body)
        try:
            return await future
        finally:
            self._waiting.pop(cid, None)
            self._bodies.pop(cid, None)

    def _unanswered(self, result: BatchResult) -> bool:
        """Cancelled before this process (ix's second Ctrl-C, or by hand): never answered
        nor billed, so the request goes into a new batch."""
        return result.kind == "canceled" and result.batch_id in self._earlier

    def _withdrawn(self, result: BatchResult) -> bool:
        """Cancelled by this process (a second Ctrl-C): its trial is not answered, and is
        left without a line, so that `--resume` sends it again (`_unanswered`); recorded
        as a `batch_canceled` error, a resumed run would keep it."""
        return (result.kind == "canceled" and self.journal is not None
                and result.batch_id in self.journal.cancelled)

    async def cancel_all(self) -> list[str]:
        """Ask the provider to cancel every batch still in flight (a second Ctrl-C); what
        they finished is billed and collected by `--resume`, the rest is sent again then."""
        ids = self.in_flight
        if not ids:
            return []
        provider = await self._provider()
        for batch_id in ids:
            if self.journal is not None:
                self.journal.cancel(batch_id)
            with contextlib.suppress(Exception):
                await provider.cancel(batch_id)
        return ids

    def close(self) -> None:
        """Stop polling (the run ended); the batches themselves go on at the provider."""
        for task in [*self._pollers.values(), *self._tasks,
                     *([self._found] if self._found is not None else [])]:
            task.cancel()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    # --- submitting -----------------------------------------------------------------------

    def _enqueue(self, cid: str, body: dict[str, Any]) -> None:
        self._pending.append((cid, body))
        if self._timer is not None:
            self._timer.cancel()
        assert self._loop is not None
        self._timer = self._loop.call_later(LINGER_S, self._spawn_flush)

    def _spawn_flush(self) -> None:
        self._timer = None
        task = asyncio.ensure_future(self._flush())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _flush(self) -> None:
        taken, self._pending = self._pending, []
        taken = [(cid, body) for cid, body in taken if cid in self._waiting]
        if not taken:
            return
        try:
            provider = await self._provider()
        except Exception as exc:
            self._fail([cid for cid, _ in taken], exc)
            return
        limit = min(self.max_requests or provider.max_requests, provider.max_requests)
        for chunk in chunks(taken, limit, provider.max_bytes):
            ids = [cid for cid, _ in chunk]
            token = secrets.token_hex(8)
            at = _now()
            if self.journal is not None:
                self.journal.submitting(token, provider.name, self.subject, ids)
            try:
                batch_id = await provider.create(chunk, token)
            except Exception as exc:
                if self.journal is not None:
                    self.journal.failed(token)
                self._fail(ids, exc)
                continue
            if self.journal is not None:
                self.journal.created(token, batch_id, provider.name, self.subject, ids, at)
            self._members[batch_id] = ids
            self._latest.update(dict.fromkeys(ids, batch_id))
            self._tell(batch_id, "submitted", 0)
            self._watch(batch_id)

    def _tell(self, batch_id: str, status: str, answered: int) -> None:
        self.on_status({"subject": self.subject, "id": batch_id, "status": status,
                        "requests": len(self._members.get(batch_id, ())),
                        "answered": answered})

    def _fail(self, ids: Iterable[str], exc: BaseException) -> None:
        error = exc if isinstance(exc, TrialError) else TrialError(
            "batch_error", f"the batch could not be submitted: {exc}")
        for cid in ids:
            future = self._waiting.get(cid)
            if future is not None and not future.done():
                future.set_exception(error)

    async def _find_orphans(self) -> None:
        """Batches created just before a crash, their ids never written: found again at the
        provider, so their requests are not sent twice."""
        journal = self.journal
        if journal is None:
            return
        mine = [o for o in journal.orphans if o.get("subject") == self.subject]
        if not mine:
            return
        provider = await self._provider()
        for orphan in mine:
            journal.orphans.remove(orphan)
            at = datetime.fromisoformat(orphan["at"].replace("Z", "+00:00"))
            try:
                batch_id = await provider.find(orphan["token"], at, len(orphan["custom_ids"]))
            except Exception:
                batch_id = None
            if batch_id is None or batch_id in self._members:
                journal.failed(orphan["token"])
                continue
            ids = list(orphan["custom_ids"])
            journal.created(orphan["token"], batch_id, provider.name, self.subject, ids,
                            orphan["at"])
            self._members[batch_id] = ids
            self._latest.update(dict.fromkeys(ids, batch_id))
            self._earlier.add(batch_id)

    # --- collecting -----------------------------------------------------------------------

    def _watch(self, batch_id: str) -> None:
        if batch_id not in self._pollers:
            self._pollers[batch_id] = asyncio.ensure_future(self._poll(batch_id))

    async def _poll(self, batch_id: str) -> None:
        members = self._members.get(batch_id, [])
        try:
            provider = await self._provider()
            delay = min(1.0, self.poll_s)
            told = -1
            while True:
                try:
                    ended, answered = await provider.progress(batch_id)
                except TrialError as exc:
                    if exc.kind not in PASSING:
                        raise
                    # the provider or the network failed for a while (each request retried):
                    # the batch lives on for hours, so it is asked again later, never
                    # given up (its trials would be sent, and billed, twice)
                    await asyncio.sleep(self.poll_s)
                    continue
                if ended:
                    self._tell(batch_id, "ended", answered)
                    break
                if answered != told:
                    told = answered
                    self._tell(batch_id, "running", answered)
                await asyncio.sleep(delay)
                delay = min(self.poll_s, delay * 2)
            seen: set[str] = set()
            async for cid, result in provider.results(batch_id):
                seen.add(cid)
                self._deliver(cid, result)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._fail([c for c in members if c in self._waiting], TrialError(
                "batch_error", f"batch {batch_id} could not be read: {exc}"))
            return
        for cid in members:  # no result at all: ask again, in a new batch
            if cid not in seen and cid in self._waiting and self._latest.get(cid) == batch_id:
                self._enqueue(cid, self._bodies[cid])

    def _deliver(self, cid: str, result: BatchResult) -> None:
        if self._latest.get(cid, result.batch_id) != result.batch_id:
            return  # an older batch of this request; a newer one answers it
        future = self._waiting.get(cid)
        if future is None or future.done():
            self._results[cid] = result  # its trial asks later (a resumed run)
        elif self._unanswered(result):
            self._enqueue(cid, self._bodies[cid])
        elif not self._withdrawn(result):
            future.set_result(result)


#: a provider's error type in a batch result -> the kind a trial's error is grouped by
_KINDS = {"overloaded_error": "overloaded", "rate_limit_error": "rate_limited",
          "api_error": "server_error", "invalid_request_error": "bad_request",
          "authentication_error": "bad_request", "permission_error": "bad_request",
          "not_found_error": "bad_request", "batch_failed": "bad_request"}


def trial_error(result: BatchResult) -> TrialError:
    """Why a trial whose batch request did not succeed failed (its line's `error`)."""
    if result.kind == "expired":
        return TrialError("batch_expired", f"batch {result.batch_id} expired before this "
                          "request was processed; `ix run --retry-failed` sends it again in a "
                          "new batch")
    if result.kind == "canceled":
        return TrialError("batch_canceled", f"batch {result.batch_id} was cancelled before "
                          "this request was processed")
    kind = _KINDS.get(result.error_type, "batch_error")
    return TrialError(kind, f"{result.error_type}: {result.message}".strip(": ")
                      + f" (in batch {result.batch_id})")


async def batched(batcher: Batcher, subject: str, case_id: str, seed: int, attempt: int,
                  body: dict[str, Any], url: str
                  ) -> tuple[dict[str, Any], float, list[dict[str, Any]], dict[str, str]]:
    """One trial's request through `batcher`: (response body, ms waited, trace, the
    `meta.batch` block), or the `TrialError` of a request that did not succeed."""
    cid = custom_id(subject, case_id, seed, attempt)
    batcher.subject = subject
    t0 = asyncio.get_running_loop().time()
    result = await batcher.call(cid, body)
    waited_ms = (asyncio.get_running_loop().time() - t0) * 1000
    block = {"id": result.batch_id, "custom_id": cid}
    trace: list[dict[str, Any]] = [
        {"type": "request", "url": url, "body": body, "batch": block}]
    if result.kind != "succeeded" or result.body is None:
        raise trial_error(result)
    trace.append({"type": "response", "status": 200, "body": result.body})
    return result.body, waited_ms, trace, block
