"""`ix new NAME`: an experiment scaffolded from flags or by asking on a terminal, valid right
away, and never over anything that exists. What is made or refused is asked in process
(`ix_in_process`, the same `main`); the real `ix` keeps the command line's part: `--json`
output, the working folder as the lab, asking on a terminal, and a sample of refusals (exit
2, one line), which it gives as `main` does in process."""

import json
import os
import pty
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import _ix_argv, flat, ix_in_process, run_ix, tree_digest, write
from ix.api.integrations.scaffold import create_experiment
from ix.domain.errors import ConfigError

SKILL = "---\nname: csv-summary\ndescription: Summarise CSV files (columns, types, counts).\n---\n"


@pytest.fixture
def skill_lab(lab: Path) -> Path:
    write(lab / "skills" / "csv-summary" / "SKILL.md", SKILL + "Body\n")
    return lab


def config(path: Path) -> dict:
    return yaml.safe_load((path / "experiment.yaml").read_text())


def test_flags_make_a_valid_experiment_with_templates_and_a_readme(skill_lab):
    r = run_ix("new", "csv", "--skill", "csv-summary", "--runtime", "lexical",
               "--lab", str(skill_lab), "--json")
    assert r.code == 0, r.output
    made = json.loads(r.stdout)
    exp = skill_lab / "csv"
    assert made["path"] == str(exp) and made["name"] == "csv"
    assert made["files"] == ["README.md", "cases/edge-001.md", "cases/must-001.md",
                             "cases/not-001.md", "experiment.yaml"]
    cfg = config(exp)
    assert cfg["name"] == "csv" and cfg["skill"] == "csv-summary"
    assert cfg["runtime"] == "lexical" and cfg["trials"] == 5
    readme = (exp / "README.md").read_text()
    for word in ("## Goal", "## Design", "## Run", "## Analysis", "ix validate csv",
                 "--smoke", "inconclusive"):
        assert word in readme
    v = ix_in_process("validate", "--lab", str(skill_lab), "csv", "--json")
    assert v.code == 0, v.output
    [report] = json.loads(v.stdout)
    assert report["ok"] and report["cases"] == 2 and report["skipped_acceptable"] == 1
    assert report["subjects"][0]["skills"] == ["csv-summary"]
    assert "too-few-cases" in {w["code"] for w in report["warnings"]}  # 1 case a side
    smoke = ix_in_process("run", "--lab", str(skill_lab), "csv", "--smoke", "--json")
    assert smoke.code == 0, smoke.output


def test_subjects_and_a_goal_become_a_comparison(skill_lab):
    r = ix_in_process("new", "cmp", "--skill", "csv-summary", "--subjects", "a-only,a-plus-b",
                      "--subject", "claude-haiku", "--goal", "Adding B lowers A's recall",
                      "--runtime", "mock", "--lab", str(skill_lab))
    assert r.code == 0, r.output
    cfg = config(skill_lab / "cmp")
    assert [s["name"] for s in cfg["subjects"]] == ["a-only", "a-plus-b", "claude-haiku"]
    assert cfg["subjects"][2]["profile"] == "claude-haiku"
    assert "profile" not in cfg["subjects"][0]
    assert all(s["skills"] == ["csv-summary"] for s in cfg["subjects"])
    assert cfg["sensor"] == {"kind": "activation", "skill": "csv-summary"}
    goal = cfg["goal"]
    assert goal["hypothesis"] == "Adding B lowers A's recall"
    assert goal["compare"] == ["a-only", "a-plus-b"] and goal["metric"] == "f1"
    v = ix_in_process("validate", "--lab", str(skill_lab), "cmp")
    assert v.code == 0, v.output


def test_a_hypothesis_with_one_subject_becomes_the_description(lab):
    r = ix_in_process("new", "solo", "--goal", "It triggers on CSV prompts", "--runtime",
                      "mock", "--lab", str(lab))
    assert r.code == 0, r.output
    cfg = config(lab / "solo")
    assert cfg["description"] == "It triggers on CSV prompts" and "goal" not in cfg
    assert "# goal:" in (lab / "solo" / "experiment.yaml").read_text()
    assert ix_in_process("validate", "--lab", str(lab)).code == 0


def test_without_a_lab_the_working_directory_becomes_one(tmp_path):
    r = run_ix("new", "first", "--runtime", "mock", cwd=tmp_path)
    assert r.code == 0, r.output
    assert (tmp_path / "first" / "experiment.yaml").is_file()
    assert ix_in_process("validate", cwd=tmp_path).code == 0


