"""Loopback stand-ins for the Anthropic Messages API and the OpenAI Chat Completions API.

    with FakeLLMServer("anthropic") as api:           # or FakeLLMServer("openai")
        api.script.append(skill_call("csv-summary"))  # then the router decides
        ... AsyncAnthropic(base_url=api.base_url, api_key=FAKE_KEY) ...
        api.requests[0].body["tools"]

Each server listens on 127.0.0.1, port 0 (the OS picks a free one), in daemon threads
(`http.server.ThreadingHTTPServer`), and answers non-streaming JSON as the real API does:

- `anthropic`: `POST /v1/messages` -> `{id, type: "message", role, model, content: [text |
  tool_use blocks], stop_reason, stop_sequence, usage: {input_tokens, output_tokens, ...}}`;
  errors as `{"type": "error", "error": {"type", "message"}}` with a `request-id` header.
- `openai`: `POST /v1/chat/completions` -> `{id, object: "chat.completion", created, model,
  choices: [{index, message: {role, content, tool_calls: [{id, type: "function", function:
  {name, arguments}}]}, finish_reason}], usage: {prompt_tokens, completion_tokens, ...}}`;
  errors as `{"error": {"message", "type", "code"}}` with an `x-request-id` header.
- `bedrock`, `vertex`: the Messages API's answers at Amazon Bedrock's `POST /model/<id>/invoke`
  and Vertex AI's `POST /v1/projects/<p>/locations/<r>/publishers/anthropic/models/<id>:
  rawPredict` (the model is in the path, not the body).
- `gemini`: `POST /v1beta/models/<id>:generateContent` -> `{candidates: [{content: {role:
  "model", parts: [text | functionCall]}, finishReason}], usageMetadata: {promptTokenCount,
  candidatesTokenCount, ...}, modelVersion}`; errors as `{"error": {"code", "message",
  "status"}}`.

What to answer is scripted with provider-neutral `Reply` values: `api.script` is a FIFO used
first, then `router(request)` decides (default: a short text answer). Every request is
recorded (`api.requests`: method, path, headers, parsed JSON body), and the server tracks how
many requests it was serving at once (`api.max_in_flight`). `delay_s` makes every request
take that long (to measure concurrency); a `Reply` may add its own delay.
"""

import itertools
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

FAKE_KEY = "sk-fake-llm-test-key-7f3a9c2e51d04b88"
INPUT_TOKENS = 1200
OUTPUT_TOKENS = 40

Provider = Literal["anthropic", "openai", "bedrock", "vertex", "gemini"]
#: Each provider's completion endpoint; a group `model` names the model where the path has it.
ENDPOINTS: dict[str, re.Pattern[str]] = {
    "anthropic": re.compile(r"/v1/messages"),
    "openai": re.compile(r"/v1/chat/completions"),
    "bedrock": re.compile(r"/model/(?P<model>[^/]+)/invoke"),
    "vertex": re.compile(r"/v1/projects/[^/]+/locations/[^/]+/publishers/anthropic/models/"
                         r"(?P<model>[^/:]+):rawPredict"),
    "gemini": re.compile(r"/v1beta/models/(?P<model>[^/:]+):generateContent"),
}


@dataclass(frozen=True)
class ToolUse:
    name: str
    input: Any                 # a dict; for openai, a str is sent verbatim as `arguments`


@dataclass(frozen=True)
class Reply:
    """One scripted answer: text and tool calls, or an HTTP error."""

    text: str = ""
    tool_calls: tuple[ToolUse, ...] = ()
    status: int = 200
    error_type: str = ""
    message: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    input_tokens: int = INPUT_TOKENS
    output_tokens: int = OUTPUT_TOKENS
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    usage: bool = True         # False: the response has no usage block (some local servers)
    delay_s: float = 0.0
    body: Any = None           # sent verbatim instead (with `status`), e.g. a malformed answer


def text_reply(s: str = "Answered directly.", **kw: Any) -> Reply:
    return Reply(text=s, **kw)


def tool_reply(name: str, tool_input: Any, preamble: str = "", **kw: Any) -> Reply:
    return Reply(text=preamble, tool_calls=(ToolUse(name, tool_input),), **kw)


