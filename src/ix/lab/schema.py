"""The shape of every file a user writes: `experiment.yaml`, case frontmatter, `ix.yaml`, SKILL.md.

Strict on purpose: an unknown key, a key of the wrong type or a value outside the allowed set
is an error naming the file and the field, never silently ignored. A runtime's and a sensor's
own options are checked by their registries once the kind is known.
"""

import itertools
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from ix.domain.errors import ConfigError, did_you_mean
from ix.domain.model import Model
from ix.eval.models import Difficulty, Expectation, Seeding, SimulatedUser
from ix.eval.outcomes import ALIASES, OUTCOME_METRICS, canonical, is_outcome_metric
from ix.eval.sessions import SessionsSpec
from ix.eval.validation import from_validation_error
from ix.fs.names import name_problem, normalise

M = TypeVar("M", bound=BaseModel)


class _Strict(Model):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def _as_kind_mapping(value: Any) -> Any:
    """`runtime: mock` and `runtime: {kind: mock, ...}` mean the same."""
    if isinstance(value, str):
        return {"kind": value}
    return value


def _trial_count(value: Any) -> Any:
    """`trials` is a whole number >= 1, or "auto" (adaptive); one clear message otherwise."""
    if value is None or value == "auto":
        return value
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    raise ValueError("must be an integer >= 1, or 'auto'")


def _check_kind(value: dict[str, Any] | None) -> dict[str, Any] | None:
    if value is not None and not isinstance(value.get("kind"), str):
        raise ValueError("needs a 'kind' (a string), e.g. {kind: mock}")
    return value


def _named(what: str) -> Any:
    """A validator: the value is a name (`ix.fs.names`), kept in NFC; None passes."""
    def check(value: Any) -> Any:
        if value is None:
            return None
        problem = name_problem(value)
        if problem is not None:
            raise ValueError(f"invalid {what}: {problem}")
        return normalise(value)
    return check


KindSpec = dict[str, Any]


class SubjectSpec(_Strict):
    """A subject of `experiment.yaml`; with `profile` it starts from a registry subject.

    `name` defaults to the profile's name; the other keys override the profile's.
    """

    name: Annotated[str, Field(min_length=1)]
    description: str = ""
    runtime: KindSpec | None = None
    model: str | None = None
    skills: list[str] = Field(default_factory=list)
    config: dict[str, Any] = Field(default_factory=dict)
    profile: Annotated[str, Field(min_length=1)] | None = None
    concurrency: Annotated[int, Field(ge=1)] | None = None
    #: several subjects as one (`{members: [names], combine: ...}`: ix.runtimes.ensemble)
    ensemble: dict[str, Any] | None = None
    #: a cheap stand-in (`ix calibrate`, docs/subjects.md "Proxy subjects"): a subject of the
    #: experiment, a registry subject or a runtime kind by name, or a runtime mapping
    proxy: Annotated[str, Field(min_length=1)] | KindSpec | None = None

    _kind = field_validator("runtime", mode="before")(_as_kind_mapping)
    _check = field_validator("runtime")(_check_kind)
    _proxy = field_validator("proxy")(lambda v: v if isinstance(v, str) else _check_kind(v))
    _name = field_validator("name")(_named("subject name"))

    @model_validator(mode="before")
    @classmethod
    def _name_from_profile(cls, data: Any) -> Any:
        if isinstance(data, dict) and "name" not in data and isinstance(data.get("profile"), str):
            return {"name": data["profile"], **data}
        return data

    @model_validator(mode="after")
    def _ensemble_alone(self) -> "SubjectSpec":
        if self.ensemble is not None and self.model_fields_set & {"runtime", "model", "skills",
                                                                  "config", "profile"}:
            raise ValueError("an ensemble answers with its members: leave out its runtime, "
                             "model, skills, config and profile")
        return self


def _subject_item(value: Any) -> Any:
    """`subjects: [claude-sonnet]`: a plain string is a registry subject, used as it is."""
    return {"name": value, "profile": value} if isinstance(value, str) else value


