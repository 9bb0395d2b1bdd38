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

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import ConfigDict, Field, ValidationError, field_validator

from ix._lazy import lazy
from ix.domain.errors import ConfigError, TrialError
from ix.domain.model import Model
from ix.domain.types import Interaction, Reading, Subject
from ix.eval.models import EvalCase
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


class JudgeOptions(Model):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    agent: Annotated[str, Field(min_length=1)]
    #: what the judge is shown (DESIGN.md §10): the answer (`observation`), the files the
    #: subject made in its workspace (`files`), its transcript (`transcript`). One the
    #: rubric does not name is appended to its prompt.
    inputs: list[Input] = Field(default_factory=lambda: list[Input](["answer"]))


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
    """Renders the rubric for each interaction, asks the judge, parses its scores."""

    def __init__(self, rubric: Rubric, body: str, source: str,
                 inputs: tuple[str, ...] = ("answer",)):
        self.name = rubric.name
        self.rubric = rubric
        env = _templates._jinja().env
        named = jinja2_meta.find_undeclared_variables(env.parse(body))
        # an input the rubric does not name is appended to what the judge reads
        self.appended = [i for i in inputs if i in ("files", "transcript") and i not in named]
        self.inputs = inputs
        self.template = env.from_string(body)  # the one sandbox
        self.source = source
        spec = dict(rubric.runtime)
        if rubric.model is not None:
            spec["model"] = rubric.model
        self.runtime_spec = spec  # the run's redactor reads the judge's key from it
        self.runtime = build_runtime(spec, RuntimeContext())
        self.judge = Subject(name=f"judge:{rubric.name}")

    async def sense(self, interaction: Interaction) -> list[Reading]:
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
        prompt += _appended(self.appended, files, transcript)
        stimulus = EvalCase(id=f"{case.id}:judge", prompt=prompt, expectation="acceptable")
        answer = await self.runtime.invoke(self.judge, stimulus,
                                           seed=interaction.trial_index)
        return [self._reading(getattr(answer, "content", "") or "")]

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
        mean = sum((v - low) / (high - low) for v in values.values()) / len(values)
        reasoning = data.get("reasoning", "") if isinstance(data, dict) else ""
        return Reading(sensor_name=self.name, passed=mean >= self.rubric.pass_threshold,
                       score=round(mean, 6), metrics=values,
                       details=str(reasoning)[:2000])


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


def build_judge(options: dict[str, Any], meta: dict[str, Any], body: str,
                path: Path, field: str) -> LLMJudgeSensor:
    """The sensor for `sensor: {kind: llm_judge, agent: ...}`; the caller read the file."""
    try:
        parsed = JudgeOptions.model_validate(options)
    except ValidationError as exc:
        raise from_validation_error(exc, JudgeOptions, prefix=field) from None
    rubric, text = parse_rubric(meta, body, path)
    try:
        return LLMJudgeSensor(rubric, text, str(path), tuple(parsed.inputs))
    except ConfigError as exc:
        raise exc.at(path) from None


def judge_names(sensors: Iterable[object]) -> frozenset[str]:
    """The names of the `llm_judge` sensors among `sensors` (their readings' `sensor_name`)."""
    return frozenset(s.name for s in sensors if isinstance(s, LLMJudgeSensor))
