"""The `scripted` runtime: known answers per case, or a rule, deterministic and free."""

import asyncio
from pathlib import Path

import pytest

from ix.domain.errors import ConfigError, TrialError
from ix.domain.types import Interaction, Subject
from ix.domain.workspace import WORKSPACE
from ix.eval.models import EvalCase
from ix.eval.sensors import build_sensor
from ix.runtimes import RuntimeContext, build_runtime

SUBJECT = Subject(name="s")
MUST = EvalCase(id="must-1", prompt="p", expectation="must_trigger")
NOT = EvalCase(id="not-1", prompt="p", expectation="should_not_trigger")


def invoke(answers, case, **options):
    rt = build_runtime({"kind": "scripted", "answers": answers, **options},
                       RuntimeContext(target_skill="target"))
    return asyncio.run(rt.invoke(SUBJECT, case, seed=1))


def fired(observation) -> list[str]:
    return [c.input["skill"] for c in observation.tool_calls if c.name == "Skill"]


def test_perfect_fires_the_target_exactly_where_the_case_expects_it():
    assert fired(invoke("perfect", MUST)) == ["target"]
    assert fired(invoke("perfect", NOT)) == []
    sensor = build_sensor("activation", {}, target_skill="target")
    for case, passed in ((MUST, True), (NOT, False)):
        reading = sensor.sense(Interaction(stimulus=case, trial_index=0,
                                           observation=invoke("perfect", case)))
        assert reading[0].passed is passed


def test_wrong_is_the_opposite_and_skill_option_names_another_skill():
    assert fired(invoke("wrong", MUST)) == []
    assert fired(invoke("wrong", NOT, skill="other")) == ["other"]


def test_a_case_answer_says_which_skills_fire_what_text_and_tools():
    answers = {"must-1": {"skills": ["a", "b"], "text": "Done.",
                          "tool_calls": [{"name": "Read", "input": {"file_path": "x"}}]},
               "default": "opposite"}
    obs = invoke(answers, MUST)
    assert fired(obs) == ["a", "b"]
    assert obs.content == "Done."
    assert [c.name for c in obs.tool_calls] == ["Skill", "Skill", "Read"]
    assert fired(invoke(answers, NOT)) == ["target"]  # default: opposite
    both = {"default": {"rule": "expected", "skills": ["helper"], "text": "Both."}}
    assert fired(invoke(both, MUST)) == ["target", "helper"]
    assert fired(invoke(both, NOT)) == ["helper"]


def test_a_case_without_an_answer_or_default_is_an_errored_trial_naming_it():
    with pytest.raises(TrialError) as info:
        invoke({"must-1": "expected"}, NOT)
    assert info.value.kind == "scripted" and "'not-1'" in info.value.message
    with pytest.raises(TrialError, match="boom"):
        invoke({"default": {"error": "boom"}}, MUST)


def test_files_are_written_inside_the_workspace_and_never_outside(tmp_path: Path):
    token = WORKSPACE.set(tmp_path)
    try:
        invoke({"default": {"files": {"out/summary.json": "{}"}}}, MUST)
        assert (tmp_path / "out" / "summary.json").read_text() == "{}"
        with pytest.raises(ConfigError):
            invoke({"default": {"files": {"../escape.txt": "x"}}}, MUST)
    finally:
        WORKSPACE.reset(token)
    assert not (tmp_path.parent / "escape.txt").exists()
    with pytest.raises(TrialError, match="no workspace"):
        invoke({"default": {"files": {"a": "b"}}}, MUST)


def test_same_case_same_answer_whatever_the_seed():
    rt = build_runtime({"kind": "scripted", "answers": "perfect"}, RuntimeContext())
    seen = {asyncio.run(rt.invoke(SUBJECT, MUST, seed=s, attempt=a)).model_dump_json()
            for s in range(20) for a in range(2)}
    assert len(seen) == 1


@pytest.mark.parametrize("spec,field", [
    ({"kind": "scripted"}, "runtime.answers"),
    ({"kind": "scripted", "answers": "best"}, "runtime.answers"),
    ({"kind": "scripted", "answers": {"a": {"skill": ["x"]}}}, "runtime.answers.a"),
    ({"kind": "scripted", "answers": {"a": {"skills": "x"}}}, "runtime.answers.a.skills"),
    ({"kind": "scripted", "answers": {"a": "best"}}, "runtime.answers.a.rule"),
])
def test_bad_answers_name_the_field(spec, field):
    with pytest.raises(ConfigError) as info:
        build_runtime(spec, RuntimeContext())
    assert (info.value.field or "").startswith(field), info.value.field
