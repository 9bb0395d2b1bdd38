"""`pairwise_judge`: a judge shown two subjects' answers to the same case and trial, blind.

`sensor: {kind: pairwise_judge, rubric: rubrics/compare.md, swap: true}` (the path relative
to the experiment). The rubric is a markdown file like `llm_judge`'s (`ix.runtimes.judge`),
with only `name`, `runtime` and `model` in its frontmatter, and a body rendered in the same
Jinja sandbox with `probe` (the case: id, prompt, expectation, tags, difficulty and its
metadata keys), `case` (the same), `first` and `second` (the two answers' text, in the order
shown). Which subject is `first` is drawn per pair (`ix.engine.pairwise`); the judge is
never told. It answers one JSON object `{"winner": "first" | "second" | "tie",
"reasoning": "..."}`; anything else is an errored judgement of kind `judge_unparseable`.

It gives no trial a verdict: it compares subjects once the trials have run. With no other
sensor, a trial's own reading is `answered` (the subject's answer is not blank).
"""

import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, ValidationError, field_validator

from ix.domain.errors import ConfigError, TrialError
from ix.domain.model import Model
from ix.domain.types import Interaction, Reading, Subject
from ix.eval.models import EvalCase
from ix.eval.sensors import PAIRWISE_JUDGE
from ix.eval.validation import from_validation_error
from ix.fs.frontmatter import read_frontmatter
from ix.runtimes import _templates
from ix.runtimes.registry import RuntimeContext, build_runtime

Winner = Literal["first", "second", "tie"]
_WINNERS = ("first", "second", "tie")
_JSON = re.compile(r"\{.*\}", re.DOTALL)


class PairwiseOptions(Model):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    rubric: Annotated[str, Field(min_length=1)]
    #: judge each pair in both orders (cancels the judge's position bias; twice the calls)
    swap: bool = False


class PairwiseRubric(Model):
    """The pairwise rubric file's frontmatter."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    name: str = PAIRWISE_JUDGE
    runtime: dict[str, Any]
    model: str | None = None

    @field_validator("runtime", mode="before")
    @classmethod
    def _kind(cls, value: Any) -> Any:
        return {"kind": value} if isinstance(value, str) else value


class PairwiseJudge:
    """Asks the judge which of two answers is better; `judge` returns its answer as given."""

    def __init__(self, rubric: PairwiseRubric, body: str, source: str, swap: bool):
        self.name = rubric.name
        self.swap = swap
        self.source = source
        if not body.strip():
            raise ConfigError("the rubric's body (the judge's prompt) is empty", field="body")
        jinja = _templates._jinja()
        self.template_error = jinja.TemplateError
        try:
            self.template = jinja.env.from_string(body)  # the one sandbox
        except jinja.TemplateError as exc:
            raise ConfigError(f"invalid template: {exc}", field="body") from None
        model = {} if rubric.model is None else {"model": rubric.model}
        # the run's redactor reads the judge's key from `runtime_spec`
        self.runtime_spec = {**rubric.runtime, **model}
        self.runtime = build_runtime(self.runtime_spec, RuntimeContext())
        self.subject = Subject(name=f"judge:{rubric.name}")

    async def judge(self, case: EvalCase, first: str, second: str,
                    seed: int) -> tuple[Winner, str]:
        """The judge's winner (`first`, `second` or `tie`) and its reasoning; `TrialError`
        when it cannot be asked or answers otherwise."""
        probe = {"id": case.id, "prompt": case.prompt, "expectation": case.expectation,
                 "tags": list(case.tags), "difficulty": case.difficulty, **case.metadata}
        try:
            prompt = self.template.render(probe=probe, case=probe, first=first, second=second)
        except self.template_error as exc:  # an undefined attribute, a sandbox refusal
            raise TrialError("judge_template", f"{self.source}: {exc}") from None
        stimulus = EvalCase(id=f"{case.id}:pairwise", prompt=prompt, expectation="acceptable")
        answer = await self.runtime.invoke(self.subject, stimulus, seed=seed)
        return parse_winner(str(getattr(answer, "content", "") or ""))


def parse_winner(text: str) -> tuple[Winner, str]:
    """`{"winner": "first" | "second" | "tie", "reasoning": ...}` out of the judge's answer."""
    match = _JSON.search(text)
    try:
        data = json.loads(match.group(0)) if match else None
    except ValueError:
        data = None
    winner = data.get("winner") if isinstance(data, dict) else None
    if winner not in _WINNERS or not isinstance(data, dict):
        raise TrialError("judge_unparseable", 'the judge must answer one JSON object with '
                         f'"winner": "first", "second" or "tie"; got: {text[:300]!r}')
    return winner, str(data.get("reasoning", ""))[:2000]


class AnsweredSensor:
    """A trial's own verdict when the pairwise judge is the only sensor: the subject's answer
    is not blank (so a trial that said nothing counts as failed, and the case verdicts, pass
    rates and comparisons keep their meaning)."""

    name = "answered"

    def sense(self, interaction: Interaction) -> list[Reading]:
        content = getattr(interaction.observation, "content", None)
        answered = bool(str(content or "").strip())
        return [Reading(sensor_name=self.name, passed=answered, score=float(answered),
                        details="" if answered else "the answer is blank")]


def build_pairwise(options: dict[str, Any], meta: dict[str, Any], body: str, path: Path,
                   field: str) -> PairwiseJudge:
    """The judge of `sensor: {kind: pairwise_judge, rubric: ...}`; the caller read the file."""
    try:
        swap = PairwiseOptions.model_validate(options).swap
        return PairwiseJudge(PairwiseRubric.model_validate(meta), body, str(path), swap)
    except ValidationError as exc:  # the option's, or the rubric file's frontmatter's
        if exc.title == PairwiseOptions.__name__:
            raise from_validation_error(exc, PairwiseOptions, prefix=field) from None
        raise from_validation_error(exc, PairwiseRubric, file=path) from None
    except ConfigError as exc:
        raise exc.at(path) from None


def plan_pairwise(sensors: list[tuple[dict[str, Any], str]], experiment: Path, file: Path,
                  subjects: int) -> PairwiseJudge | None:
    """The experiment's `pairwise_judge`, if one of its `sensors` ((spec, the field it was
    written at)) is one; `ConfigError` naming the file and field when it is badly written or
    the run has fewer than two subjects."""
    named = [(s, field) for s, field in sensors if s.get("kind") == PAIRWISE_JUDGE]
    if not named:
        return None
    if len(named) > 1:
        raise ConfigError("one pairwise_judge per experiment (it compares every subject with "
                          "the control)", file=file, field=f"{named[1][1]}.kind")
    spec, field = named[0]
    if subjects < 2:
        raise ConfigError("pairwise_judge compares each subject with the control (the first "
                          f"subject), so it needs two subjects at least; the run has "
                          f"{subjects}", file=file, field="subjects")
    options = {k: v for k, v in spec.items() if k != "kind"}
    rubric = options.get("rubric")
    if not isinstance(rubric, str) or not rubric:
        raise ConfigError("needs 'rubric': the path of the judge's rubric file, relative to "
                          "the experiment", file=file, field=f"{field}.rubric")
    path = (experiment / rubric).resolve()
    if not path.is_file():
        raise ConfigError(f"rubric file {path} not found", file=file, field=f"{field}.rubric")
    meta, body = read_frontmatter(path)
    try:
        return build_pairwise(options, meta, body, path, field)
    except ConfigError as exc:
        raise exc.at(file) from None
