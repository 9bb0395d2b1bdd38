"""The `mock` runtime: reproducible draws at the configured rates."""

import asyncio

import pytest

from ix.domain.errors import ConfigError, TrialError
from ix.domain.types import Subject
from ix.eval.models import EvalCase
from ix.runtimes import RuntimeContext, build_runtime

SUBJECT = Subject(name="s")


def invoke(rt, case_id: str, seed: int, attempt: int = 0):
    case = EvalCase(id=case_id, prompt="p", expectation="must_trigger")
    return asyncio.run(rt.invoke(SUBJECT, case, seed=seed, attempt=attempt))


def test_activation_frequency_matches_the_rate():
    rt = build_runtime({"kind": "mock", "activation_rates": {"a": 0.3}},
                       RuntimeContext(target_skill="skill-a"))
    hits = sum(bool(invoke(rt, "a", seed).tool_calls) for seed in range(4000))
    assert abs(hits / 4000 - 0.3) < 0.03
    obs = next(invoke(rt, "a", s) for s in range(100) if invoke(rt, "a", s).tool_calls)
    assert obs.tool_calls[0].name == "Skill"
    assert obs.tool_calls[0].input == {"skill": "skill-a"}


def test_same_seed_same_draw_and_a_retry_is_a_new_draw():
    rt = build_runtime({"kind": "mock", "default_rate": 0.5}, RuntimeContext())
    assert [invoke(rt, "x", s) for s in range(50)] == [invoke(rt, "x", s) for s in range(50)]
    differs = [s for s in range(50) if invoke(rt, "x", s, 0) != invoke(rt, "x", s, 1)]
    assert differs


def test_error_rates_raise_a_trial_error():
    rt = build_runtime({"kind": "mock", "error_rates": {"e": 1.0}}, RuntimeContext())
    with pytest.raises(TrialError) as info:
        invoke(rt, "e", 1)
    assert info.value.kind == "runtime_error"


def test_skill_option_overrides_the_target():
    rt = build_runtime({"kind": "mock", "default_rate": 1.0, "skill": "other"},
                       RuntimeContext(target_skill="t"))
    assert invoke(rt, "x", 0).tool_calls[0].input["skill"] == "other"


@pytest.mark.parametrize("spec,field", [
    ({"kind": "mock", "default_rate": 2}, "runtime.default_rate"),
    ({"kind": "mock", "activation_rates": {"a": -0.1}}, "runtime.activation_rates.a"),
    ({"kind": "mock", "latency": 5}, "runtime.latency"),
    ({"kind": "random", "p": 1.5}, "runtime.p"),
])
def test_bad_options_name_the_field(spec, field):
    with pytest.raises(ConfigError) as info:
        build_runtime(spec, RuntimeContext())
    assert info.value.field == field


def test_random_runtime_ignores_the_prompt_and_hits_at_p():
    rt = build_runtime({"kind": "random", "p": 0.7}, RuntimeContext(target_skill="t"))
    hits = sum(bool(invoke(rt, "a", seed).tool_calls) for seed in range(4000))
    assert abs(hits / 4000 - 0.7) < 0.03