def skill_call(name: str, preamble: str = "", **kw: Any) -> Reply:
    return tool_reply("Skill", {"skill": name}, preamble, **kw)


_ERRORS = {
    400: ("invalid_request_error", "messages: field required"),
    401: ("authentication_error", "invalid x-api-key"),
    429: ("rate_limit_error", "Number of requests has exceeded your rate limit"),
    500: ("api_error", "Internal server error"),
    503: ("api_error", "Service unavailable"),
    529: ("overloaded_error", "Overloaded"),
}


def http_error(status: int, error_type: str = "", message: str = "",
               retry_after: float | None = None) -> Reply:
    default_type, default_message = _ERRORS.get(status, ("api_error", f"error {status}"))
    headers = (("retry-after", f"{retry_after:g}"),) if retry_after is not None else ()
    return Reply(status=status, error_type=error_type or default_type,
                 message=message or default_message, headers=headers)


def rate_limited(retry_after: float | None = 0) -> Reply:
    return http_error(429, retry_after=retry_after)


def overloaded() -> Reply:
    return http_error(529)


def bad_request(message: str = "") -> Reply:
    return http_error(400, message=message)


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: Any

    @property
    def first_user_message(self) -> dict[str, Any]:
        return next(m for m in self.body["messages"] if m.get("role") == "user")

    def first_user_texts(self) -> list[str]:
        """The text parts of the first user message (a str content is one part)."""
        content = self.first_user_message["content"]
        if isinstance(content, str):
            return [content]
        return [part["text"] for part in content if part.get("type") == "text"]

    def prompt_text(self) -> str:
        return "\n".join(self.first_user_texts())


Router = Callable[[Request], Reply]


def default_router(request: Request) -> Reply:
    return text_reply()


@dataclass
class FakeLLMServer:
    provider: Provider
    router: Router = default_router
    delay_s: float = 0.0
    model: str | None = None            # the model the response names; default: the request's
    script: deque[Reply] = field(default_factory=deque)
    requests: list[Request] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self.in_flight = 0
        self.max_in_flight = 0

    # --- lifecycle --------------------------------------------------------------------------

    @property
    def url(self) -> str:
        assert self._server is not None, "not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def base_url(self) -> str:
        """What the SDK's `base_url` should be: `/v1` for OpenAI and Vertex, else the root."""
        return f"{self.url}/v1" if self.provider in ("openai", "vertex") else self.url

    def start(self) -> "FakeLLMServer":
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self), bind_and_activate=False)
        server.daemon_threads = True
        server.request_queue_size = 256      # many clients connect at once in load tests
        server.server_bind()
        server.server_activate()
        self._server = server
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True, name=f"fake-{self.provider}").start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "FakeLLMServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- behaviour --------------------------------------------------------------------------

    def api_requests(self) -> list[Request]:
        """The requests to the completion endpoint, in arrival order."""
        endpoint = ENDPOINTS[self.provider]
        with self._lock:
            return [r for r in self.requests if endpoint.fullmatch(r.path.split("?")[0])]

    def _record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def _next_reply(self, request: Request) -> Reply:
        with self._lock:
            if self.script:
                return self.script.popleft()
        return self.router(request)

    def _enter(self) -> int:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            return next(self._ids)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1


# --- wire formats ---------------------------------------------------------------------------

