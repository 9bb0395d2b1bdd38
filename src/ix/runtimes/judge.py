"""`llm_judge`: a sensor that asks a model to grade an observation against a rubric.

The rubric is a markdown file (`sensor: {kind: llm_judge, agent: rubrics/quality.md}`, the
path relative to the experiment) with frontmatter and a Jinja body:

    ---
    name: quality
    runtime: anthropic            # any runtime kind, or {kind: ..., <options>}
    model: claude-sonnet-4-5      # fills the runtime's model
    dimensions: [correctness, completeness]
    scale: [0, 10]
    pass_threshold: 0.7           # on the mean score, rescaled to [0, 1]
    ---
    Grade the answer. ... {{ observation.content }} ... {{ probe.expected }}
    Answer with JSON only: {"scores": {"correctness": 0-10, "completeness": 0-10},
    "reasoning": "..."}

With `repeats: R` each output is judged R times (seeded: repeat r is attempt r of the
trial's seed, so the cache keeps each); the reading's scores are the mean judgement, which
every comparison then uses, and `metrics["repeats"]` keeps each repeat's scores (STATS.md
§14: the judge's own variance). `name` and `model` let several judges share one rubric, and
`kind: panel` runs several such judges on each output and combines them (majority or mean).

The body is rendered in a sandboxed Jinja environment with `observation` (the subject's
observation), `probe` (the case: id, prompt, expectation, tags, difficulty and its metadata
keys), `case` (the same), and with `inputs: [answer, files, transcript]` (DESIGN.md §10)
`files` (what the subject made in its workspace: `path`, `size`, `text`) and `transcript`
(the runtime's raw transcript); an input the body does not name is appended to it. The
judge's answer is parsed strictly: one JSON object with a score for exactly the declared
dimensions, each within the scale; anything else is a trial
error of kind `judge_unparseable`, not a silent fail. One sensor gives one reading whose
`metrics` hold every dimension (multi-level grading is one sensor, several dimensions).
"""

import asyncio
import copy
import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import ConfigDict, Field, ValidationError, field_validator

from ix._lazy import lazy
from ix.domain.errors import ConfigError, TrialError
from ix.domain.model import Model
from ix.domain.types import Interaction, Reading, Subject
from ix.eval.judge_summary import REPEATS
from ix.eval.models import EvalCase
from ix.eval.sensors import PANEL
from ix.eval.validation import from_validation_error
from ix.runtimes import _templates
from ix.runtimes.registry import RuntimeContext, build_runtime

if TYPE_CHECKING:
    import jinja2
    from jinja2 import meta as jinja2_meta
else:  # imported when a rubric is parsed
    jinja2 = lazy("jinja2")
    jinja2_meta = lazy("jinja2.meta")


Input = Literal["answer", "files", "transcript"]

#: The most of one file, and of the transcript, the judge is shown.
SHOWN_BYTES = 64 << 10
#: The most repeats of one judgement (each is a paid call).
MAX_REPEATS = 20
#: Below this κ against people's labels a judge is not to be trusted (Landis & Koch's
#: "substantial" begins at 0.6); `min_kappa` on the judge changes it.
DEFAULT_MIN_KAPPA = 0.6


class JudgeOptions(Model):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    agent: Annotated[str, Field(min_length=1)]
    #: what the judge is shown (DESIGN.md §10): the answer (`observation`), the files the
    #: subject made in its workspace (`files`), its transcript (`transcript`). One the
    #: rubric does not name is appended to its prompt.
    inputs: list[Input] = Field(default_factory=lambda: list[Input](["answer"]))
    #: a name of its own (its readings' `sensor_name`), else the rubric's: several judges
    #: may share one rubric with different models
    name: Annotated[str, Field(min_length=1)] | None = None
    #: the judge's model, instead of the rubric's
    model: Annotated[str, Field(min_length=1)] | None = None
    #: how many times each output is judged; its scores are the mean judgement
    repeats: Annotated[int, Field(ge=1, le=MAX_REPEATS)] = 1
    #: a verdict resting on a judge whose Cohen's κ against people's labels is below this
    #: says so (and `ix validate --strict` refuses it)
    min_kappa: Annotated[float, Field(ge=-1.0, le=1.0)] = DEFAULT_MIN_KAPPA


