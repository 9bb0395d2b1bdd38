"""One goal across several experiments (the lab's goals.yaml, `ix report --goal NAME`): the
cases of every named experiment pooled as one population, the case-level t posterior of the
mean difference, the goal's rule on it. Checked against scipy's one-sample t and statsmodels,
and by a simulation of the pooled interval's coverage."""

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from conftest import comparison_experiment, ix_in_process, run_ix, write  # type: ignore[attr-defined]
from ix.api.lab_goals import lab_goal, lab_goals
from ix.domain.errors import ConfigError
from ix.eval.pooled_goal import ExperimentEvidence, case_pairs, pooled_goal

GOAL = {"hypothesis": "h", "metric": "activation_rate", "compare": ["control", "v"],
        "direction": "increase", "min_effect": 0.0, "credibility": 0.95}


def _evidence(rng: np.random.Generator, sizes, effects, k: int):
    """Experiments of `sizes` cases; control rates U(0.2, 0.6), treatment = control +
    the experiment's effect; k trials a case a subject."""
    out = []
    for i, (n, delta) in enumerate(zip(sizes, effects, strict=True)):
        pc = rng.uniform(0.2, 0.6, n)
        kc, kv = rng.binomial(k, pc), rng.binomial(k, pc + delta)
        out.append(ExperimentEvidence(f"e{i}", "r", [((int(a), k), (int(b), k))
                                                     for a, b in zip(kc, kv, strict=True)]))
    return out


def test_the_pooled_difference_is_the_one_sample_t_over_every_experiments_cases():
    sm = pytest.importorskip("statsmodels.stats.weightstats")
    rng = np.random.default_rng(5)
    evidence = _evidence(rng, (6, 9, 12), (0.1, 0.25, 0.0), k=10)
    got = pooled_goal("g", GOAL, evidence)
    d = np.array([b[0] / b[1] - a[0] / a[1] for e in evidence for a, b in e.pairs])
    ref = stats.ttest_1samp(d, 0.0).confidence_interval(0.95)
    assert got["effect"]["diff"] == pytest.approx(d.mean(), abs=1e-6)
    assert got["effect"]["diff_ci"] == pytest.approx([ref.low, ref.high], abs=2e-6)
    lo, hi = sm.DescrStatsW(d).tconfint_mean(0.05)
    assert got["effect"]["diff_ci"] == pytest.approx([lo, hi], abs=2e-6)
    assert got["effect"]["n_cases"] == 27 and got["pooled"] == "cases"
    # P(supported) for "increase" with min_effect 0 is P(effect > 0) of the t posterior
    se = d.std(ddof=1) / np.sqrt(len(d))
    assert got["p_supported"] == pytest.approx(stats.t.sf(0, len(d) - 1, d.mean(), se),
                                               abs=1e-5)
    # each experiment's own difference is its own cases' t
    for e, row in zip(evidence, got["experiments"], strict=True):
        own = np.array([b[0] / b[1] - a[0] / a[1] for a, b in e.pairs])
        assert row["diff"] == pytest.approx(own.mean(), abs=1e-6)
        assert row["n_cases"] == len(own)


@pytest.mark.parametrize(("sizes", "effects", "k"), [((5, 8, 12), (0.0, 0.2, 0.1), 3),
                                                     ((4, 6), (0.3, 0.05), 3)])
def test_the_pooled_interval_covers_the_case_weighted_mean_effect(sizes, effects, k):
    """The truth is the mean effect over the pooled population: each experiment's effect
    weighed by its number of cases (what docs/experiments.md says is pooled). 95% nominal,
    experiments that differ in effect (the pooled SE is then conservative). Below ten cases
    of one trial each the discreteness shows: 8 cases, K = 1 cover 0.91 (docs)."""
    rng = np.random.default_rng(sum(sizes) * k)
    truth = float(np.dot(sizes, effects) / sum(sizes))
    reps, covered = 500, 0
    for _ in range(reps):
        lo, hi = pooled_goal("g", GOAL, _evidence(rng, sizes, effects, k))["effect"]["diff_ci"]
        covered += lo <= truth <= hi
    assert covered / reps >= 0.93


def test_case_pairs_reads_must_cases_for_activation_and_votes_for_pass_rate():
    control = [{"probe_id": "m", "expectation": "must_trigger", "n": 4, "passed": 1,
                "correct": False},
               {"probe_id": "x", "expectation": "should_not_trigger", "n": 4, "passed": 0,
                "correct": True},
               {"probe_id": "edge", "expectation": "acceptable", "n": 4, "passed": 2,
                "correct": None},
               {"probe_id": "gone", "expectation": "must_trigger", "n": 4, "passed": 4,
                "correct": True}]
    treatment = [{**c, "passed": 3, "correct": not c["correct"]} if c["probe_id"] == "m"
                 else c for c in control[:3]]
    assert case_pairs("activation_rate", control, treatment) == [((1, 4), (3, 4))]
    assert case_pairs("pass_rate", control, treatment) == [((0, 1), (1, 1)), ((1, 1), (1, 1))]


