"""Calibration rows of issue 32's perturbation families (item 9), loaded by
`benchmarks/calibration.py`:

    .venv/bin/python benchmarks/calibration.py --rows families_ --reps 1000

Each original prompt of a population has a rate p_o ~ U(0, 1); each of its k rewordings keeps
p_o with probability `SAME` (0.7) and otherwise draws its own rate from U(0, 1): rewordings of
one prompt mostly behave alike, and every rewording's rate is still U(0, 1) marginally, so the
population's activation rate is 0.5 and (K odd) so is its majority-vote recall.

- `families_rate`: `variants:` (G originals, each run only as its k rewordings, K = 5 trials):
  coverage of 0.5 by `trial_level.must_trigger.ci` (activation rate) and `metrics.recall_ci`
  (majority votes), (G, k) in {(5, 3), (10, 3), (10, 5), (20, 3)}. Target >= 0.93 in every
  cell.
- `families_diff`: two subjects on the same rewordings, the second redrawing 40% of the
  families (new p_o and rewordings) from the same population: a global null. Coverage of 0 by
  `comparisons[0].metrics.{activation_rate,recall}.diff_ci`. Target >= 0.93.
- `families_robust`: `probe: paraphrase` (each original runs beside its k paraphrases);
  a paraphrase that does not keep p_o draws its rate from Beta(2, 3) (mean 0.4), so the true
  perturbed − original difference of the mean rate is (1 − SAME)(0.4 − 0.5) = −0.03. Coverage
  by `subjects[0].robustness.diff_ci`. Target >= 0.93 (n/a before: ix reported none).

Feature-detected: the version before issue 32 has every field but `robustness` (and counts
each rewording as a case). Runs go through `summarise_tallies` with per-case `Tally`s.
"""

import contextlib
import json

import numpy as np

import calibration as cal

SAME = 0.7
K = 5
RATE_CELLS = [(5, 3), (10, 3), (10, 5), (20, 3)]
DIFF_CELLS = [(5, 3), (10, 3), (20, 5)]
ROBUST_CELLS = [(5, 3), (10, 3), (20, 3)]
ROBUST_TRUTH = (1 - SAME) * (0.4 - 0.5)
REDRAW = 0.4


def variant_cases(g: int, k: int) -> list:
    """`variants:`: original o's rewordings `m{o}~1` … `m{o}~k` (the original does not run)."""
    from ix.eval.models import EvalCase

    return [EvalCase(id=f"m{o:03d}~{j}", prompt="p", expectation="must_trigger",
                     metadata={"variant_of": f"m{o:03d}"})
            for o in range(g) for j in range(1, k + 1)]


def paraphrase_cases(g: int, k: int) -> list:
    """`probe: paraphrase`: each original `m{o}` followed by its paraphrases `m{o}~p1` …"""
    from ix.eval.models import EvalCase

    out = []
    for o in range(g):
        out.append(EvalCase(id=f"m{o:03d}", prompt="p", expectation="must_trigger"))
        out += [EvalCase(id=f"m{o:03d}~p{j}", prompt="p", expectation="must_trigger",
                         metadata={"paraphrase_of": f"m{o:03d}"}) for j in range(1, k + 1)]
    return out


def rewordings(rng: np.random.Generator, base: np.ndarray, k: int, other=None) -> np.ndarray:
    """(G, k) rates: each keeps its original's rate with probability SAME, else draws from
    `other` (U(0, 1) by default)."""
    g = len(base)
    fresh = rng.random((g, k)) if other is None else other(rng, (g, k))
    return np.where(rng.random((g, k)) < SAME, base[:, None], fresh)


def trials(rng: np.random.Generator, rates: np.ndarray) -> np.ndarray:
    flat = rates.reshape(-1)
    return rng.random((len(flat), K)) < flat[:, None]


@contextlib.contextmanager
def no_pass_k():
    """pass@k and its intervals stubbed out (half the time of a summary; not read here)."""
    import ix.eval.summary as summ

    old = summ.pass_k
    summ.pass_k = lambda *a, **k: {"pass_at_k": {}, "pass_hat_k": {}}
    try:
        yield
    finally:
        summ.pass_k = old


def read_rate(s):
    block = s["subjects"][0]
    return {"act": block["trial_level"]["must_trigger"].get("ci"),
            "act_rate": block["trial_level"]["must_trigger"].get("rate"),
            "recall": block["metrics"].get("recall_ci"),
            "recall_value": block["metrics"].get("recall")}


def row_families_rate(rng, cell, reps):
    g, k = cell
    cases = variant_cases(g, k)
    out = {"act": 0, "recall": 0, "hold": 0, "total": reps}
    for _ in range(reps):
        x = trials(rng, rewordings(rng, rng.random(g), k))
        with cal.only(None, False), no_pass_k():
            got = read_rate(cal.summarise(cases, {"a": x}, K))
        act, rec = cal.lohi(got["act"]), cal.lohi(got["recall"])
        out["act"] += cal.inside(0.5, act)
        out["recall"] += cal.inside(0.5, rec)
        out["hold"] += (cal.inside(cal.value(got["act_rate"]), act)
                        and cal.inside(cal.value(got["recall_value"]), rec))
    return out


