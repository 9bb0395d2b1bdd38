"""Control + variants: paired comparisons, goal verdicts and their exit codes, end to end."""

import json
from pathlib import Path

import pytest
from scipy import stats as sps

from conftest import comparison_experiment, ix_in_process, run_ix, write

experiment = comparison_experiment


GOAL = """goal:
  hypothesis: the variant degrades recall
  metric: {metric}
  compare: [control, variant]
  direction: {direction}
  min_effect: {min_effect}
"""


def summary(lab: Path, *args: str, process: bool = False) -> tuple[int, dict, str]:
    """`ix run --json`'s exit code, summary and stderr: the statistics asked in process, the
    exit code of a refuted goal from the real `ix` (`process`)."""
    run = run_ix if process else ix_in_process
    r = run("run", "--lab", str(lab), "--json", *args)
    assert r.code in (0, 1), r.output
    return r.code, json.loads(r.stdout), r.stderr


def test_each_variant_is_compared_with_the_control_on_every_metric(lab):
    experiment(lab, n_must=10, n_not=10, trials=6, control=0.95,
               variants={"worse": 0.2, "same": 0.95})
    _, s, _ = summary(lab)
    assert s["subject"] == "control" and [c["variant"] for c in s["comparisons"]] == [
        "worse", "same"]
    worse, same = s["comparisons"]
    assert set(worse["metrics"]) == {"activation_rate", "recall", "precision", "f1",
                                     "pass_rate"}
    for m in worse["metrics"].values():
        if "not_compared" in m:  # undefined on a side (issue 32 §8): nothing to compare
            assert m["p_variant_better"] is None and m["diff_ci"] == [None, None]
            continue
        lo, hi = m["diff_ci"]
        assert -1 <= lo <= hi <= 1 and 0 <= m["p_variant_better"] <= 1
    assert worse["metrics"]["recall"]["p_variant_better"] < 0.01
    assert worse["metrics"]["recall"]["diff_ci"][1] < 0
    # the paired recall table is the must cases' majority votes, and McNemar is exact
    t = worse["metrics"]["recall"]["table"]
    assert sum(t.values()) == 10
    p = sps.binomtest(t["control_only"], t["control_only"] + t["variant_only"], 0.5).pvalue
    assert worse["metrics"]["recall"]["mcnemar_p"] == pytest.approx(p, abs=1e-6)
    # Holm across the two variants: the adjusted p is never below the raw p
    for c in (worse, same):
        m = c["metrics"]["recall"]
        assert m["mcnemar_p_holm"] >= m["mcnemar_p"] - 1e-12
    assert len(worse["flips"]) >= 5 and all(f["now"] == "wrong" for f in worse["flips"])
    assert same["metrics"]["recall"]["diff_ci"][0] < 0 < same["metrics"]["recall"]["diff_ci"][1]
    # activation rate compares the must cases' rates case by case: the unit is the case, no
    # trial-level table, no McNemar (its pairs would not be real), a case-level t-test
    a = worse["metrics"]["activation_rate"]
    assert a["n"] == 10 and "table" not in a and a["mcnemar_p"] is None
    assert a["p_value"] < 0.01 and a["diff_ci"][0] <= a["diff"] <= a["diff_ci"][1]


def test_a_large_real_difference_supports_the_goal(lab):
    experiment(lab, n_must=12, n_not=6, trials=5, control=0.95, variants={"variant": 0.2},
               goal=GOAL.format(metric="recall", direction="decrease", min_effect=0.1))
    code, s, _ = summary(lab)
    assert code == 0
    g = s["goal"]
    assert g["verdict"] == "supported" and g["p_supported"] >= 0.95
    assert g["effect"]["diff"] < -0.5 and g["suggestion"] is None


def test_identical_subjects_with_a_tight_equivalence_region_refute_it_and_exit_1(lab):
    experiment(lab, n_must=40, n_not=10, trials=5, control=0.97, variants={"variant": 0.97},
               goal=GOAL.format(metric="pass_rate", direction="decrease", min_effect=0.15))
    code, s, err = summary(lab, process=True)
    assert s["goal"]["verdict"] == "refuted" and s["goal"]["p_refuted"] >= 0.95
    assert code == 1 and "goal refuted" in err


def test_a_tiny_sample_is_inconclusive_and_its_suggested_n_settles_it(lab, tmp_path):
    goal = GOAL.format(metric="recall", direction="decrease", min_effect=0.1)
    experiment(lab, n_must=2, n_not=1, trials=2, control=0.95, variants={"variant": 0.2},
               goal=goal)
    code, s, _ = summary(lab)
    g = s["goal"]
    assert code == 0 and g["verdict"] == "inconclusive"
    n = g["suggestion"]["cases"]
    assert n > 2 and g["suggestion"]["current_cases"] == 2
    bigger = tmp_path / "bigger"
    bigger.mkdir()
    experiment(bigger, n_must=n, n_not=1, trials=2, control=0.95, variants={"variant": 0.2},
               goal=goal)
    _, s2, _ = summary(bigger)
    assert s2["goal"]["verdict"] == "supported"


