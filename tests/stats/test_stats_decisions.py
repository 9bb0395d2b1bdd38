"""ix.stats.decisions.goal_verdict on constructed posteriors (normal CDFs from scipy) with
known probabilities, its boundaries, and its argument checks; goal_outcome against it."""

import dataclasses

import numpy as np
import pytest
from scipy import stats

from ix.stats.classification import f1_diff_cdf, f1_diff_cdf_bounds
from ix.stats.comparisons import (
    diff_cdf,
    diff_cdf_bounds,
    paired_diff_cdf,
    paired_diff_cdf_bounds,
)
from ix.stats.decisions import GoalVerdict, goal_outcome, goal_verdict


def normal(mean, sd):
    return stats.norm(mean, sd).cdf


# (mean, sd, direction, min_effect, credibility, expected verdict)
CASES = [
    # increase
    (0.20, 0.05, "increase", 0.05, 0.95, "supported"),     # P(> 0.05) = Φ(3) ≈ 0.9987
    (0.00, 0.02, "increase", 0.05, 0.95, "refuted"),       # P(≤ 0.05) = Φ(2.5) ≈ 0.9938
    (-0.30, 0.05, "increase", 0.00, 0.95, "refuted"),      # clearly the other way
    (0.06, 0.05, "increase", 0.05, 0.95, "inconclusive"),  # P(> 0.05) ≈ 0.58
    # decrease
    (-0.20, 0.05, "decrease", 0.05, 0.95, "supported"),
    (0.00, 0.02, "decrease", 0.05, 0.95, "refuted"),
    (0.30, 0.05, "decrease", 0.00, 0.90, "refuted"),
    (-0.06, 0.05, "decrease", 0.05, 0.95, "inconclusive"),
    # differ
    (0.20, 0.05, "differ", 0.05, 0.95, "supported"),
    (-0.20, 0.05, "differ", 0.05, 0.95, "supported"),
    (0.00, 0.01, "differ", 0.05, 0.95, "refuted"),         # inside the region: Φ(5) − Φ(−5)
    (0.05, 0.05, "differ", 0.05, 0.95, "inconclusive"),    # half its mass beyond +0.05
]


@pytest.mark.parametrize(("mean", "sd", "direction", "m", "cred", "expected"), CASES)
def test_each_direction_reaches_each_verdict_on_a_normal_posterior(mean, sd, direction, m, cred,
                                                                   expected):
    v = goal_verdict(normal(mean, sd), direction=direction, min_effect=m, credibility=cred)
    dist = stats.norm(mean, sd)
    p = {"increase": dist.sf(m), "decrease": dist.cdf(-m),
         "differ": max(dist.cdf(-m), dist.sf(m))}[direction]
    refuted = dist.cdf(m) - dist.cdf(-m) if direction == "differ" else 1 - p
    assert v.verdict == expected
    assert v.p_supported == pytest.approx(p, abs=1e-12)
    assert v.p_refuted == pytest.approx(refuted, abs=1e-12)
    if direction != "differ":
        assert v.p_supported + v.p_refuted == pytest.approx(1.0, abs=1e-15)


def test_the_rule_states_the_event_the_threshold_and_the_credibility():
    v = goal_verdict(normal(0.1, 0.05), direction="increase", min_effect=0.05, credibility=0.9)
    assert "P(effect > 0.05) >= 0.9" in v.rule and "P(effect <= 0.05) >= 0.9" in v.rule
    assert "\n" not in v.rule
    v = goal_verdict(normal(0.1, 0.05), direction="decrease", min_effect=0.05, credibility=0.9)
    assert "P(effect < -0.05) >= 0.9" in v.rule
    v = goal_verdict(normal(0.1, 0.05), direction="differ", min_effect=0.02, credibility=0.8)
    assert "P(effect < -0.02) or P(effect > 0.02) >= 0.9 (each direction at (1 + c)/2)" \
        in v.rule and "P(|effect| <= 0.02) >= 0.8" in v.rule
    assert "P(|effect| <= 0.02) >= 0.8" in v.rule


def test_verdict_is_a_frozen_dataclass():
    v = goal_verdict(normal(0.1, 0.05), direction="increase", min_effect=0.0, credibility=0.9)
    assert isinstance(v, GoalVerdict)
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.verdict = "refuted"  # type: ignore[misc]


# ---------------------------------------------------------------- boundaries


