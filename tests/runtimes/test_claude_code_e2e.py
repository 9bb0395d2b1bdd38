"""`ix run --json` with the `claude-code` runtime: the real `ix` command driving the REAL Claude
Code CLI (bundled in claude-agent-sdk) against a loopback Messages API. Never skipped.

One lab, three subjects (a control without skills, the skills, the skills without permission
to run them), four cases scripted through prompt markers (see `MarkerRouter`): a Skill call,
a text answer, an overloaded API that recovers after one retry, and an API error.
"""

import gzip
import json
import sys
import time
from pathlib import Path

import pytest

from conftest import run_ix, write

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtimes"))
from fake_messages_sse import FAKE_KEY, FakeMessages, MarkerRouter

BUILTIN = {"doctor", "plugin-authoring"}
TRIALS = 2


@pytest.fixture
def api():
    with FakeMessages(router=MarkerRouter()) as server:
        yield server


def make_lab(root: Path, flaky_key: str) -> Path:
    lab = root / "lab"
    # `allowed-tools` in the frontmatter makes the CLI ask permission for the Skill call
    write(lab / "skills" / "csv-summary" / "SKILL.md", """
        ---
        name: csv-summary
        description: Summarize CSV files (columns, row counts, means). Use for any CSV.
        allowed-tools: Bash(head:*)
        ---
        # CSV summary
        Run `head -5` on the file, then report columns and row count.
    """)
    write(lab / "skills" / "git-release-notes" / "SKILL.md", """
        ---
        name: git-release-notes
        description: Draft release notes from the git history since the last tag.
        ---
        # Release notes
    """)
    exp = lab / "activation"
    write(exp / "experiment.yaml", f"""
        name: activation
        runtime:
          kind: claude-code
          model: claude-sonnet-4-5
          max_turns: 2
          env:
            CLAUDE_CODE_MAX_RETRIES: 1
        sensor:
          kind: activation
          skill: csv-summary
        trials: {TRIALS}
        timeout_s: 60
        subjects:
          - name: control
            description: no skills at all
          - name: with-skills
            skills: [csv-summary, git-release-notes]
          - name: no-permission
            skills: [csv-summary, git-release-notes]
            config:
              allowed_tools: []
    """)
    write(exp / "cases" / "must-001.md", """
        ---
        expectation: must_trigger
        ---
        Summarize data.csv for me. [skill:csv-summary]
    """)
    write(exp / "cases" / "must-002.md", f"""
        ---
        expectation: must_trigger
        ---
        What are the columns of sales.csv? [flaky:{flaky_key}] [skill:csv-summary]
    """)
    write(exp / "cases" / "not-001.md", """
        ---
        expectation: should_not_trigger
        ---
        What is 2+2? [text:]
    """)
    write(exp / "cases" / "err-001.md", """
        ---
        expectation: must_trigger
        ---
        Summarize this huge file. [error:400]
    """)
    return lab


@pytest.mark.slow
def test_ix_run_with_the_real_claude_code_cli(api, tmp_path):
    lab = make_lab(tmp_path, flaky_key=f"e2e-{time.monotonic_ns()}")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {"ANTHROPIC_API_KEY": FAKE_KEY, "ANTHROPIC_BASE_URL": api.url, "TMPDIR": str(scratch)}
    t0 = time.perf_counter()
    r = run_ix("run", "--lab", str(lab), "activation", "--json", env=env, timeout=180)
    elapsed = time.perf_counter() - t0
    assert r.code == 0, r.output
    assert elapsed < 60, f"took {elapsed:.1f}s"
    out = json.loads(r.stdout)
    assert out  # the run's summary, as JSON

    results = lab / "activation" / "results"
    records = [json.loads(line) for line in
               (results / "trials.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(records) == 4 * 3 * TRIALS
    by = {}
    for rec in records:
        by.setdefault((rec["subject"], rec["probe_id"]), []).append(rec)

    # a Skill call is observed and the activation sensor reads it
    for rec in by["with-skills", "must-001"]:
        assert rec["error"] is None, rec["error"]
        obs = rec["observation"]
        assert obs["tool_calls"] == [{"name": "Skill", "input": {"skill": "csv-summary"}}]
        assert rec["reading"]["passed"] is True and rec["reading"]["score"] == 1.0
        assert obs["meta"]["denied"] == [] and obs["meta"]["skills_invoked"] == ["csv-summary"]
        assert set(obs["meta"]["init_skills"]) == {"csv-summary", "git-release-notes"} | BUILTIN
        assert obs["meta"]["model"] == "claude-sonnet-4-5"
        assert obs["tokens_input"] > 0 and obs["cost_usd"] > 0
        assert "trace" not in obs

    # the control never saw the skill, so the (scripted) model answered in text
    for rec in by["control", "must-001"]:
        assert rec["error"] is None
        assert rec["observation"]["tool_calls"] == []
        assert rec["reading"]["passed"] is False
        assert set(rec["observation"]["meta"]["init_skills"]) == BUILTIN
        assert "skills_mismatch" not in rec["observation"]["meta"]

    # without an allow rule the call is made, denied, and still counts as the choice
    for rec in by["no-permission", "must-001"]:
        obs = rec["observation"]
        assert obs["tool_calls"] == [{"name": "Skill", "input": {"skill": "csv-summary"}}]
        assert [d["tool_name"] for d in obs["meta"]["denied"]] == ["Skill"]
        assert rec["reading"]["passed"] is True

    # a text-only reply does not activate
    for subject in ("control", "with-skills", "no-permission"):
        for rec in by[subject, "not-001"]:
            assert rec["error"] is None and rec["observation"]["tool_calls"] == []
            assert rec["reading"]["passed"] is False
            assert rec["observation"]["content"] == "Answered directly."

    # an API error is a trial error with its status, for every subject and trial
    for subject in ("control", "with-skills", "no-permission"):
        for rec in by[subject, "err-001"]:
            assert rec["error"]["kind"] == "api_error:400", rec["error"]
            assert rec["observation"] is None and rec["reading"] is None

    # the one overloaded request was retried by the CLI and the trial succeeded
    retried = [rec for rec in records if rec["observation"]
               and rec["observation"]["meta"].get("api_retries")]
    assert len(retried) == 1 and retried[0]["probe_id"] == "must-002"
    assert retried[0]["error"] is None
    assert retried[0]["observation"]["meta"]["api_retries"][0]["error_status"] == 529
    assert all(rec["error"] is None for rec in records if rec["probe_id"] == "must-002")

    # each trial's transcript is kept, gzipped, beside the run
    traced = [rec for rec in records if rec.get("trace")]
    assert len(traced) == len([rec for rec in records if rec["observation"]])
    lines = gzip.decompress((results / traced[0]["trace"]).read_bytes()).decode().splitlines()
    assert json.loads(lines[0])["subtype"] == "init" and json.loads(lines[-1])["type"] == "result"

    # the fake key is nowhere in the results, compressed traces included, nor in ix's output
    assert FAKE_KEY not in r.output
    for path in results.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            if path.suffix == ".gz":
                data = gzip.decompress(data)
            assert FAKE_KEY.encode() not in data, path

    # every per-trial folder is gone, and the CLI's own temporary files with it
    assert list(scratch.iterdir()) == []
    # the CLI only spoke to the Messages API
    paths = {req.path.split("?")[0] for req in api.requests}
    assert paths == {"/v1/messages"}
    assert all(req.headers.get("x-api-key") == FAKE_KEY for req in api.requests)
