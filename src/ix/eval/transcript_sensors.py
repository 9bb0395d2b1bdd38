"""Sensors over the whole transcript of a trial, not only its final answer (issue 20).

`tool_sequence`, `tool_count` and `tool_input` read the observation's `tool_calls` (every
call the runtime saw, in the order made: for claude-code the session's own calls, denied
ones included); `turns` reads the turns the runtime reports (`meta.num_turns`), else counts
the assistant messages of the trial's transcript; `denied` reads `meta.denied`, the calls the
runtime refused. Each gives one reading, score 1.0 when it passed and 0.0 when not, with
`details` that say what was seen and numeric `metrics` (docs/sensors.md).
"""

import json
import re
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from ix.domain.errors import ConfigError
from ix.domain.model import Model
from ix.domain.types import Interaction, Reading
from ix.eval.json_path import json_equal, parse_json_path, resolve_json_path, short

#: A tool's name as a runtime reports it (`Bash`, `Skill`, `mcp__github__create_issue`).
ToolName = Annotated[str, Field(min_length=1)]
#: The most call names a reading's `metrics.calls` lists (a long session lists more).
SHOWN_CALLS = 100


def _reading(name: str, passed: bool, details: str, **metrics: Any) -> Reading:
    return Reading(sensor_name=name, passed=passed, score=1.0 if passed else 0.0,
                   metrics=metrics, details=details)


def _field(observation: Any, name: str) -> Any:
    if isinstance(observation, dict):
        return observation.get(name)
    return getattr(observation, name, None)


def tool_calls(observation: Any) -> list[tuple[str, dict[str, Any]]]:
    """(name, input) of every tool call of the observation, in order; calls given as
    mappings (a runtime that returned plain data) count too."""
    out = []
    for call in _field(observation, "tool_calls") or ():
        name = call.get("name") if isinstance(call, dict) else getattr(call, "name", None)
        given = call.get("input") if isinstance(call, dict) else getattr(call, "input", None)
        out.append((str(name or ""), given if isinstance(given, dict) else {}))
    return out


def _names(names: Sequence[str]) -> str:
    return ", ".join(names) if names else "none"


def _arrow(names: Sequence[str]) -> str:
    return " → ".join(names)


# --------------------------------------------------------------------------- tool_sequence

class ToolSequenceOptions(Model):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    expected: Annotated[list[ToolName], Field(min_length=1)]
    mode: Literal["exact", "subsequence"] = "subsequence"
    ignore: list[ToolName] = Field(default_factory=list)


class ToolSequenceSensor:
    """Did the tool calls come in the expected order? `subsequence`: the expected names appear
    in this order, other calls may come between and around them; `exact`: the calls are
    exactly these. Calls of an `ignore`d tool are left out first."""

    name = "tool_sequence"

    def __init__(self, options: ToolSequenceOptions):
        self.expected = tuple(options.expected)
        self.exact = options.mode == "exact"
        self.ignore = frozenset(options.ignore)

    def sense(self, interaction: Interaction) -> list[Reading]:
        calls = [n for n, _ in tool_calls(interaction.observation) if n not in self.ignore]
        shown = calls[:SHOWN_CALLS]
        if self.exact:
            same = 0
            while same < min(len(calls), len(self.expected)) and \
                    calls[same] == self.expected[same]:
                same += 1
            passed = tuple(calls) == self.expected
            if passed:
                details = f"exactly {_arrow(self.expected)}"
            elif same == len(calls):
                details = (f"the calls stop after {same} of {len(self.expected)} "
                           f"(calls: {_names(calls)})")
            elif same == len(self.expected):
                details = (f"{len(calls) - same} call(s) after the expected "
                           f"{_arrow(self.expected)} (calls: {_names(calls)})")
            else:
                details = (f"call {same + 1} is {calls[same]}, expected "
                           f"{self.expected[same]} (calls: {_names(calls)})")
            return [_reading(self.name, passed, details, matched=same,
                             expected=len(self.expected), n_calls=len(calls), calls=shown)]
        matched, at = 0, []
        for i, call in enumerate(calls):
            if matched < len(self.expected) and call == self.expected[matched]:
                matched += 1
                at.append(i + 1)
        passed = matched == len(self.expected)
        if passed:
            where = ", ".join(str(i) for i in at)
            details = f"{_arrow(self.expected)} in order (calls {where} of {len(calls)})"
        elif matched:
            details = (f"{_arrow(self.expected[:matched])} in order, then no "
                       f"{self.expected[matched]} after call {at[-1]} "
                       f"(calls: {_names(calls)})")
        else:
            details = f"no {self.expected[0]} call (calls: {_names(calls)})"
        return [_reading(self.name, passed, details, matched=matched,
                         expected=len(self.expected), n_calls=len(calls), calls=shown)]


