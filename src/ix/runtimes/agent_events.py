"""The event mapping of `agent-cli`: which JSON events of an agent CLI are text, tool calls,
tool results, denials, usage, turns and the end, and where in each event the facts are.

Pure: the mapping is data (validated by pydantic, so a bad one is a configuration error that
names the field), and `read_events` turns a CLI's output lines into an `AgentTranscript`.

Every line of output that is a JSON object is an event; any other line is kept in the trace
and counted (`other_lines`), never an error. Each kind of the mapping holds a list of rules;
for each event the first rule of a kind that matches counts (an event may count for several
kinds: a final event is often usage and end at once). A rule:

- `match`: `{path: value}`, all of which the event must hold (a list of values: any of
  them; `null` also matches a path that is absent);
- `each`: a path to a list in the event: the rule then applies to each element of it that
  holds `where` (`{path: value}`, as `match`), and its other paths are read in the element;
- paths are dotted (`item.command`, `message.content.0.text`; a number indexes a list, -1
  the last item; `.` is the whole event or element). A key with a dot in it cannot be named.
"""

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field

from ix.domain.model import Model

_SEGMENT = re.compile(r"-?\d+|[^.\s][^.]*")
_MISSING = object()


def _path(value: str) -> str:
    if value == ".":
        return value
    if not value or any(not part or part != part.strip() for part in value.split(".")):
        raise ValueError(f"{value!r} is not a dotted path (`item.text`, `content.0.text`, "
                         "or `.` for the whole event)")
    return value


#: A dotted path into an event (`usage.input_tokens`); `.` is the whole event.
EventPath = Annotated[str, AfterValidator(_path)]
def _wanted(value: Any) -> Any:
    for v in value if isinstance(value, list) else [value]:
        if v is not None and not isinstance(v, str | int | float | bool):
            raise ValueError(f"{v!r}: a condition is a string, a number, true, false or "
                             "null, or a list of them (any of which)")
    return value


#: `{path: value}` the event (or element) must hold; a list is any of its values.
Conditions = dict[EventPath, Annotated[Any, AfterValidator(_wanted)]]


class Rule(Model):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    match: Conditions = Field(default_factory=dict)
    each: EventPath | None = None
    where: Conditions = Field(default_factory=dict)


class TextRule(Rule):
    text: EventPath


class ToolCallRule(Rule):
    name: EventPath
    #: a path to the input object, or `{key: path}` to build one
    input: EventPath | dict[str, EventPath] | None = None
    id: EventPath | None = None
    #: when the call's event carries its result too
    result: EventPath | None = None


class ToolResultRule(Rule):
    output: EventPath
    #: the id of the call it answers (else: the last call without a result)
    id: EventPath | None = None


class UsageRule(Rule):
    """Added up over every matching event; a list of paths is added up too."""

    input_tokens: EventPath | list[EventPath] | None = None
    output_tokens: EventPath | list[EventPath] | None = None
    cost_usd: EventPath | list[EventPath] | None = None


class EndRule(Rule):
    text: EventPath | None = None
    #: the run failed when this path holds a true value (a non-empty object counts)
    is_error: EventPath | None = None
    error: EventPath | None = None
    turns: EventPath | None = None


class EventMapping(Model):
    """What each kind of event is; `content`: the answer is the end event's `text` if it has
    one, else every text event's text joined by newlines (`joined`) or the last one."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    text: list[TextRule] = Field(default_factory=list)
    tool_call: list[ToolCallRule] = Field(default_factory=list)
    tool_result: list[ToolResultRule] = Field(default_factory=list)
    #: calls the CLI refused; without rules, the observation keeps no list of denials
    denied: list[ToolCallRule] = Field(default_factory=list)
    usage: list[UsageRule] = Field(default_factory=list)
    #: each matching event is one turn (when the end event reports no `turns`)
    turn: list[Rule] = Field(default_factory=list)
    #: how ix knows the CLI finished: at least one rule
    end: list[EndRule] = Field(min_length=1)
    content: Literal["joined", "last"] = "joined"


# --------------------------------------------------------------------------- reading


def resolve(data: Any, path: str) -> Any:
    """The value at a dotted path, or `_MISSING`."""
    if path == ".":
        return data
    for part in path.split("."):
        if isinstance(data, dict):
            data = data.get(part, _MISSING)
        elif isinstance(data, list) and re.fullmatch(r"-?\d+", part):
            index = int(part)
            data = data[index] if -len(data) <= index < len(data) else _MISSING
        else:
            return _MISSING
        if data is _MISSING:
            return data
    return data


def _holds(data: Any, conditions: Mapping[str, Any]) -> bool:
    for path, wanted in conditions.items():
        value = resolve(data, path)
        if value is _MISSING:
            value = None
        options = wanted if isinstance(wanted, list) else [wanted]
        if not any(_same(value, w) for w in options):
            return False
    return True


def _same(a: Any, b: Any) -> bool:
    """JSON equality: `true` is not `1`."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return bool(a == b)


