"""The three core types every experiment speaks: who is tested, what happened, what was read."""

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from pydantic import ConfigDict, Field, with_config
from typing_extensions import TypedDict  # pydantic needs this one on Python < 3.12

from ix.domain.model import Model

#: The subject config key of an expanded subject (by `context:` or `sweep:`): the name of
#: the subject the experiment lists, whose skill it tests.
ORIGIN: Final = "origin"


def dotted_value(mapping: Mapping[str, Any], dotted: str) -> Any:
    """`mapping`'s value at a sweep key `a.b.c` (a key inside a mapping option), or None."""
    value: Any = mapping
    for part in dotted.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


@with_config(ConfigDict(extra="allow"))
class SkillRef(TypedDict, total=False):
    """A skill a subject carries, as the loader found it (`ix.lab.loader.resolve_skill`)."""

    name: str
    description: str
    #: its SKILL.md, resolved
    path: str


@with_config(ConfigDict(extra="allow"))
class SubjectConfig(TypedDict, total=False):
    """`Subject.config`: what the loader puts there, typed for the code that reads it. Every
    key may be absent (a subject made in code may give none); a key not named here (a
    plugin's) is kept as given."""

    #: the resolved runtime: its `kind` and options, each layer merged over the experiment's
    runtime: dict[str, Any]
    #: where each runtime option was written: option -> [file, field]
    runtime_origins: dict[str, list[str]]
    model: str | None
    skills: list[SkillRef]
    #: the registry profile the subject is (`subjects:` of ix.yaml), and its file
    profile: str | None
    profile_source: str | None
    #: the subject's own concurrency limit (None: the runtime's default)
    concurrency: int | None
    #: a condition of a `sweep:` — `of` (the subject swept), `values`, `without`
    sweep: dict[str, Any]
    #: a condition of a `context:` — `of`, `length`
    context: dict[str, Any]
    #: `ORIGIN`: the listed subject an expanded condition came from
    origin: str


class Subject(Model):
    """A subject under test: one condition being compared (a skill set, a model, a service).
    `config` is adapter-specific in the seed (Domain Models, "Subject"); what ix's own
    adapters read from it is `SubjectConfig`."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str = ""
    config: SubjectConfig = Field(default_factory=lambda: SubjectConfig())


class Interaction(Model):
    """One stimulus-response pair; `error` is set instead of `observation` when invoking failed."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    stimulus: Any
    trial_index: int
    observation: Any | None = None
    error: str | None = None
    #: the folder the subject worked in, as it left it (DESIGN.md §10), while the sensors
    #: read it; None: the case has no workspace
    workspace: Path | None = None
    #: what the subject created or changed there (`ix.domain.workspace.Output`s)
    outputs: tuple[Any, ...] = ()


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
