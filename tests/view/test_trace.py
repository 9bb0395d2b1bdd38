"""The trace page's events, from each transcript shape ix's runtimes write."""

import json
from pathlib import Path

from ix.view.trace import trace_events

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "claude-stream"


def lines(name: str) -> list[object]:
    return [json.loads(line) for line in
            (FIXTURES / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def test_claude_code_lines_become_tool_calls_results_text_and_the_result():
    events = trace_events(lines("multi_turn_bash_read.jsonl"))
    kinds = [e.kind for e in events]
    assert kinds[0] == "system" and kinds[-1] == "result"
    calls = [e for e in events if e.kind == "tool_call"]
    assert [c.title for c in calls] == ["tool call: Bash", "tool call: Read"]
    assert json.loads(calls[0].data or "{}")["command"] == "ls"
    results = [e for e in events if e.kind == "tool_result"]
    assert [r.error for r in results] == [False, True]          # the failed Read is marked
    final = events[-1]
    assert ("turns", "3") in final.facts and any(label == "cost USD" for label, _ in final.facts)
    assert all(e.raw for e in events)                            # one event per line here


def test_api_retries_and_synthetic_errors_are_errors():
    events = trace_events(lines("error_api_529_with_retry.jsonl"))
    assert any(e.kind == "retry" and e.error for e in events)
    assert any(e.kind == "error" and e.error for e in events)
    assert events[-1].kind == "result" and events[-1].error


def test_anthropic_request_retry_and_response():
    trace = [
        {"type": "request", "url": "https://api.example/v1/messages",
         "body": {"model": "m", "system": "be brief", "tools": [{"name": "Skill"}],
                  "messages": [{"role": "user", "content": "Summarize data.csv"}]}},
        {"type": "retry", "retry": 1, "kind": "overloaded", "message": "529",
         "retry_after_s": 1.5},
        {"type": "response", "status": 200, "body": {
            "model": "m", "stop_reason": "tool_use",
            "usage": {"input_tokens": 10, "output_tokens": 5},
            "content": [{"type": "text", "text": "Using the skill."},
                        {"type": "tool_use", "id": "t1", "name": "Skill",
                         "input": {"skill": "csv-summary"}}]}},
    ]
    events = trace_events(trace)
    assert [e.kind for e in events] == ["request", "text", "text", "retry", "response", "text",
                                        "tool_call"]
    assert ("tools", "Skill") in events[0].facts
    assert events[3].error and ("after s", "1.5") in events[3].facts
    assert ("input tokens", "10") in events[4].facts
    assert json.loads(events[-1].data or "{}") == {"skill": "csv-summary"}
    assert events[-1].raw == ""  # the response line is shown once, under its first event


def test_openai_choices_with_tool_calls():
    trace = [{"type": "response", "status": 200, "body": {
        "usage": {"prompt_tokens": 7, "completion_tokens": 3},
        "choices": [{"message": {"content": "ok", "tool_calls": [
            {"function": {"name": "Skill", "arguments": "{\"skill\": \"x\"}"}}]}}]}}]
    events = trace_events(trace)
    assert [e.kind for e in events] == ["response", "text", "tool_call"]
    assert ("prompt tokens", "7") in events[0].facts
    assert json.loads(events[2].data or "{}") == {"skill": "x"}


def test_unknown_lines_are_kept_as_their_json():
    events = trace_events([{"type": "telemetry", "x": 1}, "plain text", 42])
    assert [e.kind for e in events] == ["other", "text", "other"]
    assert '"x": 1' in (events[0].data or "")
