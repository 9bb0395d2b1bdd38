"""describe() against the statistics module, correlation() against scipy."""

import dataclasses
import math
import statistics

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from ix.stats.describe import Correlation, correlation, describe


@pytest.mark.parametrize("size", [2, 3, 7, 100, 1_001])
def test_describe_matches_the_statistics_module(size):
    values = np.random.default_rng(size).lognormal(size=size).tolist()
    d = describe(values)
    cuts = statistics.quantiles(values, n=100, method="inclusive")  # linear, as numpy's default
    assert d.n == size
    assert d.mean == pytest.approx(statistics.fmean(values), rel=1e-13)
    assert d.std == pytest.approx(statistics.stdev(values), rel=1e-12)
    assert (d.p50, d.p90, d.p99) == pytest.approx((cuts[49], cuts[89], cuts[98]), rel=1e-12)


def test_percentiles_interpolate_linearly_between_order_statistics():
    d = describe([1, 2, 3, 4, 100])
    assert (d.p50, d.p90, d.p99) == pytest.approx((3.0, 4 + 0.6 * 96, 4 + 0.96 * 96))


def test_empty_input_has_count_zero_and_nan_everywhere_else():
    d = describe([])
    assert d.n == 0
    assert all(math.isnan(v) for v in (d.mean, d.std, d.p50, d.p90, d.p99))


def test_a_single_value_has_no_standard_deviation():
    d = describe([4.5])
    assert (d.n, d.mean, d.p50, d.p90, d.p99) == (1, 4.5, 4.5, 4.5, 4.5)
    assert math.isnan(d.std)


@pytest.mark.parametrize(
    ("values", "message"),
    [([1.0, float("nan")], "finite"), ([1.0, float("inf")], "finite"), ([[1, 2]], "1-D|one-dim")],
)
def test_describe_rejects_missing_values_and_tables(values, message):
    with pytest.raises(ValueError, match=message):
        describe(values)


def test_results_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        describe([1, 2]).mean = 0.0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        correlation([1, 2, 3, 4], [1, 3, 2, 4]).r = 0.0  # type: ignore[misc]


@given(st.lists(st.floats(-1e6, 1e6), min_size=2, max_size=50))
@settings(max_examples=100, deadline=None)
def test_percentiles_are_ordered_and_within_the_range(values):
    d = describe(values)
    assert min(values) <= d.p50 <= d.p90 <= d.p99 <= max(values)
    assert d.std >= 0.0


# ----------------------------------------------------------------------------------- correlation


@pytest.mark.parametrize("size", [4, 5, 12, 80])
@pytest.mark.parametrize("level", [0.9, 0.95])
def test_pearson_matches_scipy_estimate_and_fisher_interval(size, level):
    rng = np.random.default_rng(size)
    x = rng.normal(size=size)
    y = 0.5 * x + rng.normal(size=size)
    c = correlation(x, y, level)
    ref = stats.pearsonr(x, y)
    ci = ref.confidence_interval(level)
    assert (c.n, c.method) == (size, "pearson")
    assert (c.r, c.lo, c.hi) == pytest.approx((ref.statistic, ci.low, ci.high), rel=1e-12)


@pytest.mark.parametrize("size", [4, 9, 50])
def test_spearman_matches_scipy_estimate_with_bonett_wright_interval(size):
    rng = np.random.default_rng(100 + size)
    x = rng.integers(0, 5, size=size)  # ties get average ranks
    y = x + rng.normal(size=size)
    c = correlation(x, y, method="spearman")
    r = stats.spearmanr(x, y).statistic
    half = stats.norm.ppf(0.975) * math.sqrt((1 + r * r / 2) / (size - 3))
    assert c.method == "spearman"
    assert c.r == pytest.approx(r, rel=1e-12)
    assert (c.lo, c.hi) == pytest.approx(
        (math.tanh(math.atanh(r) - half), math.tanh(math.atanh(r) + half)), rel=1e-12
    )


@pytest.mark.parametrize("method", ["pearson", "spearman"])
def test_a_constant_variable_has_no_correlation(method):
    c = correlation([1, 2, 3, 4, 5], [2, 2, 2, 2, 2], method=method)
    assert c.n == 5 and all(math.isnan(v) for v in (c.r, c.lo, c.hi))


def test_fewer_than_four_pairs_give_r_without_an_interval():
    c = correlation([1, 2, 3], [1, 3, 2])
    assert c.r == pytest.approx(0.5) and math.isnan(c.lo) and math.isnan(c.hi)
    assert math.isnan(correlation([1], [2]).r)
    assert correlation([], []).n == 0


def test_perfect_correlation_has_a_degenerate_interval():
    assert correlation([1, 2, 3, 4], [3, 5, 7, 9]) == Correlation(1.0, 1.0, 1.0, 4, "pearson")
    c = correlation([1, 2, 3, 4], [9, 7, 5, 3])
    assert (c.r, c.lo, c.hi) == (-1.0, -1.0, -1.0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"x": [1, 2, 3], "y": [1, 2]}, "same length"),
        ({"x": [1, 2, float("nan")], "y": [1, 2, 3]}, "finite"),
        ({"x": [1, 2, 3], "y": [1, 2, 3], "level": 1.0}, "level"),
        ({"x": [1, 2, 3], "y": [1, 2, 3], "method": "kendall"}, "'pearson' or 'spearman'"),
    ],
)
def test_correlation_rejects_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        correlation(**kwargs)


@given(
    st.lists(st.tuples(st.floats(-1e3, 1e3), st.floats(-1e3, 1e3)), min_size=4, max_size=40),
    st.sampled_from(["pearson", "spearman"]),
)
@settings(max_examples=100, deadline=None)
def test_interval_contains_r_and_stays_in_minus_one_one(pairs, method):
    x, y = zip(*pairs, strict=True)
    c = correlation(x, y, method=method)
    if not math.isnan(c.r):
        assert -1.0 <= c.lo <= c.r <= c.hi <= 1.0
