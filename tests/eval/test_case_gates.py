"""Per-case gates (issue 38): each case of a side against a threshold, unadjusted or by Holm
(checked against statsmodels' Holm on scipy's Beta posteriors), and through the real `ix`:
a gate missed exits 1 naming the cases, a bad gate exits 2 naming the field."""

import json
from pathlib import Path

import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from conftest import ix_in_process, mock_experiment, run_ix, too_wide
from ix.domain.errors import ConfigError
from ix.eval.case_gates import gates_block, parse_gate
from ix.stats.beta import credible_interval


def result(case: str, expectation: str, passed: int, n: int) -> dict:
    lo, hi = credible_interval(passed, n) if n else (None, None)
    return {"probe_id": case, "expectation": expectation, "passed": passed, "n": n,
            "score": passed / n if n else None, "score_ci": [lo, hi] if n else None}


SUBJECT = {"name": "s", "probe_results": [
    result("must-1", "must_trigger", 10, 10), result("must-2", "must_trigger", 7, 10),
    result("must-3", "must_trigger", 9, 10), result("must-4", "must_trigger", 0, 0),
    result("not-1", "should_not_trigger", 0, 10), result("not-2", "should_not_trigger", 4, 10)]}


def test_unadjusted_each_case_clears_its_bound_or_is_named():
    [g] = gates_block([parse_gate("case:recall.lower>=0.6", "--gate")], [SUBJECT], 0.95)
    lower = {p["probe_id"]: p["score_ci"][0] for p in SUBJECT["probe_results"] if p["n"]}
    want = [*sorted(c for c in ("must-1", "must-2", "must-3") if lower[c] < 0.6), "must-4"]
    assert sorted(c["probe_id"] for c in g["failed"]) == sorted(want)
    assert g["cases"] == 4 and g["label"] == "per case, unadjusted" and not g["passed"]
    assert next(c for c in g["failed"] if c["probe_id"] == "must-4")["value"] is None
    # should-not cases: specificity is 1 - the rate, its interval flipped
    [g] = gates_block([parse_gate("case:specificity.value>=0.7", "x")], [SUBJECT], 0.95)
    assert [c["probe_id"] for c in g["failed"]] == ["not-2"]
    assert g["failed"][0]["value"] == pytest.approx(0.6)
    [g] = gates_block([parse_gate("case:correct.value>0.65", "x")], [SUBJECT], 0.95)
    assert sorted(c["probe_id"] for c in g["failed"]) == ["must-4", "not-2"]


def test_holm_clears_the_cases_statsmodels_rejects_at_the_one_sided_alpha():
    cases = [result(f"m{i}", "must_trigger", k, 12) for i, k in enumerate(
        (12, 12, 11, 11, 10, 9, 12, 8))]
    [g] = gates_block([parse_gate("case:recall.lower>=0.55,holm", "x")],
                      [{"name": "s", "probe_results": cases}], 0.95)
    p = [stats.beta.cdf(0.55, c["passed"] + 1, c["n"] - c["passed"] + 1) for c in cases]
    reject, adjusted, _, _ = multipletests(p, alpha=0.025, method="holm")
    want = {c["probe_id"]: a for c, r, a in zip(cases, reject, adjusted, strict=True) if not r}
    assert {c["probe_id"] for c in g["failed"]} == set(want) != set()
    for c in g["failed"]:
        assert c["p"] == pytest.approx(want[c["probe_id"]], abs=1e-6)
    assert g["label"] == "Holm across the cases"


@pytest.mark.parametrize("bad", ["recall.lower>=0.8", "case:recall.lower=>0.8",
                                 "case:f1.lower>=0.8", "case:recall.lower>=1.5",
                                 "case:recall.value>=0.8,holm"])
def test_a_bad_gate_is_refused_naming_its_field(bad: str):
    with pytest.raises(ConfigError) as err:
        parse_gate(bad, "gate[0]")
    assert err.value.field == "gate[0]"


def test_ix_run_exits_1_naming_the_cases_below_a_gate_and_2_on_a_bad_one(lab: Path):
    exp = mock_experiment(lab, rates={"must-001": 1.0, "must-002": 1.0, "must-003": 0.2},
                          n_must=3, n_not=0, n_edge=0, trials=5)
    r = run_ix("run", "--lab", str(lab), "--gate", "case:recall.lower>=0.5",
               env={"COLUMNS": "80"})
    assert r.code == 1, r.output
    said = " ".join(r.stderr.split())
    assert "gate failed in exp: case:recall.lower>=0.5 (per case, unadjusted): target: 1 of " \
           "3 cases did not clear it: must-003 " in said
    assert "must-001" not in said.split("gate failed")[1] and not too_wide(r.stdout)
    summary = json.loads((exp / "results" / "summary-latest.json").read_text())
    [g] = summary["gates"]
    assert [c["probe_id"] for c in g["failed"]] == ["must-003"]
    report = ix_in_process("report", "--lab", str(lab), "exp", env={"COLUMNS": "80"})
    assert "GATE FAILED — case:recall.lower>=0.5" in " ".join(report.stdout.split())

    (exp / "experiment.yaml").write_text((exp / "experiment.yaml").read_text()
                                         + "gate: ['case:recall.value>=0.1']\n")
    r = ix_in_process("run", "--lab", str(lab))
    assert r.code == 0, r.output  # the lowest case's rate is 1/5
    (exp / "experiment.yaml").write_text((exp / "experiment.yaml").read_text()
                                         .replace(">=0.1", "=>0.1"))
    r = ix_in_process("run", "--lab", str(lab))
    assert r.code == 2 and "gate[0]" in r.stderr and "experiment.yaml" in r.stderr, r.output
