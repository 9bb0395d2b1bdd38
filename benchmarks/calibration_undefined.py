"""Calibration rows of issue 32's "undefined is n/a" (item 8), loaded by
`benchmarks/calibration.py`:

    .venv/bin/python benchmarks/calibration.py --rows undefined_ --reps 1000

- `undefined_precision`: a control that almost never activates (must and should-not case
  rates Beta(1, 20)) against a variant that does (must Beta(4, 1), should-not Beta(1, 8)), 10 +
  10 cases: among the runs whose control has no predicted positive (TP + FP = 0), the share
  where its precision is printed as a number (target 0: it is n/a) and the share where the
  precision comparison still gives a P(better) (target 0: nothing to compare).
- `undefined_f1`: coverage of `f1_ci` of the K-trial majority-vote F1 at 10 must + 10
  should-not cases for near-perfect skills: two populations of case rates (target >= 0.93)
  and two fixed vote probabilities (r, s) — a must case votes yes with probability r, a
  should-not case with s (K = 1 trial, so the trial rate is the vote probability). The fixed
  cells are where an exact interval's coverage dips with the discreteness of 20 votes
  (0.912 at r = 0.95, s = 0.01, issue 32's); docs/statistics.md tabulates them, so their
  target is "documented", not a bound.
- `undefined_deff`: cases that all share one rate (no between-case variation: the true ICC is
  0) — the share of runs printing a design effect below 1 (target 0) and, of the runs whose
  ICC estimate is negative, the share without a note saying why the design effect is 1.
- `undefined_seeds`: 3 seeds of one design (10 + 10 cases, K = 3, must Beta(4, 1),
  should-not Beta(1, 4)): the bias of "across seeds" against the K-trial majority-vote F1
  each seed estimates. The pooled vote (every seed's trials in one vote per case) targets a
  9-trial vote; `seed_mean`, the mean of the seeds' own values, targets the seeds' own.

Feature-detected: a field the version lacks (`seed_mean`, `not_compared`) reads as "n/a".
"""

import json

import numpy as np

import calibration as cal

PRECISION_CELLS = [(10, 10, 3), (10, 10, 10)]
F1_CELLS = [("Beta(8,1)/Beta(1,8)", 10), ("Beta(20,1)/Beta(1,20)", 10),
            ("votes 0.95/0.01", 1), ("votes 0.99/0.01", 1)]
DEFF_CELLS = [(10, 5, 0.5), (20, 3, 0.2)]
SEED_CELLS = [(10, 10, 3, 3)]


def _rates(rng: np.random.Generator, pop: str, n: int) -> np.ndarray:
    """n must then n should-not case rates of an F1 cell."""
    if pop.startswith("votes"):
        r, s = (float(x) for x in pop.split()[1].split("/"))
        return np.concatenate([np.full(n, r), np.full(n, s)])
    a = 20.0 if "20" in pop else 8.0
    return np.concatenate([rng.beta(a, 1, n), rng.beta(1, a, n)])


def _vote_probability(pop: str, k: int) -> tuple[float, float]:
    """P(a must case's K-trial majority vote is yes), the same for a should-not case."""
    from scipy import stats

    if pop.startswith("votes"):
        r, s = (float(x) for x in pop.split()[1].split("/"))
        return r, s
    a = 20.0 if "20" in pop else 8.0
    half = k // 2  # a vote is yes when passed > K/2
    return (float(stats.betabinom.sf(half, k, a, 1)), float(stats.betabinom.sf(half, k, 1, a)))


def f1_truth(pop: str, k: int) -> float:
    r, s = _vote_probability(pop, k)
    return 2 * r / (1 + r + s)


