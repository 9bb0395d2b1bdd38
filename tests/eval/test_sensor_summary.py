"""Every sensor summarised (issue 20): the subjects' `sensors` blocks and the comparisons'
`sensors`, through the real `ix run`, checked against numbers computed here from
trials.jsonl (the hierarchical interval with cases as clusters, statsmodels for Holm); the
comparison is case-level. Issue 32: a sensor's pass-rate interval is case-clustered (as
`trial_level`'s; checked against statsmodels' cluster-robust SE and by exact coverage), and
the sensor comparisons are one Holm family across variants × sensors."""

import json
from pathlib import Path

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats
from statsmodels.stats.multitest import multipletests

from conftest import ix_in_process, write
from ix.eval.estimates import trial_level
from ix.eval.models import EvalCase
from ix.eval.scoring import Tally, sensor_keys
from ix.eval.sensor_summary import compare_sensors, sensor_names, sensors_block
from ix.stats.clustered import hierarchical_interval

NAMES = ["activation", "tool_count", "tool_count#2", "denied", "turns"]
#: the sensors with a verdict on the mock's trials (`turns` has none: n/a, issue 33)
JUDGED = NAMES[:-1]
MUST = ["must-001", "must-002", "must-003", "must-004"]
NOT = ["not-001", "not-002", "not-003"]
RATES = {"control": [0.9, 0.6, 0.5, 0.8, 0.1, 0.0, 0.3],
         "variant": [0.4, 0.3, 0.6, 0.2, 0.0, 0.2, 0.1],
         "third": [1.0, 0.9, 0.9, 0.7, 0.5, 0.0, 0.0]}


def _experiment(lab: Path, extra: str = "") -> Path:
    subjects = []
    for name, rates in RATES.items():
        pairs = ", ".join(f"{c}: {p}" for c, p in zip(MUST + NOT, rates, strict=True))
        subjects.append(f"  - name: {name}\n    runtime: {{kind: mock, skill: target, "
                        f"activation_rates: {{{pairs}}}, error_rates: {{must-002: 0.25}}}}")
    d = lab / "multi"
    write(d / "experiment.yaml",
          "name: multi\ntrials: 8\nseed: 3\nsubjects:\n" + "\n".join(subjects)
          + "\nsensors:\n  - {kind: activation, skill: target}\n"
          "  - {kind: tool_count, tool: Skill, max: 0}\n"
          "  - {kind: tool_count, tool: Skill, min: 1}\n  - denied\n"
          "  - {kind: turns, max: 3}\n" + extra)
    for c in MUST:
        write(d / "cases" / f"{c}.md", f"---\nexpectation: must_trigger\n---\nDo {c}\n")
    for c in NOT:
        write(d / "cases" / f"{c}.md", f"---\nexpectation: should_not_trigger\n---\nNot {c}\n")
    return d


def _standing(d: Path) -> dict[tuple[str, str, int], dict]:
    latest: dict[tuple[str, str, int], dict] = {}
    for raw in (d / "results" / "trials.jsonl").read_text().splitlines():
        line = json.loads(raw)
        key = (line["subject"], line["probe_id"], line["trial"])
        if key not in latest or line["attempt"] >= latest[key]["attempt"]:
            latest[key] = line
    return latest


def _counts(lines: dict[tuple[str, str, int], dict]) -> dict[str, dict[str, dict[str, list]]]:
    """subject -> sensor name -> case -> [passed, valid], from the readings of valid trials."""
    out: dict[str, dict[str, dict[str, list]]] = {}
    for (subject, case, _), line in lines.items():
        if line["error"]:
            continue
        readings = line["readings"]
        assert [r["sensor_name"] for r in readings] == [n.split("#")[0] for n in NAMES]
        for name, r in zip(NAMES, readings, strict=True):
            by_case = out.setdefault(subject, {}).setdefault(name, {})
            if r["passed"] is None:  # n/a: no verdict, in no count
                continue
            cell = by_case.setdefault(case, [0, 0])
            cell[0] += r["passed"]
            cell[1] += 1
    return out


