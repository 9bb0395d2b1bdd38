"""`ix results --explain CASE` (issue 33): why the lexical router sent each trial where it went —
the skill chosen, its score against the threshold, the words that carried each score — as
text at 80 columns and as JSON, through the real `ix` (`run_ix`); and a plain sentence, exit 0,
for a runtime that records no routing detail, and exit 2 for an option it does not take (one
of them through the real `ix`, the rest in process). The viewer's case page shows the same."""

import json
import re
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from conftest import ix_in_process, mock_experiment, run_ix, write
from ix.store.trials import read_trials
from ix.view.app import create_app

SKILLS = {"csv-summary": "Summarise and profile a CSV file: columns, types, missing values.",
          "sql-tuning": "Diagnose and speed up slow SQL queries, read EXPLAIN plans."}
PROMPTS = {"must-001": ("must_trigger", "Summarise the columns of sales.csv for me"),
           "not-001": ("should_not_trigger", "Export this slow SQL query result as csv")}


@pytest.fixture(scope="module")
def lexical_lab(tmp_path_factory: pytest.TempPathFactory) -> Path:
    lab = tmp_path_factory.mktemp("explain") / "lab"
    for name, description in SKILLS.items():
        write(lab / "skills" / name / "SKILL.md",
              f"---\nname: {name}\ndescription: '{description}'\n---\nBody\n")
    write(lab / "route" / "experiment.yaml",
          "name: route\ntrials: 4\nseed: 0\n"
          "runtime: {kind: lexical, threshold: 1.5, temperature: 0.5}\n"
          "sensor: {kind: activation, skill: csv-summary}\n"
          "subjects:\n  - name: both\n    skills: [csv-summary, sql-tuning]\n")
    for case_id, (expectation, prompt) in PROMPTS.items():
        write(lab / "route" / "cases" / f"{case_id}.md",
              f"---\nexpectation: {expectation}\n---\n{prompt}\n")
    assert ix_in_process("run", "--lab", str(lab)).code == 0  # set-up: the run explained
    return lab


def test_explain_prints_each_trials_choice_score_threshold_and_words_at_80_columns(
        lexical_lab: Path):
    r = run_ix("results", "--lab", str(lexical_lab), "--explain", "not-*",
               env={"COLUMNS": "80"})
    assert r.code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines and all(len(line) <= 80 for line in lines), r.stdout
    assert lines[0].startswith("not-001 (should_not_trigger) · both · run ")
    raw = [t for t in read_trials(lexical_lab / "route" / "results" / "trials.jsonl")
           if t["probe_id"] == "not-001"]
    for t in raw:
        routing = t["observation"]["meta"]["routing"]
        fired = routing["chosen"] == "csv-summary"  # the skill under test; sql-tuning may win
        verdict = "invoked, wrong" if fired else "not invoked, right"
        [head] = [i for i, line in enumerate(lines)
                  if line.startswith(f"  trial {t['trial']}: ")]
        decision = " ".join(lines[head:head + 2])
        assert decision.startswith(f"  trial {t['trial']}: {verdict} — ")
        assert f"threshold {routing['threshold']:.2f}" in decision
        assert f"chose {routing['chosen'] or 'no skill'}" in decision
    # the words that carried csv-summary's score on a should-not prompt: "csv"; and sql's
    text = r.stdout
    assert re.search(r"csv-summary \d\.\d\d: csv \d\.\d\d", text)
    assert re.search(r"sql-tuning \d\.\d\d: .*sql \d\.\d\d", text)
    assert "slow" in text and "quer" in text


def test_explain_json_gives_the_same_decisions_as_the_trial_lines(lexical_lab: Path):
    r = run_ix("results", "--lab", str(lexical_lab), "--explain", "must-001", "--json",
               "--subject", "both")
    assert r.code == 0, r.output
    got = json.loads(r.stdout)
    raw = {t["trial"]: t for t in read_trials(lexical_lab / "route" / "results" /
                                              "trials.jsonl") if t["probe_id"] == "must-001"}
    assert got["total"] == got["recorded"] == len(got["trials"]) == len(raw) == 4
    for t in got["trials"]:
        line = raw[t["trial"]]
        assert t["routing"] == line["observation"]["meta"]["routing"]
        assert t["outcome"] == ("right" if t["reading"] == "invoked" else "wrong")
        chosen = t["routing"]["chosen"]
        assert t["invoked"] == ([chosen] if chosen else [])
        [csv] = [s for s in t["routing"]["skills"] if s["skill"] == "csv-summary"]
        assert {"summaris", "column", "csv"} <= {term["term"] for term in csv["terms"]}
        assert sum(term["share"] for term in csv["terms"]) == pytest.approx(csv["score"],
                                                                            abs=1e-3)


def test_the_case_page_shows_the_routing_decision(lexical_lab: Path):
    [run] = [p.name for p in (lexical_lab / "route" / "results" / "runs").iterdir()]
    page = TestClient(create_app(lexical_lab), base_url="http://127.0.0.1").get(
        f"/runs/{run}/trials", params={"case": "not-001"})
    assert page.status_code == 200
    assert page.text.count('<td class="routing">') == 4
    assert "threshold" in page.text and "1.50" in page.text
    assert re.search(r"csv-summary \d\.\d\d: <span class=\"term\">csv \d\.\d\d", page.text)


def test_a_runtime_without_routing_detail_is_said_plainly_exit_0(lab: Path):
    mock_experiment(lab, trials=2)
    assert ix_in_process("run", "--lab", str(lab)).code == 0
    r = ix_in_process("results", "--lab", str(lab), "--explain", "must-001",
                      env={"COLUMNS": "80"})
    assert r.code == 0, r.output
    assert "2 trials of must-001: no routing detail recorded" in " ".join(r.stdout.split())
    got = json.loads(ix_in_process("results", "--lab", str(lab), "--explain", "must-*",
                                   "--json").stdout)
    assert got["recorded"] == 0 and got["trials"] and all(
        t["routing"] is None for t in got["trials"])


@pytest.mark.parametrize(("args", "message"), [
    (["--group-by", "subject"], "leave out --group-by"),
    (["--case", "x"], "leave out --case"),
    (["--format", "csv"], "not csv"),
])
def test_explain_with_what_it_does_not_take_is_exit_2(lab: Path, args: list[str],
                                                      message: str):
    mock_experiment(lab, trials=1)
    assert ix_in_process("run", "--lab", str(lab)).code == 0
    ix = run_ix if args[0] == "--group-by" else ix_in_process  # one through the real command
    r = ix("results", "--lab", str(lab), "--explain", "must-001", *args)
    assert r.code == 2 and message in r.stderr and "Traceback" not in r.output
