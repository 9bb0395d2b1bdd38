"""Loading looks for every problem, not the first only, and names close choices (issue 16 §2)."""

import pytest

from conftest import case, write
from ix.domain.errors import ConfigError, ConfigErrors, did_you_mean
from ix.eval.validation import from_validation_error
from ix.lab.loader import MissingSkill, check_experiment, load_experiment
from ix.lab.schema import BatterySpec, ExperimentSpec, validate


def test_did_you_mean_names_a_close_choice_or_nothing():
    assert did_you_mean("xlsxx", ["pdf", "xlsx", "docx"]) == "; did you mean 'xlsx'?"
    assert did_you_mean("Activation", ["activation", "token"]) == \
        "; did you mean 'activation'?"
    assert did_you_mean("zzz", ["pdf", "xlsx"]) == ""
    assert did_you_mean(3, ["pdf"]) == ""  # a value of another type: nothing to compare


def test_every_schema_problem_is_reported_and_a_union_counts_once():
    with pytest.raises(ConfigErrors) as caught:
        validate(ExperimentSpec, {"name": "e", "trails": 3, "seed": "x", "prior": "jefreys"},
                 file="e.yaml")
    fields = [e.field for e in caught.value.errors]
    assert sorted(fields) == ["prior", "seed", "trails"]
    assert "did you mean 'trials'?" in caught.value.errors[fields.index("trails")].message
    assert "did you mean 'jeffreys'?" in caught.value.errors[fields.index("prior")].message
    assert "(and 2 more problems" in caught.value.render()
    # `seeds: int | list[int]`: pydantic reports each branch; the user sees one problem
    from pydantic import ValidationError
    try:
        BatterySpec.model_validate({"name": "b", "experiments": ["x"], "seeds": "3"})
    except ValidationError as exc:
        one = from_validation_error(exc, BatterySpec, file="b.yaml")
    assert not isinstance(one, ConfigErrors) and one.field.startswith("seeds")


def test_check_experiment_reads_past_each_bad_case(lab):
    exp = lab / "exp"
    write(exp / "experiment.yaml", "name: exp\nskill: t\nruntime: mock\n")
    case(exp, "must-001", "must_trigger")
    case(exp, "must-002", "sometimes")
    case(exp, "not-001", "should_not_trigger", extra="colour: red\n")
    write(exp / "cases" / "not-002.txt", "---\nexpectation: should_not_trigger\n---\nx\n")
    write(exp / "cases" / ".gitkeep", "")
    loaded, problems = check_experiment(exp, lab)
    assert [(p.file.rsplit("/", 1)[-1], p.field) for p in problems] == [
        ("not-002.txt", "extension"), ("must-002.md", "expectation"),
        ("not-001.md", "colour")]
    assert loaded is not None and [c.id for c in loaded.experiment.cases] == ["must-001"]
    with pytest.raises(ConfigErrors) as caught:
        load_experiment(exp, lab)
    assert len(caught.value.errors) == 3


@pytest.mark.parametrize(("runtime", "refused"), [("mock", False), ("lexical", True),
                                                  ("claude-code", True)])
def test_the_skill_under_test_must_exist_where_a_runtime_reads_skills(lab, runtime, refused):
    write(lab / "skills" / "xlsx" / "SKILL.md", "---\nname: xlsx\ndescription: Sheets.\n---\n")
    exp = lab / "exp"
    write(exp / "experiment.yaml", f"name: exp\nskill: xlsxx\nruntime: {runtime}\n")
    case(exp, "must-001", "must_trigger")
    _, problems = check_experiment(exp, lab)
    if not refused:
        assert problems == []
        return
    [problem] = problems
    assert isinstance(problem, MissingSkill) and problem.field == "skill"
    assert "did you mean 'xlsx'?" in problem.message and "skills: xlsx" in problem.message


def test_a_plugin_skill_and_a_skill_given_by_path_are_not_looked_for_in_skills(lab):
    write(lab / "shared" / "sheets" / "SKILL.md",
          "---\nname: sheets\ndescription: Sheets.\n---\n")
    exp = lab / "exp"
    write(exp / "experiment.yaml", """
        name: exp
        runtime: lexical
        sensors:
          - {kind: activation, skill: sheets}
          - {kind: activation, skill: "office:xlsx"}
        subjects:
          - name: a
            skills: [../shared/sheets]
        """)
    case(exp, "must-001", "must_trigger")
    assert check_experiment(exp, lab)[1] == []


def test_a_problem_of_ix_yaml_does_not_hide_the_cases(lab):
    write(lab / "ix.yaml", "trails: 3\n")
    exp = lab / "exp"
    write(exp / "experiment.yaml", "name: exp\nskill: t\nruntime: mock\n")
    case(exp, "must-001", "must_trigger", extra="colour: red\n")
    loaded, problems = check_experiment(exp, lab)
    assert loaded is None
    assert [p.field for p in problems] == ["trails", "colour"]
    assert all(isinstance(p, ConfigError) for p in problems)