def test_an_existing_folder_is_never_overwritten(skill_lab):
    assert ix_in_process("new", "csv", "--runtime", "mock", "--lab", str(skill_lab)).code == 0
    (skill_lab / "csv" / "cases" / "must-001.md").write_text("---\nexpectation: must_trigger"
                                                             "\n---\nMine.\n")
    (skill_lab / "other").mkdir()
    before = tree_digest(skill_lab)
    for name in ("csv", "other", "skills"):
        r = ix_in_process("new", name, "--runtime", "mock", "--lab", str(skill_lab))
        if name == "csv":  # the contract, through the real command once
            assert run_ix("new", name, "--runtime", "mock", "--lab", str(skill_lab)) == r
        assert r.code == 2, r.output
        lines = flat(r.stderr).splitlines()
        assert len(lines) == 1 and lines[0].startswith("ix: error:") and "exists" in lines[0]
        assert "Traceback" not in r.output
    assert tree_digest(skill_lab) == before
    assert sorted(p.name for p in skill_lab.iterdir()) == ["csv", "other", "skills"]


#: Refused by the real command too, which must answer as `main` does in process.
REAL = {"../escape", "-x", "--runtime"}


@pytest.mark.parametrize("name", ["../escape", "a/b", "..", ".hidden", "a..b", "", "-x",
                                  "with space", "x" * 101])
def test_a_bad_name_is_refused_with_nothing_written(lab, name):
    write(lab / "keep.txt", "x")
    before = tree_digest(lab)
    r = ix_in_process("new", "--runtime", "mock", "--lab", str(lab), "--", name)
    if name in REAL:
        assert run_ix("new", "--runtime", "mock", "--lab", str(lab), "--", name) == r
    assert r.code == 2, r.output
    assert "Traceback" not in r.output
    lines = flat(r.stderr).splitlines()
    assert len(lines) == 1 and lines[0].startswith("ix: error:"), r.stderr
    assert tree_digest(lab) == before and sorted(os.listdir(lab)) == ["keep.txt"]
    assert not (lab.parent / "escape").exists()


@pytest.mark.parametrize(("args", "named"), [
    (["--runtime", "nosuch"], "--runtime"),
    (["--subjects", "a,a"], "--subjects"),
    (["--subjects", "a/b"], "--subjects"),
    (["--skill", "../x"], "--skill"),
])
def test_bad_flags_are_refused_with_nothing_written(lab, args, named):
    write(lab / "keep.txt", "x")
    r = ix_in_process("new", "exp", *args, "--lab", str(lab))
    if named in REAL:
        assert run_ix("new", "exp", *args, "--lab", str(lab)) == r
    assert r.code == 2 and "Traceback" not in r.output, r.output
    assert named in flat(r.stderr) and len(flat(r.stderr).splitlines()) == 1
    assert sorted(os.listdir(lab)) == ["keep.txt"]


def test_on_a_terminal_the_missing_flags_are_asked_for(skill_lab):
    """stdin is a pseudo-terminal: ix asks for the skill, subjects, hypothesis and runtime."""
    master, slave = pty.openpty()
    env = {**os.environ, "XDG_CONFIG_HOME": str(skill_lab / ".cfg"), "NO_COLOR": "1"}
    proc = subprocess.Popen([*_ix_argv(), "new", "asked", "--lab", str(skill_lab)],
                            stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, text=True)
    os.close(slave)
    os.write(master, b"csv-summary\nctrl, treat\nTreat triggers more often\nmock\n")
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        os.close(master)
    assert proc.returncode == 0, out + err
    assert "Skill under test" in out and "Hypothesis" in out
    cfg = config(skill_lab / "asked")
    assert cfg["runtime"] == "mock"
    assert [s["name"] for s in cfg["subjects"]] == ["ctrl", "treat"]
    assert cfg["goal"]["hypothesis"] == "Treat triggers more often"
    assert cfg["sensor"]["skill"] == "csv-summary"
    assert ix_in_process("validate", "--lab", str(skill_lab), "asked").code == 0


def test_no_input_never_asks(lab):
    r = ix_in_process("new", "quiet", "--no-input", "--runtime", "mock", "--lab", str(lab))
    assert r.code == 0 and "Skill under test" not in r.output


