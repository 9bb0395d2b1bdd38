"""`trials: auto`'s per-case error, exactly: how often an early stop's majority vote differs
from the vote the case would have had after `max_trials`, by the case's true rate θ.

    .venv/bin/python benchmarks/stopping_error.py [--min 2] [--max 9 10] [--credibility 0.95]

No simulation: `ix.stats.sequential.path_counts` enumerates every pass/fail sequence the
rule lets a case take, so the stopping distribution at θ is exact, and the vote after
`max_trials` given an early stop at k of n is a binomial tail over the trials not run.
Prints, per θ, the error (over all cases of that rate), the share of cases stopped early,
and the error among those stopped early; then the worst θ. A seconds-long run; the table in
docs/statistics.md ("When to stop adding trials") is its output.
"""

import argparse

import numpy as np

from ix.stats.sequential import StoppingRule, early_vote_error, stopping_distribution


def rows(rule: StoppingRule, thetas: list[float]) -> list[tuple[float, float, float, float]]:
    out = []
    for theta in thetas:
        early = float(stopping_distribution(rule, theta)[:rule.max_trials].sum())
        error = early_vote_error(rule, theta)
        out.append((theta, error, early, error / early if early else 0.0))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min", type=int, default=2, dest="min_trials")
    parser.add_argument("--max", type=int, nargs="+", default=[9, 10], dest="max_trials")
    parser.add_argument("--credibility", type=float, default=0.95)
    args = parser.parse_args()
    thetas = [round(x, 2) for x in np.arange(0.05, 0.96, 0.05)]
    rules = [StoppingRule(args.min_trials, m, args.credibility) for m in args.max_trials]
    tables = [rows(rule, thetas) for rule in rules]
    head = " | ".join(f"max {r.max_trials}: error | early | error if early" for r in rules)
    print(f"min_trials {args.min_trials}, credibility {args.credibility}")
    print(f"| θ | {head} |")
    print("|---|" + "---|---|---|" * len(rules))
    for i, theta in enumerate(thetas):
        cells = " | ".join(f"{t[i][1]:.4f} | {t[i][2]:.3f} | {t[i][3]:.4f}" for t in tables)
        print(f"| {theta:.2f} | {cells} |")
    fine = [round(x, 3) for x in np.arange(0.0, 1.0005, 0.001)]
    for rule in rules:
        worst = max(rows(rule, fine), key=lambda r: r[1])
        worst_early = max(rows(rule, fine), key=lambda r: r[3])
        print(f"max {rule.max_trials}: worst error {worst[1]:.4f} at θ = {worst[0]:.3f}; "
              f"worst error among early stops {worst_early[3]:.4f} at θ = {worst_early[0]:.3f}")


if __name__ == "__main__":
    main()
