"""Issue 32 §8, "undefined is n/a": precision with no predicted positive (and F1 with no TP,
FP or FN) is null in the summary and never compared; a negative ICC keeps its estimate but
the design effect is floored at 1; "across seeds" names what its pooled value estimates and
gives the mean of the seeds' own values."""

from fractions import Fraction
from typing import Any

import pytest
from scipy import stats

from ix.eval.models import EvalCase
from ix.eval.run_summary import summarise_tallies
from ix.eval.scoring import Tally

K = 3
CASES = ([EvalCase(id=f"m{i}", prompt="p", expectation="must_trigger") for i in range(3)]
         + [EvalCase(id=f"n{i}", prompt="p", expectation="should_not_trigger")
            for i in range(3)])


def _tally(must_passed: int, not_passed: int, cases=CASES) -> Tally:
    t = Tally(cases)
    for c in cases:
        passed = must_passed if c.expectation == "must_trigger" else not_passed
        for k in range(K):
            t.add(c.id, k < passed, k)
    return t


def _summary(tallies: dict[str, Tally], goal: dict[str, Any] | None = None,
             cases=CASES) -> dict[str, Any]:
    info = {"trials_mode": {"mode": "fixed"}, "sensor": "activation", "seed": 1,
            "trials_per_case": K, "started_at": None, "finished_at": None,
            "skipped_cases": []}
    return dict(summarise_tallies(experiment_name="e", run_id="r", run_status="completed",
                                  subjects=[(n, "") for n in tallies], tallies=tallies,
                                  cases=cases, trials_per_case=K, info=info, goal=goal))


def _never_vs_always() -> dict[str, Any]:
    """`never` activates on nothing (TP = FP = 0); `fires` on every must and one trial in
    three of the should-not cases (TP = 3, FP = 0)."""
    goal = {"hypothesis": "h", "compare": ["never", "fires"], "metric": "precision",
            "direction": "increase", "min_effect": 0.0, "credibility": 0.95}
    return _summary({"never": _tally(0, 0), "fires": _tally(3, 1)}, goal)


def test_precision_without_a_predicted_positive_is_null_with_the_prior_s_interval():
    m = _never_vs_always()["subjects"][0]["metrics"]
    assert (m["tp"], m["fp"]) == (0, 0)
    assert m["precision"] is None                       # was 0.0, outside [0.025, 0.975]
    assert m["precision_ci"] == pytest.approx([stats.beta.ppf(0.025, 1, 1),
                                               stats.beta.ppf(0.975, 1, 1)], abs=1e-6)
    assert m["recall"] == 0.0 and m["f1"] == 0.0        # defined: every must case missed


def test_no_p_better_against_a_side_whose_precision_is_undefined():
    e = _never_vs_always()["comparisons"][0]["metrics"]["precision"]
    assert e["p_variant_better"] is None                # was 0.8
    assert e["diff"] is None and e["diff_ci"] == [None, None] and e["n"] == 0
    assert e["control"] is None and e["variant"] == 1.0
    assert "undefined for the control" in e["not_compared"]
    assert "no predicted positive" in e["not_compared"]


def test_f1_is_not_compared_when_a_side_has_no_tp_fp_or_fn():
    only_not = [c for c in CASES if c.expectation == "should_not_trigger"]
    s = _summary({"a": _tally(0, 0, only_not), "b": _tally(0, 3, only_not)}, cases=only_not)
    assert s["subjects"][0]["metrics"]["f1"] is None
    e = s["comparisons"][0]["metrics"]["f1"]
    assert e["p_variant_better"] is None and "undefined for the control" in e["not_compared"]


def test_a_goal_on_an_undefined_metric_is_inconclusive_and_says_why():
    g = _never_vs_always()["goal"]
    assert g["verdict"] == "inconclusive"               # was decided on a side with no data
    assert g["p_supported"] is None and g["p_refuted"] is None
    assert "undefined for the control" in g["note"]


