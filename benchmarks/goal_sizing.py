"""The inconclusive goal's suggestion against known truth (docs/statistics.md, Planning).

    .venv/bin/python benchmarks/goal_sizing.py [--seeds 24] [--runs 60]

Truth: a recall goal ("increase", min_effect m = 0.1, credibility 0.95), K = 5 trials a
case; control case rates from a realistic mix (45% in [0.9, 1], 20% in [0, 0.1], 20% in
[0.6, 0.9], 15% in [0.3, 0.6]); the variant redraws a case from U(0.9, 1) with probability
w, chosen so that the true recall difference is 2m = 0.2 (the issue's benchmark row). Per
seed: the first run of 10 cases whose goal is inconclusive (judged by ix's `evaluate_goal`,
which attaches the suggestion: its n and printed P(settle)); then `--runs` fresh runs of n
cases from the truth, judged by the recall posterior straight from `ix.stats`. It prints
each seed's n, printed and simulated probability, and the mean printed probability against
the pooled simulated one (target: within 0.05).
"""

import argparse
import time

import numpy as np
from scipy import stats

from ix.eval.goals import evaluate_goal
from ix.eval.models import EvalCase
from ix.eval.scoring import Tally, compute_metrics
from ix.stats.comparisons import paired_diff_cdf
from ix.stats.decisions import goal_verdict

K, N0, M = 5, 10, 0.1
MIX = ((0.45, 0.90, 1.00), (0.20, 0.00, 0.10), (0.20, 0.60, 0.90), (0.15, 0.30, 0.60))
GOAL = {"hypothesis": "h", "metric": "recall", "direction": "increase", "min_effect": M,
        "credibility": 0.95, "compare": ["control", "variant"]}


def vote(p):
    return stats.binom.sf(K // 2, K, p)


def uniform_mean(a, b):
    x = np.linspace(a, b, 20_001)
    return float(np.trapezoid(vote(x), x) / (b - a))


W = 2 * M / (uniform_mean(0.9, 1.0) - sum(w * uniform_mean(a, b) for w, a, b in MIX))


def draw(rng, n):
    comp = rng.choice(len(MIX), size=n, p=[m[0] for m in MIX])
    lo, hi = np.array([m[1] for m in MIX])[comp], np.array([m[2] for m in MIX])[comp]
    pc = lo + (hi - lo) * rng.random(n)
    return pc, np.where(rng.random(n) < W, 0.9 + 0.1 * rng.random(n), pc)


def tallies(cases, rng, pc, pv):
    out = []
    for p in (pc, pv):
        t = Tally(cases)
        for c, row in zip(cases, rng.random((len(cases), K)) < p[:, None], strict=True):
            for j, b in enumerate(row):
                t.add(c.id, bool(b), j)
        out.append(t)
    return out


def settles(rng, n):
    pc, pv = draw(rng, n)
    vc, vv = rng.binomial(K, pc) * 2 > K, rng.binomial(K, pv) * 2 > K
    t = (int(np.sum(vc & vv)), int(np.sum(vv & ~vc)), int(np.sum(vc & ~vv)),
         int(np.sum(~vc & ~vv)))
    v = goal_verdict(lambda d: paired_diff_cdf(*t, d), direction="increase", min_effect=M,
                     credibility=0.95)
    return v.verdict != "inconclusive"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=24)
    parser.add_argument("--runs", type=int, default=60)
    args = parser.parse_args()
    cases = [EvalCase(id=f"m{i}", prompt="p", expectation="must_trigger") for i in range(N0)]
    printed, settled, ns, start = [], 0, [], time.time()
    for seed in range(args.seeds):
        rng = np.random.default_rng([99, seed])
        for _ in range(200):
            ts = tallies(cases, rng, *draw(rng, N0))
            ms = [compute_metrics(t.probe_results()) for t in ts]
            g = evaluate_goal(GOAL, ["control", "variant"], ts, ms, cases, K)
            if g["verdict"] == "inconclusive" and (g["suggestion"] or {}).get("cases"):
                break
        s = g["suggestion"]
        hits = sum(settles(rng, s["cases"]) for _ in range(args.runs))
        printed.append(s["p_settle"])
        settled += hits
        ns.append(s["cases"])
        print(f"seed {seed:2d}: observed {g['effect']['diff']:+.2f}, n {s['cases']:4d}, "
              f"printed {s['p_settle']:.3f}, simulated {hits / args.runs:.3f}", flush=True)
    rate = settled / (args.runs * args.seeds)
    print(f"mean printed P(settle) {np.mean(printed):.3f}, simulated {rate:.3f} "
          f"(gap {np.mean(printed) - rate:+.3f}); n {min(ns)}-{max(ns)}; "
          f"{time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
