"""Calibration rows of issue 32's factorial comparisons (item 2, the context half of item 6
and the flipped-case half of item 1), loaded by `benchmarks/calibration.py`:

    .venv/bin/python benchmarks/calibration.py --rows factorial_ --reps 1000

- `factorial_context_fwer`: one subject at 5 context lengths (0, 8, 32, 64, 128) with no
  decline: each case's rate at the shortest length from the realistic mix of
  `calibration.MIX`, and at every longer length 40% of the cases redrawn from the same mix
  (the population's mean rate is the same at every length; trials drawn independently at each
  length, as different prompts draw). The share of runs in which the report calls any length a
  decline: `p_value_holm` < 0.05 with a negative difference (623c023, which has no adjusted
  p: the printed P(lower) >= 0.95). Target <= 0.05.
- `factorial_interaction`: a control and a variant at 4 lengths (0, 8, 32, 128), both linear
  in x = log2(1 + length) case by case, unclipped (rates stay inside [0, 1]), so the true
  interaction — the mean over the population of cases of (variant's slope − control's) — is
  exactly the mean of the per-case slope differences, `DELTA`. Cases: control rate at length
  0 ~ U(0.55, 0.90), slope ~ U(−0.04, 0); the variant starts up to 0.05 lower and its slope
  differs by DELTA + U(−0.01, 0.01). Trials with common random numbers (one uniform per case
  and trial for both subjects at every length, as `seeding: common` and the mock runtime draw)
  or independent draws. Coverage of the interaction's `diff_ci` (target >= 0.93), and under
  no interaction (DELTA = 0) the share of runs printing P(declines faster) >= 0.95 (target
  <= 0.05). 623c023 has no interaction: n/a.
- `factorial_flips_null`: two subjects with the same case rates (must cases from the mix,
  should-not cases from its mirror image) drawing independently — real subjects are not
  deterministic, so common random numbers do not make them identical. The share of runs
  listing any case as flipped beyond trial noise (623c023 lists every change of majority
  vote as flipped). Target <= 0.05 (per run: one comparison).

Runs are driven through `summarise_tallies` with the `context` its engine passes; the parts of
the summary a row does not read (trial-level intervals, pass@k, the other metrics'
comparisons) are skipped once the first replication of a worker read the same from the full
summary (`read`).
"""

import contextlib
import json

import numpy as np

import calibration as cal

CONTEXT_LENGTHS = (0, 8, 32, 64, 128)
CONTEXT_CELLS = [(10, 5), (20, 10), (50, 5)]
INTERACTION_LENGTHS = (0, 8, 32, 128)
DELTA = -0.02
#: (cases, trials, true interaction, draws)
INTERACTION_CELLS = [(10, 5, DELTA, "common"), (20, 5, DELTA, "common"),
                     (20, 10, DELTA, "independent"), (10, 5, 0.0, "common"),
                     (20, 5, 0.0, "common"), (20, 5, 0.0, "independent")]
FLIP_CELLS = [(20, 5), (20, 10), (50, 5), (100, 3)]

#: row -> whether the restricted summary read the same as the full one (`cal.checked`)
VERIFIED = cal.VERIFIED


def summarise(cases, runs: dict, trials: int, lengths=None) -> dict:
    """One run: `runs` maps subject -> (cases, trials) outcomes; with `lengths`, each subject
    name is `<subject>[ctx=<length>]` and the run has `context:`."""
    from ix.eval.run_summary import summarise_tallies

    tallies = {name: cal.make_tally(cases, rows) for name, rows in runs.items()}
    context = None
    if lengths is not None:
        of = {}
        for name in runs:
            subject, length = name[:-1].rsplit("[ctx=", 1)
            of[name] = [subject, int(length)]
        context = {"prefix": "calibration", "unit": "turns", "lengths": list(lengths),
                   "of": of}
    return summarise_tallies(
        experiment_name="calibration", run_id="r", run_status="completed",
        subjects=[(name, "") for name in runs], tallies=tallies, cases=cases,
        trials_per_case=trials, info={}, context=context)


@contextlib.contextmanager
def light():
    """Only the activation-rate comparison, and the subject blocks without their costly
    intervals (trial-level rates stubbed with the keys the context block reads, no pass@k)."""
    import ix.eval.summary as summ

    stub = {"rate": None, "ci": [None, None]}
    patches = {"trial_level_rates": lambda *a, **k: {"must_trigger": stub,
                                                     "should_not_trigger": stub,
                                                     "correct": stub},
               "pass_k": lambda *a, **k: {"pass_at_k": {}, "pass_hat_k": {}}}
    saved = {name: getattr(summ, name) for name in patches if hasattr(summ, name)}
    with cal.only(("activation_rate",)):
        for name in saved:
            setattr(summ, name, patches[name])
        try:
            yield
        finally:
            for name, old in saved.items():
                setattr(summ, name, old)


