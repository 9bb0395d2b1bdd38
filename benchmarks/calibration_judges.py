"""Calibration rows of issue 36's judges (STATS.md §14, `ix.stats.judges`), loaded by
`benchmarks/calibration.py`; `benchmarks/judge_calibration.py` prints the first two as its
own tables from the same simulations:

    .venv/bin/python benchmarks/calibration.py --only after --rows judges --reps 1000

Each row draws data from a known truth (seeded), calls the `ix.stats.judges` function users'
figures come from, and counts how often its 95% interval holds the truth. Target >= 0.93.

- `judges_agreement`: a judge with known TPR and TNR against a labelled set of 20/50/100
  items (human label ~ Bernoulli(π): the numbers of human passes and fails vary, and may
  be 0), a good judge (0.95, 0.95, π 0.2) and a poor one (0.70, 0.75, π 0.5):
  `agreement`'s TPR, TNR and Cohen's κ (against the population κ, among the replications
  where it is defined), and `corrected_rate` of a run of 200 outputs the judge alone grades
  against π.
- `judges_scores`: a 1-5 scoring judge one step off the human score 20% (60%, 8%) of the
  time, on uniform and skewed human scores, 20/50/100 items: `score_agreement`'s quadratic
  weighted κ and Spearman's ρ against the population's (exact, from the joint table).
- `judges_noise`: repeated judgements, `judge_noise`: normal scores (output variance 1,
  judge variance 0.5: ICC 2/3) and 0/1 verdicts (each output's pass probability
  ~ Beta(0.4, 0.6): output variance Var(p) = 0.12, judge variance E[p(1 − p)] = 0.12: ICC
  ½): its ICC(1) and ICC(1,k) intervals against the true ones, and its variance
  components' means against the truth (unbiased: within three Monte Carlo standard errors).
- `judges_alpha`: three judges of different error rates (nominal) or offsets (interval, a
  normal score), 10% of the ratings missing, 30/100 units: `krippendorff_alpha` against the
  population α.
- `judges_pairwise`: a pairwise judge in both orders with a position bias β (the variant
  wins a case w + β of the time shown first, w − β shown second; w drawn per case): the
  win-share interval of `pairwise` against the mean w (the bias cancels), the position-bias
  interval against β; 20/50 cases, a null (mean w ½) and a better variant.

`ix.stats.judges` is imported inside the rows: `calibration.py` imports this module with
the `--before` version's `src` too, which has no judges (its rows print n/a).
"""

import json
import math

import numpy as np

import calibration as cal

TARGET = 0.93
LEVEL = 0.95

# ----------------------------------------------------------------------------- agreement
#: (TPR, TNR, true pass rate): issue 36's judge, a near-perfect judge on a rare pass, a weak
#: judge, and a lenient judge on a frequent pass (`judge_calibration.py` measures all four)
SETTINGS = [(0.85, 0.90, 0.6), (0.95, 0.95, 0.2), (0.70, 0.75, 0.5), (0.98, 0.80, 0.9)]
#: the two of them the calibration rows measure: a good judge and a poor one
JUDGES = {"good": SETTINGS[1], "poor": SETTINGS[2]}
LABELS = (20, 50, 100)
RUN = 200  # outputs the judge alone grades, whose judged rate `corrected_rate` corrects
AGREEMENT_CELLS = [(name, n) for name in JUDGES for n in LABELS]


def population_kappa(tpr: float, tnr: float, rate: float) -> float:
    """Cohen's κ of the judge against humans over the whole population."""
    judge_pass = rate * tpr + (1 - rate) * (1 - tnr)
    observed = rate * tpr + (1 - rate) * tnr
    chance = judge_pass * rate + (1 - judge_pass) * (1 - rate)
    return (observed - chance) / (1 - chance)


def replicate(rng: np.random.Generator, tpr: float, tnr: float, rate: float, labels: int,
              run: int, seed: int) -> tuple[bool, bool, bool | None, bool, float]:
    """One labelled set and one run: whether each interval holds the truth (TPR, TNR, κ —
    None where undefined —, the corrected rate), and the corrected rate's interval width."""
    from ix.stats.judges import agreement, corrected_rate

    human = rng.random(labels) < rate
    judge = np.where(human, rng.random(labels) < tpr, rng.random(labels) < 1 - tnr)
    a = agreement(judge.tolist(), human.tolist(), level=LEVEL, seed=seed)
    judge_rate = rate * tpr + (1 - rate) * (1 - tnr)
    c = corrected_rate(int(rng.binomial(run, judge_rate)), run, a.tp, a.tp + a.fn, a.tn,
                       a.tn + a.fp, level=LEVEL, seed=seed)
    kappa = population_kappa(tpr, tnr, rate)
    kappa_covered = None if math.isnan(a.kappa.value) else a.kappa.lo <= kappa <= a.kappa.hi
    return (a.tpr.lo <= tpr <= a.tpr.hi, a.tnr.lo <= tnr <= a.tnr.hi, kappa_covered,
            c.rate.lo <= rate <= c.rate.hi, c.rate.hi - c.rate.lo)


