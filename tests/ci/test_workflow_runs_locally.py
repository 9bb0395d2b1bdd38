"""The generated workflow's own commands, run here in order on a fresh clone of a repository
holding a copy of the example lab, as the runner would (GitHub: each `run:` step in
`bash -eo pipefail` from its working-directory, later steps per their `if:`; GitLab: the
script lines in one `bash -eo pipefail`). Only the install step is replaced (`ix --version`:
ix is installed here). The gate passes against a baseline of the same configuration and
exits 1 once a committed change makes an experiment worse. Each test runs a whole workflow
(a dozen real `ix` commands): marked slow. The GitHub workflow is written with --pr-comment:
its summary steps append each first screen to $GITHUB_STEP_SUMMARY (a file here) and, on a
pull request, its comment step posts them as one comment to the loopback fake API (`api`)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLE_LAB, ROUTING_ONLY, ix_in_process, run_ix  # type: ignore[attr-defined]

BIN = str(Path(sys.executable).parent)
GIT = ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.invalid"]
EXPERIMENTS = ("coexistence", "context-degradation", "skill-activation")
IF_INSTALLED = "${{ !cancelled() && steps.install.outcome == 'success' }}"
IF_PULL_REQUEST = ("${{ !cancelled() && steps.install.outcome == 'success' && "
                   "github.event_name == 'pull_request' }}")
TOKEN = "ghs_fakeTOKENfor1test2only3"

pytestmark = pytest.mark.slow


def _env(root: Path, platform: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("IX_", "GITHUB_", "CI_"))}
    env.update(PATH=BIN + os.pathsep + env.get("PATH", ""), NO_COLOR="1",
               XDG_CONFIG_HOME=str(root / ".no-user-config"))
    env.update({"GITHUB_WORKSPACE": str(root), "GITHUB_ACTIONS": "true"} if platform == "github"
               else {"CI_PROJECT_DIR": str(root), "CI_PIPELINE_SOURCE": "schedule"})
    return env


def _bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def run_github(root: Path, load, api_url: str | None = None) -> dict[str, int]:
    """Each step's exit code by name (`uses:` steps are the platform's: checkout is the clone,
    the upload is checked by the test). `api_url`: the run is a pull request's (#7 of o/r),
    and GitHub's API is there; else a scheduled run."""
    steps = load((root / ".github/workflows/ix.yml").read_text())["jobs"]["ix"]["steps"]
    codes: dict[str, int] = {}
    failed = False
    for step in steps:
        if "uses" in step:
            continue
        condition = step.get("if")
        assert condition in (None, IF_INSTALLED, IF_PULL_REQUEST), condition
        if (failed and condition is None) or (condition == IF_PULL_REQUEST and api_url is None):
            continue
        script = "ix --version" if step.get("id") == "install" else step["run"]
        env = _env(root, "github")
        # a secret that is not set is the empty string, as on GitHub
        env.update({k: "" for k, v in step.get("env", {}).items() if "secrets." in v})
        env["GITHUB_STEP_SUMMARY"] = str(root.parent / "step-summary.md")
        if api_url is not None:
            event = root.parent / "event.json"
            event.write_text(json.dumps({"pull_request": {"number": 7}}))
            env.update(GITHUB_EVENT_NAME="pull_request", GITHUB_API_URL=api_url,
                       GITHUB_REPOSITORY="o/r", GITHUB_EVENT_PATH=str(event))
            if step.get("env", {}).get("GITHUB_TOKEN") == "${{ github.token }}":
                env["GITHUB_TOKEN"] = TOKEN
        done = _bash(script, root / step.get("working-directory", "."), env)
        codes[step["name"]] = done.returncode
        failed = failed or done.returncode != 0
        if step.get("id") == "install":
            assert done.returncode == 0, done.stderr
    return codes


def run_gitlab(root: Path, load) -> subprocess.CompletedProcess[str]:
    script = load((root / ".gitlab-ci.yml").read_text())["ix"]["script"]
    assert script[0].startswith("python -m pip install ")
    return _bash("\n".join(["ix --version", *script[1:]]), root, _env(root, "gitlab"))


@pytest.fixture(scope="module")
def origin(tmp_path_factory) -> Path:
    """A git repository: the example lab under labs/main with one run of each experiment,
    each tagged baseline-<experiment> (set-up, in process), and both workflows written by the
    real `ix ci init`."""
    root = tmp_path_factory.mktemp("origin")
    lab = root / "labs" / "main"
    shutil.copytree(EXAMPLE_LAB, lab, ignore=ROUTING_ONLY)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    assert ix_in_process("run", "--lab", str(lab), "--progress", "none", cwd=root).code == 0
    for name in EXPERIMENTS:
        (run,) = (lab / name / "results" / "runs").iterdir()
        assert ix_in_process("tag", run.name, f"baseline-{name}", "--lab", str(lab)).code == 0
    for flag in ("--github", "--gitlab"):
        r = run_ix("ci", "init", flag, "--pr-comment", "--lab", "labs/main",
                   cwd=root / "labs")
        assert r.code == 0, r.output
    subprocess.run([*GIT, "-C", str(root), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(root), "commit", "-qm", "baseline"], check=True)
    return root


