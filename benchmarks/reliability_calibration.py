"""Calibration of the summary's between-case reliability and unsettled-case figures, by seeded
simulation from known populations of case rates (docs/statistics.md, "Specificity,
reliability and unsettled cases").

1. Design effect: for N cases × K trials, the true variance of the pooled trial-level rate
   divided by p(1−p)/(NK), against the mean of the summary's estimate 1 + (K−1)·ICC.
2. Unsettled cases: among cases with P(flip) > 0.2, the mean P(flip) against how often the
   majority vote of K trials really differs from the vote of the case's true rate (θ > ½).

    .venv/bin/python benchmarks/reliability_calibration.py

About ten seconds on one core.
"""

import numpy as np

from ix.stats.reliability import design_effect, icc_oneway
from ix.stats.sequential import flip_probability


def _rates(rng: np.random.Generator, population: str, size: tuple[int, ...]) -> np.ndarray:
    if population == "uniform":
        return rng.random(size)
    if population == "Beta(0.5, 0.5)":
        return rng.beta(0.5, 0.5, size)
    if population == "Beta(8, 1)":
        return rng.beta(8.0, 1.0, size)
    # 40% at 0, 40% at 1, 20% uniform
    u = rng.random(size)
    return np.where(u < 0.4, 0.0, np.where(u < 0.8, 1.0, rng.random(size)))


POPULATIONS = ("uniform", "Beta(0.5, 0.5)", "0/1 mixture", "Beta(8, 1)")


def design_effects(reps: int = 2000) -> None:
    print("design effect: true Var(pooled rate)/(p(1-p)/NK) vs mean estimate (2000 runs)")
    print(f"{'population':16} {'N':>3} {'K':>3} {'true':>7} {'estimated':>10}")
    rng = np.random.default_rng(1501)
    for population in POPULATIONS:
        for n_cases, k in ((20, 5), (20, 9), (50, 9)):
            theta = _rates(rng, population, (reps, n_cases))
            passes = rng.binomial(k, theta)
            pooled = passes.sum(axis=1) / (n_cases * k)
            p = float(theta.mean())
            true = float(np.var(pooled)) / (p * (1 - p) / (n_cases * k))
            trials = np.full(n_cases, k)
            est = [design_effect(icc_oneway(row, trials), k) for row in passes]
            est_mean = float(np.mean([e for e in est if e is not None]))
            print(f"{population:16} {n_cases:3d} {k:3d} {true:7.2f} {est_mean:10.2f}")


def unsettled(cases: int = 200_000) -> None:
    print("\nunsettled cases (P(flip) > 0.2): mean P(flip) vs how often the vote really flips")
    print(f"{'population':16} {'K':>3} {'flagged':>8} {'P(flip)':>8} {'flips':>6} "
          f"{'flips, not flagged':>19}")
    rng = np.random.default_rng(1502)
    for population in POPULATIONS:
        for k in (3, 5, 9):
            theta = _rates(rng, population, (cases,))
            passes = rng.binomial(k, theta)
            p = flip_probability(passes, np.full(cases, k))
            flips = (theta > 0.5) != (passes / k > 0.5)
            flagged = p > 0.2
            print(f"{population:16} {k:3d} {flagged.mean():8.3f} {p[flagged].mean():8.3f} "
                  f"{flips[flagged].mean():6.3f} {flips[~flagged].mean():19.3f}")


if __name__ == "__main__":
    design_effects()
    unsettled()
