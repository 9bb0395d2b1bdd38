"""The plain-Python Beta quantile agrees with scipy, so `ix validate` can skip importing it."""

import itertools

import pytest
from scipy import special

from ix.stats.beta import beta_cdf, beta_quantile, credible_interval
from ix.stats.intervals import beta_interval

SHAPES = (0.1, 0.5, 1.0, 1.5, 2.0, 3.0, 7.5, 25.0, 100.0, 381.0, 1000.0, 5000.0, 40000.0)
QS = (1e-10, 1e-4, 0.005, 0.025, 0.05, 0.1, 0.5, 0.9, 0.95, 0.975, 0.995, 1 - 1e-6)


def test_the_quantile_agrees_with_scipy_to_1e9_over_a_grid_of_shapes_and_levels():
    worst = max(abs(beta_quantile(q, a, b) - float(special.betaincinv(a, b, q)))
                for a, b, q in itertools.product(SHAPES, SHAPES, QS))
    assert worst < 1e-9


@pytest.mark.parametrize("a,b", [(0.5, 0.5), (1.0, 1.0), (3.0, 40.0), (200.0, 190.0)])
def test_the_cdf_agrees_with_scipy_and_inverts_the_quantile(a, b):
    for x in (1e-6, 0.01, 0.3, 0.5, 0.77, 0.999):
        assert beta_cdf(x, a, b) == pytest.approx(float(special.betainc(a, b, x)), abs=1e-12)
    for q in QS:
        assert beta_cdf(beta_quantile(q, a, b), a, b) == pytest.approx(q, rel=1e-9, abs=1e-15)


def test_the_ends_and_bad_parameters():
    assert beta_quantile(0.0, 2.0, 3.0) == 0.0
    assert beta_quantile(1.0, 2.0, 3.0) == 1.0
    assert (beta_cdf(0.0, 2.0, 3.0), beta_cdf(1.0, 2.0, 3.0)) == (0.0, 1.0)
    with pytest.raises(ValueError):
        beta_quantile(0.5, 0.0, 1.0)
    with pytest.raises(ValueError):
        beta_quantile(1.5, 1.0, 1.0)


@pytest.mark.parametrize("prior", [(1.0, 1.0), (0.5, 0.5)])
@pytest.mark.parametrize("level", [0.8, 0.95, 0.99])
def test_credible_interval_is_beta_interval_for_one_count(level, prior):
    for n in (0, 1, 2, 7, 17, 100, 381):
        for k in sorted({0, 1, n // 2, n - 1, n} - {-1}):
            if 0 <= k <= n:
                lo, hi = credible_interval(k, n, level, prior)
                want = beta_interval(k, n, level=level, prior=prior)
                assert (lo, hi) == pytest.approx(want, abs=1e-9), (k, n)
