"""Calibration rows of issue 32's reachability and one sizing function (items 3 and 4),
loaded by `benchmarks/calibration.py`:

    .venv/bin/python benchmarks/calibration.py --rows reach_ --reps 1000

- `reach_floor`: a control at the bound the goal's direction moves towards — recall (K = 3,
  18 must + 6 should-not cases) at 0 with "recall falls by more than 0.05", the same at 1
  with "rises by more than 0.05", and the must activation rate at 0 with "falls by more than
  0.1". The treatment equals the control on 80% of the cases and moves 20% of them the
  possible way (a rise from 0, a fall from 1), so the goal's direction is impossible. The
  share of runs whose verdict is supported (target 0.000) and whose summary says only
  refuted is reachable (`goal.reachable.verdicts`; target 1.000; 623c023 has no field: n/a).
- `reach_promise`: the same runs with the suggestion an inconclusive one carries, and
  `ix plan EXPERIMENT --effect -2m` (+2m) from each run's summary through the API
  (`--effect` because 623c023's `ix plan` exits 2 on a run whose rates are all 0 before it
  reaches the goal): the share that promise the unreachable verdict — a size whose
  simulated P(supported) is at least 0.05. Target 0.00 in every cell that has such runs
  (a must activation rate at 0 against a treatment that can only rise is always refuted:
  no suggestion).
- `reach_capped`: the suggestion's printed P(settle) against simulation where the assumed
  effect (2m) is more than the control leaves: control must-case rates 70% from U(0, 0.1),
  30% from U(0.7, 1) (K = 5: true recall 0.29), the treatment never activates (true effect
  −0.29: everything the control has), goal "recall falls by more than 0.2" (2m = 0.4).
  One task = the first inconclusive 20-case run of a seed, then `reps` runs of the suggested
  size from the truth judged by ix; as the `suggest` row, target gap <= 0.05.

Feature-detected: fields 623c023 lacks print "n/a"; its `plan_power` is called the same way.
"""

import json
import tempfile
from pathlib import Path

import numpy as np

import calibration as cal

FLOOR_CELLS = [("recall", "decrease", 0.0), ("recall", "increase", 1.0),
               ("activation_rate", "decrease", 0.0)]
N_MUST, N_NOT, K = 18, 6, 3
M = {"recall": 0.05, "activation_rate": 0.1}
CAPPED_K, CAPPED_N0, CAPPED_M = 5, 20, 0.2


def _goal(metric: str, direction: str) -> dict:
    return {"hypothesis": "h", "metric": metric, "direction": direction,
            "min_effect": M[metric], "credibility": 0.95}


def _floor_run(rng, cell):
    """One run's trials: control at its bound on must cases, treatment the same on 80%."""
    bound = cell[2]
    n = N_MUST + N_NOT
    must = np.arange(n) < N_MUST
    pc = np.where(must, bound, 0.05)
    moved = rng.random(n) < 0.2
    away = rng.uniform(0.0, 0.4, n)
    pt = np.where(must & moved, np.abs(bound - away), pc)
    return {"control": rng.random((n, K)) < pc[:, None],
            "treatment": rng.random((n, K)) < pt[:, None]}


def read_reach(s):
    g = s.get("goal") or {}
    reach = g.get("reachable")
    return {"verdict": g.get("verdict"),
            "reachable": None if reach is None else reach.get("verdicts")}


def row_reach_floor(rng, cell, reps):
    metric = cell[0]
    cases = cal.make_cases(N_MUST, N_NOT)
    get = cal.Checked(f"reach_floor_{metric}", (metric,), read_reach)
    supported = only_refuted = measured = 0
    for _ in range(reps):
        got = get(cases, _floor_run(rng, cell), K, goal=_goal(metric, cell[1]))
        supported += got["verdict"] == "supported"
        if got["reachable"] is not None:
            measured += 1
            only_refuted += got["reachable"] == ["refuted"]
    return {"supported": supported, "only_refuted": only_refuted, "measured": measured,
            "total": reps, "fast": get.ok}


def _lab(tmp: Path, goal: dict) -> Path:
    """An experiment `e` whose latest summary a replication writes (mock subjects)."""
    exp = tmp / "e"
    (exp / "cases").mkdir(parents=True)
    (exp / "results").mkdir()
    g = "\n".join(f"  {k}: {v}" for k, v in goal.items())
    (exp / "experiment.yaml").write_text(
        f"name: e\ntrials: {K}\nsensor: {{kind: activation, skill: a}}\nsubjects:\n"
        "  - {name: control, runtime: {kind: mock}}\n"
        "  - {name: treatment, runtime: {kind: mock}}\n"
        f"goal:\n{g}\n  compare: [control, treatment]\n", encoding="utf-8")
    for c in cal.make_cases(N_MUST, N_NOT):
        (exp / "cases" / f"{c.id}.md").write_text(
            f"---\nid: {c.id}\nexpectation: {c.expectation}\n---\nDo {c.id}\n", encoding="utf-8")
    return exp


