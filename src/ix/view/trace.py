"""A trial's transcript as a list of events the trace page shows: text, tool calls with their
inputs, tool results, tokens, timing and errors.

Understands the transcripts ix's runtimes write — Claude Code's stream-json lines
(`claude-code`), and the request / retry / response records of `anthropic` and `openai` —
and shows any other line as a generic event with its JSON, and a line that does not decode
(or nests too deep to show) as a damaged one. Pure: data in, data out; the templates escape
every string.
"""

import contextlib
import json
from dataclasses import dataclass, field
from typing import Any

from ix.api.trials import EXCERPT_CHARS, DamagedLine


@dataclass
class Event:
    """One row of the trace page."""

    kind: str                     # text, thinking, tool_call, tool_result, system, retry,
    #                               error, result, request, response, stream, other
    title: str
    text: str | None = None       # prose: an answer, a tool's output, an error message
    data: str | None = None       # pretty JSON: a tool call's input, a request's messages
    facts: list[tuple[str, str]] = field(default_factory=list)   # tokens, timing, ids
    error: bool = False
    raw: str = ""                 # the whole line, pretty JSON


#: Values nested deeper are shown on one line: indenting them multiplies their size.
INDENT_DEPTH = 32
#: A transcript line nested deeper is shown as damaged, not as its JSON.
MAX_DEPTH = 200


def deeper_than(value: Any, limit: int) -> bool:
    """Whether lists and mappings nest more than `limit` levels in `value` (walked without
    recursion, so any depth is measured)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(
            item, list) else None
        if children is None:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def pretty(value: Any) -> str:
    """JSON for people: indented (on one line when nested deep), non-ASCII kept (the template
    escapes it). Never raises: what cannot be shown says so."""
    if isinstance(value, str):
        return value
    indent = None if deeper_than(value, INDENT_DEPTH) else 2
    try:
        return json.dumps(value, indent=indent, ensure_ascii=False, default=str)
    except (RecursionError, ValueError):
        return "(nested too deep to show)"


def _text(value: Any) -> str:
    """A tool result's or message's content as text (strings, or lists of text blocks)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for block in value:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
            else:
                parts.append(pretty(block))
        return "\n".join(parts)
    return pretty(value) if value is not None else ""


def _fact(facts: list[tuple[str, str]], label: str, value: Any) -> None:
    if value is not None and value != "":
        facts.append((label, value if isinstance(value, str) else pretty(value)))


def _usage_facts(usage: Any) -> list[tuple[str, str]]:
    facts: list[tuple[str, str]] = []
    if isinstance(usage, dict):
        for label, key in (("input tokens", "input_tokens"), ("output tokens", "output_tokens"),
                           ("cache read", "cache_read_input_tokens"),
                           ("cache write", "cache_creation_input_tokens"),
                           ("prompt tokens", "prompt_tokens"),
                           ("completion tokens", "completion_tokens")):
            if usage.get(key):
                _fact(facts, label, usage[key])
    return facts


def _blocks(content: Any, raw: str, role: str, base: list[tuple[str, str]]) -> list[Event]:
    """Anthropic-style content blocks: text, thinking, tool_use, tool_result."""
    if isinstance(content, str):
        return [Event("text", role, text=content, facts=list(base), raw=raw)]
    events: list[Event] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        facts = list(base) if not events else []
        if kind == "text":
            events.append(Event("text", role, text=str(block.get("text", "")), facts=facts,
                                raw=raw))
        elif kind == "thinking":
            events.append(Event("thinking", f"{role} thinking",
                                text=str(block.get("thinking", "")), facts=facts, raw=raw))
        elif kind in ("tool_use", "server_tool_use"):
            _fact(facts, "id", block.get("id"))
            events.append(Event("tool_call", f"tool call: {block.get('name')}",
                                data=pretty(block.get("input", {})), facts=facts, raw=raw))
        elif kind == "tool_result":
            _fact(facts, "for", block.get("tool_use_id"))
            failed = bool(block.get("is_error"))
            events.append(Event("tool_result", "tool error" if failed else "tool result",
                                text=_text(block.get("content")), facts=facts, error=failed,
                                raw=raw))
        else:
            events.append(Event("other", f"{role}: {kind}", data=pretty(block), facts=facts,
                                raw=raw))
    return events


