"""The `ensemble` runtime: members asked once per trial, their verdicts combined."""

import asyncio
from collections import Counter

import pytest

from ix.domain.errors import ConfigError, TrialError
from ix.domain.types import Subject
from ix.eval.models import EvalCase, EvalObservation, ToolCall
from ix.eval.sensors import build_sensor
from ix.runtimes import RuntimeContext, build_runtime
from ix.runtimes.ensemble import Member, Shared, combine

CASE = EvalCase(id="must-1", prompt="p", expectation="must_trigger")
SENSOR = build_sensor("activation", {}, target_skill="t")


class Fixed:
    """Calls the skill or not, as told; counts its calls; fails when told to."""

    def __init__(self, fires: bool, cost: float = 0.0, fails: bool = False):
        self.fires, self.cost, self.fails = fires, cost, fails
        self.calls: Counter[tuple[str, int, int]] = Counter()

    async def invoke(self, subject, stimulus, *, seed=0, attempt=0):
        self.calls[(stimulus.id, seed, attempt)] += 1
        await asyncio.sleep(0.01)
        if self.fails:
            raise TrialError("rate_limited", "slow down")
        calls = (ToolCall(name="Skill", input={"skill": "t"}),) if self.fires else ()
        return EvalObservation(content=f"fires={self.fires}", tool_calls=calls,
                               cost_usd=self.cost, tokens_input=10)


def ensemble(rule: str, *members: Fixed, consumers: int = 1):
    runtime = build_runtime({"kind": "ensemble", "members": [f"m{i}" for i in
                                                             range(len(members))],
                             "combine": rule}, RuntimeContext())
    shared = [Shared(m, consumers) for m in members]
    runtime.bind([Member(Subject(name=f"m{i}"), s, (SENSOR,)) for i, s in enumerate(shared)])
    return runtime, shared


@pytest.mark.parametrize("rule,verdicts,want", [
    ("majority", [True, True, False], True), ("majority", [True, False], False),
    ("majority", [True, None, False], False), ("any", [False, None, True], True),
    ("any", [False, False], False), ("first", [False, True, True], False),
    ("first", [True, False, False], True),
])
def test_combine_rules(rule, verdicts, want):
    assert combine(rule, verdicts) is want


def test_the_answer_is_a_member_that_agrees_and_says_who_and_the_cost_stays_with_members():
    runtime, _ = ensemble("majority", Fixed(False, 0.1), Fixed(True, 0.2), Fixed(True, 0.3))
    obs = asyncio.run(runtime.invoke(Subject(name="team"), CASE, seed=5))
    assert obs.content == "fires=True" and obs.cost_usd == 0 and obs.tokens_input == 0
    meta = obs.meta["ensemble"]
    assert meta["chosen"] == "m1" and meta["passed"] is True
    assert [m["passed"] for m in meta["members"]] == [False, True, True]
    assert meta["cost_usd"] == pytest.approx(0.6)


def test_a_member_and_the_ensemble_share_one_call_per_trial():
    member = Fixed(True)
    runtime, (shared,) = ensemble("first", member, consumers=2)

    async def both():
        return await asyncio.gather(shared.invoke(Subject(name="m0"), CASE, seed=1),
                                    runtime.invoke(Subject(name="team"), CASE, seed=1))
    own, combined = asyncio.run(both())
    assert member.calls == Counter({("must-1", 1, 0): 1})
    assert own.content == combined.content
    assert not shared._calls  # both askers had it: forgotten


def test_a_member_that_fails_fails_the_ensembles_trial_naming_it():
    runtime, _ = ensemble("any", Fixed(True), Fixed(True, fails=True))
    with pytest.raises(TrialError) as info:
        asyncio.run(runtime.invoke(Subject(name="team"), CASE, seed=1))
    assert info.value.kind == "rate_limited" and "'m1'" in info.value.message


@pytest.mark.parametrize("options,field", [
    ({"members": []}, "runtime.members"),
    ({"members": ["a", "a"]}, "runtime.members"),
    ({"members": ["a"], "combine": "most"}, "runtime.combine"),
])
def test_bad_options_name_the_field(options, field):
    with pytest.raises(ConfigError) as info:
        build_runtime({"kind": "ensemble", **options}, RuntimeContext())
    assert info.value.field == field
