"""The `mock` runtime: reproducible draws at the configured rates."""

import asyncio

import pytest

from ix.domain.errors import ConfigError, TrialError
from ix.domain.types import Subject
from ix.eval.models import EvalCase, Turn
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


def test_context_decay_halves_the_rate_every_half_life_turns_of_history():
    rt = build_runtime({"kind": "mock", "activation_rates": {"a": 0.8},
                        "context_decay": {"half_life": 2}}, RuntimeContext(target_skill="s"))

    def talked(turns: int) -> EvalCase:
        history = tuple(Turn(role="user" if i % 2 == 0 else "assistant", content="x")
                        for i in range(turns))
        return EvalCase(id="a", prompt="p", expectation="must_trigger", history=history)

    assert [rt.rate(talked(n)) for n in (0, 1, 2, 4, 8)] == pytest.approx(
        [0.8, 0.8 / 2 ** 0.5, 0.4, 0.2, 0.05])
    for turns, rate in ((0, 0.8), (4, 0.2)):
        case = talked(turns)
        hits = sum(bool(asyncio.run(rt.invoke(SUBJECT, case, seed=s)).tool_calls)
                   for s in range(4000))
        assert abs(hits / 4000 - rate) < 4 * (rate * (1 - rate) / 4000) ** 0.5
    # without context_decay the history changes nothing: the same draws as before
    plain = build_runtime({"kind": "mock", "activation_rates": {"a": 0.8}},
                          RuntimeContext(target_skill="s"))
    assert [bool(asyncio.run(plain.invoke(SUBJECT, talked(8), seed=s)).tool_calls)
            for s in range(200)] == [bool(invoke(plain, "a", s).tool_calls) for s in range(200)]


@pytest.mark.parametrize("decay", [{"half_life": 0}, {"half_life": -1}, {"halflife": 2}, 3])
def test_a_bad_context_decay_is_a_config_error(decay):
    with pytest.raises(ConfigError) as caught:
        build_runtime({"kind": "mock", "context_decay": decay}, RuntimeContext())
    assert caught.value.field.startswith("runtime.context_decay")
