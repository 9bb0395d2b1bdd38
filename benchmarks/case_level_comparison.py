"""The case-level activation-rate comparison against known truth (docs/statistics.md).

    .venv/bin/python benchmarks/case_level_comparison.py [--reps 2000] [--seed 0]

Per replication: N control case rates from a population (Beta(0.5, 0.5); 40% at 0, 40% at 1,
20% uniform; Beta(8, 1)); the variant keeps 60% of them and redraws 40% from the same
population; an effect δ moves each variant rate towards 1, p ← p + λ(1 − p), with
λ = δ / (1 − E p), so the estimand — the mean over the population of (variant − control) —
is exactly δ. K trials per case and subject. For every cell of N ∈ {10, 20, 50} ×
K ∈ {3, 5, 10} it prints, for `ix.stats.case_level` (the model the summary uses):
- cover0 / coverm: the 95% interval's coverage of δ at δ = 0 and at δ = m (target ≥ 0.93);
- supp: an "increase" goal (min_effect m, credibility 0.95) judged "supported" at δ = m
  (target ≤ 0.06);
- fwer: Holm over 3 variants (each redraws its own 40%) under δ = 0, family-wise error at
  0.05 (target ≤ 0.05);
- bb: the same coverage at δ = 0 of a Bayesian bootstrap over cases (Dirichlet(1, …, 1)
  weights, 1000 draws), the alternative the model was chosen over.
m = 0.05. The interval is computed in closed form (the truncated t's quantiles), the same
interval `difference_interval` returns from the model's CDF (tests/stats/test_case_level.py).
"""

import argparse

import numpy as np
from scipy import stats as sps

POPULATIONS = {
    "beta(0.5,0.5)": 0.5,
    "40% 0 / 40% 1 / 20% U": 0.5,
    "beta(8,1)": 8 / 9,
}


def draw(pop: str, size: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    if pop == "beta(0.5,0.5)":
        return rng.beta(0.5, 0.5, size)
    if pop == "beta(8,1)":
        return rng.beta(8, 1, size)
    u = rng.random(size)
    return np.where(u < 0.4, 0.0, np.where(u < 0.8, 1.0, rng.random(size)))


def beta_var(k: np.ndarray, n: int) -> np.ndarray:
    a, b = k + 1.0, n - k + 1.0
    return a * b / ((a + b) ** 2 * (a + b + 1))


def model(kc: np.ndarray, kv: np.ndarray, k: int):
    """Vectorised `case_level_difference` over replications (last axis = cases)."""
    n = kc.shape[-1]
    d = (kv - kc) / k
    est = d.mean(-1)
    s2 = d.var(-1, ddof=1)
    floor = (beta_var(kc, k) + beta_var(kv, k)).sum(-1) / n**2
    se = np.sqrt(np.maximum(s2 / n, floor))
    return est, se, n - 1


def quantile(est, se, df, p):
    lo = sps.t.cdf((-1 - est) / se, df)
    hi = sps.t.cdf((1 - est) / se, df)
    return np.clip(est + se * sps.t.ppf(lo + p * (hi - lo), df), -1, 1)


def cdf(est, se, df, x):
    lo = sps.t.cdf((-1 - est) / se, df)
    hi = sps.t.cdf((1 - est) / se, df)
    return (sps.t.cdf((x - est) / se, df) - lo) / (hi - lo)


def interval(est, se, df, level=0.95):
    qlo, qhi = quantile(est, se, df, (1 - level) / 2), quantile(est, se, df, (1 + level) / 2)
    below, above = est < qlo, est > qhi
    lo = np.where(below, -1.0, np.where(above, quantile(est, se, df, 1 - level), qlo))
    hi = np.where(above, 1.0, np.where(below, quantile(est, se, df, level), qhi))
    return lo, hi


def simulate(pop: str, n: int, k: int, delta: float, reps: int, variants: int,
             rng: np.random.Generator):
    mu = POPULATIONS[pop]
    pc = draw(pop, (reps, n), rng)
    kc = rng.binomial(k, pc).astype(float)
    kvs = []
    for _ in range(variants):
        redraw = rng.random((reps, n)) < 0.4
        pv = np.where(redraw, draw(pop, (reps, n), rng), pc)
        pv = pv + delta / (1 - mu) * (1 - pv)
        kvs.append(rng.binomial(k, pv).astype(float))
    return kc, kvs


def bayesian_bootstrap_cover(kc, kv, k, truth, rng, draws=1000):
    d = (kv - kc) / k
    reps, n = d.shape
    hits = 0
    for r in range(reps):
        w = rng.dirichlet(np.ones(n), draws)
        means = w @ d[r]
        lo, hi = np.quantile(means, [0.025, 0.975])
        hits += lo <= truth <= hi
    return hits / reps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-bootstrap", action="store_true")
    args = ap.parse_args()
    m, c = 0.05, 0.95
    print(f"{'population':22} {'N':>3} {'K':>3} {'cover0':>7} {'coverm':>7} {'supp':>6} "
          f"{'fwer':>6} {'bb':>6}")
    worst = {"cover": 1.0, "supp": 0.0, "fwer": 0.0}
    for pop in POPULATIONS:
        for n in (10, 20, 50):
            for k in (3, 5, 10):
                rng = np.random.default_rng([args.seed, n, k, len(pop)])
                kc, kvs = simulate(pop, n, k, 0.0, args.reps, 3, rng)
                est, se, df = model(kc, kvs[0], k)
                lo, hi = interval(est, se, df)
                cover0 = np.mean((lo <= 0) & (hi >= 0))
                ps = np.stack([2 * sps.t.sf(np.abs(e) / s, df)
                               for e, s, _ in (model(kc, kv, k) for kv in kvs)])
                fwer = np.mean(ps.min(0) <= 0.05 / 3)  # Holm rejects something iff min p ≤ α/m
                kc, kvs = simulate(pop, n, k, m, args.reps, 1, rng)
                est, se, df = model(kc, kvs[0], k)
                lo, hi = interval(est, se, df)
                coverm = np.mean((lo <= m) & (m <= hi))
                supp = np.mean(1 - cdf(est, se, df, m) >= c)
                bb = float("nan")
                if not args.no_bootstrap:
                    kc0, kv0 = simulate(pop, n, k, 0.0, min(args.reps, 500), 1, rng)
                    bb = bayesian_bootstrap_cover(kc0, kv0[0], k, 0.0, rng)
                worst["cover"] = min(worst["cover"], cover0, coverm)
                worst["supp"] = max(worst["supp"], supp)
                worst["fwer"] = max(worst["fwer"], fwer)
                print(f"{pop:22} {n:>3} {k:>3} {cover0:7.3f} {coverm:7.3f} {supp:6.3f} "
                      f"{fwer:6.3f} {bb:6.3f}")
    print(f"worst: coverage {worst['cover']:.3f} (target >= 0.93), supported at delta = m "
          f"{worst['supp']:.3f} (<= 0.06), Holm FWER {worst['fwer']:.3f} (<= 0.05)")


if __name__ == "__main__":
    main()