class ProfileSpec(_Strict):
    """A named subject of the registry (`subjects.yaml`, or a built-in profile)."""

    description: str = ""
    runtime: KindSpec
    model: Annotated[str, Field(min_length=1)] | None = None
    skills: list[str] = Field(default_factory=list)
    config: dict[str, Any] = Field(default_factory=dict)

    _kind = field_validator("runtime", mode="before")(_as_kind_mapping)
    _check = field_validator("runtime")(_check_kind)


class CaseFileSpec(_Strict):  # `cases.files[i]`: one case file (ix.fs.case_list)
    file: Annotated[str, Field(min_length=1)]
    expectation: Expectation | None = None


class CasesSpec(_Strict):
    suite: Annotated[str, Field(min_length=1)] = "cases/"
    from_: Annotated[str, Field(min_length=1)] | None = Field(None, alias="from")  # a table
    map: Annotated[str, Field(min_length=1)] | None = None  # its columns (ix.fs.case_tables)
    files: Annotated[list[CaseFileSpec], Field(min_length=1)] | None = None  # the RFC's probes


class WorkspaceSpec(_Strict):
    """`workspace:` (DESIGN.md §10): every trial runs in a fresh folder that starts with the
    `template` folder (relative to the experiment), then each case's own files; what the
    subject creates or changes there is kept with the trial, within these limits."""

    template: Annotated[str, Field(min_length=1)] | None = None
    #: the largest file kept of what a subject wrote (MiB), and all of one trial's
    max_file_mb: Annotated[float, Field(gt=0)] = 10.0
    max_total_mb: Annotated[float, Field(gt=0)] = 100.0
    #: the most files kept of one trial
    max_files: Annotated[int, Field(ge=1)] = 1000


#: The rates a goal may name; any other metric is a quantity of `ix.eval.outcomes`.
RATE_METRICS = ("f1", "recall", "precision", "activation_rate", "pass_rate")


class GoalSpec(_Strict):
    """`goal:` (DESIGN.md §6, §10): a rate's difference beyond `min_effect`, or a quantity's
    (tokens, time, cost, a score, a judge's dimension) beyond `min_effect` or within
    `at_most`, absolute or `relative` to the control's mean."""

    hypothesis: Annotated[str, Field(min_length=1)]
    metric: str = "f1"
    compare: list[str] = Field(default_factory=list)

    _compare = field_validator("compare")(lambda v: [normalise(x) for x in v])
    direction: Literal["increase", "decrease", "differ"] = "differ"
    min_effect: Annotated[float, Field(ge=0.0)] = 0.0
    at_most: Annotated[float | None, Field(ge=0.0, allow_inf_nan=False)] = None
    relative: bool = False
    credibility: Annotated[float, Field(gt=0.5, lt=1.0)] = 0.95

    @field_validator("metric", mode="before")
    @classmethod
    def _known(cls, v: Any) -> Any:
        """A rate (`correct_rate` is the glossary's word for `pass_rate`, docs/results.md),
        a quantity by its name or alias (`output_tokens`), or `<judge>.<dimension>`."""
        if v == "correct_rate":
            return "pass_rate"
        if not isinstance(v, str) or v in RATE_METRICS:
            return v
        if not is_outcome_metric(v):
            quantities = ", ".join([*OUTCOME_METRICS, *ALIASES])
            raise ValueError(
                f"unknown metric {v!r}{did_you_mean(v, [*RATE_METRICS, *OUTCOME_METRICS])}: a "
                f"rate ({', '.join(RATE_METRICS)}), a quantity ({quantities}) or a judge's "
                "dimension (`<judge name>.<dimension>`)")
        return canonical(v)

    def as_goal(self) -> dict[str, Any]:
        """The goal as the run's summary states it: `at_most` and `relative` only where set
        (a rate's goal reads as it always has)."""
        goal = self.model_dump()
        if goal["at_most"] is None:
            del goal["at_most"]
        if not goal["relative"]:
            del goal["relative"]
        return goal

    @model_validator(mode="after")
    def _fits_metric(self) -> "GoalSpec":
        if self.metric in RATE_METRICS:
            if self.at_most is not None or self.relative:
                raise ValueError("at_most and relative are for quantities (tokens, time, "
                                 "cost, scores); a rate's goal states min_effect")
            if self.min_effect >= 1:
                raise ValueError(f"min_effect of a rate lies in [0, 1); got {self.min_effect:g}")
        elif self.at_most is not None and self.min_effect:
            raise ValueError("states min_effect (an effect beyond it) or at_most (an effect "
                             "within it), not both")
        return self


