"""The workflows `ix ci init` generates are valid for their platform (its own JSON schema, read
offline from check-jsonschema) and say what they should: in process, on the example lab."""

import shutil
from pathlib import Path

import pytest

from conftest import EXAMPLE_LAB, ROUTING_ONLY, write  # type: ignore[attr-defined]
from ix.api.integrations import ci
from ix.domain.errors import ConfigError


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository folder (not a git checkout: its root is the working folder) holding a
    copy of the example lab under labs/main."""
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLE_LAB, root / "labs" / "main",
                    ignore=ROUTING_ONLY)
    return root


def _plan(repo: Path, **kw) -> ci.Workflow:
    return ci.plan_workflow("labs/main", cwd=repo, **kw)


@pytest.mark.parametrize("platform", ["github", "gitlab"])
@pytest.mark.parametrize("variant", [
    {}, {"experiments": ["skill-activation"], "baseline": "base"},
    {"secrets": ["ANTHROPIC_API_KEY", "AWS_ACCESS_KEY_ID"], "extras": ["s3"],
     "python": "3.12", "schedule": "0 */6 * * 1-5", "timeout_minutes": 30},
    {"install": "'.[anthropic]'"},
    {"pr_comment": True},
])
def test_the_workflow_is_valid_for_its_platform(repo, schema_check, platform, variant):
    flow = _plan(repo, platform=platform, **variant)
    document, errors = schema_check(platform, flow.text)
    assert errors == []
    assert flow.path == repo / ci.OUTPUTS[platform]
    if platform == "github":
        steps = document["jobs"]["ix"]["steps"]
        assert document["on"]["schedule"] == [{"cron": flow.schedule}]
        assert {"pull_request", "workflow_dispatch"} <= set(document["on"])
        gates = [s for s in steps if s.get("name", "").startswith("Gate ")]
        assert [s["working-directory"] for s in gates] == [g.folder for g in flow.gates]
        assert all("${{" not in s.get("run", "") for s in steps)  # no expression in a shell
        upload = steps[-1]
        assert upload["uses"].startswith("actions/upload-artifact@")
        assert upload["with"]["path"] == "ix-reports/"
        summaries = [s for s in steps if s.get("name", "").startswith("Summarise ")]
        assert [s["working-directory"] for s in summaries] == [g.folder for g in flow.gates]
        assert all('>> "$GITHUB_STEP_SUMMARY"' in s["run"] for s in summaries)
        commenting = [s for s in steps if s.get("name") == "Comment on the pull request"]
        assert len(commenting) == int(flow.pr_comment)
        assert (document["permissions"].get("pull-requests") == "write") == flow.pr_comment
    else:
        job = document["ix"]
        assert job["artifacts"]["when"] == "always" and job["artifacts"]["paths"] == ["ix-reports/"]
        assert any("schedule" in r["if"] for r in job["rules"])
        assert f"cron line {flow.schedule}" in flow.text


def test_a_broken_workflow_fails_the_schema(repo, schema_check):
    """The check has teeth: a job without runs-on, a GitLab job with no script."""
    text = _plan(repo).text.replace("    runs-on: ubuntu-latest\n", "")
    assert schema_check("github", text)[1]
    text = _plan(repo, platform="gitlab").text.replace("  script:\n", "  scripts:\n")
    assert schema_check("gitlab", text)[1]


def test_every_experiment_gets_its_own_gate_and_tag(repo):
    flow = _plan(repo)
    assert [g.experiment for g in flow.gates] == ["coexistence", "context-degradation",
                                                 "skill-activation"]
    assert [g.folder for g in flow.gates] == [f"labs/main/{g.experiment}" for g in flow.gates]
    assert [g.tag for g in flow.gates] == [f"baseline-{g.experiment}" for g in flow.gates]
    assert flow.command == "ix run --lab labs/main" and not any(g.tagged for g in flow.gates)
    for g in flow.gates:
        assert (f"ix report --baseline {g.tag} --format html --out "
                f"\"$GITHUB_WORKSPACE\"/ix-reports/{g.experiment}.html") in flow.text


def test_one_tag_for_several_experiments_is_refused(repo):
    with pytest.raises(ConfigError, match=r"\{experiment\}") as caught:
        _plan(repo, baseline="baseline")
    assert caught.value.field == "--baseline"


def test_the_install_line_has_the_extras_of_the_labs_runtimes(repo):
    assert _plan(repo).install == f"python -m pip install ix-lab=={ci.__version__}"
    write(repo / "labs" / "main" / "api" / "experiment.yaml", """
        name: api
        sensor: {kind: activation, skill: csv-summary}
        subjects:
          - name: gpt
            runtime: {kind: openai, model: gpt-4o-mini, api_key_env: MY_OPENAI_KEY}
          - name: claude
            runtime: {kind: claude-code}
            skills: [csv-summary]
        """)
    write(repo / "labs" / "main" / "api" / "cases" / "must-001.md",
          "---\nexpectation: must_trigger\n---\nSummarise data.csv\n")
    flow = _plan(repo, extras=["s3"])
    assert flow.install == (f"python -m pip install 'ix-lab[claude,openai,s3]=="
                            f"{ci.__version__}'")
    assert flow.secrets == ("MY_OPENAI_KEY", "ANTHROPIC_API_KEY")
    assert "MY_OPENAI_KEY: ${{ secrets.MY_OPENAI_KEY }}" in flow.text


def test_a_battery_is_run_with_ix_batch_and_gates_its_experiments(repo):
    battery = write(repo / "ci" / "nightly.yaml", """
        name: nightly
        experiments: [skill-*, coexistence]
        seeds: 1
        """)
    flow = _plan(repo, battery=battery)
    assert flow.command == "ix batch ci/nightly.yaml --lab labs/main"
    assert [g.experiment for g in flow.gates] == ["skill-activation", "coexistence"]


def test_a_lab_outside_the_repository_is_refused(tmp_path, repo):
    with pytest.raises(ConfigError, match="outside the repository"):
        ci.plan_workflow(str(repo / "labs" / "main"), cwd=tmp_path / "elsewhere")


@pytest.mark.parametrize("cron", ["17 3 * * *", "*/15 * * * *", "0 9-17/2 1,15 JAN-jun mon-fri",
                                  "0 0 * * 0", " 5  4 * *   6 "])
def test_valid_cron_lines_are_kept(cron):
    assert ci.check_cron(cron) == " ".join(cron.split())


@pytest.mark.parametrize("cron,says", [
    ("17 3 * *", "5 fields"), ("* * * * * *", "got 6"), ("@daily", "macros"),
    ("60 * * * *", "minute field '60'"), ("0 24 * * *", "hour field"),
    ("0 0 0 * *", "day of month field"), ("0 0 * 13 *", "month field"),
    ("0 0 * * 7", "day of week field"), ("0 0 * * mon-sun2", "day of week"),
    ("*/0 * * * *", "minute"), ("5-1 * * * *", "minute"), ("x * * * *", "minute"),
])
def test_invalid_cron_lines_name_the_field(cron, says):
    with pytest.raises(ConfigError, match=says) as caught:
        ci.check_cron(cron)
    assert caught.value.field == "--schedule"