def row_agreement(rng, cell, reps):
    name, labels = cell
    tpr, tnr, rate = JUDGES[name]
    out = {"tpr": 0, "tnr": 0, "kappa": 0, "defined": 0, "rate": 0, "width": 0.0,
           "total": reps}
    for _ in range(reps):
        t, f, k, c, w = replicate(rng, tpr, tnr, rate, labels, RUN, int(rng.integers(2**31)))
        out["tpr"] += t
        out["tnr"] += f
        out["rate"] += c
        out["width"] += w
        if k is not None:
            out["defined"] += 1
            out["kappa"] += k
    return out


# ----------------------------------------------------------------------------- scores
#: human score shares on 1..5, and the share of items the judge scores one step off
SCORE_SETTINGS = [("uniform", (0.2,) * 5, 0.2), ("uniform", (0.2,) * 5, 0.6),
                  ("skewed", (0.02, 0.03, 0.1, 0.35, 0.5), 0.2),
                  ("skewed", (0.02, 0.03, 0.1, 0.35, 0.5), 0.08)]
SCORE_CELLS = [(i, n) for i in range(len(SCORE_SETTINGS)) for n in LABELS]


def score_table(shares: tuple[float, ...], off: float) -> np.ndarray:
    """P(judge = a, human = b) on 1..5: the judge one step up or down (½ each, kept on the
    scale) with probability `off`."""
    table = np.zeros((5, 5))
    for b, share in enumerate(shares):
        for step, p in ((-1, off / 2), (0, 1 - off), (1, off / 2)):
            table[min(max(b + step, 0), 4), b] += share * p
    return table


def weighted_kappa(table: np.ndarray) -> float:
    """The population's quadratic-weighted κ of a judge × human table of shares."""
    values = np.arange(1.0, 6.0)
    w = (values[:, None] - values[None, :]) ** 2
    expected = table.sum(axis=1) @ w @ table.sum(axis=0)
    return float(1 - (table * w).sum() / expected)


def population_rho(table: np.ndarray) -> float:
    """The population's Spearman ρ: the correlation of each rater's mid-distribution score
    P(X < x) + ½P(X = x), which a sample's ρ with midranks tends to."""
    rows, cols = table.sum(axis=1), table.sum(axis=0)
    fr, fc = np.cumsum(rows) - rows / 2, np.cumsum(cols) - cols / 2
    fr, fc = fr - rows @ fr, fc - cols @ fc
    return float(fr @ table @ fc / math.sqrt((rows @ fr**2) * (cols @ fc**2)))


