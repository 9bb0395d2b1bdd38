"""The `openai` runtime against a loopback Chat Completions API, through the real SDK client."""

import asyncio
import json
import sys

import pytest
from fake_llm_servers import (
    FAKE_KEY,
    FakeLLMServer,
    Reply,
    ToolUse,
    bad_request,
    http_error,
    rate_limited,
    skill_call,
    text_reply,
    tool_reply,
)

from ix.domain.errors import ConfigError, TrialError
from ix.domain.types import Subject
from ix.eval.models import EvalCase, HistoryToolCall, ToolCall, Turn
from ix.runtimes import RuntimeContext, build_runtime
from ix.runtimes._skills import SKILL_TOOL, skill_listing
from ix.runtimes.openai import request_seed

KEY_ENV = "IX_TEST_OPENAI_KEY"
SKILLS = [
    {"name": "csv-summary", "description": "Summarize CSV files. Use when the user asks to "
     "summarize a .csv file.", "path": "/lab/skills/csv-summary/SKILL.md"},
    {"name": "git-release-notes", "description": "Draft release notes from git history.",
     "path": "/lab/skills/git-release-notes/SKILL.md"},
]
WITH_SKILLS = Subject(name="with-skills", config={"skills": SKILLS})
CONTROL = Subject(name="control", config={"skills": []})
CASE = EvalCase(id="must-001", prompt="Summarize sales.csv for me", expectation="must_trigger")


@pytest.fixture
def api():
    with FakeLLMServer("openai") as server:
        yield server


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)


def runtime(api, **options):
    spec = {"kind": "openai", "model": "gpt-4o-mini", "base_url": api.base_url,
            "api_key_env": KEY_ENV, "backoff_s": 0.0, **options}
    return build_runtime(spec, RuntimeContext(target_skill="csv-summary"))


def invoke(rt, subject=WITH_SKILLS, seed=7, attempt=0):
    return asyncio.run(rt.invoke(subject, CASE, seed=seed, attempt=attempt))


# --- how skills are offered -------------------------------------------------------------------

def test_skills_are_offered_as_a_skill_function_tool_and_a_listing(api):
    invoke(runtime(api))
    (request,) = api.api_requests()
    body = request.body
    schema = {k: v for k, v in SKILL_TOOL["input_schema"].items() if k != "$schema"}
    assert body["tools"] == [{"type": "function", "function": {
        "name": "Skill", "description": SKILL_TOOL["description"], "parameters": schema}}]
    assert body["tool_choice"] == "auto"
    assert body["messages"] == [{"role": "user", "content": (
        skill_listing([(s["name"], s["description"]) for s in SKILLS]) + "\n\n" + CASE.prompt)}]
    assert body["messages"][0]["content"].startswith(
        "<system-reminder>\nThe following skills are available for use with the Skill tool:"
        "\n\n- csv-summary: Summarize CSV files.")
    assert body["max_tokens"] == 1024 and "max_completion_tokens" not in body
    assert "temperature" not in body
    assert request.headers["authorization"] == f"Bearer {FAKE_KEY}"


def test_a_subject_without_skills_gets_no_tool_and_no_listing(api):
    obs = invoke(runtime(api), subject=CONTROL)
    body = api.api_requests()[0].body
    assert "tools" not in body and "tool_choice" not in body
    assert body["messages"] == [{"role": "user", "content": CASE.prompt}]
    assert obs.meta["skills_offered"] == []


def chat_problems(body: dict) -> list[str]:
    """What Chat Completions would refuse: every assistant tool call answered by a `tool`
    message with its id, right after it and in order; no `tool` message unasked."""
    problems, messages, i = [], body["messages"], 0
    while i < len(messages):
        m = messages[i]
        if m["role"] == "tool":
            problems.append(f"message {i} answers no tool call")
        calls = [c["id"] for c in m.get("tool_calls", ())]
        answers = [a.get("tool_call_id") for a in messages[i + 1:i + 1 + len(calls)]
                   if a["role"] == "tool"]
        if answers != calls:
            problems.append(f"message {i}'s tool calls are not answered in order")
        i += 1 + len(answers)
    return problems


