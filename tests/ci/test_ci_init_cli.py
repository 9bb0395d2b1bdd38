"""`ix ci init`: the files it writes, its refusals (exit 2, file or field named, nothing
written) and its help at 80 columns.

Through the real command (`run_ix`): the default's exit 0 with what it prints, the refusal of
an existing file (exit 2), a name CI would run (one per platform), and the help; the rest
(which input writes what, which is refused with which message) through `ix_in_process`."""

import json
import shutil
from pathlib import Path

import pytest

from conftest import EXAMPLE_LAB, ROUTING_ONLY, flat, ix_in_process, run_ix  # type: ignore[attr-defined]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLE_LAB, root / "lab",
                    ignore=ROUTING_ONLY)
    return root


@pytest.mark.parametrize("flag,path", [("--github", ".github/workflows/ix.yml"),
                                       ("--gitlab", ".gitlab-ci.yml")])
def test_writes_the_platforms_file_at_the_root(repo, schema_check, flag, path):
    r = ix_in_process("ci", "init", flag, "--lab", "lab", "--json", cwd=repo)
    assert r.code == 0, r.output
    data = json.loads(r.stdout)
    assert data["path"] == str(repo / path) and data["lab"] == "lab"
    assert [g["tag"] for g in data["gates"]] == [
        "baseline-coexistence", "baseline-context-degradation", "baseline-skill-activation"]
    text = (repo / path).read_text()
    assert schema_check(flag[2:], text)[1] == []


def test_the_default_is_github_and_says_what_is_left_to_do(repo):
    r = run_ix("ci", "init", "--lab", "lab", cwd=repo)
    assert r.code == 0, r.output
    assert r.stdout.startswith(f"wrote {repo / '.github/workflows/ix.yml'} (GitHub Actions)")
    assert "gate: skill-activation against baseline-skill-activation (not tagged yet)" \
        in r.stdout
    assert "ix tag RUN TAG" in flat(r.stderr)


def test_an_existing_file_is_refused_without_force(repo):
    assert ix_in_process("ci", "init", "--lab", "lab", cwd=repo).code == 0  # set-up
    target = repo / ".github/workflows/ix.yml"
    target.write_text("# mine\n")
    r = run_ix("ci", "init", "--lab", "lab", "--schedule", "0 5 * * *", cwd=repo)
    assert r.code == 2 and str(target) in flat(r.stderr) and "--force" in flat(r.stderr)
    assert "Traceback" not in r.output and target.read_text() == "# mine\n"
    r = ix_in_process("ci", "init", "--lab", "lab", "--schedule", "0 5 * * *", "--force",
                      cwd=repo)
    assert r.code == 0 and '- cron: "0 5 * * *"' in target.read_text()


@pytest.mark.parametrize("args,says", [
    (["--schedule", "0 25 * * *"], "--schedule: hour field '25'"),
    (["--schedule", "daily"], "--schedule: a cron expression has 5 fields"),
    (["--github", "--gitlab"], "choose one platform"),
    (["--baseline", "base"], "--baseline: tag 'base' would be the baseline of all 3"),
    (["--secret", "sk-ant-api03-secretvalue"], "--secret: give the NAME of a secret"),
    (["--python", "python3"], "--python"),
    (["--battery", "nope.yaml"], "nope.yaml"),
])
def test_bad_input_exits_2_and_writes_nothing(repo, args, says):
    r = ix_in_process("ci", "init", "--lab", "lab", *args, cwd=repo)
    assert r.code == 2 and says in flat(r.stderr), r.output
    assert "Traceback" not in r.output and "secretvalue" not in r.output
    assert not (repo / ".github").exists() and not (repo / ".gitlab-ci.yml").exists()


def test_out_dash_prints_the_workflow_and_writes_nothing(repo):
    r = ix_in_process("ci", "init", "--gitlab", "--lab", "lab", "skill-activation",
                      "--baseline", "base", "--out", "-", cwd=repo)
    assert r.code == 0, r.output
    assert "ix run --lab lab skill-activation || status=$?" in r.stdout
    assert "ix report --baseline base " in r.stdout and not (repo / ".gitlab-ci.yml").exists()


@pytest.mark.parametrize("args", [("ci", "--help"), ("ci", "init", "--help")])
def test_help_fits_80_columns(args):
    r = run_ix(*args, env={"COLUMNS": "80"})
    assert r.code == 0 and "Usage:" in r.stdout
    assert max(len(line) for line in r.stdout.splitlines()) <= 80


@pytest.mark.parametrize("flag", ["--github", "--gitlab"])
def test_a_name_ci_would_run_is_exit_2_naming_the_field_and_nothing_is_written(repo, flag):
    """Issue 31, item 5: an experiment folder GitHub or a shell would run, a lab path that
    would add YAML keys (test_workflow_quoting.py tries every kind of name)."""
    shell, expression = "e$(touch pwned)", "e${{ github.event.pull_request.title }}"
    for name in (shell, expression):
        shutil.copytree(repo / "lab" / "coexistence", repo / "lab" / name)
    for lab, name, field, bad, out in (
            ("lab", shell, "experiment", "'$('", ()),
            ("lab", expression, "experiment", "'${{'", ("--out", "-")),
            ("l\nfoo: bar", "coexistence", "--lab", "the character U+000A", ())):
        if not (repo / lab).exists():
            (repo / "lab").rename(repo / lab)
        ix = run_ix if name == shell else ix_in_process  # a sample through the real command
        r = ix("ci", "init", flag, "--lab", lab, name, "--baseline", "base", *out, cwd=repo)
        assert r.code == 2 and r.stdout == "", (lab, name, r.output)
        [line] = flat(r.stderr).splitlines()
        assert line.startswith(f"ix: error: {field}: ") and f"holds {bad}" in line
        assert not (repo / ".github").exists() and not (repo / ".gitlab-ci.yml").exists()
    assert not (repo / "pwned").exists()