def read_diff(s):
    return {m: cal.comparison(s, m).get("diff_ci") for m in ("activation_rate", "recall")}


def row_families_diff(rng, cell, reps):
    g, k = cell
    cases = variant_cases(g, k)
    out = {"act": 0, "recall": 0, "total": reps}
    for _ in range(reps):
        base = rng.random(g)
        control = rewordings(rng, base, k)
        redrawn = rng.random(g) < REDRAW
        fresh = rewordings(rng, rng.random(g), k)
        variant = np.where(redrawn[:, None], fresh, control)
        with cal.only(("activation_rate", "recall"), False):
            got = read_diff(cal.summarise(cases, {"c": trials(rng, control),
                                                  "v": trials(rng, variant)}, K))
        out["act"] += cal.inside(0.0, cal.lohi(got["activation_rate"]))
        out["recall"] += cal.inside(0.0, cal.lohi(got["recall"]))
    return out


def row_families_robust(rng, cell, reps):
    g, k = cell
    cases = paraphrase_cases(g, k)
    out = {"cover": 0, "hold": 0, "total": reps}
    for _ in range(reps):
        base = rng.random(g)
        para = rewordings(rng, base, k, other=lambda r, shape: r.beta(2, 3, shape))
        rates = np.concatenate([base[:, None], para], axis=1)  # original, then paraphrases
        with cal.only(("activation_rate",), False):
            s = cal.summarise(cases, {"a": trials(rng, rates)}, K)
        r = s["subjects"][0]["robustness"]  # KeyError before issue 32: the row is n/a
        ci = cal.lohi(r["diff_ci"])
        out["cover"] += cal.inside(ROBUST_TRUTH, ci)
        out["hold"] += cal.inside(cal.value(r["diff"]), ci)
    return out


ROWS = {"families_rate": row_families_rate, "families_diff": row_families_diff,
        "families_robust": row_families_robust}


def tasks(reps: int, quick: bool) -> list[tuple]:
    return cal.chunked({"families_rate": RATE_CELLS,
                        "families_diff": DIFF_CELLS,
                        "families_robust": ROBUST_CELLS}, reps)


def _rates(res: dict, row: str, cells: list, num: str) -> dict:
    out = {}
    for cell in cells:
        out[cell] = cal.share(res, f"{row}|{json.dumps(list(cell))}", num)
    return out


def _worst(label: str, rates: dict, out: dict) -> None:
    if any(v is None for v, _ in rates.values()):
        out[label] = ("n/a", False)
        return
    worst = min(rates, key=lambda c: rates[c][0])
    low, total = rates[worst]
    out[label] = (f"{cal.fmt(low)} (G={worst[0]}, k={worst[1]}; "
                  + "/".join(cal.fmt(v, 2) for v, _ in rates.values()) + ")",
                  cal.meets(low, total, 0.93, True))


def figures(res: dict) -> dict:
    out: dict[str, tuple[str, bool | None]] = {}
    cells = "G,k = 5,3/10,3/10,5/20,3"
    _worst(f"families activation ci coverage, min ({cells})",
           _rates(res, "families_rate", RATE_CELLS, "act"), out)
    _worst(f"families recall_ci coverage, min ({cells})",
           _rates(res, "families_rate", RATE_CELLS, "recall"), out)
    hold = [v for v, _ in _rates(res, "families_rate", RATE_CELLS, "hold").values()]
    out["families intervals contain their estimates, min"] = (
        cal.fmt(min(hold)) if None not in hold else "n/a", None not in hold and min(hold) == 1)
    cells = "G,k = 5,3/10,3/20,5"
    _worst(f"families activation diff_ci coverage, null, min ({cells})",
           _rates(res, "families_diff", DIFF_CELLS, "act"), out)
    _worst(f"families recall diff_ci coverage, null, min ({cells})",
           _rates(res, "families_diff", DIFF_CELLS, "recall"), out)
    cells = "G=5/10/20, k=3"
    _worst(f"families robustness diff_ci coverage, min ({cells})",
           _rates(res, "families_robust", ROBUST_CELLS, "cover"), out)
    hold = [v for v, _ in _rates(res, "families_robust", ROBUST_CELLS, "hold").values()]
    out["families robustness diff_ci contains diff, min"] = (
        cal.fmt(min(hold)) if None not in hold else "n/a", None not in hold and min(hold) == 1)
    return out


TARGETS = {"families activation ci coverage": ">= 0.93",
           "families recall_ci coverage": ">= 0.93",
           "families intervals contain": "1.000",
           "families activation diff_ci coverage": ">= 0.93",
           "families recall diff_ci coverage": ">= 0.93",
           "families robustness diff_ci coverage": ">= 0.93",
           "families robustness diff_ci contains": "1.000"}
