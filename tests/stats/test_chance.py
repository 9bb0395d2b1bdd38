"""`chance_range`: the exact central range of a fair coin's count, as scipy gives it."""

import pytest
from scipy import stats

from ix.stats.chance import chance_range


@pytest.mark.parametrize("level", [0.9, 0.95, 0.999])
def test_agrees_with_scipy_for_every_n_up_to_400(level):
    for n in range(0, 401):
        lo, hi = stats.binom.interval(level, n, 0.5)
        assert chance_range(n, level) == (int(lo), int(hi)), n


def test_holds_at_least_the_level_and_one_step_narrower_would_not():
    for n in (10, 75, 300):
        lo, hi = chance_range(n, 0.999)
        inside = stats.binom.cdf(hi, n, 0.5) - stats.binom.cdf(lo - 1, n, 0.5)
        assert inside >= 0.999
        narrower = stats.binom.cdf(hi - 1, n, 0.5) - stats.binom.cdf(lo, n, 0.5)
        assert narrower < 0.999


@pytest.mark.parametrize("n,level", [(-1, 0.9), (5, 1.0), (5, 0.0)])
def test_bad_arguments_are_refused(n, level):
    with pytest.raises(ValueError):
        chance_range(n, level)
