"""`scorers:` (`ix.eval.scorers`): how a case's trials become its verdict, decided once the
trials are in — the built-ins against their definitions (pass@k / pass^k for `any` / `all`
with exact fractions), the metrics and paired comparisons following the scorer's votes, the
summary naming it, bad values refused naming the field, and a scorer plugin."""

import json
from fractions import Fraction
from math import comb
from pathlib import Path

import pytest

from conftest import ix_in_process, mock_experiment, run_ix, write
from ix import api
from ix.domain.errors import ConfigError
from ix.domain.verdicts import CaseTrials, scored
from ix.eval import plugins
from ix.eval.comparisons import paired_tables
from ix.eval.models import EvalCase
from ix.eval.scorers import build_scorer, build_scorers
from ix.eval.scoring import Tally

RATES = {"must-001": 0.4, "must-002": 0.9, "must-003": 0.1,
         "not-001": 0.3, "not-002": 0.0, "not-003": 0.6}


def _pass_at(n: int, c: int, k: int) -> Fraction:
    """Chen et al.'s pass@k, exactly: 1 − C(n−c, k)/C(n, k)."""
    return 1 - Fraction(comb(n - c, k), comb(n, k))


def _pass_hat(n: int, c: int, k: int) -> Fraction:
    """pass^k, exactly: C(c, k)/C(n, k)."""
    return Fraction(comb(c, k), comb(n, k))


@pytest.mark.parametrize("valid", [1, 2, 5])
@pytest.mark.parametrize("expectation", ["must_trigger", "should_not_trigger"])
def test_any_and_all_are_pass_at_k_and_pass_hat_k_at_the_case_s_own_trials(valid, expectation):
    for passed in range(valid + 1):
        case = CaseTrials("c", expectation, passed, valid)
        right = passed if expectation == "must_trigger" else valid - passed
        assert build_scorer({"kind": "any"}).verdict(case) == (_pass_at(valid, right, valid) == 1)
        assert build_scorer({"kind": "all"}).verdict(case) == (_pass_hat(valid, right, valid) == 1)


def test_majority_scorer_is_the_vote_ix_always_made():
    majority = build_scorer({"kind": "majority"})
    for valid in range(1, 7):
        for passed in range(valid + 1):
            for e in ("must_trigger", "should_not_trigger"):
                fired = passed / valid > 0.5  # a tie does not activate
                want = fired if e == "must_trigger" else not fired
                assert majority.verdict(CaseTrials("c", e, passed, valid)) == want


def test_threshold_counts_right_trials_or_compares_the_mean_score():
    at = build_scorer({"kind": "threshold", "at": 0.6})
    assert [at.verdict(CaseTrials("c", "must_trigger", p, 5)) for p in range(6)] == [
        False, False, False, True, True, True]            # 3 of 5 right is 0.6
    assert [at.verdict(CaseTrials("c", "should_not_trigger", p, 5)) for p in range(6)] == [
        True, True, True, False, False, False]            # right = not passed
    on_score = build_scorer({"kind": "threshold", "at": 0.7, "of": "score"})
    assert on_score.verdict(CaseTrials("c", "must_trigger", 1, 5, mean_score=0.7))
    assert not on_score.verdict(CaseTrials("c", "must_trigger", 5, 5, mean_score=0.69))
    assert on_score.verdict(CaseTrials("c", "should_not_trigger", 5, 5, mean_score=0.2))


def test_mean_decides_on_graded_scores_and_equals_majority_on_pass_fail_ones():
    mean = build_scorer({"kind": "mean"})
    # three trials all "passed" by a lenient sensor, but their scores average 0.4
    assert not mean.verdict(CaseTrials("c", "must_trigger", 3, 3, mean_score=0.4))
    assert mean.verdict(CaseTrials("c", "must_trigger", 1, 3, mean_score=0.6))
    majority = build_scorer({"kind": "majority"})
    for passed in range(5):
        case = CaseTrials("c", "must_trigger", passed, 4, mean_score=passed / 4)
        assert mean.verdict(case) == majority.verdict(case)


