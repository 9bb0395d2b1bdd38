"""A parser of Claude Code's `--output-format stream-json --verbose` output (NDJSON).

Pure: lines in, facts out, no I/O. One JSON object per line; blank lines and lines that do
not start with `{` (the CLI can print e.g. `[SandboxDebug]` to stdout) are skipped, and a
line that is not valid JSON, or not an object, is counted in `bad_lines` and skipped, so a
torn or garbled transcript still yields what it holds. Unknown event types and keys are
ignored. The shapes are those of CLI 2.1.332 (see `tests/fixtures/claude-stream/`):

- `system/init`: `skills` (what the model can see), `tools`, `model`, `claude_code_version`.
- `assistant`: one line per content block; `tool_use` blocks are the tool calls. Only calls
  with `parent_tool_use_id` null are the session's own (the rest are subagents').
  An API failure is a synthetic assistant message (`is_api_error_message`, `api_error_status`).
- `stream_event` (with `--include-partial-messages`): raw SSE events; a `tool_use` block seen
  here but never completed in an `assistant` line (a killed run) still counts as a call.
- `system/permission_denied` and `result.permission_denials`: refused calls.
- `system/api_retry`: a retried request.
- `result`: usage, cost, turns, `is_error`. An API error arrives as `subtype: "success"` with
  `is_error: true`, so `is_error` is what to check.

`--output-format json` prints only the result object, on one line: it parses the same way.
"""

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

#: What the CLI's `result.subtype` is when the run stopped at a limit ix set on purpose.
LIMIT_SUBTYPES = frozenset({"error_max_turns", "error_max_budget_usd"})
#: `terminal_reason`s that mean the Messages API refused or failed the request.
API_ERROR_REASONS = frozenset({"api_error", "prompt_too_long"})


@dataclass(frozen=True)
class ToolUse:
    """One tool call of the session itself (not of a subagent), in the order made."""

    id: str
    name: str
    input: dict[str, Any]


@dataclass(frozen=True)
class Denial:
    """A tool call the CLI refused (permission), from the event or the result's list."""

    tool_name: str
    tool_use_id: str
    input: dict[str, Any] | None = None
    message: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"tool_name": self.tool_name, "tool_use_id": self.tool_use_id}
        if self.input is not None:
            out["input"] = self.input
        if self.message:
            out["message"] = self.message
        return out


@dataclass(frozen=True)
class ApiRetry:
    attempt: int | None
    max_retries: int | None
    retry_delay_ms: float | None
    error_status: int | None
    error: str | None

    def as_dict(self) -> dict[str, Any]:
        return {"attempt": self.attempt, "max_retries": self.max_retries,
                "retry_delay_ms": self.retry_delay_ms, "error_status": self.error_status,
                "error": self.error}


@dataclass(frozen=True)
class ApiErrorMessage:
    """The CLI's synthetic assistant message that stands for a failed API request."""

    status: int | None
    error: str | None        # the CLI's category: "invalid_request", "server_error", ...
    error_type: str | None   # the API's error type: "overloaded_error", ...
    text: str


@dataclass(frozen=True)
class StreamResult:
    """Everything a transcript says that ix records."""

    tool_uses: tuple[ToolUse, ...] = ()
    denied: tuple[Denial, ...] = ()
    init_skills: tuple[str, ...] | None = None
    init_tools: tuple[str, ...] | None = None
    model: str | None = None
    claude_code_version: str | None = None
    session_id: str | None = None
    assistant_text: str = ""
    result_text: str | None = None
    has_result: bool = False
    subtype: str | None = None
    is_error: bool = False
    terminal_reason: str | None = None
    stop_reason: str | None = None
    api_error_status: int | None = None
    api_error_type: str | None = None
    api_errors: tuple[ApiErrorMessage, ...] = ()
    api_retries: tuple[ApiRetry, ...] = ()
    errors: tuple[str, ...] = ()
    tokens_input: int = 0          # uncached input tokens (the API's `input_tokens`)
    tokens_output: int = 0
    tokens_cache_read: int = 0
    tokens_cache_creation: int = 0
    cost_usd: float = 0.0
    duration_ms: int = 0
    duration_api_ms: int = 0
    num_turns: int | None = None
    lines: int = 0                 # JSON objects read
    bad_lines: int = 0             # lines that looked like JSON but were not an object

    @property
    def text(self) -> str:
        """The final answer: the result's text, else what the assistant wrote."""
        return self.result_text if self.result_text is not None else self.assistant_text

    @property
    def tokens_input_total(self) -> int:
        """All input tokens the model read: uncached plus cache reads and cache writes."""
        return self.tokens_input + self.tokens_cache_read + self.tokens_cache_creation

    @property
    def skills_invoked(self) -> tuple[str, ...]:
        """`input.skill` of every Skill call, in order (`plugin:skill` kept as written)."""
        return tuple(str(t.input["skill"]) for t in self.tool_uses
                     if t.name == "Skill" and isinstance(t.input.get("skill"), str))

    @property
    def first_tool(self) -> str | None:
        return self.tool_uses[0].name if self.tool_uses else None

    @property
    def denied_ids(self) -> frozenset[str]:
        return frozenset(d.tool_use_id for d in self.denied)

    @property
    def is_api_error(self) -> bool:
        """The run ended because a Messages API request failed (after the CLI's retries)."""
        if not self.is_error or self.subtype in LIMIT_SUBTYPES:
            return False
        return (self.api_error_status is not None or self.terminal_reason in API_ERROR_REASONS
                or bool(self.api_errors))

    @property
    def error_status(self) -> int | None:
        """The HTTP status of the API failure, from the result or the synthetic message."""
        if self.api_error_status is not None:
            return self.api_error_status
        for e in reversed(self.api_errors):
            if e.status is not None:
                return e.status
        return None