class PanelMember(Model):
    """One judge of a panel: the rubric's, with its own model, runtime or name."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    name: Annotated[str, Field(min_length=1)] | None = None
    model: Annotated[str, Field(min_length=1)] | None = None
    runtime: dict[str, Any] | None = None

    @field_validator("runtime", mode="before")
    @classmethod
    def _kind(cls, value: Any) -> Any:
        return {"kind": value} if isinstance(value, str) else value


class PanelOptions(JudgeOptions):
    """`sensor: {kind: panel, agent: RUBRIC, judges: [{model: …}, …], combine: mean}`."""

    judges: Annotated[list[PanelMember], Field(min_length=2)]
    #: `mean`: the members' mean scores, passed by the rubric's threshold; `majority`: passed
    #: when more than half the members pass it (its scores still the mean)
    combine: Literal["majority", "mean"] = "mean"


class Rubric(Model):
    """The rubric file's frontmatter."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    name: str = "llm_judge"
    runtime: dict[str, Any]
    model: str | None = None
    dimensions: Annotated[list[str], Field(min_length=1)]
    scale: tuple[float, float] = (0.0, 10.0)
    pass_threshold: Annotated[float, Field(ge=0.0, le=1.0)] = 0.5

    @field_validator("runtime", mode="before")
    @classmethod
    def _kind(cls, value: Any) -> Any:
        return {"kind": value} if isinstance(value, str) else value

    @field_validator("dimensions")
    @classmethod
    def _not_reserved(cls, value: list[str]) -> list[str]:
        if REPEATS in value or len(set(value)) != len(value):
            raise ValueError(f"must be distinct names, none of them {REPEATS!r}")
        return value

    @field_validator("scale", mode="before")
    @classmethod
    def _scale(cls, value: Any) -> Any:
        if isinstance(value, list) and len(value) == 2 and value[0] < value[1]:
            return tuple(float(v) for v in value)
        raise ValueError("must be [low, high] with low < high")


_JSON = re.compile(r"\{.*\}", re.DOTALL)


def parse_rubric(meta: dict[str, Any], body: str, path: Path) -> tuple[Rubric, str]:
    """A rubric file's frontmatter and body, checked; `ConfigError` naming the file and field."""
    try:
        rubric = Rubric.model_validate(meta)
    except ValidationError as exc:
        raise from_validation_error(exc, Rubric, file=path) from None
    if not body.strip():
        raise ConfigError("the rubric's body (the judge's prompt) is empty", file=path,
                          field="body")
    try:
        _templates._jinja().env.from_string(body)  # parsed and compiled: nested too deep too
    except jinja2.TemplateError as exc:
        raise ConfigError(f"invalid template: {exc}", file=path, field="body") from None
    return rubric, body


