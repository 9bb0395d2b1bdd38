"""An API subject with tools of its own (issue 37, DESIGN.md §11), end to end against a
loopback Messages API and Chat Completions API whose scripted model drives two tools.

The model asks `lookup` (a real program: the call's input as JSON on stdin) for a city's
temperature, then `convert` (a Python callable) for it in Fahrenheit, then answers with both
results. Tested: the loop, every call with its input in the observation, the results the
model was sent, `meta.turns`, tokens and cost summed over the requests, the transcript
sensors on it, a tool's failure seen by the model (not a crash), `max_turns` and per-trial
limits, the cache (a replayed run calls neither the model nor the tools) and resume.
"""

import json
from pathlib import Path

import pytest

from conftest import ix_in_process, run_ix, write
from ix.runtimes.tool_loop import skill_text
from runtimes.fake_llm_servers import (
    FAKE_KEY,
    INPUT_TOKENS,
    OUTPUT_TOKENS,
    FakeLLMServer,
    Reply,
    Request,
    text_reply,
    tool_reply,
)

KEY_ENV = "IX_TEST_KEY"

LOOKUP = """
import json, sys
city = json.load(sys.stdin)["city"]
with open(__file__ + ".calls", "a") as f:
    f.write(city + "\\n")
if city == "Atlantis":
    print("no such city", file=sys.stderr)
    sys.exit(3)
print(json.dumps({"city": city, "celsius": 21}))
"""


def results_so_far(request: Request) -> list[str]:
    """The tool results the model has been sent, in order (either API's shape)."""
    out: list[str] = []
    for m in request.body["messages"]:
        if m.get("role") == "tool":
            out.append(m["content"])
        elif m.get("role") == "user" and isinstance(m.get("content"), list):
            out += [b["content"] for b in m["content"] if b.get("type") == "tool_result"]
    return out


def agent(request: Request) -> Reply:
    """The scripted model: lookup, then convert, then the answer."""
    seen = results_so_far(request)
    city = "Atlantis" if "Atlantis" in json.dumps(request.body["messages"][0]) else "Paris"
    if not seen:
        return tool_reply("lookup", {"city": city}, preamble="Let me look.")
    if len(seen) == 1:
        if seen[0].startswith("error"):
            return text_reply(f"The lookup failed: {seen[0]}")
        return tool_reply("convert", {"celsius": json.loads(seen[0])["celsius"]})
    return text_reply(f"It is {json.loads(seen[0])['celsius']} C, that is {seen[1]} F.")


def lab_with_tools(lab: Path, provider: str, api: FakeLLMServer, extra: str = "") -> Path:
    exp = lab / "agent"
    write(exp / "lookup.py", LOOKUP)
    model = "claude-sonnet-4-5" if provider == "anthropic" else "gpt-4o-mini"
    write(exp / "experiment.yaml", f"""
        name: agent
        trials: 1
        sensors:
          - {{kind: tool_sequence, expected: [lookup, convert]}}
          - {{kind: turns, max: 3}}
        runtime:
          kind: {provider}
          model: {model}
          base_url: {api.base_url}
          api_key_env: {KEY_ENV}
          backoff_s: 0
          tools:
            - name: lookup
              description: The temperature in a city now, in Celsius.
              input_schema: {{type: object, properties: {{city: {{type: string}}}},
                              required: [city]}}
              run: {{kind: command, argv: [python3, {json.dumps(str(exp / "lookup.py"))}]}}
            - name: convert
              description: Celsius to Fahrenheit.
              input_schema: {{type: object, properties: {{celsius: {{type: number}}}}}}
              run: {{kind: python, function: "runtimes.agent_tools:fahrenheit"}}
        {extra}
        """)
    write(exp / "cases" / "paris.md", "---\nexpectation: must_trigger\n---\n"
          "How warm is it in Paris, in Fahrenheit?\n")
    write(exp / "cases" / "atlantis.md", "---\nexpectation: must_trigger\n---\n"
          "How warm is it in Atlantis?\n")
    return exp