@dataclass
class _Pending:
    """A tool_use block seen in partial-message events, not (yet) in an assistant line."""

    id: str
    name: str
    json_parts: list[str] = field(default_factory=list)


class StreamParser:
    """Feed lines one at a time (`feed`), then `result()`; `parse_stream` does both."""

    def __init__(self) -> None:
        self._tools: dict[str, ToolUse] = {}        # insertion order = call order
        self._pending: dict[str, _Pending] = {}
        self._block_ids: dict[int, str] = {}         # partial messages: index -> tool id
        self._denied: dict[str, Denial] = {}
        self._texts: list[str] = []
        self._usage_by_message: dict[str, dict[str, Any]] = {}
        self._api_errors: list[ApiErrorMessage] = []
        self._retries: list[ApiRetry] = []
        self._init: dict[str, Any] | None = None
        self._result: dict[str, Any] | None = None
        self.lines = 0
        self.bad_lines = 0

    # --- input ------------------------------------------------------------------------------

    def feed(self, line: str | bytes) -> None:
        if isinstance(line, bytes):
            line = line.decode("utf-8", "replace")
        line = line.strip()
        if not line.startswith("{"):
            return
        try:
            event = json.loads(line)
        except ValueError:
            self.bad_lines += 1
            return
        if not isinstance(event, dict):
            self.bad_lines += 1
            return
        self.lines += 1
        try:
            self._event(event)
        except (TypeError, ValueError, AttributeError, KeyError):
            self.bad_lines += 1  # right JSON, wrong shape: keep what came before

    def _event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "assistant":
            self._assistant(event)
        elif kind == "stream_event":
            self._stream_event(event)
        elif kind == "system":
            self._system(event)
        elif kind == "result":
            self._result = event
            for d in _list(event.get("permission_denials")):
                if isinstance(d, dict):
                    self._deny(d.get("tool_name"), d.get("tool_use_id"),
                               tool_input=d.get("tool_input"))

    def _system(self, event: dict[str, Any]) -> None:
        subtype = event.get("subtype")
        if subtype == "init":
            self._init = event
        elif subtype == "permission_denied":
            self._deny(event.get("tool_name"), event.get("tool_use_id"),
                       message=event.get("message"))
        elif subtype == "api_retry":
            self._retries.append(ApiRetry(
                attempt=_int(event.get("attempt")), max_retries=_int(event.get("max_retries")),
                retry_delay_ms=_num(event.get("retry_delay_ms")),
                error_status=_int(event.get("error_status")), error=_str(event.get("error"))))

    def _assistant(self, event: dict[str, Any]) -> None:
        message = event.get("message")
        if not isinstance(message, dict):
            return
        top = event.get("parent_tool_use_id") is None
        msg_id = message.get("id")
        usage = message.get("usage")
        if isinstance(msg_id, str) and isinstance(usage, dict):
            self._usage_by_message[msg_id] = usage
        blocks = [b for b in _list(message.get("content")) if isinstance(b, dict)]
        if event.get("is_api_error_message"):
            self._api_errors.append(ApiErrorMessage(
                status=_int(event.get("api_error_status")), error=_str(event.get("error")),
                error_type=_str(event.get("api_error_type")),
                text="".join(str(b.get("text") or "") for b in blocks if b.get("type") == "text"),
            ))
            return
        if not top:
            return
        for block in blocks:
            if block.get("type") == "tool_use":
                tool_id = str(block.get("id") or f"_anon{len(self._tools)}")
                tool_input = block.get("input")
                self._tools[tool_id] = ToolUse(
                    id=tool_id, name=str(block.get("name") or ""),
                    input=tool_input if isinstance(tool_input, dict) else {})
                self._pending.pop(tool_id, None)
            elif block.get("type") == "text" and isinstance(block.get("text"), str):
                self._texts.append(block["text"])

    def _stream_event(self, event: dict[str, Any]) -> None:
        if event.get("parent_tool_use_id") is not None:
            return
        raw = event.get("event")
        if not isinstance(raw, dict):
            return
        kind = raw.get("type")
        if kind == "message_start":
            self._block_ids.clear()
        elif kind == "content_block_start":
            block = raw.get("content_block")
            if isinstance(block, dict) and block.get("type") == "tool_use":
                tool_id = str(block.get("id") or "")
                index = _int(raw.get("index"))
                if tool_id and index is not None:
                    self._block_ids[index] = tool_id
                    if tool_id not in self._tools:
                        self._pending[tool_id] = _Pending(tool_id, str(block.get("name") or ""))
                        # a placeholder keeps the call's place in the order
                        self._tools[tool_id] = ToolUse(tool_id, self._pending[tool_id].name, {})
        elif kind == "content_block_delta":
            delta = raw.get("delta")
            index = _int(raw.get("index"))
            target = self._block_ids.get(index) if index is not None else None
            if isinstance(delta, dict) and delta.get("type") == "input_json_delta" and \
                    target in self._pending:
                self._pending[target].json_parts.append(str(delta.get("partial_json") or ""))

    def _deny(self, tool_name: Any, tool_use_id: Any, *, tool_input: Any = None,
              message: Any = None) -> None:
        if not isinstance(tool_use_id, str):
            return
        old = self._denied.get(tool_use_id)
        self._denied[tool_use_id] = Denial(
            tool_name=str(tool_name or (old.tool_name if old else "")),
            tool_use_id=tool_use_id,
            input=tool_input if isinstance(tool_input, dict) else (old.input if old else None),
            message=_str(message) or (old.message if old else None),
        )

    # --- output -----------------------------------------------------------------------------

    def result(self) -> StreamResult:
        tools = []
        for tool_id, use in self._tools.items():
            pending = self._pending.get(tool_id)
            if pending is not None:  # never completed: take what the deltas said
                try:
                    parsed = json.loads("".join(pending.json_parts) or "{}")
                except ValueError:
                    parsed = {}
                use = ToolUse(tool_id, pending.name, parsed if isinstance(parsed, dict) else {})
            tools.append(use)
        init = self._init or {}
        res = self._result or {}
        usage = res.get("usage") if isinstance(res.get("usage"), dict) else None
        if usage is None:  # no result line: add up what the assistant messages reported
            usage = {}
            for u in self._usage_by_message.values():
                for key in ("input_tokens", "output_tokens", "cache_read_input_tokens",
                            "cache_creation_input_tokens"):
                    usage[key] = usage.get(key, 0) + (_int(u.get(key)) or 0)
        result_text = res.get("result")
        return StreamResult(
            tool_uses=tuple(tools),
            denied=tuple(self._denied.values()),
            init_skills=_strs(init.get("skills")) if self._init is not None else None,
            init_tools=_strs(init.get("tools")) if self._init is not None else None,
            model=_str(init.get("model")),
            claude_code_version=_str(init.get("claude_code_version")),
            session_id=_str(init.get("session_id")) or _str(res.get("session_id")),
            assistant_text="\n".join(t for t in self._texts if t),
            result_text=result_text if isinstance(result_text, str) else None,
            has_result=self._result is not None,
            subtype=_str(res.get("subtype")),
            is_error=res.get("is_error") is True,
            terminal_reason=_str(res.get("terminal_reason")),
            stop_reason=_str(res.get("stop_reason")),
            api_error_status=_int(res.get("api_error_status")),
            api_error_type=_str(res.get("api_error_type")),
            api_errors=tuple(self._api_errors),
            api_retries=tuple(self._retries),
            errors=tuple(str(e) for e in _list(res.get("errors"))),
            tokens_input=_int(usage.get("input_tokens")) or 0,
            tokens_output=_int(usage.get("output_tokens")) or 0,
            tokens_cache_read=_int(usage.get("cache_read_input_tokens")) or 0,
            tokens_cache_creation=_int(usage.get("cache_creation_input_tokens")) or 0,
            cost_usd=_num(res.get("total_cost_usd")) or 0.0,
            duration_ms=int(_num(res.get("duration_ms")) or 0),
            duration_api_ms=int(_num(res.get("duration_api_ms")) or 0),
            num_turns=_int(res.get("num_turns")),
            lines=self.lines,
            bad_lines=self.bad_lines,
        )


def parse_stream(lines: Iterable[str | bytes] | str | bytes) -> StreamResult:
    """Parse a transcript: an iterable of lines, or the whole text at once."""
    if isinstance(lines, bytes):
        lines = lines.decode("utf-8", "replace")
    if isinstance(lines, str):
        lines = lines.splitlines()
    parser = StreamParser()
    for line in lines:
        parser.feed(line)
    return parser.result()


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _strs(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in _list(value) if isinstance(v, str))


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