def _interval(per_case: dict[str, list]) -> list[float]:
    """STATS.md §10: the population rate's interval with the cases as clusters (the
    hierarchical beta-binomial model, itself checked against brute-force quadrature in
    tests/stats/test_stats_clustered.py), one-sided where it would exclude the pooled rate."""
    k = [c[0] for c in per_case.values()]
    n = [c[1] for c in per_case.values()]
    return list(hierarchical_interval(k, n, estimate=sum(k) / sum(n)))


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    lab = tmp_path_factory.mktemp("sensors") / "lab"
    d = _experiment(lab)
    # the summary's numbers are under test, not the command: in process
    r = ix_in_process("run", "multi", "--lab", str(lab), "--progress", "none")
    assert r.code in (0, 1), r.output
    summary = json.loads((d / "results" / "summary-latest.json").read_text())
    return {"lab": lab, "dir": d, "summary": summary, "output": r.stdout,
            "counts": _counts(_standing(d))}


def test_every_subject_summarises_every_sensor_against_the_trials(run):
    summary, counts = run["summary"], run["counts"]
    errored = 0
    for block in summary["subjects"]:
        got = block["sensors"]
        assert list(got) == NAMES
        assert [s["primary"] for s in got.values()] == [True, False, False, False, False]
        mine = counts[block["name"]]
        # no turns reported by the mock: n/a on every trial, never a fail (issue 33)
        assert got["turns"]["n"] == got["turns"]["passed"] == 0 and mine["turns"] == {}
        assert got["turns"]["rate"] is None and got["turns"]["cases"] == {}
        for name in JUDGED:
            k = sum(c[0] for c in mine[name].values())
            n = sum(c[1] for c in mine[name].values())
            s = got[name]
            assert (s["passed"], s["n"]) == (k, n)
            assert s["rate"] == pytest.approx(k / n, abs=1e-6)
            assert s["rate_ci"] == pytest.approx(_interval(mine[name]), abs=1e-6)
            assert s["rate_ci"][0] <= s["rate"] <= s["rate_ci"][1]
            assert {c: [v["passed"], v["n"]] for c, v in s["cases"].items()} == mine[name]
            for v in s["cases"].values():
                assert v["rate"] == pytest.approx(v["passed"] / v["n"], abs=1e-6)
        # the errored trials are in no sensor's n; every valid one in each
        valid = block["trials"] - block["errors"]
        errored += block["errors"]
        assert all(got[name]["n"] == valid for name in JUDGED)
        # the first sensor's counts are the cases' (its reading decides the trial)
        assert {p["probe_id"]: [p["passed"], p["n"]] for p in block["probe_results"]
                if p["n"]} == mine["activation"]
        # never passes with the mock (no list of denials)
        assert got["denied"]["passed"] == got["denied"]["n"]
        # the two tool_count sensors are complements, and the second is the activation
        assert got["tool_count"]["passed"] + got["tool_count#2"]["passed"] == valid
        assert got["tool_count#2"]["passed"] == got["activation"]["passed"]
    assert errored > 0  # the error rates made some, so the exclusion was tested


def test_sensor_comparisons_are_case_level_with_holm_across_variants_and_sensors(run):
    summary, counts = run["summary"], run["counts"]
    control = counts["control"]
    comparisons = summary["comparisons"]
    assert [c["variant"] for c in comparisons] == ["variant", "third"]
    raw, adjusted = [], []
    for comp in comparisons:  # no verdict on either side: nothing compared
        assert comp["sensors"]["turns"]["n"] == 0, comp["sensors"]["turns"]
        assert comp["sensors"]["turns"]["diff"] is None
    for name in JUDGED:
        for comp in comparisons:
            m = comp["sensors"][name]
            other = counts[comp["variant"]][name]
            shared = [c for c in MUST + NOT if c in control[name] and c in other]
            rc = np.array([control[name][c][0] / control[name][c][1] for c in shared])
            rv = np.array([other[c][0] / other[c][1] for c in shared])
            d = rv - rc
            assert m["n"] == len(shared) == 7
            assert m["diff"] == pytest.approx(d.mean(), abs=1e-6)
            assert m["control"] == pytest.approx(rc.mean(), abs=1e-6)
            assert m["variant"] == pytest.approx(rv.mean(), abs=1e-6)
            assert m["role"] == "exploratory" and m["paired"] is True
            assert m["family"] == "sensors"
            assert m["diff_ci"][0] <= m["diff"] <= m["diff_ci"][1]
            if d.std() > 0:  # the t-test of the case differences, never smaller
                assert m["p_value"] >= stats.ttest_1samp(d, 0).pvalue - 1e-6  # rounded
                assert (m["p_variant_better"] > 0.5) == (m["diff"] > 0)
            if m["p_value"] is not None:
                raw.append(m["p_value"])
                adjusted.append(m["p_value_holm"])
    # one family: every variant × sensor tested at once
    assert len(raw) > len(comparisons)
    assert adjusted == pytest.approx(list(multipletests(raw, method="holm")[1]), abs=1e-5)
    # the existing keys are unchanged beside the new one
    assert set(comparisons[0]["metrics"]) == {"activation_rate", "recall", "precision", "f1",
                                              "pass_rate"}


