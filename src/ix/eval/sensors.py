"""Sensors by kind. A sensor reads one interaction; it never calls the subject again.

`activation` reads tool calls; `exit_code`, `matcher`, `http_status`, `latency` and `token`
read the capability fields of an observation (DESIGN.md §2); `tool_sequence`, `tool_count`,
`turns`, `denied` and `tool_input` read the whole transcript (`ix.eval.transcript_sensors`);
`file_exists`, `file_matches` and `check` the workspace the subject left
(`ix.eval.outcome_sensors`).
Each gives one reading with score 1.0 when it passed and 0.0 when not, so for a capability
test `must_trigger` means "the sensor should pass" and `should_not_trigger` "should fail".
"""

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ix.domain.errors import ConfigError, did_you_mean
from ix.domain.model import Model
from ix.domain.ports import AsyncSensor, Sensor
from ix.domain.types import Interaction, Reading
from ix.eval import plugins
from ix.eval.json_path import json_equal, resolve_json_path, short
from ix.eval.live import KIND as LIVE_KIND
from ix.eval.live import LiveOptions, live
from ix.eval.outcome_sensors import (
    CaseChecksOptions,
    CaseChecksSensor,
    CheckOptions,
    CheckSensor,
    FileExistsOptions,
    FileExistsSensor,
    FileMatchesOptions,
    FileMatchesSensor,
    compiled,
)
from ix.eval.transcript_sensors import (
    DeniedOptions,
    DeniedSensor,
    ToolCountOptions,
    ToolCountSensor,
    ToolInputOptions,
    ToolInputSensor,
    ToolSequenceOptions,
    ToolSequenceSensor,
    TurnsOptions,
    TurnsSensor,
    UserGoalOptions,
    UserGoalSensor,
)
from ix.eval.validation import from_validation_error


class ActivationOptions(Model):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    skill: str | None = None
    mode: Literal["any", "first"] = "any"


class ActivationSensor:
    """Did the subject call the Skill tool with the target skill? Score 1.0 if so, else 0.0.

    `mode: any` counts a call anywhere in the response; `mode: first` only when the first tool
    call is it. A plugin skill (`plugin:name`) counts for `name`.
    """

    name = "activation"

    def __init__(self, skill: str, mode: str = "any"):
        self.skill = skill
        self.mode = mode
        self._suffix = f":{skill}"
        # the readings of a hit and of a plain miss are the same every trial: made once
        self._hit = Reading(sensor_name=self.name, passed=True, score=1.0,
                            details=f"{skill} invoked")
        self._miss = f"{skill} not invoked"
        self._missed = Reading(sensor_name=self.name, passed=False, score=0.0,
                               details=self._miss)

    def _is_target(self, call: Any) -> bool:
        if call.name != "Skill":
            return False
        invoked = call.input.get("skill")
        return isinstance(invoked, str) and (invoked == self.skill or
                                             invoked.endswith(self._suffix))

    def sense(self, interaction: Interaction) -> list[Reading]:
        calls: tuple[Any, ...] = tuple(getattr(interaction.observation, "tool_calls", ()))
        if self.mode == "first":
            hit = bool(calls) and self._is_target(calls[0])
        else:
            hit = any(self._is_target(c) for c in calls)
        if hit:
            return [self._hit]
        invoked = [str(c.input.get("skill")) for c in calls if c.name == "Skill"]
        if not invoked:
            return [self._missed]
        details = f"{self._miss} (invoked: {', '.join(invoked)})"
        return [Reading(sensor_name=self.name, passed=False, score=0.0, details=details)]


# --- capability sensors (DESIGN.md §2): they read the fields `command` and `http` fill ---


def _reading(name: str, passed: bool, details: str, **metrics: Any) -> Reading:
    return Reading(sensor_name=name, passed=passed, score=1.0 if passed else 0.0,
                   metrics=metrics, details=details)


def _field(observation: Any, name: str) -> Any:
    if isinstance(observation, dict):
        return observation.get(name)
    return getattr(observation, name, None)


class ExitCodeOptions(Model):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    expected: int = 0


class ExitCodeSensor:
    """Did the program exit with the expected code? (a `command` observation)"""

    name = "exit_code"

    def __init__(self, options: ExitCodeOptions):
        self.expected = options.expected

    def sense(self, interaction: Interaction) -> list[Reading]:
        code = _field(interaction.observation, "exit_code")
        if code is None:
            return [_reading(self.name, False, "no exit code in the observation "
                             "(not a command runtime?)", exit_code=None)]
        passed = code == self.expected
        details = f"exit code {code}" + ("" if passed else f", expected {self.expected}")
        return [_reading(self.name, passed, details, exit_code=code)]


class HttpStatusOptions(Model):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    expected: Any = 200  # a status, or a non-empty list of them

    @field_validator("expected")
    @classmethod
    def _statuses(cls, value: Any) -> int | list[int]:
        items = value if isinstance(value, list) else [value]
        if not items or not all(isinstance(v, int) and not isinstance(v, bool)
                                and 100 <= v <= 599 for v in items):
            raise ValueError("must be an HTTP status (100-599) or a non-empty list of them")
        return value


