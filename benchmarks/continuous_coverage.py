"""Coverage of the continuous-outcome intervals (STATS.md §13) by simulation against known truth.

    .venv/bin/python benchmarks/continuous_coverage.py [--reps 2000] [--cases 10 20 40]
        [--goals]

Populations of cases whose per-case mean (tokens, cost, time) is lognormal (σ of the log 0.5
and 1.0); a case's observed mean is the mean of 5 trials, each its mean times a lognormal
noise (σ 0.3). For each N of cases: how often the 95% interval of a subject's mean
(`mean_interval`, bootstrap-t; the t interval beside it), and of a variant's paired ratio of
means (`compare`, the variant's case means scaled by a true ratio 1.3 with a correlated case
effect), holds the truth. Target (issue 35): ≥ 0.93 at N ≥ 10.

With `--goals`, the error rates of goals on a quantity at credibility 0.95 (DESIGN.md §10,
`ix.eval.outcome_goals`), the truth sitting exactly on the goal's boundary: how often
"adds at most 20%" (`at_most: 0.2, relative: true`) is supported when the variant adds 20%,
and "adds more than d" (`min_effect: d`) when it adds d. Nominal: 0.05.
"""

import argparse
import math

import numpy as np

from ix.stats.continuous import compare, mean_interval
from ix.stats.decisions import bound_verdict, goal_verdict

TRIALS, NOISE, RATIO = 5, 0.3, 1.3


def case_means(rng, mu, trials=TRIALS):
    noise = rng.lognormal(-NOISE**2 / 2, NOISE, size=(len(mu), trials))
    return (mu[:, None] * noise).mean(axis=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--cases", type=int, nargs="+", default=[10, 20, 40])
    parser.add_argument("--goals", action="store_true",
                        help="the error rates of goals on a quantity instead")
    args = parser.parse_args()
    if args.goals:
        goals(args.reps, args.cases)
        return
    rng = np.random.default_rng(20261130)
    print(f"95% intervals, {args.reps} populations each; truth = the population's mean\n")
    print(f"{'sigma':>5} {'N':>4} {'mean: bootstrap-t':>18} {'mean: t':>8} {'ratio':>7}"
          f" {'difference':>11}")
    for sigma in (0.5, 1.0):
        truth = math.exp(sigma**2 / 2)  # E[lognormal(0, sigma)]
        for n in args.cases:
            hit_b = hit_t = hit_r = hit_d = 0
            for rep in range(args.reps):
                mu = rng.lognormal(0.0, sigma, size=n)
                a = case_means(rng, mu)
                b = case_means(rng, mu * RATIO * rng.lognormal(0, 0.2, size=n)
                               / math.exp(0.02))
                e = mean_interval(a, skewed=True, seed=rep)
                hit_b += e.lo <= truth <= e.hi
                e = mean_interval(a)
                hit_t += e.lo <= truth <= e.hi
                c = compare(a, b, seed=rep)
                hit_r += c.ratio.lo <= RATIO <= c.ratio.hi
                hit_d += c.difference.lo <= truth * (RATIO - 1) <= c.difference.hi
            r = args.reps
            print(f"{sigma:5.1f} {n:4d} {hit_b / r:18.3f} {hit_t / r:8.3f} {hit_r / r:7.3f}"
                  f" {hit_d / r:11.3f}")


def goals(reps: int, cases: list[int]) -> None:
    """False "supported" at the boundary, for a bound on the ratio and a difference."""
    rng = np.random.default_rng(20261201)
    bound = 1.2
    print(f"goals at credibility 0.95, {reps} populations each; truth on the boundary\n")
    print(f"{'sigma':>5} {'N':>4} {'at_most 20%, relative':>22} {'min_effect, difference':>23}")
    for sigma in (0.5, 1.0):
        shift = math.exp(sigma**2 / 2) * (bound - 1)  # the true difference of the means
        for n in cases:
            relative = absolute = 0
            for rep in range(reps):
                mu = rng.lognormal(0.0, sigma, size=n)
                a = case_means(rng, mu)
                b = case_means(rng, mu * bound * rng.lognormal(0, 0.2, size=n)
                               / math.exp(0.02))
                c = compare(a, b, seed=rep)
                relative += bound_verdict(c.cdf(relative=True), direction="increase",
                                          at_most=bound - 1, credibility=0.95
                                          ).verdict == "supported"
                absolute += goal_verdict(c.cdf(), direction="increase", min_effect=shift,
                                         credibility=0.95).verdict == "supported"
            print(f"{sigma:5.1f} {n:4d} {relative / reps:22.3f} {absolute / reps:23.3f}")


if __name__ == "__main__":
    main()