def clone(origin: Path, to: Path, *, worse: bool = False) -> Path:
    """A fresh checkout of `origin`; `worse`: skill-activation's threshold raised so high that
    the skill no longer fires (committed in the clone, as a pull request would)."""
    subprocess.run(["git", "clone", "-q", str(origin), str(to)], check=True)
    if worse:
        exp = to / "labs" / "main" / "skill-activation" / "experiment.yaml"
        exp.write_text(exp.read_text().replace("threshold: 2.0", "threshold: 40.0"))
        subprocess.run([*GIT, "-C", str(to), "commit", "-qam", "worse"], check=True)
    return to


def _reports(root: Path) -> set[str]:
    return {p.name for p in (root / "ix-reports").glob("*.html")}


def test_github_gates_pass_without_a_regression(origin, tmp_path, schema_check):
    root = clone(origin, tmp_path / "checkout")
    codes = run_github(root, lambda text: schema_check("github", text)[0])
    assert codes == {"Install ix": 0, "Run the experiments": 0,
                     **{f"Gate {e} against baseline-{e}": 0 for e in EXPERIMENTS},
                     **{f"Summarise {e}": 0 for e in EXPERIMENTS}}
    assert _reports(root) == {f"{e}.html" for e in EXPERIMENTS}  # the artifact's files
    page = (root / "ix-reports" / "skill-activation.html").read_text()
    assert "baseline-skill-activation" in page


def test_github_gate_exits_1_on_a_regression_and_the_others_still_run(origin, tmp_path,
                                                                       schema_check):
    root = clone(origin, tmp_path / "checkout", worse=True)
    codes = run_github(root, lambda text: schema_check("github", text)[0])
    assert codes["Gate skill-activation against baseline-skill-activation"] == 1
    assert [codes[f"Gate {e} against baseline-{e}"] for e in EXPERIMENTS[:2]] == [0, 0]
    assert _reports(root) == {f"{e}.html" for e in EXPERIMENTS}  # uploaded all the same
    assert all(codes[f"Summarise {e}"] == 0 for e in EXPERIMENTS)  # a regression: summarised


def test_a_pull_request_gets_a_readable_step_summary_and_one_comment(origin, tmp_path,
                                                                    schema_check, api):
    """The workflow's own steps on a pull request that makes skill-activation worse: the
    step summary holds each experiment's first screen with the regression, and the comment
    step posts it to the fake API once (the token in the header only)."""
    fake, url = api
    root = clone(origin, tmp_path / "checkout", worse=True)
    codes = run_github(root, lambda text: schema_check("github", text)[0], api_url=url)
    assert codes["Comment on the pull request"] == 0
    summary = (tmp_path / "step-summary.md").read_text()
    heads = [summary.index(f"## {e} · run `") for e in EXPERIMENTS]
    assert heads == sorted(heads)
    assert "regression(s)** (" in summary and "### Against baseline `baseline-skill" in summary
    assert summary.count("| subject |") >= len(EXPERIMENTS)  # per-subject lines, each
    [posted] = [r for r in fake.requests if r["method"] == "POST"]
    assert posted["headers"]["authorization"] == f"Bearer {TOKEN}"
    body = posted["body"]["body"]
    assert body.startswith("<!-- ix-report -->\n## coexistence · run `")
    assert all(f"## {e} · run `" in body for e in EXPERIMENTS)
    assert not any(TOKEN in p.read_text(errors="replace") for p in tmp_path.rglob("*")
                   if p.is_file() and ".git" not in p.parts)


def test_gitlab_job_passes_then_fails_on_a_regression(origin, tmp_path, schema_check):
    load = lambda text: schema_check("gitlab", text)[0]  # noqa: E731
    good = run_gitlab(clone(origin, tmp_path / "good"), load)
    assert good.returncode == 0, good.stderr
    assert _reports(tmp_path / "good") == {f"{e}.html" for e in EXPERIMENTS}
    bad = run_gitlab(clone(origin, tmp_path / "bad", worse=True), load)
    assert bad.returncode == 1, bad.stderr
    assert "regression against baseline-skill-activation" in bad.stderr
    assert _reports(tmp_path / "bad") == {f"{e}.html" for e in EXPERIMENTS}
