"""How long an inconclusive goal's suggestion takes to size, and a digest of what it says.

    .venv/bin/python benchmarks/goal_verdicts.py [--seeds 3] [--min-effect 0.05]

For every goal metric a summary judges with a CDF (f1, precision, recall, pass_rate) and
every direction, `--seeds` seeded runs of 20 cases (10 must, 10 should-not, 5 trials) of two
mock-like subjects are summarised by `ix.eval.goals.evaluate_goal`, which sizes the goal when
it is inconclusive (hundreds of simulated runs, each judged by ix's rule). It prints the time
per metric and in all, and a digest of every verdict, suggested size and printed probability:
run it on two commits (PYTHONPATH=<tree>/src) and equal digests mean the same answers.
"""

import argparse
import hashlib
import json
import time

import numpy as np

import goal_sizing  # its K trials a case, and how it fills two subjects' tallies
from ix.eval.goals import evaluate_goal
from ix.eval.models import EvalCase
from ix.eval.scoring import Tally, compute_metrics

K, N = goal_sizing.K, 10
METRICS = ("f1", "precision", "recall", "pass_rate")
DIRECTIONS = ("increase", "decrease", "differ")


def tallies(cases: list[EvalCase], rng: np.random.Generator) -> list[Tally]:
    """Two subjects' tallies: the control's rates drawn, the variant's moved from them."""
    control = np.r_[rng.uniform(0.3, 1, N), rng.uniform(0, 0.4, N)]
    variant = np.clip(control + rng.normal(-0.05, 0.1, 2 * N), 0, 1)
    return goal_sizing.tallies(cases, rng, control, variant)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--min-effect", type=float, default=0.05)
    args = parser.parse_args()
    cases = [EvalCase(id=f"m{i}", prompt="p", expectation="must_trigger") for i in range(N)]
    cases += [EvalCase(id=f"n{i}", prompt="p", expectation="should_not_trigger")
              for i in range(N)]
    answers, total, sized = [], 0.0, 0
    for metric in METRICS:
        began = time.perf_counter()
        for direction in DIRECTIONS:
            goal = {"hypothesis": "h", "metric": metric, "direction": direction,
                    "min_effect": args.min_effect, "credibility": 0.95,
                    "compare": ["control", "variant"]}
            for seed in range(args.seeds):
                ts = tallies(cases, np.random.default_rng([7, seed]))
                ms = [compute_metrics(t.probe_results()) for t in ts]
                g = evaluate_goal(goal, ["control", "variant"], ts, ms, cases, K)
                s = g.get("suggestion") or {}
                sized += bool(s)
                answers.append([metric, direction, seed, g["verdict"], s.get("cases"),
                                s.get("p_settle")])
        spent = time.perf_counter() - began
        total += spent
        print(f"{metric:10s} {spent:7.1f} s for {len(DIRECTIONS) * args.seeds} goals")
    digest = hashlib.sha256(json.dumps(answers).encode()).hexdigest()[:16]
    print(f"all        {total:7.1f} s; {sized} of {len(answers)} goals sized; "
          f"answers digest {digest}")


if __name__ == "__main__":
    main()
