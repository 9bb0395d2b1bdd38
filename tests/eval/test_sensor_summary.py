"""Every sensor summarised (issue 20): the subjects' `sensors` blocks and the comparisons'
`sensors`, through the real `ix run`, checked against numbers computed here from
trials.jsonl (scipy for the intervals, statsmodels for Holm); the comparison is case-level."""

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from conftest import run_ix, write
from ix.eval.models import EvalCase
from ix.eval.scoring import Tally, sensor_keys
from ix.eval.sensor_summary import compare_sensors, sensor_names, sensors_block

NAMES = ["activation", "tool_count", "tool_count#2", "denied", "turns"]
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
            cell = out.setdefault(subject, {}).setdefault(name, {}).setdefault(case, [0, 0])
            cell[0] += r["passed"]
            cell[1] += 1
    return out


def _interval(k: int, n: int) -> list[float]:
    """STATS.md §1 from scipy: equal-tailed Beta(k+1, n-k+1), one-sided at k = 0 and n."""
    if k == 0:
        return [0.0, stats.beta.ppf(0.95, 1, n + 1)]
    if k == n:
        return [stats.beta.ppf(0.05, n + 1, 1), 1.0]
    return [stats.beta.ppf(0.025, k + 1, n - k + 1), stats.beta.ppf(0.975, k + 1, n - k + 1)]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    lab = tmp_path_factory.mktemp("sensors") / "lab"
    d = _experiment(lab)
    r = run_ix("run", "multi", "--lab", str(lab), "--progress", "none")
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
        for name in NAMES:
            k = sum(c[0] for c in mine[name].values())
            n = sum(c[1] for c in mine[name].values())
            s = got[name]
            assert (s["passed"], s["n"]) == (k, n)
            assert s["rate"] == pytest.approx(k / n, abs=1e-6)
            assert s["rate_ci"] == pytest.approx(_interval(k, n), abs=1e-6)
            assert s["rate_ci"][0] <= s["rate"] <= s["rate_ci"][1]
            assert {c: [v["passed"], v["n"]] for c, v in s["cases"].items()} == mine[name]
            for v in s["cases"].values():
                assert v["rate"] == pytest.approx(v["passed"] / v["n"], abs=1e-6)
        # the errored trials are in no sensor's n; every valid one in each
        valid = block["trials"] - block["errors"]
        errored += block["errors"]
        assert all(got[name]["n"] == valid for name in NAMES)
        # the first sensor's counts are the cases' (its reading decides the trial)
        assert {p["probe_id"]: [p["passed"], p["n"]] for p in block["probe_results"]
                if p["n"]} == mine["activation"]
        # never passes with the mock (no list of denials), never judged (no turns)
        assert got["denied"]["passed"] == got["denied"]["n"]
        assert got["turns"]["passed"] == 0
        # the two tool_count sensors are complements, and the second is the activation
        assert got["tool_count"]["passed"] + got["tool_count#2"]["passed"] == valid
        assert got["tool_count#2"]["passed"] == got["activation"]["passed"]
    assert errored > 0  # the error rates made some, so the exclusion was tested


def test_sensor_comparisons_are_case_level_with_holm_across_variants(run):
    summary, counts = run["summary"], run["counts"]
    control = counts["control"]
    comparisons = summary["comparisons"]
    assert [c["variant"] for c in comparisons] == ["variant", "third"]
    for name in NAMES:
        raw = []
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
            assert m["diff_ci"][0] <= m["diff"] <= m["diff_ci"][1]
            if d.std() > 0:  # the t-test of the case differences, never smaller
                assert m["p_value"] >= stats.ttest_1samp(d, 0).pvalue - 1e-6  # rounded
                assert (m["p_variant_better"] > 0.5) == (m["diff"] > 0)
            raw.append(m["p_value"])
        if all(p is not None for p in raw):
            holm = multipletests(raw, method="holm")[1]
            assert [c["sensors"][name]["p_value_holm"] for c in comparisons] == \
                pytest.approx(list(holm), abs=1e-5)
    # the existing keys are unchanged beside the new one
    assert set(comparisons[0]["metrics"]) == {"activation_rate", "recall", "precision", "f1",
                                              "pass_rate"}


def test_a_resumed_run_counts_the_recorded_trials_of_every_sensor(tmp_path: Path, run):
    lab = tmp_path / "lab"
    d = _experiment(lab)
    first = run_ix("run", "multi", "--lab", str(lab), "--progress", "none",
                   "--max-trials", "40")
    assert first.code == 130, first.output  # stopped by the budget, to be resumed
    before = json.loads((d / "results" / "summary-latest.json").read_text())
    assert sum(b["sensors"]["denied"]["n"] for b in before["subjects"]) < \
        sum(b["sensors"]["denied"]["n"] for b in run["summary"]["subjects"])
    resumed = run_ix("run", "multi", "--lab", str(lab), "--progress", "none", "--resume")
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
