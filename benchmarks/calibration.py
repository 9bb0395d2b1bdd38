"""Calibration of what users read: every row of issues 15's and 32's tables, before and after.

    .venv/bin/python benchmarks/calibration.py [--quick] [--reps 1000] [--before 623c023]
                                               [--only before|after|both] [--workers 2]
                                               [--json FILE] [--load FILE ...]

Simulates runs with known truth (seeded) and measures what ix prints for them, on the code
at `--before` (its `src` exported with `git archive` to a temporary folder) and on this
checkout's `src`, each in a subprocess with that `src` first on PYTHONPATH. The measuring code
drives ix through its stable face, `ix.eval.run_summary.summarise_tallies` (per-case `Tally`
objects fed trial by trial, as the engine does), reads the summary's fields (feature-detected:
a field one version lacks prints "n/a"), and runs `ix plan` through the real command.

Rows (95% nominal): per-case `score_ci` coverage on five populations of case rates (K = 10)
and the 10/10 case; `f1_ci` for a near-perfect skill (N = 20, K = 10); `activation_rate`
`diff_ci` coverage in every cell of N in {10, 20, 50} x K in {3, 5, 10} (heterogeneous cases,
the variant redraws 40% of them: a global null) and invariance to the order of the variant's
trials; the goal "supported" at a true effect equal to `min_effect`; Holm's family-wise error
over 3 variants under a heterogeneous null; a `differ` goal at a true effect of 0; pass^k and
the trial-level rate under `trials: auto` (the stopping rule simulated with each version's own
`majority_vote_probability`, its default `max_trials`); the inconclusive goal's suggested n
(its printed probability of settling against simulation); `ix plan --mde 0.3 --p1 0.7`.

Rows of later issues live in `benchmarks/calibration_*.py`, each a module with `ROWS` (row
name -> `row(rng, cell, reps) -> dict of counters`), `tasks(reps, quick)` (its `(row, cell,
chunk, replications)` tuples), `figures(res)` (label -> (printed figure, target holds?), from
`res`: "row|cell" -> the chunks' counters summed by `combined`) and `TARGETS` (label prefix
-> target). `--rows PREFIX` measures only the rows whose name starts with it (repeatable).

`--reps` (default 1000) replications a cell where the issue asks for >= 1000; `--quick`
is a smoke run (100). Rows that only read fields of the comparisons skip the parts of the
summary they do not read (the other metrics' comparisons, trial-level and pass@k): checked
equal to the full summary on the first replications of every chunk, else it falls back to
the full summary. Target: the whole run (both versions) under 15 minutes on 2 cores
(measured 9 minutes at 1000, under a minute with --quick). A rate that misses its bound by
less than two Monte Carlo standard errors is marked "ok (within MC error)".
"""

import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import time
import zlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
LEVEL = 0.95
CHUNK = 50  # replications a task: the unit of work handed to a worker (and of seeding)

# ----------------------------------------------------------------------------- populations
# A realistic mix of must-trigger case rates: most clear, some leaning, some borderline.
MIX = ((0.45, 0.90, 1.00), (0.20, 0.00, 0.10), (0.20, 0.60, 0.90), (0.15, 0.30, 0.60))
MIX_MEAN = sum(w * (a + b) / 2 for w, a, b in MIX)


def draw_mix(rng: np.random.Generator, n: int, mix=MIX) -> np.ndarray:
    weights = np.array([m[0] for m in mix])
    comp = rng.choice(len(mix), size=n, p=weights / weights.sum())
    lo = np.array([m[1] for m in mix])[comp]
    hi = np.array([m[2] for m in mix])[comp]
    return lo + (hi - lo) * rng.random(n)


def draw_population(rng: np.random.Generator, name: str, n: int) -> np.ndarray:
    if name == "Beta(8,1)":
        return rng.beta(8, 1, n)
    if name == "40% 0, 40% 1, 20% U":
        u = rng.random(n)
        return np.where(u < 0.4, 0.0, np.where(u < 0.8, 1.0, rng.random(n)))
    if name == "half at 1, half Beta(8,1)":
        return np.where(rng.random(n) < 0.5, 1.0, rng.beta(8, 1, n))
    if name == "uniform":
        return rng.random(n)
    if name == "Beta(0.5,0.5)":
        return rng.beta(0.5, 0.5, n)
    raise ValueError(name)


SCORE_POPULATIONS = ("Beta(8,1)", "half at 1, half Beta(8,1)", "40% 0, 40% 1, 20% U",
                     "uniform", "Beta(0.5,0.5)")


