"""Perturbation families in a run's summary (STATS.md §10, issue 32 item 9): rewordings of one
original are one unit in every interval and comparison, and `robustness` compares perturbed
cases with their originals. Checked against `ix.stats` called on the same counts (themselves
checked against statsmodels/scipy in tests/stats/test_stats_families.py) and by hand."""

import numpy as np
import pytest
from pydantic import TypeAdapter

from ix.eval.families import family_labels, family_of
from ix.eval.models import EvalCase
from ix.eval.run_summary import summarise_tallies
from ix.eval.schemas import SubjectBlock, SubjectComparison
from ix.eval.scoring import Tally
from ix.stats.case_level import case_level_difference
from ix.stats.families import perturbation_difference

K = 5


def variants(g: int, k: int, expectation: str = "must_trigger", prefix: str = "m") -> list:
    return [EvalCase(id=f"{prefix}{o}~{j}", prompt="p", expectation=expectation,
                     metadata={"variant_of": f"{prefix}{o}", "variant": {"n": j}})
            for o in range(g) for j in range(1, k + 1)]


def paraphrased(g: int, k: int) -> list:
    out = []
    for o in range(g):
        out.append(EvalCase(id=f"m{o}", prompt="p", expectation="must_trigger"))
        out += [EvalCase(id=f"m{o}~p{j}", prompt="p", expectation="must_trigger",
                         metadata={"paraphrase_of": f"m{o}"}) for j in range(1, k + 1)]
    return out


def tally(cases, passed: list[int]) -> Tally:
    t = Tally(cases)
    for case, k in zip(cases, passed, strict=True):
        for j in range(K):
            t.add(case.id, j < k, j)
    return t


def summary(cases, runs: dict[str, list[int]]) -> dict:
    s = summarise_tallies(
        experiment_name="e", run_id="r", run_status="completed",
        subjects=[(n, "") for n in runs], tallies={n: tally(cases, p) for n, p in runs.items()},
        cases=cases, trials_per_case=K, info={})
    for block in s["subjects"]:  # closed: every new key is declared
        TypeAdapter(SubjectBlock).validate_python(block)
    for comparison in s["comparisons"]:
        TypeAdapter(SubjectComparison).validate_python(comparison)
    return dict(s)


def plain(cases) -> list:
    """The same cases without the metadata that puts them in families."""
    return [c.model_copy(update={"metadata": {}}) for c in cases]


def test_a_case_belongs_to_the_root_of_its_chain_of_originals():
    cases = [EvalCase(id="a~1", prompt="p", expectation="must_trigger",
                      metadata={"variant_of": "a"}),
             EvalCase(id="a~1~p1", prompt="p", expectation="must_trigger",
                      metadata={"paraphrase_of": "a~1"}),
             EvalCase(id="b", prompt="p", expectation="must_trigger")]
    assert family_labels(cases) == ["a", "a", "b"]
    assert family_of(cases[1], {c.id: c for c in cases}) == "a"
    assert family_labels(plain(cases)) is None
    # generated cases whose families have one member each: no families, the old numbers
    assert family_labels(cases[:1] + cases[2:]) is None


def test_trial_level_and_vote_intervals_count_a_family_once():
    cases = variants(6, 4)
    rng = np.random.default_rng(1)
    base = rng.integers(0, K + 1, 6)
    passed = [int(base[o]) for o in range(6) for _ in range(4)]  # rewordings alike
    got, flat = summary(cases, {"a": passed}), summary(plain(cases), {"a": passed})
    block, old = got["subjects"][0], flat["subjects"][0]
    rate, old_rate = block["trial_level"]["must_trigger"], old["trial_level"]["must_trigger"]
    assert rate["n_families"] == 6 and rate["n_cases"] == 24 and "n_families" not in old_rate
    assert rate["rate"] == old_rate["rate"]  # the estimate is the same; only its spread moves
    width = rate["ci"][1] - rate["ci"][0]
    assert width > 1.5 * (old_rate["ci"][1] - old_rate["ci"][0])
    assert rate["ci"][0] <= rate["rate"] <= rate["ci"][1]
    m, old_m = block["metrics"], old["metrics"]
    assert m["n_families"] == 6 and "n_families" not in old_m
    assert m["recall"] == old_m["recall"]
    assert m["recall_ci"][1] - m["recall_ci"][0] > old_m["recall_ci"][1] - old_m["recall_ci"][0]
    assert m["recall_ci"][0] <= m["recall"] <= m["recall_ci"][1]
    assert m["pass_rate"] == old_m["pass_rate"]  # the correct rate: the family is its unit too
    assert (m["pass_rate_ci"][1] - m["pass_rate_ci"][0]
            > old_m["pass_rate_ci"][1] - old_m["pass_rate_ci"][0])
    assert "robustness" not in block  # variants: run no original, so nothing to compare