# --------------------------------------------------------------------------- tool_count

class ToolCountOptions(Model):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    tool: ToolName
    min: Annotated[int, Field(ge=0)] | None = None
    max: Annotated[int, Field(ge=0)] | None = None


class ToolCountSensor:
    """Was `tool` called at least `min` and at most `max` times? (At least one of them.)"""

    name = "tool_count"

    def __init__(self, options: ToolCountOptions):
        self.tool, self.min, self.max = options.tool, options.min, options.max
        if self.min is None and self.max is None:
            raise ConfigError("give min, max or both (how often `tool` may be called)",
                              field="max")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ConfigError(f"min ({self.min}) is above max ({self.max})", field="min")

    def _allowed(self) -> str:
        if self.min is not None and self.max is not None:
            return f"{self.min}" if self.min == self.max else f"{self.min}-{self.max}"
        return f"at least {self.min}" if self.min is not None else f"at most {self.max}"

    def sense(self, interaction: Interaction) -> list[Reading]:
        count = sum(1 for n, _ in tool_calls(interaction.observation) if n == self.tool)
        low = self.min is not None and count < self.min
        high = self.max is not None and count > self.max
        times = "1 time" if count == 1 else f"{count} times"
        verdict = "too few" if low else "too many" if high else "allowed"
        details = f"{self.tool} called {times} ({verdict}: {self._allowed()})"
        return [_reading(self.name, not (low or high), details, count=count)]


# --------------------------------------------------------------------------- turns

class TurnsOptions(Model):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    max: Annotated[int, Field(ge=1)]


def count_turns(observation: Any) -> tuple[int | None, str]:
    """The agent's turns and where the number comes from: `meta.num_turns` (claude-code) or
    `meta.turns` (any runtime that reports it), else the assistant messages of the trace
    (None, "" when neither says)."""
    meta = _field(observation, "meta")
    if isinstance(meta, dict):
        for key in ("num_turns", "turns"):
            value = meta.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                return value, f"meta.{key}"
    trace = _field(observation, "trace")
    if isinstance(trace, list | tuple):
        counted = _assistant_messages(trace)
        if counted is not None:
            return counted, "assistant messages in the transcript"
    return None, ""


def _assistant_messages(trace: Sequence[Any]) -> int | None:
    """Assistant messages in a transcript: Claude Code's stream (one message may span several
    lines: counted by message id, subagents' left out), an API exchange's responses
    (`{"type": "response", "body": ...}` of the anthropic and openai runtimes), or a list of
    chat messages (`role: assistant`). None when nothing in it is a message."""
    ids: set[str] = set()
    count, seen = 0, False
    for entry in trace:
        if isinstance(entry, str | bytes):
            try:
                entry = json.loads(entry)
            except ValueError:
                continue
        if not isinstance(entry, dict):
            continue
        kind = entry.get("type")
        if kind == "assistant" and isinstance(entry.get("message"), dict):
            seen = True
            if entry.get("parent_tool_use_id") is None and \
                    not entry.get("is_api_error_message"):
                ids.add(str(entry["message"].get("id") or f"_line{len(ids)}"))
        elif kind == "response" and isinstance(entry.get("body"), dict):
            seen = True
            body = entry["body"]
            if body.get("role") == "assistant" or any(
                    isinstance(c, dict) and isinstance(c.get("message"), dict)
                    and c["message"].get("role") == "assistant"
                    for c in body.get("choices") or ()):
                count += 1
        elif "role" in entry:
            seen = True
            count += entry.get("role") == "assistant"
    return len(ids) + count if seen else None


