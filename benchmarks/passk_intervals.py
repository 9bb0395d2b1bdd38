"""Coverage of the pass@k / pass^k intervals of a summary, by seeded simulation.

    .venv/bin/python benchmarks/passk_intervals.py [--reps 400] [--seed 7]

Cases' rates of right trials are drawn from a population (Beta(a, b)); each case gets K
trials; `ix.eval.estimates.pass_k` (what a summary uses) gives pass@k, pass^k and their
intervals; the population values E[1 − (1 − p)^k] and E[p^k] are exact Beta moments.
Prints the coverage at 95% nominal and the mean width, per k, for each population × N.
"""

import argparse
import math

import numpy as np

from ix.eval.estimates import pass_k
from ix.eval.models import EvalCase

CELLS = [((2.0, 1.0), 10), ((2.0, 1.0), 30), ((2.0, 1.0), 200), ((0.5, 0.5), 20),
         ((8.0, 1.0), 20)]


def moment(a: float, b: float, k: int) -> float:
    return math.prod((a + i) / (a + b + i) for i in range(k))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--trials", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    top = args.trials
    print("| population | N | " + " | ".join(f"pass@{k}" for k in range(1, top + 1))
          + " | " + " | ".join(f"pass^{k}" for k in range(1, top + 1)) + " |")
    print("|---|---|" + "---|" * (2 * top))
    for (a, b), n in CELLS:
        cases = [EvalCase(id=f"c{i}", prompt="p", expectation="must_trigger") for i in range(n)]
        truth = {("pass_at_k", k): 1 - sum(math.comb(k, j) * (-1) ** j * moment(a, b, j)
                                           for j in range(k + 1)) for k in range(1, top + 1)}
        truth |= {("pass_hat_k", k): moment(a, b, k) for k in range(1, top + 1)}
        hits = dict.fromkeys(truth, 0)
        width = dict.fromkeys(truth, 0.0)
        for _ in range(args.reps):
            passed = rng.binomial(top, rng.beta(a, b, n))
            out = pass_k(cases, passed, np.full(n, top), top)
            for key, k in truth:
                lo, hi = out[f"{key}_ci"][str(k)]
                hits[(key, k)] += lo <= truth[(key, k)] <= hi
                width[(key, k)] += hi - lo
        cells = [f"{hits[c] / args.reps:.3f} ({width[c] / args.reps:.2f})" for c in truth]
        print(f"| Beta({a:g}, {b:g}) | {n} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