def anthropic_message(reply: Reply, n: int, model: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for i, call in enumerate(reply.tool_calls):
        content.append({"type": "tool_use", "id": f"toolu_fake{n:04d}_{i}", "name": call.name,
                        "input": call.input})
    message: dict[str, Any] = {
        "id": f"msg_fake{n:04d}", "type": "message", "role": "assistant", "model": model,
        "content": content, "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
        "stop_sequence": None,
    }
    if reply.usage:
        message["usage"] = {"input_tokens": reply.input_tokens,
                            "output_tokens": reply.output_tokens,
                            "cache_creation_input_tokens": reply.cache_write_tokens,
                            "cache_read_input_tokens": reply.cache_read_tokens,
                            "service_tier": "standard"}
    return message


def openai_completion(reply: Reply, n: int, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None,
                               "refusal": None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": f"call_fake{n:04d}_{i}", "type": "function",
             "function": {"name": c.name, "arguments": c.input if isinstance(c.input, str)
                          else json.dumps(c.input)}}
            for i, c in enumerate(reply.tool_calls)]
    completion: dict[str, Any] = {
        "id": f"chatcmpl-fake{n:04d}", "object": "chat.completion", "created": 1764115200,
        "model": model, "system_fingerprint": "fp_fake",
        "choices": [{"index": 0, "message": message, "logprobs": None,
                     "finish_reason": "tool_calls" if reply.tool_calls else "stop"}],
    }
    if reply.usage:
        completion["usage"] = {
            "prompt_tokens": reply.input_tokens, "completion_tokens": reply.output_tokens,
            "total_tokens": reply.input_tokens + reply.output_tokens,
            "prompt_tokens_details": {"cached_tokens": reply.cache_read_tokens},
            "completion_tokens_details": {"reasoning_tokens": 0}}
    return completion


def gemini_response(reply: Reply, n: int, model: str) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"text": reply.text}] if reply.text else []
    parts += [{"functionCall": {"name": c.name, "args": c.input}} for c in reply.tool_calls]
    response: dict[str, Any] = {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP",
                        "index": 0}],
        "modelVersion": model, "responseId": f"resp_fake{n:04d}"}
    if reply.usage:
        response["usageMetadata"] = {
            "promptTokenCount": reply.input_tokens + reply.cache_read_tokens,
            "candidatesTokenCount": reply.output_tokens,
            "totalTokenCount": reply.input_tokens + reply.cache_read_tokens
            + reply.output_tokens,
            **({"cachedContentTokenCount": reply.cache_read_tokens}
               if reply.cache_read_tokens else {})}
    return response


_GOOGLE_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
                  429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}


def _handler(api: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    endpoint = ENDPOINTS[api.provider]
    id_header = {"openai": "x-request-id", "bedrock": "x-amzn-requestid",
                 "gemini": "x-goog-request-id"}.get(api.provider, "request-id")

    class Handler(BaseHTTPRequestHandler):
        # headers and body leave at once: with Nagle on, each answer waited ~40 ms for the
        # client's delayed ACK
        disable_nagle_algorithm = True
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

        def _json(self, status: int, payload: dict[str, Any], n: int,
                  headers: tuple[tuple[str, str], ...] = ()) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.send_header(id_header, f"req_fake{n:04d}")
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, error_type: str, message: str, n: int,
                   headers: tuple[tuple[str, str], ...] = ()) -> None:
            if api.provider in ("anthropic", "bedrock", "vertex"):
                payload: dict[str, Any] = {"type": "error", "error": {
                    "type": error_type, "message": message}}
            elif api.provider == "gemini":
                payload = {"error": {"code": status, "message": message,
                                     "status": _GOOGLE_STATUS.get(status, "UNKNOWN")}}
            else:
                payload = {"error": {"message": message, "type": error_type, "param": None,
                                     "code": error_type}}
            self._json(status, payload, n, headers)

        def do_GET(self) -> None:
            self._read()
            self._error(404, "not_found_error", f"no such endpoint: {self.path}", 0)

        def do_POST(self) -> None:
            request = self._read()
            n = api._enter()
            try:
                found = endpoint.fullmatch(self.path.split("?")[0])
                if found is None:
                    self._error(404, "not_found_error", f"no such endpoint: {self.path}", n)
                    return
                reply = api._next_reply(request)
                if api.delay_s or reply.delay_s:
                    time.sleep(api.delay_s + reply.delay_s)
                if reply.body is not None:
                    self._json(reply.status, reply.body, n, reply.headers)
                    return
                if reply.status != 200:
                    self._error(reply.status, reply.error_type, reply.message, n, reply.headers)
                    return
                body = request.body if isinstance(request.body, dict) else {}
                in_path = found.groupdict().get("model")
                model = api.model or str(body.get("model") or in_path or "fake-model")
                wire = {"openai": openai_completion, "gemini": gemini_response}
                payload = wire.get(api.provider, anthropic_message)(reply, n, model)
                self._json(200, payload, n, reply.headers)
            finally:
                api._leave()

    return Handler
