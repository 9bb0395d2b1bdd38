"""When to stop adding trials: the posterior predictive of a case's final majority vote."""

import math


def majority_vote_probability(k: int, n: int, total: int, threshold: float = 0.5,
                              prior: tuple[float, float] = (1.0, 1.0)) -> float:
    """P(the majority vote after `total` trials activates | k of the first n passed).

    The vote activates when the final rate exceeds `threshold` (strictly, as the summary's
    majority vote does). The remaining m = total − n trials are Beta-binomial under the
    posterior Beta(k+a, n−k+b): P = Σ_{x : (k+x)/total > threshold} C(m, x)·B(x+α, m−x+β)/B(α, β).
    Exact, in log space; 0 or 1 once n = total. A case whose probability is ≥ c or ≤ 1 − c has
    its vote settled at credibility c: more trials would change it with probability < 1 − c.
    """
    if not (0 <= k <= n <= total) or total < 1:
        raise ValueError(f"need whole numbers 0 <= k <= n <= total, total >= 1; got "
                         f"k={k!r}, n={n!r}, total={total!r}")
    a, b = prior[0] + k, prior[1] + n - k
    if a <= 0 or b <= 0:
        raise ValueError(f"prior parameters must be positive, got {prior!r}")
    m = total - n
    log_norm = _lbeta(a, b)
    p = 0.0
    for x in range(m + 1):
        if (k + x) / total > threshold:
            p += math.exp(math.log(math.comb(m, x)) + _lbeta(x + a, m - x + b) - log_norm)
    return min(max(p, 0.0), 1.0)


def _lbeta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