def test_the_api_writes_given_cases(lab):
    """What the MCP server's create_experiment calls: cases given as data (mock fakes the
    Skill call, so the skill may stay missing)."""
    path = create_experiment(lab, "given", skill="csv-summary", runtime="mock",
                             allow_missing=True, cases=[
        {"expectation": "must_trigger", "prompt": "Summarise sales.csv"},
        {"id": "near-1", "expectation": "should_not_trigger", "prompt": "Plot a chart",
         "tags": ["chart"], "difficulty": "hard", "rationale": "a near miss"},
        {"expectation": "must_trigger", "prompt": "What columns does q3.csv have?"},
    ])
    assert path == lab / "given"
    names = sorted(p.name for p in (path / "cases").iterdir())
    assert names == ["must-001.md", "must-002.md", "near-1.md"]
    v = ix_in_process("validate", "--lab", str(lab), "given", "--json")
    assert v.code == 0, v.output
    assert json.loads(v.stdout)[0]["cases"] == 3
    near = (path / "cases" / "near-1.md").read_text()
    assert "difficulty: hard" in near and "- chart" in near and near.endswith("Plot a chart\n")


@pytest.mark.parametrize(("cases", "field"), [
    ([{"expectation": "maybe", "prompt": "x"}], "cases[0].expectation"),
    ([{"expectation": "must_trigger", "prompt": "  "}], "cases[0].prompt"),
    ([{"expectation": "must_trigger", "prompt": "x", "colour": 1}], "cases[0].colour"),
    ([{"id": "a/b", "expectation": "must_trigger", "prompt": "x"}], "cases[0].id"),
    ([{"id": "a", "expectation": "must_trigger", "prompt": "x"},
      {"id": "a", "expectation": "must_trigger", "prompt": "y"}], "cases[1].id"),
    ([{"expectation": "acceptable", "prompt": "x"}], "cases"),
    ("not a list", "cases"),
])
def test_the_api_refuses_bad_cases_before_writing(lab, cases, field):
    with pytest.raises(ConfigError) as caught:
        create_experiment(lab, "bad", runtime="mock", cases=cases)
    assert caught.value.field == field
    assert list(lab.iterdir()) == []


def test_the_outcome_template_makes_a_task_experiment_that_loads_and_plans(skill_lab):
    """`--template outcome`: the agent without and with the skill, a task with its files, a
    check program found in the experiment's folder (`{{ experiment }}`), a judge's rubric, a
    goal on the correct rate; claude-code in task mode."""
    from ix.engine.plan import Overrides, build_plan
    from ix.lab.loader import load_experiment

    r = ix_in_process("new", "help", "--template", "outcome", "--skill", "csv-summary",
                      "--lab", str(skill_lab), "--json")
    assert r.code == 0, r.output
    exp = skill_lab / "help"
    assert json.loads(r.stdout)["files"] == [
        "README.md", "cases/task-001.md", "cases/task-001/files/input.txt", "check.py",
        "experiment.yaml", "rubrics/quality.md"]
    cfg = config(exp)
    assert cfg["runtime"] == {"kind": "claude-code", "task": True} and cfg["workspace"] == {}
    assert [s["name"] for s in cfg["subjects"]] == ["without-skill", "with-csv-summary"]
    assert cfg["goal"]["compare"] == ["without-skill", "with-csv-summary"]
    assert all(len(line) <= 100 for line in (exp / "experiment.yaml").read_text().splitlines())
    plan = build_plan(load_experiment(exp, skill_lab), Overrides())
    (case,) = plan.cases
    assert [f.path for f in case.workspace.files] == ["input.txt"]
    check = plan.subjects[0].sensors[0]
    assert check.options.command == ["python3", f"{exp}/check.py"]
    assert plan.subjects[1].runtime.options.max_turns == 30
    assert "Write" in plan.subjects[1].runtime.options.allowed_tools
    judge = plan.subjects[0].sensors[1]  # the rubric to fill in, shown the files made
    assert judge.name == "quality" and judge.rubric.dimensions == ["correctness", "clarity"]
    assert "at_most: 0.2" in (exp / "experiment.yaml").read_text()


def test_the_outcome_template_needs_the_skill_it_is_about(skill_lab):
    r = run_ix("new", "help", "--template", "outcome", "--lab", str(skill_lab))
    assert r.code == 2 and "--skill" in r.stderr and "give --skill" in r.stderr
    assert not (skill_lab / "help").exists()
    bad = ix_in_process("new", "help", "--template", "outcomes", "--lab", str(skill_lab))
    assert bad.code == 2 and "unknown template 'outcomes'" in bad.stderr
