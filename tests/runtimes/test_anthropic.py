"""The `anthropic` runtime against a loopback Messages API, through the real SDK client."""

import asyncio
import json
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from fake_llm_servers import (
    FAKE_KEY,
    FakeLLMServer,
    Reply,
    bad_request,
    http_error,
    overloaded,
    rate_limited,
    skill_call,
    text_reply,
    tool_reply,
)

from ix.domain.errors import ConfigError, TrialError
from ix.domain.types import Subject
from ix.eval.models import EvalCase, HistoryToolCall, ToolCall, Turn
from ix.runtimes import RuntimeContext, build_runtime
from ix.runtimes._skills import skill_listing

# captured from Claude Code 2.1.332; copied into the repository so the tests never skip
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "claude-api-request"
KEY_ENV = "IX_TEST_ANTHROPIC_KEY"
SKILLS = [
    {"name": "csv-summary", "description": "Summarize CSV files - column stats, row counts, "
     "means. Use when the user asks to summarize, profile or describe a .csv file.",
     "path": "/lab/skills/csv-summary/SKILL.md"},
    {"name": "git-release-notes", "description": "Draft release notes from git history. Use "
     "when the user asks for a changelog or release notes.",
     "path": "/lab/skills/git-release-notes/SKILL.md"},
]
WITH_SKILLS = Subject(name="with-skills", config={"skills": SKILLS})
CONTROL = Subject(name="control", config={"skills": []})
CASE = EvalCase(id="must-001", prompt="Summarize sales.csv for me", expectation="must_trigger")

pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")


@pytest.fixture
def api():
    with FakeLLMServer("anthropic") as server:
        yield server


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)


def runtime(api, **options):
    spec = {"kind": "anthropic", "model": "claude-sonnet-4-5", "base_url": api.base_url,
            "api_key_env": KEY_ENV, "backoff_s": 0.0, **options}
    return build_runtime(spec, RuntimeContext(target_skill="csv-summary"))


def invoke(rt, subject=WITH_SKILLS, seed=7, attempt=0):
    return asyncio.run(rt.invoke(subject, CASE, seed=seed, attempt=attempt))


# --- how skills are offered -------------------------------------------------------------------

def test_the_skill_tool_and_listing_are_sent_as_claude_code_sends_them(api):
    invoke(runtime(api))
    (request,) = api.api_requests()
    body = request.body
    assert body["tools"] == [json.loads((FIXTURES / "skill_tool_definition.json").read_text())]
    assert body["tool_choice"] == {"type": "auto"}
    assert body["model"] == "claude-sonnet-4-5" and body["max_tokens"] == 1024
    assert "temperature" not in body and "system" not in body
    (first,) = body["messages"]
    assert first["role"] == "user"
    listing, prompt = first["content"]
    assert prompt == {"type": "text", "text": CASE.prompt}
    assert listing == {"type": "text", "text": (
        "<system-reminder>\nThe following skills are available for use with the Skill tool:"
        f"\n\n- csv-summary: {SKILLS[0]['description']}\n"
        f"- git-release-notes: {SKILLS[1]['description']}\n</system-reminder>")}
    assert request.headers["authorization"] == f"Bearer {FAKE_KEY}" or \
        request.headers.get("x-api-key") == FAKE_KEY


def test_the_listing_reproduces_the_captured_system_reminder():
    captured = json.loads((FIXTURES / "skill_listing_system_reminder.json").read_text())
    text = captured["content"][0]["text"]
    lines = text.removeprefix("<system-reminder>\n").removesuffix("\n</system-reminder>")
    entries = lines.split("\n\n", 1)[1]
    names = re.findall(r"^- ([a-z0-9:-]+): ", entries, re.M)
    # a description may span lines: split only where the next listed name starts
    parts = re.split(r"\n(?=- (?:" + "|".join(map(re.escape, names)) + r"): )", entries)
    skills = [tuple(p.removeprefix("- ").split(": ", 1)) for p in parts]
    assert [n for n, _ in skills] == names and len(names) == 15
    assert skill_listing(skills) == text