class LLMJudgeSensor:
    """Renders the rubric for each interaction, asks the judge (`repeats` times), parses its
    scores; the reading holds their mean."""

    kind = "llm_judge"

    def __init__(self, rubric: Rubric, body: str, source: str,
                 inputs: tuple[str, ...] = ("answer",), *, name: str | None = None,
                 model: str | None = None, runtime: dict[str, Any] | None = None,
                 repeats: int = 1, min_kappa: float = DEFAULT_MIN_KAPPA):
        self.name = name or rubric.name
        self.rubric = rubric
        env = _templates._jinja().env
        named = jinja2_meta.find_undeclared_variables(env.parse(body))
        # an input the rubric does not name is appended to what the judge reads
        self.appended = [i for i in inputs if i in ("files", "transcript") and i not in named]
        self.inputs = inputs
        self.template = env.from_string(body)  # the one sandbox
        self.source = source
        spec = dict(runtime if runtime is not None else rubric.runtime)
        if model is not None or rubric.model is not None:
            spec["model"] = model if model is not None else rubric.model
        self.runtime_spec = spec  # the run's redactor reads the judge's key from it
        self.runtime = build_runtime(spec, RuntimeContext())
        self.judge = Subject(name=f"judge:{self.name}")
        self.repeats = repeats
        self.min_kappa = min_kappa

    def describe(self) -> dict[str, Any]:
        """What the summary's `judges` block says of this judge (its members for a panel)."""
        return {"name": self.name, "kind": self.kind, "rubric": self.rubric.name,
                "model": self.runtime_spec.get("model"),
                "runtime": str(self.runtime_spec.get("kind")), "repeats": self.repeats,
                "dimensions": list(self.rubric.dimensions), "min_kappa": self.min_kappa,
                "scale": list(self.rubric.scale), "pass_threshold": self.rubric.pass_threshold,
                "members": [], "combine": None}

    def with_runtimes(self, wrap: "Callable[[LLMJudgeSensor], Any]") -> "LLMJudgeSensor":
        """A copy whose judge's runtime is `wrap(self)` (the run's cache around it)."""
        other = copy.copy(self)
        other.runtime = wrap(self)
        return other

    def prompt(self, interaction: Interaction) -> str:
        """The rubric rendered for one interaction, with the inputs it does not name."""
        case: EvalCase = interaction.stimulus
        probe = {"id": case.id, "prompt": case.prompt, "expectation": case.expectation,
                 "tags": list(case.tags), "difficulty": case.difficulty, **case.metadata}
        observation: Any = interaction.observation
        dump = getattr(observation, "model_dump", None)
        seen = dump(mode="json") if dump is not None else observation
        files = _files(interaction) if "files" in self.inputs else []
        transcript = _transcript(observation) if "transcript" in self.inputs else ""
        try:
            prompt = self.template.render(observation=seen, probe=probe, case=probe,
                                          files=files, transcript=transcript)
        except jinja2.TemplateError as exc:
            raise TrialError("judge_template", f"{self.source}: {exc}") from None
        return prompt + _appended(self.appended, files, transcript)

    async def sense(self, interaction: Interaction) -> list[Reading]:
        return [await self.grade(self.prompt(interaction), interaction)]

    async def grade(self, prompt: str, interaction: Interaction) -> Reading:
        """The judge's reading of one rendered prompt: repeat r is attempt r of the trial's
        seed, the scores their mean."""
        stimulus = EvalCase(id=f"{interaction.stimulus.id}:judge", prompt=prompt,
                            expectation="acceptable")
        answers = await asyncio.gather(*(
            self.runtime.invoke(self.judge, stimulus, seed=interaction.trial_index, attempt=r)
            for r in range(self.repeats)))
        readings = [self._reading(getattr(a, "content", "") or "") for a in answers]
        if len(readings) == 1:
            return readings[0]
        return self._mean(readings, [r.metrics for r in readings])

    def _mean(self, readings: list[Reading], each: list[dict[str, Any]] | None = None,
              passed: bool | None = None) -> Reading:
        """One reading of several judgements of an output: the mean score per dimension,
        passed by the rubric's threshold on it unless `passed` says; `each` (the repeats'
        scores) kept in its metrics."""
        values = {d: sum(r.metrics[d] for r in readings) / len(readings)
                  for d in self.rubric.dimensions}
        score = self._score(values)
        return Reading(sensor_name=self.name,
                       passed=score >= self.rubric.pass_threshold if passed is None
                       else passed, score=round(score, 6),
                       metrics={d: round(v, 6) for d, v in values.items()}
                       | ({} if each is None else {REPEATS: each}),
                       details=readings[0].details)

    def _score(self, values: dict[str, float]) -> float:
        low, high = self.rubric.scale
        return sum((v - low) / (high - low) for v in values.values()) / len(values)

    def _reading(self, text: str) -> Reading:
        low, high = self.rubric.scale
        match = _JSON.search(text)
        try:
            data = json.loads(match.group(0)) if match else None
        except ValueError:
            data = None
        scores = data.get("scores") if isinstance(data, dict) else None
        if not isinstance(scores, dict) or set(scores) != set(self.rubric.dimensions):
            raise TrialError("judge_unparseable", "the judge must answer one JSON object with "
                             f"scores for exactly {self.rubric.dimensions}; got: {text[:300]!r}")
        values: dict[str, float] = {}
        for dim in self.rubric.dimensions:
            v = scores[dim]
            if isinstance(v, bool) or not isinstance(v, int | float) or not low <= v <= high:
                raise TrialError("judge_unparseable",
                                 f"score {dim}={v!r} is not a number in [{low:g}, {high:g}]")
            values[dim] = float(v)
        mean = self._score(values)
        reasoning = data.get("reasoning", "") if isinstance(data, dict) else ""
        return Reading(sensor_name=self.name, passed=mean >= self.rubric.pass_threshold,
                       score=round(mean, 6), metrics=values,
                       details=str(reasoning)[:2000])