def score_replicate(rng: np.random.Generator, table: np.ndarray, n: int, seed: int,
                    kappa: float, rho: float) -> tuple[bool | None, bool | None]:
    """n items from the joint table: whether weighted κ's and ρ's intervals hold the
    population's (None where undefined)."""
    from ix.stats.judges import score_agreement

    draw = rng.choice(25, size=n, p=table.ravel())
    s = score_agreement(draw // 5 + 1, draw % 5 + 1, level=LEVEL, seed=seed)
    k = None if math.isnan(s.kappa.lo) else bool(s.kappa.lo <= kappa <= s.kappa.hi)
    r = None if math.isnan(s.spearman.lo) else bool(s.spearman.lo <= rho <= s.spearman.hi)
    return k, r


def row_scores(rng, cell, reps):
    setting, n = cell
    _, shares, off = SCORE_SETTINGS[setting]
    table = score_table(shares, off)
    kappa, rho = weighted_kappa(table), population_rho(table)
    out = {"kappa": 0, "kappa_defined": 0, "rho": 0, "rho_defined": 0, "total": reps}
    for _ in range(reps):
        k, r = score_replicate(rng, table, n, int(rng.integers(2**31)), kappa, rho)
        if k is not None:
            out["kappa_defined"] += 1
            out["kappa"] += k
        if r is not None:
            out["rho_defined"] += 1
            out["rho"] += r
    return out


# ----------------------------------------------------------------------------- repeats
#: normal scores: output (between) variance, judge (within) variance
NORMAL_BETWEEN, NORMAL_WITHIN = 1.0, 0.5
#: 0/1 verdicts: each output's pass probability ~ Beta(a, b)
BINARY_A, BINARY_B = 0.4, 0.6
NOISE_CELLS = [("normal", 20, 3), ("normal", 50, 3), ("binary", 30, 3), ("binary", 100, 3),
               ("binary", 100, 5)]


def noise_truth(kind: str) -> tuple[float, float]:
    """(between-output variance, within-output judge variance) of a kind of judgement."""
    if kind == "normal":
        return NORMAL_BETWEEN, NORMAL_WITHIN
    mean, s = BINARY_A / (BINARY_A + BINARY_B), BINARY_A + BINARY_B
    between = mean * (1 - mean) / (s + 1)          # Var(p)
    return between, mean * (1 - mean) - between    # E[p(1 - p)]


def row_noise(rng, cell, reps):
    from ix.stats.judges import judge_noise

    kind, outputs, repeats = cell
    between, within = noise_truth(kind)
    icc = between / (between + within)
    icc_mean = between / (between + within / repeats)
    out = {"icc": 0, "icc_mean": 0, "within": 0.0, "within2": 0.0, "between": 0.0,
           "between2": 0.0, "total": reps}
    for _ in range(reps):
        if kind == "normal":
            level = rng.normal(0.0, math.sqrt(between), outputs)
            scores = level[:, None] + rng.normal(0.0, math.sqrt(within), (outputs, repeats))
        else:
            p = rng.beta(BINARY_A, BINARY_B, outputs)
            scores = (rng.random((outputs, repeats)) < p[:, None]).astype(float)
        if np.all(scores == scores[0, 0]):  # nothing varies: no interval; counted a miss
            continue
        j = judge_noise(scores.tolist(), level=LEVEL)
        out["icc"] += cal.inside(icc, (j.icc.lo, j.icc.hi))
        out["icc_mean"] += cal.inside(icc_mean, (j.icc_mean.lo, j.icc_mean.hi))
        out["within"] += j.within_var / within
        out["within2"] += (j.within_var / within) ** 2
        out["between"] += j.between_var / between
        out["between2"] += (j.between_var / between) ** 2
    return out


# ----------------------------------------------------------------------------- several judges
#: nominal: three judges' (TPR, TNR) on items that truly pass with ALPHA_RATE
ALPHA_JUDGES = ((0.90, 0.90), (0.85, 0.80), (0.75, 0.85))
ALPHA_RATE = 0.4
#: interval: each judge's offset, on a true score ~ N(0, 1) read with N(0, ALPHA_NOISE²) noise
ALPHA_OFFSETS = (-0.2, 0.0, 0.3)
ALPHA_NOISE = 0.6
MISSING = 0.1
ALPHA_CELLS = [(level, n) for level in ("nominal", "interval") for n in (30, 100)]


def population_alpha(level: str) -> float:
    """Krippendorff's α of the three judges over the whole population: 1 − D_o/D_e, D_o the
    mean disagreement of two judges on one unit, D_e that of two ratings drawn from the
    pooled ratings (missing at random changes neither)."""
    m = len(ALPHA_JUDGES)
    pairs = [(r, s) for r in range(m) for s in range(m) if r != s]
    if level == "nominal":
        pi = ALPHA_RATE

        def differ(a: float, b: float) -> float:
            return a * (1 - b) + (1 - a) * b

        observed = np.mean([pi * differ(ALPHA_JUDGES[r][0], ALPHA_JUDGES[s][0])
                            + (1 - pi) * differ(ALPHA_JUDGES[r][1], ALPHA_JUDGES[s][1])
                            for r, s in pairs])
        q = np.mean([pi * tpr + (1 - pi) * (1 - tnr) for tpr, tnr in ALPHA_JUDGES])
        return float(1 - observed / (2 * q * (1 - q)))
    b = np.array(ALPHA_OFFSETS)
    observed = 2 * ALPHA_NOISE**2 + np.mean([(b[r] - b[s]) ** 2 for r, s in pairs])
    return float(1 - observed / (2 * (1 + ALPHA_NOISE**2 + b.var())))


def row_alpha(rng, cell, reps):
    from ix.stats.judges import krippendorff_alpha

    level, n = cell
    truth = population_alpha(level)
    out = {"cover": 0, "total": reps}
    for _ in range(reps):
        if level == "nominal":
            passes = rng.random(n) < ALPHA_RATE
            ratings = np.stack([np.where(passes, rng.random(n) < tpr, rng.random(n) >= tnr)
                                for tpr, tnr in ALPHA_JUDGES], axis=1).astype(float)
        else:
            true = rng.normal(0.0, 1.0, n)
            ratings = (true[:, None] + np.array(ALPHA_OFFSETS)[None, :]
                       + rng.normal(0.0, ALPHA_NOISE, (n, len(ALPHA_OFFSETS))))
        ratings[rng.random(ratings.shape) < MISSING] = np.nan
        a = krippendorff_alpha(ratings, level, level=LEVEL, seed=int(rng.integers(2**31)))
        out["cover"] += cal.inside(truth, (a.lo, a.hi))
    return out


# ----------------------------------------------------------------------------- pairwise
#: each case's w = 0.15 + 0.7 Beta(a, b), so that w ± β stays in [0, 1]
PAIR_POPULATIONS = {"null": (2.0, 2.0), "better": (3.0, 1.5)}
PAIR_BIAS = {"null": 0.15, "better": 0.10}
PAIR_CELLS = [(pop, n) for pop in PAIR_POPULATIONS for n in (20, 50)]


def pair_truth(pop: str) -> tuple[float, float]:
    """(the variant's true win share, the true position bias) of a population."""
    a, b = PAIR_POPULATIONS[pop]
    return 0.15 + 0.7 * a / (a + b), PAIR_BIAS[pop]


def row_pairwise(rng, cell, reps):
    from ix.stats.judges import pairwise

    pop, n = cell
    share, bias = pair_truth(pop)
    a, b = PAIR_POPULATIONS[pop]
    out = {"share": 0, "bias": 0, "total": reps}
    for _ in range(reps):
        w = 0.15 + 0.7 * rng.beta(a, b, n)
        first = rng.random(n) < w + bias    # the variant shown first wins
        second = rng.random(n) < w - bias   # the variant shown second wins
        wins = np.stack([first, second], axis=1).astype(float).tolist()
        shown_first_won = np.stack([first, ~second], axis=1).ravel().tolist()
        p = pairwise(wins, shown_first_won, level=LEVEL)
        out["share"] += cal.inside(share, (p.share.lo, p.share.hi))
        assert p.position_bias is not None
        out["bias"] += cal.inside(bias, (p.position_bias.lo, p.position_bias.hi))
    return out


# ----------------------------------------------------------------------------- the module face
ROWS = {"judges_agreement": row_agreement, "judges_scores": row_scores,
        "judges_noise": row_noise, "judges_alpha": row_alpha,
        "judges_pairwise": row_pairwise}
CELLS = {"judges_agreement": AGREEMENT_CELLS, "judges_scores": SCORE_CELLS,
         "judges_noise": NOISE_CELLS, "judges_alpha": ALPHA_CELLS,
         "judges_pairwise": PAIR_CELLS}


def tasks(reps: int, quick: bool) -> list[tuple]:
    return cal.chunked(CELLS, reps)


def _key(row: str, cell) -> str:
    return f"{row}|{json.dumps(list(cell))}"


#: how a row names one of its cells
CELL_NAMES = {
    "judges_agreement": lambda c: f"{c[0]} judge, {c[1]} labels",
    "judges_scores": lambda c: f"{_score(c[0])}, {c[1]} items",
    "judges_noise": lambda c: f"{c[0]}, {c[1]} outputs x {c[2]} repeats",
    "judges_alpha": lambda c: f"{c[0]}, {c[1]} units",
    "judges_pairwise": lambda c: f"{c[0]}, {c[1]} cases"}
#: the coverages held to TARGET in every cell: (label, row, counter, denominator)
MINIMA = [("TPR", "judges_agreement", "tpr", "total"),
          ("TNR", "judges_agreement", "tnr", "total"),
          ("kappa", "judges_agreement", "kappa", "defined"),
          ("corrected rate", "judges_agreement", "rate", "total"),
          ("weighted kappa", "judges_scores", "kappa", "kappa_defined"),
          ("Spearman", "judges_scores", "rho", "rho_defined"),
          ("noise ICC", "judges_noise", "icc", "total"),
          ("noise ICC(1,k)", "judges_noise", "icc_mean", "total"),
          ("Krippendorff alpha", "judges_alpha", "cover", "total"),
          ("pairwise win share", "judges_pairwise", "share", "total"),
          ("pairwise position bias", "judges_pairwise", "bias", "total")]


def _worst(res: dict, row: str, num: str, den: str) -> tuple[str, bool | str]:
    """The lowest coverage over a row's cells, naming its cell, against TARGET."""
    got = {cell: cal.share(res, _key(row, cell), num, den) for cell in CELLS[row]}
    if any(x is None for x, _ in got.values()):
        return "n/a", False
    worst = min(got, key=lambda c: got[c][0])
    x, n = got[worst]
    return f"{cal.fmt(x)} ({CELL_NAMES[row](worst)})", cal.meets(x, n, TARGET, True)


def _cells(res: dict, row: str, cells, num: str, den: str = "total") -> str:
    return "/".join(cal.fmt(cal.share(res, _key(row, c), num, den)[0], 3) for c in cells)


def _detail(res: dict, row: str, cells, *parts: str) -> tuple[str, None]:
    """A reported line: each part's rate (`num` or `num/den`) over `cells`, parts split by
    " | "."""
    return " | ".join(_cells(res, row, cells, *part.split("/")) for part in parts), None


def _judge(name: str) -> str:
    tpr, tnr, rate = JUDGES[name]
    return f"{name} judge (TPR {tpr:g}, TNR {tnr:g}, pi {rate:g})"


def _score(i: int) -> str:
    name, _, off = SCORE_SETTINGS[i]
    return f"{name} human scores, judge off {off:.0%}"


def _unbiased(res: dict, cell, part: str) -> tuple[str, bool | str]:
    """The mean of an estimate / its truth, with its Monte Carlo standard error: unbiased
    when within three of 1."""
    r = res.get(_key("judges_noise", cell), {})
    n = r.get("total")
    if "error" in r or not n:
        return "n/a", False
    mean = r[part] / n
    se = math.sqrt(max(r[part + "2"] / n - mean * mean, 0.0) / n)
    return f"{mean:.3f} (MC se {se:.3f})", abs(mean - 1) <= 3 * se


def figures(res: dict) -> dict:
    out: dict[str, tuple[str, bool | str | None]] = {
        f"judge {name} coverage, min of {len(CELLS[row])} cells": _worst(res, row, num, den)
        for name, row, num, den in MINIMA}
    labels = "/".join(str(n) for n in LABELS)
    row = "judges_agreement"
    for name in JUDGES:
        cells = [c for c in AGREEMENT_CELLS if c[0] == name]
        out[f"judge agreement, {_judge(name)}, labels {labels}: TPR / TNR / kappa / "
            "corrected rate"] = _detail(res, row, cells, "tpr", "tnr", "kappa/defined", "rate")
        out[f"judge agreement, {name} judge: kappa defined / corrected rate width"] = (
            _detail(res, row, cells, "defined", "width"))
    for i in range(len(SCORE_SETTINGS)):
        cells = [c for c in SCORE_CELLS if c[0] == i]
        table = score_table(*SCORE_SETTINGS[i][1:])
        out[f"judge scores, {_score(i)} (kappa_w {weighted_kappa(table):.3f}, rho "
            f"{population_rho(table):.3f}), items {labels}: kappa_w / rho"] = _detail(
            res, "judges_scores", cells, "kappa/kappa_defined", "rho/rho_defined")
    for cell in NOISE_CELLS:
        between, within = noise_truth(cell[0])
        name = CELL_NAMES["judges_noise"](cell)
        out[f"judge noise, {name} (ICC {between / (between + within):.3f}): ICC / "
            "ICC(1,k) coverage"] = _detail(res, "judges_noise", [cell], "icc", "icc_mean")
        for part, what in (("within", f"judge variance {within:.3g}"),
                           ("between", f"output variance {between:.3g}")):
            out[f"judge noise variance estimate / truth, {name}, {what}"] = (
                _unbiased(res, cell, part))
    for level in ("nominal", "interval"):
        cells = [c for c in ALPHA_CELLS if c[0] == level]
        out[f"judge Krippendorff alpha, {level} (alpha {population_alpha(level):.3f}), "
            "3 judges, 10% missing, units 30/100"] = _detail(res, "judges_alpha", cells,
                                                             "cover")
    for pop in PAIR_POPULATIONS:
        cells = [c for c in PAIR_CELLS if c[0] == pop]
        share, bias = pair_truth(pop)
        out[f"judge pairwise, {pop} (share {share:.3f}, bias {bias:g}), both orders, cases "
            "20/50: share / bias"] = _detail(res, "judges_pairwise", cells, "share", "bias")
    return out


TARGETS = {"judge TPR coverage": ">= 0.93", "judge TNR coverage": ">= 0.93",
           "judge kappa coverage": ">= 0.93", "judge corrected rate coverage": ">= 0.93",
           "judge weighted kappa coverage": ">= 0.93", "judge Spearman coverage": ">= 0.93",
           "judge noise ICC": ">= 0.93", "judge noise variance": "1 within 3 MC se",
           "judge Krippendorff alpha coverage": ">= 0.93",
           "judge pairwise win share coverage": ">= 0.93",
           "judge pairwise position bias coverage": ">= 0.93"}
