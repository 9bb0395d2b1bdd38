"""`trials: auto` against a fixed 10 trials: the same per-case verdicts with fewer trials?

    .venv/bin/python benchmarks/adaptive_trials.py [--cases 200] [--seed 0]

A mock experiment whose per-case activation rates follow a realistic mix for skill
activation: most cases clear (rate near 0 or 1), some leaning, a few borderline. It runs
once with `trials: 10` and once with `trials: auto` (min 2, max 10, credibility 0.95),
through the real `ix run`, and prints the trials each used and how many per-case majority
votes agree. Target: the same verdicts with <= 50% of the trials.
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

IX = str(Path(sys.executable).parent / "ix")


def rates(n: int, rng: random.Random) -> list[float]:
    out = []
    for _ in range(n):
        u = rng.random()
        if u < 0.40:
            out.append(rng.uniform(0.92, 1.0))      # clearly triggers
        elif u < 0.80:
            out.append(rng.uniform(0.0, 0.08))      # clearly does not
        elif u < 0.92:
            out.append(rng.choice([rng.uniform(0.75, 0.92), rng.uniform(0.08, 0.25)]))
        else:
            out.append(rng.uniform(0.35, 0.65))     # borderline
    return out


def run(lab: Path, trials: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IX_")}
    out = subprocess.run([IX, "run", "--lab", str(lab), "--trials", trials, "--json"],
                         capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="ix-adaptive-") as tmp:
        lab = Path(tmp) / "lab"
        exp = lab / "mix"
        (exp / "cases").mkdir(parents=True)
        lines = []
        for i, r in enumerate(rates(args.cases, rng)):
            e = "must_trigger" if i % 2 == 0 else "should_not_trigger"
            (exp / "cases" / f"c-{i:04d}.md").write_text(
                f"---\nexpectation: {e}\n---\nPrompt {i}\n", encoding="utf-8")
            lines.append(f"    c-{i:04d}: {r:.3f}")
        (exp / "experiment.yaml").write_text(
            "name: mix\nskill: target\nmin_trials: 2\nmax_trials: 10\ntrials: auto\n"
            f"seed: {args.seed}\nruntime:\n  kind: mock\n  activation_rates:\n"
            + "\n".join(lines) + "\n", encoding="utf-8")
        fixed = run(lab, "10")
        auto = run(lab, "auto")
    votes_f = {p["probe_id"]: p["score"] > 0.5 for p in fixed["probe_results"]}
    votes_a = {p["probe_id"]: p["score"] > 0.5 for p in auto["probe_results"]}
    n_fixed = sum(p["n"] for p in fixed["probe_results"])
    n_auto = sum(p["n"] for p in auto["probe_results"])
    agree = sum(votes_f[k] == votes_a[k] for k in votes_f)
    reasons: dict[str, int] = {}
    for p in auto["probe_results"]:
        reasons[p["stopped"]] = reasons.get(p["stopped"], 0) + 1
    print(f"{args.cases} cases, realistic mix of activation rates (seed {args.seed})")
    print(f"  fixed 10 trials: {n_fixed:,} trials")
    print(f"  trials: auto   : {n_auto:,} trials = {n_auto / n_fixed:.1%} of fixed "
          f"(target <= 50%); stopped: {reasons}")
    print(f"  per-case majority votes agreeing: {agree}/{len(votes_f)}; F1 fixed "
          f"{fixed['metrics']['f1']:.3f} vs auto {auto['metrics']['f1']:.3f}")


if __name__ == "__main__":
    main()
