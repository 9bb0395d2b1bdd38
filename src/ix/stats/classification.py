"""Precision, recall and F1 intervals from a confusion table (STATS.md method 8).

Model (Bowyer, Aitchison & Ivanova 2025, §3.5): cell probabilities of (TP, FP, FN, TN) have a
Dirichlet(1, 1, 1, 1) prior, so the posterior is Dirichlet(TP + 1, FP + 1, FN + 1, TN + 1) and
TN never enters precision, recall or F1. All intervals are equal-tailed and exact (Beta
quantiles). Counts must be non-negative whole numbers; scalars give floats, numpy arrays
(broadcast together) give arrays.
"""

from typing import Any, overload

import numpy as np
from scipy import special

from ix.stats.intervals import Counts, FloatArray, Scalar, _check_level, _pair, _whole


def _beta_ends(a: FloatArray, b: FloatArray, level: float) -> tuple[FloatArray, FloatArray]:
    return special.betaincinv(a, b, (1 - level) / 2), special.betaincinv(a, b, (1 + level) / 2)


@overload
def precision_interval(  # type: ignore[overload-overlap]
    tp: Scalar, fp: Scalar, level: float = 0.95
) -> tuple[float, float]: ...
@overload
def precision_interval(
    tp: Counts, fp: Counts, level: float = 0.95
) -> tuple[FloatArray, FloatArray]: ...
def precision_interval(tp: Counts, fp: Counts, level: float = 0.95) -> tuple[Any, Any]:
    """Precision TP/(TP + FP): equal-tailed interval of its posterior Beta(TP + 1, FP + 1).

    With no predicted positives (TP = FP = 0) this is the uniform prior's interval.
    """
    level = _check_level(level)
    tp_arr, fp_arr = np.broadcast_arrays(_whole("tp", tp), _whole("fp", fp))
    return _pair(*_beta_ends(tp_arr + 1, fp_arr + 1, level), scalar=tp_arr.ndim == 0)


@overload
def recall_interval(  # type: ignore[overload-overlap]
    tp: Scalar, fn: Scalar, level: float = 0.95
) -> tuple[float, float]: ...
@overload
def recall_interval(
    tp: Counts, fn: Counts, level: float = 0.95
) -> tuple[FloatArray, FloatArray]: ...
def recall_interval(tp: Counts, fn: Counts, level: float = 0.95) -> tuple[Any, Any]:
    """Recall TP/(TP + FN): equal-tailed interval of its posterior Beta(TP + 1, FN + 1).

    With no actual positives (TP = FN = 0) this is the uniform prior's interval.
    """
    level = _check_level(level)
    tp_arr, fn_arr = np.broadcast_arrays(_whole("tp", tp), _whole("fn", fn))
    return _pair(*_beta_ends(tp_arr + 1, fn_arr + 1, level), scalar=tp_arr.ndim == 0)


@overload
def f1_interval(  # type: ignore[overload-overlap]
    tp: Scalar, fp: Scalar, fn: Scalar, level: float = 0.95
) -> tuple[float, float]: ...
@overload
def f1_interval(
    tp: Counts, fp: Counts, fn: Counts, level: float = 0.95
) -> tuple[FloatArray, FloatArray]: ...
def f1_interval(tp: Counts, fp: Counts, fn: Counts, level: float = 0.95) -> tuple[Any, Any]:
    """F1 = 2TP/(2TP + FP + FN): exact equal-tailed interval, 2u/(1 + u) at U's quantiles u.

    Derivation: F1 = 2θ_TP/(2θ_TP + θ_FP + θ_FN) = 2U/(1 + U) with U = θ_TP/(θ_TP + θ_FP + θ_FN),
    and by Dirichlet aggregation U ~ Beta(TP + 1, FP + FN + 2). The map is increasing, so
    quantiles of F1 are the map of U's quantiles.
    """
    level = _check_level(level)
    tp_arr, fp_arr, fn_arr = np.broadcast_arrays(
        _whole("tp", tp), _whole("fp", fp), _whole("fn", fn)
    )
    u_lo, u_hi = _beta_ends(tp_arr + 1, fp_arr + fn_arr + 2, level)
    return _pair(2 * u_lo / (1 + u_lo), 2 * u_hi / (1 + u_hi), scalar=tp_arr.ndim == 0)
