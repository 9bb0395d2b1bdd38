"""`ix run` with the `anthropic` and `openai` runtimes, end to end against loopback APIs.

The real SDK clients, a fake API on 127.0.0.1 that calls the Skill tool when it is offered
and the prompt mentions a CSV file. The fake key must reach the server and nowhere else: not
the trial lines, the summaries, the run's spec, the traces. The real command in a subprocess
for the anthropic run (exit 0, its JSON, no key in its output) and the missing key (exit 2);
the openai run and `validate` in process (`ix_in_process`).
"""

import gzip
import json
from pathlib import Path

import pytest

from conftest import case, ix_in_process, run_ix, write
from runtimes.fake_llm_servers import (
    FAKE_KEY,
    INPUT_TOKENS,
    OUTPUT_TOKENS,
    FakeLLMServer,
    Reply,
    Request,
    skill_call,
    text_reply,
)

KEY_ENV = "IX_TEST_KEY"
PRICE = {"anthropic": (3.0, 15.0), "openai": (0.15, 0.60)}  # claude-sonnet-4-5, gpt-4o-mini


def router(request: Request) -> Reply:
    offered = bool(request.body.get("tools"))
    if offered and ".csv" in request.prompt_text().split("</system-reminder>")[-1]:
        return skill_call("csv-summary", preamble="I'll use the csv-summary skill.")
    return text_reply("Answered directly.")


def make_lab(lab: Path, runtime_yaml: str) -> Path:
    write(lab / "skills/csv-summary/SKILL.md", """
        ---
        name: csv-summary
        description: Summarize CSV files. Use when the user asks to summarize a .csv file.
        ---
        # CSV summary
        """)
    write(lab / "skills/git-release-notes/SKILL.md", """
        ---
        name: git-release-notes
        description: Draft release notes from git history.
        ---
        # Release notes
        """)
    exp = lab / "llm"
    write(exp / "experiment.yaml", f"""
        name: llm
        sensor: {{kind: activation, skill: csv-summary}}
        trials: 3
        concurrency: 4
        runtime:
        {runtime_yaml}
        subjects:
          - name: control
            description: no skills (no Skill tool, no listing)
          - name: with-skills
            skills: [csv-summary, git-release-notes]
        """)
    case(exp, "must-001", "must_trigger", "Summarize sales.csv: row counts and means.")
    case(exp, "must-002", "must_trigger", "Profile the columns of orders.csv please.")
    case(exp, "not-001", "should_not_trigger", "Write a haiku about autumn.")
    return exp


def every_text_under(root: Path) -> dict[str, str]:
    """Each file's text, gzipped ones decompressed."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            data = p.read_bytes()
            if p.suffix == ".gz":
                data = gzip.decompress(data)
            out[str(p.relative_to(root))] = data.decode("utf-8", "replace")
    return out


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_ix_run_measures_activation_tokens_and_cost_and_keeps_the_key_out(lab, provider):
    with FakeLLMServer(provider, router=router) as api:
        model = "claude-sonnet-4-5" if provider == "anthropic" else "gpt-4o-mini"
        exp = make_lab(lab, f"""  kind: {provider}
          model: {model}
          base_url: {api.base_url}
          api_key_env: {KEY_ENV}
          temperature: 0
          backoff_s: 0
        """)
        # the real command for one provider; the other in process
        command = run_ix if provider == "anthropic" else ix_in_process
        r = command("run", "--lab", str(lab), "--json", env={KEY_ENV: FAKE_KEY})
        assert r.code == 0, r.output
        requests = api.api_requests()
    assert len(requests) == 2 * 3 * 3
    assert all(FAKE_KEY in (q.headers.get("authorization", "") + q.headers.get("x-api-key", ""))
               for q in requests)
    offered = [q for q in requests if q.body.get("tools")]
    assert len(offered) == 9 and all("csv-summary" in q.prompt_text() for q in offered)

    summary = json.loads(r.stdout)
    trials = [json.loads(x) for x in (exp / "results/trials.jsonl").read_text().splitlines()]
    assert len(trials) == 18 and all(t["error"] is None for t in trials)
    for t in trials:
        obs = t["observation"]
        assert obs["tokens_input"] == INPUT_TOKENS and obs["tokens_output"] == OUTPUT_TOKENS
        inp, outp = PRICE[provider]
        assert obs["cost_usd"] == pytest.approx((INPUT_TOKENS * inp + OUTPUT_TOKENS * outp) / 1e6)
        assert obs["meta"]["model"] == model and "price_unknown" not in obs["meta"]
        called = t["subject"] == "with-skills" and t["probe_id"].startswith("must")
        assert obs["tool_calls"] == ([{"name": "Skill", "input": {"skill": "csv-summary"}}]
                                     if called else [])
        assert t["reading"]["passed"] is called
        assert t["trace"].endswith(".jsonl.gz")
    blocks = {b["name"]: b for b in summary["subjects"]}
    assert blocks["with-skills"]["metrics"]["recall"] == 1.0
    assert blocks["with-skills"]["metrics"]["precision"] == 1.0
    assert blocks["control"]["metrics"]["tp"] == 0
    per_trial = (INPUT_TOKENS * PRICE[provider][0] + OUTPUT_TOKENS * PRICE[provider][1]) / 1e6
    assert summary["usage"]["tokens_input"] == 18 * INPUT_TOKENS
    assert summary["usage"]["tokens_output"] == 18 * OUTPUT_TOKENS
    assert summary["usage"]["cost_usd"] == pytest.approx(18 * per_trial, abs=1e-6)

    files = every_text_under(exp / "results")
    traces = [name for name in files if name.endswith(".jsonl.gz")]
    assert len(traces) == 18
    first = [json.loads(line) for line in files[traces[0]].splitlines()]
    assert [x["type"] for x in first] == ["request", "response"]
    leaked = [name for name, text in files.items() if FAKE_KEY in text]
    assert leaked == []
    assert FAKE_KEY not in r.output


def test_a_missing_key_fails_each_trial_with_a_clear_error(lab):
    with FakeLLMServer("anthropic", router=router) as api:
        exp = make_lab(lab, f"""  kind: anthropic
          model: claude-haiku-4-5
          base_url: {api.base_url}
          api_key_env: {KEY_ENV}
        """)
        r = run_ix("run", "--lab", str(lab), "--json")
        assert api.requests == []
    # every trial errored for want of a key: the run failed of its configuration (issue 16)
    assert r.code == 2, r.output
    trials = [json.loads(x) for x in (exp / "results/trials.jsonl").read_text().splitlines()]
    assert {t["error"]["kind"] for t in trials} == {"missing_api_key"}
    assert KEY_ENV in trials[0]["error"]["message"]
    assert json.loads(r.stdout)["errors"] == 18
    assert json.loads(r.stdout)["run_status"] == "failed"
    assert f"{KEY_ENV} is not set — set it" in r.stderr


def test_a_bad_option_stops_before_any_trial(lab):
    make_lab(lab, """  kind: openai
          model: gpt-4o
          temperature: 9
        """)
    r = ix_in_process("validate", "--lab", str(lab))
    assert r.code == 2
    assert "runtime.temperature" in r.output