def read(row: str, fields, *args, **kwargs):
    """`fields` of the summary, computed `light`ly once a worker's first replication read
    the same from the full summary (else, or where the restriction fails, from the full)."""
    def full():
        with cal.only(None, False):
            return fields(summarise(*args, **kwargs))

    def restricted():
        with light():
            return fields(summarise(*args, **kwargs))

    return cal.checked(row, restricted, full)


# ----------------------------------------------------------------------------- context FWER
def read_declines(s):
    """Does the report call any length a decline? (p_value_holm where the version has it,
    else the printed P(lower) >= 0.95.)"""
    out = []
    for v in s["context"]["subjects"][0]["versus_shortest"]:
        if "p_value_holm" in v:
            p, d = v.get("p_value_holm"), v.get("diff")
            out.append(p is not None and d is not None and p < 0.05 and d < 0)
        else:
            out.append(v.get("p_lower") is not None and v["p_lower"] >= 0.95)
    return {"declines": out, "adjusted": all("p_value_holm" in v for v in
                                             s["context"]["subjects"][0]["versus_shortest"])}


def row_context_fwer(rng, cell, reps):
    n, k = cell
    cases = cal.make_cases(n)
    names = [f"s[ctx={length}]" for length in CONTEXT_LENGTHS]
    rejected, adjusted = 0, True
    for _ in range(reps):
        p0 = cal.draw_mix(rng, n)
        runs = {}
        for i, name in enumerate(names):
            p = p0 if i == 0 else np.where(rng.random(n) < 0.4, cal.draw_mix(rng, n), p0)
            runs[name] = rng.random((n, k)) < p[:, None]
        got = read("factorial_context_fwer", read_declines, cases, runs, k, CONTEXT_LENGTHS)
        rejected += any(got["declines"])
        adjusted = adjusted and got["adjusted"]
    return {"rejected": rejected, "total": reps, "adjusted": adjusted,
            "fast": VERIFIED.get("factorial_context_fwer", True)}


# ----------------------------------------------------------------------------- interaction
def read_interaction(s):
    for subject in s["context"]["subjects"]:
        i = subject.get("interaction")
        if i is not None:
            return {"diff": i.get("diff"), "ci": i.get("diff_ci"), "p_lower": i.get("p_lower")}
    raise KeyError("no interaction in this version's summary")


