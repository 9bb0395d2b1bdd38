"""`ix subjects list|add|test` and registry subjects in experiments.

Each command's contract (exit 0 with its output, exit 1, exit 2 on bad input, `--help`) is held by
one real `ix` process (`run_ix`); the other calls, set-up and which input is refused with which
message, go through `ix_in_process`, which gives the same answers without the process."""

import json
from pathlib import Path

import pytest
import yaml

from conftest import case, ix_in_process, run_ix, write

BUILTINS = ("claude-sonnet", "claude-opus", "claude-haiku", "claude-sonnet-api", "gpt-4o",
            "random", "mock")


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    """The environment of a user whose config lives in a private folder."""
    return {"XDG_CONFIG_HOME": str(tmp_path / "config")}


def subjects_file(home: dict[str, str]) -> Path:
    return Path(home["XDG_CONFIG_HOME"]) / "ix" / "subjects.yaml"


def test_list_shows_the_builtin_profiles(home):
    r = run_ix("subjects", "list", env=home)
    assert r.code == 0, r.output
    for name in BUILTINS:
        assert name in r.stdout
    assert "built-in" in r.stdout and "claude-code" in r.stdout
    data = json.loads(ix_in_process("subjects", "list", "--json", env=home).stdout)
    assert data["file"] == str(subjects_file(home))
    by_name = {s["name"]: s for s in data["subjects"]}
    assert set(BUILTINS) <= set(by_name)
    assert by_name["claude-sonnet"] == {
        "name": "claude-sonnet", "source": "built-in", "description": "Claude Code CLI, Sonnet",
        "runtime": {"kind": "claude-code"}, "model": "sonnet", "skills": [], "config": {}}
    assert by_name["mock"]["runtime"] == {"kind": "mock", "default_rate": 0.5}


def test_add_then_list_and_the_file_holds_only_the_variable_name(home):
    r = run_ix("subjects", "add", "my-gpt", "--runtime", "openai", "--model", "gpt-4o-mini",
               "--description", "cheap one", "--api-key-env", "MY_OPENAI_KEY",
               "--option", "temperature=0.2", env=home)
    assert r.code == 0, r.output
    assert "my-gpt" in r.stdout and str(subjects_file(home)) in r.stdout
    listed = ix_in_process("subjects", "list", env=home)
    assert "my-gpt" in listed.stdout and "gpt-4o-mini" in listed.stdout
    assert str(subjects_file(home)) in listed.stdout
    text = subjects_file(home).read_text()
    data = yaml.safe_load(text)
    assert data["my-gpt"] == {"description": "cheap one", "model": "gpt-4o-mini",
                              "runtime": {"kind": "openai", "temperature": 0.2,
                                          "api_key_env": "MY_OPENAI_KEY"}}
    assert "sk-" not in text
    as_json = json.loads(ix_in_process("subjects", "list", "--json", env=home).stdout)
    mine = next(s for s in as_json["subjects"] if s["name"] == "my-gpt")
    assert mine["source"] == str(subjects_file(home))


def test_add_replaces_and_overrides_a_builtin(home):
    assert ix_in_process("subjects", "add", "mock", "--runtime", "mock", "--option",
                         "default_rate=1.0", env=home).code == 0
    r = ix_in_process("subjects", "add", "mock", "--runtime", "mock", "--option",
                      "default_rate=0.25", "--json", env=home)
    assert r.code == 0, r.output
    assert json.loads(r.stdout)["replaced"] is True
    data = json.loads(ix_in_process("subjects", "list", "--json", env=home).stdout)
    mocks = [s for s in data["subjects"] if s["name"] == "mock"]
    assert len(mocks) == 1 and mocks[0]["runtime"]["default_rate"] == 0.25
    assert mocks[0]["source"] != "built-in"


@pytest.mark.parametrize(("args", "words"), [
    (["--option", "api_key=sk-ant-api03-abcdefghijklmnop"], ["--option api_key", "secret"]),
    (["--option", "base_url=sk-ant-api03-abcdefghijklmnop"], ["--option base_url", "API key"]),
    (["--option", "token=abc"], ["--option token", "secret"]),
    (["--api-key-env", "sk-ant-api03-abcdefghijklmnop"], ["--api-key-env", "name"]),
    (["--option", "bogus=1"], ["--option bogus", "unknown key"]),
    (["--option", "novalue"], ["--option", "key=value"]),
])
def test_add_refuses_secrets_and_bad_options_and_writes_nothing(home, args, words):
    r = ix_in_process("subjects", "add", "leaky", "--runtime", "anthropic", "--model", "m", *args,
                      env=home)
    assert r.code == 2, r.output
    for word in words:
        assert word in r.stderr
    assert "abcdefghijklmnop" not in r.output  # the secret is never echoed back
    assert "Traceback" not in r.output
    assert not subjects_file(home).exists()


def test_add_names_a_missing_required_option(home):
    # the real process for exit 2 on bad `subjects add` input; the other refusals run in process
    r = run_ix("subjects", "add", "x", "--runtime", "anthropic", env=home)
    assert r.code == 2 and "--model" in r.stderr
    assert not subjects_file(home).exists()


def test_add_refuses_an_unknown_runtime_kind(home):
    r = ix_in_process("subjects", "add", "x", "--runtime", "nosuch", env=home)
    assert r.code == 2
    assert "--runtime" in r.stderr and "nosuch" in r.stderr and "mock" in r.stderr
    assert not subjects_file(home).exists()


