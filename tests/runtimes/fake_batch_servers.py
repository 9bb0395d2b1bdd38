"""Loopback stand-ins for the Anthropic Message Batches API and the OpenAI Batch API.

    with FakeBatchServer("anthropic", process_after_s=0.2) as api:   # or "openai"
        api.script.append(text_reply("first"))        # then router(BatchRequest) decides
        client = Anthropic(base_url=api.base_url, api_key=FAKE_KEY)
        batch = client.messages.batches.create(requests=[{"custom_id": "t1", "params": ...}])
        ... retrieve until processing_status == "ended", then batches.results(batch.id) ...
        api.batches[0].custom_ids == ["t1"]; api.cancels == []

A `FakeBatchServer` is a `FakeLLMServer` (the completion endpoint still answers) that also
serves, shaped as the real APIs and the official SDKs' types:

- `anthropic`: `POST /v1/messages/batches`, `GET /v1/messages/batches[/{id}]` (list pages by
  `limit`/`after_id`/`before_id`, newest first), `GET .../{id}/results` (JSONL of
  `{custom_id, result: succeeded | errored | canceled | expired}`), `POST .../{id}/cancel`.
- `openai`: `POST /v1/files` (multipart, `purpose=batch`), `GET /v1/files/{id}[/content]`,
  `POST /v1/batches`, `GET /v1/batches[/{id}]` (list pages by `limit`/`after`),
  `POST /v1/batches/{id}/cancel`; output and error files as JSONL lines
  `{id, custom_id, response: {status_code, request_id, body} | null, error}`.

Processing is computed lazily from `clock()` on every call, so it is deterministic: request i
of a batch is decided at `created + process_after_s + i * per_request_s` (by `expired(req)`,
then `errored(req)`, then `script`/`router`; a `Reply` with a non-200 status is an errored
result). `process_after_s=None` holds batches in progress until `release()` or a cancel. A
cancel lets the requests due by then finish, waits `cancel_after_s`, and cancels the rest.
The state lives in the test process, so it survives a SIGKILLed client; point a subprocess at
it with `api.env()` (the SDKs read `ANTHROPIC_BASE_URL` / `OPENAI_BASE_URL`).
"""

import email.parser
import email.policy
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

from fake_llm_servers import (
    FAKE_KEY,
    FakeLLMServer,
    Reply,
    Request,
    _handler,
    anthropic_message,
    http_error,
    openai_completion,
)

DAY_S = 24 * 3600
CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
# the real APIs' limits (Anthropic: 100,000 requests or 256 MB; OpenAI: 50,000 or 200 MB)
LIMITS = {"anthropic": (100_000, 256 * 1024 * 1024), "openai": (50_000, 200 * 1024 * 1024)}
OPENAI_ENDPOINTS = ("/v1/chat/completions", "/v1/responses", "/v1/embeddings",
                    "/v1/completions", "/v1/moderations")

Outcome = Literal["succeeded", "errored", "canceled", "expired"]


@dataclass
class BatchRequest(Request):
    """One request of a batch, as the router sees it: `body` is its params / body."""

    custom_id: str = ""
    batch_id: str = ""


@dataclass
class Result:
    outcome: Outcome
    reply: Reply | None       # None for canceled and expired
    at: float                 # clock time it was decided
    n: int                    # numbers its message / request ids


@dataclass
class FakeBatch:
    id: str
    requests: list[BatchRequest]
    created: float
    ready: float | None                     # when request 0 is due; None: held
    input_file_id: str = ""                 # openai only
    endpoint: str = ""
    metadata: dict[str, Any] | None = None
    errors: list[dict[str, Any]] = field(default_factory=list)   # openai validation
    cancel_requested: float | None = None
    ended: float | None = None
    results: dict[str, Result] = field(default_factory=dict)
    output_file_id: str | None = None
    error_file_id: str | None = None

    @property
    def custom_ids(self) -> list[str]:
        return [r.custom_id for r in self.requests]

    def outcomes(self) -> dict[str, Outcome]:
        return {cid: r.outcome for cid, r in self.results.items()}


@dataclass
class FakeFile:
    id: str
    filename: str
    purpose: str
    data: bytes
    created: float


class ApiError(Exception):
    def __init__(self, status: int, error_type: str, message: str) -> None:
        super().__init__(message)
        self.status, self.error_type, self.message = status, error_type, message


def never(request: BatchRequest) -> bool:
    return False