def test_a_resumed_run_counts_the_recorded_trials_of_every_sensor(tmp_path: Path, run):
    lab = tmp_path / "lab"
    d = _experiment(lab)
    first = ix_in_process("run", "multi", "--lab", str(lab), "--progress", "none",
                          "--max-trials", "40")
    assert first.code == 130, first.output  # stopped by the budget, to be resumed
    before = json.loads((d / "results" / "summary-latest.json").read_text())
    assert sum(b["sensors"]["denied"]["n"] for b in before["subjects"]) < \
        sum(b["sensors"]["denied"]["n"] for b in run["summary"]["subjects"])
    resumed = ix_in_process("run", "multi", "--lab", str(lab), "--progress", "none",
                            "--resume")
    assert resumed.code in (0, 1), resumed.output
    summary = json.loads((d / "results" / "summary-latest.json").read_text())
    whole = run["summary"]  # the same experiment and seed, run in one go
    for got, want in zip(summary["subjects"], whole["subjects"], strict=True):
        assert got["sensors"] == want["sensors"]
    assert [c["sensors"] for c in summary["comparisons"]] == \
        [c["sensors"] for c in whole["comparisons"]]


# --------------------------------------------------------------------------- in process

CASES = [EvalCase(id=f"c{i}", prompt="p", expectation="must_trigger") for i in range(4)]


def _tally(outcomes: dict[str, list[tuple[bool, bool]]]) -> Tally:
    """Trials of (first sensor passed, second passed) per case, in the order given."""
    tally = Tally(CASES)
    for case, trials in outcomes.items():
        for t, (a, b) in enumerate(trials):
            tally.add(case, a, t)
            tally.sense(case, [("matcher", a), ("matcher", b)])
    return tally


def test_trial_order_within_a_case_changes_nothing():
    """Case-level, never trial t against trial t: the variant's trials in another order (so
    that every trial pair agrees, or none does) give the same comparison."""
    control = _tally({c.id: [(True, True), (False, True), (True, False), (False, False)]
                      for c in CASES})
    same = _tally({c.id: [(True, True), (False, True), (True, False), (False, False)]
                   for c in CASES})
    flipped = _tally({c.id: [(False, False), (True, False), (False, True), (True, True)]
                      for c in CASES})
    names = sensor_names([control, same])
    assert names == ["matcher", "matcher#2"]
    a = compare_sensors([control, same], names, CASES)
    b = compare_sensors([control, flipped], names, CASES)
    assert a == b
    assert a[0]["matcher"]["diff"] == 0.0 and a[0]["matcher"]["n"] == 4


def test_a_sensor_block_of_a_subject_without_valid_trials_is_empty_not_nan():
    tally = Tally(CASES)
    for case in CASES:
        tally.add(case.id, None)
    block = sensors_block(tally, ["exit_code"], CASES)
    assert block == {"exit_code": {"primary": True, "rate": None, "rate_ci": [None, None],
                                   "passed": 0, "n": 0, "cases": {}}}
    comp = compare_sensors([tally, tally], ["exit_code"], CASES)
    assert comp[0]["exit_code"]["n"] == 0 and comp[0]["exit_code"]["diff"] is None


def test_readings_of_one_name_are_numbered_in_order():
    assert sensor_keys(["matcher", "latency", "matcher", "matcher"]) == \
        ["matcher", "latency", "matcher#2", "matcher#3"]


# ------------------------------------------------------------- issue 32: clustered, one family


def _must(n: int) -> list[EvalCase]:
    return [EvalCase(id=f"m{i:03d}", prompt="p", expectation="must_trigger") for i in range(n)]