def _claude_line(line: dict[str, Any], raw: str) -> list[Event]:
    """One line of Claude Code's `--output-format stream-json`."""
    kind = line.get("type")
    subtype = line.get("subtype")
    facts: list[tuple[str, str]] = []
    _fact(facts, "at", line.get("timestamp"))
    if kind == "system" and subtype == "init":
        for label, key in (("model", "model"), ("cwd", "cwd"), ("permission mode",
                                                               "permissionMode"),
                           ("version", "claude_code_version")):
            _fact(facts, label, line.get(key))
        tools, skills = line.get("tools"), line.get("skills")
        if isinstance(tools, list):
            _fact(facts, "tools", ", ".join(map(str, tools)))
        if isinstance(skills, list):
            _fact(facts, "skills", ", ".join(map(str, skills)) or "none")
        return [Event("system", "session start", facts=facts, raw=raw)]
    if kind == "system" and subtype == "api_retry":
        for label, key in (("attempt", "attempt"), ("of", "max_retries"),
                           ("status", "error_status"), ("delay ms", "retry_delay_ms")):
            _fact(facts, label, line.get(key))
        return [Event("retry", "API retry", text=str(line.get("error") or ""), facts=facts,
                      error=True, raw=raw)]
    if kind == "system":
        return [Event("error" if "denied" in str(subtype) else "system",
                      f"system: {subtype}", data=pretty(line), facts=facts,
                      error="denied" in str(subtype), raw=raw)]
    if kind in ("assistant", "user"):
        message: dict[str, Any] = line["message"] if isinstance(line.get("message"),
                                                                 dict) else {}
        facts += _usage_facts(message.get("usage"))
        _fact(facts, "model", message.get("model") if kind == "assistant" else None)
        events = _blocks(message.get("content"), raw, str(message.get("role") or kind), facts)
        if line.get("error") or message.get("model") == "<synthetic>":
            for event in events:
                event.error = True
                event.kind = "error" if event.kind == "text" else event.kind
            if not events:
                events.append(Event("error", "API error", text=str(line.get("error")),
                                    facts=facts, error=True, raw=raw))
        return events
    if kind == "result" or "total_cost_usd" in line or "num_turns" in line:
        for label, key in (("turns", "num_turns"), ("duration ms", "duration_ms"),
                           ("API ms", "duration_api_ms"), ("cost USD", "total_cost_usd"),
                           ("stop", "stop_reason"), ("ended", "terminal_reason")):
            _fact(facts, label, line.get(key))
        facts += _usage_facts(line.get("usage"))
        denials = line.get("permission_denials")
        if denials:
            _fact(facts, "denied", denials)
        failed = bool(line.get("is_error"))
        text = line.get("result")
        if not isinstance(text, str):
            errors = line.get("errors")
            text = "\n".join(map(str, errors)) if isinstance(errors, list) else None
        return [Event("result", f"result: {subtype or ('error' if failed else 'done')}",
                      text=text, facts=facts, error=failed, raw=raw)]
    if kind == "stream_event":
        inner: dict[str, Any] = line["event"] if isinstance(line.get("event"), dict) else {}
        return [Event("stream", f"stream: {inner.get('type')}", data=pretty(inner),
                      facts=facts, raw=raw)]
    return []


def _http_record(line: dict[str, Any], raw: str) -> list[Event]:
    """A request, retry or response record of the `anthropic` and `openai` runtimes."""
    kind = line.get("type")
    body: dict[str, Any] = line["body"] if isinstance(line.get("body"), dict) else {}
    facts: list[tuple[str, str]] = []
    if kind == "request":
        _fact(facts, "url", line.get("url"))
        _fact(facts, "model", body.get("model"))
        tools = body.get("tools")
        if isinstance(tools, list):
            names = [str(t.get("name") or (t.get("function") or {}).get("name"))
                     for t in tools if isinstance(t, dict)]
            _fact(facts, "tools", ", ".join(names))
        events = [Event("request", "request", facts=facts, raw=raw)]
        if body.get("system"):
            events.append(Event("text", "system", text=_text(body.get("system")), raw=raw))
        for message in body.get("messages") or []:
            if isinstance(message, dict):
                events += _blocks(message.get("content"), raw, str(message.get("role")), [])
        return events
    if kind == "retry":
        for label, key in (("retry", "retry"), ("after s", "retry_after_s")):
            _fact(facts, label, line.get(key))
        return [Event("retry", f"retry: {line.get('kind')}", text=str(line.get("message")),
                      facts=facts, error=True, raw=raw)]
    _fact(facts, "status", line.get("status"))
    _fact(facts, "model", body.get("model"))
    _fact(facts, "stop", body.get("stop_reason"))
    facts += _usage_facts(body.get("usage"))
    events = [Event("response", "response", facts=facts, raw=raw)]
    if "content" in body:
        events += _blocks(body.get("content"), raw, "assistant", [])
    for choice in body.get("choices") or []:
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            continue
        if message.get("content"):
            events.append(Event("text", "assistant", text=_text(message["content"]), raw=raw))
        for call in message.get("tool_calls") or []:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict):
                arguments = function.get("arguments")
                with contextlib.suppress(ValueError):
                    arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
                events.append(Event("tool_call", f"tool call: {function.get('name')}",
                                    data=pretty(arguments), raw=raw))
    return events


def _damaged(number: int, reason: str, excerpt: str = "") -> Event:
    return Event("damaged", f"line {number} is {reason}", text=excerpt or None, error=True)


def trace_events(lines: list[Any]) -> list[Event]:
    """Every line of a transcript as events, in order; nothing is dropped (unknown lines show
    as `other` with their JSON, damaged ones as `damaged` with the start of their text)."""
    events: list[Event] = []
    for number, line in enumerate(lines, start=1):
        if isinstance(line, DamagedLine):
            events.append(_damaged(line.number, line.reason, line.excerpt))
            continue
        if deeper_than(line, MAX_DEPTH):
            events.append(_damaged(number, f"nested more than {MAX_DEPTH} levels deep",
                                   pretty(line)[:EXCERPT_CHARS]))
            continue
        events += _line_events(line)
    return events


def _line_events(line: Any) -> list[Event]:
    """The events of one decoded line."""
    raw = pretty(line)
    found: list[Event] = []
    if isinstance(line, dict):
        if line.get("type") in ("request", "retry", "response") and (
                "body" in line or "retry" in line):
            found = _http_record(line, raw)
        else:
            found = _claude_line(line, raw)
    elif isinstance(line, str):
        found = [Event("text", "text", text=line, raw=line)]
    found = found or [Event("other", str(line.get("type", "line"))
                            if isinstance(line, dict) else "line", data=raw, raw=raw)]
    for event in found[1:]:  # the line is shown once, under its first event
        event.raw = ""
    return found


__all__ = ["Event", "pretty", "trace_events"]
