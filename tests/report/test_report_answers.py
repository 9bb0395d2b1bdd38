"""Every report carries the answer (issue 16 §4, §8): the goal's verdict, the comparisons and
the interpretation in `ix report` table, md, json and html, in the same sentences; `ix batch`
says why it exits 1 and pools the seeds; no leaderboard for one subject; `ix compare` shows
how a skill's description changed; `ix plan` names the metric of its difference."""

import html
import json
import re
from pathlib import Path

from conftest import comparison_experiment, ix_in_process, mock_experiment, run_ix, write


def experiment(lab: Path, *, variant: float, **kw) -> Path:
    """Mock subjects `control` and `variant` (conftest.comparison_experiment)."""
    return comparison_experiment(lab, variants={"variant": variant}, **kw)


GOAL = """goal:
  hypothesis: the variant degrades {metric}
  metric: {metric}
  compare: [control, variant]
  direction: decrease
  min_effect: {min_effect}
"""


def _run(lab: Path, *args: str) -> str:
    """Set-up: the run a report, compare or plan then reads (in process)."""
    r = ix_in_process("run", "--lab", str(lab), "--json", *args)
    assert r.code in (0, 1), r.output
    return json.loads(r.stdout)["run_id"]


def _report(lab: Path, run: str, fmt: str, columns: str = "80") -> str:
    """`ix report` in process: what each format says is under test (the real command's exit 0
    and output: `test_a_mock_subject_is_never_told_to_broaden_its_description`)."""
    r = ix_in_process("report", run, "--lab", str(lab), "--format", fmt,
                      env={"COLUMNS": columns})
    assert r.code == 0, r.output
    return r.stdout


def _flat(text: str) -> str:
    """Text with its line breaks and runs of spaces as single spaces (a wrapped table's
    sentences read whole again)."""
    return re.sub(r"\s+", " ", text)


def test_every_format_of_ix_report_carries_the_verdict_comparisons_and_interpretation(lab):
    experiment(lab, n_must=12, n_not=6, trials=5, control=0.95, variant=0.2,
               goal=GOAL.format(metric="recall", min_effect=0.1))
    run = _run(lab)
    data = json.loads(_report(lab, run, "json"))
    answer = data["answer"]
    assert answer["verdict"][0].startswith("SUPPORTED — goal: the variant degrades recall")
    assert any(line.startswith("recall: control ") for line in answer["verdict"])
    [comparison] = answer["comparisons"]
    assert comparison.startswith("variant vs control (control): recall ")
    assert "credibly lower" in comparison
    variant = next(i for i in answer["interpretation"] if i["subject"] == "variant")
    assert variant["issues"] and variant["suggestions"]
    sentences = [*answer["verdict"], comparison, *variant["issues"], *variant["suggestions"]]

    table = _report(lab, run, "table", columns="200")
    markdown = _report(lab, run, "md")
    ix_in_process("report", run, "--lab", str(lab), "--format", "html",
                  "--out", str(lab / "r.html"))
    page = html.unescape(re.sub(r"<[^>]+>", " ", (lab / "r.html").read_text()))
    plain_md = html.unescape(markdown.replace("\\", "").replace("**", ""))
    for name, text in (("table", table), ("md", plain_md), ("html", page)):
        flat = _flat(text)
        for sentence in sentences:
            assert _flat(sentence) in flat, (name, sentence)
    # the verdict first, where the eye lands: before the per-case table
    assert table.index("SUPPORTED") < table.index("must-000")
    assert markdown.index("SUPPORTED") < markdown.index("## Summary")


def test_an_inconclusive_verdict_in_the_report_says_what_would_settle_it(lab):
    experiment(lab, n_must=2, n_not=1, trials=2, control=0.95, variant=0.2,
               goal=GOAL.format(metric="recall", min_effect=0.1))
    run = _run(lab)
    for fmt in ("table", "md"):
        text = _flat(_report(lab, run, fmt))
        assert "INCONCLUSIVE" in text and "to settle it: about" in text, fmt


