"""A `bayes_evals`-compatible face (Bowyer et al. 2025's library) over a cases × subjects table.

The table holds one 0/1 outcome per case (row) and subject (column): a pandas DataFrame
(duck-typed: anything with `.columns` and `table[column]`) or a mapping name → sequence.
`paired_comparisons` defaults to the original's latent bivariate-probit model (§3.4);
`model="dirichlet"` gives ix's earlier Dirichlet-multinomial answer. Unlike the original,
which samples, every number here is exact or by deterministic quadrature, and the results
are plain dicts and arrays (subject order = column order).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ix._lazy import lazy
from ix.stats.comparisons import paired_prob_a_beats_b, prob_a_beats_b
from ix.stats.paired_probit import probit_prob_a_beats_b

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
    from scipy import special
else:
    np = lazy("numpy")
    special = lazy("scipy.special")

__all__ = ["independent_comparisons", "independent_intervals", "paired_comparisons"]


@runtime_checkable
class FrameLike(Protocol):
    """What is used of a pandas DataFrame: its column labels and a column by label."""

    @property
    def columns(self) -> Iterable[Any]: ...

    def __getitem__(self, key: Any) -> Any: ...


Table = FrameLike | Mapping[Any, Sequence[float]]


def _columns(df: Table) -> tuple[list[str], NDArray[np.int64]]:
    """Subject names (as str) and a subjects × cases 0/1 matrix; validates the table."""
    labels = list(df.columns) if isinstance(df, FrameLike) else list(df.keys())
    if not labels:
        raise ValueError("the table has no subjects (columns)")
    rows = [np.asarray(df[label], dtype=float).ravel() for label in labels]
    lengths = {len(r) for r in rows}
    if len(lengths) != 1:
        raise ValueError(f"every subject needs one outcome per case; lengths differ: "
                         f"{sorted(lengths)}")
    data = np.stack(rows)
    if not np.all((data == 0) | (data == 1)):
        raise ValueError("outcomes must be 0 or 1 (no missing values)")
    return [str(label) for label in labels], data.astype(np.int64)


def _check_prior(prior: tuple[float, float]) -> tuple[float, float]:
    a, b = float(prior[0]), float(prior[1])
    if not (a > 0 and b > 0):
        raise ValueError(f"prior parameters must be positive, got {prior}")
    return a, b


def independent_intervals(df: Table, alpha: float = 0.05,
                          prior: tuple[float, float] = (1, 1)) -> dict[str, tuple[float, float]]:
    """Per subject, the equal-tailed 1 − alpha credible interval of its pass rate.

    Posterior Beta(k + a, n − k + b) with k passes out of n cases and prior Beta(a, b);
    endpoints `betaincinv(…, alpha/2)` and `betaincinv(…, 1 − alpha/2)`. Keys are the
    column labels as str, in column order. Raises ValueError on a malformed table,
    alpha outside (0, 1) or a non-positive prior.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    a, b = _check_prior(prior)
    names, data = _columns(df)
    n = data.shape[1]
    out: dict[str, tuple[float, float]] = {}
    for name, k in zip(names, data.sum(axis=1), strict=True):
        lo, hi = special.betaincinv(k + a, n - k + b, [alpha / 2.0, 1.0 - alpha / 2.0])
        out[name] = (float(lo), float(hi))
    return out


def independent_comparisons(df: Table,
                            prior: tuple[float, float] = (1, 1)) -> NDArray[np.float64]:
    """Subjects × subjects matrix of P(θ_row > θ_col), independent Beta posteriors.

    Entry (i, j) = `prob_a_beats_b(k_i, n, k_j, n, prior)` (exact); NaN on the diagonal;
    (i, j) + (j, i) = 1 up to rounding. Raises ValueError on a malformed table or a
    non-positive prior.
    """
    pr = _check_prior(prior)
    _, data = _columns(df)
    n = data.shape[1]
    k = data.sum(axis=1)
    m = len(k)
    out = np.full((m, m), np.nan)
    for i in range(m):
        for j in range(m):
            if i != j:
                out[i, j] = prob_a_beats_b(int(k[i]), n, int(k[j]), n, prior=pr)
    return out


def paired_comparisons(df: Table, model: str = "probit") -> NDArray[np.float64]:
    """Subjects × subjects matrix of P(θ_row > θ_col) from each pair's paired 2×2 table.

    model "probit" (default, the original library's model, Bowyer et al. 2025 §3.4): the
    latent bivariate-probit model, θ_A, θ_B ~ U(0, 1), ρ ~ 2·Beta(4, 2) − 1, cells from the
    bivariate normal CDF; entry (i, j) = `probit_prob_a_beats_b(S, T, U, V)`, by deterministic
    quadrature where the original draws 10k importance samples (agrees with the original's
    seed average within 0.015 on its own example table; docs/statistics.md).
    model "dirichlet": the Dirichlet(1,1,1,1) posterior over the 2×2 cells,
    `paired_prob_a_beats_b` = P(Beta(T+1, U+1) > ½) (ix before 0.15).
    S = cases both solve, T = only row solves, U = only col solves, V = neither. NaN on the
    diagonal; entry (j, i) is 1 − entry (i, j). Raises ValueError on a malformed table or an
    unknown model.
    """
    if model not in ("probit", "dirichlet"):
        raise ValueError(f"model must be 'probit' or 'dirichlet', got {model!r}")
    _, data = _columns(df)
    m = data.shape[0]
    out = np.full((m, m), np.nan)
    prob = probit_prob_a_beats_b if model == "probit" else paired_prob_a_beats_b
    for i in range(m):
        for j in range(i + 1, m):
            a, b = data[i], data[j]
            both, a_only = int(np.sum(a & b)), int(np.sum(a & (1 - b)))
            b_only = int(np.sum((1 - a) & b))
            neither = len(a) - both - a_only - b_only
            out[i, j] = prob(both, a_only, b_only, neither)
            out[j, i] = 1.0 - out[i, j]
    return out
