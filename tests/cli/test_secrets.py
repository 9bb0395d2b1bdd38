"""API keys from the environment never land anywhere ix writes or prints.

The real `ix` in subprocesses: an experiment with an `anthropic` subject, an `openai` subject,
a registry subject (`ix subjects add`), an `http` subject whose header reads a key from the
environment, and an `llm_judge` sensor whose judge is an `anthropic` model. The "APIs" are
loopback servers that echo the key back: in error bodies (a 401 at once, a 500 after a retry)
and, for the http subject, in the answer itself. The run uses `--cache` and `--artifacts`,
keeps traces, runs again from the cache, and then `ix report`, `ix export`, `ix results`,
`ix leaderboard` and `ix subjects list` read it all back. Then every file under the lab and
the user config folder (gzip and zip members opened), and everything printed, is searched for
each key: none is found, and the echoed errors show `[REDACTED]` in their place.
"""

import json
import secrets
from pathlib import Path

import pytest

from conftest import Result, case, ix_in_process, run_ix, write
from runtimes.fake_llm_servers import FakeLLMServer, Reply, Request, http_error, skill_call
from secrets_support import every_text

pytest.importorskip("anthropic")
pytest.importorskip("openai")

JUDGE_MARK = "JUDGE-RUBRIC-7Q"


def router(request: Request) -> Reply:
    """Skill calls for CSV prompts, JSON scores for the judge, and the key echoed back in the
    error body of the ECHO cases (as a careless proxy might)."""
    key = request.headers.get("x-api-key") or request.headers.get("authorization", "")
    text = request.prompt_text()
    if JUDGE_MARK in text:
        return Reply(text=json.dumps({"scores": {"quality": 8}, "reasoning": "fine"}))
    if "ECHO-401" in text:
        return http_error(401, message=f"invalid credentials: {key!r} was refused")
    if "ECHO-500" in text:
        return http_error(500, message=f"upstream choked on {key}")
    if request.body.get("tools") and ".csv" in text.split("</system-reminder>")[-1]:
        return skill_call("csv-summary")
    return Reply(text="Answered directly.")


