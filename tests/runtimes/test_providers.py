"""The providers teams deploy on, at the wire: Claude on Amazon Bedrock and Google Vertex AI
(the `anthropic` runtime's `provider:`) and Gemini (the `gemini` runtime), through the
official SDK clients, against loopback fakes that record each request: the provider's path,
its signature, token or key header, the answer parsed into the observation and priced from
the table, and no credential in any file a run writes."""

import asyncio
import json
import re
from pathlib import Path

import pytest
from fake_llm_servers import FakeLLMServer, Reply, ToolUse, http_error, skill_call

from conftest import case, ix_in_process, write
from ix.domain.errors import ConfigError, TrialError
from ix.domain.types import Subject
from ix.eval.models import EvalCase, HistoryToolCall, Turn
from ix.runtimes import RuntimeContext, build_runtime
from secrets_support import every_text

pytest.importorskip("anthropic")

SKILLS = [{"name": "csv-summary", "description": "Summarize CSV files. Use when the user asks "
           "to summarize a .csv file.", "path": "/lab/skills/csv-summary/SKILL.md"}]
SUBJECT = Subject(name="claude", config={"skills": SKILLS})
CASE = EvalCase(id="must-001", prompt="Summarize sales.csv for me", expectation="must_trigger")
#: Fake AWS credentials, the same for the whole module: botocore caches the session it signs
#: with, so a second set in another test could be signed with the first.
AWS = {"AWS_ACCESS_KEY_ID": "AKIAIXFAKE7Q2ZEXAMPLE",
       "AWS_SECRET_ACCESS_KEY": "ix/fake/Secret+Key/0a9b8c7d6e5f4a3b2c1d0e9f",
       "AWS_SESSION_TOKEN": "IQoJb3JpZ2luX2VjEIX-fake-session-token-5d4c3b2a",
       "AWS_CONFIG_FILE": "/nonexistent/aws-config", "AWS_SHARED_CREDENTIALS_FILE":
       "/nonexistent/aws-credentials", "AWS_EC2_METADATA_DISABLED": "true"}
VERTEX_TOKEN = "ya29.ix-fake-access-token-3f9e8d7c6b5a4"
GEMINI_KEY = "AIzaSyIX-fake-gemini-key-8e7d6c5b4a39"
BEDROCK_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
VERTEX_MODEL = "claude-sonnet-4-5@20250929"
SONNET_COST = 1200 * 3 / 1e6 + 40 * 15 / 1e6  # the fake's usage at $3 / $15 per MTok
ANSWER = Reply(text="Let me load the skill.", tool_calls=(ToolUse("Skill",
                                                                    {"skill": "csv-summary"}),))


@pytest.fixture(autouse=True)
def environment(monkeypatch):
    for name, value in AWS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)
    monkeypatch.setenv("IX_TEST_VERTEX_TOKEN", VERTEX_TOKEN)
    monkeypatch.setenv("IX_TEST_GEMINI_KEY", GEMINI_KEY)


def runtime(**options):
    spec = {"kind": "anthropic", "backoff_s": 0.0, **options}
    return build_runtime(spec, RuntimeContext(target_skill="csv-summary"))


def invoke(rt, case=CASE):
    return asyncio.run(rt.invoke(SUBJECT, case, seed=7))


def bedrock(api, **options):
    return runtime(provider="bedrock", model=BEDROCK_MODEL, aws_region="us-east-1",
                   base_url=api.base_url, **options)


def vertex(api, **options):
    return runtime(provider="vertex", model=VERTEX_MODEL, project_id="ix-test-project",
                   region="us-east5", api_key_env="IX_TEST_VERTEX_TOKEN",
                   base_url=api.base_url, **options)


def assert_observed(obs):
    assert obs.content == "Let me load the skill."
    assert [(c.name, c.input) for c in obs.tool_calls] == [("Skill", {"skill": "csv-summary"})]
    assert (obs.tokens_input, obs.tokens_output) == (1200, 40)
    assert obs.cost_usd == pytest.approx(SONNET_COST)  # the Bedrock/Vertex id, priced
    assert "price_unknown" not in obs.meta


