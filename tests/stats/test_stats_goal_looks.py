"""The critical values behind `stop: goal` (ix.stats.sequential: repeated_crossing,
pocock_critical, look_credibility) against independent references: Pocock's (1977) table
and scipy's multivariate normal CDF."""

import math

import numpy as np
import pytest
from scipy.stats import multivariate_normal, norm

from ix.stats.sequential import look_credibility, pocock_critical, repeated_crossing


@pytest.mark.parametrize(("looks", "table"), [(2, 2.178), (3, 2.289), (5, 2.413)])
def test_pocock_constants_match_the_published_table(looks, table):
    # Pocock (1977), two-sided 0.05 = one-sided 0.025, equally spaced looks
    assert pocock_critical(0.025, looks) == pytest.approx(table, abs=0.004)


def test_one_look_is_the_plain_quantile_and_credibility():
    assert pocock_critical(0.05, 1) == pytest.approx(norm.ppf(0.95), abs=1e-9)
    assert look_credibility(0.95, 1) == pytest.approx(0.95, abs=1e-9)


@pytest.mark.parametrize("z", [1.8, 2.1, 2.5])
def test_two_look_crossing_equals_the_bivariate_normal(z):
    # Z1 and Z2 = (S1 + X2)/sqrt 2 have correlation sqrt(1/2)
    r = math.sqrt(0.5)
    inside = multivariate_normal(mean=[0, 0], cov=[[1, r], [r, 1]]).cdf(
        np.array([z, z]), rng=np.random.default_rng(0))
    assert repeated_crossing(z, 2) == pytest.approx(1 - inside, abs=5e-4)


def test_stricter_with_more_looks_and_between_the_bounds():
    c = [look_credibility(0.95, k) for k in (1, 2, 5)]
    assert c[0] < c[1] < c[2] < 1 - 0.05 / 5  # above 0.95, below Bonferroni's 0.99
    with pytest.raises(ValueError, match="credibility"):
        look_credibility(0.4, 3)
