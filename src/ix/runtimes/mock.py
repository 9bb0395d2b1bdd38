"""`mock`: a deterministic stand-in subject for tests and demos (DESIGN.md §2).

Each trial draws, with its trial seed, whether it errors (`error_rates`) and whether the Skill
tool is called (`activation_rates`), so a run is reproducible to the byte. With
`context_decay`, the activation probability halves every `half_life` turns of the case's
`history` (DESIGN.md §7): a known degradation curve, for offline demos and tests.
"""

import asyncio
from typing import Annotated, Any

from pydantic import ConfigDict, Field

from ix.domain.errors import TrialError
from ix.domain.model import Model
from ix.domain.types import Subject
from ix.eval.models import EvalObservation, ToolCall
from ix.runtimes._seeding import uniform
from ix.runtimes.registry import RuntimeContext, RuntimeKind, register

Rate = Annotated[float, Field(ge=0.0, le=1.0)]


class ContextDecay(Model):
    """How fast a mock subject forgets its skills as the conversation grows."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    half_life: float = Field(gt=0, allow_inf_nan=False,
                             description="turns of history that halve the activation rate")


class MockOptions(Model):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    activation_rates: dict[str, Rate] = Field(default_factory=dict)
    default_rate: float = Field(0.0, ge=0.0, le=1.0)
    error_rates: dict[str, Rate] = Field(default_factory=dict)
    latency_ms: float = Field(0, ge=0)
    skill: str | None = None
    context_decay: ContextDecay | None = None



class MockRuntime:
    """Calls the Skill tool with the configured probability per case."""

    def __init__(self, options: MockOptions, context: RuntimeContext):
        self.options = options
        self.skill = options.skill or context.target_skill or "skill"
        # every trial answers one of two observations: made once (they are frozen), as a
        # validated model costs more than the rest of a mock trial
        latency = int(options.latency_ms)
        self._activated = EvalObservation(
            content=f"Using the {self.skill} skill.",
            tool_calls=(ToolCall(name="Skill", input={"skill": self.skill}),),
            duration_ms=latency)
        self._direct = EvalObservation(content="Answered directly.", duration_ms=latency)

    async def invoke(
        self, subject: Subject, stimulus: Any, *, seed: int = 0, attempt: int = 0
    ) -> EvalObservation:
        opts = self.options
        if opts.latency_ms:
            await asyncio.sleep(opts.latency_ms / 1000)
        case_id = stimulus.id
        if uniform(seed, attempt, 0) < opts.error_rates.get(case_id, 0.0):
            raise TrialError("runtime_error", f"mock: simulated error on {case_id}")
        if uniform(seed, attempt, 1) < self.rate(stimulus):
            return self._activated
        return self._direct

    def rate(self, stimulus: Any) -> float:
        """The probability that a trial of `stimulus` calls the Skill tool: its case's rate,
        halved every `context_decay.half_life` turns of its history."""
        opts = self.options
        rate = opts.activation_rates.get(stimulus.id, opts.default_rate)
        if opts.context_decay is not None:
            turns = len(getattr(stimulus, "history", ()) or ())
            rate *= 0.5 ** (turns / opts.context_decay.half_life)
        return rate


register(RuntimeKind(
    name="mock",
    history="unused",
    options=MockOptions,
    build=MockRuntime,
    default_concurrency=100,
    summary="deterministic stand-in: per-case activation and error rates, simulated latency, "
            "decay with the conversation's length",
))