def _sensed(cases: list[EvalCase], x: np.ndarray) -> Tally:
    """A tally whose one sensor ("matcher", also the trial's outcome) read x[case, trial]."""
    tally = Tally(cases)
    for case, row in zip(cases, x, strict=True):
        for t, ok in enumerate(row):
            tally.add(case.id, bool(ok), t)
            tally.sense(case.id, [("matcher", bool(ok))])
    return tally


@pytest.mark.parametrize("prior", ["uniform", "jeffreys"])
def test_a_sensor_pass_rate_interval_is_the_trial_level_one(prior):
    """One method for every trial-level rate: with every case must_trigger and the sensor the
    one that decides, its pass rate is the must trials' rate, interval and all."""
    rng = np.random.default_rng(7)
    cases = _must(12)
    x = rng.random((12, 6)) < rng.beta(0.5, 0.5, 12)[:, None]
    block = sensors_block(_sensed(cases, x), ["matcher"], cases, prior=prior)["matcher"]
    must = trial_level(cases, x.sum(axis=1), np.full(12, 6), prior=prior)["must_trigger"]
    assert block["rate"] == must["rate"] and block["rate_ci"] == must["ci"]


@pytest.mark.parametrize(("n_cases", "trials", "a", "seed"), [(400, 5, 0.5, 0), (200, 8, 0.3, 1)])
def test_sensor_interval_is_as_wide_as_statsmodels_cluster_robust_se(n_cases, trials, a, seed):
    """Many heterogeneous cases (ICC 1/(1+2a)): the interval's width is 2·1.96 times
    statsmodels' cluster-robust SE of the mean (OLS on a constant, cases as groups) within
    10%. The pooled Beta of 623c023 was 0.44-0.59 of it (the naive SE)."""
    rng = np.random.default_rng(seed)
    cases = _must(n_cases)
    x = rng.random((n_cases, trials)) < rng.beta(a, a, n_cases)[:, None]
    got = sensors_block(_sensed(cases, x), ["matcher"], cases)["matcher"]
    y = x.ravel().astype(float)
    fit = sm.OLS(y, np.ones_like(y)).fit(
        cov_type="cluster", cov_kwds={"groups": np.repeat(np.arange(n_cases), trials)})
    lo, hi = got["rate_ci"]
    assert got["rate"] == pytest.approx(fit.params[0], abs=1e-6)
    assert (hi - lo) / (2 * stats.norm.ppf(0.975) * fit.bse[0]) == pytest.approx(1.0, abs=0.1)


@pytest.mark.parametrize(("n_cases", "trials", "share", "old"),
                         [(30, 10, 0.5, 0.415), (20, 5, 0.3, 0.535)])
def test_sensor_interval_covers_a_population_of_cases_that_always_or_never_pass(
        n_cases, trials, share, old):
    """Exact coverage, no simulation: each case always passes (probability `share`) or never
    does, so a run is fixed by M ~ Bin(N, share), the cases that pass. The population pass
    rate is `share`; the pooled Beta of 623c023 (every trial independent) covered it with
    probability `old` (0.415 at N = 30, K = 10); the clustered interval ≥ 0.93."""
    cases = _must(n_cases)
    cover = 0.0
    for m in range(n_cases + 1):
        x = np.repeat((np.arange(n_cases) < m)[:, None], trials, axis=1)
        lo, hi = sensors_block(_sensed(cases, x), ["matcher"], cases)["matcher"]["rate_ci"]
        pooled = stats.beta(m * trials + 1, (n_cases - m) * trials + 1)
        assert lo <= m / n_cases <= hi
        cover += stats.binom.pmf(m, n_cases, share) * (lo <= share <= hi)
        old -= stats.binom.pmf(m, n_cases, share) * \
            (pooled.ppf(0.025) <= share <= pooled.ppf(0.975) or m in (0, n_cases))
    assert cover >= 0.93
    assert abs(old) < 5e-3  # the reference reproduces the old figure