def test_a_subject_without_skills_gets_no_tool_and_no_listing(api):
    obs = invoke(runtime(api), subject=CONTROL)
    body = api.api_requests()[0].body
    assert "tools" not in body and "tool_choice" not in body
    assert body["messages"] == [{"role": "user",
                                 "content": [{"type": "text", "text": CASE.prompt}]}]
    assert obs.meta["skills_offered"] == []


def test_options_reach_the_request(api):
    invoke(runtime(api, temperature=0.0, max_tokens=64, system="Be brief.", tool_choice="any"))
    body = api.api_requests()[0].body
    assert body["temperature"] == 0.0 and body["max_tokens"] == 64
    assert body["system"] == "Be brief." and body["tool_choice"] == {"type": "any"}


# --- a case's history at the wire ---------------------------------------------------------

HISTORY_CASE = EvalCase(
    id="must-014", prompt="Now give me a profile of q3.csv.", expectation="must_trigger",
    history=(Turn(role="user", content="Let's clean up the Q3 numbers."),
             Turn(role="assistant", content="Sure. Which file?",
                  tool_calls=(HistoryToolCall(name="Read", input={"file_path": "q3.csv"},
                                              result="region,amount\nnorth,120\n"),
                              HistoryToolCall(name="Glob", input={"pattern": "*.csv"},
                                              result="q3.csv"))),
             Turn(role="assistant", content="Found it."),
             Turn(role="user", content="That one. Thanks.")))


def messages_api_problems(body: dict) -> list[str]:
    """What the Messages API would refuse in `body`: roles alternate from a user message;
    every tool_use is answered, first thing in the next user message, by a tool_result with
    its id; every tool called is defined."""
    problems, messages = [], body["messages"]
    tools = {t["name"] for t in body.get("tools", ())}
    for i, m in enumerate(messages):
        if m["role"] != ("user" if i % 2 == 0 else "assistant"):
            problems.append(f"message {i} is {m['role']}")
        uses = [b for b in m["content"] if b["type"] == "tool_use"]
        problems += [f"{b['name']} is not a defined tool" for b in uses
                     if b["name"] not in tools]
        if uses:
            answer = messages[i + 1]["content"] if i + 1 < len(messages) else []
            results = [b["tool_use_id"] for b in answer[:len(uses)]
                       if b["type"] == "tool_result"]
            if results != [b["id"] for b in uses]:
                problems.append(f"message {i}'s tool calls are not answered in order")
    return problems


def test_a_history_becomes_the_prior_messages_the_api_accepts(api):
    asyncio.run(runtime(api).invoke(WITH_SKILLS, HISTORY_CASE, seed=7))
    body = api.api_requests()[0].body
    assert messages_api_problems(body) == []
    listing = skill_listing([(s["name"], s["description"]) for s in SKILLS])
    read = {"type": "tool_use", "id": "toolu_ix_1_0", "name": "Read",
            "input": {"file_path": "q3.csv"}}
    glob = {"type": "tool_use", "id": "toolu_ix_1_1", "name": "Glob",
            "input": {"pattern": "*.csv"}}
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": listing},
                                     {"type": "text", "text": "Let's clean up the Q3 numbers."}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Sure. Which file?"},
                                          read, glob]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_ix_1_0",
             "content": "region,amount\nnorth,120\n"},
            {"type": "tool_result", "tool_use_id": "toolu_ix_1_1", "content": "q3.csv"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Found it."}]},
        {"role": "user", "content": [{"type": "text", "text": "That one. Thanks."},
                                     {"type": "text", "text": HISTORY_CASE.prompt}]},
    ]
    # the tools the history called are offered after the Skill tool, and nothing else changes
    assert [t["name"] for t in body["tools"]] == ["Skill", "Read", "Glob"]
    assert body["tool_choice"] == {"type": "auto"}