def lines(exp: Path) -> dict[str, dict]:
    return {x["probe_id"]: x for x in map(json.loads, (exp / "results" / "trials.jsonl")
                                          .read_text().splitlines())}


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_the_model_drives_two_tools_and_the_transcript_sensors_read_it(lab: Path,
                                                                       provider: str):
    with FakeLLMServer(provider, router=agent) as api:
        exp = lab_with_tools(lab, provider, api)
        # the real `ix` for one provider (its python tool importable from tests/), the other
        # in process
        command = run_ix if provider == "anthropic" else ix_in_process
        r = command("run", "--lab", str(lab), "--cache",
                    env={KEY_ENV: FAKE_KEY, "PYTHONPATH": str(Path(__file__).parents[1])})
        assert r.code in (0, 1), r.output
        requests = api.api_requests()
        by = lines(exp)
        paris = by["paris"]
        assert paris["error"] is None
        obs = paris["observation"]
        assert obs["content"] == "It is 21 C, that is 69.8 F."
        assert obs["tool_calls"] == [{"name": "lookup", "input": {"city": "Paris"}},
                                     {"name": "convert", "input": {"celsius": 21}}]
        assert obs["meta"]["turns"] == 3 and obs["meta"]["tool_results"] == 2
        assert obs["tokens_input"] == 3 * INPUT_TOKENS
        assert obs["tokens_output"] == 3 * OUTPUT_TOKENS
        readings = {r["sensor_name"]: r["passed"] for r in paris["readings"]}
        assert readings == {"tool_sequence": True, "turns": True}
        # the tools were offered with their schemas, the results sent back
        assert len([q for q in requests if results_so_far(q) ==
                    ['{"city": "Paris", "celsius": 21}', "69.8"]]) == 1
        offered = requests[0].body["tools"]
        names = [t.get("name") or t["function"]["name"] for t in offered]
        assert names == ["lookup", "convert"]
        # a tool that fails: the model is told, and answers; the trial is no error
        atlantis = by["atlantis"]
        assert atlantis["error"] is None
        assert atlantis["observation"]["content"] == ("The lookup failed: error: exit 3: "
                                                      "no such city")
        assert atlantis["observation"]["meta"]["turns"] == 2
        assert {r["sensor_name"]: r["passed"] for r in atlantis["readings"]}[
            "tool_sequence"] is False

        # the same run from the cache: neither the model nor the tools are called again
        calls = (exp / "lookup.py.calls").read_text()
        again = ix_in_process("run", "--lab", str(lab), "--cache", env={KEY_ENV: FAKE_KEY})
        assert again.code in (0, 1), again.output
        assert len(api.api_requests()) == len(requests) == 5
        assert (exp / "lookup.py.calls").read_text() == calls
        assert sorted(calls.split()) == ["Atlantis", "Paris"]


def test_max_turns_and_the_limits_stop_the_loop_and_say_why(lab: Path):
    with FakeLLMServer("anthropic", router=agent) as api:
        exp = lab_with_tools(lab, "anthropic", api, extra="")
        yaml = (exp / "experiment.yaml").read_text()
        (exp / "experiment.yaml").write_text(yaml.replace("backoff_s: 0",
                                                          "backoff_s: 0\n  max_turns: 2"))
        r = ix_in_process("run", "--lab", str(lab), env={KEY_ENV: FAKE_KEY})
        assert r.code in (0, 1), r.output
        paris = lines(exp)["paris"]["observation"]
        assert paris["meta"]["turns"] == 2 and paris["meta"]["limit"] == "max_turns"
        assert [c["name"] for c in paris["tool_calls"]] == ["lookup", "convert"]

        (exp / "experiment.yaml").write_text(yaml.replace(
            "backoff_s: 0", f"backoff_s: 0\n  limits: {{tokens: {INPUT_TOKENS + 1}}}"))
        (exp / "results" / "trials.jsonl").unlink()
        r = ix_in_process("run", "--lab", str(lab), env={KEY_ENV: FAKE_KEY})
        assert r.code in (0, 1), r.output
        paris = lines(exp)["paris"]["observation"]
        assert paris["meta"]["turns"] == 1 and paris["meta"]["limit"] == "tokens"


def test_a_run_stopped_early_resumes_with_its_agent_trials(lab: Path):
    with FakeLLMServer("openai", router=agent) as api:
        exp = lab_with_tools(lab, "openai", api)
        first = ix_in_process("run", "--lab", str(lab), "--max-trials", "1",
                              env={KEY_ENV: FAKE_KEY})
        assert first.code == 130 and len(lines(exp)) == 1, first.output
        r = ix_in_process("run", "--lab", str(lab), "--resume", env={KEY_ENV: FAKE_KEY})
        assert r.code in (0, 1), r.output
        by = lines(exp)
        assert sorted(by) == ["atlantis", "paris"]
        assert [c["name"] for c in by["paris"]["observation"]["tool_calls"]] == [
            "lookup", "convert"]
        assert len(api.api_requests()) == 5  # 3 for Paris, 2 for Atlantis: none twice


def test_bad_tools_are_refused_naming_the_field(lab: Path):
    with FakeLLMServer("anthropic", router=agent) as api:
        exp = lab_with_tools(lab, "anthropic", api)
        yaml = (exp / "experiment.yaml").read_text()
        (exp / "experiment.yaml").write_text(yaml.replace("name: convert", "name: con vert"))
        r = run_ix("validate", "--lab", str(lab))
        assert r.code == 2 and "tools" in r.stderr and "name" in r.stderr, r.output
        assert "Traceback" not in r.stderr
        (exp / "experiment.yaml").write_text(yaml.replace("backoff_s: 0",
                                                          "backoff_s: 0\n  batch: true"))
        r = ix_in_process("validate", "--lab", str(lab))
        assert r.code == 2 and "batch" in r.output, r.output


def test_a_call_of_the_skill_tool_loads_the_skill_file(tmp_path: Path):
    from ix.domain.types import Subject

    skill = write(tmp_path / "SKILL.md", "---\nname: s\n---\n# Use me\n")
    subject = Subject(name="x", config={"skills": [{"name": "s", "path": str(skill)}]})
    assert skill_text(subject, "s") == skill.read_text()
    assert skill_text(subject, "other") == "Launching skill: other"
