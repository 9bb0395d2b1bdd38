"""Reachability and the one sizing function (issue 32, items 3 and 4): a goal whose
direction the control cannot show says so in its verdict, its suggestion and `ix plan`, and
plans only for what is reachable; `ix validate`, a run's suggestion and `ix plan` size a
goal with one function (`ix.eval.goal_sizing.goal_size`), each naming its criterion."""

import json

import numpy as np
import pytest
from scipy import stats as sps

from ix.api import power_plan
from ix.eval.design import check_design
from ix.eval.goal_reach import control_estimate, reach_block
from ix.eval.goal_sizing import Basis
from ix.eval.goals import evaluate_goal
from ix.eval.models import EvalCase, Experiment
from ix.eval.run_summary import summarise_tallies
from ix.eval.scoring import Tally, compute_metrics
from ix.report.answer import goal_lines

FLOOR = "control recall 0.000: a decrease cannot be observed; only refuted is reachable"


def _cases(n_must: int, n_not: int) -> list[EvalCase]:
    return ([EvalCase(id=f"m{i:03d}", prompt="p", expectation="must_trigger")
             for i in range(n_must)]
            + [EvalCase(id=f"n{i:03d}", prompt="p", expectation="should_not_trigger")
               for i in range(n_not)])


def _tallies(cases: list[EvalCase], k: int, *passed: list[int]) -> list[Tally]:
    """One Tally a subject: passed[s][i] of k trials of case i activated."""
    out = []
    for row in passed:
        t = Tally(cases)
        for case, n in zip(cases, row, strict=True):
            for trial in range(k):
                t.add(case.id, trial < n, trial)
        out.append(t)
    return out


def _goal(metric="recall", direction="decrease", m=0.05, c=0.95) -> dict:
    return {"hypothesis": "h", "metric": metric, "compare": ["control", "treatment"],
            "direction": direction, "min_effect": m, "credibility": c}


def _evaluate(goal: dict, cases: list[EvalCase], k: int, control: list[int],
              treatment: list[int]) -> dict:
    tallies = _tallies(cases, k, control, treatment)
    metrics = [compute_metrics(t.probe_results()) for t in tallies]
    return evaluate_goal(goal, ["control", "treatment"], tallies, metrics, cases, k)


def test_a_decrease_from_a_control_at_0_is_said_unreachable_and_not_promised():
    # the case: recall 0.000 (0/18) and "recall falls by more than 0.05"; before,
    # the suggestion promised ~300 cases settling it, nearly all as supported
    cases = _cases(18, 10)
    out = _evaluate(_goal(), cases, 3, [0] * 28, [0] * 28)
    assert out["verdict"] == "inconclusive"
    assert out["reachable"] == {"verdicts": ["refuted"], "room": 0.0, "why": FLOOR}
    s = out["suggestion"]
    assert s["effect"] == 0.0 and s["effect_asked"] == -0.1
    assert s["p_supported"] == 0.0 and s["p_refuted"] == s["p_settle"] >= 0.8
    assert s["criterion"].startswith("from this run's rates, to settle with probability 0.8")
    assert "capped at the room the control recall 0.000 leaves" in s["method"]
    lines = goal_lines(out)
    assert FLOOR in lines
    assert any(line.startswith(f"to settle it: about {s['cases']} must_trigger") for line in lines)


def test_an_increase_from_a_control_at_1_is_unreachable_too():
    cases = _cases(12, 4)
    out = _evaluate(_goal(direction="increase"), cases, 3, [3] * 12 + [0] * 4,
                    [3] * 12 + [0] * 4)
    assert out["reachable"]["verdicts"] == ["refuted"]
    assert out["reachable"]["why"] == ("control recall 1.000: an increase cannot be "
                                       "observed; only refuted is reachable")


def test_a_control_with_room_keeps_both_verdicts():
    cases = _cases(20, 4)
    out = _evaluate(_goal(), cases, 3, [3] * 14 + [0] * 10, [3] * 12 + [0] * 12)
    assert out["reachable"]["verdicts"] == ["supported", "refuted"]
    assert out["reachable"]["why"] is None
    assert not any("reachable" in line for line in goal_lines(out))


