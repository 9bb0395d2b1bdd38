"""Subject calls to a goal's verdict, and its error rates, under each design: the fixed
design `ix plan` sizes, `trials: auto`, `stop: goal`, and `stop: goal` with `trials: auto`.

    .venv/bin/python benchmarks/cost_to_verdict.py [--reps 400] [--looks 5] [--pool 1.2]

Populations of cases are those of benchmarks/calibration.py (per-case activation rates of
the control); the treatment is the control moved so the goal's metric (activation_rate, the
case-level mean) changes by 0, min_effect or 2 × min_effect (`ix.eval.goal_sizing.shifted`).
The fixed design has the cases `ix plan` finds (`size_goal`: settled with probability 0.8 at
2 × min_effect, the planning effect) and `--trials` trials each; `stop: goal` draws a pool of
`--pool` × as many cases and judges each look with `ix.eval.sequential_goal.judge_look` — the
function the engine calls after each round — and a fixed run with one look through the same
function (at one look the credibility is the goal's own). `trials: auto` stops each case by
`ix.stats.sequential.StoppingRule` (the engine's rule, min 2). Every replicate draws the
cases and all `--trials` trials of both subjects once, and each design reads what it needs.
A last row, "SPRT floor", is no design ix offers: Wald's SPRT (`sprt_floor`), told the true
σ and looking after every case, is the least any stopping rule with its error rates can
spend on average (Wald–Wolfowitz), so it shows how far below `stop: goal` a target can be.

Targets: false "supported" at effect = min_effect and false "refuted" at 2 × min_effect each
≤ 0.05 under every design; `stop: goal` using ≤ 60% of the fixed design's calls on average
at the planning effect (the quartiles of the ratio are printed too). Seeded.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from calibration import draw_mix, draw_population
from ix.eval.goal_sizing import Scenario, shifted, size_goal
from ix.eval.models import EvalCase
from ix.eval.scoring import Tally
from ix.eval.sequential_goal import judge_look, rounds
from ix.stats.sequential import StoppingRule, look_credibility

POPULATIONS = ("uniform", "Beta(0.5,0.5)", "mix", "40% 0, 40% 1, 20% U")
DESIGNS = ("fixed", "auto", "stop: goal", "stop: goal + auto")
FLOOR = "SPRT floor"


def population(rng: np.random.Generator, name: str, n: int) -> np.ndarray:
    return draw_mix(rng, n) if name == "mix" else draw_population(rng, name, n)


def fill(tally: Tally, cases: list[EvalCase], draws: np.ndarray, used: np.ndarray) -> None:
    """Case i counts its first used[i] trials of draws[i]."""
    weights = 1 << np.arange(draws.shape[1], dtype=np.int64)
    for i, case in enumerate(cases):
        n = int(used[i])
        c = tally.counts[case.id]
        row = draws[i, :n]
        c.valid, c.passed = n, int(row.sum())
        c.valid_bits, c.passed_bits = (1 << n) - 1, int(row.astype(np.int64) @ weights[:n])


def auto_used(rule: StoppingRule, draws: np.ndarray) -> np.ndarray:
    """Trials `trials: auto` gives each case (its rule walked over the drawn trials)."""
    out = np.empty(draws.shape[0], dtype=np.int64)
    for i, row in enumerate(draws):
        k = 0
        for n in range(1, draws.shape[1] + 1):
            k += int(row[n - 1])
            if rule.stops(k, n):
                break
        out[i] = n
    return out


def sigma_of(s: Scenario) -> float:
    """The standard deviation of one case's paired difference of rates (treatment − control,
    each over `s.trials` trials), over the population: between cases plus binomial noise."""
    d = s.treatment - s.control
    noise = (s.treatment * (1 - s.treatment) + s.control * (1 - s.control)) / s.trials
    return float(np.sqrt(d.var() + noise.mean()))


def sprt_floor(scenario, rng, m, sigma, trials, cap, alpha=0.05, beta=0.2):
    """Wald's SPRT of H0: effect = m against H1: effect = 2m on the cases' paired differences,
    case by case, with σ known and no budget but `cap` cases: no design ix could run (it knows
    σ and looks after every case), and by the Wald–Wolfowitz theorem no test with its error
    rates uses fewer cases on average. It is here as the floor the call ratio can reach.
    (verdict, calls): "supported" on H1, "not supported" on H0 (or at the cap)."""
    idx = rng.choice(scenario.control.size, cap)
    k = [rng.binomial(trials, theta[idx]) for theta in (scenario.control, scenario.treatment)]
    d = (k[1] - k[0]) / trials
    llr = np.cumsum(m / sigma ** 2 * (d - 1.5 * m))
    up, down = np.log((1 - beta) / alpha), np.log(beta / (1 - alpha))
    crossed = np.flatnonzero((llr >= up) | (llr <= down))
    if crossed.size == 0:
        return "not supported", 2 * trials * cap
    n = int(crossed[0])
    return ("supported" if llr[n] >= up else "not supported"), 2 * trials * (n + 1)


def replicate(goal, scenario, rng, n_fixed, pool, trials, looks, rule, sigma):
    """One replicate: {design: (verdict, calls)}."""
    idx = rng.choice(scenario.control.size, pool)
    draws = [rng.random((pool, trials)) < theta[idx, None]
             for theta in (scenario.control, scenario.treatment)]
    cases = [EvalCase(id=f"c{i}", prompt="-", expectation="must_trigger") for i in range(pool)]
    full = np.full(pool, trials)
    autos = [auto_used(rule, d) for d in draws]
    out = {}
    for design in DESIGNS:
        used = autos if "auto" in design else [full, full]
        tallies = [Tally(cases), Tally(cases)]
        for tally, d, u in zip(tallies, draws, used, strict=True):
            fill(tally, cases, d, u)
        if design.startswith("stop"):
            so_far: list[EvalCase] = []
            order = rounds(cases, int(rng.integers(1 << 30)), looks)
            for r, chunk in enumerate(order):
                so_far.extend(chunk)
                look = judge_look(goal, *tallies, so_far, looks=len(order),
                                  last=r == len(order) - 1, interval=False)
                if look.decision != "continue":
                    break
            run = [int(c.id[1:]) for c in so_far]
        else:
            run = list(range(n_fixed))
            look = judge_look(goal, *tallies, cases[:n_fixed], looks=1, last=True,
                              interval=False)
        out[design] = (look.decision, int(sum(u[run].sum() for u in used)))
    out[FLOOR] = sprt_floor(scenario, rng, float(goal["min_effect"]), sigma, trials,
                            8 * n_fixed)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--looks", type=int, default=5)
    parser.add_argument("--pool", type=float, default=1.2,
                        help="stop: goal's cases, as a multiple of the fixed design's")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--min-effect", type=float, default=0.1)
    parser.add_argument("--populations", nargs="+", default=list(POPULATIONS))
    parser.add_argument("--effects", nargs="+", type=float, default=[0.0, 1.0, 2.0],
                        help="true effects, in units of min_effect")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    m = args.min_effect
    goal = {"metric": "activation_rate", "direction": "increase", "min_effect": m,
            "credibility": 0.95, "compare": ["control", "treatment"]}
    rule = StoppingRule(2, args.trials, 0.95)
    started = time.monotonic()
    print(f"goal: activation_rate increase, min_effect {m:g}, credibility 0.95; "
          f"{args.trials} trials a case; stop: goal: {args.looks} looks at credibility "
          f"{look_credibility(0.95, args.looks):.4f}, pool {args.pool:g} × fixed; "
          f"{args.reps} replicates a cell")
    print("| population | effect | design | cases (fixed) | supported | refuted | "
          "calls mean | calls / fixed: mean, q1, median, q3 |")
    print("|---|---|---|---|---|---|---|---|")
    failures = []
    for p, name in enumerate(args.populations):
        rng = np.random.default_rng([args.seed, p])
        control = population(rng, name, 4000)
        must = np.ones(control.size, dtype=bool)
        base = Scenario(must, control, control, args.trials)
        n_fixed = size_goal(goal, shifted(base, "activation_rate", 2 * m)).cases or 0
        pool = max(n_fixed, round(args.pool * n_fixed))
        sigma = sigma_of(shifted(base, "activation_rate", 2 * m))
        for effect in (f * m for f in args.effects):
            s = shifted(base, "activation_rate", effect)
            res = [replicate(goal, s, np.random.default_rng([args.seed, p, int(effect * 1e6),
                                                             r]),
                             n_fixed, pool, args.trials, args.looks, rule, sigma)
                   for r in range(args.reps)]
            fixed_calls = np.array([r["fixed"][1] for r in res], dtype=float)
            for design in (*DESIGNS, FLOOR):
                verdicts = [r[design][0] for r in res]
                calls = np.array([r[design][1] for r in res], dtype=float)
                ratio = calls / fixed_calls
                sup = verdicts.count("supported") / len(res)
                ref = verdicts.count("refuted") / len(res)
                q1, med, q3 = np.quantile(ratio, [0.25, 0.5, 0.75])
                print(f"| {name} | {effect:g} | {design} | {n_fixed} | {sup:.3f} | {ref:.3f} | "
                      f"{calls.mean():.0f} | {ratio.mean():.2f}, {q1:.2f}, {med:.2f}, "
                      f"{q3:.2f} |", flush=True)
                if design == FLOOR:
                    continue  # not a design ix offers: no target
                if effect == m and sup > 0.05:
                    failures.append(f"{name} {design}: false supported {sup:.3f} at m")
                if effect == 2 * m and ref > 0.05:
                    failures.append(f"{name} {design}: false refuted {ref:.3f} at 2m")
                if effect == 2 * m and design.startswith("stop") and ratio.mean() > 0.6:
                    failures.append(f"{name} {design}: {ratio.mean():.2f} of the fixed "
                                    "design's calls at 2m")
    print(f"({time.monotonic() - started:.0f} s)")
    print("targets met" if not failures else "targets missed:\n  " + "\n  ".join(failures))


if __name__ == "__main__":
    main()
