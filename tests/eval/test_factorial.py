"""Comparisons in a factorial design (DESIGN.md §7): with `context:` × subjects × `sweep:`,
one factor at a time — never a pair that differs in two —, the lengths of a subject as one
Holm family, the interaction of each subject's trend with the control's, flipped cases
tested against trial noise, and a goal on any two conditions."""

from functools import cache

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from ix.eval.models import EvalCase
from ix.eval.run_summary import summarise_tallies
from ix.eval.schemas import summary_problems
from ix.eval.scoring import Tally
from ix.report.sweep import sweep_report

LENGTHS = [0, 8, 32]
CONDITIONS = ["base", "base[m=b]", "other"]  # the control, a sweep cell, another subject
NAMES = [f"{c}[ctx={n}]" for c in CONDITIONS for n in LENGTHS]
CONTEXT = {"prefix": "builtin:coding-session", "unit": "turns", "lengths": LENGTHS,
           "of": {f"{c}[ctx={n}]": [c, n] for c in CONDITIONS for n in LENGTHS}}
SWEEP = {"subject": "base", "keys": {"m": ["a", "b"]}, "ablate": [],
         "conditions": [{"subject": "base", "values": {}, "without": None},
                        {"subject": "base[m=b]", "values": {"m": "b"}, "without": None}]}
CASES = ([EvalCase(id=f"must-{i:02d}", prompt="p", expectation="must_trigger")
          for i in range(12)]
         + [EvalCase(id=f"not-{i:02d}", prompt="p", expectation="should_not_trigger")
            for i in range(8)])
K = 6
INFO = {"sensor": "activation", "seed": 0, "trials_per_case": K,
        "trials_mode": {"mode": "fixed"}, "started_at": None, "finished_at": None,
        "skipped_cases": []}


def _where(name: str) -> tuple[str, int]:
    """`base[m=b][ctx=8]` → ("base[m=b]", 8), parsed here, independently of ix."""
    condition, length = name[:-1].rsplit("[ctx=", 1)
    return condition, int(length)


def _tally(rates: np.ndarray, u: np.ndarray) -> Tally:
    tally = Tally(CASES)
    for case, p, row in zip(CASES, rates, u, strict=True):
        for t, x in enumerate(row):
            tally.add(case.id, bool(x < p), t)
    return tally


def _run(goal=None, seed=3):
    """Every condition at every length; `other` decays faster than `base`, the sweep cell
    like it; common random numbers (one uniform per case and trial for everyone)."""
    rng = np.random.default_rng(seed)
    start = np.concatenate([rng.uniform(0.6, 0.95, 12), rng.uniform(0.0, 0.2, 8)])
    u = rng.random((len(CASES), K))
    decay = {"base": 0.03, "base[m=b]": 0.03, "other": 0.09}
    tallies = {}
    for c in CONDITIONS:
        for n in LENGTHS:
            must = np.arange(len(CASES)) < 12
            rates = np.where(must, np.clip(start - decay[c] * np.log2(1 + n), 0, 1), start)
            tallies[f"{c}[ctx={n}]"] = _tally(rates, u)
    summary = summarise_tallies(
        experiment_name="e", run_id="r", run_status="completed",
        subjects=[(name, "") for name in NAMES], tallies=tallies, cases=CASES,
        trials_per_case=K, info=INFO, goal=goal, context=CONTEXT, sweep=SWEEP)
    return summary, tallies


@cache
def _plain():
    """The run without a goal, summarised once for the tests that only read it."""
    return _run()


def test_the_pairs_change_one_factor_at_a_time():
    from ix.eval.factorial import factor_pairs

    pairs = factor_pairs(NAMES, CONTEXT, SWEEP)
    seen = []
    for p in pairs:
        (cc, lc), (cv, lv) = _where(NAMES[p.control]), _where(NAMES[p.variant])
        assert lc == lv == p.length and cc == "base" and cv != "base"
        assert p.factor == ("sweep" if cv == "base[m=b]" else "subject")
        seen.append((cv, lv))
    assert seen == [(c, n) for c in CONDITIONS[1:] for n in LENGTHS]
    # without context: every subject against the first, as before
    plain = factor_pairs(["a", "b", "c"])
    assert [(p.control, p.variant, p.length) for p in plain] == [(0, 1, None), (0, 2, None)]
    assert factor_pairs(["a"]) == []


def test_a_context_by_subjects_by_sweep_run_compares_within_one_factor_only():
    """623c023 compared all 8 expanded subjects with `base[ctx=0]`: `other[ctx=32]` against
    `base[ctx=0]` differs in two factors."""
    summary, _ = _plain()
    assert summary_problems(summary) == []
    comparisons = summary["comparisons"]
    assert len(comparisons) == 6
    for c in comparisons:
        control, variant = _where(c["control"]), _where(c["variant"])
        assert control[1] == variant[1] == c.get("at_length")  # the same length
        assert control[0] == "base" and variant[0] != "base"
        assert c["factor"] == ("sweep" if variant[0] == "base[m=b]" else "subject")
        assert all(m["family"] == f"variants:{k}" for k, m in c["metrics"].items())
    # Holm across the 6 comparisons, per metric
    raw = [c["metrics"]["activation_rate"]["p_value"] for c in comparisons]
    adjusted = multipletests(raw, method="holm")[1]
    assert [c["metrics"]["activation_rate"]["p_value_holm"] for c in comparisons] == \
        pytest.approx(list(adjusted), abs=1e-6)