def test_a_history_without_skills_still_defines_the_tools_it_called(api):
    asyncio.run(runtime(api).invoke(CONTROL, HISTORY_CASE, seed=7))
    body = api.api_requests()[0].body
    assert messages_api_problems(body) == []
    assert [t["name"] for t in body["tools"]] == ["Read", "Glob"]
    assert "tool_choice" not in body
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "Let's clean up the Q3 numbers."}]


def test_a_case_without_history_sends_what_it_always_sent(api):
    """One user message: [listing, prompt] (the captured form above), no extra tools."""
    invoke(runtime(api))
    body = api.api_requests()[0].body
    assert len(body["messages"]) == 1 and [t["name"] for t in body["tools"]] == ["Skill"]
    assert messages_api_problems(body) == []


# --- what comes back ----------------------------------------------------------------------

def test_a_skill_call_is_parsed_into_the_observation(api):
    api.script.append(skill_call("csv-summary", preamble="I'll use the CSV skill."))
    obs = invoke(runtime(api))
    assert obs.tool_calls == (ToolCall(name="Skill", input={"skill": "csv-summary"}),)
    assert obs.content == "I'll use the CSV skill."
    assert obs.meta["model"] == "claude-sonnet-4-5"
    assert obs.meta["stop_reason"] == "tool_use"
    assert obs.meta["request_id"].startswith("req_fake")
    assert obs.meta["skills_offered"] == ["csv-summary", "git-release-notes"]
    assert "retries" not in obs.meta and "price_unknown" not in obs.meta


def test_every_tool_use_block_is_a_tool_call(api):
    api.script.append(Reply(text="Both.", tool_calls=(
        *tool_reply("Read", {"file_path": "sales.csv"}).tool_calls,
        *skill_call("csv-summary").tool_calls)))
    obs = invoke(runtime(api))
    assert [c.name for c in obs.tool_calls] == ["Read", "Skill"]
    assert obs.tool_calls[0].input == {"file_path": "sales.csv"}


def test_a_text_answer_has_no_tool_call(api):
    api.script.append(text_reply("Here is a summary."))
    obs = invoke(runtime(api))
    assert obs.tool_calls == () and obs.content == "Here is a summary."
    assert obs.meta["stop_reason"] == "end_turn"


def test_the_trace_holds_the_request_and_the_raw_response_but_no_secret(api):
    api.script.append(skill_call("csv-summary"))
    obs = invoke(runtime(api))
    request, response = obs.trace
    assert request["type"] == "request" and request["url"] == f"{api.url}/v1/messages"
    assert request["body"] == api.api_requests()[0].body
    assert response["type"] == "response" and response["body"]["id"].startswith("msg_fake")
    dumped = json.dumps(obs.trace) + obs.model_dump_json()
    assert FAKE_KEY not in dumped and "authorization" not in dumped.lower()


# --- tokens and cost ----------------------------------------------------------------------

def test_tokens_and_cost_come_from_usage_times_the_price_table(api):
    api.script.append(text_reply(input_tokens=1000, output_tokens=500))
    obs = invoke(runtime(api))
    assert (obs.tokens_input, obs.tokens_output) == (1000, 500)
    assert obs.cost_usd == pytest.approx(1000 * 3 / 1e6 + 500 * 15 / 1e6)  # $3 / $15 per MTok


def test_cached_tokens_are_counted_and_priced_as_anthropic_bills_them(api):
    api.script.append(text_reply(input_tokens=100, output_tokens=10, cache_write_tokens=2000,
                                 cache_read_tokens=5000))
    obs = invoke(runtime(api, model="claude-haiku-4-5"))
    assert obs.tokens_input == 7100
    assert obs.meta["cache_read_input_tokens"] == 5000
    expected = (100 * 1.0 + 2000 * 1.25 + 5000 * 0.1 + 10 * 5.0) / 1e6
    assert obs.cost_usd == pytest.approx(expected)


