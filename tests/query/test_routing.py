"""Which skill took the prompt (issue 16 §5), through the real `ix` command: the `trials`
view's `invoked` and `first_invoked`, each subject's routing table in the summary, `ix
report` in every format, `ix results --group-by invoked`, and the failure table's prompt and
wrong examples from every subject. Each command is the real process once (exit code, output);
its other formats and the runs the tests read are asked in process."""

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from conftest import ix_in_process, run_ix, write

PROMPTS = {"must-001": "Sum column B of budget.xlsx",
           "must-002": "Pivot the sales sheet by region",
           "not-001": "What is the capital of France?"}


def routed_lab(lab: Path, trials: int = 4) -> Path:
    """`alone` has xlsx only; `crowded` also has pdf, and pdf takes its prompts (the mock
    runtime names the skill it calls)."""
    for skill in ("xlsx", "pdf"):
        write(lab / "skills" / skill / "SKILL.md",
              f"---\nname: {skill}\ndescription: Use for {skill} files.\n---\nBody\n")
    d = lab / "route"
    write(d / "experiment.yaml", f"""
        name: route
        sensor:
          kind: activation
          skill: xlsx
        trials: {trials}
        seed: 0
        runtime:
          kind: mock
          activation_rates: {{must-001: 1.0, must-002: 0.5, not-001: 0.25}}
        subjects:
          - name: alone
            skills: [xlsx]
          - name: crowded
            skills: [xlsx, pdf]
            runtime:
              kind: mock
              skill: pdf
              activation_rates: {{must-001: 0.75, must-002: 0.5, not-001: 0.0}}
    """)
    for case_id, prompt in PROMPTS.items():
        expectation = "must_trigger" if case_id.startswith("must") else "should_not_trigger"
        write(d / "cases" / f"{case_id}.md", f"---\nexpectation: {expectation}\n---\n{prompt}\n")
    return d


def lines(d: Path) -> list[dict]:
    return [json.loads(x) for x in (d / "results" / "trials.jsonl").read_text().splitlines()]


def first_skill(line: dict) -> str | None:
    calls = (line.get("observation") or {}).get("tool_calls") or []
    return next((c["input"]["skill"] for c in calls if c["name"] == "Skill"), None)


@pytest.fixture
def ran(lab: Path) -> Path:
    d = routed_lab(lab)
    r = ix_in_process("run", "--lab", str(lab))  # set-up: the run the tests read
    assert r.code == 0, r.output
    return d


def test_the_trials_view_lists_the_skills_each_trial_invoked(lab: Path, ran: Path):
    r = run_ix("query", "--lab", str(lab), "--json", "SELECT subject, probe_id, trial, "
               "invoked, first_invoked FROM trials ORDER BY ALL")
    assert r.code == 0, r.output
    rows = json.loads(r.stdout)
    rows = rows["rows"] if isinstance(rows, dict) else rows
    expected = {(x["subject"], x["probe_id"], x["trial"]): first_skill(x) for x in lines(ran)}
    assert len(rows) == len(expected) == 24
    for row in rows:
        first = expected[(row["subject"], row["probe_id"], row["trial"])]
        assert row["first_invoked"] == first
        assert row["invoked"] == ([first] if first else [])
    assert {row["first_invoked"] for row in rows} == {"xlsx", "pdf", None}


def test_each_subject_gets_a_routing_table_per_expectation(ran: Path):
    summary = json.loads((ran / "results" / "summary-latest.json").read_text())
    taken: dict[tuple[str, str], Counter] = {}
    for x in lines(ran):
        taken.setdefault((x["subject"], x["expectation"]), Counter())[first_skill(x)] += 1
    for block in summary["subjects"]:
        routing = block["routing"]
        assert routing["target"] == "xlsx"
        for row in routing["expectations"]:
            seen = taken[(block["name"], row["expectation"])]
            assert row["trials"] == sum(seen.values())
            assert row["target"] == seen["xlsx"]
            assert row["none"] == seen[None]
            assert row["other"] == {k: v for k, v in seen.items() if k not in ("xlsx", None)}
        for p in block["probe_results"]:  # each case's routes add up to its valid trials
            assert sum(r["trials"] for r in p["routes"]) == p["n"]
    crowded = summary["subjects"][1]["routing"]["expectations"][0]
    assert crowded["expectation"] == "must_trigger" and crowded["target"] == 0
    assert crowded["other"]["pdf"] > 0


