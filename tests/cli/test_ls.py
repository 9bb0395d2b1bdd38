"""`ix ls`: each experiment's answer (the goal's verdict with its difference and interval, or
the control's F1 with its interval) and its last run, from the run's summary alone, whole at
80 columns (docs/cli.md, "ix ls")."""

import json
from pathlib import Path

from conftest import comparison_experiment, ix_in_process, mock_experiment, run_ix

GOAL = """goal:
  hypothesis: the variant fires less on the cases it must take
  metric: recall
  compare: [control, a-much-longer-variant-name]
  direction: decrease
  min_effect: 0.05
"""


def test_ls_shows_each_verdict_or_headline_with_its_interval_and_last_run(lab: Path):
    comparison_experiment(lab, name="coexistence-of-two-skills-with-a-long-name", n_must=6,
                          n_not=4, trials=3, control=0.95,
                          variants={"a-much-longer-variant-name": 0.1}, goal=GOAL)
    mock_experiment(lab, "plain", rates={"must-001": 0.9, "not-001": 0.1}, n_must=2,
                    n_not=2, n_edge=0, trials=3)
    mock_experiment(lab, "never-run", n_must=1, n_not=1, n_edge=0, trials=1)
    for name in ("coexistence-of-two-skills-with-a-long-name", "plain"):
        assert ix_in_process("run", name, "--lab", str(lab), "--progress", "none").code in (0, 1)
    # the answer comes from the summary alone: the trial log is not read
    for trials in lab.glob("*/results/trials.jsonl"):
        trials.unlink()

    r = run_ix("ls", "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    rows = {Path(e["path"]).name: e for e in json.loads(r.stdout)["experiments"]}
    goal_row = rows["coexistence-of-two-skills-with-a-long-name"]
    summary = json.loads((lab / "coexistence-of-two-skills-with-a-long-name" / "results" / "runs"
                          / goal_row["last_run"] / "summary.json").read_text())
    effect = summary["goal"]["effect"]
    assert goal_row["goal"] == {
        "verdict": summary["goal"]["verdict"], "metric": "recall",
        "compare": ["control", "a-much-longer-variant-name"], "diff": effect["diff"],
        "diff_ci": effect["diff_ci"], "relative": False}
    assert goal_row["status"] == "completed" and goal_row["last_run_at"].startswith("20")
    plain = rows["plain"]
    plain_summary = json.loads((lab / "plain" / "results" / "runs" / plain["last_run"]
                                / "summary.json").read_text())
    assert plain["goal"] is None
    assert plain["headline"] == {"metric": "f1", "subject": plain_summary["subject"],
                                 "value": plain_summary["metrics"]["f1"],
                                 "ci": plain_summary["metrics"]["f1_ci"]}
    assert rows["never-run"]["last_run"] is None and rows["never-run"]["goal"] is None

    r = run_ix("ls", "--lab", str(lab), env={"COLUMNS": "80"})
    assert r.code == 0, r.output
    lines = r.stdout.splitlines()
    assert max(map(len, lines)) <= 80 and "…" not in r.stdout
    text = r.stdout
    lo, hi = effect["diff_ci"]
    assert f"{summary['goal']['verdict'].upper()}" in text
    assert f"recall difference {effect['diff']:+.3f} [{lo:.2f}, {hi:.2f}]" in text
    f1, (f_lo, f_hi) = plain_summary["metrics"]["f1"], plain_summary["metrics"]["f1_ci"]
    assert f"no goal  metric [95% CI]: F1 {f1:.3f} [{f_lo:.2f}, {f_hi:.2f}]" in text
    for row in (goal_row, plain):
        assert row["last_run"] in text and row["last_run_at"][:16].replace("T", " ") in text
    assert "coexistence-of-two-skills-with-a-long-name" in lines
    assert "never" in text