# --- Bedrock ----------------------------------------------------------------------------------

def test_bedrock_invokes_the_model_path_signed_with_sigv4():
    with FakeLLMServer("bedrock") as api:
        api.script.append(ANSWER)
        obs = invoke(bedrock(api))
    [request] = api.api_requests()
    assert request.path == f"/model/{BEDROCK_MODEL}/invoke"
    auth = request.headers["authorization"]
    assert re.fullmatch(r"AWS4-HMAC-SHA256 Credential=AKIAIXFAKE7Q2ZEXAMPLE/\d{8}/us-east-1/"
                        r"bedrock/aws4_request, SignedHeaders=\S+, Signature=[0-9a-f]{64}", auth)
    assert re.fullmatch(r"\d{8}T\d{6}Z", request.headers["x-amz-date"])
    assert request.headers["x-amz-security-token"] == AWS["AWS_SESSION_TOKEN"]
    assert AWS["AWS_SECRET_ACCESS_KEY"] not in json.dumps(request.headers)  # signs, never sent
    assert "anthropic_version" in request.body  # the SDK's, moved from a header
    assert "model" not in request.body and request.body["tools"][0]["name"] == "Skill"
    assert_observed(obs)


def test_bedrock_without_aws_credentials_fails_the_trial_saying_what_to_set(monkeypatch):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name)
    with FakeLLMServer("bedrock") as api, pytest.raises(TrialError) as info:
        invoke(bedrock(api))
    assert info.value.kind == "missing_api_key"
    assert "AWS_ACCESS_KEY_ID" in info.value.message and api.requests == []


def test_a_bedrock_api_key_is_sent_as_a_bearer_token(monkeypatch):
    monkeypatch.setenv("IX_TEST_BEDROCK_KEY", "ABSKix-fake-bedrock-api-key-0c1d2e")
    with FakeLLMServer("bedrock") as api:
        api.script.append(ANSWER)
        assert_observed(invoke(bedrock(api, api_key_env="IX_TEST_BEDROCK_KEY")))
    [request] = api.api_requests()
    assert request.headers["authorization"] == "Bearer ABSKix-fake-bedrock-api-key-0c1d2e"


# --- Vertex -----------------------------------------------------------------------------------

def test_vertex_raw_predicts_at_the_publisher_path_with_the_access_token():
    with FakeLLMServer("vertex") as api:
        api.script.append(ANSWER)
        obs = invoke(vertex(api))
    [request] = api.api_requests()
    assert request.path == ("/v1/projects/ix-test-project/locations/us-east5/publishers/"
                            f"anthropic/models/{VERTEX_MODEL}:rawPredict")
    assert request.headers["authorization"] == f"Bearer {VERTEX_TOKEN}"
    assert "anthropic_version" in request.body
    assert "model" not in request.body
    assert_observed(obs)


def test_a_missing_vertex_token_names_the_variable(monkeypatch):
    monkeypatch.delenv("IX_TEST_VERTEX_TOKEN")
    with FakeLLMServer("vertex") as api, pytest.raises(TrialError) as info:
        invoke(vertex(api))
    assert info.value.kind == "missing_api_key" and "IX_TEST_VERTEX_TOKEN" in info.value.message


# --- Gemini -----------------------------------------------------------------------------------

def gemini(api, **options):
    spec = {"kind": "gemini", "model": "gemini-2.5-flash", "base_url": api.base_url,
            "api_key_env": "IX_TEST_GEMINI_KEY", "backoff_s": 0.0, **options}
    return build_runtime(spec, RuntimeContext(target_skill="csv-summary"))