def test_ix_report_says_who_took_each_case_in_every_format(lab: Path, ran: Path):
    summary = json.loads((ran / "results" / "summary-latest.json").read_text())
    routes = {p["probe_id"]: p["routes"] for p in summary["subjects"][1]["probe_results"]}
    n = sum(r["trials"] for r in routes["must-001"])
    want = "must-001: taken by " + ", ".join(
        f"{r['skill'] or 'none'} {r['trials']}/{n}" for r in routes["must-001"])
    assert "pdf" in want
    # the real command: exit 0, the table at 80 columns; the other formats in process
    table = run_ix("report", "--lab", str(lab), env={"COLUMNS": "80"})
    assert table.code == 0, table.output
    assert f"crowded: {want}" in table.stdout
    assert "which skill took the prompt" in table.stdout
    md = ix_in_process("report", "--lab", str(lab), "--format", "md")
    assert f"- crowded: {want}" in md.stdout and "## Which skill took the prompt" in md.stdout
    data = json.loads(ix_in_process("report", "--lab", str(lab), "--format", "json").stdout)
    crowded = next(r for r in data["routing"] if r["subject"] == "crowded")
    case = next(c for c in crowded["cases"] if c["probe_id"] == "must-001")
    assert f"must-001: taken by {case['taken_by']}" == want
    out = lab / "report.html"
    html = ix_in_process("report", "--lab", str(lab), "--format", "html", "--out", str(out))
    assert html.code == 0, html.output
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", out.read_text()))
    assert f"crowded: {want}" in text


def test_results_group_by_invoked_counts_the_trials_each_skill_took(lab: Path, ran: Path):
    r = run_ix("results", "--lab", str(lab), "--group-by", "subject", "--group-by", "invoked",
               "--json")
    assert r.code == 0, r.output
    got = {(row["subject"], row["first_invoked"]): row["n"] for row in json.loads(r.stdout)}
    want = Counter((x["subject"], first_skill(x)) for x in lines(ran))
    assert got == dict(want)
    table = ix_in_process("results", "--lab", str(lab), "-g", "invoked")
    assert table.code == 0, table.output
    header, *rows = [line.split()[0] for line in table.stdout.splitlines()
                     if line.strip() and not line.startswith("━")]
    assert header == "invoked" and rows == ["pdf", "xlsx", "none"]  # none: no skill taken
    bad = run_ix("results", "--lab", str(lab), "-g", "invokd")  # the real exit 2
    assert bad.code == 2 and "invoked" in bad.stderr


def test_the_failure_table_shows_the_prompt_and_every_subjects_wrong_example(lab: Path,
                                                                           ran: Path):
    data = json.loads(ix_in_process("report", "--lab", str(lab), "--format", "json").stdout)
    rows = {row["probe_id"]: row for row in data["failures"]["cases"]}
    # wrong: a must case the skill missed, or a should-not case it fired on
    wrong = {(x["probe_id"], x["subject"]) for x in lines(ran)
             if (x["expectation"] == "must_trigger") != x["reading"]["passed"]}
    for case_id, row in rows.items():
        assert row["prompt"] == PROMPTS[case_id]
        assert {e["subject"] for e in row["examples"]} == {s for c, s in wrong if c == case_id}
    assert len(rows["must-002"]["examples"]) == 2  # alone and crowded both missed it
    pdf = next(e for e in rows["must-002"]["examples"] if e["subject"] == "crowded")
    assert pdf["invoked"] == ["pdf"] and "invoked: pdf" in pdf["details"]
    md = ix_in_process("report", "--lab", str(lab), "--format", "md").stdout
    assert PROMPTS["must-002"] in md and "alone \\#" in md and "crowded \\#" in md
    table = ix_in_process("report", "--lab", str(lab), env={"COLUMNS": "80"}).stdout
    assert PROMPTS["must-002"] in table
    assert "  alone #" in table and "  crowded #" in table


def test_a_resumed_run_routes_the_trials_it_recorded_before(lab: Path, tmp_path: Path):
    d = routed_lab(lab, trials=6)
    # the routing a summary records is under test, not the commands: in process
    r = ix_in_process("run", "--lab", str(lab), "--max-trials", "10")
    assert r.code == 130, r.output
    assert ix_in_process("run", "--lab", str(lab), "--resume").code == 0
    resumed = json.loads((d / "results" / "summary-latest.json").read_text())
    fresh = routed_lab(tmp_path / "fresh", trials=6)
    assert ix_in_process("run", "--lab", str(tmp_path / "fresh")).code == 0
    whole = json.loads((fresh / "results" / "summary-latest.json").read_text())
    for a, b in zip(resumed["subjects"], whole["subjects"], strict=True):
        assert a["routing"] == b["routing"]
        assert [p["routes"] for p in a["probe_results"]] == \
            [p["routes"] for p in b["probe_results"]]


def test_a_capability_sensor_gets_no_routing_table(lab: Path):
    d = lab / "cap"
    write(d / "experiment.yaml", """
        name: cap
        runtime:
          kind: command
          argv: [python3, -c, "print('ok')"]
        sensor:
          kind: exit_code
        trials: 1
        subjects:
          - name: tool
    """)
    write(d / "cases" / "must-001.md", "---\nexpectation: must_trigger\n---\nrun it\n")
    r = ix_in_process("run", "--lab", str(lab))  # set-up: the summary is under test
    assert r.code == 0, r.output
    summary = json.loads((d / "results" / "summary-latest.json").read_text())
    assert "routing" not in summary["subjects"][0]
    assert "routes" not in summary["probe_results"][0]
    report = ix_in_process("report", "--lab", str(lab), "--format", "md").stdout
    assert "Which skill took the prompt" not in report