def seeds_truth(k: int) -> float:
    """The K-trial vote F1 of `undefined_seeds`: must cases vote yes with probability
    r = P(BetaBinom(K, 4, 1) > K/2), should-not cases (Beta(1, 4)) with 1 − r at odd K."""
    from scipy import stats

    r = float(stats.betabinom.sf(k // 2, k, 4, 1))
    return 2 * r / (1 + r + (1 - r))


def _summary(cases, runs: dict, k: int) -> dict:
    with cal.only(("precision", "f1"), False):
        return cal.summarise(cases, runs, k)


def row_precision(rng, cell, reps):
    n_must, n_not, k = cell
    cases = cal.make_cases(n_must, n_not)
    empty = printed = compared = 0
    for _ in range(reps):
        pc = np.concatenate([rng.beta(1, 20, n_must), rng.beta(1, 20, n_not)])
        pv = np.concatenate([rng.beta(4, 1, n_must), rng.beta(1, 8, n_not)])
        runs = {"control": rng.random((n_must + n_not, k)) < pc[:, None],
                "variant": rng.random((n_must + n_not, k)) < pv[:, None]}
        s = _summary(cases, runs, k)
        m = s["subjects"][0]["metrics"]
        if m["tp"] + m["fp"]:
            continue
        empty += 1
        printed += m.get("precision") is not None
        e = cal.comparison(s, "precision")
        compared += e.get("p_variant_better") is not None
    return {"empty": empty, "printed": printed, "compared": compared, "total": reps}


def row_f1(rng, cell, reps):
    pop, k = cell
    cases = cal.make_cases(10, 10)
    truth = f1_truth(pop, k)
    cover = hold = 0
    for _ in range(reps):
        p = _rates(rng, pop, 10)
        x = rng.random((20, k)) < p[:, None]
        m = _summary(cases, {"a": x}, k)["metrics"]
        ci = cal.lohi(m.get("f1_ci"))
        cover += cal.inside(truth, ci)
        hold += m.get("f1") is None or cal.inside(cal.value(m.get("f1")), ci)
    return {"cover": cover, "hold": hold, "total": reps}


def row_deff(rng, cell, reps):
    n, k, p = cell
    cases = cal.make_cases(n)
    below = negative = unexplained = 0
    for _ in range(reps):
        x = rng.random((n, k)) < p
        s = cal.summarise(cases, {"a": x}, k)
        r = (s["subjects"][0].get("reliability") or {}).get("must_trigger") or {}
        icc, deff = r.get("icc"), r.get("design_effect")
        below += deff is not None and deff < 1 - 1e-9
        if icc is not None and icc < 0:
            negative += 1
            unexplained += not r.get("note")
    return {"below": below, "negative": negative, "unexplained": unexplained, "total": reps}


def row_seeds(rng, cell, reps):
    from ix.report.seeds import pooled

    n_must, n_not, k, seeds = cell
    cases = cal.make_cases(n_must, n_not)
    truth = seeds_truth(k)
    sums = {"pooled": 0.0, "seed_mean": 0.0, "per_seed": 0.0}
    counted = {"pooled": 0, "seed_mean": 0, "per_seed": 0}
    for _ in range(reps):
        p = np.concatenate([rng.beta(4, 1, n_must), rng.beta(1, 4, n_not)])
        blocks = []
        for _ in range(seeds):
            x = rng.random((n_must + n_not, k)) < p[:, None]
            blocks.append(_summary(cases, {"a": x}, k)["subjects"][0])
        out = pooled(blocks, list(range(seeds)), "f1")
        values = [v["value"] for v in out["per_seed"] if v["value"] is not None]
        for key, x in (("pooled", out.get("value")), ("seed_mean", out.get("seed_mean")),
                       ("per_seed", sum(values) / len(values) if values else None)):
            if x is not None:
                sums[key] += x - truth
                counted[key] += 1
    return {**{f"bias_{k_}": v for k_, v in sums.items()},
            **{f"n_{k_}": v for k_, v in counted.items()}, "total": reps}


ROWS = {"undefined_precision": row_precision, "undefined_f1": row_f1,
        "undefined_deff": row_deff, "undefined_seeds": row_seeds}


def tasks(reps: int, quick: bool) -> list[tuple]:
    return cal.chunked({"undefined_precision": PRECISION_CELLS,
                        "undefined_f1": F1_CELLS,
                        "undefined_deff": DEFF_CELLS,
                        "undefined_seeds": SEED_CELLS}, reps)


def _get(res: dict, row: str, cell) -> dict:
    r = res.get(f"{row}|{json.dumps(list(cell))}", {})
    return {} if "error" in r or not r.get("total") else r


def figures(res: dict) -> dict:
    out: dict[str, tuple[str, bool | None]] = {}
    for cell in PRECISION_CELLS:
        r = _get(res, "undefined_precision", cell)
        tag = f"N={cell[0]}+{cell[1]}, K={cell[2]}"
        if not r.get("empty"):
            out[f"undefined_ precision with TP+FP=0 printed as a number, {tag}"] = ("n/a", False)
            continue
        e = r["empty"]
        out[f"undefined_ precision with TP+FP=0 printed as a number, {tag}"] = (
            f"{cal.fmt(r['printed'] / e)} ({e} runs)", r["printed"] == 0)
        out[f"undefined_ precision compared (P(better)) against TP+FP=0, {tag}"] = (
            f"{cal.fmt(r['compared'] / e)} ({e} runs)", r["compared"] == 0)
    for cell in F1_CELLS:
        r = _get(res, "undefined_f1", cell)
        pop, k = cell
        fixed = pop.startswith("votes")
        label = (f"undefined_ f1_ci coverage, 10+10, {pop}, K={k}"
                 + (" (documented)" if fixed else ""))
        if not r:
            out[label] = ("n/a", False)
            continue
        cov = r["cover"] / r["total"]
        out[label] = (f"{cal.fmt(cov)} (true F1 {f1_truth(pop, k):.3f})",
                      None if fixed else cal.meets(cov, r["total"], 0.93, True))
        if not fixed:
            out[f"undefined_ f1_ci contains its F1, {pop}"] = (
                cal.fmt(r["hold"] / r["total"]), r["hold"] == r["total"])
    for cell in DEFF_CELLS:
        r = _get(res, "undefined_deff", cell)
        tag = f"N={cell[0]}, K={cell[1]}, every case at {cell[2]}"
        if not r:
            out[f"undefined_ design effect < 1, {tag}"] = ("n/a", False)
            continue
        out[f"undefined_ design effect < 1, {tag}"] = (
            f"{cal.fmt(r['below'] / r['total'])} "
            f"(ICC < 0 in {cal.fmt(r['negative'] / r['total'])})",
            r["below"] == 0)
        neg = r["negative"]
        out[f"undefined_ negative ICC without a note, {tag}"] = (
            cal.fmt(r["unexplained"] / neg) if neg else "n/a", neg > 0 and r["unexplained"] == 0)
    for cell in SEED_CELLS:
        r = _get(res, "undefined_seeds", cell)
        tag = f"{cell[3]} seeds, N={cell[0]}+{cell[1]}, K={cell[2]}"
        if not r:
            out[f"undefined_ across seeds: seed_mean bias, {tag}"] = ("n/a", False)
            continue

        def bias(key, r=r):
            n = r[f"n_{key}"]
            return r[f"bias_{key}"] / n if n else None

        out[f"undefined_ across seeds: pooled-vote value bias vs K-trial F1, {tag}"] = (
            f"{bias('pooled'):+.4f}" if bias("pooled") is not None else "n/a", None)
        b = bias("seed_mean")
        out[f"undefined_ across seeds: seed_mean bias vs K-trial F1, {tag}"] = (
            "n/a" if b is None else f"{b:+.4f} (per-seed mean {bias('per_seed'):+.4f}; "
            f"truth {seeds_truth(cell[2]):.3f})",
            b is not None and abs(b - bias("per_seed")) < 1e-6)
    return out


TARGETS = {"undefined_ precision with TP+FP=0 printed": "0 (n/a)",
           "undefined_ precision compared": "0 (not compared)",
           "undefined_ f1_ci coverage, 10+10, votes": "documented",
           "undefined_ f1_ci coverage": ">= 0.93",
           "undefined_ f1_ci contains": "1.000",
           "undefined_ design effect < 1": "0",
           "undefined_ negative ICC without a note": "0",
           "undefined_ across seeds: pooled-vote": "(labelled)",
           "undefined_ across seeds: seed_mean": "= mean of seeds"}