class TurnsSensor:
    """Did the agent finish within `max` turns? A runtime that reports no turns and keeps no
    transcript (command, http, mock) gets no verdict: the reading is n/a (`passed` and
    `metrics.turns` null), left out of the sensor's pass rate, never a fail."""

    name = "turns"

    def __init__(self, options: TurnsOptions):
        self.max = options.max

    def sense(self, interaction: Interaction) -> list[Reading]:
        turns, source = count_turns(interaction.observation)
        if turns is None:
            return [Reading(sensor_name=self.name, passed=None, score=None,
                            metrics={"turns": None},
                            details="n/a: no turns to count: the runtime reports none "
                                    "(meta.num_turns) and the trial has no transcript")]
        passed = turns <= self.max
        details = f"{turns} turn(s) {'<=' if passed else '>'} {self.max} ({source})"
        return [_reading(self.name, passed, details, turns=turns)]


# --------------------------------------------------------------------------- user_goal

class UserGoalOptions(Model):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    #: the goal counts only when reached within this many of the subject's answers
    max_turns: Annotated[int, Field(ge=1)] | None = None


class UserGoalSensor:
    """Did the simulated user reach its goal (`meta.stop` is `goal`, DESIGN.md §11), within
    `max_turns` answers if given? A trial without a simulated user gets no verdict (n/a)."""

    name = "user_goal"

    def __init__(self, options: UserGoalOptions):
        self.max_turns = options.max_turns

    def sense(self, interaction: Interaction) -> list[Reading]:
        meta = _field(interaction.observation, "meta")
        stop = meta.get("stop") if isinstance(meta, dict) else None
        if stop is None:
            return [Reading(sensor_name=self.name, passed=None, metrics={"turns": None},
                            details="n/a: the case has no simulated user (`user:`)")]
        turns = meta.get("turns")
        passed = stop == "goal" and (self.max_turns is None or (
            isinstance(turns, int) and turns <= self.max_turns))
        within = f" within {self.max_turns}" if self.max_turns is not None else ""
        details = f"the user's conversation ended: {stop} after {turns} answer(s)" + (
            f"; the goal counts{within}" if self.max_turns is not None else "")
        return [_reading(self.name, passed, details, turns=turns)]


# --------------------------------------------------------------------------- denied

class DeniedOptions(Model):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    tools: Annotated[list[ToolName], Field(min_length=1)] | None = None


def _denial(item: Any) -> tuple[str, str]:
    """(tool name, what it was asked to do, shortly) of one entry of `meta.denied`."""
    if not isinstance(item, dict):
        return str(item), ""
    name = str(item.get("tool_name") or item.get("name") or "?")
    given = item.get("input")
    for key in ("command", "file_path", "path", "url", "pattern"):
        text = given.get(key) if isinstance(given, dict) else None
        if isinstance(text, str):
            return name, text if len(text) <= 60 else text[:60] + "…"
    return name, ""


class DeniedSensor:
    """Passes when no tool call was denied (`meta.denied`, the calls the runtime refused:
    claude-code's permission denials); with `tools`, only denials of those tools count. A
    runtime that keeps no list of denials (it runs no tools, or cannot refuse one) denied
    nothing: the reading passes and `metrics.reported` is false."""

    name = "denied"

    def __init__(self, options: DeniedOptions):
        self.tools = frozenset(options.tools) if options.tools is not None else None

    def sense(self, interaction: Interaction) -> list[Reading]:
        meta = _field(interaction.observation, "meta")
        listed = meta.get("denied") if isinstance(meta, dict) else None
        if not isinstance(listed, list):
            return [_reading(self.name, True, "no denied tool call (the runtime keeps no "
                             "list of denials: meta.denied is absent)", denied=0,
                             reported=False)]
        all_denied = [_denial(d) for d in listed]
        denied = [d for d in all_denied if self.tools is None or d[0] in self.tools]
        scope = "" if self.tools is None else f" of {', '.join(sorted(self.tools))}"
        if not denied:
            other = len(all_denied)
            tail = f" ({other} of other tools)" if other else ""
            return [_reading(self.name, True, f"no denied tool call{scope}{tail}", denied=0,
                             reported=True)]
        shown = ", ".join(f"{n} ({what})" if what else n for n, what in denied[:5])
        more = f", +{len(denied) - 5} more" if len(denied) > 5 else ""
        return [_reading(self.name, False, f"{len(denied)} tool call(s){scope} denied: "
                         f"{shown}{more}", denied=len(denied), reported=True)]


# --------------------------------------------------------------------------- tool_input

