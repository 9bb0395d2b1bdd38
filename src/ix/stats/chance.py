"""What a subject that answers at random scores: the range its count of right trials falls
in, exactly (integer binomial sums, no normal approximation), for `ix sanity`."""

from math import comb


def chance_range(n: int, level: float = 0.999) -> tuple[int, int]:
    """The central range [lo, hi] of Binomial(n, 1/2), a fair coin per trial, holding at least
    `level` of its mass: lo is the smallest count with P(X <= lo) >= (1 - level)/2, and
    hi = n - lo (the distribution is symmetric); `scipy.stats.binom.interval(level, n, 0.5)`."""
    if n < 0:
        raise ValueError(f"n must be a whole number >= 0, got {n}")
    if not 0 < level < 1:
        raise ValueError(f"level must be a probability in (0, 1), got {level!r}")
    tail = (1 - level) / 2 * 2 ** n  # the mass of one tail, in units of 2^-n
    below, lo = 0, 0  # below: P(X <= lo - 1) in those units
    while lo < n and below + comb(n, lo) < tail:
        below += comb(n, lo)
        lo += 1
    return lo, n - lo
