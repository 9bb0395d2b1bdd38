"""`ix.eval.design`: the pure design checks, on experiments built in memory."""

import pytest

from ix.domain.types import Subject
from ix.eval.design import DEFAULT_WIDTH, cases_needed, check_design, is_stochastic
from ix.eval.models import EvalCase, Experiment
from ix.stats.power import n_for_interval_width


def cases(n_must: int, n_not: int) -> tuple[EvalCase, ...]:
    return (*(EvalCase(id=f"must-{i}", prompt=f"do thing {i}", expectation="must_trigger")
              for i in range(n_must)),
            *(EvalCase(id=f"not-{i}", prompt=f"other thing {i}",
                       expectation="should_not_trigger") for i in range(n_not)))


def subject(name: str, runtime: dict, skills: tuple[str, ...] = ()) -> Subject:
    return Subject(name=name, config={"runtime": runtime,
                                      "skills": [{"name": s} for s in skills]})


def experiment(**kw) -> Experiment:
    base = {"name": "e", "trials": 3, "cases": cases(10, 10),
            "subjects": (subject("a", {"kind": "mock", "default_rate": 0.5}),)}
    return Experiment(**{**base, **kw})


@pytest.mark.parametrize(("runtime", "stochastic"), [
    ({"kind": "mock"}, False),
    ({"kind": "mock", "default_rate": 1.0, "activation_rates": {"x": 0.0}}, False),
    ({"kind": "mock", "activation_rates": {"x": 0.3}}, True),
    ({"kind": "mock", "error_rates": {"x": 0.1}}, True),
    ({"kind": "random"}, True),
    ({"kind": "random", "p": 1.0}, False),
    ({"kind": "lexical"}, True),
    ({"kind": "lexical", "temperature": 0}, False),
    ({"kind": "claude-code"}, True),
    ({"kind": "anthropic", "temperature": 0}, True),
    ({"kind": "command"}, False),
    ({"kind": "http"}, False),
    ({"kind": "scripted", "answers": "perfect"}, False),
    ({"kind": "ensemble", "members": ["a", "b"]}, False),  # its members are judged
    ({"kind": "someone-elses-plugin"}, True),
])
def test_which_runtimes_are_stochastic(runtime, stochastic):
    assert is_stochastic(runtime) is stochastic


def test_the_case_counts_come_from_the_planning_code():
    assert cases_needed(DEFAULT_WIDTH, 0.95) == n_for_interval_width(DEFAULT_WIDTH) == 10
    assert cases_needed(0.2, 0.95) == n_for_interval_width(0.2, p=0.5, level=0.95)


def test_a_sound_design_has_no_warning():
    assert check_design(experiment()) == []


def test_plan_numbers_override_the_experiment():
    exp = experiment()
    assert [w.code for w in check_design(exp, trials=1)] == ["one-trial-stochastic"]
    assert check_design(exp, trials=1, adaptive=True) == []
    assert check_design(exp, trials=1, runtimes={"a": {"kind": "command"}}) == []
    few = check_design(exp, cases=cases(10, 2), filtered=True)
    assert {w.code for w in few} == {"too-few-cases", "unbalanced"}
    assert all("after --filter" in w.message for w in few)


def test_capability_sensors_count_all_cases_and_never_ask_for_balance():
    exp = experiment(sensor="exit_code", cases=cases(12, 0))
    assert check_design(exp) == []
    assert [w.code for w in check_design(exp, cases=cases(3, 0))] == ["too-few-cases"]


def test_a_goal_without_its_control_in_the_run():
    mock = {"kind": "mock", "default_rate": 1.0}
    two = (subject("a", mock), subject("b", mock))
    goal = {"hypothesis": "h", "metric": "f1", "compare": ["a", "b"], "direction": "differ",
            "min_effect": 0.0, "credibility": 0.95}
    exp = experiment(subjects=two, goal=goal)
    assert check_design(exp) == []
    [w] = check_design(exp, subjects=two[1:])
    assert (w.code, w.field) == ("no-control", "goal.compare")


def test_a_skill_only_some_subjects_have_is_a_baseline_not_a_warning():
    lexical = {"kind": "lexical"}
    with_it = subject("with", lexical, ("csv",))
    without = subject("without", lexical, ("other",))
    exp = experiment(subjects=(without, with_it), sensor_options={"skill": "csv"})
    assert check_design(exp) == []
    [w] = check_design(exp, subjects=[without])
    assert (w.code, w.field) == ("unseen-cases", "subjects[0].skills")
    limited = {"kind": "lexical", "skills": ["other"]}
    [w] = check_design(exp, runtimes={"without": lexical, "with": limited})
    assert w.code == "unseen-cases"


def test_an_even_fixed_trial_count_on_a_stochastic_runtime_warns_about_ties():
    exp = experiment()
    [warning] = check_design(exp, trials=10)
    assert (warning.code, warning.field) == ("even-trials-stochastic", "trials")
    assert "37.7%" in warning.message and "(9 or 11)" in warning.message
    assert check_design(exp, trials=9) == []
    assert check_design(exp, trials=10, adaptive=True) == []     # auto: max_trials decides
    steady = experiment(subjects=(subject("a", {"kind": "command", "argv": ["true"]}),))
    assert check_design(steady, trials=10) == []


def test_a_mock_that_never_fires_is_warned_about_once_for_the_subjects_sharing_it():
    never = {"kind": "mock"}
    exp = experiment(subjects=(subject("a", never), subject("b", never)))
    [w] = check_design(exp)
    assert (w.code, w.field) == ("never-activates", "runtime.default_rate")
    assert "subjects a, b (mock)" in w.message and "recall is 0" in w.message
    # a positive rate for a case of the run can fire; one for a case not run cannot
    assert check_design(exp, runtimes={n: {"kind": "mock", "activation_rates": {"must-1": 0.9}}
                                       for n in "ab"}) == []
    [w] = check_design(exp, runtimes={n: {"kind": "mock", "activation_rates": {"gone": 0.9}}
                                      for n in "ab"})
    assert w.code == "never-activates"
    # `--runtime mock` replaced the subjects' own runtime
    lexical = experiment(subjects=(subject("a", {"kind": "lexical"}, ("csv",)),),
                         sensor_options={"skill": "csv"})
    [w] = check_design(lexical, runtimes={"a": {"kind": "mock"}})
    assert (w.code, w.field) == ("never-activates", "--runtime")
    # only the activation sensor reads whether the skill was called
    assert check_design(experiment(subjects=(subject("a", never),), sensor="exit_code",
                                   cases=cases(12, 0))) == []


def test_a_subject_given_no_skills_on_a_runtime_that_reads_them_never_activates():
    lexical = {"kind": "lexical", "temperature": 0}
    with_it = subject("with", lexical, ("csv",))
    bare = subject("bare", lexical)
    other = subject("other", lexical, ("tsv",))
    exp = experiment(subjects=(with_it, bare, other), sensor_options={"skill": "csv"})
    [w] = check_design(exp)
    assert (w.code, w.field) == ("never-activates", "subjects[1].skills")
    assert "bare (lexical) is given no skills" in w.message and "only fail" in w.message
    # no subject has it: `unseen-cases` says so, once
    assert [w.code for w in check_design(exp, subjects=[bare])] == ["unseen-cases"]
    # a condition of `ablate: skills` leaves the skill out on purpose
    ablated = Subject(name="with[-csv]", config={"runtime": lexical, "skills": [],
                                                 "sweep": {"of": "with", "without": "csv"}})
    assert check_design(experiment(subjects=(with_it, ablated),
                                   sensor_options={"skill": "csv"})) == []
