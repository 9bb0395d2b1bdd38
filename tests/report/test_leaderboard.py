"""Leaderboard posteriors: each metric's ranking is the ranking of the right posterior."""

import numpy as np
import pytest
from scipy import stats

from ix.report.answer import primary_metric
from ix.report.leaderboard import Counts, leaderboard, standing


def test_f1_ranks_like_simulated_dirichlet_f1():
    """Rank probabilities of F1 from U ~ Beta(TP+1, FP+FN+2) match F1 computed from
    Dirichlet(TP+1, FP+1, FN+1, TN+1) draws (the paper's model), subject by subject."""
    subjects = [(9, 1, 2, 8), (7, 3, 1, 9), (4, 0, 6, 10)]   # TP, FP, FN, TN
    entries = [{"subject": f"s{i}", "counts": Counts(tp=tp, fp=fp, fn=fn)}
               for i, (tp, fp, fn, _) in enumerate(subjects)]
    board = leaderboard(entries, "f1")
    rng = np.random.default_rng(11)
    draws = 200_000
    f1 = []
    for tp, fp, fn, tn in subjects:
        p = rng.dirichlet([tp + 1, fp + 1, fn + 1, tn + 1], draws)
        f1.append(2 * p[:, 0] / (2 * p[:, 0] + p[:, 1] + p[:, 2]))
    theta = np.column_stack(f1)
    ranks = (-theta).argsort(axis=1).argsort(axis=1)
    for row in board["rows"]:
        i = int(row["subject"][1:])
        simulated = float(np.mean(ranks[:, i] == row["rank"] - 1))
        se = np.sqrt(simulated * (1 - simulated) / draws)
        assert row["p_rank"] == pytest.approx(simulated, abs=5 * se + 1e-6)
        best = float(np.mean(ranks[:, i] == 0))
        assert row["p_best"] == pytest.approx(best, abs=5 * np.sqrt(best * (1 - best) / draws)
                                              + 1e-6)
    assert [r["subject"] for r in board["rows"]] == ["s0", "s1", "s2"]
    # the observed F1 and its interval are those of the summary's formulas
    assert board["rows"][0]["value"] == pytest.approx(2 * 9 / (2 * 9 + 1 + 2), abs=1e-6)


@pytest.mark.parametrize(("metric", "k", "n"), [("pass_rate", 7, 9), ("activation_rate", 31, 40),
                                                ("precision", 5, 7), ("recall", 5, 8)])
def test_rate_metrics_use_the_beta_posterior_of_their_counts(metric, k, n):
    counts = Counts(tp=5, fp=2, fn=3, correct=7, voted=9, must_passed=31, must_valid=40)
    s = standing(counts, metric)
    assert s.estimate == pytest.approx(k / n)
    assert s.beta == (k + 1, n - k + 1)
    assert s.interval == pytest.approx(stats.beta(k + 1, n - k + 1).ppf([0.025, 0.975]))


def test_an_empty_denominator_has_no_estimate_and_ranks_last():
    entries = [{"subject": "none", "counts": Counts()},
               {"subject": "low", "counts": Counts(correct=1, voted=10)}]
    board = leaderboard(entries, "pass_rate")
    assert [r["subject"] for r in board["rows"]] == ["low", "none"]
    assert board["rows"][1]["value"] is None and board["rows"][1]["n"] == 0


def test_counts_pool_by_adding():
    a = Counts(tp=1, fp=2, fn=3, correct=4, voted=5, must_passed=6, must_valid=7)
    assert a + a == Counts(2, 4, 6, 8, 10, 12, 14)


def test_primary_metric_is_the_goal_metric_else_by_sensor():
    assert primary_metric({"goal": {"metric": "recall"}, "sensor": "activation"}) == "recall"
    assert primary_metric({"goal": None, "sensor": "activation"}) == "f1"
    assert primary_metric({"sensor": "exit_code"}) == "pass_rate"
