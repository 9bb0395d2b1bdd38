"""The aggregate step of `001_…`: majority vote, confusion counts, metrics, interpretation."""

from fractions import Fraction

import pytest

from ix.eval.models import EvalCase, ProbeResult
from ix.eval.scoring import Tally, compute_metrics, interpret


def case(i: str, e: str) -> EvalCase:
    return EvalCase(id=i, prompt="p", expectation=e)


def probe(expectation: str, outcomes: list[bool | None]) -> ProbeResult:
    """One case's aggregate after trials with these outcomes (`None`: errored)."""
    tally = Tally([case("c", expectation)])
    for passed in outcomes:
        tally.add("c", passed)
    return tally.probe_results()[0]


def test_majority_vote_needs_strictly_more_than_half():
    half = probe("must_trigger", [True, False])
    assert half.score == 0.5 and half.correct is False
    more = probe("must_trigger", [True] * 3 + [False] * 2)
    assert more.score == 0.6 and more.correct is True
    not_half = probe("should_not_trigger", [True, False])
    assert not_half.correct is True


def test_errored_trials_do_not_dilute_the_activation_rate():
    r = probe("must_trigger", [True, None, None, True])
    assert r.score == 1.0 and r.correct


def test_metrics_match_exact_fractions():
    tally = Tally([case("m1", "must_trigger"), case("m2", "must_trigger"),
                   case("m3", "must_trigger"), case("n1", "should_not_trigger"),
                   case("n2", "should_not_trigger")])
    for pid, outcomes in {"m1": [1, 1, 0], "m2": [0, 0, 1], "m3": [1, 1, 1],
                          "n1": [1, 1, 0], "n2": [0, 0, 0]}.items():
        for o in outcomes:
            tally.add(pid, bool(o))
    res = tally.results("x")
    assert (res.tp, res.fn, res.fp, res.tn) == (2, 1, 1, 1)
    p, r = Fraction(2, 3), Fraction(2, 3)
    assert res.precision == pytest.approx(float(p))
    assert res.recall == pytest.approx(float(r))
    assert res.f1 == pytest.approx(float(2 * p * r / (p + r)))
    assert res.status == "needs_work"  # 0.50 <= f1 = 0.667 < 0.70


@pytest.mark.parametrize("f1,status", [(0.85, "excellent"), (0.8499, "good"), (0.70, "good"),
                                       (0.6999, "needs_work"), (0.5, "needs_work"),
                                       (0.4999, "poor"), (0.0, "poor")])
def test_status_thresholds(f1, status):
    m = {"f1": f1, "precision": 1.0, "recall": 1.0, "tp": 1, "fp": 0, "fn": 0, "tn": 1}
    assert interpret(m)["status"] == status


def test_empty_denominators_are_undefined_not_zero():
    """Issue 32 §8: a rate over nothing is None (n/a), never 0 and never NaN."""
    m = compute_metrics([])
    assert m == {"precision": None, "recall": None, "f1": None,
                 "tp": 0, "fp": 0, "fn": 0, "tn": 0}
    only_not = compute_metrics([probe("should_not_trigger", [False])])
    assert only_not["precision"] is None and only_not["recall"] is None
    assert only_not["f1"] is None and only_not["tn"] == 1


def test_a_skill_that_never_activates_has_no_precision_but_an_f1_of_zero():
    """TP = FP = 0 < FN: precision is undefined; F1 = 2TP/(2TP+FP+FN) = 0 is defined (the
    skill missed every case it must take), and recall is 0."""
    m = compute_metrics([probe("must_trigger", [False]), probe("should_not_trigger", [False])])
    assert m["precision"] is None
    assert m["recall"] == 0.0 and m["f1"] == 0.0
    assert interpret(m)["status"] == "poor"


def test_no_tp_fp_or_fn_is_no_data_not_poor():
    """Only should_not cases, all right: F1 is undefined, so the status is not "poor"."""
    m = compute_metrics([probe("should_not_trigger", [False])])
    verdict = interpret(m)
    assert verdict["status"] == "no_data"
    assert "F1 is undefined" in verdict["issues"][0]


def test_issues_and_suggestions_name_the_failing_cases():
    tally = Tally([case("m1", "must_trigger"), case("n1", "should_not_trigger")])
    tally.add("m1", False)
    tally.add("n1", True)
    res = tally.results("x")
    assert len(res.issues) == 2 and len(res.suggestions) == 2
    assert "m1" in " ".join(res.issues) and "n1" in " ".join(res.issues)


def test_no_issue_at_exactly_the_threshold():
    m = {"f1": 0.8, "precision": 0.8, "recall": 0.8, "tp": 4, "fp": 1, "fn": 1, "tn": 4}
    assert interpret(m)["issues"] == []


def test_tally_counts_errors_apart_and_leaves_unrun_cases_out_of_the_metrics():
    tally = Tally([case("m1", "must_trigger"), case("m2", "must_trigger")])
    tally.add("m1", None)
    tally.add("m2", True)
    assert tally.errors == 1 and tally.trials == 2
    res = tally.results("x")
    assert (res.tp, res.fn) == (1, 0)


@pytest.mark.parametrize(("runtime", "advice"), [
    (None, ["Narrow the skill's description", "Broaden the description"]),
    ("claude-code", ["Narrow the skill's description", "Broaden the description"]),
    ("lexical", ["Narrow the skill's description", "Broaden the description"]),
    ("mock", ["The mock runtime never reads the description: its default_rate"]),
    ("random", ["The random runtime ignores the prompt and the description"]),
    ("command", ["The command runtime does not read skill descriptions"]),
])
def test_description_advice_only_for_runtimes_that_read_descriptions(runtime, advice):
    """Issue 33: "broaden the description" to a mock subject changes nothing; its advice
    says what does decide its calls (once, for low precision and recall alike)."""
    m = compute_metrics([probe("must_trigger", [False]), probe("should_not_trigger", [True])])
    suggestions = interpret(m, runtime=runtime)["suggestions"]
    assert len(suggestions) == len(advice)
    for said, start in zip(suggestions, advice, strict=True):
        assert said.startswith(start), said
