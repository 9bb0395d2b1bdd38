"""Calibration rows of issue 39's curriculum (`curriculum:`), loaded by
`benchmarks/calibration.py`:

    .venv/bin/python benchmarks/calibration.py --rows frontier_ --only after --reps 1000

- `frontier_adaptive`: a subject whose trials succeed with probability
  logistic(a·(θ − difficulty)) on easy 1, medium 2, hard 3, run by the curriculum's own rule
  (`ix.eval.frontier.next_step`: the next trial where it informs most, a stop at the interval
  width `stop_width` or at `max_trials`): coverage of the 95% frontier interval at the stop
  (target >= 0.93), the mean trials used, and the share of subjects that settled. θ is drawn
  uniform over [1.2, 2.8] per replication, a is fixed per cell.
- `frontier_fixed`: the same subject at a fixed design (m trials at each level), θ fixed
  per cell: coverage (target >= 0.93).

Trials are independent given their difficulty (the model's assumption).
"""

import json

import numpy as np

import calibration as cal

LEVELS = [1.0, 2.0, 3.0]
ADAPTIVE_CELLS = [(2.0, 0.75, 60), (1.0, 1.0, 60), (4.0, 0.5, 90)]
FIXED_CELLS = [(1.5, 2.0, 5), (2.0, 2.0, 10), (2.9, 1.0, 20)]


def _p(theta: float, slope: float, x: float) -> float:
    return float(1 / (1 + np.exp(-slope * (theta - x))))


def row_adaptive(rng, cell, reps):
    from ix.eval.frontier import Curriculum, next_step
    from ix.stats.frontier import frontier

    slope, width, most = cell
    rule = Curriculum("difficulty", width, most)
    cover = settled = used = 0
    for _ in range(reps):
        theta = float(rng.uniform(1.2, 2.8))
        counts: dict[float, list[int]] = {}
        trials = 0
        while not isinstance(step := next_step(rule, counts, LEVELS, trials, 1.0), str):
            c = counts.setdefault(step, [0, 0])
            c[0] += bool(rng.random() < _p(theta, slope, step))
            c[1] += 1
            trials += 1
        xs = sorted(counts)
        f = frontier(xs, [counts[x][0] for x in xs], [counts[x][1] for x in xs])
        cover += f.lo <= theta <= f.hi
        settled += step == "settled"
        used += trials
    return {"cover": cover, "settled": settled, "used": used, "total": reps}


def row_fixed(rng, cell, reps):
    from ix.stats.frontier import frontier

    theta, slope, m = cell
    cover = 0
    for _ in range(reps):
        k = [int(rng.binomial(m, _p(theta, slope, x))) for x in LEVELS]
        f = frontier(LEVELS, k, [m] * 3)
        cover += f.lo <= theta <= f.hi
    return {"cover": cover, "total": reps}


ROWS = {"frontier_adaptive": row_adaptive, "frontier_fixed": row_fixed}


def tasks(reps: int, quick: bool) -> list[tuple]:
    return cal.chunked({"frontier_adaptive": ADAPTIVE_CELLS, "frontier_fixed": FIXED_CELLS},
                       reps)


def _get(res: dict, row: str, cell) -> dict:
    r = res.get(f"{row}|{json.dumps(list(cell))}", {})
    return {} if "error" in r or not r.get("total") else r


def figures(res: dict) -> dict:
    out: dict[str, tuple[str, bool | None]] = {}
    for cell in ADAPTIVE_CELLS:
        r = _get(res, "frontier_adaptive", cell)
        label = (f"frontier_ adaptive coverage, slope {cell[0]:g}, stop_width {cell[1]:g}, "
                 f"max_trials {cell[2]}")
        if not r:
            out[label] = ("n/a", False)
            continue
        cov = r["cover"] / r["total"]
        out[label] = (f"{cal.fmt(cov)} (mean {r['used'] / r['total']:.1f} trials, "
                      f"{cal.fmt(r['settled'] / r['total'])} settled)",
                      cal.meets(cov, r["total"], 0.93, True))
    for cell in FIXED_CELLS:
        r = _get(res, "frontier_fixed", cell)
        label = f"frontier_ fixed-design coverage, theta {cell[0]:g}, slope {cell[1]:g}, " \
                f"{cell[2]} per level"
        if not r:
            out[label] = ("n/a", False)
            continue
        cov = r["cover"] / r["total"]
        out[label] = (cal.fmt(cov), cal.meets(cov, r["total"], 0.93, True))
    return out


TARGETS = {"frontier_ adaptive coverage": ">= 0.93", "frontier_ fixed-design coverage": ">= 0.93"}
