"""`n_for_goal` / `goal_settle_power`: a goal's rule as a one-sided t-test against its boundary,
checked against statsmodels' TTestPower and against a direct simulation of the t-test."""

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.power import TTestPower

from ix.stats.power import goal_settle_power, n_for_goal


@pytest.mark.parametrize("effect,m,sd,c,power", [
    (0.2, 0.1, 0.4, 0.95, 0.8), (0.3, 0.0, 0.5, 0.9, 0.9), (0.15, 0.05, 0.2, 0.99, 0.8),
    (0.5, 0.1, 0.3, 0.95, 0.8),
])
def test_n_for_goal_is_the_smallest_n_of_statsmodels_one_sided_t_power(effect, m, sd, c, power):
    n = n_for_goal(effect, min_effect=m, sd=sd, credibility=c, power=power)
    ref = TTestPower()

    def p(k):
        return ref.power(effect_size=(effect - m) / sd, nobs=k, alpha=1 - c,
                         alternative="larger")

    assert p(n) >= power and (n == 2 or p(n - 1) < power)
    assert goal_settle_power(n, effect, min_effect=m, sd=sd, credibility=c) == pytest.approx(
        p(n), abs=1e-9)


def test_small_n_uses_t_quantiles_so_it_asks_for_more_cases_than_z():
    # effect far beyond the boundary: a handful of cases, where t and z differ most
    effect, m, sd, c, power = 0.6, 0.1, 0.4, 0.95, 0.8
    n = n_for_goal(effect, min_effect=m, sd=sd, credibility=c, power=power)
    z = (stats.norm.ppf(c) + stats.norm.ppf(power)) ** 2 * sd**2 / (effect - m) ** 2
    assert n > math.ceil(z)
    # and the t power at n is what a simulated one-sided t-test of normal differences gives
    rng = np.random.default_rng(7)
    d = rng.normal(effect, sd, size=(20000, n))
    t = (d.mean(axis=1) - m) / (d.std(axis=1, ddof=1) / math.sqrt(n))
    simulated = float(np.mean(t > stats.t.ppf(c, n - 1)))
    assert simulated == pytest.approx(
        goal_settle_power(n, effect, min_effect=m, sd=sd, credibility=c), abs=0.02)


def test_direction_and_refutation_are_mirrored():
    kw = dict(sd=0.3, credibility=0.95, power=0.8)
    up = n_for_goal(0.25, min_effect=0.1, direction="increase", **kw)
    assert n_for_goal(-0.25, min_effect=0.1, direction="decrease", **kw) == up
    # an effect inside the region is settled by "refuted", as far from the boundary
    assert n_for_goal(-0.05, min_effect=0.1, direction="increase", **kw) == up
    # "differ" judges each direction at (1 + c)/2: it needs more cases
    assert n_for_goal(0.25, min_effect=0.1, direction="differ", **kw) > up


@pytest.mark.parametrize("kwargs", [
    dict(effect=0.1, min_effect=0.1, sd=0.3),            # on the boundary: nothing settles it
    dict(effect=0.2, min_effect=0.1, sd=0.0),
    dict(effect=0.2, min_effect=-0.1, sd=0.3),
    dict(effect=0.2, min_effect=0.1, sd=0.3, credibility=0.4),
    dict(effect=0.2, min_effect=0.1, sd=0.3, direction="sideways"),
    dict(effect=float("nan"), min_effect=0.1, sd=0.3),
])
def test_impossible_goal_plans_raise_value_error(kwargs):
    with pytest.raises(ValueError):
        n_for_goal(**kwargs)
