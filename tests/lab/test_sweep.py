"""`sweep:` (DESIGN.md §7): the first subject expanded into a grid of conditions, the subject
as written first (the control); bad sweeps refused naming the field."""

import pytest

from conftest import case, write
from ix.domain.errors import ConfigError
from ix.engine.plan import build_plan
from ix.lab.loader import load_experiment


def lab_with(lab, sweep: str, *, subjects: str | None = None, extra: str = ""):
    for name in ("a", "b", "c"):
        write(lab / "skills" / name / "SKILL.md",
              f"---\nname: {name}\ndescription: Skill {name}.\n---\nx\n")
    exp = lab / "exp"
    subjects = subjects or ("  - name: base\n    skills: [a, b, c]\n"
                            "    runtime: {kind: mock, default_rate: 0.5}\n"
                            "  - name: other\n    runtime: {kind: mock}\n")
    write(exp / "experiment.yaml", "name: exp\nsensor: {kind: activation, skill: a}\n"
          f"subjects:\n{subjects}sweep: {sweep}\n{extra}")
    case(exp, "must-001", "must_trigger")
    case(exp, "not-001", "should_not_trigger")
    return exp


def test_the_grid_in_order_the_control_first_and_the_other_subjects_after(lab):
    exp = lab_with(lab, "{default_rate: [0.2, 0.9], latency_ms: [0, 5], ablate: skills}")
    loaded = load_experiment(exp, lab)
    names = [s.name for s in loaded.experiment.subjects]
    assert names[0] == "base" and names[-1] == "other"
    assert names[1:5] == ["base[default_rate=0.2,latency_ms=0]",
                          "base[default_rate=0.2,latency_ms=0,-a]",
                          "base[default_rate=0.2,latency_ms=0,-b]",
                          "base[default_rate=0.2,latency_ms=0,-c]"]
    assert len(names) == 1 + 2 * 2 * 4 + 1
    by_name = {s.name: s for s in loaded.experiment.subjects}
    minus_b = by_name["base[default_rate=0.9,latency_ms=5,-b]"].config
    assert [s["name"] for s in minus_b["skills"]] == ["a", "c"]
    assert minus_b["runtime"] == {"kind": "mock", "default_rate": 0.9, "latency_ms": 5}
    plan = build_plan(loaded)
    sp = {p.subject.name: p for p in plan.subjects}
    assert sp["base[default_rate=0.9,latency_ms=5,-b]"].runtime.options.default_rate == 0.9
    assert {p.target_skill for p in plan.subjects} == {"a"}


def test_a_value_equal_to_the_subjects_own_is_the_control_not_a_condition(lab):
    exp = lab_with(lab, "{default_rate: [0.5, 0.9], ablate: skills}")
    names = [s.name for s in load_experiment(exp, lab).experiment.subjects]
    assert names[:4] == ["base", "base[-a]", "base[-b]", "base[-c]"]
    assert names[4:8] == ["base[default_rate=0.9]", "base[default_rate=0.9,-a]",
                          "base[default_rate=0.9,-b]", "base[default_rate=0.9,-c]"]


def test_model_is_a_subject_key_and_reaches_the_runtime(lab):
    exp = lab_with(lab, "{model: [claude-sonnet-4-5, claude-haiku-4-5]}",
                   subjects="  - name: base\n    runtime: {kind: anthropic, "
                            "model: claude-opus-4-1}\n")
    loaded = load_experiment(exp, lab)
    haiku = loaded.experiment.subjects[2]
    assert haiku.name == "base[model=claude-haiku-4-5]"
    assert haiku.config["runtime"]["model"] == haiku.config["model"] == "claude-haiku-4-5"


@pytest.mark.parametrize(("sweep", "field", "words"), [
    ("{}", "sweep", "a mapping of keys"),
    ("{model: []}", "sweep", "non-empty list"),
    ("{model: claude}", "sweep", "non-empty list"),
    ("{ablate: models}", "sweep", "ablate takes `skills`"),
    ("{default_rate: [0.2, 0.2]}", "sweep", "listed twice"),
    ("{default_rate: [[0.2]]}", "sweep", "string, number or boolean"),
    ("{skills: [a]}", "sweep.skills", "ablate: skills"),
    ("{name: [x]}", "sweep.name", "cannot be swept"),
    ("{default_rat: [0.2]}", "sweep.default_rat", "unknown key"),
    ("{default_rate: [2.0]}", "sweep.default_rate", "less than or equal to 1"),
])
def test_a_bad_sweep_names_the_field(lab, sweep, field, words):
    exp = lab_with(lab, sweep)
    with pytest.raises(ConfigError) as caught:
        build_plan(load_experiment(exp, lab))
    assert caught.value.field == field and words in caught.value.message, caught.value
    assert str(caught.value.file).endswith("experiment.yaml")


def test_ablating_a_subject_without_skills_and_a_grid_above_max_subjects_are_refused(lab):
    exp = lab_with(lab, "{ablate: skills}", subjects="  - name: base\n    runtime: mock\n")
    with pytest.raises(ConfigError) as caught:
        load_experiment(exp, lab)
    assert caught.value.field == "sweep.ablate" and "no skills" in caught.value.message
    exp = lab_with(lab, "{default_rate: [0.1, 0.2, 0.3], latency_ms: [1, 2, 3]}",
                   extra="max_subjects: 8\n")
    with pytest.raises(ConfigError) as caught:
        load_experiment(exp, lab)
    assert caught.value.field == "sweep"
    assert "make 11 subjects, more than max_subjects (8)" in caught.value.message


def test_a_sweep_with_context_runs_each_condition_at_each_length(lab):
    exp = lab_with(lab, "{default_rate: [0.9]}",
                   extra="context: {prefix: builtin:coding-session, lengths: [0, 4]}\n")
    names = [s.name for s in load_experiment(exp, lab).experiment.subjects]
    assert names == ["base[ctx=0]", "base[ctx=4]", "base[default_rate=0.9][ctx=0]",
                     "base[default_rate=0.9][ctx=4]", "other[ctx=0]", "other[ctx=4]"]


def test_a_dotted_key_sweeps_an_option_inside_a_mapping_option(lab):
    exp = lab_with(lab, "{context_decay.half_life: [32, 4]}",
                   subjects="  - name: base\n    runtime: {kind: mock, default_rate: 0.9, "
                            "context_decay: {half_life: 32}}\n")
    loaded = load_experiment(exp, lab)
    assert [s.name for s in loaded.experiment.subjects] == [
        "base", "base[context_decay.half_life=4]"]
    fast = build_plan(loaded).subjects[1].runtime
    assert fast.options.context_decay.half_life == 4 and fast.options.default_rate == 0.9
    exp = lab_with(lab, "{context_decay.half_life: [0]}",
                   subjects="  - name: base\n    runtime: {kind: mock}\n")
    with pytest.raises(ConfigError) as caught:
        build_plan(load_experiment(exp, lab))
    assert caught.value.field == "sweep.context_decay.half_life"