class LabGoalSpec(GoalSpec):
    """A goal of the lab's `goals.yaml`: the evidence of several experiments, pooled."""

    experiments: Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)]


class GoalsFile(_Strict):
    goals: dict[str, LabGoalSpec]


class ImportedSpec(_Strict):
    """`imported:` of an experiment `ix import` made: where its trials came from, and whether
    its case files hold the real prompts (`ix run` refuses it while they do not)."""

    source: Annotated[str, Field(min_length=1)]
    format: Literal["inspect", "jsonl", "csv", "folder"]
    prompts: bool = False


class ContextSpec(_Strict):
    """`context:` (DESIGN.md §7): a shared prefix of turns before every case, at several
    lengths; every subject runs at every length."""

    prefix: Annotated[str, Field(min_length=1)]
    lengths: Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=1)]
    unit: Literal["turns", "tool_calls", "tokens"] = "turns"

    @field_validator("lengths")
    @classmethod
    def _increasing(cls, v: list[int]) -> list[int]:
        if any(b <= a for a, b in itertools.pairwise(v)):
            raise ValueError(f"lengths must increase, each once (got {v})")
        return v


#: What a swept value may be: a scalar of YAML.
SweepValue = str | int | float | bool


def _sweep(value: Any) -> Any:
    """`sweep:`: each key a non-empty list of distinct scalars, or `ablate: skills`."""
    if not isinstance(value, dict) or not value:
        raise ValueError("a mapping of keys to lists of values (and `ablate: skills`), "
                         "e.g. {model: [claude-sonnet-4-5, claude-haiku-4-5]}")
    for key, values in value.items():
        if key == "ablate":
            if values != "skills":
                raise ValueError(f"ablate takes `skills` (got {values!r})")
            continue
        if not isinstance(values, list) or not values:
            raise ValueError(f"{key}: a non-empty list of values (got {values!r})")
        if not all(isinstance(v, SweepValue) for v in values):
            raise ValueError(f"{key}: each value is a string, number or boolean")
        if len({repr(v) for v in values}) != len(values):
            raise ValueError(f"{key}: a value is listed twice")
    return value


#: The most requests one subject's `load:` may plan (rps × (warmup_s + duration_s)).
MAX_LOAD_REQUESTS = 1_000_000


class LoadSpec(_Strict):
    """`load:` (docs/running.md, "SLA under load"): an open-loop generator for `http` and
    `command` subjects — requests on a schedule, each a trial, whatever the answers do."""

    rps: Annotated[float, Field(gt=0)]
    duration_s: Annotated[float, Field(gt=0)]
    warmup_s: Annotated[float, Field(ge=0)] = 0.0
    arrivals: Literal["uniform", "poisson"] = "uniform"
    order: Literal["cycle", "random"] = "cycle"
    max_in_flight: Annotated[int, Field(ge=1, le=100_000)] = 1000

    @model_validator(mode="after")
    def _bounded(self) -> "LoadSpec":
        planned = self.rps * (self.warmup_s + self.duration_s)
        if planned > MAX_LOAD_REQUESTS:
            raise ValueError(f"rps × (warmup_s + duration_s) plans {planned:,.0f} requests per "
                             f"subject; at most {MAX_LOAD_REQUESTS:,}")
        if self.rps * self.duration_s < 1:
            raise ValueError("rps × duration_s must plan at least one measured request")
        return self


