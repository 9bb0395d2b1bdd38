"""`ix validate`'s control suggestions (docs/experiments.md, "Control suggestions"): a
no-skill baseline, near-miss cases from sibling skills, an unswept control for a sweep —
printed under their experiment within 80 columns, a value never cut, listed in `--json`, and
never an error (under --strict too)."""

import json
import re
from pathlib import Path

from conftest import case, ix_in_process, run_ix, too_wide, write

LONG = "a-sibling-skill-with-a-name-far-longer-than-anything-a-terminal-line-could-hold-x"


def _lab(lab: Path) -> Path:
    for name, description in (
            ("csv-summary", "Summarise CSV files (columns, types, counts)."),
            ("spreadsheet-insights", "Find trends in spreadsheet data and CSV columns."),
            ("pdf", "Extract text and tables from PDF files, fill forms, merge documents."),
            (LONG, "Use when the user asks to turn a table into a long report.")):
        write(lab / "skills" / name / "SKILL.md",
              f"---\nname: {name}\ndescription: {description}\n---\nBody\n")
    exp = lab / "sweep-and-siblings"
    write(exp / "experiment.yaml", """
        name: sweep-and-siblings
        runtime: lexical
        sensor: {kind: activation, skill: csv-summary}
        trials: 3
        subjects:
          - name: base
            skills: [csv-summary, spreadsheet-insights]
        sweep:
          temperature: [0.5, 1]
        """)
    for i in range(1, 4):
        case(exp, f"must-{i:03d}", "must_trigger", f"Summarise the columns of sales{i}.csv")
    case(exp, "not-001", "should_not_trigger", "Write a limerick about rain")
    out = lab / "outcome"
    write(out / "experiment.yaml", """
        name: outcome
        runtime: lexical
        sensor: {kind: matcher, contains: columns}
        trials: 3
        skill: csv-summary
        """)
    case(out, "task-001", "must_trigger", "Summarise sales.csv")
    return lab


def test_validate_suggests_controls_within_80_columns_and_never_fails_on_them(lab):
    _lab(lab)
    r = ix_in_process("validate", "--lab", str(lab), "--strict", env={"COLUMNS": "80"})
    # --strict fails on the design warnings (too few cases), never on a suggestion
    assert r.code == 2 and "[near-miss-cases]" not in r.stderr, r.output
    r = ix_in_process("validate", "--lab", str(lab), env={"COLUMNS": "80"})
    assert r.code == 0, r.output
    assert not too_wide(r.stdout.replace(LONG, "x")), too_wide(r.stdout)
    assert f"cases/not-{LONG}-001.md:" in r.stdout  # whole, on a line of its own
    text = " ".join(r.stdout.split())
    assert "[near-miss-cases]" in text and "[unswept-control]" in text
    assert "[no-skill-baseline]" in text
    # the closest sibling first; the target itself never
    ideas = re.findall(r"cases/not-(\S+)-001\.md", r.stdout)
    assert ideas[0] == "spreadsheet-insights" and "csv-summary" not in ideas
    assert '"Can you turn a table into a long report?"' in text
    assert "runs at lexical's default 0.5, which the cell temperature=0.5 runs again" in text
    assert "      subjects:\n        - name: base\n          runtime:\n" \
           "            temperature: 0.5\n" in r.stdout  # YAML as it is, to paste
    assert "replace `skill:` with a control without it" in text
    # the suggestions follow their experiment's lines, before the next experiment's
    assert r.stdout.index("✓ outcome") < r.stdout.index("[no-skill-baseline]") \
        < r.stdout.index("✓ sweep-and-siblings") < r.stdout.index("[unswept-control]")


def test_validate_json_lists_each_suggestion_with_its_examples(lab):
    _lab(lab)
    r = run_ix("validate", "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    reports = {x["experiment"]: x for x in json.loads(r.stdout)}
    sweep = {s["code"]: s for s in reports["sweep-and-siblings"]["suggestions"]}
    assert set(sweep) == {"near-miss-cases", "unswept-control"}
    assert sweep["unswept-control"]["field"] == "sweep.temperature"
    assert sweep["near-miss-cases"]["examples"][0].startswith(
        "cases/not-spreadsheet-insights-001.md: ")
    [baseline] = reports["outcome"]["suggestions"]
    assert baseline["code"] == "no-skill-baseline" and baseline["field"] == "skill"
    assert "  - name: without-csv-summary" in baseline["examples"]