def test_a_history_becomes_prior_chat_messages_with_tool_calls_answered(api):
    case = EvalCase(
        id="must-014", prompt="Now give me a profile of q3.csv.", expectation="must_trigger",
        history=(Turn(role="user", content="Let's clean up the Q3 numbers."),
                 Turn(role="assistant", content="",
                      tool_calls=(HistoryToolCall(name="Read", input={"file_path": "q3.csv"},
                                                  result="region,amount\n"),)),
                 Turn(role="assistant", content="Which columns?"),
                 Turn(role="user", content="All of them.")))
    asyncio.run(runtime(api).invoke(WITH_SKILLS, case, seed=7))
    body = api.api_requests()[0].body
    assert chat_problems(body) == []
    listing = skill_listing([(s["name"], s["description"]) for s in SKILLS])
    assert body["messages"] == [
        {"role": "user", "content": f"{listing}\n\nLet's clean up the Q3 numbers."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_ix_1_0", "type": "function",
             "function": {"name": "Read", "arguments": '{"file_path": "q3.csv"}'}}]},
        {"role": "tool", "tool_call_id": "call_ix_1_0", "content": "region,amount\n"},
        {"role": "assistant", "content": "Which columns?"},
        {"role": "user", "content": "All of them."},
        {"role": "user", "content": case.prompt},
    ]
    assert [t["function"]["name"] for t in body["tools"]] == ["Skill", "Read"]


def test_options_reach_the_request(api):
    invoke(runtime(api, temperature=0.7, max_tokens=50, system="Be brief.",
                   tool_choice="required", max_tokens_field="max_completion_tokens"))
    body = api.api_requests()[0].body
    assert body["temperature"] == 0.7 and body["tool_choice"] == "required"
    assert body["max_completion_tokens"] == 50 and "max_tokens" not in body
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}


def test_the_trial_seed_is_sent_mixed_with_the_attempt(api):
    rt = runtime(api)
    invoke(rt, seed=123, attempt=0)
    invoke(rt, seed=123, attempt=0)
    invoke(rt, seed=123, attempt=1)
    seeds = [r.body["seed"] for r in api.api_requests()]
    assert seeds[0] == seeds[1] == request_seed(123, 0) != seeds[2]
    assert all(0 <= s < 2**31 for s in seeds)
    invoke(runtime(api, seed=False))
    assert "seed" not in api.api_requests()[-1].body


# --- what comes back ----------------------------------------------------------------------

def test_a_skill_call_is_parsed_into_the_observation(api):
    api.script.append(skill_call("csv-summary", preamble="Using the skill."))
    obs = invoke(runtime(api))
    assert obs.tool_calls == (ToolCall(name="Skill", input={"skill": "csv-summary"}),)
    assert obs.content == "Using the skill."
    assert obs.meta["stop_reason"] == "tool_calls" and obs.meta["model"] == "gpt-4o-mini"
    assert obs.meta["request_id"].startswith("req_fake")
    assert "unparsable_tool_arguments" not in obs.meta


def test_a_text_answer_has_no_tool_call(api):
    api.script.append(text_reply("Here it is."))
    obs = invoke(runtime(api))
    assert obs.tool_calls == () and obs.content == "Here it is."
    assert obs.meta["stop_reason"] == "stop"


def test_unparsable_arguments_keep_the_raw_text_and_flag_it(api):
    api.script.append(Reply(tool_calls=(ToolUse("Skill", '{"skill": "csv-summ'),
                                        ToolUse("Skill", '["csv-summary"]'),
                                        ToolUse("Skill", ""))))
    obs = invoke(runtime(api))
    assert [c.input for c in obs.tool_calls] == [
        {"_raw": '{"skill": "csv-summ'}, {"_raw": '["csv-summary"]'}, {}]
    assert obs.meta["unparsable_tool_arguments"] is True
    assert obs.content == ""


def test_the_trace_holds_the_request_and_the_raw_response_but_no_secret(api):
    api.script.append(tool_reply("Skill", {"skill": "csv-summary", "args": "sales.csv"}))
    obs = invoke(runtime(api))
    request, response = obs.trace
    assert request["url"] == f"{api.url}/v1/chat/completions"
    assert request["body"] == api.api_requests()[0].body
    assert response["body"]["object"] == "chat.completion"
    assert FAKE_KEY not in json.dumps(obs.trace) + obs.model_dump_json()


# --- tokens and cost ----------------------------------------------------------------------

def test_tokens_and_cost_come_from_usage_times_the_price_table(api):
    api.script.append(text_reply(input_tokens=10_000, output_tokens=2_000))
    obs = invoke(runtime(api))
    assert (obs.tokens_input, obs.tokens_output) == (10_000, 2_000)
    assert obs.cost_usd == pytest.approx(10_000 * 0.15 / 1e6 + 2_000 * 0.60 / 1e6)


def test_cached_prompt_tokens_are_priced_at_the_cached_rate(api):
    api.script.append(text_reply(input_tokens=10_000, output_tokens=0, cache_read_tokens=8_000))
    obs = invoke(runtime(api, model="gpt-4.1"))
    assert obs.tokens_input == 10_000 and obs.meta["cached_tokens"] == 8_000
    assert obs.cost_usd == pytest.approx((2_000 * 2.0 + 8_000 * 0.50) / 1e6)


