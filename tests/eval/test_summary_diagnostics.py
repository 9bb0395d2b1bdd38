"""Specificity, the correct rate, between-case reliability and unsettled cases in a real
summary (through `summarise_tallies`, the one face that builds summaries), checked against
scipy and against the summary's own counts, and valid under the summary's JSON schema."""

import numpy as np
import pytest
from scipy import stats

from ix.eval.diagnostics import pass_rate
from ix.eval.models import EvalCase
from ix.eval.run_summary import summarise_tallies
from ix.eval.schemas import summary_adapter
from ix.eval.scoring import Tally

K = 9
# passes out of K per case: must cases, then should_not cases (a pass there is a false alarm)
MUST = {"m0": 9, "m1": 9, "m2": 8, "m3": 5, "m4": 2, "m5": 6}
NOT = {"n0": 0, "n1": 0, "n2": 1, "n3": 6, "n4": 4}
EDGE = {"e0": 5}


def _summary() -> dict:
    cases = ([EvalCase(id=i, prompt="p", expectation="must_trigger") for i in MUST]
             + [EvalCase(id=i, prompt="p", expectation="should_not_trigger") for i in NOT]
             + [EvalCase(id=i, prompt="p", expectation="acceptable") for i in EDGE])
    tally = Tally(cases)
    for case_id, k in {**MUST, **NOT, **EDGE}.items():
        for t in range(K):
            tally.add(case_id, t < k, t)
    return summarise_tallies(experiment_name="e", run_id="r", run_status="completed",
                             subjects=[("a", "")], tallies={"a": tally}, cases=cases,
                             trials_per_case=K, info={"trials_mode": {"mode": "fixed"},
                                                      "sensor": "activation", "seed": 1,
                                                      "trials_per_case": K,
                                                      "started_at": None,
                                                      "finished_at": None,
                                                      "skipped_cases": []})


@pytest.fixture(scope="module")
def block() -> dict:
    return _summary()["subjects"][0]


def test_specificity_is_the_true_negative_rate_with_its_beta_interval(block):
    m = block["metrics"]
    # majority votes on the not cases: n3 (6/9) activates -> FP; the rest are TN
    assert (m["tn"], m["fp"]) == (4, 1)
    assert m["specificity"] == pytest.approx(4 / 5)
    lo, hi = m["specificity_ci"]
    assert lo <= m["specificity"] <= hi
    assert lo == pytest.approx(stats.beta.ppf(0.025, 5, 2), abs=1e-6)
    assert hi == pytest.approx(stats.beta.ppf(0.975, 5, 2), abs=1e-6)


def test_the_correct_rate_is_the_share_of_right_votes_with_its_beta_interval(block):
    m = block["metrics"]
    # must votes: m4 (2/9) stays quiet -> FN, the other five activate -> TP; not: 4 TN, 1 FP
    assert (m["tp"], m["fn"], m["tn"], m["fp"]) == (5, 1, 4, 1)
    assert m["pass_rate"] == pytest.approx(9 / 11)
    right = sum(p["correct"] for p in block["probe_results"] if p.get("score") is not None)
    assert right == 9                                  # what the screen and the goal count
    lo, hi = m["pass_rate_ci"]
    assert lo == pytest.approx(stats.beta.ppf(0.025, 10, 3), abs=1e-6)
    assert hi == pytest.approx(stats.beta.ppf(0.975, 10, 3), abs=1e-6)


@pytest.mark.parametrize(("prior", "a"), [("uniform", 1.0), ("jeffreys", 0.5)])
def test_the_correct_rate_takes_the_prior_and_the_boundary_rule(prior, a):
    got = pass_rate(3, 2, 1, 4, level=0.9, prior=prior)     # 7 of 10 right
    assert got["pass_rate"] == pytest.approx(0.7)
    assert got["pass_rate_ci"] == pytest.approx(
        list(stats.beta.ppf([0.05, 0.95], 7 + a, 3 + a)), abs=1e-6)
    every = pass_rate(3, 0, 0, 2, level=0.9, prior=prior)   # every vote right: one-sided
    assert every["pass_rate"] == 1.0
    assert every["pass_rate_ci"] == pytest.approx([stats.beta.ppf(0.1, 5 + a, a), 1.0],
                                                  abs=1e-6)
    none = pass_rate(0, 2, 3, 0, level=0.9, prior=prior)    # every vote wrong
    assert none["pass_rate_ci"] == pytest.approx([0.0, stats.beta.ppf(0.9, a, 5 + a)],
                                                 abs=1e-6)
    assert pass_rate(0, 0, 0, 0) == {"pass_rate": None, "pass_rate_ci": None}


def test_reliability_reports_the_anova_icc_and_design_effect_per_group(block):
    rel = block["reliability"]
    assert set(rel) == {"must_trigger", "should_not_trigger", "correct"}
    for group, counts in (("must_trigger", MUST), ("should_not_trigger", NOT)):
        trials = [np.r_[np.ones(k), np.zeros(K - k)] for k in counts.values()]
        f = stats.f_oneway(*trials).statistic
        icc = (f - 1) / (f + K - 1)                      # equal trials: n0 = K
        r = rel[group]
        assert r["icc"] == pytest.approx(icc, abs=1e-6)
        assert r["design_effect"] == pytest.approx(1 + (K - 1) * icc, abs=1e-5)
        assert r["trials_per_case"] == K
        assert r["n_cases"] == len(counts)
    assert rel["must_trigger"]["icc"] > 0.3          # heterogeneous cases: trials cluster
    assert rel["correct"]["n_cases"] == len(MUST) + len(NOT)   # edge cases left out


def test_unsettled_lists_the_cases_whose_vote_could_flip(block):
    listed = {u["probe_id"]: u for u in block["unsettled"]}
    # 5/9 and 4/9 sit near ½; 6/9: P(θ < ½ | Beta(7, 4)) = 0.17 is settled enough
    for case_id, k in {**MUST, **NOT}.items():
        below = stats.beta.cdf(0.5, k + 1, K - k + 1)
        p_flip = below if k / K > 0.5 else 1 - below
        assert (case_id in listed) == (p_flip > 0.2), case_id
        if case_id in listed:
            assert listed[case_id]["p_flip"] == pytest.approx(p_flip, abs=1e-6)
            assert (listed[case_id]["passed"], listed[case_id]["n"]) == (k, K)
    assert set(listed) == {"m3", "n4"}
    assert "e0" not in listed                               # an edge case's vote counts nowhere
    flips = [u["p_flip"] for u in block["unsettled"]]
    assert flips == sorted(flips, reverse=True)


def test_the_new_fields_validate_against_the_summary_schema():
    out = summary_adapter().validate_python(_summary())
    assert out["subjects"][0]["metrics"].get("specificity") == pytest.approx(0.8)
    assert out["subjects"][0].get("reliability") is not None


def test_the_summary_says_how_each_new_figure_was_made():
    methods = _summary()["statistics"]["methods"]
    assert "Beta(TN+1, FP+1)" in methods["specificity_ci"]
    assert "Beta(TP+TN+1, FP+FN+1)" in methods["pass_rate_ci"]
    assert "design effect" in methods["reliability"]
    assert "0.2" in methods["unsettled"]