def test_a_dated_snapshot_costs_what_its_alias_costs(api):
    api.script.append(text_reply(input_tokens=1_000_000, output_tokens=0))
    obs = invoke(runtime(api, model="claude-sonnet-4-5-20250929"))
    assert obs.cost_usd == pytest.approx(3.0)


def test_the_prices_option_overrides_the_table(api):
    api.script.append(text_reply(input_tokens=2_000_000, output_tokens=1_000_000))
    obs = invoke(runtime(api, prices={"claude-sonnet-4-5": {"input_per_mtok": 0.5,
                                                            "output_per_mtok": 2}}))
    assert obs.cost_usd == pytest.approx(3.0)


def test_an_unknown_model_costs_zero_and_says_so(api):
    api.script.append(text_reply(input_tokens=1000, output_tokens=100))
    obs = invoke(runtime(api, model="claude-sonnet-5"))
    assert obs.cost_usd == 0.0 and obs.meta["price_unknown"] is True
    assert (obs.tokens_input, obs.tokens_output) == (1000, 100)
    api.script.append(text_reply())
    priced = invoke(runtime(api, model="claude-sonnet-5",
                            prices={"claude-sonnet-5": {"input_per_mtok": 3,
                                                        "output_per_mtok": 15}}))
    assert priced.cost_usd > 0 and "price_unknown" not in priced.meta


# --- failures and retries -----------------------------------------------------------------

@pytest.mark.parametrize("failure", [rate_limited(0), overloaded(), http_error(500),
                                     http_error(503)], ids=["429", "529", "500", "503"])
def test_a_transient_failure_is_retried_then_succeeds(api, failure):
    api.script.extend([failure, skill_call("csv-summary")])
    obs = invoke(runtime(api))
    assert len(api.api_requests()) == 2
    assert obs.tool_calls[0].input == {"skill": "csv-summary"}
    assert obs.meta["retries"] == 1
    assert [t["type"] for t in obs.trace] == ["request", "retry", "response"]
    assert obs.trace[1]["message"].startswith(f"HTTP {failure.status}")


def test_retry_after_is_honoured(api):
    api.script.extend([rate_limited(retry_after=0.3), text_reply()])
    rt = runtime(api)
    t0 = asyncio.run(_timed(rt))
    assert t0 >= 0.3
    assert api.api_requests()[1] is not None


async def _timed(rt):
    loop = asyncio.get_running_loop()
    start = loop.time()
    await rt.invoke(WITH_SKILLS, CASE, seed=1)
    return loop.time() - start


def test_retries_run_out_into_a_trial_error(api):
    api.script.extend([overloaded()] * 3)
    with pytest.raises(TrialError) as info:
        invoke(runtime(api, retries=2))
    assert info.value.kind == "overloaded"
    assert "gave up after 3 tries" in info.value.message
    assert len(api.api_requests()) == 3


def test_a_bad_request_fails_at_once_without_retry(api):
    api.script.extend([bad_request("max_tokens: must be at most 64000"), text_reply()])
    with pytest.raises(TrialError) as info:
        invoke(runtime(api))
    assert info.value.kind == "bad_request"
    assert "HTTP 400" in info.value.message and "max_tokens: must be at most" in \
        info.value.message
    assert len(api.api_requests()) == 1


def test_a_missing_key_names_the_variable_and_sends_nothing(api, monkeypatch):
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(TrialError) as info:
        invoke(runtime(api))
    assert info.value.kind == "missing_api_key"
    assert KEY_ENV in info.value.message
    assert api.requests == []


def test_the_key_is_read_when_a_trial_runs_not_when_the_runtime_is_built(api, monkeypatch):
    monkeypatch.delenv(KEY_ENV)
    rt = runtime(api)
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    assert invoke(rt).content == "Answered directly."