def test_gemini_generates_content_with_the_api_key_header_and_the_skill_declared():
    with FakeLLMServer("gemini") as api:
        api.script.append(ANSWER)
        obs = invoke(gemini(api, system="Be brief.", temperature=0.2))
        url = api.url
    [request] = api.api_requests()
    assert request.path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert request.headers["x-goog-api-key"] == GEMINI_KEY
    body = request.body
    [first] = body["contents"]
    assert first["role"] == "user" and first["parts"][0]["text"].startswith("<system-reminder>")
    assert first["parts"][1]["text"] == CASE.prompt
    [declaration] = body["tools"][0]["functionDeclarations"]
    assert declaration["name"] == "Skill" and "skill" in declaration["parameters_json_schema"][
        "properties"]
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "AUTO"}}
    assert body["systemInstruction"]["parts"] == [{"text": "Be brief."}]
    assert body["generationConfig"] == {"maxOutputTokens": 1024, "temperature": 0.2}
    assert obs.content == "Let me load the skill."
    assert [(c.name, c.input) for c in obs.tool_calls] == [("Skill", {"skill": "csv-summary"})]
    assert (obs.tokens_input, obs.tokens_output) == (1200, 40)
    assert obs.cost_usd == pytest.approx(1200 * 0.30 / 1e6 + 40 * 2.50 / 1e6)
    assert obs.meta["stop_reason"] == "STOP" and "price_unknown" not in obs.meta
    request_trace, _ = obs.trace
    assert request_trace["url"] == f"{url}/v1beta/models/gemini-2.5-flash:generateContent"
    assert request_trace["body"] == body  # what the trace says was sent, was sent
    assert GEMINI_KEY not in json.dumps(obs.trace) + obs.model_dump_json()


def test_gemini_cached_tokens_bill_at_the_cache_rate():
    with FakeLLMServer("gemini") as api:
        api.script.append(Reply(text="ok", input_tokens=200, cache_read_tokens=1000))
        obs = invoke(gemini(api))
    assert obs.tokens_input == 1200 and obs.meta["cached_tokens"] == 1000
    assert obs.cost_usd == pytest.approx(200 * 0.30 / 1e6 + 1000 * 0.03 / 1e6 + 40 * 2.5 / 1e6)


