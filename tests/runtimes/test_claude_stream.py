"""The stream-json parser over transcripts the real Claude Code CLI 2.1.332 printed.

The fixtures (tests/fixtures/claude-stream/, README there) are verbatim CLI stdout against a
loopback Messages API; each test pins what ix must read from one of them.
"""

import json
import random
from pathlib import Path

import pytest

from ix.runtimes.claude_stream import StreamParser, parse_stream

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "claude-stream"
ALL = sorted(p.name for p in FIXTURES.iterdir() if p.suffix in (".jsonl", ".json"))
FULL_SKILLS = ("csv-summary", "git-release-notes", "deep-research", "dataviz", "update-config",
               "verify", "debug", "code-review", "simplify", "batch",
               "fewer-permission-prompts", "doctor", "loop", "claude-api",
               "workflow-authoring", "run", "run-skill-generator", "plugin-authoring")
ISOLATED_SKILLS = ("csv-summary", "git-release-notes", "doctor", "plugin-authoring")
CSV_ANSWER = "The CSV has 2 data rows; the mean of `value` is 15."


def parsed(name: str):
    return parse_stream((FIXTURES / name).read_text(encoding="utf-8"))


def lines(name: str) -> list[str]:
    return (FIXTURES / name).read_text(encoding="utf-8").splitlines()


def test_every_fixture_is_covered():
    assert ALL == [
        "error_api_400_prompt_too_long.jsonl", "error_api_529_with_retry.jsonl",
        "json_error_max_turns.json", "json_success.json", "multi_turn_bash_read.jsonl",
        "no_skill_text_only.jsonl", "skill_invoked_allowed.jsonl",
        "skill_invoked_partial_messages.jsonl", "skill_invoked_permission_denied.jsonl",
    ]


def test_skill_invoked_and_allowed():
    r = parsed("skill_invoked_allowed.jsonl")
    assert [(t.name, t.input) for t in r.tool_uses] == [
        ("Skill", {"skill": "csv-summary"}),
        ("Bash", {"command": "head -3 data.csv", "description": "Show first rows of data.csv"}),
    ]
    assert [t.id for t in r.tool_uses] == ["toolu_fake0000", "toolu_fake0001"]
    assert r.skills_invoked == ("csv-summary",)
    assert r.first_tool == "Skill"
    assert r.denied == ()
    assert r.init_skills == ISOLATED_SKILLS
    assert r.text == CSV_ANSWER
    assert (r.tokens_input, r.tokens_output, r.tokens_cache_read, r.tokens_cache_creation) == \
        (3750, 75, 0, 0)
    assert r.tokens_input_total == 3750
    assert r.cost_usd == pytest.approx(0.012375)
    assert (r.duration_ms, r.num_turns, r.subtype, r.terminal_reason) == \
        (331, 4, "success", "completed")
    assert not r.is_error and not r.is_api_error
    assert r.model == "claude-sonnet-4-5" and r.claude_code_version == "2.1.332"
    assert r.has_result and r.bad_lines == 0 and r.api_retries == ()


def test_skill_call_denied_is_still_a_call_and_a_denial():
    r = parsed("skill_invoked_permission_denied.jsonl")
    assert [t.name for t in r.tool_uses] == ["Skill", "Bash"]
    assert r.skills_invoked == ("csv-summary",)
    assert len(r.denied) == 1  # the event and the result's list are one denial
    d = r.denied[0]
    assert (d.tool_name, d.tool_use_id, d.input) == ("Skill", "toolu_fake0010",
                                                     {"skill": "csv-summary"})
    assert d.message and d.message.startswith("Execute skill: csv-summary.")
    assert r.denied_ids == {"toolu_fake0010"} and r.tool_uses[0].id in r.denied_ids
    assert r.init_skills == FULL_SKILLS
    assert not r.is_error and r.num_turns == 3 and r.text == CSV_ANSWER