def test_the_prices_option_prices_a_local_model(api):
    api.script.append(text_reply(input_tokens=1000, output_tokens=1000))
    obs = invoke(runtime(api, model="llama3.1:8b"))
    assert obs.cost_usd == 0.0 and obs.meta["price_unknown"] is True
    api.script.append(text_reply(input_tokens=1_000_000, output_tokens=1_000_000))
    obs = invoke(runtime(api, model="llama3.1:8b",
                         prices={"llama3.1:8b": {"input_per_mtok": 0.1, "output_per_mtok": 0.2}}))
    assert obs.cost_usd == pytest.approx(0.3) and "price_unknown" not in obs.meta


def test_a_dated_snapshot_the_server_names_is_priced_as_its_alias(api):
    api.model = "gpt-4o-2024-08-06"
    api.script.append(text_reply(input_tokens=1_000_000, output_tokens=0))
    obs = invoke(runtime(api, model="my-deployment"))
    assert obs.meta["model"] == "gpt-4o-2024-08-06"
    assert obs.cost_usd == pytest.approx(2.50)


def test_a_response_without_usage_counts_zero_and_says_so(api):
    api.script.append(text_reply(usage=False))
    obs = invoke(runtime(api))
    assert (obs.tokens_input, obs.tokens_output, obs.cost_usd) == (0, 0, 0.0)
    assert obs.meta["usage_missing"] is True


# --- failures and retries -----------------------------------------------------------------

@pytest.mark.parametrize("failure", [rate_limited(0), http_error(500), http_error(503)],
                         ids=["429", "500", "503"])
def test_a_transient_failure_is_retried_then_succeeds(api, failure):
    api.script.extend([failure, skill_call("csv-summary")])
    obs = invoke(runtime(api))
    assert len(api.api_requests()) == 2
    assert obs.tool_calls[0].name == "Skill" and obs.meta["retries"] == 1


def test_a_bad_request_fails_at_once_without_retry(api):
    api.script.extend([bad_request("Unsupported parameter: 'max_tokens'"), text_reply()])
    with pytest.raises(TrialError) as info:
        invoke(runtime(api))
    assert info.value.kind == "bad_request"
    assert "Unsupported parameter: 'max_tokens'" in info.value.message
    assert len(api.api_requests()) == 1


def test_a_missing_key_names_the_variable_and_sends_nothing(api, monkeypatch):
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(TrialError) as info:
        invoke(runtime(api))
    assert info.value.kind == "missing_api_key" and KEY_ENV in info.value.message
    assert FAKE_KEY not in info.value.message
    assert api.requests == []


def test_a_server_without_keys_needs_no_variable(api, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    obs = invoke(runtime(api, api_key_env=None))
    assert obs.content == "Answered directly."


def test_a_response_without_choices_is_a_bad_response(api):
    api.script.append(Reply(body={"id": "chatcmpl-x", "object": "chat.completion",
                                  "choices": []}))
    with pytest.raises(TrialError) as info:
        invoke(runtime(api))
    assert info.value.kind == "bad_response"


# --- rate limit ---------------------------------------------------------------------------

def test_requests_per_minute_holds_back_the_next_request(api):
    rt = runtime(api, requests_per_minute=1)

    async def two():
        first = asyncio.ensure_future(rt.invoke(WITH_SKILLS, CASE, seed=1))
        second = asyncio.ensure_future(rt.invoke(WITH_SKILLS, CASE, seed=2))
        done, pending = await asyncio.wait([first, second], timeout=0.8)
        for t in pending:
            t.cancel()
        return len(done), len(pending)

    assert asyncio.run(two()) == (1, 1)
    assert len(api.api_requests()) == 1


# --- configuration ------------------------------------------------------------------------

@pytest.mark.parametrize("options,field", [
    ({}, "runtime.model"),
    ({"model": "gpt-4o", "temperature": 2.5}, "runtime.temperature"),
    ({"model": "gpt-4o", "tool_choice": "any"}, "runtime.tool_choice"),
    ({"model": "gpt-4o", "max_tokens_field": "n_predict"}, "runtime.max_tokens_field"),
    ({"model": "gpt-4o", "api_key_env": "sk-proj-abc"}, "runtime.api_key_env"),
])
def test_bad_options_name_the_field(options, field):
    with pytest.raises(ConfigError) as info:
        build_runtime({"kind": "openai", **options}, RuntimeContext())
    assert info.value.field == field


def test_without_the_sdk_the_build_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "openai", None)  # as if it were not installed
    with pytest.raises(ConfigError) as info:
        build_runtime({"kind": "openai", "model": "gpt-4o"}, RuntimeContext())
    assert "pip install 'ix-lab[openai]'" in info.value.message