def interaction_rates(rng, n: int, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """(control, variant) true rates, (cases, lengths): linear in log2(1 + length)."""
    x = np.log2(1.0 + np.array(INTERACTION_LENGTHS, dtype=float))
    start = rng.uniform(0.55, 0.90, n)
    slope = rng.uniform(-0.04, 0.0, n)
    control = start[:, None] + slope[:, None] * x[None, :]
    v_start = start - 0.05 * rng.random(n)
    v_slope = slope + delta + rng.uniform(-0.01, 0.01, n)
    variant = v_start[:, None] + v_slope[:, None] * x[None, :]
    assert control.min() >= 0 and variant.min() >= 0 and max(control.max(), variant.max()) <= 1
    return control, variant


def row_interaction(rng, cell, reps):
    n, k, delta, draws = cell
    cases = cal.make_cases(n)
    cover = hold = confident = 0
    for _ in range(reps):
        control, variant = interaction_rates(rng, n, delta)
        shared = rng.random((n, k))
        runs = {}
        for subject, rates in (("control", control), ("variant", variant)):
            for j, length in enumerate(INTERACTION_LENGTHS):
                u = shared if draws == "common" else rng.random((n, k))
                runs[f"{subject}[ctx={length}]"] = u < rates[:, j:j + 1]
        got = read("factorial_interaction", read_interaction, cases, runs, k,
                   INTERACTION_LENGTHS)
        ci = cal.lohi(got["ci"])
        cover += cal.inside(delta, ci)
        hold += cal.inside(cal.value(got["diff"]), ci)
        confident += got["p_lower"] is not None and got["p_lower"] >= 0.95
    return {"cover": cover, "hold": hold, "confident": confident, "total": reps,
            "fast": VERIFIED.get("factorial_interaction", True)}


# ----------------------------------------------------------------------------- flips
def read_flips(s):
    flips = s["comparisons"][0]["flips"]
    return {"listed": sum(1 for f in flips if f.get("beyond_noise", True)),
            "changed": len(flips)}


def row_flips_null(rng, cell, reps):
    n, k = cell
    cases = cal.make_cases(n, n)
    mirror = tuple((w, 1 - b, 1 - a) for w, a, b in cal.MIX)
    runs_listing = listed = changed = 0
    for _ in range(reps):
        p = np.concatenate([cal.draw_mix(rng, n), cal.draw_mix(rng, n, mirror)])
        runs = {name: rng.random((2 * n, k)) < p[:, None] for name in ("control", "variant")}
        got = read("factorial_flips_null", read_flips, cases, runs, k)
        runs_listing += got["listed"] > 0
        listed += got["listed"]
        changed += got["changed"]
    return {"runs_listing": runs_listing, "listed": listed, "changed": changed,
            "total": reps, "fast": VERIFIED.get("factorial_flips_null", True)}


ROWS = {"factorial_context_fwer": row_context_fwer, "factorial_interaction": row_interaction,
        "factorial_flips_null": row_flips_null}


def tasks(reps: int, quick: bool) -> list[tuple]:
    return cal.chunked({"factorial_context_fwer": CONTEXT_CELLS,
                        "factorial_interaction": INTERACTION_CELLS,
                        "factorial_flips_null": FLIP_CELLS}, reps)


def _rate(res: dict, row: str, cell, num: str):
    return cal.share(res, f"{row}|{json.dumps(list(cell))}", num)


def _worst(res: dict, row: str, cells, num: str, high: bool):
    """(cell, rate, total) of the worst cell, or None when a cell was not measured."""
    rates = {cell: _rate(res, row, cell, num) for cell in cells}
    if any(r is None for r, _ in rates.values()):
        return None, rates
    cell = (max if high else min)(rates, key=lambda c: rates[c][0])
    return (cell, *rates[cell]), rates


def figures(res: dict) -> dict:
    out: dict[str, tuple[str, bool | None]] = {}
    label = f"context FWER, {len(CONTEXT_LENGTHS)} lengths, no decline, max"
    worst, rates = _worst(res, "factorial_context_fwer", CONTEXT_CELLS, "rejected", True)
    if worst is None:
        out[label] = ("n/a", False)
    else:
        cell, high, total = worst
        adjusted = all(res[f"factorial_context_fwer|{json.dumps(list(c))}"].get("adjusted")
                       for c in CONTEXT_CELLS)
        what = "p Holm < 0.05" if adjusted else "P(lower) >= 0.95"
        out[label] = (f"{cal.fmt(high)} ({what}; N={cell[0]},K={cell[1]}; "
                      + "/".join(cal.fmt(rates[c][0]) for c in CONTEXT_CELLS) + ")",
                      cal.meets(high, total, 0.05, False))
    alt = [c for c in INTERACTION_CELLS if c[2] != 0]
    null = [c for c in INTERACTION_CELLS if c[2] == 0]
    label = f"interaction diff_ci coverage, min of {len(INTERACTION_CELLS)} cells"
    worst, rates = _worst(res, "factorial_interaction", INTERACTION_CELLS, "cover", False)
    if worst is None:
        out[label] = ("n/a", False)
        out["interaction diff_ci contains diff, min"] = ("n/a", False)
        out["interaction P(declines faster) >= 0.95, no interaction, max"] = ("n/a", False)
    else:
        cell, low, total = worst
        out[label] = (f"{cal.fmt(low)} (N={cell[0]},K={cell[1]},true {cell[2]:+.2f},"
                      f"{cell[3]}; " + "/".join(cal.fmt(rates[c][0], 2)
                                                for c in INTERACTION_CELLS) + ")",
                      cal.meets(low, total, 0.93, True))
        hold = [_rate(res, "factorial_interaction", c, "hold")[0] for c in INTERACTION_CELLS]
        out["interaction diff_ci contains diff, min"] = (cal.fmt(min(hold)), min(hold) == 1.0)
        worst, rates = _worst(res, "factorial_interaction", null, "confident", True)
        cell, high, total = worst
        out["interaction P(declines faster) >= 0.95, no interaction, max"] = (
            f"{cal.fmt(high)} (N={cell[0]},K={cell[1]},{cell[3]}; "
            + "/".join(cal.fmt(rates[c][0]) for c in null) + ")",
            cal.meets(high, total, 0.05, False))
        power = [_rate(res, "factorial_interaction", c, "confident")[0] for c in alt]
        out[f"interaction P(declines faster) >= 0.95 at true {DELTA:+.2f}"] = (
            "/".join(cal.fmt(p, 2) for p in power)
            + " (" + ", ".join(f"N={c[0]},K={c[1]},{c[3]}" for c in alt) + ")", None)
    label = "flips listed beyond noise, null, runs listing any, max"
    worst, rates = _worst(res, "factorial_flips_null", FLIP_CELLS, "runs_listing", True)
    if worst is None:
        out[label] = ("n/a", False)
    else:
        cell, high, total = worst
        out[label] = (f"{cal.fmt(high)} (N={cell[0]}+{cell[0]},K={cell[1]}; "
                      + "/".join(cal.fmt(rates[c][0]) for c in FLIP_CELLS) + ")",
                      cal.meets(high, total, 0.05, False))
        changed = [_rate(res, "factorial_flips_null", c, "changed")[0] for c in FLIP_CELLS]
        out["flips: majority votes changed per run, null (mean)"] = (
            "/".join(cal.fmt(c, 1) for c in changed), None)
    return out


TARGETS = {"context FWER": "<= 0.05", "interaction diff_ci coverage": ">= 0.93",
           "interaction diff_ci contains": "1.000",
           "interaction P(declines faster) >= 0.95, no": "<= 0.05",
           "interaction P(declines faster) >= 0.95 at": "",
           "flips listed": "<= 0.05", "flips: majority": ""}
