"""Exact frequentist coverage of the 95% intervals (STATS.md, "How to check it").

Coverage at p is Σ_k Binomial(k; N, p) over the k whose interval contains p: no Monte Carlo.
Its average over p ~ U(0, 1) is integrated exactly: between consecutive interval ends the set
of covering k is fixed, so the integrand is a polynomial of degree N, and Gauss-Legendre with
64 nodes per piece integrates it exactly up to rounding. The default Beta(1, 1) interval must
hold 0.95 on average and >= 0.90 on the grid; Wald must fail the same test.
"""

from collections.abc import Callable
from itertools import pairwise

import numpy as np
import numpy.typing as npt
import pytest
from scipy import special, stats

from ix.stats.intervals import (
    beta_interval,
    clopper_pearson_interval,
    jeffreys_interval,
    wald_interval,
    wilson_interval,
)

NS = [5, 10, 20, 50, 100]
PS = [0.05, 0.2, 0.5, 0.8, 0.95]
Method = Callable[[npt.NDArray[np.int_], int], tuple[npt.NDArray[np.float64], ...]]
METHODS: dict[str, Method] = {
    "beta": lambda k, n: beta_interval(k, n),
    "equal_tailed": lambda k, n: beta_interval(k, n, method="equal_tailed"),
    "hpd": lambda k, n: beta_interval(k, n, method="hpd"),
    "wilson": wilson_interval,
    "clopper_pearson": clopper_pearson_interval,
    "jeffreys": jeffreys_interval,
    "wald": wald_interval,
}
NODES, WEIGHTS = np.polynomial.legendre.leggauss(64)


def ends(method: str, n: int) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    lo, hi = METHODS[method](np.arange(n + 1), n)
    return np.asarray(lo), np.asarray(hi)


def coverage(
    p: npt.ArrayLike, lo: npt.NDArray[np.float64], hi: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """P(interval contains p) at each p, for the intervals lo[k], hi[k] of k = 0..N."""
    p = np.atleast_1d(np.asarray(p, dtype=float))[:, None]
    k = np.arange(lo.size)
    return (stats.binom.pmf(k, lo.size - 1, p) * ((lo <= p) & (p <= hi))).sum(axis=1)


def average_coverage(lo: npt.NDArray[np.float64], hi: npt.NDArray[np.float64]) -> float:
    """∫₀¹ coverage(p) dp, piecewise Gauss-Legendre between the interval ends."""
    breaks = np.unique(np.concatenate([[0.0, 1.0], lo, hi]))
    total = 0.0
    for a, b in pairwise(breaks):
        mid, half = (a + b) / 2, (b - a) / 2
        total += half * float(WEIGHTS @ coverage(mid + half * NODES, lo, hi))
    return total


def average_coverage_closed_form(lo: npt.NDArray[np.float64], hi: npt.NDArray[np.float64]) -> float:
    """Σ_k ∫_{lo_k}^{hi_k} C(N,k) p^k (1-p)^(N-k) dp = Σ_k [I_hi − I_lo](k+1, N−k+1) / (N + 1)."""
    n = lo.size - 1
    k = np.arange(n + 1)
    mass = special.betainc(k + 1, n - k + 1, hi) - special.betainc(k + 1, n - k + 1, lo)
    return float(mass.sum() / (n + 1))


@pytest.mark.parametrize("method", list(METHODS))
@pytest.mark.parametrize("n", NS)
def test_quadrature_harness_agrees_with_the_closed_form_average(method, n):
    lo, hi = ends(method, n)
    assert average_coverage(lo, hi) == pytest.approx(
        average_coverage_closed_form(lo, hi), abs=1e-12
    )


@pytest.mark.parametrize("n", NS)
def test_default_interval_covers_095_on_average_over_uniform_p(n):
    assert average_coverage(*ends("beta", n)) == pytest.approx(0.950, abs=0.002)


@pytest.mark.parametrize("n", NS)
def test_default_interval_covers_at_least_090_in_every_grid_cell(n):
    assert coverage(PS, *ends("beta", n)).min() >= 0.90


@pytest.mark.parametrize("n", NS)
def test_clopper_pearson_never_covers_less_than_095(n):
    grid = np.linspace(0.0, 1.0, 2_001)
    assert coverage(grid, *ends("clopper_pearson", n)).min() >= 0.95 - 1e-12


def test_wald_visibly_fails_the_same_test():
    averages = {n: average_coverage(*ends("wald", n)) for n in NS}
    cells = np.array([coverage(PS, *ends("wald", n)) for n in NS])
    assert averages[5] == pytest.approx(0.6406, abs=1e-3)
    assert all(averages[n] < 0.93 for n in NS)
    # N = 5, p = 0.05: k = 0 (probability 0.774) gives the point [0, 0], which misses p
    assert cells[0, 0] == pytest.approx(0.225, abs=5e-4) and cells[0, 0] < 1 - 0.95**5
    assert cells.mean() == pytest.approx(0.78, abs=0.005)  # STATS.md: "it covers 78%"
    assert (cells < 0.90).sum() >= 8


def test_plain_equal_tailed_interval_never_covers_a_true_rate_of_zero_the_default_does():
    # Equal-tailed ends never reach 0 or 1; the default is one-sided at k = 0 and k = n
    lo, hi = ends("equal_tailed", 5)
    assert coverage([0.0, 0.004], lo, hi).max() == 0.0
    assert coverage([0.0, 1.0], *ends("beta", 5)).tolist() == [1.0, 1.0]
    assert coverage([0.0], *ends("hpd", 5))[0] == 1.0


@pytest.mark.parametrize("n", NS)
def test_default_interval_grid_worst_cell_is_0914(n):
    """STATS.md §1: the worst cell of the grid is 0.914 (at N = 10), as before the change; the
    average over p ~ U(0, 1) stays 0.950 at every N."""
    cells = coverage(PS, *ends("beta", n))
    worst = min(coverage(PS, *ends("beta", m)).min() for m in NS)
    assert worst == pytest.approx(0.914, abs=5e-4)
    assert cells.min() >= worst
    assert average_coverage(*ends("beta", n)) == pytest.approx(0.950, abs=1e-3)
