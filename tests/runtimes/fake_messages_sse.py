"""A loopback stand-in for the Anthropic Messages API, streaming SSE, for driving the real CLI.

    with FakeMessages(router) as api:
        env = {"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": FAKE_KEY}

It listens on 127.0.0.1 (port 0: the OS picks a free one) in a daemon thread, answers
`POST /v1/messages` (with or without `?beta=true`) as the real API does with `stream: true`:
`message_start`, `content_block_start`, `content_block_delta` (`text_delta` or
`input_json_delta`), `content_block_stop`, `message_delta` (stop_reason, usage) and
`message_stop`; without `stream` it returns the whole message as JSON. Every request is
recorded (`api.requests`). What to answer is scripted: `api.script` is a FIFO of replies used
first, then `router(request)` decides (default: a short text answer). `count_tokens` answers
a fixed count; any other path is a 404 with an API-shaped error body.
"""

import itertools
import json
import re
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FAKE_KEY = "sk-ant-fake-test-key-0123456789"
LISTING_HEADER = "The following skills are available for use with the Skill tool:"
INPUT_TOKENS = 1000
OUTPUT_TOKENS = 20


@dataclass(frozen=True)
class Reply:
    """One scripted answer: content blocks, or an HTTP error (status, error type, message)."""

    blocks: tuple[dict[str, Any], ...] = ()
    status: int = 200
    error_type: str = ""
    message: str = ""

    @property
    def stop_reason(self) -> str:
        return "tool_use" if any(b["type"] == "tool_use" for b in self.blocks) else "end_turn"


def text(s: str) -> Reply:
    return Reply(blocks=({"type": "text", "text": s},))


def tool(name: str, tool_input: dict[str, Any], preamble: str = "") -> Reply:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": preamble}] if preamble else []
    blocks.append({"type": "tool_use", "name": name, "input": tool_input})
    return Reply(blocks=tuple(blocks))


def skill(name: str) -> Reply:
    return tool("Skill", {"skill": name})


def error(status: int, error_type: str = "", message: str = "") -> Reply:
    defaults = {400: ("invalid_request_error",
                      "prompt is too long: 250000 tokens > 200000 maximum"),
                429: ("rate_limit_error", "Number of requests has exceeded your rate limit"),
                500: ("api_error", "Internal server error"),
                529: ("overloaded_error", "Overloaded")}
    dt, dm = defaults.get(status, ("api_error", f"error {status}"))
    return Reply(status=status, error_type=error_type or dt, message=message or dm)


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: Any

    @property
    def is_messages(self) -> bool:
        return self.method == "POST" and self.path.split("?")[0] == "/v1/messages"

    def user_text(self) -> str:
        """All text of the request's user turns (prompt, system reminders, tool results)."""
        out: list[str] = []
        for msg in (self.body or {}).get("messages", []):
            if msg.get("role") != "user":
                continue
            content = msg.get("content")
            if isinstance(content, str):
                out.append(content)
                continue
            for block in content or []:
                if block.get("type") == "text":
                    out.append(block.get("text", ""))
                elif block.get("type") == "tool_result":
                    c = block.get("content")
                    out.append(c if isinstance(c, str) else json.dumps(c))
        return "\n".join(out)

    def all_text(self) -> str:
        """The text of every message of any role, and of the system prompt.

        Where the CLI puts the skill listing depends on the model: CLI 2.1.332 sends it in the
        first user message for claude-sonnet-4-5, and in a `role: "system"` message inside
        `messages` for its default model.
        """
        body = self.body if isinstance(self.body, dict) else {}
        out: list[str] = []
        for part in [body.get("system"), *(m.get("content") for m in body.get("messages", []))]:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, list):
                out += [b.get("text", "") for b in part
                        if isinstance(b, dict) and b.get("type") == "text"]
        return "\n".join(out)

    def listed_skills(self) -> list[str]:
        """The skills the CLI listed to the model ("- name: description" after the header)."""
        text = self.all_text()
        at = text.find(LISTING_HEADER)
        if at < 0:
            return []
        block = text[at + len(LISTING_HEADER):].split("</system-reminder>", 1)[0]
        return re.findall(r"^- ([^:\n]+):", block, flags=re.MULTILINE)

    def last_user_has_tool_result(self) -> bool:
        messages = (self.body or {}).get("messages", [])
        if not messages or messages[-1].get("role") != "user":
            return False
        content = messages[-1].get("content")
        return isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


Router = Callable[[Request], Reply]


def default_router(request: Request) -> Reply:
    return text("Done." if request.last_user_has_tool_result() else "Answered directly.")


_MARKER = re.compile(r"\[(skill|tool|text|error|error-after|flaky):([^\]\s]*)\]")