def test_api_keys_never_reach_the_lab_the_config_or_the_output(lab: Path, tmp_path: Path,
                                                               echo_server: str) -> None:
    keys = {  # variable names that do not look secret: redaction must not rely on the name
        "LLM_A": "sk-ant-" + secrets.token_hex(24),
        "LLM_O": "sk-proj-" + secrets.token_hex(24),
        "LLM_H": "tok-" + secrets.token_hex(20),
    }
    config = tmp_path / "config"
    env = {**keys, "XDG_CONFIG_HOME": str(config)}
    outputs: list[Result] = []

    def ix(*args: str, process: bool = True) -> Result:
        result = (run_ix(*args, cwd=tmp_path, env=env, timeout=180) if process
                  else ix_in_process(*args, cwd=tmp_path, env=env))
        outputs.append(result)
        return result

    with FakeLLMServer("anthropic", router=router) as claude, \
            FakeLLMServer("openai", router=router) as gpt:
        added = ix("subjects", "add", "my-claude", "--runtime", "anthropic", "--model",
                   "claude-haiku-4-5", "--api-key-env", "LLM_A", "--option",
                   f"base_url={claude.base_url}", "--option", "backoff_s=0")
        assert added.code == 0, added.output
        write(lab / "skills/csv-summary/SKILL.md", """
            ---
            name: csv-summary
            description: Summarize CSV files. Use when the user asks to summarize a .csv file.
            ---
            # CSV summary
            """)
        d = lab / "keys"
        write(d / "rubrics" / "quality.md", f"""
            ---
            name: quality
            runtime: {{kind: anthropic, model: claude-haiku-4-5, base_url: "{claude.base_url}",
                       api_key_env: LLM_A, backoff_s: 0}}
            dimensions: [quality]
            scale: [0, 10]
            ---
            {JUDGE_MARK} Grade the answer to "{{{{ probe.prompt }}}}":
            {{{{ observation.content }}}}
            """)
        write(d / "experiment.yaml", f"""
            name: keys
            trials: 2
            sensors:
              - {{kind: activation, skill: csv-summary}}
              - {{kind: llm_judge, agent: rubrics/quality.md}}
            runtime: {{kind: anthropic, model: claude-sonnet-4-5, base_url: "{claude.base_url}",
                       api_key_env: LLM_A, retries: 1, backoff_s: 0}}
            subjects:
              - name: claude
                skills: [csv-summary]
              - name: gpt
                skills: [csv-summary]
                runtime: {{kind: openai, model: gpt-4o-mini, base_url: "{gpt.base_url}",
                           api_key_env: LLM_O, retries: 1, backoff_s: 0}}
              - name: registered
                profile: my-claude
                skills: [csv-summary]
              - name: service
                runtime:
                  kind: http
                  url: {echo_server}/classify
                  headers: {{Authorization: "Bearer {{{{ env.LLM_H }}}}"}}
                  body: {{text: "{{{{ prompt }}}}"}}
            """)
        case(d, "must-001", "must_trigger", "Summarize sales.csv: row counts and means.")
        case(d, "not-001", "should_not_trigger", "Write a haiku about autumn.")
        case(d, "echo-401", "should_not_trigger", "ECHO-401 please")
        case(d, "echo-500", "should_not_trigger", "ECHO-500 please")

        first = ix("run", "--lab", str(lab), "--cache", "--artifacts", "--json")
        assert first.code == 0, first.output
        run_id = json.loads(first.stdout)["run_id"]
        again = ix("run", "--lab", str(lab), "--cache", "--json")  # replayed from the cache
        assert again.code == 0, again.output
        assert claude.api_requests() and gpt.api_requests()
        for api, name in ((claude, "LLM_A"), (gpt, "LLM_O")):  # the keys did reach the APIs
            assert all(keys[name] in (q.headers.get("x-api-key", "")
                                      + q.headers.get("authorization", ""))
                       for q in api.api_requests())

    exports = lab / "exports"
    exports.mkdir()
    for args in (["report", run_id, "--format", "html", "--out", str(lab / "report.html")],
                 ["report", run_id, "--format", "md"],
                 ["report", run_id, "--json"],
                 ["export", run_id, "--format", "json", "--out", str(exports / "run.json")],
                 ["export", run_id, "--format", "csv", "--out", str(exports / "run.csv")],
                 ["export", run_id, "--format", "inspect", "--out", str(exports / "inspect")],
                 ["results", "--json"],
                 ["leaderboard"],
                 ["subjects", "list", "--json"]):
        # what each reader writes and prints, asked in process (the same commands, output
        # captured as a process's): the runs above were real `ix` processes
        result = ix(*args, "--lab", str(lab), process=False)
        assert result.code == 0, (args, result.output)

    records = [json.loads(x) for x in (d / "results" / "trials.jsonl").read_text().splitlines()]
    by = {(r["subject"], r["probe_id"], r["run_id"]): r for r in records}
    for subject in ("claude", "gpt", "registered"):
        refused = by[(subject, "echo-401", run_id)]["error"]
        assert refused["kind"] == "bad_request" and "[REDACTED]" in refused["message"], refused
        choked = by[(subject, "echo-500", run_id)]["error"]
        assert choked["kind"] == "server_error", choked
        assert "[REDACTED]" in choked["message"] and "gave up after 2 tries" in choked["message"]
        judged = by[(subject, "must-001", run_id)]
        assert judged["error"] is None and judged["readings"][1]["sensor_name"] == "quality"
    echoed = by[("service", "must-001", run_id)]["observation"]["body"]
    assert json.loads(echoed)["Authorization"] == "[REDACTED]"  # the header value, whole

    files = {**{f"lab/{k}": v for k, v in every_text(lab).items()},
             **{f"config/{k}": v for k, v in every_text(config).items()}}
    assert any(".jsonl.gz" in name for name in files), "no trace was written"
    assert any("/.ix/cache/" in name for name in files), "nothing was cached"
    assert any("/artifacts/" in name for name in files), "no artifact was written"
    assert "config/ix/subjects.yaml" in files
    for name, value in keys.items():
        leaked = [path for path, text in files.items() if value in text]
        assert leaked == [], f"{name}'s value found in {leaked}"
        shown = [r for r in outputs if value in r.output]
        assert shown == [], f"{name}'s value printed by ix"


def test_a_user_config_holding_a_token_is_read_only_if_private_and_never_copied_to_the_lab(
        lab: Path, tmp_path: Path, echo_server: str) -> None:
    """`config.yaml` may hold a literal token (an http header; DESIGN: secrets come from the
    environment or the user config). Readable by others, it is not read, with a warning; private,
    it is used, and the run's `spec.yaml` records `[REDACTED]` in the token's place."""
    token = "tok_live_" + secrets.token_hex(16)
    config = tmp_path / "config"
    write(config / "ix" / "config.yaml", f"""
        runtime:
          kind: http
          url: {echo_server}/classify
          headers: {{Authorization: "Bearer {token}"}}
        """)
    user_config = config / "ix" / "config.yaml"
    d = lab / "svc"
    write(d / "experiment.yaml", "name: svc\ntrials: 1\nsensor: http_status\n")
    case(d, "a", "must_trigger")
    env = {"XDG_CONFIG_HOME": str(config)}

    user_config.chmod(0o644)
    shared = run_ix("validate", "--lab", str(lab), cwd=tmp_path, env=env)
    assert f"{user_config}: not read: it holds a secret and other users can read it " \
           "(mode 0644)" in shared.stderr
    assert "claude-code" in shared.output  # the built-in default runtime, not the config's
    assert token not in shared.output

    user_config.chmod(0o600)
    private = run_ix("run", "--lab", str(lab), "--json", cwd=tmp_path, env=env)
    assert private.code == 0, private.output
    assert "not read" not in private.stderr and token not in private.output
    record = json.loads((d / "results" / "trials.jsonl").read_text())
    assert record["observation"]["status"] == 200  # the config's http runtime ran
    assert json.loads(record["observation"]["body"])["Authorization"] == "[REDACTED]"
    spec = next((d / "results" / "runs").glob("*/spec.yaml")).read_text()
    assert "Authorization: '[REDACTED]'" in spec
    assert [p for p, text in every_text(lab).items() if token in text] == []
