"""Calibration rows of issue 32's `ix optimize` (item 7), loaded by `benchmarks/calibration.py`:

    .venv/bin/python benchmarks/calibration.py --rows optimize_ --reps 1000

The holdout judge of `ix optimize` against known truth: each replication draws the paired
majority votes of the original (A) and a candidate (B) on a holdout of n cases (n/2 must,
n/2 not), runs `ix.stats.paired_f1` on them as the engine does (`level=0.95`; 20,000 draws,
not the engine's 200,000: ten times faster, and P(better) moves by at most ~0.003, which
changes a verdict only for a P within that of the threshold) and applies the version's
default rule — `ix.eval.optimize.judge` with its defaults where it exists, else the old
rule, P(holdout F1 better) >= `Settings().credibility` (0.9).

- `optimize_null`, a true F1 difference of exactly 0:
  - `mixed` ("helps some cases, hurts others"): 60% of must cases and 20% of not cases are
    changed by the candidate, each helped or hurt with equal chance; an unchanged must case
    fires for both with probability 0.7, an unchanged not case 0.1. Cells (both, A only,
    B only, neither): must (0.28, 0.30, 0.30, 0.12), not (0.08, 0.10, 0.10, 0.72).
  - `mixed-all`: every must case changed, half for the better (must (0, 0.5, 0.5, 0)), the
    not cases unchanged (0.1, 0, 0, 0.9): the worst design at 10 holdout cases for the old
    rule (exactly 6/32 = 0.1875 false "better").
  - `pure`: the candidate changes nothing, but the subject is a model whose answers vary
    (no common random numbers): case rates from `calibration.MIX` (must) and 1 − MIX (not),
    K = 5 trials a description, independent, majority vote.
  Target: false "better" (recommended) <= 0.05 at 10 and 30 holdout cases.
- `optimize_power`: a real gain, must (0.40, 0.05, 0.30, 0.25), not (0.05, 0.10, 0.02, 0.83):
  F1 0.563 -> 0.791 (+0.228) at the designed half-must mix; reported at 10, 30 and 60.

Both rows also count P(better) >= 0.9 and >= 0.95 (the posterior alone), for the docs' table.
`python benchmarks/calibration_optimize.py --worst` prints the exact worst case at 10 holdout
cases over a grid of "helps some, hurts others" designs (every table weighed by its
multinomial probability; ~3 minutes).
"""

import json
import math

import numpy as np

import calibration as cal

NULL_CELLS = [(design, n) for design in ("mixed", "mixed-all", "pure") for n in (10, 30)]
POWER_CELLS = [10, 30, 60]
MIXED = ((0.28, 0.30, 0.30, 0.12), (0.08, 0.10, 0.10, 0.72))
MIXED_ALL = ((0.0, 0.5, 0.5, 0.0), (0.1, 0.0, 0.0, 0.9))
GAIN = ((0.40, 0.05, 0.30, 0.25), (0.05, 0.10, 0.02, 0.83))
PURE_K = 5
DRAWS = 20_000


def true_f1(cells_must, cells_not) -> tuple[float, float]:
    """Population majority-vote F1 of A and B at a half-must mix."""
    def f1(tp, fp, fn):
        return 2 * tp / (2 * tp + fp + fn)

    m, n = cells_must, cells_not
    return f1(m[0] + m[1], n[0] + n[1], m[2] + m[3]), f1(m[0] + m[2], n[0] + n[2], m[1] + m[3])


def rule():
    """(name, decide(PairedF1) -> recommended?) of the ix on the path: its default rule."""
    try:
        from ix.eval.optimize import judge
    except ImportError:
        from ix.engine.optimize import Settings

        c = Settings().credibility
        return f"P>={c:g}", lambda r: r.prob_b_better >= c
    from ix.eval.optimize import CREDIBILITY, MIN_CHANGED, TOLERANCE

    return (f"judge: P>={CREDIBILITY:g}, exact p<={1 - CREDIBILITY:.2g}, lower end >"
            f"-{TOLERANCE:g}, >={MIN_CHANGED} improved"), lambda r: judge({"s": r}).recommended


def votes(rng: np.random.Generator, p: np.ndarray, k: int) -> np.ndarray:
    return (rng.random((len(p), k)) < p[:, None]).sum(axis=1) > k / 2


def table(a: np.ndarray, b: np.ndarray) -> tuple[int, int, int, int]:
    return (int(np.sum(a & b)), int(np.sum(a & ~b)), int(np.sum(~a & b)),
            int(np.sum(~a & ~b)))


def draw(rng: np.random.Generator, design: str, n: int):
    """(must, not_) tables of one holdout of n cases."""
    half = n // 2
    if design == "pure":
        pm, pn = cal.draw_mix(rng, half), 1 - cal.draw_mix(rng, n - half)
        must = table(votes(rng, pm, PURE_K), votes(rng, pm, PURE_K))
        not_ = table(votes(rng, pn, PURE_K), votes(rng, pn, PURE_K))
        return must, not_
    cells = {"mixed": MIXED, "mixed-all": MIXED_ALL, "gain": GAIN}[design]
    must = tuple(int(x) for x in rng.multinomial(half, cells[0]))
    not_ = tuple(int(x) for x in rng.multinomial(n - half, cells[1]))
    return must, not_