def test_add_refuses_a_bad_name(home):
    r = ix_in_process("subjects", "add", "bad name", "--runtime", "mock", env=home)
    assert r.code == 2 and "invalid subject name" in r.stderr


def test_an_experiment_runs_registry_subjects_by_name(lab, home):
    assert ix_in_process("subjects", "add", "my-mock", "--runtime", "mock",
                         "--option", "default_rate=1.0", env=home).code == 0
    d = lab / "exp"
    write(d / "experiment.yaml", "name: exp\ntrials: 3\nruntime: mock\nsubjects: [mock, my-mock]\n")
    case(d, "must-001", "must_trigger")
    case(d, "not-001", "should_not_trigger")
    r = ix_in_process("run", "--lab", str(lab), "--json", env=home)
    assert r.code == 0, r.output
    summary = json.loads(r.stdout)
    names = [s["name"] for s in summary["subjects"]]
    assert names == ["mock", "my-mock"]
    lines = [json.loads(x) for x in (d / "results" / "trials.jsonl").read_text().splitlines()]
    assert {x["subject"] for x in lines} == {"mock", "my-mock"}
    mine = [x for x in lines if x["subject"] == "my-mock"]
    assert all(x["observation"]["tool_calls"] for x in mine)  # default_rate 1.0
    spec = yaml.safe_load(next((d / "results" / "runs").iterdir()).joinpath("spec.yaml")
                          .read_text())
    runtimes = {s["name"]: s["runtime"] for s in spec["config"]["subjects"]}
    assert runtimes == {"mock": {"kind": "mock", "default_rate": 0.5},
                        "my-mock": {"kind": "mock", "default_rate": 1.0}}


def test_an_unknown_subject_name_in_an_experiment_exits_2(lab, home):
    d = lab / "exp"
    write(d / "experiment.yaml", "name: exp\nruntime: mock\nsubjects: [mock, nosuch]\n")
    case(d, "must-001", "must_trigger")
    r = run_ix("run", "--lab", str(lab), env=home)  # the real process: `ix run` exit 2
    assert r.code == 2
    assert "subjects[1]" in r.stderr and "'nosuch'" in r.stderr and "claude-sonnet" in r.stderr
    assert not (d / "results").exists()


def test_subjects_test_mock_answers_with_a_latency(home):
    r = run_ix("subjects", "test", "mock", env=home)
    assert r.code == 0, r.output
    assert "answered in" in r.stdout and " ms" in r.stdout
    data = json.loads(ix_in_process("subjects", "test", "mock", "--json", env=home).stdout)
    assert data["ok"] is True and data["error"] is None
    assert data["runtime"] == "mock" and data["latency_ms"] >= 0
    assert data["answer"] in ("Using the skill skill.", "Answered directly.")


def test_subjects_test_with_no_api_key_fails_with_exit_1(home):
    r = run_ix("subjects", "test", "claude-sonnet-api", "--timeout", "10",
               env={**home, "ANTHROPIC_API_KEY": ""})
    assert r.code == 1, r.output
    assert "missing_api_key" in r.stdout and "ANTHROPIC_API_KEY" in r.stdout
    assert ix_in_process("subjects", "add", "mine", "--runtime", "anthropic", "--model", "m",
                         "--api-key-env", "IX_TEST_UNSET_KEY", env=home).code == 0
    r = ix_in_process("subjects", "test", "mine", "--json", env=home)
    assert r.code == 1
    data = json.loads(r.stdout)
    assert data["ok"] is False
    assert data["error"]["kind"] == "missing_api_key"
    assert "IX_TEST_UNSET_KEY" in data["error"]["message"]


def test_subjects_test_timeout(home):
    # `--timeout` bounds the subject's answer (asyncio), not the process
    assert ix_in_process("subjects", "add", "slow", "--runtime", "mock", "--option",
                         "latency_ms=5000", env=home).code == 0
    r = ix_in_process("subjects", "test", "slow", "--timeout", "0.2", "--json", env=home)
    assert r.code == 1, r.output
    assert json.loads(r.stdout)["error"]["kind"] == "timeout"


@pytest.mark.parametrize("args", [["nosuch"], ["mock", "--timeout", "0"]])
def test_subjects_test_bad_input_exits_2(home, args):
    r = ix_in_process("subjects", "test", *args, env=home)
    assert r.code == 2
    assert "Traceback" not in r.output


def test_a_secret_in_the_users_file_stops_every_command_that_reads_it(home):
    write(subjects_file(home), "x:\n  runtime: {kind: openai, api_key: abc}\n")
    for args in (["subjects", "list"], ["subjects", "test", "mock"],
                 ["subjects", "add", "y", "--runtime", "mock"]):
        r = ix_in_process(*args, env=home)
        assert r.code == 2, (args, r.output)
        assert str(subjects_file(home)) in r.stderr and "x.runtime.api_key" in r.stderr


def test_the_subjects_commands_accept_lab_and_json(lab, home):
    for args in (["list"], ["test", "random"]):
        r = ix_in_process("subjects", *args, "--lab", str(lab), "--json", env=home)
        assert r.code == 0, r.output
        json.loads(r.stdout)
    assert "subjects" in run_ix("--help").stdout  # `--help` as the real command renders it