def test_the_table_of_an_inconclusive_goal_says_how_many_cases_would_settle_it(lab):
    experiment(lab, n_must=2, n_not=1, trials=2, control=0.95, variants={"variant": 0.2},
               goal=GOAL.format(metric="recall", direction="decrease", min_effect=0.1))
    r = run_ix("run", "--lab", str(lab))
    assert r.code == 0, r.output
    assert "Traceback" not in r.output
    assert "INCONCLUSIVE" in r.stdout
    assert "to settle it: about" in r.stdout and "(now 2)" in r.stdout


def test_the_table_states_the_comparison_and_the_verdict_in_words(lab):
    experiment(lab, n_must=12, n_not=6, trials=5, control=0.95, variants={"variant": 0.2},
               goal=GOAL.format(metric="recall", direction="decrease", min_effect=0.1))
    r = run_ix("run", "--lab", str(lab))
    assert r.code == 0, r.output
    for text in ("each variant against control", "P(better)", "flipped", "SUPPORTED",
                 "goal: the variant degrades recall"):
        assert text in r.stdout


@pytest.mark.parametrize("goal,field", [
    ("goal:\n  hypothesis: h\n  metric: accuracy\n", "goal.metric"),
    ("goal:\n  hypothesis: h\n  compare: [control]\n", "goal.compare"),
    ("goal:\n  hypothesis: h\n  compare: [control, variant, control]\n", "goal.compare"),
    ("goal:\n  hypothesis: h\n  compare: [control, control]\n", "goal.compare"),
    ("goal:\n  hypothesis: h\n  compare: [control, ghost]\n", "goal.compare[1]"),
])
def test_bad_goals_are_exit_2_naming_the_field(lab, goal, field):
    experiment(lab, n_must=2, n_not=1, trials=1, control=0.9, variants={"variant": 0.5},
               goal=goal)
    r = ix_in_process("run", "--lab", str(lab))  # which goal is refused: logic, in process
    assert r.code == 2 and field in r.stderr and "Traceback" not in r.output
    assert not (lab / "e" / "results").exists()


def test_a_goal_needs_two_subjects(lab):
    d = lab / "one"
    write(d / "experiment.yaml", "name: one\nskill: a\nruntime: mock\n"
          "goal:\n  hypothesis: h\n")
    write(d / "cases" / "must-001.md", "---\nexpectation: must_trigger\n---\nx\n")
    r = ix_in_process("run", "--lab", str(lab))
    assert r.code == 2 and "goal.compare" in r.stderr and "two subjects" in r.stderr


def test_trials_auto_stops_settled_cases_early_and_records_why(lab):
    d = experiment(lab, n_must=6, n_not=6, trials=5, control=0.5, variants={})
    (d / "experiment.yaml").write_text((d / "experiment.yaml").read_text().replace(
        "trials: 5", "trials: auto\nmin_trials: 2\nmax_trials: 12"))
    _, s, _ = summary(lab)
    assert s["trials_mode"] == {"mode": "auto", "min_trials": 2, "max_trials": 12,
                                "credibility": 0.95}
    by_id = {p["probe_id"]: p for p in s["probe_results"]}
    clear = [by_id[f"not-{i:03d}"] for i in range(6)]  # rate 0.05: settled quickly
    assert all(p["stopped"] == "settled" for p in clear)
    assert sum(p["n"] for p in clear) <= 4 * len(clear)
    assert any(p["n"] > 4 for p in s["probe_results"] if p["probe_id"].startswith("must"))
    assert all(2 <= p["n"] <= 12 for p in s["probe_results"])
    # the trials that ran are the trials a fixed run would have run: same seeds
    _, fixed, _ = summary(lab, "--trials", "12")
    f = {p["probe_id"]: p for p in fixed["probe_results"]}
    for p in s["probe_results"]:
        if p["stopped"] == "max_trials":
            assert p["passed"] == f[p["probe_id"]]["passed"]


def test_trials_auto_from_the_command_line_and_bad_bounds(lab):
    experiment(lab, n_must=2, n_not=2, trials=3, control=1.0, variants={})
    _, s, _ = summary(lab, "--trials", "auto")
    assert s["trials_mode"]["mode"] == "auto"
    assert all(p["stopped"] == "settled" for p in s["probe_results"])
    d = lab / "e"
    (d / "experiment.yaml").write_text((d / "experiment.yaml").read_text().replace(
        "trials: 3", "trials: auto\nmin_trials: 5\nmax_trials: 3"))
    r = ix_in_process("run", "--lab", str(lab))
    assert r.code == 2 and "min_trials" in r.stderr
