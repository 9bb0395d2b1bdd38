"""Every estimate in a run's summary carries an interval, checked against scipy."""

import json
import math

import pytest
from scipy import stats as sps

from conftest import ix_in_process, mock_experiment, run_ix


def summary_of(lab, *args):
    """The summary of a run: the statistics under test, computed in process."""
    r = ix_in_process("run", "--lab", str(lab), "--json", *args)
    assert r.code == 0, r.output
    return json.loads(r.stdout)


def test_each_case_score_has_its_beta_interval(lab):
    mock_experiment(lab, rates={"must-001": 0.5, "must-002": 1.0, "not-001": 0.3})
    s = summary_of(lab, "--trials", "7")
    for p in s["probe_results"]:
        k, n = p["passed"], p["n"]
        # equal-tailed, one-sided at k = 0 and k = n (STATS.md §1)
        q = [0.0, 0.95] if k == 0 else [0.05, 1.0] if k == n else [0.025, 0.975]
        lo, hi = sps.beta.ppf(q, k + 1, n - k + 1)
        assert p["score_ci"] == pytest.approx([lo, hi], abs=1e-6)
        assert p["score_ci"][0] <= k / n <= p["score_ci"][1]
        assert p["score_ci"][0] <= (k + 1) / (n + 2) <= p["score_ci"][1]  # posterior mean


def test_precision_recall_are_the_dirichlet_marginals_and_f1_is_flat_on_u(lab):
    mock_experiment(lab, rates={"must-001": 1.0, "must-002": 1.0, "not-001": 1.0},
                    n_must=4, n_not=3)
    m = summary_of(lab)["metrics"]
    tp, fp, fn = m["tp"], m["fp"], m["fn"]
    assert (tp, fp, fn) == (2, 1, 2)
    assert m["precision_ci"] == pytest.approx(
        list(sps.beta.ppf([0.025, 0.975], tp + 1, fp + 1)), abs=1e-6)
    assert m["recall_ci"] == pytest.approx(
        list(sps.beta.ppf([0.025, 0.975], tp + 1, fn + 1)), abs=1e-6)
    u = sps.beta.ppf([0.025, 0.975], tp + 1, fp + fn + 1)
    assert m["f1_ci"] == pytest.approx([2 * x / (1 + x) for x in u], abs=1e-6)


def test_trial_level_rates_carry_naive_and_clustered_se_and_a_hierarchical_interval(lab):
    mock_experiment(lab, rates={"must-001": 1.0, "must-002": 0.0, "must-003": 1.0})
    tl = summary_of(lab, "--trials", "10")["trial_level"]
    must = tl["must_trigger"]
    assert must["n_trials"] == 30 and must["n_cases"] == 3
    assert must["rate"] == pytest.approx(20 / 30)
    assert must["se_naive"] == pytest.approx(math.sqrt((2 / 3) * (1 / 3) / 30), abs=1e-6)
    # all-or-nothing cases: clustering makes the honest SE several times the naive one
    assert must["se_clustered"] > 2 * must["se_naive"]
    lo, hi = must["ci"]
    naive = sps.beta.ppf([0.025, 0.975], 21, 11)
    assert lo < naive[0] and hi > naive[1]
    assert tl["should_not_trigger"]["rate"] == 0.0
    assert tl["correct"]["n_trials"] == 60


def test_pass_at_k_and_pass_hat_k_for_every_k_up_to_the_trial_count(lab):
    mock_experiment(lab, rates={"must-001": 0.5, "must-002": 0.8}, n_must=2, n_not=1)
    s = summary_of(lab, "--trials", "6")
    assert sorted(s["subjects"][0]["pass_at_k"], key=int) == ["1", "2", "3", "4", "5", "6"]
    at, hat = s["subjects"][0]["pass_at_k"], s["subjects"][0]["pass_hat_k"]
    assert at["1"] == pytest.approx(hat["1"])
    assert all(at[str(k)] <= at[str(k + 1)] + 1e-12 for k in range(1, 6))
    assert all(hat[str(k)] >= hat[str(k + 1)] - 1e-12 for k in range(1, 6))
    # pass@1 is the mean per-case rate of right outcomes
    rights = []
    for p in s["probe_results"]:
        c = p["passed"] if p["expectation"] == "must_trigger" else p["n"] - p["passed"]
        rights.append(c / p["n"])
    assert at["1"] == pytest.approx(sum(rights) / len(rights))


def test_a_run_cut_short_lists_pass_at_k_only_up_to_the_trials_a_case_reached(lab):
    """Planned with a million trials per case and stopped after three: pass@k for k = 1..3
    (no case has more), in about a second — not a million nulls computed for minutes."""
    mock_experiment(lab, n_must=1, n_not=0, n_edge=0, trials=None)
    r = run_ix("run", "--lab", str(lab), "--trials", "1000000", "--max-trials", "3", "--json",
               timeout=60)
    assert r.code == 130, r.output  # cancelled by the budget: its trials kept
    s = json.loads(r.stdout)
    assert sorted(s["subjects"][0]["pass_at_k"], key=int) == ["1", "2", "3"]
    assert sorted(s["subjects"][0]["pass_hat_k"], key=int) == ["1", "2", "3"]


def test_the_summary_says_which_method_made_each_interval(lab):
    mock_experiment(lab)
    s = summary_of(lab)
    assert s["statistics"]["level"] == 0.95
    for key in ("score_ci", "precision_ci", "recall_ci", "f1_ci", "trial_level", "pass_at_k",
                "pass_hat_k"):
        assert s["statistics"]["methods"][key]


def test_the_table_shows_intervals(lab):
    mock_experiment(lab, rates={"must-001": 1.0})
    r = run_ix("run", "--lab", str(lab), "--trials", "4", "--detail")
    assert r.code == 0, r.output
    assert "1.00 [0.55, 1.00]" in r.stdout  # Beta(5, 1), 4 of 4: [0.05^(1/5), 1]
    assert "F1" in r.stdout and "clustered SE" in r.stdout and "pass@1" in r.stdout


def test_no_nan_reaches_the_json_even_when_every_trial_errored(lab):
    mock_experiment(lab, n_must=1, n_not=1, n_edge=0,
                    runtime_extra="error_rates: {must-001: 1.0, not-001: 1.0}")
    r = run_ix("run", "--lab", str(lab), "--json")
    assert r.code == 1, r.output  # every trial errored: the run failed (not its configuration)
    assert "NaN" not in r.stdout and "Infinity" not in r.stdout
    s = json.loads(r.stdout)
    assert s["probe_results"][0]["score_ci"] is None
    assert s["trial_level"]["must_trigger"]["rate"] is None