def _promises(p_supported) -> bool:
    return p_supported is not None and p_supported >= 0.05


def row_reach_promise(rng, cell, reps):
    """The suggestion and `ix plan` on inconclusive runs: do they promise `supported`?"""
    from ix.api.power_plan import plan_power

    metric, direction, _ = cell
    goal = _goal(metric, direction)
    effect = 2 * goal["min_effect"] * (-1 if direction == "decrease" else 1)
    cases = cal.make_cases(N_MUST, N_NOT)
    get = cal.Checked(f"reach_promise_{metric}", (metric,), cal.read_goal, suggestion=True)
    runs = sugg_promised = suggested = plan_promised = planned = 0
    errors: list[str] = []
    with tempfile.TemporaryDirectory(prefix="ix-reach-") as tmp:
        exp = _lab(Path(tmp), goal)
        while runs < reps:
            trials = _floor_run(rng, cell)
            with cal.only(None, True):
                s = cal.summarise(cases, trials, K, goal=goal)
            g = s.get("goal") or {}
            runs += 1
            sugg = g.get("suggestion") or {}
            if sugg.get("cases") is not None:       # an inconclusive run's suggestion
                suggested += 1
                sugg_promised += _promises(sugg.get("p_supported"))
            (exp / "results" / "summary-latest.json").write_text(json.dumps(s),
                                                                 encoding="utf-8")
            try:
                answers = plan_power(tmp, "e", effect=effect)["answers"]
            except Exception as exc:  # a version that refuses: counted apart
                errors.append(f"{type(exc).__name__}: {exc}"[:120])
                continue
            a = next(x for x in answers if x["question"] == "goal")
            if a.get("cases") is not None:
                planned += 1
                plan_promised += _promises(a.get("p_supported"))
    del get
    return {"runs": runs, "suggested": suggested, "sugg_promised": sugg_promised,
            "planned": planned, "plan_promised": plan_promised, "plan_errors": len(errors),
            "total": runs}


def row_reach_capped(rng, cell, reps):
    """reps = settling simulations of one suggestion (one task = one inconclusive run)."""
    goal = {"metric": "recall", "direction": "decrease", "min_effect": CAPPED_M,
            "credibility": 0.95}
    k = CAPPED_K

    def run(n):
        high = rng.random(n) < 0.3
        pc = np.where(high, rng.uniform(0.7, 1.0, n), rng.uniform(0.0, 0.1, n))
        return {"control": rng.random((n, k)) < pc[:, None],
                "treatment": np.zeros((n, k), dtype=bool)}

    first = cal.Checked("reach-capped-first", ("recall",), cal.read_goal, suggestion=True)
    again = cal.Checked("reach-capped-again", ("recall",), cal.read_verdict)
    cases0 = cal.make_cases(CAPPED_N0)
    for _ in range(200):
        g = first(cases0, run(CAPPED_N0), k, goal=goal)
        if g["verdict"] == "inconclusive" and (g["suggestion"] or {}).get("cases"):
            break
    else:
        return {"runs": [None]}
    sugg = g["suggestion"]
    n = int(sugg["cases"])
    printed, key = cal.settle_probability(sugg)
    cases = cal.make_cases(n)
    settled = sum(again(cases, run(n), k, goal=goal)["verdict"] in ("supported", "refuted")
                  for _ in range(reps))
    # lists: `combined` sums numbers across a row's chunks but keeps lists whole
    return {"runs": [{"n": n, "printed": printed, "key": key, "settled": settled,
                      "total": reps, "effect": sugg.get("effect")}],
            "fast": first.ok and again.ok}


ROWS = {"reach_floor": row_reach_floor, "reach_promise": row_reach_promise,
        "reach_capped": row_reach_capped}