@dataclass
class FakeBatchServer(FakeLLMServer):
    process_after_s: float | None = 0.0
    per_request_s: float = 0.0
    cancel_after_s: float = 0.0
    errored: Callable[[BatchRequest], bool] = never
    expired: Callable[[BatchRequest], bool] = never
    max_requests: int | None = None        # default: the real API's limit
    max_bytes: int | None = None
    reverse_results: bool = False          # results need not come in request order
    cancelled_lines: bool = False          # openai: list canceled requests in the error file
    clock: Callable[[], float] = time.time
    batches: list[FakeBatch] = field(default_factory=list)
    cancels: list[str] = field(default_factory=list)
    files: dict[str, FakeFile] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__post_init__()
        self._batch_lock = threading.RLock()
        default_requests, default_bytes = LIMITS[self.provider]
        self.max_requests = self.max_requests or default_requests
        self.max_bytes = self.max_bytes or default_bytes

    def start(self) -> "FakeBatchServer":
        """As FakeLLMServer.start, with the handler that also serves the batch endpoints."""
        server = ThreadingHTTPServer(("127.0.0.1", 0), _batch_handler(self),
                                     bind_and_activate=False)
        server.daemon_threads = True
        server.request_queue_size = 256
        server.server_bind()
        server.server_activate()
        self._server = server
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True, name=f"fake-batch-{self.provider}").start()
        return self

    def __enter__(self) -> "FakeBatchServer":
        return self.start()

    # --- for tests ------------------------------------------------------------------------

    def env(self) -> dict[str, str]:
        """Environment for a subprocess whose SDK client should reach this server."""
        if self.provider == "anthropic":
            return {"ANTHROPIC_BASE_URL": self.base_url, "ANTHROPIC_API_KEY": FAKE_KEY}
        return {"OPENAI_BASE_URL": self.base_url, "OPENAI_API_KEY": FAKE_KEY}

    def batch(self, batch_id: str) -> FakeBatch:
        with self._batch_lock:
            found = next((b for b in self.batches if b.id == batch_id), None)
        if found is None:
            raise KeyError(batch_id)
        return found

    def submitted_custom_ids(self) -> list[str]:
        """Every custom_id of every batch created, in order (duplicates mean resubmission)."""
        with self._batch_lock:
            return [cid for b in self.batches for cid in b.custom_ids]

    def release(self, batch_id: str | None = None, after_s: float = 0.0) -> None:
        """Let held batches (all, or one) start processing `after_s` from now."""
        with self._batch_lock:
            for b in self.batches:
                if b.ready is None and batch_id in (None, b.id):
                    b.ready = self.clock() + after_s

    # --- the model ------------------------------------------------------------------------

    def _new_batch(self, requests: list[BatchRequest], **kw: Any) -> FakeBatch:
        now = self.clock()
        ready = None if self.process_after_s is None else now + self.process_after_s
        with self._batch_lock:
            n = len(self.batches) + 1
            prefix = "msgbatch_fake" if self.provider == "anthropic" else "batch_fake"
            batch = FakeBatch(f"{prefix}{n:04d}", requests, now, ready, **kw)
            for r in requests:
                r.batch_id = batch.id
            self.batches.append(batch)
        return batch

    def _advance(self, batch: FakeBatch) -> None:
        """Decide every request due by now; end the batch when none is left."""
        with self._batch_lock:
            if batch.ended is not None or batch.errors:
                return
            now = self.clock()
            cut = batch.cancel_requested
            for i, req in enumerate(batch.requests):
                if req.custom_id in batch.results or batch.ready is None:
                    continue
                due = batch.ready + i * self.per_request_s
                if due > now or (cut is not None and due > cut):
                    continue
                batch.results[req.custom_id] = self._decide(req, due)
            if cut is not None and now >= cut + self.cancel_after_s:
                for req in batch.requests:
                    if req.custom_id not in batch.results:
                        batch.results[req.custom_id] = Result(
                            "canceled", None, cut + self.cancel_after_s, self._number())
            if len(batch.results) == len(batch.requests):
                batch.ended = max(r.at for r in batch.results.values())
                if self.provider == "openai":
                    self._write_files(batch)

    def _decide(self, req: BatchRequest, at: float) -> Result:
        n = self._number()
        if self.expired(req):
            return Result("expired", None, at, n)
        if self.errored(req):
            return Result("errored", http_error(500), at, n)
        reply = self._next_reply(req)
        return Result("succeeded" if reply.status == 200 else "errored", reply, at, n)

    def _number(self) -> int:
        with self._lock:
            return next(self._ids)

    def _cancel(self, batch_id: str) -> FakeBatch:
        with self._batch_lock:
            self.cancels.append(batch_id)
            batch = self._get(batch_id)
            self._advance(batch)
            if batch.ended is not None or batch.errors:
                status = 400 if self.provider == "anthropic" else 409
                raise ApiError(status, "invalid_request_error",
                               f"Batch {batch_id} has already ended and cannot be canceled.")
            if batch.cancel_requested is None:   # answered as canceling; a later call ends it
                batch.cancel_requested = self.clock()
            return batch

    def _get(self, batch_id: str) -> FakeBatch:
        with self._batch_lock:
            for b in self.batches:
                if b.id == batch_id:
                    self._advance(b)
                    return b
        raise ApiError(404, "not_found_error", f"batch {batch_id} not found")

    def _ordered(self, batch: FakeBatch) -> list[tuple[BatchRequest, Result]]:
        pairs = [(r, batch.results[r.custom_id]) for r in batch.requests]
        return pairs[::-1] if self.reverse_results else pairs

    def _model(self, req: BatchRequest) -> str:
        return self.model or str(req.body.get("model") or "fake-model")

    # --- anthropic ------------------------------------------------------------------------

    def _anthropic_create(self, body: Any, size: int) -> FakeBatch:
        assert self.max_bytes is not None and self.max_requests is not None
        if size > self.max_bytes:
            raise ApiError(413, "request_too_large",
                           "Request exceeds the maximum allowed number of bytes.")
        items = body.get("requests") if isinstance(body, dict) else None
        if not isinstance(items, list) or not items:
            raise ApiError(400, "invalid_request_error", "requests: Field required")
        if len(items) > self.max_requests:
            raise ApiError(400, "invalid_request_error",
                           f"requests: too many requests in a batch ({len(items)} > "
                           f"{self.max_requests})")
        seen: set[str] = set()
        requests = []
        for i, item in enumerate(items):
            cid = item.get("custom_id") if isinstance(item, dict) else None
            params = item.get("params") if isinstance(item, dict) else None
            if not isinstance(cid, str) or not CUSTOM_ID.match(cid):
                raise ApiError(400, "invalid_request_error", f"requests.{i}.custom_id: String "
                               "should match pattern '^[a-zA-Z0-9_-]{1,64}$'")
            if cid in seen:
                raise ApiError(400, "invalid_request_error",
                               f"requests.{i}.custom_id: duplicate custom_id '{cid}'")
            if not isinstance(params, dict):
                raise ApiError(400, "invalid_request_error", f"requests.{i}.params: Field "
                               "required")
            seen.add(cid)
            requests.append(BatchRequest("POST", "/v1/messages", {}, params, cid))
        return self._new_batch(requests)

    def _anthropic_batch(self, batch: FakeBatch) -> dict[str, Any]:
        counts = dict.fromkeys(("processing", "succeeded", "errored", "canceled", "expired"), 0)
        if batch.ended is None:        # the real API tallies only once the batch has ended
            counts["processing"] = len(batch.requests)
        else:
            for result in batch.results.values():
                counts[result.outcome] += 1
        status = ("ended" if batch.ended is not None
                  else "canceling" if batch.cancel_requested is not None else "in_progress")
        return {
            "id": batch.id, "type": "message_batch", "processing_status": status,
            "request_counts": counts, "created_at": _rfc3339(batch.created),
            "expires_at": _rfc3339(batch.created + DAY_S),
            "ended_at": _rfc3339(batch.ended), "archived_at": None,
            "cancel_initiated_at": _rfc3339(batch.cancel_requested),
            "results_url": (f"{self.url}/v1/messages/batches/{batch.id}/results"
                            if batch.ended is not None else None),
        }

    def _anthropic_results(self, batch: FakeBatch) -> bytes:
        if batch.ended is None:
            raise ApiError(400, "invalid_request_error",
                           f"Message Batch {batch.id} has not yet ended.")
        lines = []
        for req, result in self._ordered(batch):
            outcome: dict[str, Any] = {"type": result.outcome}
            reply = result.reply
            if result.outcome == "succeeded" and reply is not None:
                outcome["message"] = (reply.body if reply.body is not None else
                                      anthropic_message(reply, result.n, self._model(req)))
            elif result.outcome == "errored" and reply is not None:
                outcome["error"] = {"type": "error", "request_id": f"req_fake{result.n:04d}",
                                    "error": {"type": reply.error_type,
                                              "message": reply.message}}
            lines.append(json.dumps({"custom_id": req.custom_id, "result": outcome}))
        return "".join(line + "\n" for line in lines).encode()

    # --- openai ---------------------------------------------------------------------------

    def _upload(self, filename: str, purpose: str, data: bytes) -> FakeFile:
        with self._batch_lock:
            file = FakeFile(f"file-fake{len(self.files) + 1:04d}", filename, purpose, data,
                            self.clock())
            self.files[file.id] = file
        return file

    def _openai_upload(self, fields: dict[str, tuple[str, bytes]]) -> FakeFile:
        assert self.max_bytes is not None
        purpose = fields.get("purpose", ("", b""))[1].decode()
        if "file" not in fields or not purpose:
            raise ApiError(400, "invalid_request_error", "'file' and 'purpose' are required")
        filename, data = fields["file"]
        if purpose == "batch":
            if not filename.endswith(".jsonl"):
                raise ApiError(400, "invalid_request_error",
                               "Invalid file format for Batch API. Must be .jsonl")
            if len(data) > self.max_bytes:
                raise ApiError(400, "invalid_request_error", "File is too large.")
        return self._upload(filename, purpose, data)

    def _openai_create(self, body: Any) -> FakeBatch:
        body = body if isinstance(body, dict) else {}
        file = self.files.get(str(body.get("input_file_id")))
        if file is None or file.purpose != "batch":
            raise ApiError(400, "invalid_request_error",
                           f"Invalid 'input_file_id': '{body.get('input_file_id')}'.")
        endpoint = body.get("endpoint")
        if endpoint not in OPENAI_ENDPOINTS:
            raise ApiError(400, "invalid_request_error", f"Invalid 'endpoint': '{endpoint}'.")
        if body.get("completion_window") != "24h":
            raise ApiError(400, "invalid_request_error",
                           "Invalid 'completion_window': only '24h' is supported.")
        requests, errors = self._openai_lines(file.data, str(endpoint))
        return self._new_batch(requests, input_file_id=file.id, endpoint=str(endpoint),
                               metadata=body.get("metadata"), errors=errors)

    def _openai_lines(self, data: bytes, endpoint: str
                      ) -> tuple[list[BatchRequest], list[dict[str, Any]]]:
        """The input file's requests, or the validation errors the batch fails with."""
        assert self.max_requests is not None

        def error(code: str, message: str, line: int | None = None) -> dict[str, Any]:
            return {"code": code, "message": message, "param": None, "line": line}

        lines = [(i, line) for i, line in enumerate(data.decode().splitlines(), 1)
                 if line.strip()]
        if not lines:
            return [], [error("empty_file", "The input file is empty.")]
        if len(lines) > self.max_requests:
            return [], [error("too_many_tasks", f"The input file has {len(lines)} requests; "
                              f"the limit is {self.max_requests}.")]
        requests: list[BatchRequest] = []
        seen: set[str] = set()
        models: set[str] = set()
        for number, line in lines:
            try:
                item = json.loads(line)
            except ValueError:
                return [], [error("invalid_json_line",
                                  "This line is not parseable as valid JSON.", number)]
            cid, url, body = item.get("custom_id"), item.get("url"), item.get("body")
            if not isinstance(cid, str) or not isinstance(body, dict) or \
                    item.get("method") != "POST":
                return [], [error("invalid_request", "Each line needs custom_id, method POST, "
                                  "url and body.", number)]
            if cid in seen:
                return [], [error("duplicate_custom_id", f"The custom_id '{cid}' is used "
                                  "more than once.", number)]
            if url != endpoint:
                return [], [error("url_mismatch", f"The url '{url}' does not match the "
                                  f"batch's endpoint '{endpoint}'.", number)]
            models.add(str(body.get("model")))
            if len(models) > 1:
                return [], [error("model_mismatch", "All requests of a batch must use the "
                                  "same model.", number)]
            seen.add(cid)
            requests.append(BatchRequest("POST", endpoint, {}, body, cid))
        return requests, []

    def _openai_status(self, batch: FakeBatch) -> str:
        if batch.errors:
            return "failed"
        if batch.cancel_requested is not None:
            return "cancelled" if batch.ended is not None else "cancelling"
        if batch.ended is None:
            return "in_progress"
        expired = any(r.outcome == "expired" for r in batch.results.values())
        return "expired" if expired else "completed"

    def _openai_batch(self, batch: FakeBatch, status: str | None = None) -> dict[str, Any]:
        status = status or self._openai_status(batch)
        done = [r.outcome for r in batch.results.values()]
        created, ended = int(batch.created), _int(batch.ended)
        return {
            "id": batch.id, "object": "batch", "endpoint": batch.endpoint,
            "input_file_id": batch.input_file_id, "completion_window": "24h",
            "status": status, "created_at": created, "expires_at": created + DAY_S,
            "in_progress_at": None if status in ("validating", "failed") else created,
            "failed_at": created if status == "failed" else None,
            "finalizing_at": ended if status in ("completed", "expired") else None,
            "completed_at": ended if status == "completed" else None,
            "expired_at": ended if status == "expired" else None,
            "cancelling_at": _int(batch.cancel_requested),
            "cancelled_at": ended if status == "cancelled" else None,
            "output_file_id": batch.output_file_id, "error_file_id": batch.error_file_id,
            "errors": {"object": "list", "data": batch.errors} if batch.errors else None,
            "request_counts": {"total": len(batch.requests),
                               "completed": done.count("succeeded"),
                               "failed": done.count("errored") + done.count("expired")},
            "metadata": batch.metadata,
            "model": self._model(batch.requests[0]) if batch.requests else None,
        }

    def _write_files(self, batch: FakeBatch) -> None:
        """The output file (succeeded) and the error file (errored, expired); requests a
        cancel cut short are in neither unless `cancelled_lines` (code `batch_cancelled`)."""
        output: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        for req, result in self._ordered(batch):
            line: dict[str, Any] = {"id": f"batch_req_fake{result.n:04d}",
                                    "custom_id": req.custom_id, "response": None,
                                    "error": None}
            reply = result.reply
            if result.outcome == "expired":
                line["error"] = {"code": "batch_expired", "message": "This request could not "
                                 "be executed before the completion window expired."}
                errors.append(line)
            elif result.outcome == "canceled" and self.cancelled_lines:
                line["error"] = {"code": "batch_cancelled",
                                 "message": "This request was cancelled."}
                errors.append(line)
            elif reply is not None:
                body = reply.body if reply.body is not None else (
                    openai_completion(reply, result.n, self._model(req))
                    if result.outcome == "succeeded" else
                    {"error": {"message": reply.message, "type": reply.error_type,
                               "param": None, "code": None}})
                line["response"] = {"status_code": reply.status,
                                    "request_id": f"req_fake{result.n:04d}", "body": body}
                (output if result.outcome == "succeeded" else errors).append(line)
        if output:
            batch.output_file_id = self._upload(f"{batch.id}_output.jsonl", "batch_output",
                                                _jsonl(output)).id
        if errors:
            batch.error_file_id = self._upload(f"{batch.id}_error.jsonl", "batch_output",
                                               _jsonl(errors)).id

    def _file(self, file_id: str) -> FakeFile:
        with self._batch_lock:
            file = self.files.get(file_id)
        if file is None:
            raise ApiError(404, "invalid_request_error", f"No such File object: {file_id}")
        return file

    # --- routing --------------------------------------------------------------------------

    def _route(self, method: str, path: str, request: Request, raw: bytes
               ) -> tuple[int, Any, str]:
        """(status, payload, content type) for a batch or file endpoint; 404 otherwise."""
        url = urlsplit(path)
        parts = url.path.strip("/").split("/")
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        if self.provider == "anthropic" and parts[:3] == ["v1", "messages", "batches"]:
            rest = parts[3:]
            if method == "POST" and not rest:
                return 200, self._anthropic_batch(self._anthropic_create(request.body,
                                                                         len(raw))), "json"
            if method == "GET" and not rest:
                return 200, self._page(query, self._anthropic_batch, "after_id"), "json"
            if method == "GET" and len(rest) == 1:
                return 200, self._anthropic_batch(self._get(rest[0])), "json"
            if method == "GET" and rest[1:] == ["results"]:
                return 200, self._anthropic_results(self._get(rest[0])), "application/binary"
            if method == "POST" and rest[1:] == ["cancel"]:
                return 200, self._anthropic_batch(self._cancel(rest[0])), "json"
        if self.provider == "openai" and parts[:2] == ["v1", "batches"]:
            rest = parts[2:]
            if method == "POST" and not rest:
                batch = self._openai_create(request.body)
                return 200, self._openai_batch(batch, "validating"), "json"
            if method == "GET" and not rest:
                return 200, self._page(query, self._openai_batch, "after"), "json"
            if method == "GET" and len(rest) == 1:
                return 200, self._openai_batch(self._get(rest[0])), "json"
            if method == "POST" and rest[1:] == ["cancel"]:
                return 200, self._openai_batch(self._cancel(rest[0])), "json"
        if self.provider == "openai" and parts[:2] == ["v1", "files"]:
            rest = parts[2:]
            if method == "POST" and not rest:
                fields = _multipart(request.headers.get("content-type", ""), raw)
                return 200, _file_object(self._openai_upload(fields)), "json"
            if method == "GET" and len(rest) == 1:
                return 200, _file_object(self._file(rest[0])), "json"
            if method == "GET" and rest[1:] == ["content"]:
                return 200, self._file(rest[0]).data, "application/octet-stream"
        raise ApiError(404, "not_found_error", f"no such endpoint: {method} {url.path}")

    def _page(self, query: dict[str, str], render: Callable[[FakeBatch], dict[str, Any]],
              after_key: str) -> dict[str, Any]:
        """A list page, newest first, as both APIs page them."""
        limit = int(query.get("limit", 20))
        with self._batch_lock:
            newest_first = self.batches[::-1]
            ids = [b.id for b in newest_first]
            for b in newest_first:
                self._advance(b)
        if query.get("before_id") in ids:
            end = ids.index(query["before_id"])
            start = max(0, end - limit)
            page, has_more = newest_first[start:end], start > 0
        else:
            start = ids.index(query[after_key]) + 1 if query.get(after_key) in ids else 0
            page = newest_first[start:start + limit]
            has_more = start + limit < len(ids)
        payload: dict[str, Any] = {
            "data": [render(b) for b in page], "has_more": has_more,
            "first_id": page[0].id if page else None, "last_id": page[-1].id if page else None}
        if self.provider == "openai":
            payload["object"] = "list"
        return payload