def test_the_lengths_of_each_subject_are_one_holm_family():
    summary, _ = _plain()
    for s in summary["context"]["subjects"]:
        versus = s["versus_shortest"]
        assert [v["length"] for v in versus] == LENGTHS[1:]
        assert {v["family"] for v in versus} == {f"context:{s['subject']}"}
        adjusted = multipletests([v["p_value"] for v in versus], method="holm")[1]
        assert [v["p_value_holm"] for v in versus] == pytest.approx(list(adjusted), abs=1e-6)


def test_each_subject_gets_its_interaction_with_the_control():
    from ix.stats.trend import case_level_trend_difference

    summary, tallies = _plain()
    by = {s["subject"]: s for s in summary["context"]["subjects"]}
    assert by["base"].get("interaction") is None  # the control itself
    must = [c for c in CASES if c.expectation == "must_trigger"]

    def counts(condition):
        t = [tallies[f"{condition}[ctx={n}]"] for n in LENGTHS]
        return [[(x.counts[c.id].passed, x.counts[c.id].valid) for x in t] for c in must]

    for condition in ("base[m=b]", "other"):
        i = by[condition]["interaction"]
        ref = case_level_trend_difference(counts("base"), counts(condition), LENGTHS)
        assert i["versus"] == "base" and i["n_cases"] == 12 and i["family"] == "interaction"
        assert i["diff"] == pytest.approx(ref.slope, abs=1e-6)
        assert i["diff_ci"] == pytest.approx(list(ref.interval(0.95)), abs=1e-6)
        assert i["p_lower"] == pytest.approx(ref.p_decline, abs=1e-6)
    assert by["base[m=b]"]["interaction"]["diff"] == 0.0  # the same rates, the same draws
    other = by["other"]["interaction"]
    assert other["diff"] < 0 and other["p_lower"] > 0.99  # `other` decays faster
    raw = [by[c]["interaction"]["p_value"] for c in ("base[m=b]", "other")]
    assert [by[c]["interaction"]["p_value_holm"] for c in ("base[m=b]", "other")] == \
        pytest.approx(list(multipletests(raw, method="holm")[1]), abs=1e-6)


def test_the_sweep_is_judged_at_every_length():
    summary, _ = _plain()
    table = sweep_report(summary, "activation_rate")
    assert [r["subject"] for r in table["rows"]] == ["base[ctx=0]", "base[m=b][ctx=0]"]
    for row in table["rows"]:
        assert [a["length"] for a in row["by_length"]] == LENGTHS
        assert row["by_length"][0]["p_best"] == row["p_best"]
    for j in range(len(LENGTHS)):
        assert sum(r["by_length"][j]["p_best"] for r in table["rows"]) == pytest.approx(
            1.0, abs=1e-3)


def test_a_flip_is_beyond_noise_only_when_its_counts_differ_beyond_trial_noise():
    cases = [EvalCase(id=f"c{i}", prompt="p", expectation="must_trigger") for i in range(10)]
    a, b = Tally(cases), Tally(cases)
    for i, case in enumerate(cases):
        for t in range(10):
            a.add(case.id, t < (10 if i == 0 else 6 if i == 1 else 5), t)
            b.add(case.id, t < (0 if i == 0 else 4 if i == 1 else 5), t)
    s = summarise_tallies(experiment_name="e", run_id="r", run_status="completed",
                          subjects=[("a", ""), ("b", "")], tallies={"a": a, "b": b},
                          cases=cases, trials_per_case=10, info={})
    flips = {f["probe_id"]: f for f in s["comparisons"][0]["flips"]}
    assert set(flips) == {"c0", "c1"}  # both changed their majority vote
    assert flips["c0"]["beyond_noise"] is True and flips["c0"]["p_value"] < 1e-4
    assert flips["c1"]["beyond_noise"] is False  # 6/10 against 4/10: trial noise
    assert {f["family"] for f in flips.values()} == {"cases"}


def test_a_goal_may_name_any_two_conditions_whole():
    goal = {"hypothesis": "h", "metric": "activation_rate", "direction": "decrease",
            "min_effect": 0.05, "credibility": 0.95,
            "compare": ["base[ctx=0]", "other[ctx=32]"]}
    summary, _ = _run(goal=goal)
    by = {b["name"]: b for b in summary["subjects"]}
    effect = summary["goal"]["effect"]
    assert summary["goal"]["compare"] == ["base[ctx=0]", "other[ctx=32]"]
    assert effect["control"] == pytest.approx(
        by["base[ctx=0]"]["trial_level"]["must_trigger"]["rate"], abs=1e-6)
    assert effect["treatment"] == pytest.approx(
        by["other[ctx=32]"]["trial_level"]["must_trigger"]["rate"], abs=1e-6)
    assert summary["goal"]["verdict"] == "supported"
