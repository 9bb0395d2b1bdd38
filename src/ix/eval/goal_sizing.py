"""How many cases settle a goal: sized for the goal's own rule and checked by simulating it.

A *scenario* is a population of cases to plan on: each reference case's expectation and the
true activation rate of the control and of the treatment on it. A future run of n cases
resamples the reference cases (keeping the must/should-not mix), draws K trials per case
and subject, and is judged by ix itself: the goal metric's posterior exactly as a summary
computes it (`ix.eval.comparisons`) and `ix.stats.decisions.goal_verdict` (through
`goal_outcome`, which skips the quadrature where cheap bounds settle the verdict). The probability
of settling the goal (supported or refuted) at n is the share of seeded replicates that do.

The size is found in two steps: a start from the one-sided t-test power of the per-case
differences against the goal's boundary (`ix.stats.power.n_for_goal`: t quantiles, so small
n is not flattered), then a search over n by simulating ix's rule, which has the last word.
`goal_size` is the one entry point: `ix validate` (the t start alone), `ix plan EXPERIMENT`
and the suggestion an inconclusive goal carries, each naming the criterion it used; all
plan by default for a true effect of twice the goal's min_effect (`planning_effect`),
capped at the room the control leaves (`ix.eval.goal_reach`, STATS.md §10). From a
run's counts both simulate `posterior_worlds` (run r in its own plausible population: a
Bayesian bootstrap of the cases, control rates from their posteriors, the treatment moved
to the effect with the between-case spread the pairs show), not the observed rates taken
as the truth, which printed an optimistic probability; from a design alone (no counts),
every case at the planned rate with the treatment moved by `shifted`.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ix._lazy import lazy
from ix.eval import comparisons
from ix.eval.comparisons import Table
from ix.eval.families import family_labels
from ix.eval.goal_reach import bound_words, control_estimate, reach_block
from ix.eval.goal_reach import name as reach_name
from ix.eval.models import EvalCase
from ix.eval.schemas import GoalReach
from ix.eval.scoring import Tally
from ix.stats.decisions import goal_outcome
from ix.stats.power import goal_settle_power, n_for_goal
from ix.stats.reachability import capped_effect
from ix.stats.tails import binom_sf

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
else:
    np = lazy("numpy")

optimize = lazy("scipy.optimize")

#: Probability of settling the goal that a suggested size aims for.
TARGET = 0.8
#: Replicates per candidate n during the search, and for the probability that is printed.
SEARCH_REPLICATES = 100
FINAL_REPLICATES = 400
#: A plan conditions on its effect (keeps only the populations that can show it) when the
#: control's posterior leaves room for it with at least this probability; below, every
#: population takes as much of it as its room allows (`posterior_worlds`).
PLAUSIBLE = 0.25
#: Largest run (in the metric's cases) that is simulated.
MOST_CASES = 3000
SEED = 20251

_MUST_ONLY = ("activation_rate", "recall")
#: Verdicts already reached for a (metric, paired table, rule): the recall and pass_rate
#: posteriors read only the table, and runs of one size repeat tables often.
_VERDICTS: dict[tuple[Any, ...], str] = {}
#: Metrics whose posterior reads only the paired majority-vote table (`vote_tables`).
_VOTE_TABLES = ("recall", "pass_rate")
#: Metrics whose posterior reads only each subject's vote counts: f1 (TP, FP, FN) and
#: precision (TP, FP) — independent posteriors (`ix.eval.comparisons`), no tally needed.
_VOTE_COUNTS = {"f1": ("tp", "fp", "fn"), "precision": ("tp", "fp")}


@dataclass(frozen=True)
class Scenario:
    """Reference cases to plan on: expectation (True = must_trigger) and true activation
    rates of each subject, per case; `trials` per case and subject."""

    must: NDArray[np.bool_]
    control: NDArray[np.float64]
    treatment: NDArray[np.float64]
    trials: int
    #: Plausible populations (`posterior_worlds`); when set, simulated run r draws its cases
    #: from world r (cycling) instead of from the point rates above.
    worlds: Worlds | None = None

    def __post_init__(self) -> None:
        if not (self.must.shape == self.control.shape == self.treatment.shape):
            raise ValueError("must, control and treatment must have one entry per case")
        if self.trials < 1:
            raise ValueError(f"trials must be at least 1, got {self.trials}")


@dataclass(frozen=True)
class Worlds:
    """Populations the data leave plausible, one row each: every reference case's weight in
    the population (a Bayesian bootstrap) and true activation rates of each subject."""

    weights: NDArray[np.float64]
    control: NDArray[np.float64]
    treatment: NDArray[np.float64]
    #: the true effect on the goal's metric, averaged over the worlds: the one asked for,
    #: except in worlds with less room when too few can show it (they take all they have)
    effect: float
    #: the share of worlds with less room than the effect asked for (0 when such worlds
    #: were dropped)
    capped: float = 0.0


@dataclass(frozen=True)
class Settling:
    """How often a run of `cases` (the metric's unit) settles the goal, over `replicates`."""

    cases: int
    p_settle: float
    p_supported: float
    p_refuted: float
    replicates: int


@dataclass(frozen=True)
class GoalSize:
    """The answer: `cases` needed (None: no size up to `MOST_CASES` reaches the target),
    with the simulated probability of settling at that size (or at the largest tried), the
    t-based starting size, and the scenario's true effect on the goal's metric."""

    cases: int | None
    settling: Settling
    start: int | None
    true_effect: float
    unit: str
    target: float


def unit(metric: str) -> str:
    """What a goal metric's n counts."""
    return "must_trigger cases" if metric in _MUST_ONLY else "cases (at the current mix)"


def _vote(theta: NDArray[np.float64], k: int) -> NDArray[np.float64]:
    """P(majority vote activates) = P(Bin(K, θ) > K/2): ties do not activate."""
    out: NDArray[np.float64] = binom_sf(k // 2, k, theta)
    return out


def true_effect(metric: str, s: Scenario) -> float:
    """The scenario's treatment − control on `metric` (precision and F1: their large-n
    limits, from expected counts)."""
    must, k = s.must, s.trials
    if metric == "activation_rate":
        return float(np.mean(s.treatment[must] - s.control[must]))
    vc, vt = _vote(s.control, k), _vote(s.treatment, k)
    if metric == "recall":
        return float(np.mean(vt[must] - vc[must]))
    if metric == "pass_rate":
        right_c = np.where(must, vc, 1 - vc)
        right_t = np.where(must, vt, 1 - vt)
        return float(np.mean(right_t - right_c))

    def value(v: NDArray[np.float64]) -> float:
        tp, fp, fn = v[must].sum(), v[~must].sum(), (1 - v[must]).sum()
        if metric == "precision":
            return float(tp / (tp + fp)) if tp + fp else 0.0
        return float(2 * tp / (2 * tp + fp + fn)) if tp else 0.0

    if metric in ("precision", "f1"):
        return value(vt) - value(vc)
    raise ValueError(f"unknown metric {metric!r}")


def shifted(s: Scenario, metric: str, effect: float) -> Scenario:
    """The control's cases with a treatment better by `effect` on `metric`: every case's
    rate of being right moves by the same δ (must cases' activation rate up by δ, should-not
    cases' down by δ, clipped to [0, 1]), δ solved so that `true_effect` equals `effect`.
    Raises ValueError when no δ reaches it."""
    def moved(delta: float) -> Scenario:
        t = np.clip(np.where(s.must, s.control + delta, s.control - delta), 0.0, 1.0)
        return Scenario(s.must, s.control, t, s.trials)

    def gap(delta: float) -> float:
        return true_effect(metric, moved(delta)) - effect

    lo, hi = gap(-1.0), gap(1.0)
    if effect == 0:
        return moved(0.0)
    if abs(lo) <= 1e-12 or abs(hi) <= 1e-12:     # the effect is the whole room: an extreme
        return moved(-1.0 if abs(lo) <= 1e-12 else 1.0)
    if lo > 0 or hi < 0:
        reach = (lo + effect, hi + effect)
        raise ValueError(f"a true effect of {effect:+g} on {metric} is out of reach from "
                         f"these control rates (reachable: {reach[0]:+.3f} to "
                         f"{reach[1]:+.3f})")
    return moved(optimize.brentq(gap, -1.0, 1.0, xtol=1e-10))


def _world_effects(metric: str, must: NDArray[np.bool_], control: NDArray[np.float64],
                   treatment: NDArray[np.float64], weights: NDArray[np.float64],
                   k: int) -> NDArray[np.float64]:
    """`true_effect` of each world (rows): reference cases weighted within their kind."""
    wm = np.where(must, weights, 0.0)
    wm = wm / wm.sum(axis=1, keepdims=True)
    wn = np.where(must, 0.0, weights)
    tot = wn.sum(axis=1, keepdims=True)
    wn = np.divide(wn, tot, out=np.zeros_like(wn), where=tot > 0)
    share = float(np.mean(must))
    if metric == "activation_rate":
        out: NDArray[np.float64] = ((treatment - control) * wm).sum(axis=1)
        return out
    vc, vt = _vote(control, k), _vote(treatment, k)
    if metric == "recall":
        out = ((vt - vc) * wm).sum(axis=1)
        return out
    if metric == "pass_rate":
        return (share * ((vt - vc) * wm).sum(axis=1)
                + (1 - share) * ((vc - vt) * wn).sum(axis=1))

    def value(v: NDArray[np.float64]) -> NDArray[np.float64]:
        tp = share * (v * wm).sum(axis=1)
        fp = (1 - share) * (v * wn).sum(axis=1)
        fn = share - tp
        if metric == "precision":
            res: NDArray[np.float64] = np.divide(tp, tp + fp, out=np.zeros_like(tp),
                                                 where=tp + fp > 0)
        else:
            res = np.divide(2 * tp, 2 * tp + fp + fn, out=np.zeros_like(tp), where=tp > 0)
        return res

    if metric in ("precision", "f1"):
        return value(vt) - value(vc)
    raise ValueError(f"unknown metric {metric!r}")


def effect_spread(must: NDArray[np.bool_], control: tuple[NDArray[np.int64],
                  NDArray[np.int64]], treatment: tuple[NDArray[np.int64],
                  NDArray[np.int64]]) -> NDArray[np.float64]:
    """Each case's departure from its kind's mean change (treatment − control activation
    rate, at the Jeffreys points (k + ½)/(n + 1)), shrunk so that its variance is the
    observed differences' variance less their binomial noise (moments): the between-case
    spread of the effect that the pairs show beyond chance (0 when they show none)."""
    (kc, nc), (kt, nt) = control, treatment
    pc, pt = jeffreys_rate(kc, nc), jeffreys_rate(kt, nt)
    d = pt - pc
    out = np.zeros_like(d)
    for kind in (must, ~must):
        if kind.sum() < 2:
            continue
        noise = float(np.mean(pc[kind] * (1 - pc[kind]) / nc[kind]
                              + pt[kind] * (1 - pt[kind]) / nt[kind]))
        var = float(np.var(d[kind], ddof=1))
        shrink = math.sqrt(max(0.0, 1 - noise / var)) if var > 0 else 0.0
        out[kind] = shrink * (d[kind] - d[kind].mean())
    return out


def posterior_worlds(must: NDArray[np.bool_],
                     control: tuple[NDArray[np.int64], NDArray[np.int64]],
                     treatment: tuple[NDArray[np.int64], NDArray[np.int64]] | None,
                     trials: int, metric: str, effect: float,
                     count: int = FINAL_REPLICATES, condition: bool = True) -> Worlds:
    """`count` populations the observed cases leave plausible, each with a true effect of
    `effect` on `metric`. In each: the reference cases weighted by a Bayesian bootstrap
    (Dirichlet(1, …, 1), within each kind); each case's control rate drawn from its
    Jeffreys posterior Beta(k + ½, n − k + ½); the treatment's rate = that + the case's
    `effect_spread` (when the treatment was observed), then moved like `shifted` by the
    one δ that gives this world the effect. So a suggestion carries what a few cases cannot
    pin down: the population's control rates, and that a change moves cases unevenly
    (sizing on the observed rates with every case moved alike printed 0.83 where runs of
    the suggested size settled 0.71-0.75: docs/statistics.md, Planning). Worlds where no δ
    reaches the effect are dropped (the effect conditions the posterior), drawing up to
    `4·count`; seeded from the counts. Without `condition` (the effect is at the edge of
    what the control allows, `goal_size`), or when fewer than count/8 reach it,
    conditioning would keep only the populations whose control is implausibly far from
    its bound (STATS.md §10): then the first `count` are kept and one with less room than
    the effect takes all it has (δ = ±1; `capped`: their share)."""
    kc, nc = (np.asarray(a, dtype=np.int64) for a in control)
    parts = [must.astype(np.int64), kc, nc, np.array([trials], dtype=np.int64)]
    if treatment is not None:
        parts += [np.asarray(a, dtype=np.int64) for a in treatment]
    key = zlib.crc32(np.concatenate(parts).tobytes())
    rng = np.random.default_rng([SEED, key, round(abs(effect) * 1e6), int(effect < 0)])
    size = (4 * count, must.size)
    weights = rng.gamma(1.0, 1.0, size)
    theta_c = rng.beta(kc + 0.5, nc - kc + 0.5, size)
    base = theta_c
    if treatment is not None:
        base = np.clip(theta_c + effect_spread(must, (kc, nc), treatment), 0.0, 1.0)
    sign = np.where(must, 1.0, -1.0)

    def gap(delta: NDArray[np.float64], rows: NDArray[np.intp]) -> NDArray[np.float64]:
        moved = np.clip(base[rows] + sign * delta[:, None], 0.0, 1.0)
        return _world_effects(metric, must, theta_c[rows], moved, weights[rows],
                              trials) - effect

    every = np.arange(size[0])
    ones = np.ones(size[0])
    short = (gap(-ones, every) > 0) | (gap(ones, every) < 0)   # less room than the effect
    rows = np.flatnonzero(~short)[:count]
    if not condition or rows.size * 8 < count:     # at the edge: cap each, drop none
        rows = every[:count]
    lo, hi = -np.ones(rows.size), np.ones(rows.size)
    for _ in range(40):      # bisection, every world at once; a short world ends at ±1
        mid = (lo + hi) / 2
        up = gap(mid, rows) < 0
        lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
    delta = (lo + hi) / 2
    moved = np.clip(base[rows] + sign * delta[:, None], 0.0, 1.0)
    got = gap(delta, rows) + effect
    return Worlds(weights=weights[rows], control=theta_c[rows], treatment=moved,
                  effect=float(np.mean(got)) if short[rows].any() else effect,
                  capped=float(np.mean(short[rows])))


def _outcome(metric: str, rule: tuple[Any, float, float], control: Tally, treatment: Tally,
             cases: Sequence[EvalCase], control_metrics: dict[str, Any],
             treatment_metrics: dict[str, Any], tables: dict[str, Any] | None = None,
             labels: list[str] | None = None) -> str:
    """The goal's verdict on the metric's posterior exactly as a summary computes it
    (without the interval, which the verdict does not need and which costs a root search),
    read from the posterior's cheap bounds where they settle it (`goal_outcome`). `tables`:
    the paired 2×2 tables `paired_tables` would count, when the caller has them; `labels`
    the cases' families (`family_labels`)."""
    e = comparisons._posterior(metric, control, treatment, cases, control_metrics,
                               treatment_metrics, tables, labels)
    return goal_outcome(e.cdf, e.bounds, direction=rule[0], min_effect=rule[1],
                        credibility=rule[2])


def vote_tables(vote_c: NDArray[np.bool_], vote_t: NDArray[np.bool_],
                must: NDArray[np.bool_]) -> dict[str, Any]:
    """`ix.eval.comparisons.paired_tables`' majority-vote tables (recall: must cases' votes;
    pass_rate: every case's correctness), counted with numpy; roles as there (control
    first). A test checks them against `paired_tables`."""
    def table(a: NDArray[np.bool_], b: NDArray[np.bool_]) -> Table:
        return Table(both=int(np.sum(a & b)), control_only=int(np.sum(a & ~b)),
                     variant_only=int(np.sum(b & ~a)), neither=int(np.sum(~a & ~b)))

    right_c, right_t = np.where(must, vote_c, ~vote_c), np.where(must, vote_t, ~vote_t)
    return {"recall": table(vote_c[must], vote_t[must]), "pass_rate": table(right_c, right_t)}


def _counts(s: Scenario, metric: str, n: int) -> tuple[int, int]:
    """(must, should-not) cases of a run of n of the metric's units."""
    if metric in _MUST_ONLY:
        return n, 0
    share = float(np.mean(s.must)) if s.must.size else 1.0
    n_must = min(n, max(1 if share > 0 else 0, round(n * share)))
    if share < 1 and n_must == n and n > 1:
        n_must = n - 1
    return n_must, n - n_must


def _fill(tally: Tally, cases: Sequence[EvalCase], passed: NDArray[np.int64],
          bits: NDArray[np.int64], k: int) -> None:
    full = (1 << k) - 1
    for case, p, b in zip(cases, passed.tolist(), bits.tolist(), strict=True):
        c = tally.counts[case.id]
        c.valid, c.passed, c.valid_bits, c.passed_bits = k, p, full, b
    tally.trials = k * len(cases)


def _metrics(vote: NDArray[np.bool_], must: NDArray[np.bool_]) -> dict[str, Any]:
    """`ix.eval.scoring.compute_metrics` of majority votes (score > 0.5), vectorised."""
    tp, fp = int((vote & must).sum()), int((vote & ~must).sum())
    fn, tn = int((~vote & must).sum()), int((~vote & ~must).sum())
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "tp": tp, "fp": fp,
            "fn": fn, "tn": tn}


def settle_probability(goal: dict[str, Any], s: Scenario, n: int,
                       replicates: int = FINAL_REPLICATES, seed: int = SEED) -> Settling:
    """Simulate `replicates` runs of n of the goal metric's units and judge each with ix's
    own posterior and `goal_verdict`; seeded, so the answer is reproducible."""
    metric = goal["metric"]
    n_must, n_not = _counts(s, metric, n)
    must_idx, not_idx = np.flatnonzero(s.must), np.flatnonzero(~s.must)
    if (n_must and not must_idx.size) or (n_not and not not_idx.size):
        raise ValueError(f"the scenario has no case of a kind {metric} needs")
    cases = [EvalCase(id=f"m{i}", prompt="-", expectation="must_trigger")
             for i in range(n_must)]
    cases += [EvalCase(id=f"n{i}", prompt="-", expectation="should_not_trigger")
              for i in range(n_not)]
    is_must = np.array([c.expectation == "must_trigger" for c in cases], dtype=bool)
    labels = family_labels(cases)  # once, not per replicate: the cases stay the same
    k = s.trials
    rng = np.random.default_rng([seed, n])
    weights = (1 << np.arange(k, dtype=np.int64)) if k < 63 else None
    if weights is None:
        raise ValueError("at most 62 trials per case can be simulated")
    supported = refuted = 0
    rule = (goal["direction"], float(goal["min_effect"]), float(goal["credibility"]))
    tallies = (Tally(cases), Tally(cases))   # refilled in place: every count is overwritten
    w = s.worlds
    for r in range(replicates):
        if w is None:
            pm = pn = None
            control, treatment = s.control, s.treatment
        else:
            row = r % w.weights.shape[0]
            pm, pn = w.weights[row, must_idx], w.weights[row, not_idx]
            pm, pn = pm / pm.sum(), (pn / pn.sum() if n_not else None)
            control, treatment = w.control[row], w.treatment[row]
        idx = np.concatenate([rng.choice(must_idx, n_must, p=pm),
                              rng.choice(not_idx, n_not, p=pn)]
                             if n_not else [rng.choice(must_idx, n_must, p=pm)])
        draws = [rng.random((idx.size, k)) < theta[:, None]
                 for theta in (control[idx], treatment[idx])]
        votes = [2 * d.sum(axis=1) > k for d in draws]   # the majority vote: score > 0.5
        tables = vote_tables(votes[0], votes[1], is_must) if metric in _VOTE_TABLES else None
        key: tuple[Any, ...] | None = None
        mc = mt = None
        if tables is not None:    # the posterior reads only this table: judge it once
            t = tables[metric]
            key = (metric, t.both, t.control_only, t.variant_only, t.neither, rule)
        elif metric in _VOTE_COUNTS:  # ... or only these counts of each subject's votes
            mc, mt = (_metrics(v, is_must) for v in votes)
            key = (metric, *(m[c] for m in (mc, mt) for c in _VOTE_COUNTS[metric]), rule)
        verdict = _VERDICTS.get(key) if key is not None else None
        if verdict is None:
            if key is None:  # only the case-level posterior reads the tallies
                for tally, d in zip(tallies, draws, strict=True):
                    _fill(tally, cases, d.sum(axis=1), d.astype(np.int64) @ weights, k)
            if mc is None or mt is None:
                mc, mt = (_metrics(v, is_must) for v in votes)
            verdict = _outcome(metric, rule, tallies[0], tallies[1], cases, mc, mt, tables,
                               labels)
            if key is not None:
                if len(_VERDICTS) > 200_000:
                    _VERDICTS.clear()
                _VERDICTS[key] = verdict
        supported += verdict == "supported"
        refuted += verdict == "refuted"
    return Settling(cases=n, p_settle=(supported + refuted) / replicates,
                    p_supported=supported / replicates, p_refuted=refuted / replicates,
                    replicates=replicates)


def _observed_diffs(s: Scenario, metric: str, n: int, replicates: int,
                    rng: np.random.Generator) -> NDArray[np.float64]:
    """The metric's observed treatment − control over simulated runs of n units (plug-in
    estimates, vectorised): its spread gives the t start its standard deviation."""
    n_must, n_not = _counts(s, metric, n)
    must_idx, not_idx = np.flatnonzero(s.must), np.flatnonzero(~s.must)
    idx = rng.choice(must_idx, (replicates, n_must))
    if n_not:
        idx = np.concatenate([idx, rng.choice(not_idx, (replicates, n_not))], axis=1)
    is_must = s.must[idx]
    k = s.trials
    values = []
    for theta in (s.control[idx], s.treatment[idx]):
        passed = rng.binomial(k, theta)
        vote = 2 * passed > k
        if metric == "activation_rate":
            values.append((passed / k * is_must).sum(axis=1) / n_must)
            continue
        tp = (vote & is_must).sum(axis=1)
        fp = (vote & ~is_must).sum(axis=1)
        fn = (~vote & is_must).sum(axis=1)
        if metric == "recall":
            values.append(tp / max(n_must, 1))
        elif metric == "pass_rate":
            values.append((tp + (~vote & ~is_must).sum(axis=1)) / idx.shape[1])
        elif metric == "precision":
            values.append(np.divide(tp, tp + fp, out=np.zeros(replicates),
                                    where=tp + fp > 0))
        else:
            values.append(np.divide(2 * tp, 2 * tp + fp + fn, out=np.zeros(replicates),
                                    where=tp > 0))
    out: NDArray[np.float64] = values[1] - values[0]
    return out


def t_start(goal: dict[str, Any], s: Scenario, power: float = TARGET,
            seed: int = SEED) -> int | None:
    """The t-based size (`n_for_goal`) from the scenario's true effect and the spread of one
    unit's difference (from 2,000 vectorised plug-in replicates at 50 units)."""
    metric, ref = goal["metric"], 50
    diffs = _observed_diffs(s, metric, ref, 2000, np.random.default_rng([seed, 0]))
    sd = float(np.std(diffs, ddof=1)) * math.sqrt(ref)
    if not sd > 0:
        return None
    try:
        effect = true_effect(metric, s) if s.worlds is None else s.worlds.effect
        return n_for_goal(effect, min_effect=float(goal["min_effect"]), sd=sd,
                          credibility=float(goal["credibility"]), power=power,
                          direction=goal["direction"], most=10 * MOST_CASES)
    except ValueError:
        return None


def _recalibrated(goal: dict[str, Any], effect: float, n: int, p: float, target: float,
                  most: int) -> int | None:
    """The size the t approximation asks for once its standard deviation is set so that it
    predicts the simulated probability `p` at n (None when p is too extreme to invert)."""
    if not 0.03 < p < 0.985 or n < 2:
        return None
    kw = dict(min_effect=float(goal["min_effect"]), credibility=float(goal["credibility"]),
              direction=goal["direction"])
    try:
        sd = optimize.brentq(lambda x: goal_settle_power(n, effect, sd=x, **kw) - p, 1e-6, 1e3)
        return n_for_goal(effect, sd=sd, power=target, most=10 * most, **kw)
    except ValueError:
        return None


def size_goal(goal: dict[str, Any], s: Scenario, *, target: float = TARGET, least: int = 2,
              most: int = MOST_CASES, seed: int = SEED) -> GoalSize:
    """The smallest run (in the metric's units, ≥ `least`) that settles the goal with
    probability ≥ `target` under the scenario, by simulating ix's rule from the t start.

    Each simulated candidate (`SEARCH_REPLICATES` replicates) recalibrates the t
    approximation's spread to what it saw, which proposes the next candidate; a bisection
    between the candidates that fell short and those that reached the target finishes it to
    within 5%. The answer's probability is re-simulated with `FINAL_REPLICATES` (another
    seed), and that is what is printed.
    """
    metric = goal["metric"]
    effect = true_effect(metric, s) if s.worlds is None else s.worlds.effect
    start = t_start(goal, s, target, seed)
    memo: dict[int, Settling] = {}

    def p(n: int) -> float:
        if n not in memo:
            memo[n] = settle_probability(goal, s, n, SEARCH_REPLICATES, seed)
        return memo[n].p_settle

    def clamp(n: int) -> int:
        return min(max(n, least), most)

    n = clamp(start or least)
    for _ in range(3):                       # recalibrated t jumps: usually 1–2 suffice
        got = p(n)
        if target <= got <= target + 0.08:
            break
        jump = _recalibrated(goal, effect, n, got, target, most)
        if jump is None:
            jump = 2 * n if got < target else n // 2
        jump = clamp(jump)
        if jump == n or jump in memo:
            break
        n = jump
    short = [k for k, v in memo.items() if v.p_settle < target]
    reach = [k for k, v in memo.items() if v.p_settle >= target]
    lo = max(short, default=least - 1)
    hi = min((k for k in reach if k > lo), default=None)
    while hi is None and lo < most:          # still short: step up
        cand = clamp(max(lo + 1, math.ceil(lo * 1.6)))
        if p(cand) >= target:
            hi = cand
        else:
            lo = cand
    if hi is None:
        final = settle_probability(goal, s, most, FINAL_REPLICATES, seed + 1)
        return GoalSize(cases=None, settling=final, start=start, true_effect=effect,
                        unit=unit(metric), target=target)
    while hi - lo > max(1, hi // 20):
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if p(mid) >= target else (mid, hi)
    final = settle_probability(goal, s, hi, FINAL_REPLICATES, seed + 1)
    for _ in range(2):          # the search's noise left it short: a few percent more cases
        if final.p_settle >= target or hi >= most:
            break
        hi = min(most, max(hi + 1, math.ceil(hi * 1.08)))
        final = settle_probability(goal, s, hi, FINAL_REPLICATES, seed + 1)
    return GoalSize(cases=hi, settling=final, start=start, true_effect=effect,
                    unit=unit(metric), target=target)


def scenario_from_tallies(control: Tally, treatment: Tally, cases: Sequence[EvalCase],
                          trials: int) -> Scenario:
    """The run's own cases as the population, each case's true rate for each subject taken
    as (k + ½)/(n + 1), its posterior mean under a Jeffreys prior: k/n would put a case seen
    5/5 at exactly 1, where its vote could never flip, and understate how often votes
    disagree (cases without a valid trial in either subject are left out)."""
    must, (kc, nc), (kt, nt) = observed_counts(control, treatment, cases)
    return Scenario(must, jeffreys_rate(kc, nc), jeffreys_rate(kt, nt), max(trials, 1))


def observed_counts(control: Tally, treatment: Tally, cases: Sequence[EvalCase]) -> tuple[
        NDArray[np.bool_], tuple[NDArray[np.int64], NDArray[np.int64]],
        tuple[NDArray[np.int64], NDArray[np.int64]]]:
    """Expectation and (passed, valid) trials of each subject on the cases both ran."""
    keep = [c for c in cases if c.expectation in ("must_trigger", "should_not_trigger")
            and control.counts[c.id].valid and treatment.counts[c.id].valid]

    def counts(t: Tally) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        return (np.array([t.counts[c.id].passed for c in keep], dtype=np.int64),
                np.array([t.counts[c.id].valid for c in keep], dtype=np.int64))

    must = np.array([c.expectation == "must_trigger" for c in keep], dtype=bool)
    return must, counts(control), counts(treatment)


def jeffreys_rate(passed: NDArray[np.int64], valid: NDArray[np.int64]) -> NDArray[np.float64]:
    """A case's planning rate from its counts: (k + ½)/(n + 1)."""
    out: NDArray[np.float64] = (passed + 0.5) / (valid + 1.0)
    return out


def planning_effect(goal: dict[str, Any], observed: float | None = None) -> float | None:
    """The true effect a goal is planned for by default: twice its min_effect, in its
    direction ("differ": the observed difference's, else up). None when min_effect is 0."""
    m = float(goal["min_effect"])
    if m == 0:
        return None
    if goal["direction"] == "decrease" or (goal["direction"] == "differ" and observed
                                           is not None and observed < 0):
        return -2 * m
    return 2 * m


def metric_value(metric: str, s: Scenario) -> float:
    """The control's true value on `metric` in a scenario (large-n limit, majority votes)."""
    must, k = s.must, s.trials
    if metric == "activation_rate":
        return float(np.mean(s.control[must]))
    v = _vote(s.control, k)
    if metric == "recall":
        return float(np.mean(v[must]))
    if metric == "pass_rate":
        return float(np.mean(np.where(must, v, 1 - v)))
    tp, fp, fn = v[must].sum(), v[~must].sum(), (1 - v[must]).sum()
    if metric == "precision":
        return float(tp / (tp + fp)) if tp + fp else 0.0
    if metric == "f1":
        return float(2 * tp / (2 * tp + fp + fn)) if tp else 0.0
    raise ValueError(f"unknown metric {metric!r}")


@dataclass(frozen=True)
class Basis:
    """What a goal is sized from, and the words that name it in the criterion: a design's
    cases each right with probability `rate` (`control` None), or a run's per-case
    (passed, valid) trials of the control and, when it ran, the treatment."""

    must: NDArray[np.bool_]
    trials: int
    words: str
    rate: float = 0.5
    control: tuple[NDArray[np.int64], NDArray[np.int64]] | None = None
    treatment: tuple[NDArray[np.int64], NDArray[np.int64]] | None = None

    @classmethod
    def design(cls, expectations: Sequence[str], rate: float, trials: int) -> Basis:
        """A design's must/should-not cases at `rate` ("the worst-case rate 0.5")."""
        must = np.array([e == "must_trigger" for e in expectations
                         if e in ("must_trigger", "should_not_trigger")], dtype=bool)
        words = (f"at the worst-case rate {rate:g}" if rate == 0.5
                 else f"at the planning rate {rate:g}")
        return cls(must=must, trials=max(int(trials), 1), words=words, rate=rate)

    def current(self, metric: str) -> int:
        """The metric's units among these cases (must_trigger cases for recall and
        activation_rate)."""
        return int(self.must.sum()) if metric in _MUST_ONLY else int(self.must.size)

    def scenario(self) -> Scenario:
        """The control's cases (the treatment equal to it until shifted)."""
        if self.control is None:
            c = np.where(self.must, self.rate, 1.0 - self.rate).astype(float)
        else:
            c = jeffreys_rate(*self.control)
        return Scenario(self.must, c, c.copy(), self.trials)


@dataclass(frozen=True)
class Sizing:
    """A goal's size, whichever command asks (`goal_size`): `cases` of `unit` (None: none up
    to `MOST_CASES`, or nothing to size — `note` says why), the `criterion` it was sized for,
    in words, the true effect planned for (`effect`, after the cap at the room the control
    leaves; `asked` before it), the control's value and which verdicts remain reachable
    (`reach`, the `reachable` block), the t start, and the simulated `settling` (None when
    not simulated)."""

    cases: int | None
    unit: str
    target: float
    criterion: str
    method: str
    effect: float | None
    asked: float | None
    control: float | None
    reach: GoalReach | None
    start: int | None
    settling: Settling | None
    capped: bool = False
    note: str | None = None


def _fx(x: float) -> str:
    return "0" if x == 0 else f"{x:+.3g}"


def goal_size(goal: dict[str, Any], basis: Basis, *, effect: float | None = None,
              target: float = TARGET, least: int | None = None, simulate: bool = True,
              observed: float | None = None) -> Sizing:
    """How many cases settle `goal`, the one answer `ix validate`, a run's suggestion and
    `ix plan` print, each naming its `criterion` (the basis and how it was sized, e.g. "at
    the worst-case rate 0.5, to settle with probability 0.8 by the one-sided t approximation")
    and in `method` the truth assumed: a true `effect` (default twice min_effect in the
    goal's direction, `planning_effect`) capped at the room the control leaves (STATS.md
    §10: a decrease from a control at 0 is planned as no change, so that only refuted is
    sized for). With `simulate` (a run's suggestion, `ix plan`) the size is simulated with
    ix's own rule (`size_goal`); without (`ix validate`, which must be fast) it is the
    one-sided t approximation that simulation starts from. min_effect 0 and no effect
    given: a run's basis plans for new cases like these, both subjects as observed. The
    size is at least `least`: by default 2 for a design, and more than the run had for a
    run's counts (what to add), so a suggestion and `ix plan` after the run agree.
    """
    metric, direction = goal["metric"], goal["direction"]
    if least is None:
        least = 2 if basis.control is None else basis.current(metric) + 1
    m = float(goal["min_effect"])
    u = unit(metric)
    likely: tuple[float, float] | None = None
    if basis.control is not None:
        x, interval = control_estimate(metric, basis.must, *basis.control,
                                       credibility=float(goal["credibility"]))
        _, likely = control_estimate(metric, basis.must, *basis.control,
                                     credibility=1 - PLAUSIBLE)
    else:
        x, interval = metric_value(metric, basis.scenario()), None
    block, _ = reach_block(metric, goal, x, interval)
    asked = effect if effect is not None else planning_effect(goal, observed)
    planned = asked if asked is None or x is None else capped_effect(asked, x, interval)
    capped = asked is not None and planned is not None and abs(planned - asked) > 1e-9
    control = basis.scenario()
    how_sized = ("the one-sided t approximation" if not simulate
                 else f"{FINAL_REPLICATES} simulated runs judged by ix's own rule")
    criterion = f"{basis.words}, to settle with probability {target:g} by {how_sized}"

    def answer(method: str, **kw: Any) -> Sizing:
        fields: dict[str, Any] = dict(cases=None, start=None, settling=None, effect=planned,
                                      capped=capped)
        fields.update(kw)
        return Sizing(unit=u, target=target, criterion=criterion, method=method,
                      asked=asked, control=x, reach=block, **fields)

    if planned is None:
        if basis.control is None or basis.treatment is None:
            note = "the goal's min_effect is 0: give the true effect to plan for"
            return answer(note, note=note)
        scenario = Scenario(control.must, control.control, jeffreys_rate(*basis.treatment),
                            basis.trials)
        planned = round(true_effect(metric, scenario), 6)
        how = "if new cases behave like these, both subjects as observed"
    else:
        beyond = (abs(planned) if direction == "differ"
                  else planned if direction == "increase" else -planned) - m
        why = "" if effect is not None else "twice min_effect"
        if capped and asked is not None:
            seen = "" if planned == 0 else bound_words(goal, interval, 1 if asked > 0 else -1)
            room = f"capped at the room the control {reach_name(metric)} {x:.3f}{seen} leaves"
            why = (f"twice min_effect is {_fx(asked)}: {room}" if why
                   else f"{_fx(asked)} {room}")
        how = f"if the true effect is {_fx(planned)}" + (f" ({why})" if why else "")
        if abs(beyond) < 1e-9:
            note = (f"{how}, which sits on the goal's boundary (min_effect {m:g}): no "
                    "number of cases settles it")
            return answer(note, note=note)
        if basis.control is None:
            scenario = shifted(control, metric, planned)
        else:
            # condition on the effect only where the control likely leaves room for it
            edge = likely is not None and x is not None and capped_effect(
                planned, x, likely) != planned
            worlds = posterior_worlds(control.must, basis.control, basis.treatment,
                                      basis.trials, metric, planned, condition=not edge)
            # the point scenario only starts the search (t approximation)
            scenario = Scenario(control.must, worlds.control.mean(axis=0),
                                worlds.treatment.mean(axis=0), basis.trials, worlds)
            how += (" in a population like these cases, as uncertain as they leave it"
                    + (f" ({worlds.capped:.0%} of them have less room and take all of it: "
                       f"{_fx(worlds.effect)} on average)" if worlds.capped else ""))
    if not simulate:
        start = t_start(goal, scenario, target)
        return answer(how, cases=None if start is None else max(start, least), start=start)
    size = size_goal(goal, scenario, target=target, least=least)
    got = round(size.true_effect, 6) + 0.0
    return answer(how, cases=size.cases, start=size.start, settling=size.settling,
                  effect=got, capped=capped or (asked is not None
                                                and abs(got - asked) > 1e-6))


def suggest(goal: dict[str, Any], control: Tally, treatment: Tally,
            cases: Sequence[EvalCase], trials_per_case: int,
            observed: float | None = None) -> dict[str, Any]:
    """The suggestion an inconclusive goal carries: `goal_size` from this run's rates (both
    subjects' counts: `posterior_worlds` draws populations these cases leave plausible,
    their control rates as uncertain as the counts leave them, the effect as uneven across
    cases as the pairs show), so `ix plan EXPERIMENT` after this run prints the same size."""
    metric = goal["metric"]
    must, counts_c, counts_t = observed_counts(control, treatment, cases)
    n_must, n_not = int(must.sum()), int((~must).sum())
    current = n_must if metric in _MUST_ONLY else n_must + n_not
    base: dict[str, Any] = {"cases": None, "current_cases": current,
                            "trials_per_case": trials_per_case, "p_settle": None,
                            "p_supported": None, "p_refuted": None, "simulations": 0,
                            "unit": unit(metric), "effect": None, "effect_asked": None,
                            "criterion": None}
    if not n_must:
        return {**base, "method": "no valid trials to extrapolate from"}
    basis = Basis(must=must, trials=max(trials_per_case, 1), words="from this run's rates",
                  control=counts_c, treatment=counts_t)
    size = goal_size(goal, basis, observed=observed)
    return suggestion_of(size, base)


def suggestion_of(size: Sizing, base: dict[str, Any]) -> dict[str, Any]:
    """The summary's `suggestion` block of a `goal_size` answer (`base`: its other fields)."""
    out = {**base, "effect": size.effect, "effect_asked": size.asked if size.capped else None,
           "criterion": size.criterion}
    st = size.settling
    if st is None:
        return {**out, "method": size.note or size.method}
    out.update(p_settle=st.p_settle, p_supported=st.p_supported, p_refuted=st.p_refuted,
               simulations=st.replicates)
    if size.cases is None:
        return {**out, "method": f"even {st.cases} {size.unit} settle it with probability "
                                 f"only {st.p_settle:.2f}, {size.method}"}
    return {**out, "cases": size.cases, "method": size.method}