def test_partial_messages_give_the_same_calls_once():
    r = parsed("skill_invoked_partial_messages.jsonl")
    assert [(t.id, t.name) for t in r.tool_uses] == [("toolu_fake0016", "Skill"),
                                                     ("toolu_fake0017", "Bash")]
    assert r.tool_uses[0].input == {"skill": "csv-summary"}
    assert r.skills_invoked == ("csv-summary",)
    assert r.init_skills == ISOLATED_SKILLS
    assert (r.tokens_input, r.tokens_output, r.num_turns) == (6150, 75, 4)
    assert r.text == CSV_ANSWER and r.bad_lines == 0


def test_no_skill_text_only():
    r = parsed("no_skill_text_only.jsonl")
    assert r.tool_uses == () and r.skills_invoked == () and r.first_tool is None
    assert r.text == "2 + 2 = 4." and r.assistant_text == "2 + 2 = 4."
    assert (r.tokens_input, r.tokens_output, r.num_turns) == (1650, 25, 1)
    assert r.cost_usd == pytest.approx(0.005325)
    assert not r.is_error and r.terminal_reason == "completed"


def test_multi_turn_bash_then_read():
    r = parsed("multi_turn_bash_read.jsonl")
    assert [(t.name, t.input) for t in r.tool_uses] == [
        ("Bash", {"command": "ls", "description": "List files"}),
        ("Read", {"file_path": "/home/dev/data.csv"}),
    ]
    assert r.first_tool == "Bash" and r.skills_invoked == () and r.denied == ()
    assert r.num_turns == 3 and r.text == "data.csv has columns name,value and two rows."
    assert not r.is_error  # a tool's error result is not the run's error


def test_api_400_is_an_error_despite_subtype_success():
    r = parsed("error_api_400_prompt_too_long.jsonl")
    assert r.subtype == "success" and r.is_error
    assert r.is_api_error and r.error_status == 400
    assert r.terminal_reason == "prompt_too_long"
    assert r.api_error_type == "invalid_request_error"
    assert len(r.api_errors) == 1
    assert (r.api_errors[0].status, r.api_errors[0].error) == (400, "invalid_request")
    assert r.text.startswith("Prompt is too long")
    assert r.tool_uses == () and r.assistant_text == ""  # the synthetic message is no answer
    assert (r.tokens_input, r.tokens_output, r.cost_usd) == (0, 0, 0.0)


def test_api_529_after_a_retry():
    r = parsed("error_api_529_with_retry.jsonl")
    assert r.is_error and r.is_api_error and r.error_status == 529
    assert r.terminal_reason == "api_error"
    assert len(r.api_retries) == 1
    retry = r.api_retries[0]
    assert (retry.attempt, retry.max_retries, retry.error_status, retry.error) == \
        (1, 1, 529, "overloaded")
    assert retry.retry_delay_ms == 593
    assert r.api_errors[0].error_type == "overloaded_error"
    assert r.text.startswith("API Error: 529 Overloaded")


def test_json_output_max_turns_is_a_limit_not_an_api_error():
    r = parsed("json_error_max_turns.json")
    assert r.has_result and r.init_skills is None and r.model is None
    assert r.subtype == "error_max_turns" and r.is_error and not r.is_api_error
    assert r.terminal_reason == "max_turns" and r.num_turns == 2
    assert r.result_text is None and r.text == ""
    assert r.errors == ("Reached maximum number of turns (1)",)
    assert (r.tokens_input, r.tokens_output) == (1500, 25)


def test_json_output_success():
    r = parsed("json_success.json")
    assert r.has_result and not r.is_error and r.text == "2 + 2 = 4."
    assert (r.tokens_input, r.tokens_output, r.num_turns, r.duration_ms) == (1550, 25, 1, 138)


# --- robustness -----------------------------------------------------------------------------


def test_blank_noise_and_garbage_lines_are_skipped():
    raw = lines("skill_invoked_allowed.jsonl")
    noisy = ["", "   ", "[SandboxDebug] starting", raw[0], "{not json", "[1, 2]", "{\"a\": 1",
             "42", *raw[1:4], "\x00\xff garbage", *raw[4:], ""]
    r = parse_stream(noisy)
    clean = parsed("skill_invoked_allowed.jsonl")
    assert r.tool_uses == clean.tool_uses and r.text == clean.text
    assert r.init_skills == clean.init_skills and r.num_turns == clean.num_turns
    assert r.bad_lines == 2  # "{not json" and "{\"a\": 1"; the rest do not start with "{"