class ExperimentSpec(_Strict):
    name: Annotated[str, Field(min_length=1)]
    description: str = ""
    skill: Annotated[str, Field(min_length=1)] | None = None
    subjects: list[SubjectSpec] = Field(default_factory=list)
    sensor: KindSpec = Field(default_factory=lambda: {"kind": "activation"})
    sensors: list[KindSpec] | None = None
    trials: int | Literal["auto"] | None = None
    min_trials: Annotated[int, Field(ge=1)] | None = None
    max_trials: Annotated[int, Field(ge=1)] | None = None
    cases: CasesSpec = Field(default_factory=CasesSpec)
    runtime: KindSpec | None = None
    seed: int = 0
    #: how trial seeds are derived: `common` to every subject, or `per-subject` (the rule of
    #: runs made before common random numbers, to reproduce one; DESIGN.md §2)
    seeding: Seeding = "common"
    concurrency: Annotated[int, Field(ge=1)] | None = None
    timeout_s: Annotated[float, Field(gt=0)] | None = None
    goal: GoalSpec | None = None
    #: `stop: goal`: the cases in rounds, stopping once the goal is settled (docs/cost.md)
    stop: Literal["goal"] | None = None
    #: the Beta prior of every rate interval in the summary (statistics.md)
    prior: Literal["uniform", "jeffreys"] = "uniform"
    #: a shared prefix before every case at several lengths (DESIGN.md §7)
    context: ContextSpec | None = None
    #: expand the first subject into a grid of conditions (DESIGN.md §7)
    sweep: Annotated[dict[str, Any] | None, AfterValidator(lambda v: v if v is None
                                                           else _sweep(v))] = None
    #: the most subjects the expansions may make (a larger grid is refused)
    max_subjects: Annotated[int, Field(ge=1)] = 50
    #: set by `ix import` on an experiment it creates (docs/export.md)
    imported: ImportedSpec | None = None
    #: cases generated before a run (`paraphrase`, or a probe plugin; ix.engine.probes)
    probe: KindSpec | None = None
    #: an open-loop load test of http/command subjects (docs/running.md, "SLA under load")
    load: LoadSpec | None = None
    #: every trial in a fresh folder of files (DESIGN.md §10, docs/outcomes.md)
    workspace: WorkspaceSpec | None = None
    #: what every judge takes unless it says (`repeats`, `min_kappa`; docs/judges.md)
    judge: dict[str, Any] | None = None
    simulated_user: KindSpec | None = None  # the runtime that plays a case's `user:` (§11)
    gate: list[str] = Field(default_factory=list)  # per-case gates (`ix.eval.case_gates`)
    sessions: SessionsSpec | None = None  # a longitudinal study (`ix.eval.sessions`)
    #: how trials become case verdicts (`ix.eval.scorers`), and the files written at the end
    #: of a run (`ix.api.reporters`); each item a kind or `{kind: ..., <options>}`
    scorers: Annotated[list[KindSpec], Field(min_length=1)] | None = None
    reporters: list[KindSpec] | None = None
    #: cases in an adaptive order that finds each subject's frontier (`ix.eval.frontier`)
    curriculum: bool | dict[str, Any] | None = None

    _kinds = field_validator("runtime", "sensor", "probe", "simulated_user",
                             mode="before")(_as_kind_mapping)
    _checks = field_validator("runtime", "sensor", "probe", "simulated_user")(_check_kind)
    _items = field_validator("subjects", mode="before")(
        lambda v: [_subject_item(x) for x in v] if isinstance(v, list) else v)
    _trials = field_validator("trials", mode="before")(lambda v: _trial_count(v))
    _name = field_validator("name")(_named("experiment name"))
    _skill = field_validator("skill")(_named("skill name"))

    @model_validator(mode="after")
    def _adaptive_bounds(self) -> "ExperimentSpec":
        if self.trials != "auto" and (self.min_trials or self.max_trials):
            raise ValueError("min_trials and max_trials apply only with trials: auto")
        if self.min_trials and self.max_trials and self.min_trials > self.max_trials:
            raise ValueError(f"min_trials ({self.min_trials}) is above max_trials "
                             f"({self.max_trials})")
        return self

    @field_validator("sensors", "scorers", "reporters", mode="before")
    @classmethod
    def _sensor_list(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [_as_kind_mapping(v) for v in value]
        return value

    @field_validator("sensors", "scorers", "reporters")
    @classmethod
    def _sensor_kinds(cls, value: list[KindSpec] | None) -> list[KindSpec] | None:
        for item in value or []:
            _check_kind(item)
        return value


class HistoryToolCallSpec(_Strict):
    """A tool call of an assistant turn in a case's `history`: its name, input and result."""

    name: Annotated[str, Field(min_length=1)]
    input: dict[str, Any] = Field(default_factory=dict)
    result: str


class TurnSpec(_Strict):
    """One turn of a case's `history`: `user: text`, or `assistant: text` with optional
    `tool_calls` (the loader checks which, and their order)."""

    user: str | None = None
    assistant: str | None = None
    tool_calls: list[HistoryToolCallSpec] | None = None


class CaseSpec(_Strict):
    id: Annotated[str, Field(min_length=1)] | None = None
    expectation: Expectation
    history: list[TurnSpec] = Field(default_factory=list)
    rationale: str = ""
    tags: list[str] = Field(default_factory=list)
    difficulty: Difficulty | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    #: values that expand the case into several (`ix.lab.variants`)
    variants: dict[str, list[Any]] | list[dict[str, Any]] | None = None
    #: files or folders (relative to the case file) copied into each trial's workspace
    files: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    #: the case's own checks, run by the `case_checks` sensor (`ix.eval.outcome_sensors`)
    checks: list[dict[str, Any]] = Field(default_factory=list)
    user: SimulatedUser | None = None  # the experiment's `simulated_user` plays it (§11)

    _id = field_validator("id")(_named("case id"))
    _tags = field_validator("tags")(lambda v: [normalise(x) for x in v])


class PrefixSpec(_Strict):
    """A context prefix file: turns in the format of a case's `history`."""

    history: list[TurnSpec]


class LabDefaults(_Strict):
    """Defaults for every experiment of a lab (`ix.yaml`) or of a user (`config.yaml`)."""

    runtime: KindSpec | None = None
    trials: Annotated[int, Field(ge=1)] | None = None
    concurrency: Annotated[int, Field(ge=1)] | None = None
    timeout_s: Annotated[float, Field(gt=0)] | None = None

    _kind = field_validator("runtime", mode="before")(_as_kind_mapping)
    _check = field_validator("runtime")(_check_kind)


class SkillFrontmatter(Model):
    """SKILL.md: ix needs the name and description; Claude Code accepts other keys, so do we."""

    model_config = ConfigDict(extra="allow", strict=True, frozen=True)

    name: Annotated[str, Field(min_length=1)]
    description: Annotated[str, Field(min_length=1)]

    # a skill is installed as `.claude/skills/<name>/` for the claude-code runtime
    _name = field_validator("name")(_named("skill name"))


def validate(model: type[M], data: Any, *, file: Any, what: str = "file") -> M:
    """Validate parsed YAML against `model`; a problem is a `ConfigError` naming file and field."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"the {what} must be a mapping of keys to values, not {type(data).__name__}",
            file=file,
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise from_validation_error(exc, model, file=file) from None


class BatterySpec(_Strict):
    """A battery file (`ix batch`): experiments × subjects × seeds in one command."""

    name: Annotated[str, Field(min_length=1)]
    experiments: Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)]
    subjects: list[Annotated[str, Field(min_length=1),
                             AfterValidator(_named("subject name"))]] | None = None
    seeds: Annotated[int, Field(ge=1)] | list[int] = 1
    trials: int | Literal["auto"] | None = None
    filter: list[str] | None = None
    runtime: str | None = None
    output: Annotated[str, Field(min_length=1)] = "batteries/{date}_{seq}"

    _trials = field_validator("trials", mode="before")(lambda v: _trial_count(v))

    @field_validator("filter", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("seeds", mode="before")
    @classmethod
    def _seeds(cls, value: Any) -> Any:
        if isinstance(value, list) and not value:
            raise ValueError("a list of seeds must not be empty")
        return value

    def seed_list(self) -> list[int]:
        return list(range(self.seeds)) if isinstance(self.seeds, int) else list(self.seeds)