def test_comparisons_take_the_family_as_the_unit():
    cases = variants(8, 3)
    rng = np.random.default_rng(4)
    control = [int(x) for x in np.repeat(rng.integers(0, K + 1, 8), 3)]
    variant = [int(x) for x in np.repeat(rng.integers(0, K + 1, 8), 3)]
    s = summary(cases, {"c": control, "v": variant})
    act = s["comparisons"][0]["metrics"]["activation_rate"]
    ref = case_level_difference([(k, K) for k in control], [(k, K) for k in variant],
                                family_labels(cases))
    assert act["n_families"] == 8 and act["n"] == 24
    assert act["diff"] == pytest.approx(ref.estimate, abs=1e-6)
    assert act["p_value"] == pytest.approx(ref.p_value, abs=1e-6)  # rounded to 6 places
    flat = summary(plain(cases), {"c": control, "v": variant})
    old = flat["comparisons"][0]["metrics"]["activation_rate"]
    assert "n_families" not in old
    assert act["diff_ci"][1] - act["diff_ci"][0] > old["diff_ci"][1] - old["diff_ci"][0]
    recall = s["comparisons"][0]["metrics"]["recall"]
    assert recall["n_families"] == 8
    assert recall.get("mcnemar_p") is None  # pairs within a family are not independent
    assert flat["comparisons"][0]["metrics"]["recall"]["mcnemar_p"] is not None


def test_robustness_compares_each_original_with_its_paraphrases():
    cases = paraphrased(4, 2)
    #            m0 p1 p2  m1 p1 p2  m2 p1 p2  m3 p1 p2
    passed = [5, 4, 2, 3, 3, 1, 5, 5, 5, 0, 1, 0]
    s = summary(cases, {"a": passed})
    r = s["subjects"][0]["robustness"]
    originals = [(passed[3 * o], K) for o in range(4)]
    perturbed = [[(passed[3 * o + 1], K), (passed[3 * o + 2], K)] for o in range(4)]
    ref = perturbation_difference(originals, perturbed)
    d = [(4 + 2) / 10 - 1, (3 + 1) / 10 - 0.6, 0.0, 0.1 - 0.0]
    assert r["metric"] == "correct_rate"
    assert ref.estimate == pytest.approx(np.mean(d))
    assert r["diff"] == pytest.approx(ref.estimate, abs=1e-6)
    assert r["original"] == pytest.approx((1 + 0.6 + 1 + 0) / 4)
    assert r["n_originals"] == 4 and r["n_perturbed"] == 8 and r["n_families"] == 4
    assert r["p_worse"] == pytest.approx(1 - ref.p_better, abs=1e-6)
    assert r["p_value"] == pytest.approx(ref.p_value, abs=1e-6)
    assert r["diff_ci"][0] <= r["diff"] <= r["diff_ci"][1]
    assert "robustness" not in summary(plain(cases), {"a": passed})["subjects"][0]


def test_robustness_counts_should_not_cases_by_their_right_trials():
    cases = [EvalCase(id="n0", prompt="p", expectation="should_not_trigger"),
             EvalCase(id="n0~p1", prompt="p", expectation="should_not_trigger",
                      metadata={"paraphrase_of": "n0"}),
             EvalCase(id="n1", prompt="p", expectation="should_not_trigger"),
             EvalCase(id="n1~p1", prompt="p", expectation="should_not_trigger",
                      metadata={"paraphrase_of": "n1"})]
    r = summary(cases, {"a": [0, 5, 1, 1]})["subjects"][0]["robustness"]
    # right trials: n0 5/5 -> 0/5 reworded; n1 4/5 -> 4/5
    assert r["original"] == pytest.approx(0.9) and r["perturbed"] == pytest.approx(0.4)
    assert r["diff"] == pytest.approx(-0.5)


def test_reports_say_the_robustness_answer_first():
    from ix.report.answer import answer

    cases = paraphrased(3, 2)
    s = summary(cases, {"beta": [5, 1, 0, 5, 2, 1, 4, 0, 1]})
    (line,) = answer(s)["robustness"]
    r = s["subjects"][0]["robustness"]
    assert line.startswith("robustness of beta: worse when reworded — correct rate 0.933 on "
                           "originals → 0.167 reworded, difference -0.767 [")
    assert r["diff_ci"][1] < 0 and line.endswith("(3 originals, 6 rewordings)")
    assert "robustness" not in answer(summary(plain(cases), {"beta": [5] * 9}))


def test_a_sensors_pass_rate_and_comparison_count_families_as_trial_level_does():
    from ix.eval.estimates import trial_level
    from ix.eval.sensor_summary import compare_sensors, sensors_block

    cases = variants(5, 3)
    rng = np.random.default_rng(9)
    counts = {name: [int(x) for x in np.repeat(rng.integers(0, K + 1, 5), 3)]
              for name in ("c", "v")}
    tallies = {}
    for name, passed in counts.items():
        t = tally(cases, passed)
        for case, k in zip(cases, passed, strict=True):
            for j in range(K):
                t.sense(case.id, [("matcher", j < k)])
        tallies[name] = t
    block = sensors_block(tallies["c"], ["matcher"], cases)["matcher"]
    passed = np.array(counts["c"])
    level = trial_level(cases, passed, np.full(len(cases), K))["must_trigger"]
    assert block["n_families"] == 5 and block["rate_ci"] == level["ci"]
    (by_sensor,) = compare_sensors([tallies["c"], tallies["v"]], ["matcher"], cases)
    entry = by_sensor["matcher"]
    ref = case_level_difference([(k, K) for k in counts["c"]], [(k, K) for k in counts["v"]],
                                family_labels(cases))
    assert entry["n_families"] == 5
    assert entry["diff_ci"][0] <= ref.estimate <= entry["diff_ci"][1]
    assert entry["p_value"] == pytest.approx(ref.p_value, abs=1e-6)
