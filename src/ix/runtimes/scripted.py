"""`scripted`: a subject that answers what it is told to, case by case (`003_…`'s built-in
`scripted` agent).

Each case gets a known answer: which skills fire, what text comes back, what tools are
called, which files it leaves in the workspace, or a runtime error; or a rule, `expected`
(fire the target skill exactly where the case expects it) or `opposite`. `answers: perfect`
and `answers: wrong` are those rules for every case. Deterministic and free, so a run of it
checks the pipeline (`ix sanity`), not a subject.
"""

from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, field_validator

from ix.domain.errors import TrialError
from ix.domain.model import Model
from ix.domain.types import Subject
from ix.domain.workspace import current_workspace
from ix.eval.models import EvalObservation, ToolCall
from ix.fs.paths import inside
from ix.runtimes.registry import RuntimeContext, RuntimeKind, register

Rule = Literal["expected", "opposite"]
#: `answers:` as one word: every case answered by a rule
WHOLE = {"perfect": "expected", "wrong": "opposite"}
#: the key of `answers:` that answers every case not listed
DEFAULT = "default"


class ScriptedCall(Model):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    name: str = Field(min_length=1)
    input: dict[str, Any] = Field(default_factory=dict)


class ScriptedAnswer(Model):
    """One case's answer, as written."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    #: `expected` or `opposite` (written as the answer itself): the target skill where the
    #: case expects it, or where it does not; the keys below then add to it
    rule: Rule | None = None
    #: the skills called (the Skill tool, in this order): what the activation sensor reads
    skills: list[str] = Field(default_factory=list)
    #: the answer's text (default: says which skill it used, or that it answered directly)
    text: str | None = None
    #: other tool calls, after the skills'
    tool_calls: list[ScriptedCall] = Field(default_factory=list)
    #: files written into the trial's workspace (path relative to it -> content)
    files: dict[str, str] = Field(default_factory=dict)
    #: the trial fails with this message instead (a runtime error, kind `scripted`)
    error: str | None = None


class ScriptedOptions(Model):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    #: case id (or `default`) -> its answer; written `perfect` or `wrong`: every case's
    answers: dict[str, ScriptedAnswer]
    #: the skill `expected` and `opposite` fire; default: the experiment's target skill
    skill: str | None = None

    @field_validator("answers", mode="before")
    @classmethod
    def _rules(cls, value: Any) -> Any:
        """`perfect` / `wrong`, and a case's answer written as a rule, as mappings."""
        if isinstance(value, str):
            if value not in WHOLE:
                raise ValueError(f"{value!r} is not a rule: write perfect, wrong, or a "
                                 "mapping of case ids (or default) to answers")
            return {DEFAULT: {"rule": WHOLE[value]}}
        if isinstance(value, dict):
            return {k: {"rule": v} if isinstance(v, str) else v for k, v in value.items()}
        return value


class ScriptedRuntime:
    """Answers each case as `answers` says; a case neither listed nor covered by `default`
    is an errored trial that names it."""

    def __init__(self, options: ScriptedOptions, context: RuntimeContext):
        self.skill = options.skill or context.target_skill or "skill"
        self.answers = options.answers

    async def invoke(
        self, subject: Subject, stimulus: Any, *, seed: int = 0, attempt: int = 0
    ) -> EvalObservation:
        answer = self.answers.get(stimulus.id, self.answers.get(DEFAULT))
        if answer is None:
            raise TrialError("scripted", f"scripted: no answer for case {stimulus.id!r} and "
                             "no `default` in answers")
        skills = list(answer.skills)
        if answer.rule is not None:
            fire = (stimulus.expectation == "must_trigger") == (answer.rule == "expected")
            skills = [self.skill, *skills] if fire else skills
        if answer.error is not None:
            raise TrialError("scripted", answer.error)
        if answer.files:
            _write(answer.files, stimulus.id)
        calls = [ToolCall(name="Skill", input={"skill": s}) for s in skills]
        calls += [ToolCall(name=c.name, input=c.input) for c in answer.tool_calls]
        text = answer.text
        if text is None:
            text = f"Using the {skills[0]} skill." if skills else "Answered directly."
        return EvalObservation(content=text, tool_calls=tuple(calls))


def _write(files: dict[str, str], case_id: str) -> None:
    """The answer's files, inside the trial's workspace (never outside it)."""
    root = current_workspace()
    if root is None:
        raise TrialError("scripted", f"scripted: the answer to {case_id!r} writes files, but "
                         "its case has no workspace (`files:` or `workspace:`)")
    for name, content in files.items():
        path = inside(root, root / name, field=f"answers.{case_id}.files")
        path.parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(content, encoding="utf-8")


register(RuntimeKind(
    name="scripted",
    history="unused",
    options=ScriptedOptions,
    build=ScriptedRuntime,
    default_concurrency=100,
    summary="known answers per case (skills, text, files) or a rule: perfect, wrong",
))