def test_a_case_without_a_valid_trial_has_no_verdict_whatever_the_scorer():
    result = scored(CaseTrials("c", "must_trigger", 0, 0), build_scorer({"kind": "any"}))
    assert (result.correct, result.fired) == (False, False)


def _run(lab: Path, name: str, scorers: str, **kw) -> dict:
    mock_experiment(lab, name, rates=RATES, extra_yaml=f"scorers: {scorers}\n", **kw)
    (result,) = api.run(lab, [name])
    return dict(result.summary)


def test_the_scorer_decides_the_votes_the_metrics_and_the_summary_names_it(lab):
    base = _run(lab, "majority", "[majority]")
    lenient = _run(lab, "any", "[any]")
    strict = _run(lab, "all", "[all]")
    # the same trials (same seed, same rates): only the verdicts differ
    assert [p["passed"] for p in base["probe_results"]] == \
        [p["passed"] for p in strict["probe_results"]] == \
        [p["passed"] for p in lenient["probe_results"]]
    assert (base["scorer"], lenient["scorer"], strict["scorer"]) == (
        {"kind": "majority"}, {"kind": "any"}, {"kind": "all"})
    for summary in (lenient, strict):
        m = summary["metrics"]
        want = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
        for p in summary["probe_results"]:
            must = p["expectation"] == "must_trigger"
            fired = p["correct"] if must else not p["correct"]
            want[("tp" if fired else "fn") if must else ("fp" if fired else "tn")] += 1
        assert {k: m[k] for k in want} == want
    # the correct rate under any / all is pass@k / pass^k at k = the trials (exactly)
    n = 5
    for summary, kind, exact in ((lenient, "pass_at_k", _pass_at), (strict, "pass_hat_k",
                                                                     _pass_hat)):
        probes = summary["probe_results"]
        rights = [p["passed"] if p["expectation"] == "must_trigger" else n - p["passed"]
                  for p in probes]
        mean = sum(exact(n, r, n) for r in rights) / len(rights)
        assert Fraction(sum(p["correct"] for p in probes), len(probes)) == mean
        assert summary[kind][str(n)] == pytest.approx(float(mean))


def test_no_scorers_key_is_the_majority_and_named_so(lab):
    mock_experiment(lab, "plain", rates=RATES)
    (result,) = api.run(lab, ["plain"])
    assert result.summary["scorer"] == {"kind": "majority"}
    mock_experiment(lab, "named", rates=RATES, extra_yaml="scorers: [majority]\n")
    (named,) = api.run(lab, ["named"])
    assert named.summary["metrics"] == result.summary["metrics"]
    assert named.summary["probe_results"] == result.summary["probe_results"]


def test_further_scorers_are_reported_beside_the_one_that_decides(lab):
    summary = _run(lab, "several", "[majority, any, {kind: threshold, at: 1.0}]")
    [block] = summary["subjects"]
    also = {json.dumps(a["scorer"], sort_keys=True): a for a in block["also_scored"]}
    alone = _run(lab, "alone", "[any]")
    assert also['{"kind": "any"}']["f1"] == alone["metrics"]["f1"]
    assert also['{"kind": "any"}']["correct"] == sum(p["correct"]
                                                     for p in alone["probe_results"])
    strict = _run(lab, "strict", "[all]")
    assert also['{"at": 1.0, "kind": "threshold"}']["correct"] == sum(
        p["correct"] for p in strict["probe_results"])


