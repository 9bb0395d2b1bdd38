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


def test_differ_at_min_effect_zero_reads_the_cdf_once_and_judges_as_with_two_reads():
    """At m = 0, F(−m) and F(m) are both F(0): one evaluation (a quadrature each, thousands
    of them when a goal is sized), the verdict of reading it twice."""
    from ix.stats.classification import f1_diff_cdf

    for counts in [(12, 3, 2, 5, 6, 7), (0, 0, 0, 9, 1, 0), (20, 1, 1, 20, 1, 2)]:
        reads: list[float] = []

        def cdf(d: float, counts: tuple[int, ...] = counts,
                reads: list[float] = reads) -> float:
            reads.append(d)
            return f1_diff_cdf(*counts, d)

        once = goal_verdict(cdf, direction="differ", min_effect=0.0, credibility=0.9)
        assert reads == [-0.0]
        twice = (f1_diff_cdf(*counts, -0.0), f1_diff_cdf(*counts, 0.0))
        assert twice[0] == twice[1]
        p = twice[0]
        assert once.p_supported == max(p, 1.0 - p) and once.p_refuted == 0.0
        reads.clear()
        goal_verdict(cdf, direction="differ", min_effect=0.05, credibility=0.9)
        assert reads == [-0.05, 0.05]
