"""`random`: calls the target skill with probability `p`, whatever the prompt.

The lower-bound baseline of `003_…`: a subject that beats it knows something about the prompt.
"""

from typing import Any

from pydantic import ConfigDict, Field

from ix.domain.model import Model
from ix.domain.types import Subject
from ix.eval.models import EvalObservation, ToolCall
from ix.runtimes._seeding import uniform
from ix.runtimes.registry import RuntimeContext, RuntimeKind, register


class RandomOptions(Model):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    p: float = Field(0.5, ge=0.0, le=1.0)
    skill: str | None = None


class RandomRuntime:
    def __init__(self, options: RandomOptions, context: RuntimeContext):
        self.p = options.p
        self.skill = options.skill or context.target_skill or "skill"

    async def invoke(
        self, subject: Subject, stimulus: Any, *, seed: int = 0, attempt: int = 0
    ) -> EvalObservation:
        if uniform(seed, attempt, 0) < self.p:
            return EvalObservation(
                content=f"Using the {self.skill} skill.",
                tool_calls=(ToolCall(name="Skill", input={"skill": self.skill}),),
            )
        return EvalObservation(content="Answered directly.")


register(RuntimeKind(
    name="random",
    history="unused",
    options=RandomOptions,
    build=RandomRuntime,
    default_concurrency=100,
    summary="baseline: calls the target skill with probability p, ignoring the prompt",
))
