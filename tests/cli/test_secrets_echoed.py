"""Secrets a subject echoes back in a *successful* answer are never stored, printed or served.

The real `ix` in subprocesses, loopback servers standing in for the APIs, and keys whose
names and shapes do not look secret (so only what ix knows of them can catch them):

- `anthropic` and `openai` subjects whose model answers with its own key in the message text
  (case `echo-text`) and in a tool call's input (case `echo-tool`);
- an `llm_judge` whose model puts its own key in its reasoning;
- an `http` subject whose header reads a variable: the server echoes every request header in
  its body and in response headers (`X-Echo-<name>`);
- an `http` runtime from a private user `config.yaml` with a literal secret header, echoed
  the same way;
- a `command` subject printing its whole environment to stdout and stderr, given two keys
  (its `env` option reads them) and inheriting none of the others.

The run uses `--cache --artifacts`, runs again from the cache, then `ix report` (html, md,
json), `ix export` (json, jsonl, csv, inspect), `ix results` and `ix leaderboard`, and the
viewer serves every page reachable from its home page. Every file under the lab and the user
config folder (gzip and zip members opened, Parquet read), every output and every served
page is searched for every key: none is found, and each echoed place reads `[REDACTED]`.
"""

import gzip
import json
import re
import secrets
import sys
from pathlib import Path

import pytest

from conftest import Result, case, ix_in_process, run_ix, write
from runtimes.fake_llm_servers import FakeLLMServer, Reply, Request, tool_reply
from secrets_support import every_text

pytest.importorskip("anthropic")
pytest.importorskip("openai")

JUDGE_MARK = "JUDGE-RUBRIC-9Z"
PY = sys.executable
PRINT_ENV = ("import os, sys\n"
             "text = '\\n'.join(f'{k}={v}' for k, v in sorted(os.environ.items()))\n"
             "print(text)\n"
             "print(text, file=sys.stderr)\n")


def key_of(request: Request) -> str:
    """The key the request carried (Anthropic: `x-api-key`; OpenAI: `Bearer <key>`)."""
    key = request.headers.get("x-api-key") or request.headers.get("authorization", "")
    return key.removeprefix("Bearer ")


def router(request: Request) -> Reply:
    """Every answer is a 200 that echoes the key it was sent."""
    key = key_of(request)
    text = request.prompt_text()
    if JUDGE_MARK in text:
        return Reply(text=json.dumps({"scores": {"quality": 8},
                                      "reasoning": f"graded with {key} at hand"}))
    if "ECHO-TOOL" in text:
        return tool_reply("Skill", {"skill": "csv-summary", "note": f"key={key}"})
    return Reply(text=f"Sure. For the record, your key is {key}.")


def served_pages(lab: Path) -> dict[str, str]:
    """Every page of the viewer (the real app, in process) reachable from its home page: each
    run, its trials case by case (not again filtered by subject or outcome), each trial and
    each trace."""
    from starlette.testclient import TestClient

    from ix.view.app import create_app

    client = TestClient(create_app(lab), base_url="http://127.0.0.1")
    pages: dict[str, str] = {}
    todo = ["/"]
    while todo and len(pages) < 400:
        url = todo.pop()
        if url in pages:
            continue
        response = client.get(url)
        assert response.status_code in (200, 404), (url, response.status_code)
        pages[url] = response.text
        for href in re.findall(r'href="([^"]+)"', response.text):
            href = href.replace("&amp;", "&")
            if not href.startswith("/") or href.startswith("/static/") or href in pages:
                continue
            if "/trials?" in href and re.search(r"[?&](subject|outcome|page)=", href):
                continue  # the same trials again, fewer of them
            todo.append(href)
    return pages


