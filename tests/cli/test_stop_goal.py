"""`stop: goal` end to end (docs/cost.md): the real `ix run` on offline mock subjects runs
the cases in rounds, stops once the goal is settled and records its looks; without a goal
it is bad input (exit 2 naming the file and the field, nothing written)."""

import json
from pathlib import Path

from conftest import comparison_experiment, ix_in_process, run_ix, tree_digest

GOAL = """goal:
  hypothesis: the skill helps
  metric: activation_rate
  compare: [control, skill]
  direction: increase
  min_effect: 0.1
"""


def test_a_settled_goal_stops_the_run_early_with_its_looks_in_the_summary(lab: Path):
    comparison_experiment(lab, n_must=40, n_not=0, trials=3, control=0.1,
                          variants={"skill": 0.9}, goal=GOAL + "stop: goal\n")
    r = run_ix("run", "e", "--progress", "none", cwd=lab)
    assert r.code == 0, r.stderr
    assert "stop: goal — goal supported at look 1 of 5; 48 of 240 planned trials " \
           "(192 saved)" in r.stdout, r.stdout
    summary = json.loads((lab / "e" / "results" / "summary-latest.json").read_text())
    looks = summary["looks"]
    assert looks["rule"] == "pocock" and looks["planned_looks"] == 5
    assert 0.95 < looks["credibility"] < 0.99 and looks["goal_credibility"] == 0.95
    assert [(x["look"], x["cases"], x["trials"], x["decision"]) for x in looks["looks"]] \
        == [(1, 8, 48, "supported")]
    assert looks["calls"] == 48 and looks["planned_calls"] == 240
    assert looks["calls_saved"] == 192
    assert summary["goal"]["verdict"] == "supported"
    assert summary["goal"]["credibility"] == looks["credibility"]
    # the summary covers the cases that ran, and only they were run
    assert len(summary["subjects"][0]["probe_results"]) == 8
    lines = (lab / "e" / "results" / "trials.jsonl").read_text().splitlines()
    assert len(lines) == 48


def test_stop_goal_without_a_goal_is_bad_input_and_touches_nothing(lab: Path):
    comparison_experiment(lab, n_must=4, n_not=0, trials=1, control=0.1,
                          variants={"skill": 0.9}, goal="stop: goal\n")
    before = tree_digest(lab)
    r = run_ix("run", "e", "--progress", "none", cwd=lab)
    assert r.code == 2, (r.stdout, r.stderr)
    assert "e/experiment.yaml" in r.stderr and "stop:" in r.stderr
    assert "no `goal:`" in r.stderr and "Traceback" not in r.stderr
    assert tree_digest(lab) == before


def _looks(lab: Path) -> list[dict]:
    return json.loads((lab / "e" / "results" / "summary-latest.json").read_text())["looks"]


def test_a_resumed_run_continues_the_rounds_as_an_uninterrupted_one_would(tmp_path: Path):
    labs = []
    for name in ("whole", "resumed"):
        lab = tmp_path / name
        comparison_experiment(lab, n_must=20, n_not=0, trials=3, control=0.2,
                              variants={"skill": 0.35}, goal=GOAL + "stop: goal\n")
        labs.append(lab)
    whole = ix_in_process("run", "e", "--progress", "none", cwd=labs[0])
    assert whole.code in (0, 1), whole.stderr
    cut = ix_in_process("run", "e", "--progress", "none", "--max-trials", "30", cwd=labs[1])
    assert cut.code == 130, cut.stderr
    first = _looks(labs[1])
    assert first["stopped"].startswith("stopped before the goal was settled: --max-trials 30")
    assert [x["look"] for x in first["looks"]] == [1]  # 24 trials a round: cut in round 2
    again = ix_in_process("run", "e", "--progress", "none", "--resume", cwd=labs[1])
    assert again.code == whole.code, again.stderr
    assert _looks(labs[1]) == _looks(labs[0])
    assert len(_looks(labs[0])["looks"]) >= 2
