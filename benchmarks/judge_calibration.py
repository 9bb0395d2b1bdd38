"""Coverage of the judge intervals (STATS.md §14, `ix.stats.judges`) by simulation against
known truth, as tables by setting and labelled-set size.

    .venv/bin/python benchmarks/judge_calibration.py [--reps 1000] [--labels 20 50 100]
        [--run 200] [--scores]

A judge with known TPR and TNR labels a population whose true pass rate is π. Each
replication draws a labelled set of `--labels` items from the population (human label ~
Bernoulli(π), so the numbers of human passes and fails vary, and may be 0) and a run of
`--run` outputs the judge alone grades; then reads how often the 95% intervals of
`agreement` (TPR, TNR, Cohen's κ against the population κ) and of `corrected_rate` (against
π) hold the truth, and the mean width of the corrected rate's interval. Target ≥ 0.93; a rate
below it by less than two Monte Carlo standard errors is marked "~", one further below "LOW".

With `--scores`, the same for a scoring judge (`score_agreement`) on a 1-5 scale: the
intervals of the quadratic-weighted κ and of Spearman's ρ (one smoothed Bayesian bootstrap
of the judge × human table) against the population's κ_w and ρ (exact, from the joint
table), for a judge one step off the human score 20% (60%, 8%) of the time, on uniform and
skewed human scores.

The simulations are those of `calibration_judges.py` (one piece of code for both), whose
rows of `calibration.py` (`--rows judges`) also measure repeats (`judge_noise`), several
judges (`krippendorff_alpha`) and the pairwise judge (`pairwise`). Named
`judge_calibration.py`, not `calibration_*.py`: `calibration.py` imports every module of
that pattern as one of its row modules.
"""

import argparse
import math

import numpy as np

from calibration_judges import (
    SCORE_SETTINGS,
    SETTINGS,
    TARGET,
    population_kappa,
    population_rho,
    replicate,
    score_replicate,
    score_table,
    weighted_kappa,
)


def mark(rate: float, reps: int) -> str:
    if rate >= TARGET:
        return f"{rate:.3f}   "
    se = math.sqrt(TARGET * (1 - TARGET) / reps)
    return f"{rate:.3f} ~ " if rate >= TARGET - 2 * se else f"{rate:.3f} LOW"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--labels", type=int, nargs="+", default=[20, 50, 100])
    parser.add_argument("--run", type=int, default=200, help="outputs the judge grades")
    parser.add_argument("--scores", action="store_true",
                        help="a scoring judge's weighted kappa and Spearman instead")
    args = parser.parse_args()
    if args.scores:
        scores(args.reps, args.labels)
        return
    rng = np.random.default_rng(3601)
    print(f"95% intervals, {args.reps} replications a cell, run of {args.run} outputs; "
          f"target >= {TARGET} ('~': within two MC standard errors, 'LOW': misses); kappa's "
          "coverage among the replications where it is defined (both human classes "
          "labelled: 'defined')\n")
    print(f"{'TPR':>5} {'TNR':>5} {'rate':>5} {'kappa':>6} {'labels':>6} {'TPR cov':>10} "
          f"{'TNR cov':>10} {'kappa cov':>10} {'defined':>8} {'rate cov':>10} {'rate width':>10}")
    for tpr, tnr, rate in SETTINGS:
        for labels in args.labels:
            tpr_hits = tnr_hits = kappa_hits = kappa_defined = rate_hits = 0
            width = 0.0
            for rep in range(args.reps):
                t, f, k, c, w = replicate(rng, tpr, tnr, rate, labels, args.run, rep)
                tpr_hits, tnr_hits, rate_hits = tpr_hits + t, tnr_hits + f, rate_hits + c
                if k is not None:
                    kappa_defined += 1
                    kappa_hits += k
                width += w
            r = args.reps
            print(f"{tpr:5.2f} {tnr:5.2f} {rate:5.2f} {population_kappa(tpr, tnr, rate):6.3f}"
                  f" {labels:6d} {mark(tpr_hits / r, r):>10} {mark(tnr_hits / r, r):>10}"
                  f" {mark(kappa_hits / max(kappa_defined, 1), kappa_defined):>10}"
                  f" {kappa_defined / r:8.3f} {mark(rate_hits / r, r):>10} {width / r:10.3f}")


def scores(reps: int, sizes: list[int]) -> None:
    rng = np.random.default_rng(3602)
    print(f"scoring judge on 1-5, 95% intervals, {reps} replications a cell; target >= "
          f"{TARGET}\n")
    print(f"{'human':>8} {'off':>5} {'kappa_w':>8} {'rho':>6} {'items':>6} {'kappa_w cov':>12}"
          f" {'rho cov':>10}")
    for name, shares, off in SCORE_SETTINGS:
        table = score_table(shares, off)
        kappa, rho = weighted_kappa(table), population_rho(table)
        for n in sizes:
            k_hits = r_hits = k_defined = r_defined = 0
            for rep in range(reps):
                k, r = score_replicate(rng, table, n, rep, kappa, rho)
                if k is not None:
                    k_defined += 1
                    k_hits += k
                if r is not None:
                    r_defined += 1
                    r_hits += r
            print(f"{name:>8} {off:5.2f} {kappa:8.3f} {rho:6.3f} {n:6d}"
                  f" {mark(k_hits / max(k_defined, 1), max(k_defined, 1)):>12}"
                  f" {mark(r_hits / max(r_defined, 1), max(r_defined, 1)):>10}")


if __name__ == "__main__":
    main()
