"""Sensors by kind. A sensor reads one interaction; it never calls the subject again."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from ix.domain.errors import ConfigError, from_validation_error
from ix.domain.ports import Sensor
from ix.domain.types import Interaction, Reading


class ActivationOptions(BaseModel):
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
        self._hit = f"{skill} invoked"
        self._miss = f"{skill} not invoked"

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
            return [Reading(sensor_name=self.name, passed=True, score=1.0, details=self._hit)]
        invoked = [str(c.input.get("skill")) for c in calls if c.name == "Skill"]
        details = self._miss + (f" (invoked: {', '.join(invoked)})" if invoked else "")
        return [Reading(sensor_name=self.name, passed=False, score=0.0, details=details)]


@dataclass(frozen=True)
class SensorKind:
    name: str
    options: type[BaseModel]
    build: Callable[[Any, str], Sensor]  # (options, target skill) -> sensor


SENSORS: dict[str, SensorKind] = {
    "activation": SensorKind(
        "activation", ActivationOptions,
        lambda o, target: ActivationSensor(o.skill or target, o.mode),
    ),
}
PLANNED = ("exit_code", "matcher", "http_status", "latency", "token", "llm_judge")


def build_sensor(kind: str, options: dict[str, Any], *, target_skill: str,
                 field: str = "sensor") -> Sensor:
    """A sensor from its kind and options; `ConfigError` naming the field on a bad one."""
    if kind not in SENSORS:
        allowed = ", ".join(sorted(SENSORS))
        if kind in PLANNED:
            raise ConfigError(f"sensor {kind!r} is not available in this version of ix yet; "
                              f"available: {allowed}", field=f"{field}.kind")
        raise ConfigError(f"unknown sensor {kind!r}; allowed: {allowed}", field=f"{field}.kind")
    spec = SENSORS[kind]
    try:
        parsed = spec.options.model_validate(options)
    except ValidationError as exc:
        raise from_validation_error(exc, spec.options, prefix=field) from None
    return spec.build(parsed, target_skill)


def target_skill(sensor_options: dict[str, Any], experiment_skill: str | None,
                 subject_name: str) -> str:
    """The activation target: the sensor's `skill`, else the experiment's, else the subject."""
    skill = sensor_options.get("skill")
    return skill if isinstance(skill, str) and skill else (experiment_skill or subject_name)