class MarkerRouter:
    """Answers by a marker in the prompt, so concurrent CLI sessions each get their script.

    - `[skill:NAME]`: call the Skill tool with NAME if the CLI listed that skill to the model
      (a `- NAME: description` line), else answer with text, as a model mostly would;
    - `[tool:NAME]`: call tool NAME with `{}` input;
    - `[text:]` (or no marker): answer with text only;
    - `[error:STATUS]`: fail every request with that HTTP status;
    - `[flaky:KEY]`: fail the first request of KEY with 529, then call the Skill tool with the
      first `[skill:...]` of the prompt (or answer text);
    - `[error-after:STATUS]`: answer the first request, fail the next turn with STATUS.
    A request that carries a tool result (the session's next turn) is answered "Done.".
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.flaky_seen: set[str] = set()

    def __call__(self, request: Request) -> Reply:
        markers = _MARKER.findall(request.user_text())
        if request.last_user_has_tool_result():
            after = [arg for kind, arg in markers if kind == "error-after"]
            return error(int(after[0])) if after else text("Done.")
        for kind, arg in markers:
            if kind == "error":
                return error(int(arg))
            if kind == "flaky":
                with self._lock:
                    first = arg not in self.flaky_seen
                    self.flaky_seen.add(arg)
                if first:
                    return error(529)
        for kind, arg in markers:
            if kind == "skill" and arg in request.listed_skills():
                return skill(arg)
            if kind == "tool":
                return tool(arg, {})
        return text("Answered directly.")


@dataclass
class FakeMessages:
    router: Router = default_router
    script: deque[Reply] = field(default_factory=deque)
    requests: list[Request] = field(default_factory=list)
    model: str = "claude-sonnet-4-5"

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle --------------------------------------------------------------------------

    @property
    def url(self) -> str:
        assert self._server is not None, "not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "FakeMessages":
        handler = _handler(self)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True,
                                        name="fake-messages-sse")
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "FakeMessages":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- behaviour --------------------------------------------------------------------------

    def messages_requests(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.is_messages]

    def _record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def _next_reply(self, request: Request) -> Reply:
        with self._lock:
            if self.script:
                return self.script.popleft()
        return self.router(request)

    def _next_id(self) -> int:
        with self._lock:
            return next(self._ids)


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _stream(reply: Reply, n: int, model: str) -> list[bytes]:
    usage = {"input_tokens": INPUT_TOKENS, "output_tokens": 1,
             "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    events = [_sse("message_start", {"type": "message_start", "message": {
        "id": f"msg_fake{n:04d}", "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}})]
    for i, block in enumerate(reply.blocks):
        if block["type"] == "tool_use":
            start = {"type": "tool_use", "id": f"toolu_fake{n:04d}_{i}", "name": block["name"],
                     "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        events.append(_sse("content_block_start", {"type": "content_block_start", "index": i,
                                                   "content_block": start}))
        events.append(_sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                   "delta": delta}))
        events.append(_sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    events.append(_sse("message_delta", {"type": "message_delta", "delta": {
        "stop_reason": reply.stop_reason, "stop_sequence": None},
        "usage": {"output_tokens": OUTPUT_TOKENS}}))
    events.append(_sse("message_stop", {"type": "message_stop"}))
    return events


def _whole(reply: Reply, n: int, model: str) -> dict[str, Any]:
    content = []
    for i, block in enumerate(reply.blocks):
        if block["type"] == "tool_use":
            content.append({"type": "tool_use", "id": f"toolu_fake{n:04d}_{i}",
                            "name": block["name"], "input": block["input"]})
        else:
            content.append(dict(block))
    return {"id": f"msg_fake{n:04d}", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": reply.stop_reason, "stop_sequence": None,
            "usage": {"input_tokens": INPUT_TOKENS, "output_tokens": OUTPUT_TOKENS,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}


def _handler(api: FakeMessages) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _read(self) -> Request:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            request = Request(self.command, self.path,
                              {k.lower(): v for k, v in self.headers.items()}, body)
            api._record(request)
            return request

        def _json(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.send_header("request-id", f"req_fake{api._next_id():04d}")
            self.end_headers()
            self.wfile.write(data)

        def _not_found(self) -> None:
            self._json(404, {"type": "error", "error": {
                "type": "not_found_error", "message": f"no such endpoint: {self.path}"}})

        def do_GET(self) -> None:
            self._read()
            self._not_found()

        def do_HEAD(self) -> None:
            self._read()
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            request = self._read()
            path = self.path.split("?")[0]
            if path == "/v1/messages/count_tokens":
                self._json(200, {"input_tokens": INPUT_TOKENS})
                return
            if path != "/v1/messages":
                self._not_found()
                return
            reply = api._next_reply(request)
            n = api._next_id()
            if reply.status != 200:
                self._json(reply.status, {"type": "error", "error": {
                    "type": reply.error_type, "message": reply.message}})
                return
            body = request.body if isinstance(request.body, dict) else {}
            model = str(body.get("model") or api.model)
            if not body.get("stream"):
                self._json(200, _whole(reply, n, model))
                return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("request-id", f"req_fake{n:04d}")
            self.send_header("connection", "close")
            self.end_headers()
            for chunk in _stream(reply, n, model):
                self.wfile.write(chunk)
            self.wfile.flush()
            self.close_connection = True

    return Handler