def vote_probability(p: np.ndarray, k: int) -> np.ndarray:
    """P(the majority vote of k trials activates) = P(Bin(k, p) > k/2), strictly."""
    from scipy import stats

    return stats.binom.sf(k // 2, k, p)


def mean_over_uniform(f, a: float, b: float) -> float:
    x = np.linspace(a, b, 200_001)
    return float(np.trapezoid(f(x), x) / (b - a)) if b > a else float(f(np.array([a]))[0])


def mix_mean_of(f, mix=MIX) -> float:
    total = sum(m[0] for m in mix)
    return sum(w * mean_over_uniform(f, a, b) for w, a, b in mix) / total


# Goal at its boundary: the variant redraws 40% of cases from MIX', which is the top
# component with weight W and MIX otherwise, so that the true effect equals min_effect.
GOAL_M = 0.1
GOAL_W = GOAL_M / (0.4 * (0.95 - MIX_MEAN))
# A near-perfect skill for F1: must cases Beta(8, 1), should-not cases Beta(1, 8).
# trials: auto: must cases with rate Beta(a, b), mean 0.90 and E[p^5] = 0.657.
SUGGEST_K = 5      # recall goal: K trials a case, m = 0.1, true effect 2m
SUGGEST_N0 = 10    # cases of the run whose goal is inconclusive


def passk_beta() -> tuple[float, float]:
    from scipy.optimize import brentq

    def moment5(b: float) -> float:
        a = 9 * b
        return math.prod((a + i) / (a + b + i) for i in range(5)) - 0.657

    b = brentq(moment5, 0.05, 20)
    return 9 * b, b


# ----------------------------------------------------------------------------- ix access
def make_cases(n_must: int, n_not: int = 0) -> list:
    from ix.eval.models import EvalCase

    return ([EvalCase(id=f"m{i:04d}", prompt="p", expectation="must_trigger")
             for i in range(n_must)]
            + [EvalCase(id=f"n{i:04d}", prompt="p", expectation="should_not_trigger")
               for i in range(n_not)])


def make_tally(cases, outcomes):
    """A Tally fed trial by trial; outcomes[i] is case i's pass/fail sequence."""
    from ix.eval.scoring import Tally

    tally = Tally(cases)
    for case, row in zip(cases, outcomes, strict=True):
        for t, x in enumerate(row):
            tally.add(case.id, bool(x), t)
    return tally


def summarise(cases, runs: dict, trials: int, goal=None, stopped=None, info=None) -> dict:
    """The summary of one run: `runs` maps subject name -> per-case outcome sequences."""
    from ix.eval.run_summary import summarise_tallies

    tallies = {name: make_tally(cases, rows) for name, rows in runs.items()}
    g = None if goal is None else {**goal, "compare": list(runs)[:2]}
    return summarise_tallies(
        experiment_name="calibration", run_id="r", run_status="completed",
        subjects=[(name, "") for name in runs], tallies=tallies, cases=cases,
        trials_per_case=trials, info=info or {}, goal=g, stopped=stopped)


@contextlib.contextmanager
def only(metrics: tuple[str, ...] | None, suggestion: bool = True):
    """Compute only `metrics` among the comparisons and no trial-level / pass@k blocks (all
    when None); with `suggestion` False, an inconclusive goal gets no suggestion (it is
    worked out after, and from, the verdict: the verdict cannot change)."""
    import ix.eval.comparisons as comp
    import ix.eval.goals as goals
    import ix.eval.summary as summ

    patches = []
    if metrics is not None:
        patches += [(comp, "METRICS", None), (comp, "PAIRED", None),
                    (summ, "trial_level_rates", lambda *a, **k: {}),
                    (summ, "pass_k", lambda *a, **k: {"pass_at_k": {}, "pass_hat_k": {}})]
    if not suggestion:
        patches.append((goals, "_suggest", lambda *a, **k: None))
    saved = []
    for mod, attr, new in patches:
        old = getattr(mod, attr, None)
        if old is None:
            continue
        if new is None:
            if not isinstance(old, tuple):
                continue
            new = tuple(m for m in old if m in metrics)
        saved.append((mod, attr, old))
        setattr(mod, attr, new)
    try:
        yield
    finally:
        for mod, attr, old in saved:
            setattr(mod, attr, old)


def lohi(x):
    """[lo, hi] from a summary's interval field (a pair or a mapping), else None."""
    if isinstance(x, dict):
        x = (x.get("lo", x.get("lower")), x.get("hi", x.get("upper")))
    if isinstance(x, (list, tuple)) and len(x) == 2 and None not in x:
        return float(x[0]), float(x[1])
    return None


def value(x):
    """A number from a summary field that may have become a mapping with an estimate."""
    if isinstance(x, dict):
        for key in ("estimate", "value", "rate", "mean"):
            if key in x:
                return value(x[key])
        return None
    return None if x is None else float(x)


def inside(x, ci, eps=1e-9) -> bool:
    return ci is not None and x is not None and ci[0] - eps <= x <= ci[1] + eps


def comparison(summary: dict, metric: str, variant: int = 0) -> dict:
    return summary["comparisons"][variant]["metrics"][metric]


def holm_p(entry: dict):
    for key in ("p_value_holm", "mcnemar_p_holm"):
        if entry.get(key) is not None:
            return float(entry[key]), key
    return None, None


# ----------------------------------------------------------------------------- the rows
def read_scores(s):
    return [(pr.get("score"), pr.get("score_ci")) for pr in s["probe_results"]]


def row_score_ci(rng, cell, reps):
    """One subject, 1000 must cases a replication, K = 10: each case's score_ci vs its p."""
    n, k = 1000, 10
    cases = make_cases(n)
    get = Checked("score_ci", (), read_scores)
    cover = hold = total = 0
    for _ in range(reps):
        p = draw_population(rng, cell, n)
        x = rng.random((n, k)) < p[:, None]
        for prob, (score, ci) in zip(p, get(cases, {"a": x}, k), strict=True):
            ci = lohi(ci)
            cover += inside(float(prob), ci)
            hold += inside(value(score), ci)
            total += 1
    return {"cover": cover, "hold": hold, "total": total, "fast": get.ok}


def f1_truth() -> float:
    from scipy import stats

    vm = float(stats.betabinom.sf(5, 10, 8, 1))   # P(vote) of a must case
    vn = float(stats.betabinom.sf(5, 10, 1, 8))   # P(vote) of a should-not case
    tp, fn, fp = 10 * vm, 10 * (1 - vm), 10 * vn
    return 2 * tp / (2 * tp + fp + fn)


def read_f1(s):
    return {"f1": s["metrics"].get("f1"), "f1_ci": s["metrics"].get("f1_ci")}


def row_f1(rng, cell, reps):
    cases = make_cases(10, 10)
    truth = f1_truth()
    get = Checked("f1", (), read_f1)
    cover = hold = 0
    for _ in range(reps):
        p = np.concatenate([rng.beta(8, 1, 10), rng.beta(1, 8, 10)])
        x = rng.random((20, 10)) < p[:, None]
        m = get(cases, {"a": x}, 10)
        ci = lohi(m["f1_ci"])
        cover += inside(truth, ci)
        hold += inside(value(m["f1"]), ci)
    return {"cover": cover, "hold": hold, "total": reps, "truth": truth, "fast": get.ok}


def null_pair(rng, n, k, redraw=0.4, mix_variant=MIX):
    """Control rates from MIX; the variant redraws `redraw` of the cases (from mix_variant)."""
    pc = draw_mix(rng, n)
    pv = np.where(rng.random(n) < redraw, draw_mix(rng, n, mix_variant), pc)
    return rng.random((n, k)) < pc[:, None], rng.random((n, k)) < pv[:, None]


#: row -> whether the restricted summary read the same as the full one (once per worker)
VERIFIED: dict[str, bool] = {}


class Checked:
    """The fields `read` takes from a summary, computed with only `metrics` once the first
    replication a worker runs of this row read the same from the full summary; else (or when
    the restriction fails on this version) from the full summary. `suggestion`: whether the
    row reads the inconclusive goal's suggestion (else it is skipped in both)."""

    def __init__(self, row: str, metrics, read, suggestion: bool = False):
        self.row, self.metrics, self.read, self.suggestion = row, metrics, read, suggestion

    @property
    def ok(self) -> bool:
        return VERIFIED.get(self.row, True)

    def full(self, *args, **kwargs):
        with only(None, self.suggestion):
            return self.read(summarise(*args, **kwargs))

    def __call__(self, *args, **kwargs):
        def light():
            with only(self.metrics, self.suggestion):
                return self.read(summarise(*args, **kwargs))

        return checked(self.row, light, lambda: self.full(*args, **kwargs))


def checked(row: str, light, full):
    """`light()` (fields read from a restricted summary) once this worker's first
    replication of `row` read the same from `full()`; `full()` when they differed or the
    restriction failed on this version. `VERIFIED[row]` records which."""
    if VERIFIED.get(row) is False:
        return full()
    try:
        got = light()
    except Exception:  # a version the restriction does not fit
        VERIFIED[row] = False
        return full()
    if row not in VERIFIED:
        whole = full()
        VERIFIED[row] = json.dumps(whole, sort_keys=True) == json.dumps(got, sort_keys=True)
        return whole
    return got


def read_activation(s):
    e = comparison(s, "activation_rate")
    return {"diff": e.get("diff"), "diff_ci": e.get("diff_ci"),
            "p_better": e.get("p_variant_better"), "p_value": e.get("p_value"),
            "median": e.get("diff_median")}


def row_activation(rng, cell, reps):
    n, k = cell
    cases = make_cases(n)
    get = Checked("activation", ("activation_rate",), read_activation)
    cover = hold = 0
    for _ in range(reps):
        c, v = null_pair(rng, n, k)
        e = get(cases, {"control": c, "variant": v}, k)
        ci = lohi(e["diff_ci"])
        cover += inside(0.0, ci)
        hold += inside(value(e["diff"]), ci)
    return {"cover": cover, "hold": hold, "total": reps, "fast": get.ok}


def row_permute(rng, cell, reps):
    """Does the comparison change when the variant's trials are reordered within cases?"""
    n, k = cell
    cases = make_cases(n)
    get = Checked("permute", ("activation_rate",), read_activation)
    changed = 0
    for _ in range(reps):
        c, v = null_pair(rng, n, k)
        a = get(cases, {"control": c, "variant": v}, k)
        shuffled = np.array([rng.permutation(row) for row in v])
        b = get(cases, {"control": c, "variant": shuffled}, k)
        changed += json.dumps(a, sort_keys=True) != json.dumps(b, sort_keys=True)
    return {"changed": changed, "total": reps, "fast": get.ok}


def read_goal(s):
    g = s.get("goal") or {}
    return {"verdict": g.get("verdict"), "suggestion": g.get("suggestion")}


def read_verdict(s):
    return {"verdict": (s.get("goal") or {}).get("verdict")}


def row_goal_at_m(rng, cell, reps):
    n, k = cell
    cases = make_cases(n)
    better = ((GOAL_W, 0.90, 1.00), *((w * (1 - GOAL_W), a, b) for w, a, b in MIX))
    goal = {"metric": "activation_rate", "direction": "increase", "min_effect": GOAL_M,
            "credibility": 0.95}
    get = Checked("goal_at_m", ("activation_rate",), read_verdict)
    supported = 0
    for _ in range(reps):
        c, v = null_pair(rng, n, k, mix_variant=better)
        supported += get(cases, {"control": c, "variant": v}, k, goal=goal)["verdict"] \
            == "supported"
    return {"supported": supported, "total": reps, "fast": get.ok}


def read_holm(s):
    return [holm_p(comparison(s, "activation_rate", i)) for i in range(3)]


def row_holm(rng, cell, reps):
    n, k = cell
    cases = make_cases(n)
    get = Checked("holm", ("activation_rate",), read_holm)
    rejected, field = 0, None
    for _ in range(reps):
        pc = draw_mix(rng, n)
        runs = {"control": rng.random((n, k)) < pc[:, None]}
        for j in range(3):
            pv = np.where(rng.random(n) < 0.4, draw_mix(rng, n), pc)
            runs[f"variant-{j}"] = rng.random((n, k)) < pv[:, None]
        ps = get(cases, runs, k)
        field = ps[0][1] or field
        rejected += any(p is not None and p <= 0.05 for p, _ in ps)
    return {"rejected": rejected, "total": reps, "field": field, "fast": get.ok}


def row_differ(rng, cell, reps):
    """Both subjects run every case at the same rate (homogeneous: the trial-level pairing
    is then valid too), so each version's posterior is calibrated and only the rule shows."""
    metric, n, k, rate = cell
    cases = make_cases(n)
    goal = {"metric": metric, "direction": "differ", "min_effect": 0.0, "credibility": 0.95}
    get = Checked("differ", (metric,), read_verdict)
    supported = 0
    for _ in range(reps):
        c, v = rng.random((n, k)) < rate, rng.random((n, k)) < rate
        supported += get(cases, {"control": c, "variant": v}, k, goal=goal)["verdict"] \
            == "supported"
    return {"supported": supported, "total": reps, "fast": get.ok}


def auto_design():
    """(min_trials, max_trials) of `trials: auto` by default in this version."""
    try:
        from ix.lab import loader
        return int(getattr(loader, "DEFAULT_MIN_TRIALS", 2)), int(loader.DEFAULT_MAX_TRIALS)
    except (ImportError, AttributeError):
        return 2, 10


def stop_table(lo: int, top: int, c: float = 0.95) -> np.ndarray:
    """stop[n, k]: `trials: auto` stops a case at k passes of n trials (this version's rule)."""
    from ix.stats.sequential import majority_vote_probability

    table = np.zeros((top + 1, top + 1), dtype=bool)
    for n in range(lo, top + 1):
        for k in range(n + 1):
            p = majority_vote_probability(k, n, top) if n < top else 0.0
            table[n, k] = n >= top or p >= c or p <= 1 - c
    return table


def stop_lengths(x: np.ndarray, table: np.ndarray) -> np.ndarray:
    n_cases, top = x.shape
    passes = np.concatenate([np.zeros((n_cases, 1), int), np.cumsum(x, axis=1)], axis=1)
    stops = table[np.arange(top + 1)[None, :], passes]        # (cases, top + 1)
    return stops.argmax(axis=1)


def pick(block: dict, key: str, k: int):
    d = block.get(key) or {}
    return value(d.get(str(k), d.get(k))) if isinstance(d, dict) else None


def row_auto(rng, cell, reps):
    n = 50
    a, b = passk_beta()
    lo, top = auto_design()
    table = stop_table(lo, top)
    cases = make_cases(n)
    info = {"trials_per_case": top, "trials_mode": {"mode": "auto", "min_trials": lo,
                                                    "max_trials": top, "credibility": 0.95}}
    out = {"hat5": [], "hat5_fixed": [], "at3": [], "at4": [], "rate_auto": [],
           "rate_fixed": [], "trials": 0, "top": top, "min": lo, "a": a, "b": b}
    for _ in range(reps):
        p = rng.beta(a, b, n)
        x = rng.random((n, top)) < p[:, None]
        length = stop_lengths(x, table)
        stopped = {c.id: ("max_trials" if length[i] >= top else "settled")
                   for i, c in enumerate(cases)}
        auto = summarise(cases, {"a": [x[i, :length[i]] for i in range(n)]}, top,
                         stopped={"a": stopped}, info=info)
        fixed = summarise(cases, {"a": x}, top, info={"trials_per_case": top})
        out["trials"] += int(length.sum())
        out["hat5"].append(pick(auto, "pass_hat_k", 5))
        out["hat5_fixed"].append(pick(fixed, "pass_hat_k", 5))
        out["at3"].append(pick(auto, "pass_at_k", 3))
        out["at4"].append(pick(auto, "pass_at_k", 4))
        out["rate_auto"].append(value((auto.get("trial_level") or {})
                                      .get("must_trigger", {}).get("rate")))
        out["rate_fixed"].append(value((fixed.get("trial_level") or {})
                                       .get("must_trigger", {}).get("rate")))
    return out


def suggest_mix():
    """The variant: a case redraws from U(0.9, 1) with probability w, so that the true
    recall difference at K = SUGGEST_K is 2m = 0.2."""
    def f(p):
        return vote_probability(p, SUGGEST_K)
    gain = mean_over_uniform(f, 0.9, 1.0) - mix_mean_of(f)
    return 0.2 / gain


def settle_probability(sugg: dict):
    """The probability of settling the goal that the suggestion prints, if it does."""
    for key, val in sugg.items():
        if ("prob" in key or "settle" in key) and isinstance(val, (int, float)) and 0 <= val <= 1:
            return float(val), key
    return None, None


def row_suggest(rng, cell, reps):
    """reps = settling simulations of one suggestion (one task = one inconclusive run)."""
    w = suggest_mix()
    goal = {"metric": "recall", "direction": "increase", "min_effect": 0.1,
            "credibility": 0.95}
    k = SUGGEST_K

    def run(n):
        pc = draw_mix(rng, n)
        pv = np.where(rng.random(n) < w, 0.9 + 0.1 * rng.random(n), pc)
        return {"control": rng.random((n, k)) < pc[:, None],
                "variant": rng.random((n, k)) < pv[:, None]}

    first = Checked("suggest-first", ("recall",), read_goal, suggestion=True)
    again = Checked("suggest-again", ("recall",), read_verdict)
    cases0 = make_cases(SUGGEST_N0)
    for _ in range(200):  # the first inconclusive run of this seed
        g = first(cases0, run(SUGGEST_N0), k, goal=goal)
        if g["verdict"] == "inconclusive" and (g["suggestion"] or {}).get("cases"):
            break
    else:
        return {"n": None}
    sugg = g["suggestion"]
    n = int(sugg["cases"])
    k = int(sugg.get("trials_per_case") or k)
    printed, key = settle_probability(sugg)
    cases = make_cases(n)
    settled = sum(again(cases, run(n), k, goal=goal)["verdict"] in ("supported", "refuted")
                  for _ in range(reps))
    return {"n": n, "printed": printed, "key": key, "settled": settled, "total": reps,
            "fast": first.ok and again.ok}


ROWS = {"score_ci": row_score_ci, "f1": row_f1, "activation": row_activation,
        "permute": row_permute, "goal_at_m": row_goal_at_m, "holm": row_holm,
        "differ": row_differ, "auto": row_auto, "suggest": row_suggest}
DIFFER = ("activation_rate", 20, 10, 0.7)
GRID = [(n, k) for n in (10, 20, 50) for k in (3, 5, 10)]


def extensions() -> list:
    """The `calibration_*.py` modules beside this file, by name (see the docstring)."""
    import importlib

    names = sorted(p.stem for p in Path(__file__).resolve().parent.glob("calibration_*.py"))
    return [importlib.import_module(n) for n in names]


def all_rows() -> dict:
    rows = dict(ROWS)
    for mod in extensions():
        rows.update(mod.ROWS)
    return rows


def tasks(reps: int, quick: bool, only: list[str] | None = None) -> list[tuple]:
    """(row, cell, chunk, replications): seeds follow (row, cell, chunk), not the workers."""
    out = [t for mod in extensions() for t in mod.tasks(reps, quick)]
    if only:
        return [t for t in base_tasks(reps, quick) + out
                if any(t[0].startswith(prefix) for prefix in only)]
    return base_tasks(reps, quick) + out


def base_tasks(reps: int, quick: bool) -> list[tuple]:
    out = []

    def add(row, cell, total, chunk=CHUNK):
        for i, start in enumerate(range(0, total, chunk)):
            out.append((row, cell, i, min(chunk, total - start)))

    for pop in SCORE_POPULATIONS:
        add("score_ci", pop, max(2, reps // 200), 1)
    add("f1", None, reps)
    for cell in GRID:
        add("activation", cell, reps)
    add("permute", (20, 10), max(20, reps // 5))
    add("goal_at_m", (20, 10), reps)
    add("holm", (20, 10), reps)
    add("differ", DIFFER, reps)
    add("auto", None, max(10, reps // 10), 10)
    for seed in range(3 if quick else 12):
        out.append(("suggest", None, seed, 5 if quick else 30))
    return out


def work(task):
    row, cell, chunk, reps = task
    key = [hash_text(row), hash_text(json.dumps(cell)), chunk]
    rng = np.random.default_rng(key)
    t0 = time.perf_counter()
    try:
        result = all_rows()[row](rng, cell, reps)
    except Exception as exc:  # a version lacking what a row reads: n/a
        result = {"error": f"{type(exc).__name__}: {exc}"}
    return row, cell, chunk, result, time.perf_counter() - t0


def hash_text(text: str) -> int:
    return zlib.crc32(text.encode())


def plan_cli() -> dict:
    """`ix plan --mde 0.3 --p1 0.7` through this version's real command."""
    with tempfile.TemporaryDirectory(prefix="ix-calibration-") as tmp:
        out = subprocess.run([sys.executable, "-m", "ix", "plan", "--mde", "0.3", "--p1",
                              "0.7"], capture_output=True, text=True, cwd=tmp,
                             env={**os.environ, "NO_COLOR": "1", "COLUMNS": "80"},
                             timeout=120)
    err = out.stderr.strip()
    return {"rc": out.returncode, "traceback": "Traceback" in out.stderr,
            "names_flag": "--mde" in err or "--p1" in err,
            "stderr": err.splitlines()[-1] if err else ""}


def ten_of_ten() -> dict:
    cases = make_cases(1)
    s = summarise(cases, {"a": [np.ones(10, bool)]}, 10)
    pr = s["probe_results"][0]
    return {"score": value(pr.get("score")), "ci": lohi(pr.get("score_ci"))}


def measure(args) -> None:
    """In a subprocess, against the ix on PYTHONPATH: every row, as JSON on stdout."""
    import multiprocessing

    import ix

    t0 = time.perf_counter()
    todo = tasks(args.reps, args.quick, args.rows)
    results: dict[str, list] = {}
    seconds: dict[str, float] = {}
    with multiprocessing.get_context("fork").Pool(args.workers) as pool:
        for i, (row, cell, _chunk, result, spent) in enumerate(
                pool.imap_unordered(work, todo)):
            results.setdefault(f"{row}|{json.dumps(cell)}", []).append(result)
            seconds[row] = seconds.get(row, 0.0) + spent
            if (i + 1) % 25 == 0 or i + 1 == len(todo):
                print(f"  {i + 1}/{len(todo)} tasks, {time.perf_counter() - t0:.0f} s",
                      file=sys.stderr, flush=True)
    # the base rows' table (with `ix plan` and the 10/10 case) when every base row is measured
    base = all(any(row.startswith(p) for p in args.rows) for row in ROWS) if args.rows else True
    out = {"ix": str(Path(ix.__file__).parent), "results": results,
           "plan": plan_cli() if base else None, "ten_of_ten": ten_of_ten() if base else None,
           "seconds": time.perf_counter() - t0, "reps": args.reps,
           "row_seconds": {k: round(v, 1) for k, v in seconds.items()}}
    print(json.dumps(out))


# ----------------------------------------------------------------------------- report
def combined(chunks: list[dict]) -> dict:
    """Sum the counters of a row's chunks; n/a when any chunk failed."""
    errors = [c["error"] for c in chunks if "error" in c]
    if errors:
        return {"error": errors[0]}
    out: dict = {}
    for c in chunks:
        for key, val in c.items():
            if isinstance(val, bool):
                out[key] = out.get(key, True) and val
            elif isinstance(val, (int, float)) and key not in ("truth", "top", "min", "a",
                                                               "b"):
                out[key] = out.get(key, 0) + val
            elif isinstance(val, list):
                out.setdefault(key, []).extend(val)
            else:
                out[key] = val
    return out


def chunked(rows: dict, reps: int) -> list[tuple]:
    """The `(row, cell, chunk, replications)` tasks of `rows` (row name -> its cells), each
    cell's `reps` replications cut into chunks of `CHUNK`: the usual `tasks` of a module."""
    return [(row, cell, i, min(CHUNK, reps - start))
            for row, cells in rows.items() for cell in cells
            for i, start in enumerate(range(0, reps, CHUNK))]


def share(res: dict, key: str, num: str, den: str = "total"):
    """(counter `num` / counter `den`, den) of the row cell `key` ("row|cell"), or (None, 0)
    when it failed or counted nothing."""
    r = res.get(key, {})
    if "error" in r or not r.get(den):
        return None, 0
    return r[num] / r[den], r[den]


def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def fmt(x, digits=3):
    return "n/a" if x is None else f"{x:.{digits}f}"


def meets(x, n, bound: float, at_least: bool):
    """True when the rate x of n replications meets the bound, "mc" when only within two
    Monte Carlo standard errors of it, else False (None: not measured)."""
    if x is None or not n:
        return False
    if (x >= bound) if at_least else (x <= bound):
        return True
    se = math.sqrt(bound * (1 - bound) / n)
    return "mc" if abs(x - bound) <= 2 * se else False


def figures(data: dict | None) -> dict:
    """Row label -> (printed figure, target holds?) for one version."""
    if data is None:
        return {}
    res = {k: combined(v) for k, v in data["results"].items()}
    out: dict[str, tuple[str, bool | None]] = {}
    if data.get("ten_of_ten") is not None:
        out.update(base_figures(data, res))
    for mod in extensions():
        if any(k.split("|", 1)[0] in mod.ROWS for k in res):
            out.update(mod.figures(res))
    return out


def base_figures(data: dict, res: dict) -> dict:
    out: dict[str, tuple[str, bool | None]] = {}

    def rate(key, num, den="total"):
        r = res.get(key, {})
        if "error" in r or not r.get(den):
            return None
        return r[num] / r[den]

    for pop in SCORE_POPULATIONS:
        key = f"score_ci|{json.dumps(pop)}"
        cov, hold = rate(key, "cover"), rate(key, "hold")
        out[f"score_ci coverage, {pop}"] = (fmt(cov), meets(cov, res[key].get("total"),
                                                            0.93, True))
        out[f"score_ci contains its estimate, {pop}"] = (fmt(hold), hold == 1.0)
    t = data["ten_of_ten"]
    ci = t.get("ci")
    out["a 10/10 case: score [score_ci]"] = (
        f"{fmt(t.get('score'))} [{fmt(ci[0])}, {fmt(ci[1])}]" if ci else "n/a",
        bool(ci) and ci[1] >= 1.0 and inside(t.get("score"), ci))
    cov, hold = rate("f1|null", "cover"), rate("f1|null", "hold")
    out["f1_ci coverage, N=20 K=10"] = (fmt(cov), meets(cov, res["f1|null"].get("total"),
                                                        0.90, True))
    out["f1_ci contains its estimate"] = (fmt(hold), hold == 1.0)
    covs = {cell: rate(f"activation|{json.dumps(list(cell))}", "cover") for cell in GRID}
    holds = [rate(f"activation|{json.dumps(list(cell))}", "hold") for cell in GRID]
    known = [c for c in covs.values() if c is not None]
    low = min(known) if len(known) == len(GRID) else None
    worst = min(covs, key=lambda c: covs[c] if covs[c] is not None else 2) if known else None
    out["activation diff_ci coverage, min of 9 cells"] = (
        f"{fmt(low)} (N={worst[0]},K={worst[1]})" if low is not None else "n/a",
        low is not None and meets(
            low, res[f"activation|{json.dumps(list(worst))}"]["total"], 0.93, True))
    k10 = [covs[(n, 10)] for n in (10, 20, 50)]
    out["activation diff_ci coverage, K=10, N=10/20/50"] = (
        "/".join(fmt(c, 2) for c in k10), None)
    out["activation diff_ci contains diff, min"] = (
        fmt(min(holds)) if None not in holds else "n/a",
        None not in holds and min(holds) == 1.0)
    ch = rate("permute|[20, 10]", "changed")
    out["changed by permuting variant trials"] = (fmt(ch), ch == 0.0)
    sup = rate("goal_at_m|[20, 10]", "supported")
    out["goal supported at effect = min_effect"] = (
        fmt(sup), meets(sup, res.get("goal_at_m|[20, 10]", {}).get("total"), 0.06, False))
    fw = rate("holm|[20, 10]", "rejected")
    field = res.get("holm|[20, 10]", {}).get("field")
    out["Holm FWER, 3 variants, global null"] = (
        f"{fmt(fw)} ({field})" if fw is not None else "n/a",
        meets(fw, res.get("holm|[20, 10]", {}).get("total"), 0.05, False))
    d = rate(f"differ|{json.dumps(list(DIFFER))}", "supported")
    out["differ supported at effect 0 (activation)"] = (
        fmt(d), meets(d, res.get(f"differ|{json.dumps(list(DIFFER))}", {}).get("total"), 0.05,
                      False))
    auto = res.get("auto|null", {})
    if "error" in auto or not auto:
        for label in ("pass^5 under auto (true 0.657)", "pass@4 < pass@3 (share of runs)",
                      "trial rate: auto - fixed (true 0.90)"):
            out[label] = ("n/a" + (f" ({auto.get('error')})" if auto else ""), None)
    else:
        h5 = mean(auto["hat5"])
        h5f = mean(auto["hat5_fixed"])
        out["pass^5 under auto (true 0.657)"] = (
            f"{fmt(h5)} (fixed {fmt(h5f)})" if h5 is not None else "not reported",
            h5 is None or abs(h5 - 0.657) <= 0.02)
        pairs = [(a3, a4) for a3, a4 in zip(auto["at3"], auto["at4"], strict=True)
                 if a3 is not None and a4 is not None]
        viol = sum(a4 < a3 - 1e-12 for a3, a4 in pairs) / len(pairs) if pairs else None
        out["pass@4 < pass@3 (share of runs)"] = (
            fmt(viol) if pairs else "not reported", not viol)
        ra, rf = mean(auto["rate_auto"]), mean(auto["rate_fixed"])
        gap = ra - rf if ra is not None and rf is not None else None
        out["trial rate: auto - fixed (true 0.90)"] = (
            f"{fmt(ra)}-{fmt(rf)}" if gap is not None else "n/a",
            gap is not None and abs(gap) <= 0.01)
    sugg = [c for c in data["results"].get("suggest|null", []) if c.get("n")]
    if sugg and all("error" not in c for c in sugg):
        settled = sum(c["settled"] for c in sugg) / sum(c["total"] for c in sugg)
        printed = mean([c["printed"] for c in sugg])
        ns = sorted(c["n"] for c in sugg)
        out["suggested n settles the goal (simulated)"] = (
            f"{fmt(settled, 2)} (n {ns[0]}-{ns[-1]})", None)
        out["printed P(settle) - simulated"] = (
            f"{fmt(printed, 2)}-{fmt(settled, 2)}" if printed is not None else "not printed",
            printed is not None and abs(printed - settled) <= 0.05)
    else:
        out["suggested n settles the goal (simulated)"] = ("n/a", None)
        out["printed P(settle) - simulated"] = ("n/a", False)
    p = data["plan"]
    out["ix plan --mde 0.3 --p1 0.7: exit, traceback"] = (
        f"{p['rc']}, {'traceback' if p['traceback'] else 'no traceback'}",
        p["rc"] == 2 and not p["traceback"] and p["names_flag"])
    return out


TARGETS = {
    "score_ci coverage": ">= 0.93", "score_ci contains": "1.000",
    "a 10/10 case": "ci reaches 1", "f1_ci coverage": ">= 0.90", "f1_ci contains": "1.000",
    "activation diff_ci coverage, min": ">= 0.93", "activation diff_ci coverage, K=10": "",
    "activation diff_ci contains": "1.000", "changed by": "0.000",
    "goal supported": "<= 0.06", "Holm": "<= 0.05", "differ": "<= 0.05",
    "pass^5": "+-0.02 or none", "pass@4": "0 or none", "trial rate": "gap <= 0.01",
    "suggested n": "", "printed P": "gap <= 0.05", "ix plan": "2, no traceback",
}


def target_of(label: str) -> str:
    targets = dict(TARGETS)
    for mod in extensions():
        targets.update(mod.TARGETS)
    return next((t for k, t in targets.items() if label.startswith(k)), "")


def report(before: dict | None, after: dict | None, rev: str) -> None:
    fb, fa = figures(before), figures(after)
    labels = list(fa or fb)
    print(f"Calibration of what users read, {LEVEL:.0%} nominal")
    print(f"  before = {rev}, after = the working tree")
    for data, name in ((before, "before"), (after, "after")):
        if data is not None:
            reps = f", {data['reps']} replications a cell" if "reps" in data else ""
            print(f"  {name}: {data['seconds']:.0f} s{reps}, ix from")
            print(f"    {data['ix']}")
            print(textwrap.fill("worker seconds by row: " + ", ".join(
                f"{k} {v:.0f}" for k, v in data.get("row_seconds", {}).items()),
                width=78, initial_indent="    ", subsequent_indent="      "))
    for label in labels:
        print(f"{label}  [target {target_of(label) or 'reported'}]")
        parts = []
        for name, f in (("before", fb), ("after", fa)):
            if label in f:
                shown, ok = f[label]
                mark = ("" if ok is None else " ok (within MC error)" if ok == "mc"
                        else " ok" if ok else " MISSES")
                parts.append(f"{name} {shown}{mark}")
        print("    " + "   ".join(parts))


def export(rev: str, into: Path) -> Path:
    """`git archive REV src` unpacked under `into`; returns the `src` folder."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", rev, "src"],
                             capture_output=True, check=True).stdout
    tar_path = into / "src.tar"
    tar_path.write_bytes(archive)
    with tarfile.open(tar_path) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def run_version(src: Path, args, label: str) -> dict | None:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--measure", "--reps",
           str(args.reps), "--workers", str(args.workers)] + (["--quick"] if args.quick else [])
    cmd += [f"--rows={prefix}" for prefix in args.rows]
    env = {k: v for k, v in os.environ.items() if not k.startswith("IX_")}
    env["PYTHONPATH"] = str(src)
    print(f"measuring {label} ({src}) ...", file=sys.stderr, flush=True)
    out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, env=env, cwd=str(src.parent))
    if out.returncode != 0:
        print(f"{label}: the measurement failed (exit {out.returncode})", file=sys.stderr)
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=None,
                        help="replications a cell (default 1000; 100 with --quick)")
    parser.add_argument("--quick", action="store_true", help="a fast smoke run")
    parser.add_argument("--before", default="623c023",
                        help="the revision measured as before (623c023: before issue 32; "
                             "2ab7f4f: before issue 15)")
    parser.add_argument("--only", choices=("before", "after", "both"), default="both")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    parser.add_argument("--load", type=Path, action="append", default=[],
                        help="print the table from figures --json wrote (repeatable: "
                             "e.g. a before-only and an after-only run), measuring nothing")
    parser.add_argument("--rows", action="append", default=[], metavar="PREFIX",
                        help="measure only the rows whose name starts with PREFIX "
                             "(repeatable; the base rows' names: " + ", ".join(ROWS) + ")")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.reps is None:
        args.reps = 100 if args.quick else 1000
    if args.measure:
        measure(args)
        return
    if args.load:
        loaded = [json.loads(p.read_text(encoding="utf-8")) for p in args.load]
        report(next((d["before"] for d in loaded if d.get("before")), None),
               next((d["after"] for d in loaded if d.get("after")), None), args.before)
        return
    t0 = time.perf_counter()
    before = after = None
    with tempfile.TemporaryDirectory(prefix="ix-calibration-") as tmp:
        if args.only in ("before", "both"):
            before = run_version(export(args.before, Path(tmp)), args, "before")
        if args.only in ("after", "both"):
            after = run_version(ROOT / "src", args, "after")
    if args.json:
        args.json.write_text(json.dumps({"before": before, "after": after}), encoding="utf-8")
    report(before, after, args.before)
    print(f"wall time {time.perf_counter() - t0:.0f} s ({args.reps} replications a cell, "
          f"{args.workers} workers)")


if __name__ == "__main__":
    main()