def test_probability_exactly_at_the_credibility_decides():
    # dyadic values: 1 − 0.25 = 0.75 exactly
    def step(d):
        return 0.25

    assert goal_verdict(step, direction="increase", min_effect=0.1,
                        credibility=0.75).verdict == "supported"
    # decrease: p_supported = 0.25, so p_refuted = 0.75 reaches the credibility exactly
    assert goal_verdict(step, direction="decrease", min_effect=0.1,
                        credibility=0.75).verdict == "refuted"
    assert goal_verdict(step, direction="decrease", min_effect=0.1,
                        credibility=0.75 + 2**-20).verdict == "inconclusive"

    def high(d):
        return 0.75

    assert goal_verdict(high, direction="increase", min_effect=0.1,
                        credibility=0.75).verdict == "refuted"
    assert goal_verdict(high, direction="decrease", min_effect=0.1,
                        credibility=0.75).verdict == "supported"


def test_the_cdf_is_read_at_plus_and_minus_the_minimum_effect():
    seen = []

    def spy(d):
        seen.append(d)
        return 0.5

    goal_verdict(spy, direction="increase", min_effect=0.07, credibility=0.9)
    goal_verdict(spy, direction="decrease", min_effect=0.07, credibility=0.9)
    goal_verdict(spy, direction="differ", min_effect=0.07, credibility=0.9)
    assert seen == [0.07, -0.07, -0.07, 0.07]


def test_a_posterior_centred_on_the_boundary_is_inconclusive():
    v = goal_verdict(normal(0.05, 0.01), direction="increase", min_effect=0.05, credibility=0.6)
    assert v.p_supported == pytest.approx(0.5, abs=1e-15) and v.verdict == "inconclusive"


def test_differ_needs_one_credible_direction_and_with_no_minimum_is_never_refuted():
    for mean, expected in ((-0.3, "supported"), (0.4, "supported"), (0.0, "inconclusive"),
                           (1e-6, "inconclusive")):
        v = goal_verdict(normal(mean, 0.01), direction="differ", min_effect=0.0,
                         credibility=0.99)
        assert v.verdict == expected and v.p_refuted == 0.0
    # mass split evenly beyond both edges is no evidence of a difference in either direction
    v = goal_verdict(normal(0.0, 1.0), direction="differ", min_effect=0.01, credibility=0.9)
    assert v.verdict == "inconclusive" and v.p_supported < 0.6


def test_increase_with_no_minimum_effect_asks_only_for_the_sign():
    v = goal_verdict(normal(0.03, 0.01), direction="increase", min_effect=0, credibility=0.99)
    assert v.p_supported == pytest.approx(stats.norm.sf(-3), abs=1e-12)
    assert v.verdict == "supported"


def test_works_with_an_ix_stats_posterior_cdf():
    """18/20 vs 5/20 passes: the increase is credible; against a 0.5 bar it is refuted."""
    def cdf(d):
        return diff_cdf(18, 20, 5, 20, d)

    assert goal_verdict(cdf, direction="increase", min_effect=0.1,
                        credibility=0.95).verdict == "supported"
    assert goal_verdict(cdf, direction="decrease", min_effect=0.0,
                        credibility=0.95).verdict == "refuted"
    v = goal_verdict(cdf, direction="increase", min_effect=0.9, credibility=0.95)
    assert v.verdict == "refuted"
    assert v.p_supported == pytest.approx(1 - diff_cdf(18, 20, 5, 20, 0.9), abs=1e-15)


def test_a_tiny_decrease_from_quadrature_noise_is_tolerated_and_clamped():
    values = {-0.01: 0.3 + 1e-8, 0.01: 0.3}
    v = goal_verdict(values.__getitem__, direction="differ", min_effect=0.01, credibility=0.9)
    assert v.p_supported == pytest.approx(0.7) and v.p_refuted == 0.0