@pytest.mark.parametrize(("metric", "tp", "fn", "fp", "tn", "a", "b"), [
    ("recall", 3, 15, 2, 8, 3 + 1, 15 + 1),
    ("precision", 3, 15, 2, 8, 3 + 1, 2 + 1),
    ("pass_rate", 3, 15, 2, 8, 3 + 8 + 1, 15 + 2 + 1),
])
def test_the_control_s_bounds_are_one_sided_at_the_goal_s_credibility(metric, tp, fn, fp,
                                                                      tn, a, b):
    # votes: 3 trials, 2 or 3 activated -> yes; the reference is scipy's Beta quantiles
    must = np.array([True] * (tp + fn) + [False] * (fp + tn))
    passed = np.array([3] * tp + [0] * fn + [2] * fp + [1] * tn)
    valid = np.full(must.size, 3)
    for c in (0.9, 0.95):
        x, (lo, hi) = control_estimate(metric, must, passed, valid, credibility=c)
        assert lo == pytest.approx(sps.beta.ppf(1 - c, a, b), abs=1e-9)
        assert hi == pytest.approx(sps.beta.ppf(c, a, b), abs=1e-9)
        assert lo <= x <= hi


def test_a_room_smaller_than_min_effect_is_unreachable_and_says_so():
    # 1 of 60 must cases activates: recall 0.017, at most 0.075 at credibility 0.95
    cases = _cases(60, 4)
    control = [3] + [0] * 63
    out = _evaluate(_goal(m=0.08), cases, 3, control, control)
    assert out["reachable"]["verdicts"] == ["refuted"]
    assert out["reachable"]["why"].startswith("control recall 0.017 (at most 0.075 at "
                                              "credibility 0.95): ")
    assert out["reachable"]["why"].endswith("a decrease beyond min_effect 0.08 is larger "
                                            "than the room left; only refuted is reachable")


def test_an_assumed_effect_beyond_the_room_is_capped_not_refused():
    # before: "a true effect of -0.3 ... is out of reach", exit 2; now the plan is for the
    # most the control allows, and says only refuted can come of it
    goal = _goal(m=0.05)
    basis = Basis.design(["must_trigger"] * 20 + ["should_not_trigger"] * 5, 0.1, 3)
    a = power_plan.plan_goal(goal, basis, effect=-0.3, source="a design")
    room = sps.binom.sf(1, 3, 0.1)       # P(a 3-trial vote activates) at rate 0.1
    assert a["effect_asked"] == -0.3 and a["effect"] == pytest.approx(-room, abs=1e-6)
    assert a["reachable"]["verdicts"] == ["refuted"] and a["p_supported"] == 0.0
    assert a["cases"] is not None and a["p_refuted"] >= 0.8


def test_populations_without_room_take_all_they_have_instead_of_being_chosen():
    # activation rate 0.056 (5 of 90 trials over 18 cases): a fall of 0.2 needs a control
    # at its 95% upper bound; the plan no longer keeps only the populations that allow it
    cases = _cases(18, 4)
    control = [1 if i in (0, 5, 9, 11, 14) else 0 for i in range(18)] + [0] * 4
    treatment = [1 if i == 2 else 0 for i in range(18)] + [0] * 4
    out = _evaluate(_goal("activation_rate", m=0.1), cases, 5, control, treatment)
    s = out["suggestion"]
    assert s["effect_asked"] == -0.2
    assert -0.2 + 0.02 < s["effect"] < 0
    assert "have less room and take all of it" in s["method"]