def test_reports_print_n_a_for_undefined_precision_and_say_why_it_is_not_compared():
    from ix.report.html import report_body_html
    from ix.report.markdown import report_markdown
    from ix.report.run_report import build_report

    s = _never_vs_always()
    report = build_report(s, {}, [])
    md = report_markdown(report)
    row = next(line for line in md.splitlines() if line.startswith("| never |"))
    assert row.split("|")[2].strip() == "n/a"
    assert "0.000 [0.03, 0.97]" not in md
    assert "not compared: precision is undefined for the control" in md
    html = report_body_html(report)
    assert "not compared: precision is undefined for the control" in html
    assert "0.000 [0.03, 0.97]" not in html


def test_terminal_prints_n_a_without_an_interval():
    from rich.console import Console

    from ix.report.console import metrics_text

    block = _never_vs_always()["subjects"][0]
    text = metrics_text(block).plain
    assert text.startswith("precision n/a ")
    assert "0.000" not in text.split("recall")[0]
    console = Console(width=120, record=True)
    from ix.report.terminal import comparison_table

    console.print(comparison_table(_never_vs_always()))
    out = console.export_text()
    assert "not compared" in out and "precision is undefined for the control" in out


def test_ix_compare_does_not_compare_precision_with_a_run_that_has_none():
    from ix.report.runs import compare_runs

    before = _summary({"s": _tally(0, 0)})
    after = {**_summary({"s": _tally(3, 1)}), "run_id": "r2"}
    m = compare_runs([before, after])["comparisons"][0]["metrics"]["precision"]
    assert m["p_better"] is None and m["before"] is None and m["after"] == 1.0
    assert "undefined" in m["not_compared"]


def test_design_effect_is_floored_at_one_and_a_negative_icc_is_kept_with_a_note():
    """Every case at the same rate with less spread than binomial: the one-way ANOVA ICC
    ((F − 1)/(F + n₀ − 1) with F = 0) is negative; the design effect is 1, not below."""
    cases = [EvalCase(id=f"m{i}", prompt="p", expectation="must_trigger") for i in range(4)]
    t = Tally(cases)
    for c in cases:                                     # 2 of 4 trials pass in every case
        for k in range(4):
            t.add(c.id, k < 2, k)
    s = _summary({"s": t}, cases=cases)
    r = s["subjects"][0]["reliability"]["must_trigger"]
    # identical groups: between-case mean square 0, so F = 0 and ICC = (F − 1)/(F + n0 − 1)
    f, n0 = 0.0, 4
    assert r["icc"] == pytest.approx((f - 1) / (f + n0 - 1))  # −1/3
    assert r["design_effect"] == 1.0                    # was 1 + 3·(−1/3) = 0
    assert "floored at 1" in r["note"]


def test_across_seeds_reports_the_mean_of_the_seeds_and_names_the_pooled_estimand():
    """Three seeds whose own F1s differ from the F1 of the pooled votes: seed_mean is their
    exact mean; `estimand` says the pooled value is a vote over every seed's trials."""
    from ix.report.seeds import pooled

    cases = [EvalCase(id=f"m{i}", prompt="p", expectation="must_trigger") for i in range(2)]
    cases += [EvalCase(id="n0", prompt="p", expectation="should_not_trigger")]

    def run(m0: int, m1: int, n0: int) -> dict[str, Any]:
        t = Tally(cases)
        for cid, passed in (("m0", m0), ("m1", m1), ("n0", n0)):
            for k in range(K):
                t.add(cid, k < passed, k)
        return _summary({"s": t}, cases=cases)["subjects"][0]

    # seed votes (m0, m1, n0): (1,0,0) F1 2/3, (1,1,1) F1 4/5, (0,1,0) F1 2/3
    blocks = [run(2, 1, 0), run(3, 2, 2), run(1, 2, 1)]
    out = pooled(blocks, [1, 2, 3], "f1")
    per_seed = [Fraction(2, 3), Fraction(4, 5), Fraction(2, 3)]
    assert [x["value"] for x in out["per_seed"]] == pytest.approx([float(x) for x in per_seed])
    assert out["seed_mean"] == pytest.approx(float(sum(per_seed) / 3), abs=1e-6)
    # pooled votes: m0 6/9, m1 5/9, n0 3/9 -> TP 2, FP 0, FN 0: F1 1, above every seed's
    assert out["value"] == 1.0
    assert "not the mean of the seeds" in out["estimand"]