def test_secrets_echoed_in_successful_answers_are_redacted_everywhere(
        lab: Path, tmp_path: Path, echo_server: str) -> None:
    keys = {  # neither the names nor the values look like secrets
        "LLM_A": "ant-" + secrets.token_hex(20),      # anthropic subject's api_key_env
        "LLM_O": "oai-" + secrets.token_hex(20),      # openai subject's api_key_env
        "LLM_J": "jdg-" + secrets.token_hex(20),      # the judge's api_key_env
        "LLM_C": "cli-" + secrets.token_hex(20),      # read by an http header template
        "DEPLOY_TOKEN": "dep-" + secrets.token_hex(20),  # named like one, never passed on
        "ODD_VALUE": "sk-" + secrets.token_hex(20),   # shaped like one
    }
    literal = "lit-" + secrets.token_hex(20)          # a literal header in config.yaml
    config = tmp_path / "config"
    write(config / "ix" / "config.yaml", f"""
        runtime:
          kind: http
          url: {echo_server}/svc
          headers: {{X-Api-Key: "{literal}"}}
        """)
    (config / "ix" / "config.yaml").chmod(0o600)
    env = {**keys, "XDG_CONFIG_HOME": str(config)}
    outputs: list[Result] = []

    def ix(*args: str, process: bool = True) -> Result:
        result = (run_ix(*args, cwd=tmp_path, env=env, timeout=240) if process
                  else ix_in_process(*args, cwd=tmp_path, env=env))
        outputs.append(result)
        return result

    with FakeLLMServer("anthropic", router=router) as claude, \
            FakeLLMServer("openai", router=router) as gpt:
        write(lab / "skills/csv-summary/SKILL.md", """
            ---
            name: csv-summary
            description: Summarize CSV files. Use when the user asks to summarize a .csv file.
            ---
            # CSV summary
            """)
        d = lab / "echo"
        write(d / "rubrics" / "quality.md", f"""
            ---
            name: quality
            runtime: {{kind: anthropic, model: claude-haiku-4-5, base_url: "{claude.base_url}",
                       api_key_env: LLM_J, backoff_s: 0}}
            dimensions: [quality]
            scale: [0, 10]
            ---
            {JUDGE_MARK} Grade the answer:
            {{{{ observation.content }}}}
            """)
        write(d / "experiment.yaml", f"""
            name: echo
            trials: 1
            sensors:
              - {{kind: activation, skill: csv-summary}}
              - {{kind: llm_judge, agent: rubrics/quality.md}}
            runtime: {{kind: anthropic, model: claude-sonnet-4-5, base_url: "{claude.base_url}",
                       api_key_env: LLM_A, retries: 0}}
            subjects:
              - name: claude
                skills: [csv-summary]
              - name: gpt
                skills: [csv-summary]
                runtime: {{kind: openai, model: gpt-4o-mini, base_url: "{gpt.base_url}",
                           api_key_env: LLM_O, retries: 0}}
              - name: service
                runtime:
                  kind: http
                  url: {echo_server}/classify
                  headers: {{X-Client: "{{{{ env.LLM_C }}}}"}}
                  body: {{text: "{{{{ prompt }}}}"}}
              - name: program
                runtime:
                  kind: command
                  argv: [{json.dumps(PY)}, "-c", {json.dumps(PRINT_ENV)}]
                  env: {{GIVEN_A: "{{{{ env.LLM_A }}}}", GIVEN_ODD: "{{{{ env.ODD_VALUE }}}}"}}
            """)
        case(d, "echo-text", "must_trigger", "ECHO-TEXT: summarize sales.csv")
        case(d, "echo-tool", "must_trigger", "ECHO-TOOL: summarize sales.csv")
        s = lab / "svc"  # its runtime: the user config's http runtime, a literal secret header
        write(s / "experiment.yaml", "name: svc\ntrials: 1\nsensor: http_status\n")
        case(s, "a", "must_trigger")

        first = ix("run", "--lab", str(lab), "--cache", "--artifacts", "--json")
        assert first.code == 0, first.output
        run_ids = {r["experiment_name"]: r["run_id"] for r in json.loads(first.stdout)}
        calls = len(claude.api_requests()) + len(gpt.api_requests())
        again = ix("run", "--lab", str(lab), "--cache", "--json")  # replayed from the cache
        assert again.code == 0, again.output
        # no model was asked again: the judge's calls are cached too (docs/cache.md)
        assert len(claude.api_requests()) + len(gpt.api_requests()) == calls
        for api, name in ((gpt, "LLM_O"),):  # the keys did reach the APIs
            assert {key_of(q) for q in api.api_requests()} == {keys[name]}
        assert {key_of(q) for q in claude.api_requests()} == {keys["LLM_A"], keys["LLM_J"]}

    exports = tmp_path / "exports"
    exports.mkdir()
    run_id = run_ids["echo"]
    for args in (["report", run_id, "--format", "html", "--out", str(exports / "report.html")],
                 ["report", run_id, "--format", "md"],
                 ["report", run_id, "--json"],
                 ["export", run_id, "--format", "json", "--out", str(exports / "run.json")],
                 ["export", run_id, "--format", "jsonl", "--out", str(exports / "run.jsonl")],
                 ["export", run_id, "--format", "csv", "--out", str(exports / "run.csv")],
                 ["export", run_id, "--format", "inspect", "--out", str(exports / "inspect")],
                 ["export", run_ids["svc"], "--format", "json", "--out",
                  str(exports / "svc.json")],
                 ["results", "--json"],
                 ["leaderboard"]):
        # what each reader writes and prints, asked in process (the same commands, output
        # captured as a process's): the runs above were real `ix` processes
        result = ix(*args, "--lab", str(lab), process=False)
        assert result.code == 0, (args, result.output)

    records = [json.loads(x) for x in (d / "results" / "trials.jsonl").read_text().splitlines()]
    by = {(r["subject"], r["probe_id"]): r for r in records if r["run_id"] == run_id}
    assert all(r["error"] is None for r in by.values()), [r["error"] for r in by.values()]
    for subject in ("claude", "gpt"):  # the key in the message text and in a tool's input
        said = by[(subject, "echo-text")]["observation"]["content"]
        assert said == "Sure. For the record, your key is [REDACTED].", said
        called = by[(subject, "echo-tool")]["observation"]["tool_calls"]
        assert called == [{"name": "Skill", "input": {"skill": "csv-summary",
                                                      "note": "key=[REDACTED]"}}], called
    for record in by.values():  # the judge's reasoning
        assert record["readings"][1]["details"] == "graded with [REDACTED] at hand", record
    service = by[("service", "echo-text")]["observation"]
    assert service["headers"]["x-echo-x-client"] == "[REDACTED]"
    assert json.loads(service["body"])["X-Client"] == "[REDACTED]"
    program = by[("program", "echo-text")]["observation"]
    for stream in ("stdout", "stderr"):
        assert "GIVEN_A=[REDACTED]" in program[stream], program[stream]
        assert "GIVEN_ODD=[REDACTED]" in program[stream], program[stream]
        # the environment is an allowlist: what was not given is not there at all
        assert not re.search(r"^(DEPLOY_TOKEN|LLM_\w+|ODD_VALUE)=", program[stream], re.M)
    svc = json.loads((s / "results" / "trials.jsonl").read_text().splitlines()[0])
    assert svc["observation"]["headers"]["x-echo-x-api-key"] == "[REDACTED]"
    assert json.loads(svc["observation"]["body"])["X-Api-Key"] == "[REDACTED]"
    traces = [p for p in (d / "results" / "runs" / run_id).rglob("*.jsonl.gz")]
    assert any("[REDACTED]" in gzip.decompress(p.read_bytes()).decode() for p in traces)

    pages = served_pages(lab)
    assert any("/trace" in url for url in pages), "the viewer served no trace page"
    assert any("[REDACTED]" in html for html in pages.values())

    files = {**{f"lab/{k}": v for k, v in every_text(lab).items()},
             **{f"config/{k}": v for k, v in every_text(config).items()},
             **{f"exports/{k}": v for k, v in every_text(exports).items()}}
    assert any("/.ix/cache/" in name for name in files), "nothing was cached"
    assert any("/artifacts/" in name for name in files), "no artifact was written"
    for name, value in [*keys.items(), ("config.yaml literal", literal)]:
        leaked = [path for path, text in files.items() if value in text
                  and path != "config/ix/config.yaml"]  # the user's own file holds it
        assert leaked == [], f"{name}'s value found in {leaked}"
        shown = [r for r in outputs if value in r.output]
        assert shown == [], f"{name}'s value printed by ix"
        served = [url for url, html in pages.items() if value in html]
        assert served == [], f"{name}'s value served by the viewer at {served}"
