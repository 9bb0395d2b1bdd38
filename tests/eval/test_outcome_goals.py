"""Goals on a quantity (DESIGN.md §10): tokens, time, cost, a score or a judge's dimension,
beyond `min_effect` or within `at_most`, absolute or `relative` to the control. Asked in
process on mock subjects, whose tool calls (a Skill call when they activate) differ."""

import json
from pathlib import Path

import pytest
from scipy import stats

from conftest import comparison_experiment, ix_in_process
from ix.domain.errors import ConfigError
from ix.eval.outcome_goals import outcome_goal
from ix.eval.outcomes import OutcomeSums
from ix.lab.loader import load_experiment


def goal_run(lab: Path, goal: str, code: int = 0) -> dict:
    comparison_experiment(lab, n_must=10, n_not=4, trials=9, control=0.9,
                          variants={"fewer": 0.2}, goal=goal)
    r = ix_in_process("run", "--lab", str(lab), "--json", env={"COLUMNS": "80"})
    assert r.code == code, r.output  # 1: a refuted goal
    return json.loads(r.stdout)


def test_a_goal_on_tool_calls_is_decided_on_the_paired_case_means(lab: Path):
    summary = goal_run(lab, "goal:\n  hypothesis: fewer calls\n  metric: tool_calls\n"
                            "  direction: decrease\n  min_effect: 0.1\n"
                            "  compare: [control, fewer]\n")
    goal = summary["goal"]
    assert goal["verdict"] == "supported" and goal["metric"] == "tool_calls"
    (row,) = [c for c in summary["outcomes"]["comparisons"] if c["metric"] == "tool_calls"]
    assert goal["effect"]["diff"] == row["difference"]["value"] < -0.1
    assert goal["effect"]["diff_ci"] == row["difference"]["ci"]
    assert "t posterior on the 14 cases' means" in goal["rule"]
    # P(supported) is the t posterior's P(effect < -0.1), rebuilt from the trial lines
    lines = [json.loads(x) for x in (lab / "e" / "results" / "trials.jsonl").read_text()
             .splitlines()]
    means: dict[str, dict[str, list[int]]] = {}
    for x in lines:
        means.setdefault(x["subject"], {}).setdefault(x["probe_id"], []).append(
            len(x["observation"]["tool_calls"]))
    d = [sum(means["fewer"][c]) / 9 - sum(v) / 9 for c, v in sorted(means["control"].items())]
    t = stats.t(len(d) - 1, loc=sum(d) / len(d), scale=stats.sem(d))
    assert goal["p_supported"] == pytest.approx(t.cdf(-0.1), abs=1e-6)


def test_a_relative_bound_reads_as_a_change_and_is_refuted_when_passed(lab: Path):
    summary = goal_run(lab, "goal:\n  hypothesis: cuts calls by at most 10%\n"
                            "  metric: tool_calls\n  direction: decrease\n  at_most: 0.1\n"
                            "  relative: true\n  compare: [control, fewer]\n", code=1)
    goal = summary["goal"]
    assert goal["verdict"] == "refuted" and goal["at_most"] == 0.1 and goal["relative"]
    (row,) = [c for c in summary["outcomes"]["comparisons"] if c["metric"] == "tool_calls"]
    assert goal["effect"]["diff"] == pytest.approx(row["ratio"]["value"] - 1)
    assert "P(effect >= -0.1)" in goal["rule"] and "relative change" in goal["rule"]
    r = ix_in_process("report", "--lab", str(lab), "e", env={"COLUMNS": "80"})
    assert r.code == 0, r.output
    assert "REFUTED — goal: cuts calls by at most 10%" in r.stdout
    assert "tool calls: control 0." in r.stdout and "change -" in r.stdout


def test_an_undecided_goal_says_how_many_cases_would_settle_it():
    control, treatment = OutcomeSums(), OutcomeSums()
    for i, (a, b) in enumerate([(100, 104), (120, 118), (90, 99), (110, 108), (95, 101)]):
        control.measure(f"c{i}", (float(a), 0.0, 0.0, 1.0, None, None), None, True)
        treatment.measure(f"c{i}", (float(b), 0.0, 0.0, 1.0, None, None), None, True)
    goal = {"hypothesis": "h", "metric": "tokens_input", "direction": "increase",
            "min_effect": 0.0, "at_most": 0.05, "relative": True, "credibility": 0.95,
            "compare": ["a", "b"]}
    out = outcome_goal(goal, control, treatment, trials_per_case=3)
    assert out["verdict"] == "inconclusive"
    s = out["suggestion"]
    assert s["current_cases"] == 5 and s["cases"] > 5 and s["p_settle"] >= 0.8
    assert s["trials_per_case"] == 3 and s["unit"] == "cases"


@pytest.mark.parametrize(("goal", "words"), [
    ("metric: tokens", "unknown metric 'tokens'"),
    ("metric: f1\n  at_most: 0.1", "at_most and relative are for quantities"),
    ("metric: recall\n  min_effect: 1.5", "min_effect of a rate lies in [0, 1)"),
    ("metric: cost\n  min_effect: 0.1\n  at_most: 0.2", "not both"),
])
def test_a_goal_that_does_not_fit_its_metric_is_refused_naming_the_field(lab: Path, goal,
                                                                         words):
    exp = comparison_experiment(lab, n_must=2, n_not=2, trials=1, control=0.9,
                                variants={"b": 0.5}, goal=f"goal:\n  hypothesis: h\n  {goal}\n")
    with pytest.raises(ConfigError, match="goal") as caught:
        load_experiment(exp, lab)
    assert words in str(caught.value), caught.value


def test_the_names_of_the_design_are_accepted_and_kept_as_the_summary_names_them(lab: Path):
    exp = comparison_experiment(lab, n_must=2, n_not=2, trials=1, control=0.9,
                                variants={"b": 0.5}, goal="goal:\n  hypothesis: h\n"
                                                          "  metric: output_tokens\n")
    assert load_experiment(exp, lab).experiment.goal["metric"] == "tokens_output"
    checked = ix_in_process("validate", "--lab", str(lab), "e")
    assert "4 case(s): the goal's tokens_output is a mean of case means" in (
        " ".join(checked.stderr.split())), checked.output
    r = ix_in_process("plan", "--lab", str(lab), "e")
    assert r.code == 0 and "the goal is on tokens_output: ix plan sizes goals on rates" in (
        " ".join(r.stdout.split())), r.output
