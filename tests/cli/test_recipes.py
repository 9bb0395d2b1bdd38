"""`ix new --template` benchmark recipes (docs/recipes.md): each scaffolds an experiment that
`ix validate` accepts and `ix run` runs offline on the lexical runtime; bad input is refused
with exit 2 naming the flag, nothing written. Made and run in process; the real `ix` once."""

import json
import re
from pathlib import Path

import pytest
import yaml

from conftest import REPO, ix_in_process, run_ix, write
from ix.api.integrations.recipes import RECIPES
from ix.api.integrations.scaffold import TEMPLATES

SKILLS = {"csv-summary": "Summarise CSV files: columns, types and counts.",
          "spreadsheet-insights": "Find trends in spreadsheet data and CSV columns.",
          "pdf": "Extract text and tables from PDF files."}


@pytest.fixture
def skills_lab(lab: Path) -> Path:
    for name, description in SKILLS.items():
        write(lab / "skills" / name / "SKILL.md",
              f"---\nname: {name}\ndescription: {json.dumps(description)}\n---\nBody\n")
    return lab


def config(path: Path) -> dict:
    return yaml.safe_load((path / "experiment.yaml").read_text())


@pytest.mark.parametrize("template", sorted(RECIPES))
def test_each_recipe_validates_and_runs_offline(skills_lab, template):
    made = ix_in_process("new", template, "--template", template, "--skill", "csv-summary",
                         "--runtime", "lexical", "--lab", str(skills_lab), "--json")
    assert made.code == 0, made.output
    exp = skills_lab / template
    text = (exp / "experiment.yaml").read_text()
    assert all(len(line) <= 100 for line in text.splitlines()), text
    assert text.startswith(f"# Written by `ix new --template {template}`")
    readme = (exp / "README.md").read_text()
    assert "## Reading the verdict" in readme and f"ix validate {template}" in readme
    v = ix_in_process("validate", template, "--lab", str(skills_lab), "--json")
    assert v.code == 0, v.output
    [report] = json.loads(v.stdout)
    assert report["ok"] and report["cases"] >= 2
    assert all(s["runtime"] == "lexical" for s in report["subjects"])
    r = ix_in_process("run", template, "--lab", str(skills_lab), "--progress", "none",
                      "--json")
    assert r.code in (0, 1), r.output  # 1: a goal refuted on template cases
    summary = json.loads(r.stdout)
    assert summary["run_status"] == "completed" and summary["errors"] == 0


def test_coexistence_is_control_plus_each_neighbour_closest_first(skills_lab):
    assert ix_in_process("new", "co", "--template", "coexistence", "--skill", "csv-summary",
                         "--lab", str(skills_lab)).code == 0
    cfg = config(skills_lab / "co")
    assert [s["name"] for s in cfg["subjects"]] == [
        "csv-summary-only", "csv-summary-plus-spreadsheet-insights", "csv-summary-plus-pdf"]
    assert cfg["goal"]["compare"] == ["csv-summary-only",
                                      "csv-summary-plus-spreadsheet-insights"]
    assert "runtime" not in cfg  # the lab's default, as `ix new` leaves it


def test_the_sweep_grid_follows_the_runtime_and_its_control_is_no_repeated_cell(skills_lab):
    for kind, key in (("lexical", "temperature"), ("claude-code", "model"),
                      ("mock", "default_rate")):
        assert ix_in_process("new", f"sw-{kind}", "--template", "sweep", "--skill",
                             "csv-summary", "--runtime", kind, "--lab",
                             str(skills_lab)).code == 0
        cfg = config(skills_lab / f"sw-{kind}")
        assert key in cfg["sweep"] and cfg["sweep"]["ablate"] == "skills"
        v = ix_in_process("validate", f"sw-{kind}", "--lab", str(skills_lab), "--json")
        [report] = json.loads(v.stdout)
        # the control sets the key, or its known default is outside the grid
        assert "unswept-control" not in {s["code"] for s in report["suggestions"]}, report