class PanelSensor(LLMJudgeSensor):
    """Several judges of one rubric on each output (`kind: panel`): each member's reading
    (by its own name), then the panel's, which combines them; the panel's is its first."""

    kind = "panel"

    def __init__(self, rubric: Rubric, body: str, source: str, inputs: tuple[str, ...],
                 members: list[LLMJudgeSensor], combine: str, *, name: str | None = None,
                 min_kappa: float = DEFAULT_MIN_KAPPA):
        super().__init__(rubric, body, source, inputs, name=name, runtime={"kind": "mock"},
                         min_kappa=min_kappa)
        self.runtime_spec = {}
        self.members = members
        self.combine = combine

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "model": None, "runtime": "panel", "repeats": 1,
                "members": [m.name for m in self.members], "combine": self.combine}

    def with_runtimes(self, wrap: "Callable[[LLMJudgeSensor], Any]") -> "LLMJudgeSensor":
        other = copy.copy(self)
        other.members = [m.with_runtimes(wrap) for m in self.members]
        return other

    async def sense(self, interaction: Interaction) -> list[Reading]:
        prompt = self.prompt(interaction)
        each = await asyncio.gather(*(m.grade(prompt, interaction) for m in self.members))
        passed = None
        if self.combine == "majority":
            passed = 2 * sum(r.passed is True for r in each) > len(each)
        return [self._mean(list(each), passed=passed), *each]


def _files(interaction: Interaction) -> list[dict[str, Any]]:
    """The files the subject made (`path`, `size`, `text`: None for one that is no UTF-8
    text, or past `SHOWN_BYTES`), read from its workspace; refused ones by their reason."""
    out: list[dict[str, Any]] = []
    for o in interaction.outputs:
        entry: dict[str, Any] = {"path": o.path, "size": o.size, "text": None,
                                 "refused": o.refused}
        if o.refused is None and interaction.workspace is not None:
            try:
                with open(interaction.workspace / o.path, "rb") as f:
                    data = f.read(SHOWN_BYTES + 1)
                if len(data) <= SHOWN_BYTES and b"\x00" not in data:
                    entry["text"] = data.decode("utf-8")
            except (OSError, UnicodeDecodeError):
                pass
        out.append(entry)
    return out


def _transcript(observation: Any) -> str:
    """The runtime's raw transcript, as text (the last `SHOWN_BYTES` of it)."""
    trace = getattr(observation, "trace", None)
    if trace is None:
        return ""
    lines = trace if isinstance(trace, list | tuple) else [trace]
    text = "\n".join(x if isinstance(x, str) else json.dumps(x, default=str) for x in lines)
    return text[-SHOWN_BYTES:]