class HttpStatusSensor:
    """Was the HTTP status the expected one (or one of the expected)?"""

    name = "http_status"

    def __init__(self, options: HttpStatusOptions):
        expected = options.expected
        self.expected = frozenset([expected] if isinstance(expected, int) else expected)
        self._shown = " or ".join(str(s) for s in sorted(self.expected))

    def sense(self, interaction: Interaction) -> list[Reading]:
        status = _field(interaction.observation, "status")
        if status is None:
            return [_reading(self.name, False, "no HTTP status in the observation "
                             "(not an http runtime?)", status=None)]
        passed = status in self.expected
        details = f"HTTP {status}" + ("" if passed else f", expected {self._shown}")
        return [_reading(self.name, passed, details, status=status)]


class LatencyOptions(Model):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    max_ms: Annotated[float, Field(ge=0)]
    #: under `load:`, the objective is "p<percentile> ≤ max_ms" (docs/running.md, "SLA
    #: under load"); each trial's reading is the same with or without it
    percentile: Annotated[float, Field(gt=0, lt=100)] | None = None


class LatencySensor:
    """Did the subject answer within `max_ms` (the observation's `duration_ms`)?"""

    name = "latency"

    def __init__(self, options: LatencyOptions):
        self.max_ms = options.max_ms

    def sense(self, interaction: Interaction) -> list[Reading]:
        ms = _field(interaction.observation, "duration_ms")
        if ms is None:
            return [_reading(self.name, False, "no duration in the observation",
                             duration_ms=None)]
        passed = ms <= self.max_ms
        details = f"{ms} ms {'<=' if passed else '>'} {self.max_ms:g} ms"
        return [_reading(self.name, passed, details, duration_ms=ms)]


class TokenOptions(Model):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    max_tokens: Annotated[int, Field(ge=0)]


class TokenSensor:
    """Did the subject stay within `max_tokens` (input + output)?"""

    name = "token"

    def __init__(self, options: TokenOptions):
        self.max_tokens = options.max_tokens

    def sense(self, interaction: Interaction) -> list[Reading]:
        obs = interaction.observation
        total = int(_field(obs, "tokens_input") or 0) + int(_field(obs, "tokens_output") or 0)
        passed = total <= self.max_tokens
        details = f"{total} tokens {'<=' if passed else '>'} {self.max_tokens}"
        return [_reading(self.name, passed, details, tokens=total)]


Target = Literal["content", "stdout", "stderr", "body"]