def test_validate_run_and_plan_size_one_goal_with_one_function(tmp_path):
    goal = _goal(m=0.075)
    # the design: `ix validate`'s number is the t start `ix plan` prints before a run
    cases = _cases(12, 12)
    exp = Experiment(name="e", trials=3, cases=tuple(cases), goal=goal)
    [warning] = [w for w in check_design(exp) if w.code == "too-few-cases"]
    design = power_plan.plan_goal(goal, Basis.design([c.expectation for c in cases], 0.5, 3),
                                source="the design")
    assert f"needs about {design['t_start']} must_trigger cases" in warning.message
    assert ("at the worst-case rate 0.5, to settle with probability 0.8 by the one-sided t "
            "approximation") in warning.message
    assert design["criterion"] == ("at the worst-case rate 0.5, to settle with probability "
                                   "0.8 by 400 simulated runs judged by ix's own rule")
    # a run: its suggestion and `ix plan` from its summary print the same size
    cases = _cases(20, 4)
    control = [3] * 18 + [2] * 2 + [0] * 4
    treatment = [3] * 14 + [2] * 2 + [1] * 4 + [0] * 4
    tallies = _tallies(cases, 3, control, treatment)
    summary = summarise_tallies(
        experiment_name="e", run_id="r", run_status="completed",
        subjects=[("control", ""), ("treatment", "")],
        tallies=dict(zip(["control", "treatment"], tallies, strict=True)), cases=cases,
        trials_per_case=3, info={}, goal=goal)
    s = summary["goal"]["suggestion"]
    assert summary["goal"]["verdict"] == "inconclusive" and s["cases"] > 20
    path = tmp_path / "summary-latest.json"
    path.write_text(json.dumps(summary), encoding="utf-8")
    inputs = power_plan.PlanningInputs(source=str(path), p=0.5, sigma2_a=0, sigma2_b=0,
                                     omega2=0, cases=24, trials=3, notes=())
    plan = power_plan._plan_goal_of(goal, None, inputs, p=None, trials=None, effect=None,
                                  power=0.8)
    assert (plan["cases"], plan["p_settle"]) == (s["cases"], s["p_settle"])
    assert plan["effect"] == s["effect"] and plan["compare"] == ["control", "treatment"]
    assert s["criterion"] == ("from this run's rates, to settle with probability 0.8 by "
                              "400 simulated runs judged by ix's own rule")
    assert plan["criterion"] == ("from the latest run's rates (control vs treatment), to "
                                 "settle with probability 0.8 by 400 simulated runs judged "
                                 "by ix's own rule")


def test_the_control_s_f1_bounds_map_u_s_beta_quantiles():
    # F1 = 2U/(1 + U), U ~ Beta(TP + 1, FP + FN + 1): the bounds are the map of U's
    # one-sided quantiles at the goal's credibility (scipy as the reference)
    tp, fn, fp, tn = 9, 6, 3, 7
    must = np.array([True] * (tp + fn) + [False] * (fp + tn))
    passed = np.array([3] * tp + [1] * fn + [2] * fp + [0] * tn)
    valid = np.full(must.size, 3)
    x, (lo, hi) = control_estimate("f1", must, passed, valid, credibility=0.9)
    u_lo, u_hi = sps.beta.ppf([0.1, 0.9], tp + 1, fp + fn + 1)
    assert x == pytest.approx(2 * tp / (2 * tp + fp + fn))
    assert (lo, hi) == pytest.approx((2 * u_lo / (1 + u_lo), 2 * u_hi / (1 + u_hi)), abs=1e-9)


def test_a_control_without_a_value_has_no_reach_block():
    # precision with no predicted positive, and activation_rate with no must case: the
    # control has no value, so nothing is said about what it leaves reachable
    must = np.array([True, True, False])
    x, _ = control_estimate("precision", must, np.array([0, 0, 0]), np.array([3, 3, 3]))
    assert x is None
    x, ci = control_estimate("activation_rate", ~must[:2], np.array([1, 2]), np.array([3, 3]))
    assert (x, ci) == (None, (0.0, 1.0))
    assert reach_block("precision", _goal("precision"), None, None) == (None, None)


@pytest.mark.parametrize(("goal", "control", "why"), [
    # min_effect 0 from the bound the other way: refuted ("no rise") needs a fall
    (_goal(direction="increase", m=0.0), 0.0,
     "control recall 0.000 with min_effect 0: refuted needs a decrease, which cannot be "
     "observed; only supported is reachable"),
    (_goal(direction="decrease", m=0.0), 1.0,
     "control recall 1.000 with min_effect 0: refuted needs an increase, which cannot be "
     "observed; only supported is reachable"),
    # differ with min_effect 0: the region of practical equivalence has no width
    (_goal(direction="differ", m=0.0), 0.4,
     "min_effect 0: refuted needs the effect inside [-0, 0], which has no width; only "
     "supported is reachable"),
    # an assumed rate (a design): no bounds are quoted
    (_goal(m=0.2), 0.1, "control recall 0.100: a decrease beyond min_effect 0.2 is larger "
                        "than the room left; only refuted is reachable"),
])
def test_each_unreachable_verdict_is_said_in_one_sentence(goal, control, why):
    block, reach = reach_block("recall", goal, control, None)
    assert block is not None and reach is not None
    assert block["why"] == why
    assert block["verdicts"] == reach.verdicts and len(reach.verdicts) == 1