def test_paired_comparisons_pair_the_scorer_s_votes():
    cases = [EvalCase(id="m", prompt="p", expectation="must_trigger")]
    a, b = Tally(cases), Tally(cases)
    for t, (x, y) in enumerate([(True, True), (True, False), (False, True)]):
        a.add("m", x, t)
        b.add("m", y, t)
    # majority: both 2/3 → both right; all: neither is right on every trial
    assert paired_tables(a, b, cases)["pass_rate"].both == 1
    a.scorer = b.scorer = build_scorer({"kind": "all"})
    assert paired_tables(a, b, cases)["pass_rate"].neither == 1


@pytest.mark.parametrize(("yaml", "field", "words"), [
    ("scorers: [anny]", "scorers[0].kind", "did you mean 'any'"),
    ("scorers: [{kind: threshold, at: 1.5}]", "scorers[0].at", "(0, 1]"),
    ("scorers: [{kind: threshold, at: true}]", "scorers[0].at", "(0, 1]"),
    ("scorers: [{kind: threshold}]", "scorers[0].at", "needs 'at'"),
    ("scorers: [{kind: threshold, at: 0.5, of: votes}]", "scorers[0].of", "trials"),
    ("scorers: [majority, {kind: any, at: 0.5}]", "scorers[1].at", "takes no option"),
    ("scorers: []", "scorers", ""),
    ("scorers: any", "scorers", ""),
    ("scorers: [{at: 0.5}]", "scorers", "needs a 'kind'"),
])
def test_a_bad_scorer_is_refused_naming_the_file_and_the_field(lab, yaml, field, words):
    path = mock_experiment(lab, "bad", rates=RATES, extra_yaml=yaml + "\n")
    plan, problems = api.check(path, lab)
    assert plan is None and problems
    rendered = [p.render() for p in problems]
    hit = [r for r in rendered if f"{path / 'experiment.yaml'}: {field}" in r]
    assert hit and words in hit[0], rendered
    assert not (path / "results").exists()


def test_build_scorers_lists_every_problem_at_once():
    with pytest.raises(ConfigError) as caught:
        build_scorers([{"kind": "nope"}, {"kind": "threshold", "at": 2}])
    assert [e.field for e in caught.value.errors] == ["scorers[0].kind", "scorers[1].at"]
    assert plugins.in_use("scorer", "nope") is None


def test_ix_validate_refuses_a_bad_scorer_with_exit_2_and_no_traceback(lab):
    path = mock_experiment(lab, "cli", rates=RATES,
                           extra_yaml="scorers: [{kind: threshold, at: 0}]\n")
    write(path / "x.txt", "")  # a stray file is another problem, listed too
    r = run_ix("validate", str(path), cwd=lab)
    assert r.code == 2, r
    assert f"{path / 'experiment.yaml'}: scorers[0].at: must be a number in (0, 1]" in r.stderr
    assert "Traceback" not in r.stderr


def test_ix_compare_pairs_the_verdicts_each_run_s_scorer_recorded(lab):
    mock_experiment(lab, "twice", rates=RATES, extra_yaml="scorers: [all]\n")
    (a,) = api.run(lab, ["twice"])
    (b,) = api.run(lab, ["twice"], api.Overrides(seed=7))
    out = api.compare_runs(lab, [a.run_id, b.run_id])
    [entry] = out["comparisons"]
    for metric in ("recall", "precision", "f1"):
        assert entry["metrics"][metric]["before"] == pytest.approx(a.summary["metrics"][metric])
        assert entry["metrics"][metric]["after"] == pytest.approx(b.summary["metrics"][metric])


def test_ix_run_says_which_scorer_decided_unless_it_is_the_majority(lab):
    mock_experiment(lab, "said", rates=RATES,
                    extra_yaml="scorers: [{kind: threshold, at: 0.6}]\n")
    r = ix_in_process("run", "said", cwd=lab)
    assert r.code == 0 and "verdicts by the threshold at 0.6 scorer" in r.stdout, r
    mock_experiment(lab, "quiet", rates=RATES)
    assert "verdicts by the" not in ix_in_process("run", "quiet", cwd=lab).stdout