def _three_variants() -> tuple[list[Tally], list[EvalCase]]:
    """A control and 3 variants, 2 sensors each, 12 cases of 6 trials: the second sensor of
    the first variant moved a lot, the rest by chance."""
    rng = np.random.default_rng(3)
    cases = _must(12)
    base = rng.uniform(0.1, 0.9, (12, 2))
    tallies = []
    for j, shift in enumerate([(0.0, 0.0), (0.0, 0.35), (0.15, 0.0), (0.0, -0.1)]):
        p = np.clip(base + np.array(shift) + (rng.normal(0, 0.1, (12, 2)) if j else 0), 0, 1)
        x = rng.random((12, 6, 2)) < p[:, None, :]
        tally = Tally(cases)
        for case, rows in zip(cases, x, strict=True):
            for t, (a, b) in enumerate(rows):
                tally.add(case.id, bool(a), t)
                tally.sense(case.id, [("matcher", bool(a)), ("exit_code", bool(b))])
        tallies.append(tally)
    return tallies, cases


def test_sensor_comparisons_are_one_holm_family_across_variants_and_sensors():
    """3 variants × 2 sensors: `p_value_holm` is statsmodels' Holm over all 6 p-values at once
    (per sensor, 623c023 adjusted over 3: too small), and each entry names its family."""
    tallies, cases = _three_variants()
    out = compare_sensors(tallies, ["matcher", "exit_code"], cases)
    entries = [block[name] for block in out for name in ("matcher", "exit_code")]
    raw = [m["p_value"] for m in entries]
    assert None not in raw
    family = multipletests(raw, method="holm")[1]
    assert [m["p_value_holm"] for m in entries] == pytest.approx(list(family), abs=1e-6)
    assert {m["family"] for m in entries} == {"sensors"}
    # the family matters here: Holm within one sensor alone halves the smallest (3 tests, not 6)
    per_sensor = multipletests([b["exit_code"]["p_value"] for b in out], method="holm")[1]
    assert min(family) < 0.05 and min(family) == pytest.approx(2 * min(per_sensor), rel=1e-3)


def test_a_sensor_comparison_without_shared_cases_is_outside_the_family():
    """A sensor a variant never read has no comparison (p null): it is not a test, so the
    family is the comparisons that were made."""
    tallies, cases = _three_variants()
    silent = Tally(cases)
    for case in cases:
        for t in range(6):
            silent.add(case.id, True, t)
            silent.sense(case.id, [("matcher", bool(t % 2))])   # no exit_code reading
    out = compare_sensors([*tallies, silent], ["matcher", "exit_code"], cases)
    assert out[3]["exit_code"]["p_value"] is None and out[3]["exit_code"]["p_value_holm"] is None
    assert out[3]["exit_code"]["family"] == "sensors"
    made = [b[n] for b in out for n in ("matcher", "exit_code") if b[n]["p_value"] is not None]
    assert len(made) == 7
    assert [m["p_value_holm"] for m in made] == \
        pytest.approx(list(multipletests([m["p_value"] for m in made], method="holm")[1]),
                      abs=1e-6)


def test_a_first_sensor_without_a_verdict_errs_the_trial_never_fails_it(tmp_path: Path):
    """`turns` first on a runtime that reports no turns: the trial has no verdict, so it is
    errored (`not_applicable`, left out of the metrics), as a judge that cannot judge is —
    never a failed trial (issue 33)."""
    from conftest import ix_in_process
    lab = tmp_path / "lab"
    d = lab / "exp"
    write(d / "experiment.yaml", "name: exp\ntrials: 1\nruntime: {kind: mock, default_rate: 1}"
          "\nsensor: {kind: turns, max: 3}\n")
    write(d / "cases" / "must-001.md", "---\nexpectation: must_trigger\n---\nDo it\n")
    r = ix_in_process("run", "--lab", str(lab), "--json")
    assert "not_applicable" in r.stderr, r.output
    [line] = [json.loads(x) for x in (d / "results" / "trials.jsonl").read_text().splitlines()]
    assert line["error"]["kind"] == "not_applicable" and line["reading"] is None
    assert "turns: n/a: no turns to count" in line["error"]["message"]


def test_a_reading_without_a_verdict_is_in_no_count():
    tally = Tally(CASES)
    tally.add("c0", True, 0)
    tally.sense("c0", [("activation", True), ("turns", None)])
    block = sensors_block(tally, sensor_names([tally]), CASES)
    assert (block["turns"]["n"], block["turns"]["rate"]) == (0, None)
    assert block["activation"]["n"] == 1
