"""Calibration rows of issue 32's sensors (item 5 and the sensor half of item 6), loaded by
`benchmarks/calibration.py`:

    .venv/bin/python benchmarks/calibration.py --rows sensor_ --reps 1000

- `sensor_ci`: coverage of a sensor's `rate_ci` (a subject's `sensors.<name>`) of the
  population pass rate — the mean of the case rates the cases are drawn from — on four
  heterogeneous populations (`POPULATIONS`), N in {10, 30} cases x K in {3, 10} trials.
  Target >= 0.93 in every cell, first on issue 32's population (uniform case rates); and the
  interval contains the printed rate (1.000).
- `sensor_fwer`: a global null across 3 variants x 3 sensors (each sensor's case rates from
  the realistic mix of `calibration.MIX`, independent across sensors; each variant redraws 40%
  of the cases from the same mix, so no variant changes any sensor's population rate): the
  share of runs in which any `comparisons[].sensors.<name>.p_value_holm` is <= 0.05. Target
  <= 0.05.

Feature-detected: both rows read only fields 623c023 has (`rate_ci`, `p_value_holm`), so the
same code measures the version before issue 32. Runs are driven through
`summarise_tallies` with every trial's readings fed to the `Tally` (`Tally.sense`), as the
engine does; the comparisons of the other metrics, trial-level and pass@k are skipped once
the first replication of a worker read the same from the full summary.
"""

import contextlib
import json

import numpy as np

import calibration as cal

#: uniform: issue 32's (before 0.69-0.84); then a population of cases that mostly always or
#: never pass, the realistic mix of `calibration.MIX`, and a good skill's cases
POPULATIONS = ("uniform", "40% 0, 40% 1, 20% U", "mix", "Beta(8,1)")
TRUTH = {"uniform": 0.5, "40% 0, 40% 1, 20% U": 0.5, "mix": cal.MIX_MEAN, "Beta(8,1)": 8 / 9}
CI_CELLS = [(pop, n, k) for pop in POPULATIONS for n in (10, 30) for k in (3, 10)]
FWER_CELLS = [(10, 3), (20, 10), (50, 5)]
SENSORS = ("matcher", "latency", "exit_code")
VARIANTS = 3

#: row -> whether the restricted summary read the same as the full one (`cal.checked`)
VERIFIED = cal.VERIFIED


def draw(rng: np.random.Generator, pop: str, n: int) -> np.ndarray:
    return cal.draw_mix(rng, n) if pop == "mix" else cal.draw_population(rng, pop, n)


def summarise(cases, runs: dict, trials: int) -> dict:
    """One run: `runs` maps subject -> array (cases, trials, sensors) of readings; the first
    sensor's reading decides each trial."""
    from ix.eval.run_summary import summarise_tallies
    from ix.eval.scoring import Tally

    tallies = {}
    for name, x in runs.items():
        tally = Tally(cases)
        for case, rows in zip(cases, x, strict=True):
            for t, readings in enumerate(rows):
                tally.add(case.id, bool(readings[0]), t)
                tally.sense(case.id, [(s, bool(r)) for s, r in zip(SENSORS, readings,
                                                                   strict=False)])
        tallies[name] = tally
    return summarise_tallies(
        experiment_name="calibration", run_id="r", run_status="completed",
        subjects=[(name, "") for name in runs], tallies=tallies, cases=cases,
        trials_per_case=trials, info={})


@contextlib.contextmanager
def without_rate_intervals():
    """The sensors' pass-rate intervals stubbed out (a row that reads only comparisons): the
    clustered interval costs ~20 ms a sensor and subject, 12 a replication here."""
    import ix.eval.sensor_summary as mod

    stubs = {"trial_rate": lambda k, n, *a, **kw: {"rate": None, "ci": [None, None]},
             "beta_interval": lambda *a, **kw: (float("nan"), float("nan"))}
    saved = {name: getattr(mod, name) for name in stubs if hasattr(mod, name)}
    for name in saved:
        setattr(mod, name, stubs[name])
    try:
        yield
    finally:
        for name, old in saved.items():
            setattr(mod, name, old)


def read(row: str, read_fields, cases, runs: dict, trials: int, intervals: bool = True):
    """`read_fields` of the summary, restricted to the sensors (no metric comparisons,
    trial-level, pass@k; without `intervals`, no sensor pass-rate intervals either) once a
    worker's first replication read the same from the full one."""
    def full():
        with cal.only(None, False):
            return read_fields(summarise(cases, runs, trials))

    def restricted():
        with cal.only((), False), \
                (contextlib.nullcontext() if intervals else without_rate_intervals()):
            return read_fields(summarise(cases, runs, trials))

    return cal.checked(row, restricted, full)


def read_rate(s):
    entry = s["subjects"][0]["sensors"][SENSORS[0]]
    return {"rate": entry.get("rate"), "ci": entry.get("rate_ci")}