def test_one_subject_has_no_leaderboard_in_any_format(lab):
    mock_experiment(lab, rates={"must-001": 0.9}, trials=3)
    run = _run(lab)
    assert "leaderboard" not in _report(lab, run, "table").lower()
    assert "Leaderboard" not in _report(lab, run, "md")
    board = json.loads(_report(lab, run, "json"))["leaderboard"]
    assert board["rows"] == [] and "nothing to rank" in board["note"]
    ix_in_process("report", run, "--lab", str(lab), "--format", "html",
                  "--out", str(lab / "r.html"))
    assert 'id="leaderboard"' not in (lab / "r.html").read_text()
    board = run_ix("leaderboard", "--lab", str(lab), "--json")  # the real command
    assert board.code == 0, board.output
    data = json.loads(board.stdout)
    assert data["boards"] == [] and data["overall"] is None
    assert any("one subject only, nothing to rank" in n for n in data["notes"])
    text = ix_in_process("leaderboard", "--lab", str(lab))
    assert "rank" not in text.stdout.replace("nothing to rank", "")


def test_a_battery_whose_goal_is_refuted_says_which_run_and_pools_the_seeds(lab):
    experiment(lab, n_must=40, n_not=10, trials=5, control=0.97, variant=0.97,
               goal=GOAL.format(metric="pass_rate", min_effect=0.15))
    battery = write(lab / "b.yaml", "name: b\nexperiments: [e]\nseeds: 2\n")
    # in process: the reports' contents; the real `ix batch` exits 1 in the test after this
    r = ix_in_process("batch", str(battery), "--lab", str(lab))
    assert r.code == 1
    runs = sorted(p.name for p in (lab / "e" / "results" / "runs").iterdir())
    assert len(runs) == 2
    for run in runs:  # stderr names each refuted run, its experiment and seed
        assert re.search(rf"goal refuted in run {run} \(e, seed \d\): REFUTED — goal: the "
                         "variant degrades pass_rate", r.stderr), r.stderr
    [folder] = (lab / "batteries").iterdir()
    md = (folder / "report.md").read_text()
    for run in runs:
        assert re.search(rf"\| e \| \d \| {run} \| completed \| REFUTED — goal: ", md)
    data = json.loads((folder / "report.json").read_text())
    pooled = {p["subject"]: p for p in data["pooled"]}
    assert set(pooled) == {"control", "variant"}
    p = pooled["control"]
    assert p["metric"] == "pass_rate" and p["seeds"] == 2 and p["cases"] == 50
    assert [x["seed"] for x in p["per_seed"]] == [0, 1]
    assert p["ci"][0] <= p["value"] <= p["ci"][1]
    assert p["spread"]["range"] == round(p["spread"]["max"] - p["spread"]["min"], 6)
    from ix.report.answer import metric_name

    assert "## Across seeds" in md and f"| e | control | {metric_name('pass_rate')} |" in md
    assert "goal of e across 2 seed(s): refuted 2." in md


def test_a_battery_with_json_still_says_why_it_exits_1_on_stderr(lab):
    experiment(lab, n_must=40, n_not=10, trials=5, control=0.97, variant=0.97,
               goal=GOAL.format(metric="pass_rate", min_effect=0.15))
    battery = write(lab / "b.yaml", "name: b\nexperiments: [e]\nseeds: 1\n")
    r = run_ix("batch", str(battery), "--lab", str(lab), "--json")  # the real command
    assert r.code == 1 and "goal refuted in run " in r.stderr
    assert json.loads(r.stdout)["verdicts"][0]["goal"] == "refuted"


