"""Every interval in a real summary contains the estimate printed next to it (issue 15 §1,
STATS.md §12), for summaries built through `summarise_tallies` from random tallies.

The walk is generic: in any mapping, `X_ci` pairs with `X` (a number, or a mapping k → number
such as pass_at_k), `ci` with `rate`, and `interval` with `estimate`; so an interval added
later (specificity, pass@k, ...) is checked too. An estimate over an empty denominator (null,
printed n/a: precision with TP + FP = 0, recall with TP + FN = 0, F1 with no TP, FP or FN) has
no interval to hold, and is skipped.
"""

from collections.abc import Iterator
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ix.eval.models import EvalCase
from ix.eval.run_summary import summarise_tallies
from ix.eval.scoring import Tally

ROUNDING = 2e-6  # summaries round every number to 6 digits
EXPECTATIONS = ["must_trigger", "should_not_trigger"]


def _pairs(node: Any, path: str = "") -> Iterator[tuple[str, Any, Any]]:
    """(path, estimate, interval) for every interval in the summary."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            yield from _pairs(item, f"{path}[{i}]")
        return
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        name = None
        if key.endswith("_ci") and key[:-3] in node:
            name = key[:-3]
        elif key == "ci" and "rate" in node:
            name = "rate"
        elif key == "interval" and "estimate" in node:
            name = "estimate"
        if name is not None:
            estimate = node[name]
            if isinstance(estimate, dict) and isinstance(value, dict):
                for k, est in estimate.items():
                    yield f"{path}.{key}[{k}]", est, value.get(k)
            else:
                yield f"{path}.{key}", estimate, value
        yield from _pairs(value, f"{path}.{key}")


def _undefined(path: str, summary_metrics: dict[str, Any]) -> bool:
    m = summary_metrics
    return ((path.endswith("precision_ci") and m["tp"] + m["fp"] == 0)
            or (path.endswith("recall_ci") and m["tp"] + m["fn"] == 0)
            or (path.endswith("f1_ci") and m["tp"] + m["fp"] + m["fn"] == 0))


def _check(summary: dict[str, Any]) -> int:
    checked = 0
    blocks = {f".subjects[{i}]": b["metrics"] for i, b in enumerate(summary["subjects"])}
    blocks[""] = summary["metrics"]
    for path, estimate, interval in _pairs(summary):
        if estimate is None or interval is None or None in interval:
            continue
        owner = max((p for p in blocks if path.startswith(p + ".metrics")), key=len,
                    default=None)
        if owner is not None and _undefined(path, blocks[owner]):
            continue
        lo, hi = interval
        assert lo - ROUNDING <= estimate <= hi + ROUNDING, (path, estimate, interval)
        assert 0.0 - ROUNDING <= lo <= hi <= 1.0 + ROUNDING or "diff" in path, (path, interval)
        checked += 1
    return checked


@st.composite
def runs(draw: st.DrawFn) -> tuple[list[EvalCase], dict[str, Tally], int, dict | None]:
    k = draw(st.integers(1, 7))
    n_cases = draw(st.integers(1, 10))
    cases = [EvalCase(id=f"c{i}", prompt="p",
                      expectation=draw(st.sampled_from(EXPECTATIONS)))  # type: ignore[arg-type]
             for i in range(n_cases)]
    n_subjects = draw(st.integers(1, 3))
    extreme = st.sampled_from([0, k])  # cases at 0 or 1 are where intervals used to fail
    tallies = {}
    for s in range(n_subjects):
        tally = Tally(cases)
        for case in cases:
            passed = draw(st.one_of(extreme, st.integers(0, k)))
            errors = draw(st.sampled_from([0, 0, 0, 1, k]))
            for t in range(k):
                tally.add(case.id, None if t < errors else (t - errors) < passed, t)
        tallies[f"s{s}"] = tally
    goal = None
    if n_subjects > 1 and draw(st.booleans()):
        goal = {"hypothesis": "h", "compare": ["s0", "s1"],
                "metric": draw(st.sampled_from(["f1", "recall", "precision",
                                                "activation_rate", "pass_rate"])),
                "direction": draw(st.sampled_from(["increase", "decrease", "differ"])),
                "min_effect": draw(st.sampled_from([0.0, 0.1])), "credibility": 0.95}
    return cases, tallies, k, goal


def _summary(cases, tallies, k, goal, prior="uniform") -> dict[str, Any]:
    info = {"trials_mode": {"mode": "fixed"}, "sensor": "activation", "seed": 1,
            "trials_per_case": k, "started_at": None, "finished_at": None,
            "skipped_cases": []}
    return summarise_tallies(experiment_name="e", run_id="r", run_status="completed",
                             subjects=[(name, "") for name in tallies], tallies=tallies,
                             cases=cases, trials_per_case=k, info=info, goal=goal,
                             **({"prior": prior} if prior != "uniform" else {}))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(run=runs())
def test_every_interval_in_a_summary_contains_its_estimate(run) -> None:
    """score_ci, precision/recall/F1, trial-level rates, pass@k and every comparison's diff_ci
    (the comparisons are S2's part of issue 15: they hold once `eval/comparisons.py` routes
    through `difference_interval`)."""
    _check(_summary(*run))


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(run=runs())
def test_every_interval_contains_its_estimate_under_the_jeffreys_prior(run) -> None:
    summary = _summary(*run, prior="jeffreys")
    assert summary["statistics"]["prior"] == "jeffreys"
    _check(summary)


def test_a_ten_of_ten_case_prints_an_interval_reaching_one() -> None:
    cases = [EvalCase(id="a", prompt="p", expectation="must_trigger"),
             EvalCase(id="b", prompt="p", expectation="should_not_trigger")]
    tally = Tally(cases)
    for t in range(10):
        tally.add("a", True, t)
        tally.add("b", False, t)
    summary = _summary(cases, {"s": tally}, 10, None)
    a, b = summary["probe_results"]
    assert a["score"] == 1.0 and a["score_ci"][1] == 1.0 and a["score_ci"][0] > 0.76
    assert b["score"] == 0.0 and b["score_ci"][0] == 0.0
    m = summary["metrics"]
    assert m["f1"] == 1.0 and m["f1_ci"][1] == 1.0
    assert m["precision_ci"][1] == 1.0 and m["recall_ci"][1] == 1.0
    assert summary["trial_level"]["must_trigger"]["ci"][1] == 1.0
    assert summary["trial_level"]["should_not_trigger"]["ci"][0] == 0.0
    assert _check(summary) >= 9