# --- helpers --------------------------------------------------------------------------------

def _rfc3339(t: float | None) -> str | None:
    if t is None:
        return None
    return datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z")


def _int(t: float | None) -> int | None:
    return None if t is None else int(t)


def _jsonl(lines: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def _file_object(file: FakeFile) -> dict[str, Any]:
    return {"id": file.id, "object": "file", "bytes": len(file.data),
            "created_at": int(file.created), "filename": file.filename,
            "purpose": file.purpose, "status": "processed", "expires_at": None,
            "status_details": None}


def _multipart(content_type: str, raw: bytes) -> dict[str, tuple[str, bytes]]:
    """The form fields of a multipart/form-data body: name -> (filename, bytes)."""
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"content-type: " + content_type.encode() + b"\r\n\r\n" + raw)
    fields: dict[str, tuple[str, bytes]] = {}
    if not message.is_multipart():
        return fields
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if isinstance(name, str) and isinstance(payload, bytes):
            fields[name] = (part.get_filename() or "", payload)
    return fields


def _batch_handler(api: FakeBatchServer) -> type[BaseHTTPRequestHandler]:
    base: Any = _handler(api)
    completion = "/v1/messages" if api.provider == "anthropic" else "/v1/chat/completions"

    class Handler(base):
        def _read(self) -> Request:
            length = int(self.headers.get("content-length") or 0)
            self.raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(self.raw) if self.raw else None
            except ValueError:
                body = self.raw.decode("utf-8", "replace")
            request = Request(self.command, self.path,
                              {k.lower(): v for k, v in self.headers.items()}, body)
            api._record(request)
            return request

        def _serve(self) -> None:
            request = self._read()
            n = api._enter()
            try:
                status, payload, kind = api._route(self.command, self.path, request, self.raw)
                if kind == "json":
                    self._json(status, payload, n)
                    return
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except ApiError as exc:
                self._error(exc.status, exc.error_type, exc.message, n)
            finally:
                api._leave()

        def do_GET(self) -> None:
            self._serve()

        def do_POST(self) -> None:
            if self.path.split("?")[0] == completion:
                super().do_POST()
            else:
                self._serve()

    return Handler