def test_optimize_has_cases_enough_for_a_holdout_and_context_a_goal_across_lengths(
        skills_lab):
    assert ix_in_process("new", "opt", "--template", "optimize", "--skill", "csv-summary",
                         "--lab", str(skills_lab)).code == 0
    names = sorted(p.name for p in (skills_lab / "opt" / "cases").iterdir())
    assert sum(n.startswith("must-") for n in names) == 4
    assert sum(n.startswith("not-") for n in names) == 4
    assert ix_in_process("new", "ctx", "--template", "context", "--skill", "csv-summary",
                         "--goal", "It fades", "--lab", str(skills_lab)).code == 0
    cfg = config(skills_lab / "ctx")
    assert cfg["context"]["prefix"] == "builtin:coding-session"
    assert cfg["goal"]["compare"] == ["csv-summary[ctx=0]", "csv-summary[ctx=128]"]
    assert cfg["goal"]["hypothesis"] == "It fades"


@pytest.mark.parametrize(("args", "field", "words"), [
    (["--template", "sweep"], "--skill", "give --skill"),
    (["--template", "context", "--skill", "csv-summary", "--subjects", "a,b"], "--subjects",
     "names its subjects"),
    (["--template", "sweeps", "--skill", "csv-summary"], "--template", "unknown template"),
])
def test_bad_recipe_input_is_refused_naming_the_flag(skills_lab, args, field, words):
    r = ix_in_process("new", "x", *args, "--lab", str(skills_lab))
    assert r.code == 2 and f"{field}:" in r.stderr and words in r.stderr, r.output
    assert not (skills_lab / "x").exists()


def test_coexistence_without_another_skill_is_refused_by_the_real_command(lab):
    write(lab / "skills" / "alone" / "SKILL.md", "---\nname: alone\ndescription: A.\n---\n")
    r = run_ix("new", "co", "--template", "coexistence", "--skill", "alone", "--lab", str(lab))
    assert r.code == 2 and r.stderr.startswith("ix: error: --template: "), r.output
    assert "holds none" in r.stderr and "Traceback" not in r.stderr
    assert sorted(p.name for p in lab.iterdir()) == ["skills"]


def test_every_template_is_a_section_of_the_recipes_page():
    page = (REPO / "docs" / "recipes.md").read_text()
    for template in TEMPLATES:
        assert re.search(rf"^## `{template}`", page, flags=re.M), template


def test_the_outcome_recipe_runs_offline_with_a_stand_in_agent(skills_lab):
    """`--runtime command`: a stand-in for the agent (it writes answer.txt more often with the
    skill in its workspace) and the check program, no judge: no key, no model."""
    assert ix_in_process("new", "out", "--template", "outcome", "--skill", "csv-summary",
                         "--runtime", "command", "--lab", str(skills_lab)).code == 0
    cfg = config(skills_lab / "out")
    assert cfg["runtime"]["kind"] == "command" and "{{ seed }}" in cfg["runtime"]["argv"]
    assert [s["kind"] for s in cfg["sensors"]] == ["check"]
    v = ix_in_process("validate", "out", "--lab", str(skills_lab), "--json")
    assert v.code == 0 and json.loads(v.stdout)[0]["ok"], v.output
    r = ix_in_process("run", "out", "--lab", str(skills_lab), "--trials", "9", "--progress",
                      "none", "--json")
    assert r.code in (0, 1), r.output
    assert json.loads(r.stdout)["errors"] == 0
    passed: dict[str, int] = {}
    for line in (skills_lab / "out" / "results" / "trials.jsonl").read_text().splitlines():
        trial = json.loads(line)
        passed[trial["subject"]] = passed.get(trial["subject"], 0) + trial["reading"]["passed"]
    # the same trial seeds for both (common random numbers): the skill only adds passes
    assert passed["with-csv-summary"] > passed["without-skill"] > 0, passed
