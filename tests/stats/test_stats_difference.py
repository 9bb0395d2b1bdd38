"""`difference_interval`: equal-tailed unless that excludes the estimate; then one-sided with
exact credibility (STATS.md §12). References: scipy.stats.beta on a shifted Beta posterior."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from ix.stats import DifferenceInterval, difference_interval


def _shifted_beta(a: float, b: float):
    """The CDF on [−1, 1] of 2X − 1, X ~ Beta(a, b), and its quantile function."""
    dist = stats.beta(a, b)
    return (lambda d: float(dist.cdf((d + 1) / 2))), (lambda p: 2 * float(dist.ppf(p)) - 1)


def test_equal_tailed_when_it_holds_the_estimate() -> None:
    cdf, ppf = _shifted_beta(20, 2)
    got = difference_interval(cdf, 0.85)
    assert got.sided == "two"
    assert got.lo == pytest.approx(ppf(0.025), abs=1e-9)
    assert got.hi == pytest.approx(ppf(0.975), abs=1e-9)
    assert got.median == pytest.approx(ppf(0.5), abs=1e-9)
    assert tuple(got) == (got.lo, got.hi)


def test_estimate_above_gives_the_upper_one_sided_interval() -> None:
    cdf, ppf = _shifted_beta(20, 2)
    got = difference_interval(cdf, 0.995)
    assert got == DifferenceInterval(pytest.approx(ppf(0.05), abs=1e-9), 1.0,
                                     pytest.approx(ppf(0.5), abs=1e-9), "upper")
    assert got.contains(0.995)


def test_estimate_below_gives_the_lower_one_sided_interval() -> None:
    cdf, ppf = _shifted_beta(2, 20)
    got = difference_interval(cdf, -0.995, level=0.9)
    assert (got.lo, got.sided) == (-1.0, "lower")
    assert got.hi == pytest.approx(ppf(0.9), abs=1e-9)
    assert got.contains(-0.995)


def test_custom_support_and_an_estimate_at_its_end() -> None:
    dist = stats.beta(30, 1)
    got = difference_interval(lambda x: float(dist.cdf(x)), 1.0, lo=0.0, hi=1.0)
    assert (got.hi, got.sided) == (1.0, "upper")
    assert got.lo == pytest.approx(dist.ppf(0.05), abs=1e-9)


@pytest.mark.parametrize("bad", [{"level": 1.0}, {"level": 0}, {"lo": 1.0, "hi": -1.0},
                                 {"estimate": float("nan")}])
def test_bad_arguments_raise(bad: dict[str, float]) -> None:
    cdf, _ = _shifted_beta(2, 2)
    kwargs = {"estimate": 0.0, **bad}
    with pytest.raises(ValueError):
        difference_interval(cdf, **kwargs)


@settings(max_examples=60, deadline=None)
@given(a=st.floats(0.3, 60), b=st.floats(0.3, 60), est=st.floats(-1, 1),
       level=st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_always_contains_the_estimate_with_mass_level(a: float, b: float, est: float,
                                                      level: float) -> None:
    cdf, _ = _shifted_beta(a, b)
    got = difference_interval(cdf, est, level=level)
    assert got.lo <= est <= got.hi
    # brentq holds x to 1e-12; where a Beta's density is unbounded (a < 1 at its edge) that
    # leaves the mass a few 1e-7 off (a = 0.3, b = 22, est = -0.75: 2.2e-7)
    assert cdf(got.hi) - cdf(got.lo) == pytest.approx(level, abs=1e-6)


# ------------------------------------------- the diff-interval functions with estimate=


def test_diff_interval_with_estimate_contains_it_and_is_one_sided_when_needed() -> None:
    from ix.stats import diff_cdf, diff_interval

    plain = diff_interval(9, 10, 10, 10)
    got = diff_interval(9, 10, 10, 10, estimate=-0.1)
    assert isinstance(got, DifferenceInterval) and got.contains(-0.1)
    if got.sided == "two":
        assert (got.lo, got.hi) == pytest.approx(plain, abs=1e-9)
    wide = diff_interval(30, 40, 10, 40, estimate=0.5)
    assert wide.sided == "two" and tuple(wide) == pytest.approx(diff_interval(30, 40, 10, 40))
    assert diff_cdf(30, 40, 10, 40, wide.median) == pytest.approx(0.5, abs=1e-8)


def test_estimate_outside_the_equal_tailed_interval_gets_the_one_sided_one() -> None:
    from ix.stats import diff_cdf, diff_interval

    # 10/10 vs 0/10: the observed 1.0 lies above the 97.5% quantile (0.978)
    _, hi = diff_interval(10, 10, 0, 10)
    assert hi < 1.0
    got = diff_interval(10, 10, 0, 10, estimate=1.0)
    assert got.sided == "upper" and got.hi == 1.0 and got.lo <= 1.0
    assert diff_cdf(10, 10, 0, 10, got.lo) == pytest.approx(0.05, abs=1e-8)
    low = diff_interval(0, 10, 10, 10, estimate=-1.0)
    assert (low.lo, low.sided) == (-1.0, "lower")
    assert low.hi == pytest.approx(-got.lo, abs=1e-8)


def test_paired_and_f1_diff_intervals_take_an_estimate() -> None:
    from ix.stats import f1_diff_interval, paired_diff_interval

    got = paired_diff_interval(0, 10, 0, 0, estimate=1.0)
    assert got.sided == "upper" and got.contains(1.0)
    assert tuple(paired_diff_interval(5, 3, 1, 6, estimate=2 / 15)) == pytest.approx(
        paired_diff_interval(5, 3, 1, 6))
    probit = paired_diff_interval(0, 10, 0, 0, model="probit", estimate=1.0)
    assert probit.contains(1.0)
    f1 = f1_diff_interval(10, 0, 0, 0, 10, 10, estimate=1.0)
    assert f1.sided == "upper" and f1.contains(1.0)
    assert f1_diff_interval(10, 0, 0, 0, 10, 10)[1] < 1.0