def test_pooling_seeds_counts_each_case_once():
    """Seeds re-run the same cases: two identical seeds give the interval of one, not a
    narrower one (as if there were twice the cases)."""
    from ix.report.seeds import pooled

    probes = ([{"probe_id": f"m{i}", "expectation": "must_trigger", "passed": 4 if i else 1,
                "n": 5, "correct": bool(i)} for i in range(10)]
              + [{"probe_id": f"n{i}", "expectation": "should_not_trigger", "passed": 0,
                  "n": 5, "correct": True} for i in range(5)])
    block = {"name": "s", "probe_results": probes,
             "metrics": {"tp": 9, "fp": 0, "fn": 1, "tn": 5}}
    from ix.stats.intervals import beta_interval

    for metric in ("f1", "recall", "pass_rate", "activation_rate"):
        one = pooled([block], [0], metric)
        two = pooled([block, block], [0, 1], metric)
        assert two["value"] == one["value"], metric
        assert two["spread"]["range"] == 0.0 and two["cases"] == one["cases"]
        if metric != "activation_rate":  # one vote per case: the same interval as one seed
            assert two["ci"] == one["ci"], metric
    # the activation rate: clustered by case, wider than pooling the 100 trials as independent
    lo, hi = beta_interval(74, 100)
    assert two["ci"][1] - two["ci"][0] > 1.5 * (hi - lo)


def test_compare_shows_how_a_skill_description_changed(lab):
    skill = write(lab / "skills" / "target" / "SKILL.md",
                  "---\nname: target\ndescription: Summarise CSV files.\n---\nBody\n")
    mock_experiment(lab, rates={"must-001": 0.9}, trials=2)
    before = _run(lab)
    skill.write_text("---\nname: target\ndescription: Summarise CSV and TSV files; not for "
                     "Excel workbooks.\n---\nBody\n")
    after = _run(lab)
    r = run_ix("compare", before, after, "--lab", str(lab), "--json")  # the real command
    assert r.code == 0, r.output
    [change] = json.loads(r.stdout)["config_changes"]
    [s] = change["skills"]
    assert s["skill"] == "target" and s["description_changed"] is True
    assert s["description_before"] == "Summarise CSV files."
    assert s["description_after"] == "Summarise CSV and TSV files; not for Excel workbooks."
    # said once, in `skills`: the spec's own changes leave the description out
    assert not [c for c in change["changes"] if "description" in c["path"]], change["changes"]
    text = ix_in_process("compare", before, after, "--lab", str(lab),
                         env={"COLUMNS": "80"}).stdout
    flat = _flat(text)
    assert "skill target changed" in flat
    assert "description before: Summarise CSV files." in flat
    assert "description after: Summarise CSV and TSV files; not for Excel workbooks." in flat
    assert "…" not in text


def test_plan_names_the_metric_of_the_smallest_detectable_difference(lab):
    mock_experiment(lab, rates={"must-001": 0.5, "must-002": 0.5, "must-003": 0.5,
                                "not-001": 0.5}, trials=6)
    _run(lab)
    r = run_ix("plan", "exp", "--lab", str(lab), env={"COLUMNS": "80"})  # the real command
    assert r.code == 0, r.output
    assert "smallest detectable difference in the mean per-case activation rate (must) is" \
        in _flat(r.stdout)
    data = json.loads(ix_in_process("plan", "exp", "--lab", str(lab), "--json").stdout)
    assert data["answers"][0]["metric"] == "mean per-case activation rate (must)"


def test_a_mock_subject_is_never_told_to_broaden_its_description(lab):
    """Issue 33: mock never reads a description, so its low recall gets the advice that
    does apply (its rates), in the summary and in `ix report`."""
    mock_experiment(lab, rates={"must-001": 0.9}, n_must=4, n_not=4, trials=3)
    r = ix_in_process("run", "--lab", str(lab), "--json")  # the summary's advice: logic
    assert r.code == 0, r.output
    interpretation = json.loads(r.stdout)["interpretation"]
    assert any("Low recall" in i for i in interpretation["issues"]), interpretation
    assert interpretation["suggestions"] == [
        "The mock runtime never reads the description: its default_rate and activation_rates "
        "(per case) set how often it calls the skill."]
    report = run_ix("report", "--lab", str(lab), json.loads(r.stdout)["run_id"],
                    env={"COLUMNS": "80"})  # the real command: exit 0, its table
    assert report.code == 0, report.output
    flat = " ".join(report.stdout.split())
    assert "never reads the description" in flat and "Broaden" not in flat
