"""The three core types every experiment speaks: who is tested, what happened, what was read."""

from typing import Any

from pydantic import ConfigDict, Field

from ix.domain.model import Model

#: The subject config key of an expanded subject (by `context:` or `sweep:`): the name of
#: the subject the experiment lists, whose skill it tests.
ORIGIN = "origin"


class Subject(Model):
    """A subject under test: one condition being compared (a skill set, a model, a service)."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str = ""
    config: dict[str, Any] = Field(default_factory=dict)


class Interaction(Model):
    """One stimulus-response pair; `error` is set instead of `observation` when invoking failed."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    stimulus: Any
    trial_index: int
    observation: Any | None = None
    error: str | None = None


class Reading(Model):
    """What one sensor measured on one interaction."""

    model_config = ConfigDict(frozen=True)

    sensor_name: str
    #: None: the sensor has no verdict on this trial (n/a: what it reads is not there, e.g.
    #: `turns` on a runtime that reports none); left out of the sensor's pass rate
    passed: bool | None
    score: float | None = None
    metrics: dict[str, Any] = Field(default_factory=dict)
    details: str = ""
