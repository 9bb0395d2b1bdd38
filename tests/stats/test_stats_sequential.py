"""When adaptive trials stop: the predictive probability of the final majority vote."""

import pytest
from scipy import stats

from ix.stats import majority_vote_probability, paired_variances


@pytest.mark.parametrize("total", [1, 2, 5, 10, 13])
def test_matches_the_beta_binomial_predictive(total):
    for n in range(total + 1):
        for k in range(n + 1):
            m = total - n
            xs = [x for x in range(m + 1) if (k + x) / total > 0.5]
            ref = sum(stats.betabinom.pmf(x, m, k + 1, n - k + 1) for x in xs)
            assert majority_vote_probability(k, n, total) == pytest.approx(ref, abs=1e-12)


def test_three_unanimous_trials_of_ten_settle_at_095_but_two_do_not():
    assert majority_vote_probability(3, 3, 10) > 0.95 > majority_vote_probability(2, 2, 10)
    assert majority_vote_probability(0, 3, 10) < 0.05


def test_a_finished_case_is_certain():
    assert majority_vote_probability(6, 10, 10) == 1.0
    assert majority_vote_probability(5, 10, 10) == 0.0  # 0.5 is not a majority


def test_bad_counts_are_refused():
    for k, n, total in ((3, 2, 5), (1, 6, 5), (0, 0, 0)):
        with pytest.raises(ValueError):
            majority_vote_probability(k, n, total)


def test_paired_variances_recover_the_trial_noise_and_the_case_spread():
    sigma_a, sigma_b, omega = paired_variances([0.5, 0.5], [10, 10], [0.5, 0.5], [10, 10])
    assert (sigma_a, sigma_b, omega) == (0.25, 0.25, 0.0)
    _, _, omega = paired_variances([1.0, 0.0, 1.0, 0.0], [5] * 4, [0.0, 1.0, 0.0, 1.0], [5] * 4)
    assert omega == pytest.approx(4 / 3)  # differences ±1 with no trial noise
    with pytest.raises(ValueError):
        paired_variances([0.5], [0], [0.5], [1])