def test_bytes_and_crlf_input():
    data = (FIXTURES / "skill_invoked_permission_denied.jsonl").read_bytes()
    r = parse_stream(data.replace(b"\n", b"\r\n"))
    assert r.skills_invoked == ("csv-summary",) and len(r.denied) == 1


def test_wrong_shapes_do_not_raise():
    events = [
        {"type": "system", "subtype": "init", "skills": "not-a-list"},
        {"type": "assistant", "message": "a string"},
        {"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "Skill",
                                                        "input": "oops"}]},
         "parent_tool_use_id": None},
        {"type": "system", "subtype": "permission_denied", "tool_use_id": 7},
        {"type": "result", "usage": [], "is_error": "yes", "num_turns": "3",
         "permission_denials": [None, {"tool_use_id": "x"}]},
        {"type": "stream_event", "event": None},
        {"type": "unknown_future_event", "whatever": 1},
    ]
    r = parse_stream([json.dumps(e) for e in events])
    assert r.init_skills == ()
    assert [(t.name, t.input) for t in r.tool_uses] == [("Skill", {})]
    assert r.skills_invoked == ()  # no `skill` field to read
    assert [d.tool_use_id for d in r.denied] == ["x"]
    assert r.has_result and not r.is_error and r.num_turns is None


def test_subagent_calls_are_not_the_sessions():
    raw = lines("multi_turn_bash_read.jsonl")
    sub = json.loads(raw[1])
    sub["parent_tool_use_id"] = "toolu_parent"
    raw[1] = json.dumps(sub)
    r = parse_stream(raw)
    assert [t.name for t in r.tool_uses] == ["Read"]


def test_a_killed_partial_run_keeps_the_streamed_call():
    raw = lines("skill_invoked_partial_messages.jsonl")
    # stop right after the input_json_delta of the Skill block, before its assistant line
    cut = next(i for i, line in enumerate(raw) if "input_json_delta" in line)
    r = parse_stream(raw[: cut + 1])
    assert not r.has_result
    assert [(t.id, t.name, t.input) for t in r.tool_uses] == [
        ("toolu_fake0016", "Skill", {"skill": "csv-summary"})]
    assert r.skills_invoked == ("csv-summary",)
    # and before the delta: the call is known, its input not
    r = parse_stream(raw[:cut])
    assert [(t.name, t.input) for t in r.tool_uses] == [("Skill", {})]


def test_without_a_result_tokens_come_from_the_messages():
    raw = [line for line in lines("skill_invoked_allowed.jsonl") if '"type":"result"' not in line]
    r = parse_stream(raw)
    assert not r.has_result and not r.is_error and r.num_turns is None
    assert r.result_text is None and r.text == CSV_ANSWER  # the assistant's own words
    # one usage per message id (the per-block lines repeat it), as streamed: output 1 each
    assert (r.tokens_input, r.tokens_output) == (1200 + 1250 + 1300, 3)
    assert r.skills_invoked == ("csv-summary",)


@pytest.mark.parametrize("name", ALL)
def test_any_truncation_parses(name):
    """A transcript cut anywhere (a crash mid-write) parses to a prefix of the full facts."""
    text = (FIXTURES / name).read_text(encoding="utf-8")
    full = parse_stream(text)
    rng = random.Random(name)
    cuts = sorted({0, len(text), *(rng.randrange(len(text)) for _ in range(60))})
    for cut in cuts:
        r = parse_stream(text[:cut])
        assert r.bad_lines <= 1
        assert [t.id for t in r.tool_uses] == [t.id for t in full.tool_uses][: len(r.tool_uses)]


def test_incremental_feed_equals_whole_parse():
    parser = StreamParser()
    for line in lines("skill_invoked_permission_denied.jsonl"):
        parser.feed(line.encode())
    assert parser.result() == parsed("skill_invoked_permission_denied.jsonl")