class MatcherOptions(Model):
    """Exactly one of `contains`, `regex`, `json_path` (with `equals`); checked when built."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    contains: str | None = None
    regex: str | None = None
    json_path: str | None = None
    equals: Any = None
    target: Target = "content"
    case_sensitive: bool = True


class MatcherSensor:
    """Does the target text contain a string, match a regex, or hold a JSON value at a path?"""

    name = "matcher"

    def __init__(self, options: MatcherOptions):
        given = [k for k in ("contains", "regex", "json_path") if getattr(options, k) is not None]
        if len(given) != 1:
            field = given[1] if len(given) > 1 else "contains"
            raise ConfigError("give exactly one of contains, regex, json_path"
                              + (f" (got {', '.join(given)})" if given else ""), field=field)
        self.mode = given[0]
        self.target = options.target
        if "equals" in options.model_fields_set and self.mode != "json_path":
            raise ConfigError("equals goes with json_path", field="equals")
        if options.contains is not None:
            self.needle = options.contains if options.case_sensitive \
                else options.contains.casefold()
            self.case_sensitive = options.case_sensitive
        pattern, path = compiled(options.regex, 0 if options.case_sensitive else re.IGNORECASE,
                                 options.json_path, "equals" in options.model_fields_set)
        if pattern is not None:
            self.pattern = pattern
        if path is not None:
            self.path = path
            self.path_text = options.json_path
            self.equals = options.equals

    def sense(self, interaction: Interaction) -> list[Reading]:
        text = _field(interaction.observation, self.target)
        if text is None:
            return [_reading(self.name, False, f"the observation has no {self.target}")]
        text = str(text)
        if self.mode == "contains":
            hay = text if self.case_sensitive else text.casefold()
            passed = self.needle in hay
            verb = "contains" if passed else "does not contain"
            return [_reading(self.name, passed, f"{self.target} {verb} {short(self.needle)}")]
        if self.mode == "regex":
            match = self.pattern.search(text)
            if match is None:
                return [_reading(self.name, False,
                                 f"no match for /{self.pattern.pattern}/ in {self.target}")]
            return [_reading(self.name, True, f"matched {short(match.group(0))}",
                             match=match.group(0)[:200])]
        try:
            document = json.loads(text)
        except ValueError as exc:
            return [_reading(self.name, False, f"{self.target} is not JSON: {exc}")]
        try:
            value = resolve_json_path(document, self.path)
        except LookupError as exc:
            return [_reading(self.name, False, f"{self.path_text}: {exc}")]
        passed = json_equal(value, self.equals)
        shown = short(json.dumps(value, ensure_ascii=False, default=str))
        details = f"{self.path_text} = {shown}" + (
            "" if passed else f", expected {short(json.dumps(self.equals, default=str))}")
        return [_reading(self.name, passed, details)]


@dataclass(frozen=True)
class SensorKind:
    name: str
    options: type[BaseModel]
    build: Callable[[Any, str], Sensor | AsyncSensor]  # (options, target skill) -> sensor


SENSORS: dict[str, SensorKind] = {
    "activation": SensorKind(
        "activation", ActivationOptions,
        lambda o, target: ActivationSensor(o.skill or target, o.mode),
    ),
    "exit_code": SensorKind("exit_code", ExitCodeOptions, lambda o, _: ExitCodeSensor(o)),
    "matcher": SensorKind("matcher", MatcherOptions, lambda o, _: MatcherSensor(o)),
    "http_status": SensorKind("http_status", HttpStatusOptions,
                              lambda o, _: HttpStatusSensor(o)),
    "latency": SensorKind("latency", LatencyOptions, lambda o, _: LatencySensor(o)),
    "token": SensorKind("token", TokenOptions, lambda o, _: TokenSensor(o)),
    # over the whole transcript (ix.eval.transcript_sensors)
    "tool_sequence": SensorKind("tool_sequence", ToolSequenceOptions,
                                lambda o, _: ToolSequenceSensor(o)),
    "tool_count": SensorKind("tool_count", ToolCountOptions, lambda o, _: ToolCountSensor(o)),
    "turns": SensorKind("turns", TurnsOptions, lambda o, _: TurnsSensor(o)),
    "denied": SensorKind("denied", DeniedOptions, lambda o, _: DeniedSensor(o)),
    "tool_input": SensorKind("tool_input", ToolInputOptions, lambda o, _: ToolInputSensor(o)),
    "user_goal": SensorKind("user_goal", UserGoalOptions, lambda o, _: UserGoalSensor(o)),
    # on the files a subject left in its workspace (ix.eval.outcome_sensors)
    "file_exists": SensorKind("file_exists", FileExistsOptions,
                              lambda o, _: FileExistsSensor(o)),
    "file_matches": SensorKind("file_matches", FileMatchesOptions,
                               lambda o, _: FileMatchesSensor(o)),
    "check": SensorKind("check", CheckOptions, lambda o, _: CheckSensor(o)),
    # each case's own `checks:` (of the kinds above)
    "case_checks": SensorKind("case_checks", CaseChecksOptions, lambda o, target: (
        CaseChecksSensor(lambda kind, options, field: build_sensor(
            kind, options, target_skill=target, field=field)))),
    # a sensor object given to ix.Experiment in code (`ix.eval.live`)
    LIVE_KIND: SensorKind(LIVE_KIND, LiveOptions, lambda o, _: live(o, "sensor")),
}
#: Built by the planner (it reads the rubric file), so not in `SENSORS`; kinds all the same.
LLM_JUDGE, PANEL = "llm_judge", "panel"
JUDGE_KINDS = (LLM_JUDGE, PANEL)
#: Judges variants against the control after the trials (`ix.runtimes.pairwise`).
PAIRWISE_JUDGE = "pairwise_judge"


def sensor_kinds() -> list[str]:
    """Every sensor kind an experiment may name, sorted."""
    return sorted([*SENSORS, *JUDGE_KINDS, PAIRWISE_JUDGE])


def build_sensor(kind: str, options: dict[str, Any], *, target_skill: str,
                 field: str = "sensor") -> Sensor | AsyncSensor:
    """A sensor from its kind and options; `ConfigError` naming the field on a bad one. A
    kind ix does not know may come from an installed plugin (`ix.eval.plugins`)."""
    if kind not in SENSORS:
        plugin = plugins.load_sensor(kind, options, field=field)
        if plugin is not None:
            return plugin
        kinds = sorted({*sensor_kinds(), *plugins.names("sensor")})
        raise ConfigError(f"unknown sensor {kind!r}{did_you_mean(kind, kinds)} (allowed: "
                          f"{', '.join(kinds)})", field=f"{field}.kind")
    spec = SENSORS[kind]
    try:
        parsed = spec.options.model_validate(options)
    except ValidationError as exc:
        raise from_validation_error(exc, spec.options, prefix=field) from None
    try:
        return spec.build(parsed, target_skill)
    except ConfigError as exc:  # a check across options, made when the sensor is built
        raise exc.at(prefix=field) from None


def target_skill(sensor_options: dict[str, Any], experiment_skill: str | None,
                 subject_name: str) -> str:
    """The activation target: the sensor's `skill`, else the experiment's, else the subject."""
    skill = sensor_options.get("skill")
    return skill if isinstance(skill, str) and skill else (experiment_skill or subject_name)