def tasks(reps: int, quick: bool) -> list[tuple]:
    out = []
    for cell in FLOOR_CELLS:
        for i, start in enumerate(range(0, reps, cal.CHUNK)):
            out.append(("reach_floor", list(cell), i, min(cal.CHUNK, reps - start)))
        total = max(4, reps // 25)
        for i, start in enumerate(range(0, total, 5)):
            out.append(("reach_promise", list(cell), i, min(5, total - start)))
    for seed in range(3 if quick else 12):
        out.append(("reach_capped", None, seed, 5 if quick else 30))
    return out


def _share(res: dict, key: str, num: str, den: str):
    return cal.share(res, key, num, den)


def _label(cell) -> str:
    metric, direction, bound = cell
    return f"{metric} {direction} from {bound:g}"


def figures(res: dict) -> dict:
    out: dict[str, tuple[str, bool | None]] = {}
    for cell in FLOOR_CELLS:
        key = f"reach_floor|{json.dumps(list(cell))}"
        sup, _ = _share(res, key, "supported", "total")
        out[f"reach: verdict supported, {_label(cell)}"] = (
            cal.fmt(sup), sup is not None and sup == 0.0)
        only, _ = _share(res, key, "only_refuted", "total")
        field = res.get(key, {}).get("measured")
        out[f"reach: says only refuted is reachable, {_label(cell)}"] = (
            cal.fmt(only) if field else "n/a (no field)", bool(field) and only == 1.0)
    for who, num, den in (("suggestion", "sugg_promised", "suggested"),
                          ("ix plan", "plan_promised", "planned")):
        parts, ok, seen = [], True, 0
        for cell in FLOOR_CELLS:
            key = f"reach_promise|{json.dumps(list(cell))}"
            r = res.get(key, {})
            share, n = _share(res, key, num, den)
            if "error" in r or not r.get("runs"):
                parts.append("n/a")
                ok = False
                continue
            errors = r.get("plan_errors") if who == "ix plan" else 0
            parts.append(("none" if share is None else f"{cal.fmt(share, 2)} of {n}")
                         + (f" ({errors} exit 2)" if errors else ""))
            seen += share is not None
            ok = ok and (share is None or share == 0.0)
        out[f"reach: {who} promises supported (P >= 0.05), 3 cells"] = (
            " / ".join(parts), ok and seen > 0)
    capped = res.get("reach_capped|null", {})
    sugg = [c for c in capped.get("runs", []) if c and c.get("n")]
    if "error" in capped:
        sugg = [{"error": capped["error"]}]
    out.update(_capped(sugg))
    return out


def _gap(sugg: list) -> tuple[float | None, float | None]:
    if not sugg:
        return None, None
    settled = sum(c["settled"] for c in sugg) / sum(c["total"] for c in sugg)
    return cal.mean([c["printed"] for c in sugg]), settled


def _capped(sugg: list) -> dict:
    label = "reach: capped suggestion, printed P(settle) - simulated"
    if not sugg or any("error" in c for c in sugg):
        return {"reach: capped suggestion settles (simulated)": ("n/a", None),
                label: ("n/a", False)}
    printed, settled = _gap(sugg)
    ns = sorted(c["n"] for c in sugg)
    out = {"reach: capped suggestion settles (simulated)": (
        f"{cal.fmt(settled, 2)} (n {ns[0]}-{ns[-1]}, {len(sugg)} runs)", None),
        label: (f"{cal.fmt(printed, 2)}-{cal.fmt(settled, 2)}" if printed is not None
                else "not printed", printed is not None and printed - settled <= 0.05)}
    # One-sided: the harm is a promise the runs do not keep (before: printed 0.82, settled
    # 0.36); a printed chance below the simulated one (a control drawn near the boundary,
    # where nothing settles, weighs in the average) under-promises, and is shown as it is.
    # split: runs whose plan kept 2m (conditioned on populations with room for it) and runs
    # whose plan capped it (a mean effect above -2m)
    for name, part in (("planned at 2m", [c for c in sugg if c.get("effect") is not None
                                          and c["effect"] <= -2 * CAPPED_M + 1e-6]),
                       ("capped", [c for c in sugg if c.get("effect") is not None
                                   and c["effect"] > -2 * CAPPED_M + 1e-6])):
        p, st = _gap(part)
        out[f"reach: capped row, {name}: printed - simulated"] = (
            f"{cal.fmt(p, 2)}-{cal.fmt(st, 2)} ({len(part)} runs)" if part else "none", None)
    return out


TARGETS = {"reach: verdict supported": "0.000", "reach: says only refuted": "1.000",
           "reach: suggestion promises": "0.00 each", "reach: ix plan promises": "0.00 each",
           "reach: capped suggestion settles": "",
           "reach: capped suggestion, printed": "printed - simulated <= 0.05",
           "reach: capped row": ""}