def judged(rng, design: str, n: int, reps: int) -> dict:
    from ix.stats.paired_f1 import paired_f1

    name, decide = rule()
    better = p90 = p95 = 0
    for _ in range(reps):
        must, not_ = draw(rng, design, n)
        r = paired_f1(must, not_, level=0.95, draws=DRAWS)
        better += bool(decide(r))
        p90 += r.prob_b_better >= 0.9
        p95 += r.prob_b_better >= 0.95
    return {"better": better, "p90": p90, "p95": p95, "total": reps, "rule": name}


def row_optimize_null(rng, cell, reps):
    design, n = cell
    return judged(rng, design, n, reps)


def row_optimize_power(rng, cell, reps):
    return judged(rng, "gain", cell, reps)


ROWS = {"optimize_null": row_optimize_null, "optimize_power": row_optimize_power}


def tasks(reps: int, quick: bool) -> list[tuple]:
    return cal.chunked({"optimize_null": NULL_CELLS, "optimize_power": POWER_CELLS}, reps)


def _rate(res: dict, key: str, num: str):
    return cal.share(res, key, num)


def figures(res: dict) -> dict:
    out: dict[str, tuple[str, bool | None]] = {}
    rules = {r.get("rule") for r in res.values() if isinstance(r, dict) and r.get("rule")}
    shown = next(iter(rules)) if len(rules) == 1 else "n/a"
    out["optimize default rule"] = (shown, None)
    for design, n in NULL_CELLS:
        key = f"optimize_null|{json.dumps([design, n])}"
        rate, total = _rate(res, key, "better")
        out[f"optimize false better, {design} null, {n} holdout cases"] = (
            cal.fmt(rate), rate is not None and cal.meets(rate, total, 0.05, False))
        p90, _ = _rate(res, key, "p90")
        p95, _ = _rate(res, key, "p95")
        out[f"optimize posterior alone P>=0.9/0.95, {design} null, {n} cases"] = (
            f"{cal.fmt(p90)}/{cal.fmt(p95)}", None)
    a, b = true_f1(*GAIN)
    powers = [_rate(res, f"optimize_power|{n}", "better")[0] for n in POWER_CELLS]
    out[f"optimize power at {b - a:+.3f} F1, {'/'.join(map(str, POWER_CELLS))} cases"] = (
        "/".join(cal.fmt(p) for p in powers), None)
    return out


TARGETS = {"optimize default rule": "", "optimize false better": "<= 0.05",
           "optimize posterior alone": "", "optimize power": ""}


def worst_case(n_must: int = 5, n_not: int = 5, draws: int = DRAWS) -> None:
    """The exact false "better" rate at a holdout of n_must + n_not cases, maximised over a
    grid of designs where the candidate changes a share of each stratum's cases, half for
    the better (cells (b, h, h, 1 − b − 2h) for must, (f, g, g, 1 − f − 2g) for not)."""
    import itertools

    from scipy import stats

    from ix.stats.paired_f1 import paired_f1

    name, decide = rule()

    def tables(n):
        return [t for t in itertools.product(range(n + 1), repeat=4) if sum(t) == n]

    keys = [(m, k) for m in tables(n_must) for k in tables(n_not)]
    results = [paired_f1(m, k, level=0.95, draws=draws) for m, k in keys]
    decided = np.array([bool(decide(r)) for r in results])
    post = np.array([r.prob_b_better for r in results])
    must = np.array([m for m, _ in keys])
    not_ = np.array([k for _, k in keys])
    worst = {"rule": (0.0, None), "P>=0.9": (0.0, None), "P>=0.95": (0.0, None)}
    for b in np.arange(0, 1.01, 0.1):
        for h in np.arange(0, 0.51, 0.05):
            if b + 2 * h > 1 + 1e-9:
                continue
            for f in (0.0, 0.1, 0.2, 0.4):
                for g in np.arange(0, 0.41, 0.05):
                    if f + 2 * g > 1 + 1e-9:
                        continue
                    cm = (b, h, h, max(0.0, 1 - b - 2 * h))
                    cn = (f, g, g, max(0.0, 1 - f - 2 * g))
                    w = (stats.multinomial.pmf(must, n_must, cm)
                         * stats.multinomial.pmf(not_, n_not, cn))
                    for label, hit in (("rule", decided), ("P>=0.9", post >= 0.9),
                                       ("P>=0.95", post >= 0.95)):
                        rate = float(w @ hit)
                        if rate > worst[label][0]:
                            worst[label] = (rate, (cm, cn))
    print(f"{n_must} must + {n_not} not holdout cases, default rule {name}")
    for label, (rate, design) in worst.items():
        shown = "" if design is None else " at must {} not {}".format(
            *(tuple(round(float(x), 2) for x in d) for d in design))
        print(f"  worst false better, {label}: {rate:.4f}{shown}")
    assert math.isfinite(worst["rule"][0])


if __name__ == "__main__":
    import sys

    if "--worst" in sys.argv:
        worst_case()
    else:
        print(__doc__)