def _appended(inputs: list[str], files: list[dict[str, Any]], transcript: str) -> str:
    """What the judge is shown that the rubric does not name: each file, the transcript."""
    parts: list[str] = []
    if "files" in inputs:
        parts.append("\n\n## Files the agent made in its workspace\n")
        for f in files or []:
            shown = f["text"] if f["text"] is not None else (
                f"(not kept: {f['refused']})" if f["refused"] else
                "(binary, or too large to show)")
            parts.append(f"\n### {f['path']}\n```\n{shown}\n```\n")
        if not files:
            parts.append("\n(none)\n")
    if "transcript" in inputs:
        parts.append(f"\n\n## The agent's transcript\n```\n{transcript or '(none)'}\n```\n")
    return "".join(parts)


class JudgeDefaults(Model):
    """The experiment's `judge:`: what every judge takes unless it says."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    repeats: Annotated[int, Field(ge=1, le=MAX_REPEATS)] | None = None
    min_kappa: Annotated[float, Field(ge=-1.0, le=1.0)] | None = None


def build_judge(kind: str, options: dict[str, Any], meta: dict[str, Any], body: str,
                path: Path, field: str, defaults: dict[str, Any] | None = None
                ) -> LLMJudgeSensor:
    """The sensor for `sensor: {kind: llm_judge | panel, agent: ...}`; the caller read the
    rubric file. `defaults`: the experiment's `judge:`."""
    try:
        shared = JudgeDefaults.model_validate(defaults or {})
    except ValidationError as exc:
        raise from_validation_error(exc, JudgeDefaults, prefix="judge") from None
    schema = PanelOptions if kind == PANEL else JudgeOptions
    try:
        parsed = schema.model_validate(shared.model_dump(exclude_none=True) | options)
    except ValidationError as exc:
        raise from_validation_error(exc, schema, prefix=field) from None
    rubric, text = parse_rubric(meta, body, path)
    inputs = tuple(parsed.inputs)
    try:
        if not isinstance(parsed, PanelOptions):
            return LLMJudgeSensor(rubric, text, str(path), inputs, name=parsed.name,
                                  model=parsed.model, repeats=parsed.repeats,
                                  min_kappa=parsed.min_kappa)
        members = [LLMJudgeSensor(rubric, text, str(path), inputs, name=_member_name(
                       parsed.name or rubric.name, m, i), model=m.model, runtime=m.runtime,
                       repeats=parsed.repeats, min_kappa=parsed.min_kappa)
                   for i, m in enumerate(parsed.judges)]
    except ConfigError as exc:
        raise exc.at(path) from None
    names = [m.name for m in members]
    if len(set(names)) != len(names) or (parsed.name or rubric.name) in names:
        raise ConfigError(f"the panel's judges need distinct names (got {', '.join(names)})",
                          field=f"{field}.judges")
    return PanelSensor(rubric, text, str(path), inputs, members, parsed.combine,
                       name=parsed.name, min_kappa=parsed.min_kappa)


def _member_name(panel: str, member: PanelMember, index: int) -> str:
    if member.name:
        return member.name
    return f"{panel}:{member.model}" if member.model else f"{panel}:{index + 1}"


def judges_of(sensors: Iterable[object]) -> list[LLMJudgeSensor]:
    """The judges among `sensors`, a panel's members after it."""
    out: list[LLMJudgeSensor] = []
    for s in sensors:
        if isinstance(s, LLMJudgeSensor):
            out.append(s)
            if isinstance(s, PanelSensor):
                out.extend(s.members)
    return out


def judge_names(sensors: Iterable[object]) -> frozenset[str]:
    """The names of the judges among `sensors` (their readings' `sensor_name`)."""
    return frozenset(s.name for s in judges_of(sensors))