def test_a_refused_connection_is_retried_then_reported():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    rt = build_runtime({"kind": "anthropic", "model": "claude-haiku-4-5",
                        "base_url": f"http://127.0.0.1:{port}", "api_key_env": KEY_ENV,
                        "retries": 1, "backoff_s": 0.0}, RuntimeContext())
    with pytest.raises(TrialError) as info:
        invoke(rt)
    assert info.value.kind == "connection_error"
    assert "gave up after 2 tries" in info.value.message


def test_a_slow_answer_times_out_per_request(api):
    api.script.append(text_reply(delay_s=1.0))
    with pytest.raises(TrialError) as info:
        invoke(runtime(api, request_timeout_s=0.2, retries=0))
    assert info.value.kind == "http_timeout"


# --- rate limit ---------------------------------------------------------------------------

def test_requests_per_minute_holds_back_the_next_request(api):
    rt = runtime(api, requests_per_minute=2)

    async def three():
        tasks = [asyncio.ensure_future(rt.invoke(WITH_SKILLS, CASE, seed=s)) for s in range(3)]
        done, pending = await asyncio.wait(tasks, timeout=1.0)
        for t in pending:
            t.cancel()
        return len(done), len(pending)

    assert asyncio.run(three()) == (2, 1)
    assert len(api.api_requests()) == 2


def test_tokens_per_minute_counts_the_tokens_spent(api):
    rt = runtime(api, tokens_per_minute=1000)   # one answer spends 1240 tokens

    async def two():
        await rt.invoke(WITH_SKILLS, CASE, seed=1)
        try:
            await asyncio.wait_for(rt.invoke(WITH_SKILLS, CASE, seed=2), timeout=0.5)
        except TimeoutError:
            return "held back"
        return "sent"

    assert asyncio.run(two()) == "held back"
    assert len(api.api_requests()) == 1


# --- configuration ------------------------------------------------------------------------

@pytest.mark.parametrize("options,field", [
    ({}, "runtime.model"),
    ({"model": "claude-haiku-4-5", "temperature": 1.5}, "runtime.temperature"),
    ({"model": "claude-haiku-4-5", "api_key_env": "sk-ant-api03-abc"}, "runtime.api_key_env"),
    ({"model": "claude-haiku-4-5", "tool_choice": "required"}, "runtime.tool_choice"),
    ({"model": "claude-haiku-4-5", "prices": {"m": {"input_per_mtok": 1}}},
     "runtime.prices.m.output_per_mtok"),
    ({"model": "claude-haiku-4-5", "retries": -1}, "runtime.retries"),
    ({"model": "claude-haiku-4-5", "stream": True}, "runtime.stream"),
])
def test_bad_options_name_the_field(options, field):
    with pytest.raises(ConfigError) as info:
        build_runtime({"kind": "anthropic", **options}, RuntimeContext())
    assert info.value.field == field


def test_without_the_sdk_the_build_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "anthropic", None)  # as if it were not installed
    with pytest.raises(ConfigError) as info:
        build_runtime({"kind": "anthropic", "model": "claude-haiku-4-5"}, RuntimeContext())
    assert "pip install 'ix-lab[anthropic]'" in info.value.message


def test_ix_imports_without_the_sdks():
    code = ("import sys; sys.modules['anthropic'] = None; sys.modules['openai'] = None\n"
            "import ix, ix.runtimes, ix.runtimes.anthropic, ix.runtimes.openai\n"
            "print(sorted(k for k in ix.runtimes.available() if k in ('anthropic', 'openai')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "['anthropic', 'openai']"


# --- concurrency --------------------------------------------------------------------------

def test_one_runtime_serves_concurrent_trials_over_one_client():
    with FakeLLMServer("anthropic", delay_s=0.5) as slow:
        rt = runtime(slow)

        async def many():
            return await asyncio.gather(*(rt.invoke(WITH_SKILLS, CASE, seed=s)
                                          for s in range(20)))

        results = asyncio.run(many())
    assert len(results) == 20 and len(slow.api_requests()) == 20
    assert slow.max_in_flight >= 10   # 20 when the machine is idle: no hidden serialisation