def test_gemini_history_is_sent_as_model_turns_with_function_calls_answered():
    turns = (Turn(role="user", content="Hi"),
             Turn(role="assistant", content="", tool_calls=(
                 HistoryToolCall(name="Read", input={"path": "a.csv"}, result="x,y"),)))
    case = EvalCase(id="h", prompt="Now summarize it", expectation="must_trigger",
                    history=turns)
    with FakeLLMServer("gemini") as api:
        invoke(gemini(api), case)
    contents = api.api_requests()[0].body["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    assert contents[1]["parts"] == [{"functionCall": {"name": "Read", "args": {"path": "a.csv"}}}]
    assert contents[2]["parts"][0] == {"functionResponse": {"name": "Read",
                                                            "response": {"result": "x,y"}}}
    assert contents[2]["parts"][1] == {"text": "Now summarize it"}


def test_gemini_rate_limits_are_retried_and_bad_requests_are_not():
    with FakeLLMServer("gemini") as api:
        api.script.extend([http_error(429, message="Resource exhausted"), ANSWER])
        assert invoke(gemini(api)).meta["retries"] == 1
        api.script.append(http_error(400, message=f"API key {GEMINI_KEY} not valid"))
        with pytest.raises(TrialError) as info:
            invoke(gemini(api))
    assert info.value.kind == "bad_request" and GEMINI_KEY not in info.value.message


def test_gemini_reads_google_api_key_when_gemini_api_key_is_unset(monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", GEMINI_KEY)
    with FakeLLMServer("gemini") as api:
        spec = {"kind": "gemini", "model": "gemini-2.5-pro", "base_url": api.base_url}
        invoke(build_runtime(spec, RuntimeContext()))
    assert api.api_requests()[0].headers["x-goog-api-key"] == GEMINI_KEY


# --- options ----------------------------------------------------------------------------------

@pytest.mark.parametrize("provider", ["bedrock", "vertex"])
def test_batches_are_the_anthropic_apis_only(provider):
    with pytest.raises(ConfigError) as info:
        runtime(provider=provider, model="claude-sonnet-4-5", batch=True)
    assert "batch" in info.value.message and f"provider: {provider}" in info.value.message


@pytest.mark.parametrize("options", [{"aws_region": "us-east-1"},
                                     {"provider": "bedrock", "project_id": "p"},
                                     {"provider": "vertex", "aws_region": "us-east-1"}])
def test_an_option_of_another_provider_is_refused(options):
    with pytest.raises(ConfigError, match="is an option of provider"):
        runtime(model="claude-sonnet-4-5", **options)


def test_the_anthropic_api_stays_the_default_with_its_key():
    rt = runtime(model="claude-sonnet-4-5")
    assert rt.options.provider == "anthropic" and rt.options.api_key_env == "ANTHROPIC_API_KEY"


# --- a whole run: nothing secret is written ---------------------------------------------------

def test_a_run_on_bedrock_vertex_and_gemini_writes_no_credential(lab: Path, tmp_path: Path):
    with FakeLLMServer("bedrock", router=lambda r: skill_call("csv-summary")) as aws, \
            FakeLLMServer("vertex", router=lambda r: skill_call("csv-summary")) as gcp, \
            FakeLLMServer("gemini", router=lambda r: skill_call("csv-summary")) as google:
        write(lab / "skills/csv-summary/SKILL.md", "---\nname: csv-summary\ndescription: "
              "Summarize CSV files. Use for a .csv file.\n---\n# CSV summary\n")
        d = lab / "clouds"
        write(d / "experiment.yaml", f"""
            name: clouds
            trials: 2
            sensor: {{kind: activation, skill: csv-summary}}
            subjects:
              - name: bedrock
                skills: [csv-summary]
                runtime: {{kind: anthropic, provider: bedrock, model: "{BEDROCK_MODEL}",
                           aws_region: us-east-1, base_url: "{aws.base_url}", backoff_s: 0}}
              - name: vertex
                skills: [csv-summary]
                runtime: {{kind: anthropic, provider: vertex, model: "{VERTEX_MODEL}",
                           project_id: ix-test-project, region: us-east5,
                           api_key_env: IX_TEST_VERTEX_TOKEN, base_url: "{gcp.base_url}",
                           backoff_s: 0}}
              - name: gemini
                skills: [csv-summary]
                runtime: {{kind: gemini, model: gemini-2.5-flash, base_url: "{google.base_url}",
                           api_key_env: IX_TEST_GEMINI_KEY, backoff_s: 0}}
            """)
        case(d, "must-001", "must_trigger", "Summarize sales.csv: row counts and means.")
        env = {**AWS, "IX_TEST_VERTEX_TOKEN": VERTEX_TOKEN, "IX_TEST_GEMINI_KEY": GEMINI_KEY}
        result = ix_in_process("run", "--lab", str(lab), "--json", cwd=tmp_path, env=env)
        assert result.code == 0, result.output
        assert len(aws.api_requests()) == len(gcp.api_requests()) == 2
        assert len(google.api_requests()) == 2
    records = [json.loads(x) for x in (d / "results" / "trials.jsonl").read_text().splitlines()]
    assert {r["subject"] for r in records} == {"bedrock", "vertex", "gemini"}
    for record in records:
        assert record["error"] is None, record
        assert record["reading"]["passed"] is True, record  # the Skill call, activation
        assert record["observation"]["cost_usd"] == pytest.approx(
            SONNET_COST if record["subject"] != "gemini" else 1200 * 0.3 / 1e6 + 40 * 2.5 / 1e6)
    files = every_text(lab)
    assert any(".jsonl.gz" in name for name in files), "no trace was written"
    for secret in (AWS["AWS_SECRET_ACCESS_KEY"], AWS["AWS_SESSION_TOKEN"], VERTEX_TOKEN,
                   GEMINI_KEY):
        assert [p for p, text in files.items() if secret in text] == []
        assert secret not in result.output