class ToolInputOptions(Model):
    """`json_path` into a named tool's input, and exactly one of `equals`, `contains`,
    `regex` (the matcher's operators; checked when built)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    tool: ToolName
    json_path: Annotated[str, Field(min_length=1)]
    equals: Any = None
    contains: str | None = None
    regex: str | None = None
    which: Literal["any", "all", "first", "last"] = "any"
    case_sensitive: bool = True


class ToolInputSensor:
    """Does the input of `tool`'s calls hold the expected value at `json_path`? `which`: any
    call, all of them, the first or the last. `contains` and `regex` read a string value as
    it is and any other value as its JSON text; `equals` is JSON equality (the matcher's)."""

    name = "tool_input"

    def __init__(self, options: ToolInputOptions):

        given = [k for k in ("equals", "contains", "regex") if k in options.model_fields_set
                 and (k == "equals" or getattr(options, k) is not None)]
        if len(given) != 1:
            field = given[1] if len(given) > 1 else "equals"
            raise ConfigError("give exactly one of equals, contains, regex"
                              + (f" (got {', '.join(given)})" if given else ""), field=field)
        self.op = given[0]
        self.tool, self.which = options.tool, options.which
        self.case_sensitive = options.case_sensitive
        try:
            self.path = parse_json_path(options.json_path)
        except ValueError as exc:
            raise ConfigError(str(exc), field="json_path") from None
        self.path_text = options.json_path
        self.equals = options.equals
        self.needle = options.contains or ""
        if not self.case_sensitive:
            self.needle = self.needle.casefold()
        self.pattern: re.Pattern[str] | None = None
        if options.regex is not None:
            try:
                self.pattern = re.compile(options.regex,
                                          0 if self.case_sensitive else re.IGNORECASE)
            except re.error as exc:
                raise ConfigError(f"not a valid regular expression: {exc}",
                                  field="regex") from None

    def _expected(self) -> str:

        if self.op == "equals":
            return f"= {short(json.dumps(self.equals, default=str))}"
        if self.op == "contains":
            return f"contains {short(self.needle)}"
        assert self.pattern is not None
        return f"matches /{self.pattern.pattern}/"

    def _check(self, tool_input: dict[str, Any]) -> tuple[bool, str]:
        """Whether one call's input passes, and what its value was (or where the path
        stopped)."""

        try:
            value = resolve_json_path(tool_input, self.path)
        except LookupError as exc:
            return False, str(exc)
        shown = short(value if isinstance(value, str)
                       else json.dumps(value, ensure_ascii=False, default=str))
        if self.op == "equals":
            return json_equal(value, self.equals), shown
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                               default=str)
        if self.op == "contains":
            hay = text if self.case_sensitive else text.casefold()
            return self.needle in hay, shown
        assert self.pattern is not None
        return self.pattern.search(text) is not None, shown

    def sense(self, interaction: Interaction) -> list[Reading]:
        inputs = [i for n, i in tool_calls(interaction.observation) if n == self.tool]
        if not inputs:
            return [_reading(self.name, False, f"{self.tool} was not called", calls=0,
                             matched=0)]
        checked = [self._check(i) for i in inputs]
        matched = sum(ok for ok, _ in checked)
        picked = {"first": [0], "last": [len(inputs) - 1]}.get(self.which,
                                                                list(range(len(inputs))))
        oks = [checked[i][0] for i in picked]
        passed = all(oks) if self.which == "all" else any(oks)
        want = f"{self.path_text} {self._expected()}"
        if self.which in ("first", "last"):
            i = picked[0]
            details = (f"{self.which} {self.tool} call ({i + 1} of {len(inputs)}): "
                       f"{self.path_text}: {checked[i][1]}"
                       + ("" if passed else f"; expected {want}"))
        elif passed:
            details = (f"{matched} of {len(inputs)} {self.tool} call(s) with {want}")
        else:
            bad = [(i, why) for i, (ok, why) in enumerate(checked) if not ok]
            shown = "; ".join(f"call {i + 1}: {why}" for i, why in bad[:3])
            more = f"; +{len(bad) - 3} more" if len(bad) > 3 else ""
            verb = "not every" if self.which == "all" and matched else "no"
            details = (f"{verb} {self.tool} call has {want} "
                       f"({matched} of {len(inputs)}: {shown}{more})")
        return [_reading(self.name, passed, details, calls=len(inputs), matched=matched)]