def _targets(rule: Rule, event: dict[str, Any]) -> list[Any]:
    """What a rule reads in an event: the event, the elements of `each`, or nothing."""
    if not _holds(event, rule.match):
        return []
    if rule.each is None:
        return [event]
    items = resolve(event, rule.each)
    return [x for x in items if _holds(x, rule.where)] if isinstance(items, list) else []


def _text(value: Any) -> str | None:
    if value is _MISSING or value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _number(data: Any, paths: str | list[str] | None) -> float:
    total = 0.0
    for path in [paths] if isinstance(paths, str) else paths or ():
        value = resolve(data, path)
        if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
            total += value
    return total


def _input(data: Any, spec: str | dict[str, str] | None) -> dict[str, Any]:
    if spec is None:
        return {}
    if isinstance(spec, dict):
        return {k: v for k, p in spec.items() if (v := resolve(data, p)) is not _MISSING}
    value = resolve(data, spec)
    if value is _MISSING or value is None:
        return {}
    return value if isinstance(value, dict) else {"value": value}


@dataclass
class Call:
    name: str
    input: dict[str, Any]
    id: str | None = None
    result: str | None = None


@dataclass
class AgentTranscript:
    """What a CLI's events said, in the order said."""

    texts: list[str] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    denied: list[Call] | None = None
    tokens_input: int = 0
    tokens_output: int = 0
    cost_usd: float = 0.0
    counted_turns: int = 0
    ended: bool = False
    end_text: str | None = None
    is_error: bool = False
    error: str | None = None
    turns: int | None = None
    events: int = 0
    other_lines: int = 0

    def content(self, mode: str) -> str:
        if self.end_text is not None:
            return self.end_text
        if mode == "last":
            return self.texts[-1] if self.texts else ""
        return "\n".join(t for t in self.texts if t)


def read_events(lines: Iterable[str], mapping: EventMapping) -> AgentTranscript:
    """Read a CLI's output, line by line, with `mapping`."""
    out = AgentTranscript(denied=[] if mapping.denied else None)
    for line in lines:
        stripped = line.strip()
        try:
            event = json.loads(stripped) if stripped.startswith("{") else None
        except ValueError:
            event = None
        if not isinstance(event, dict):
            out.other_lines += 1
            continue
        out.events += 1
        _event(event, mapping, out)
    if out.turns is None and mapping.turn:
        out.turns = out.counted_turns
    return out


def _first(rules: Iterable[Any], event: dict[str, Any]) -> tuple[Any, list[Any]]:
    for rule in rules:
        targets = _targets(rule, event)
        if targets:
            return rule, targets
    return None, []


def _event(event: dict[str, Any], mapping: EventMapping, out: AgentTranscript) -> None:
    rule, targets = _first(mapping.text, event)
    for t in targets:
        text = _text(resolve(t, rule.text))
        if text is not None:
            out.texts.append(text)
    rule, targets = _first(mapping.tool_call, event)
    for t in targets:
        out.calls.append(_call(rule, t))
    rule, targets = _first(mapping.denied, event)
    if out.denied is not None:
        out.denied += [_call(rule, t) for t in targets]
    rule, targets = _first(mapping.tool_result, event)
    for t in targets:
        _answer(out.calls, _text(resolve(t, rule.id)) if rule.id else None,
                _text(resolve(t, rule.output)) or "")
    rule, targets = _first(mapping.usage, event)
    for t in targets:
        out.tokens_input += int(_number(t, rule.input_tokens))
        out.tokens_output += int(_number(t, rule.output_tokens))
        out.cost_usd += _number(t, rule.cost_usd)
    out.counted_turns += len(_first(mapping.turn, event)[1])
    rule, targets = _first(mapping.end, event)
    for t in targets:  # the last end event says how the run ended
        out.ended = True
        out.end_text = _text(resolve(t, rule.text)) if rule.text else None
        flag = resolve(t, rule.is_error) if rule.is_error else None
        out.is_error = flag is not _MISSING and bool(flag)
        out.error = _text(resolve(t, rule.error)) if rule.error else None
        turns = resolve(t, rule.turns) if rule.turns else None
        if isinstance(turns, int) and not isinstance(turns, bool) and turns >= 0:
            out.turns = turns


def _call(rule: ToolCallRule, data: Any) -> Call:
    return Call(name=_text(resolve(data, rule.name)) or "", input=_input(data, rule.input),
                id=_text(resolve(data, rule.id)) if rule.id else None,
                result=_text(resolve(data, rule.result)) if rule.result else None)


def _answer(calls: list[Call], call_id: str | None, output: str) -> None:
    """Attach a result to the call it answers: by id, else the last one still unanswered."""
    for call in reversed(calls):
        if (call.id == call_id) if call_id is not None else call.result is None:
            call.result = output
            return
