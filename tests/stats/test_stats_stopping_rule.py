"""`trials: auto`'s stopping rule, enumerated exactly: paths, unbiased estimates, its error.

Every reference here is a brute-force walk over all 2^max_trials pass/fail sequences (or
scipy's binomial), independent of the dynamic programme in `ix.stats.sequential`.
"""

import functools
import itertools
import math

import pytest
from scipy import stats

from ix.stats.passk import pass_hat_k
from ix.stats.sequential import (
    StoppingRule,
    early_vote_error,
    path_counts,
    stopping_distribution,
    unbiased_first_k,
)

RULES = [StoppingRule(2, 9), StoppingRule(2, 10), StoppingRule(3, 8, 0.9)]


@functools.cache
def stops(rule: StoppingRule, k: int, n: int) -> bool:
    return rule.stops(k, n)


def walk(rule: StoppingRule, seq: tuple[int, ...]) -> int:
    """Where the rule stops a case whose trials would come out as `seq`: trials run."""
    for n in range(rule.max_trials + 1):
        if stops(rule, sum(seq[:n]), n):
            return n
    raise AssertionError("the rule always stops at max_trials")


@pytest.mark.parametrize("rule", RULES, ids=str)
def test_path_counts_match_brute_force_enumeration(rule):
    counts: dict[tuple[int, int], int] = {}
    for seq in itertools.product((0, 1), repeat=rule.max_trials):
        n = walk(rule, seq)
        counts[(n, sum(seq[:n]))] = counts.get((n, sum(seq[:n])), 0) + 2 ** -(
            rule.max_trials - n)   # each stopped prefix is reached by 2^(max - n) sequences
    table = path_counts(rule)
    for n in range(rule.max_trials + 1):
        for k in range(n + 1):
            assert table[n, k] == pytest.approx(counts.get((n, k), 0.0), abs=1e-12)


@pytest.mark.parametrize("rule", RULES, ids=str)
@pytest.mark.parametrize("theta", [0.05, 0.3, 0.5, 0.77, 0.9])
def test_rao_blackwell_estimates_are_exactly_unbiased_where_the_plain_ones_are_not(rule, theta):
    prob = stopping_distribution(rule, theta)
    assert prob.sum() == pytest.approx(1.0, abs=1e-12)
    cells = [(n, k) for n in range(rule.max_trials + 1) for k in range(n + 1) if prob[n, k]]
    for k in range(1, rule.min_trials + 1):
        yes = sum(prob[n, c] * unbiased_first_k(rule, c, n, k) for n, c in cells)
        no = sum(prob[n, c] * unbiased_first_k(rule, c, n, k, outcome=False) for n, c in cells)
        assert yes == pytest.approx(theta ** k, abs=1e-12)
        assert no == pytest.approx((1 - theta) ** k, abs=1e-12)
    # the plain c/n over all n trials ignores the rule: biased (unbiased only at θ = ½ by
    # symmetry, and where the rule almost never stops early)
    plain = sum(prob[n, c] * pass_hat_k(n, c, 1) for n, c in cells)
    if theta in (0.3, 0.77, 0.9):
        assert abs(plain - theta) > 0.01


def test_an_unbiased_estimate_needs_k_within_min_trials_and_a_reachable_stop():
    rule = StoppingRule(2, 9)
    with pytest.raises(ValueError):
        unbiased_first_k(rule, 3, 3, 3)
    assert math.isnan(unbiased_first_k(rule, 1, 2, 1))   # 1 of 2 never stops there


@pytest.mark.parametrize("rule", [StoppingRule(2, 9), StoppingRule(2, 10)], ids=str)
@pytest.mark.parametrize("theta", [0.3, 0.5, 0.55, 0.8])
def test_early_vote_error_matches_brute_force(rule, theta):
    ref = 0.0
    for seq in itertools.product((0, 1), repeat=rule.max_trials):
        n = walk(rule, seq)
        if n < rule.max_trials and (sum(seq[:n]) / n > 0.5) != (sum(seq) / len(seq) > 0.5):
            ref += theta ** sum(seq) * (1 - theta) ** (len(seq) - sum(seq))
    assert early_vote_error(rule, theta) == pytest.approx(ref, abs=1e-12)


def test_the_documented_error_table():
    """docs/statistics.md, "When to stop adding trials" (benchmarks/stopping_error.py)."""
    assert early_vote_error(StoppingRule(2, 9), 0.5) == pytest.approx(0.0391, abs=5e-5)
    assert early_vote_error(StoppingRule(2, 10), 0.55) == pytest.approx(0.0512, abs=5e-5)
    early = stopping_distribution(StoppingRule(2, 10), 0.55)[:10].sum()
    assert early_vote_error(StoppingRule(2, 10), 0.55) / early == pytest.approx(0.0629,
                                                                                 abs=5e-5)


def test_a_true_half_case_votes_yes_37_7_percent_of_the_time_at_ten_trials():
    from ix.eval.design import tie_share

    assert tie_share(10) == pytest.approx(stats.binom.sf(5, 10, 0.5)) == pytest.approx(
        0.377, abs=5e-4)
    assert tie_share(9) == 0.5
