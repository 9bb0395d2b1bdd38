"""The Claude Code skill for ix (`integrations/claude-code`) and the experiment that measures it
(`examples/ix-skill-lab/ix-skill-activation`).

- The SKILL.md frontmatter passes ix's own check (`ix.lab.schema.SkillFrontmatter`) and the
  stricter rules of anthropics/skills' `quick_validate.py` (shared/CLAUDE_CODE.md §3).
- Every `ix` command and flag the skill names exists (`ix <command> --help`).
- The real Claude Code CLI (bundled with claude-agent-sdk) loads it with `--plugin-dir`,
  lists it as `ix:ix`, and loads its body when the model calls it (a loopback Messages API).
- The activation experiment runs offline with the real `ix` and reports recall.
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
import yaml

from conftest import REPO, ix_in_process, run_ix
from ix.fs.frontmatter import read_frontmatter
from ix.lab.schema import SkillFrontmatter, validate

PLUGIN = REPO / "integrations" / "claude-code"
SKILL = PLUGIN / "skills" / "ix" / "SKILL.md"
LAB = REPO / "examples" / "ix-skill-lab"
EXPERIMENT = "ix-skill-activation"
#: quick_validate.py of anthropics/skills (skill-creator).
ALLOWED_KEYS = {"name", "description", "license", "allowed-tools", "metadata", "compatibility"}


def test_the_frontmatter_passes_the_skill_md_rules():
    meta, body = read_frontmatter(SKILL)
    parsed = validate(SkillFrontmatter, meta, file=SKILL, what="frontmatter")
    assert parsed.name == "ix" == SKILL.parent.name
    assert set(meta) <= ALLOWED_KEYS, set(meta) - ALLOWED_KEYS
    name = meta["name"]
    assert re.fullmatch(r"[a-z0-9-]+", name) and len(name) <= 64
    assert not name.startswith("-") and not name.endswith("-") and "--" not in name
    description = meta["description"]
    assert isinstance(description, str) and 0 < len(description) <= 1024
    assert "<" not in description and ">" not in description
    assert len(str(meta.get("compatibility", ""))) <= 500
    assert body.strip().startswith("# ")
    for phase in ("Goal", "Design", "Run", "Analysis"):
        assert re.search(rf"^## \d\. {phase}", body, flags=re.MULTILINE), phase


def test_the_plugin_layout():
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    assert re.fullmatch(r"[a-z0-9-]+", manifest["name"])
    assert manifest["description"] and re.fullmatch(r"\d+\.\d+\.\d+", manifest["version"])
    assert SKILL.is_file()
    assert sorted(p.name for p in (PLUGIN / ".claude-plugin").iterdir()) == ["plugin.json"]


def test_the_example_lab_carries_the_shipped_skill():
    assert (LAB / "skills" / "ix" / "SKILL.md").read_bytes() == SKILL.read_bytes(), \
        "copy integrations/claude-code/skills/ix/SKILL.md to examples/ix-skill-lab/skills/ix/"


@cache
def help_of(*command: str) -> str:
    # the flags a command has, asked in process (its `--help`, as the real `ix` prints it:
    # tests/cli hold the help's rendering to the process's)
    r = ix_in_process(*command, "--help")
    assert r.code == 0, f"`ix {' '.join(command)}` does not exist:\n{r.output}"
    return r.stdout


def mentioned_commands() -> list[list[str]]:
    """Every `ix ...` in the skill: in inline code and in code blocks."""
    text = SKILL.read_text(encoding="utf-8")
    fenced = re.compile(r"^```[a-z]*\n(.*?)^```", flags=re.DOTALL | re.MULTILINE)
    lines = [line.split("#", 1)[0] for block in fenced.findall(text)
             for line in block.splitlines()]
    lines += re.findall(r"`([^`]+)`", fenced.sub("", text))  # may span a line break
    return [shlex.split(" ".join(line.split())) for line in lines
            if line.strip().startswith("ix ")]


def test_every_command_and_flag_the_skill_names_exists():
    commands = mentioned_commands()
    assert len(commands) >= 20
    names = {c[1] for c in commands}
    assert {"new", "validate", "plan", "run", "report", "compare", "results", "schema",
            "tag"} <= names
    groups = {"subjects", "cache"}
    for tokens in commands:
        command = tokens[1:3] if tokens[1] in groups else tokens[1:2]
        text = help_of(*command)
        for token in tokens:
            flag = token.split("=", 1)[0]
            if flag.startswith("--"):
                assert flag in text, f"`{' '.join(tokens)}`: ix {' '.join(command)} has no {flag}"


@pytest.fixture(scope="module")
def example(tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("ix-skill") / "lab"
    shutil.copytree(LAB, dest, ignore=shutil.ignore_patterns("results", "artifacts"))
    return dest


def test_the_experiment_is_a_sound_design(example):
    cases = [read_frontmatter(p)[0]["expectation"]
             for p in (example / EXPERIMENT / "cases").glob("*.md")]
    assert cases.count("must_trigger") >= 10 and cases.count("should_not_trigger") >= 10
    assert cases.count("acceptable") >= 2
    r = run_ix("validate", "--lab", str(example), EXPERIMENT, "--strict", "--json")
    assert r.code == 0, r.output
    [report] = json.loads(r.stdout)
    assert report["warnings"] == [] and report["subjects"][0]["runtime"] == "lexical"
    assert report["subjects"][0]["target_skill"] == "ix"
    assert "ix" in report["subjects"][0]["skills"]


def test_the_experiment_runs_offline_and_reports_recall(example):
    r = run_ix("run", "--lab", str(example), EXPERIMENT, "--json")
    assert r.code == 0, r.output
    summary = json.loads(r.stdout)
    assert summary["run_status"] == "completed" and summary["errors"] == 0
    m = summary["metrics"]
    assert m["tp"] + m["fn"] >= 10 and m["fp"] + m["tn"] >= 10
    assert isinstance(m["recall"], float) and 0.0 <= m["recall"] <= 1.0
    lo, hi = m["recall_ci"]
    # equal-tailed, one-sided only at the boundary (STATS.md §1): it holds the estimate and
    # reaches 1 only when every must case was found
    assert 0.0 <= lo <= m["recall"] <= hi <= 1.0 and lo < hi
    assert (hi == 1.0) == (m["fn"] == 0) and (lo == 0.0) == (m["tp"] == 0)
    assert len(summary["skipped_cases"]) >= 2
    shown = run_ix("report", "--lab", str(example), summary["run_id"])
    assert shown.code == 0 and "recall" in shown.stdout.lower(), shown.output


def test_the_documented_claude_code_subject_is_valid(example):
    """The commented-out `claude-sonnet-with-ix` subject (a registry profile on the
    claude-code runtime) plans as written, once uncommented."""
    config = example / EXPERIMENT / "experiment.yaml"
    text = config.read_text()
    assert "profile: claude-sonnet" in text
    assert "--runtime claude-code" in (LAB / "README.md").read_text()
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "- name: claude-sonnet-with-ix" in line)
    live = [line.replace("  # ", "  ", 1) if i >= start else line
            for i, line in enumerate(lines)]
    copy = example / "real"
    shutil.copytree(example / EXPERIMENT, copy, ignore=shutil.ignore_patterns("results"))
    (copy / "experiment.yaml").write_text("\n".join(live) + "\n")
    assert [s["name"] for s in yaml.safe_load((copy / "experiment.yaml").read_text())
            ["subjects"]] == ["with-ix", "claude-sonnet-with-ix"]
    r = run_ix("validate", "--lab", str(example), "real", "--json")
    assert r.code == 0, r.output
    [report] = json.loads(r.stdout)
    assert [s["runtime"] for s in report["subjects"]] == ["lexical", "claude-code"]
    shutil.rmtree(copy)


def test_claude_code_loads_the_plugin_and_its_skill(tmp_path):
    """`claude --plugin-dir integrations/claude-code`: the real CLI lists `ix:ix` with its
    description, and when the (scripted) model calls it, loads the skill's body."""
    sys.path.insert(0, str(REPO / "tests" / "runtimes"))
    from fake_messages_sse import FAKE_KEY, FakeMessages, skill, text

    from ix.runtimes.claude_code import find_cli

    with FakeMessages() as api:
        api.script.extend([skill("ix:ix"), text("Here is the plan.")])
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path),
               "ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": FAKE_KEY,
               "CLAUDE_CODE_DISABLE_BUNDLED_SKILLS": "1"}
        proc = subprocess.run(
            [str(find_cli()), "-p", "--output-format", "stream-json", "--verbose",
             "--no-session-persistence", "--max-turns", "3", "--setting-sources=",
             "--allowedTools", "Skill", "--plugin-dir", str(PLUGIN)],
            input="Does adding skill B degrade skill A? Set up an ix experiment.",
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
        requests = api.messages_requests()
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    init = next(e for e in events if e.get("type") == "system" and e.get("subtype") == "init")
    assert "ix:ix" in init["skills"], init["skills"]
    assert any(p["name"] == "ix" for p in init["plugins"]) and not init.get("plugin_errors")
    description = read_frontmatter(SKILL)[0]["description"]
    assert f"- ix:ix: {description}" in requests[0].all_text()
    assert requests[-1].last_user_has_tool_result()
    assert "# Experiments with ix" in requests[-1].all_text()