def _goals(lab: Path, body: str) -> None:
    write(lab / "goals.yaml", "goals:\n" + "\n".join("  " + line for line in
                                                     body.strip().splitlines()) + "\n")


HELPS = """
helps:
  hypothesis: "v activates more everywhere"
  metric: activation_rate
  compare: [control, v]
  direction: increase
  min_effect: 0.05
  experiments: [a, b, later]
"""


def test_a_lab_goal_pools_the_latest_run_of_each_experiment(lab):
    comparison_experiment(lab, n_must=8, n_not=2, trials=5, control=0.3,
                          variants={"v": 0.8}, name="a")
    comparison_experiment(lab, n_must=6, n_not=2, trials=5, control=0.4,
                          variants={"v": 0.7}, name="b")
    comparison_experiment(lab, n_must=3, n_not=1, trials=2, control=0.4,
                          variants={"v": 0.7}, name="later")  # never run yet
    assert ix_in_process("run", "--lab", str(lab), "a", "b").code == 0
    _goals(lab, HELPS)
    got = lab_goal(lab, "helps")
    assert got["verdict"] == "supported" and got["effect"]["n_cases"] == 14
    rows = {r["experiment"]: r for r in got["experiments"]}
    assert rows["a"]["n_cases"] == 8 and rows["b"]["n_cases"] == 6
    assert rows["later"]["note"] == "no completed run yet" and rows["later"]["run_id"] is None
    assert got["experiments"][0]["run_id"].startswith("20")
    assert list(lab_goals(lab)[1]) == ["helps"]


@pytest.mark.parametrize(("edit", "field"), [
    (lambda t: t.replace("activation_rate", "f1"), "goals.helps.metric"),
    (lambda t: t.replace("[a]", "[a, nowhere]"), "goals.helps.experiments"),
    (lambda t: t.replace("[control, v]", "[control, w]"), "goals.helps.compare"),
    (lambda t: t.replace("[control, v]", "[control]"), "goals.helps.compare"),
    (lambda t: t.replace("direction", "directoin"), "goals.helps"),
    (lambda t: t.replace("min_effect: 0.05", "min_effect: -1"), "goals.helps.min_effect"),
])
def test_a_bad_goals_file_names_the_file_and_the_field(lab, edit, field):
    comparison_experiment(lab, n_must=2, n_not=1, trials=1, control=0.3,
                          variants={"v": 0.8}, name="a")
    assert ix_in_process("run", "--lab", str(lab), "a").code == 0
    _goals(lab, edit(HELPS.replace("[a, b, later]", "[a]")))
    with pytest.raises(ConfigError) as caught:
        lab_goal(lab, "helps")
    assert Path(caught.value.file or "").name == "goals.yaml"
    assert (caught.value.field or "").startswith(field), caught.value.render()


def test_ix_report_goal_gives_the_verdict_first_and_exits_1_when_refuted(lab):
    comparison_experiment(lab, n_must=10, n_not=2, trials=6, control=0.5,
                          variants={"v": 0.5}, name="a")
    comparison_experiment(lab, n_must=10, n_not=2, trials=6, control=0.5,
                          variants={"v": 0.5}, name="b")
    assert ix_in_process("run", "--lab", str(lab)).code == 0
    _goals(lab, HELPS.replace("[a, b, later]", "[a, b]").replace("0.05", "0.3"))
    r = run_ix("report", "--goal", "helps", "--lab", str(lab))
    assert r.code == 1, r.output  # no difference: an effect beyond 0.3 is refuted
    assert r.stdout.startswith("helps: refuted — activation_rate v − control ")
    assert "over 20 cases of 2 experiments" in r.stdout.splitlines()[0]
    data = json.loads(run_ix("report", "--goal", "helps", "--lab", str(lab), "--json").stdout)
    assert data["verdict"] == "refuted" and len(data["experiments"]) == 2
    listed = run_ix("ls", "--lab", str(lab))
    assert "lab goals (`ix report --goal NAME`): helps" in listed.stdout
    bad = run_ix("report", "--goal", "nope", "--lab", str(lab))
    assert bad.code == 2 and "goals.yaml" in bad.stderr and "--goal" in bad.stderr