def row_sensor_ci(rng, cell, reps):
    """One subject, one sensor: does `rate_ci` cover the population's mean case rate?"""
    pop, n, k = cell
    cases = cal.make_cases(n)
    cover = hold = 0
    for _ in range(reps):
        p = draw(rng, pop, n)
        x = rng.random((n, k)) < p[:, None]
        got = read("sensor_ci", read_rate, cases, {"a": x[:, :, None]}, k)
        ci = cal.lohi(got["ci"])
        cover += cal.inside(TRUTH[pop], ci)
        hold += cal.inside(cal.value(got["rate"]), ci)
    return {"cover": cover, "hold": hold, "total": reps, "fast": VERIFIED.get("sensor_ci", True)}


def read_holm(s):
    return [cal.holm_p(c["sensors"][name])[0] for c in s["comparisons"] for name in SENSORS]


def row_sensor_fwer(rng, cell, reps):
    """A global null: does any variant x sensor come out Holm-significant at 0.05?"""
    n, k = cell
    cases = cal.make_cases(n)
    rejected = 0
    for _ in range(reps):
        control = np.stack([cal.draw_mix(rng, n) for _ in SENSORS], axis=1)  # (cases, sensors)
        rates = {"control": control}
        for j in range(VARIANTS):
            redraw = rng.random(control.shape) < 0.4
            fresh = np.stack([cal.draw_mix(rng, n) for _ in SENSORS], axis=1)
            rates[f"variant-{j}"] = np.where(redraw, fresh, control)
        runs = {name: rng.random((n, k, len(SENSORS))) < p[:, None, :]
                for name, p in rates.items()}
        ps = read("sensor_fwer", read_holm, cases, runs, k, intervals=False)
        rejected += any(p is not None and p <= 0.05 for p in ps)
    return {"rejected": rejected, "total": reps, "fast": VERIFIED.get("sensor_fwer", True)}


ROWS = {"sensor_ci": row_sensor_ci, "sensor_fwer": row_sensor_fwer}


def tasks(reps: int, quick: bool) -> list[tuple]:
    return cal.chunked({"sensor_ci": CI_CELLS, "sensor_fwer": FWER_CELLS}, reps)


def _rate(res: dict, key: str, num: str):
    return cal.share(res, key, num)


def figures(res: dict) -> dict:
    out: dict[str, tuple[str, bool | None]] = {}
    cov = {cell: _rate(res, f"sensor_ci|{json.dumps(list(cell))}", "cover") for cell in CI_CELLS}
    hold = [_rate(res, f"sensor_ci|{json.dumps(list(cell))}", "hold")[0] for cell in CI_CELLS]
    if any(c is None for c, _ in cov.values()):
        out[f"sensor rate_ci coverage, min of {len(CI_CELLS)} cells"] = ("n/a", False)
    else:
        for label, cells in (("sensor rate_ci coverage, uniform (issue 32's), min of 4 "
                              "cells", [c for c in CI_CELLS if c[0] == "uniform"]),
                             (f"sensor rate_ci coverage, min of {len(CI_CELLS)} cells",
                              CI_CELLS)):
            worst = min(cells, key=lambda c: cov[c][0])
            low, total = cov[worst]
            out[label] = (f"{cal.fmt(low)} ({worst[0]}, N={worst[1]}, K={worst[2]})",
                          cal.meets(low, total, 0.93, True))
        values = [c for c, _ in cov.values()]
        out["sensor rate_ci coverage, range over cells"] = (
            f"{cal.fmt(min(values))}-{cal.fmt(max(values))}", None)
        for pop in POPULATIONS:
            row = [cov[cell][0] for cell in CI_CELLS if cell[0] == pop]
            out[f"sensor rate_ci coverage, {pop}, N=10/30 x K=3/10"] = (
                "/".join(cal.fmt(c, 2) for c in row), None)
    out["sensor rate_ci contains its rate, min"] = (
        cal.fmt(min(hold)) if None not in hold else "n/a",
        None not in hold and min(hold) == 1.0)
    fw = {cell: _rate(res, f"sensor_fwer|{json.dumps(list(cell))}", "rejected")
          for cell in FWER_CELLS}
    label = f"sensor FWER, {VARIANTS} variants x {len(SENSORS)} sensors, global null, max"
    if any(f is None for f, _ in fw.values()):
        out[label] = ("n/a", False)
    else:
        worst = max(fw, key=lambda c: fw[c][0])
        high, total = fw[worst]
        out[label] = (f"{cal.fmt(high)} (N={worst[0]}, K={worst[1]}; "
                      + "/".join(cal.fmt(fw[c][0], 3) for c in FWER_CELLS) + ")",
                      cal.meets(high, total, 0.05, False))
    return out


TARGETS = {"sensor rate_ci coverage, min": ">= 0.93",
           "sensor rate_ci coverage, uniform (issue 32's)": ">= 0.93",
           "sensor rate_ci coverage, range": "",
           "sensor rate_ci coverage, ": "", "sensor rate_ci contains": "1.000",
           "sensor FWER": "<= 0.05"}