# ---------------------------------------------------------------- bad arguments


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"direction": "up"}, "direction"),
    ({"direction": "Increase"}, "direction"),
    ({"min_effect": -0.01}, "min_effect"),
    ({"min_effect": float("nan")}, "min_effect"),
    ({"min_effect": float("inf")}, "min_effect"),
    ({"min_effect": "0.1"}, "min_effect"),
    ({"min_effect": True}, "min_effect"),
    ({"credibility": 0.5}, "credibility"),
    ({"credibility": 1.0}, "credibility"),
    ({"credibility": 0.3}, "credibility"),
    ({"credibility": 95}, "credibility"),
    ({"credibility": float("nan")}, "credibility"),
])
def test_bad_arguments_raise_value_error(kwargs, match):
    args = {"direction": "increase", "min_effect": 0.05, "credibility": 0.95, **kwargs}
    with pytest.raises(ValueError, match=match):
        goal_verdict(normal(0, 1), **args)


@pytest.mark.parametrize("cdf", [lambda d: 1.5, lambda d: -0.1, lambda d: float("nan"),
                                 lambda d: "half", lambda d: None])
def test_a_cdf_returning_something_other_than_a_probability_raises(cdf):
    with pytest.raises(ValueError, match="cdf"):
        goal_verdict(cdf, direction="increase", min_effect=0.05, credibility=0.95)


def test_a_cdf_that_decreases_raises_and_a_non_callable_raises():
    with pytest.raises(ValueError, match="non-decreasing"):
        goal_verdict(lambda d: 0.5 - d, direction="differ", min_effect=0.1, credibility=0.9)
    with pytest.raises(ValueError, match="callable"):
        goal_verdict(0.5, direction="increase", min_effect=0.1,  # type: ignore[arg-type]
                     credibility=0.9)


# ---------------------------------------------------------------- goal_outcome

def _tables(seed: int, count: int) -> list[tuple[int, int, int, int]]:
    rng = np.random.default_rng(seed)
    return [tuple(int(x) for x in rng.integers(0, high, 4))
            for high in (4, 12, 40, 150) for _ in range(count)]


@pytest.mark.parametrize("direction", ["increase", "decrease", "differ"])
@pytest.mark.parametrize("min_effect", [0.02, 0.05, 0.1])
def test_goal_outcome_reaches_goal_verdicts_verdict_with_or_without_bounds(direction,
                                                                        min_effect):
    # the paired Dirichlet posterior (recall, pass_rate), the independent one (precision)
    # and F1's, on tables of 4 to 150 cases: the verdict read from the bounds where they
    # settle it is the quadrature's, every time (the next test puts a value on a threshold)
    exact_needed = 0
    posteriors = []
    for s, t, u, v in _tables(seed=int(min_effect * 1000), count=6):
        posteriors.append((lambda d, a=(s, t, u, v): paired_diff_cdf(*a, d),
                           lambda d, a=(s, t, u, v): paired_diff_cdf_bounds(*a, d)))
        posteriors.append((lambda d, a=(s, s + t, u, u + v): diff_cdf(*a, d),
                           lambda d, a=(s, s + t, u, u + v): diff_cdf_bounds(*a, d)))
        posteriors.append((lambda d, a=(s, t, u, v, t, s): f1_diff_cdf(*a, d),
                           lambda d, a=(s, t, u, v, t, s): f1_diff_cdf_bounds(*a, d)))
    for credibility in (0.8, 0.95):
        rule = {"direction": direction, "min_effect": min_effect, "credibility": credibility}
        for cdf, bounds in posteriors:
            calls = []

            def counted(d, cdf=cdf, calls=calls):
                calls.append(d)
                return cdf(d)

            expected = goal_verdict(cdf, **rule).verdict
            assert goal_outcome(counted, bounds, **rule) == expected
            assert goal_outcome(cdf, None, **rule) == expected
            exact_needed += bool(calls)
    assert exact_needed < len(posteriors) // 2  # the bounds settle most


def test_goal_outcome_asks_the_cdf_when_the_value_sits_on_a_threshold():
    # F(−0.05) is 0.95 to the digit: no box around it settles "decrease" at 0.95
    cdf = normal(-0.05 - stats.norm.ppf(0.95) * 0.02, 0.02)
    calls = []

    def counted(d):
        calls.append(d)
        return cdf(d)

    rule = {"direction": "decrease", "min_effect": 0.05, "credibility": 0.95}
    assert goal_outcome(counted, lambda d: (cdf(d) - 0.01, cdf(d) + 0.01), **rule) \
        == goal_verdict(cdf, **rule).verdict
    assert calls == [-0.05]
    calls.clear()  # ... and a box far from every threshold is enough
    assert goal_outcome(counted, lambda d: (0.40, 0.45), **rule) == "inconclusive"
    assert calls == []
