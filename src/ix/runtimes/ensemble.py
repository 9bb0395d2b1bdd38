"""`ensemble`: several subjects of the experiment answering as one (`003_…`'s ENSEMBLE:
"combine multiple agents, compare to individuals").

The members are subjects of the same experiment, so each of their trials is recorded on its
own line, under its own name, and compared with the ensemble like any subject. A member is
asked once per trial: its own trial and every ensemble it belongs to share the one call
(`Shared`, keyed by case, trial seed and attempt), so an ensemble costs nothing beyond its
members. Each member's answer is read by its first sensor; `combine` makes one verdict of
those readings (`majority`: more than half passed, a tie does not; `any`: one passed;
`first`: the first member's), and the ensemble answers with the first member's observation
that agrees with it, so the ensemble's own sensors read the verdict again, and its trial line
says who answered (`observation.meta.ensemble`). The members' tokens and cost stay on their
own lines: the ensemble's line carries 0, the sum in `meta.ensemble.cost_usd`.
"""

import asyncio
import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, cast

from pydantic import ConfigDict, Field, field_validator

from ix.domain.errors import TrialError
from ix.domain.model import Model
from ix.domain.ports import ExperimentRuntime
from ix.domain.types import Interaction, Subject
from ix.eval.models import EvalObservation
from ix.runtimes.registry import RuntimeContext, RuntimeKind, register

Combine = Literal["majority", "any", "first"]


class EnsembleOptions(Model):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    #: names of subjects of the same experiment, each once
    members: list[Annotated[str, Field(min_length=1)]] = Field(min_length=1)
    combine: Combine = "majority"

    @field_validator("members")
    @classmethod
    def _once(cls, members: list[str]) -> list[str]:
        twice = sorted({m for m in members if members.count(m) > 1})
        if twice:
            raise ValueError(f"{', '.join(map(repr, twice))} listed twice: each member once")
        return members


class Shared:
    """A member's runtime, called once per (case, trial seed, attempt) however many ask:
    its own trial and the ensembles it belongs to (`consumers` in all) await one call. The
    call runs as a task of its own, so one asker timing out does not cancel it for another."""

    def __init__(self, runtime: ExperimentRuntime, consumers: int):
        self.runtime = runtime
        self.consumers = consumers
        self._calls: dict[tuple[str, int, int], list[Any]] = {}

    def __getattr__(self, name: str) -> Any:  # `batcher`, `reads_history`, ...: the member's
        return getattr(self.runtime, name)

    async def invoke(self, subject: Subject, stimulus: Any, *, seed: int = 0,
                     attempt: int = 0) -> Any:
        key = (stimulus.id, seed, attempt)
        entry = self._calls.get(key)
        if entry is None:
            call = self.runtime.invoke(subject, stimulus, seed=seed, attempt=attempt)
            entry = self._calls[key] = [asyncio.ensure_future(call), 0]
        entry[1] += 1
        if entry[1] >= self.consumers:  # every asker has it: forget it
            del self._calls[key]
        return await asyncio.shield(entry[0])


@dataclass(frozen=True)
class Member:
    subject: Subject
    runtime: Shared
    sensors: Sequence[Any]


class EnsembleRuntime:
    """Asks every member, reads each answer with the member's first sensor, and answers with
    the combined verdict (see the module). `bind` gives it its members, once the plan has
    them all; an ensemble never bound fails its trials."""

    def __init__(self, options: EnsembleOptions, context: RuntimeContext):
        self.options = options
        self.members: tuple[Member, ...] = ()

    def bind(self, members: Sequence[Member]) -> None:
        self.members = tuple(members)

    async def invoke(self, subject: Subject, stimulus: Any, *, seed: int = 0,
                     attempt: int = 0) -> EvalObservation:
        if not self.members:
            raise TrialError("ensemble", "ensemble: no member was bound (a bug of ix)")
        answers = await asyncio.gather(
            *(m.runtime.invoke(m.subject, stimulus, seed=seed, attempt=attempt)
              for m in self.members), return_exceptions=True)
        for member, answer in zip(self.members, answers, strict=True):
            if isinstance(answer, BaseException):
                kind = answer.kind if isinstance(answer, TrialError) else type(answer).__name__
                raise TrialError(kind, f"ensemble member {member.subject.name!r}: {answer}")
        verdicts = [await _passed(m, stimulus, a)
                    for m, a in zip(self.members, answers, strict=True)]
        verdict = combine(self.options.combine, verdicts)
        chosen = next((i for i, v in enumerate(verdicts) if v == verdict), 0)
        observation = cast(EvalObservation, answers[chosen])
        meta = {**(observation.meta or {}), "ensemble": {
            "combine": self.options.combine, "passed": verdict,
            "chosen": self.members[chosen].subject.name,
            "members": [{"subject": m.subject.name, "passed": v}
                        for m, v in zip(self.members, verdicts, strict=True)],
            "cost_usd": sum(getattr(a, "cost_usd", 0.0) for a in answers)}}
        return observation.model_copy(update={"meta": meta, "tokens_input": 0,
                                              "tokens_output": 0, "cost_usd": 0.0})


def combine(rule: Combine, verdicts: Sequence[bool | None]) -> bool:
    """One verdict of the members' (None, a sensor that could not read, counts as failed)."""
    if rule == "first":
        return bool(verdicts[0])
    passed = sum(bool(v) for v in verdicts)
    return passed > 0 if rule == "any" else 2 * passed > len(verdicts)


async def _passed(member: Member, stimulus: Any, observation: Any) -> bool | None:
    """The member's first sensor's verdict on its answer."""
    if not member.sensors:
        return None
    got = member.sensors[0].sense(Interaction(stimulus=stimulus, trial_index=0,
                                              observation=observation))
    if inspect.isawaitable(got):  # a judge
        got = await got
    readings = list(got)
    return readings[0].passed if readings else None


register(RuntimeKind(
    name="ensemble",
    history="sent",  # to the members, each of which is checked on its own
    options=EnsembleOptions,
    build=EnsembleRuntime,
    default_concurrency=100,
    summary="several subjects of the experiment as one: majority, any or first",
))
