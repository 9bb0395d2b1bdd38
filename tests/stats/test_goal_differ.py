"""A "differ" goal looks both ways, so each direction is judged at (1 + c)/2: at a true
effect of 0 it is falsely supported at most 1 − c of the time (STATS.md §12)."""

import numpy as np
from scipy import stats

from ix.stats.decisions import goal_verdict


def test_differ_judges_each_direction_at_one_plus_c_over_two():
    c = 0.95
    z_one_sided, z_two_sided = stats.norm.ppf(c), stats.norm.ppf((1 + c) / 2)  # 1.645, 1.960
    between = stats.norm(-(z_one_sided + z_two_sided) / 2, 1).cdf  # P(effect > 0) ≈ 0.97
    v = goal_verdict(between, direction="differ", min_effect=0.0, credibility=c)
    assert 0.95 < v.p_supported < 0.975 and v.verdict == "inconclusive"
    beyond = stats.norm(z_two_sided + 0.01, 1).cdf
    assert goal_verdict(beyond, direction="differ", min_effect=0.0,
                        credibility=c).verdict == "supported"
    # one-directional goals keep c
    assert goal_verdict(stats.norm(z_one_sided + 0.01, 1).cdf, direction="increase",
                        min_effect=0.0, credibility=c).verdict == "supported"


def test_differ_at_a_true_effect_of_zero_is_falsely_supported_at_most_one_minus_c():
    """Estimates d ~ N(0, 1) around a true 0, posterior N(d, 1): supported in 5% of runs
    at c = 0.95 (the old single threshold: 10%)."""
    rng = np.random.default_rng(15)
    d = rng.normal(0, 1, 4000)
    supported = sum(goal_verdict(stats.norm(x, 1).cdf, direction="differ", min_effect=0.0,
                                 credibility=0.95).verdict == "supported" for x in d)
    assert supported / len(d) <= 0.06
