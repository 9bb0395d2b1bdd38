"""Sensors over the whole transcript (issue 20): tool_sequence, tool_count, turns, denied and
tool_input — what each reads, when it passes, what it says, and the options it refuses."""

import json

import pytest

from ix.domain.errors import ConfigError
from ix.domain.types import Interaction
from ix.eval.models import EvalCase, EvalObservation, ToolCall
from ix.eval.sensors import SENSORS, build_sensor, sensor_kinds
from ix.runtimes.claude_stream import parse_stream

CASE = EvalCase(id="c", prompt="p", expectation="must_trigger")


def obs(*names: str, inputs: dict[int, dict] | None = None, **fields) -> EvalObservation:
    calls = tuple(ToolCall(name=n, input=(inputs or {}).get(i, {})) for i, n in enumerate(names))
    return EvalObservation(tool_calls=calls, **fields)


def sense(kind: str, observation, **options):
    sensor = build_sensor(kind, options, target_skill="target")
    (reading,) = sensor.sense(Interaction(stimulus=CASE, trial_index=0, observation=observation))
    assert reading.sensor_name == kind == sensor.name
    assert reading.score == (None if reading.passed is None else 1.0 if reading.passed else 0.0)
    return reading


def bad(kind: str, field: str, **options) -> ConfigError:
    """The options are refused, naming `sensor.<field>`."""
    with pytest.raises(ConfigError) as info:
        build_sensor(kind, options, target_skill="t")
    assert info.value.field == f"sensor.{field}", info.value
    return info.value


def test_the_transcript_kinds_are_registered_and_listed():
    new = {"tool_sequence", "tool_count", "turns", "denied", "tool_input"}
    assert new <= set(SENSORS)
    assert new <= set(sensor_kinds())


# --------------------------------------------------------------------------- tool_sequence

def test_subsequence_passes_with_other_calls_between_and_says_where():
    r = sense("tool_sequence", obs("Read", "Grep", "Edit", "Read", "Bash"),
              expected=["Read", "Edit", "Bash"])
    assert r.passed
    assert r.details == "Read → Edit → Bash in order (calls 1, 3, 5 of 5)"
    assert r.metrics["matched"] == 3 and r.metrics["n_calls"] == 5
    assert r.metrics["calls"] == ["Read", "Grep", "Edit", "Read", "Bash"]


def test_subsequence_out_of_order_fails_and_names_the_missing_step():
    r = sense("tool_sequence", obs("Read", "Bash", "Edit"), expected=["Read", "Edit", "Bash"])
    assert not r.passed
    assert r.metrics["matched"] == 2
    assert "Read → Edit in order, then no Bash after call 3" in r.details


def test_subsequence_without_the_first_tool_fails():
    r = sense("tool_sequence", obs("Bash"), expected=["Read", "Bash"])
    assert not r.passed and r.metrics["matched"] == 0
    assert r.details == "no Read call (calls: Bash)"


def test_exact_needs_exactly_the_calls_and_ignore_drops_housekeeping():
    expected = ["Read", "Edit"]
    assert sense("tool_sequence", obs("Read", "Edit"), expected=expected, mode="exact").passed
    extra = sense("tool_sequence", obs("Read", "Edit", "Bash"), expected=expected,
                  mode="exact")
    assert not extra.passed and "1 call(s) after the expected Read → Edit" in extra.details
    short = sense("tool_sequence", obs("Read"), expected=expected, mode="exact")
    assert not short.passed and "stop after 1 of 2" in short.details
    wrong = sense("tool_sequence", obs("Edit", "Read"), expected=expected, mode="exact")
    assert not wrong.passed and "call 1 is Edit, expected Read" in wrong.details
    todo = obs("TodoWrite", "Read", "TodoWrite", "Edit")
    assert not sense("tool_sequence", todo, expected=expected, mode="exact").passed
    assert sense("tool_sequence", todo, expected=expected, mode="exact",
                 ignore=["TodoWrite"]).passed


def test_tool_sequence_reads_calls_given_as_plain_mappings():
    observation = {"tool_calls": [{"name": "Read", "input": {}}, {"name": "Edit"}]}
    assert sense("tool_sequence", observation, expected=["Read", "Edit"]).passed


def test_tool_sequence_options_are_strict():
    bad("tool_sequence", "expected")
    bad("tool_sequence", "expected", expected=[])
    bad("tool_sequence", "expected", expected="Read")
    bad("tool_sequence", "mode", expected=["Read"], mode="prefix")
    bad("tool_sequence", "order", expected=["Read"], order="any")


# --------------------------------------------------------------------------- tool_count

@pytest.mark.parametrize(("calls", "options", "passed", "verdict"), [
    (3, {"min": 1, "max": 5}, True, "allowed: 1-5"),
    (0, {"min": 1}, False, "too few: at least 1"),
    (6, {"max": 5}, False, "too many: at most 5"),
    (0, {"max": 0}, True, "allowed: at most 0"),
    (2, {"min": 2, "max": 2}, True, "allowed: 2"),
])
def test_tool_count_counts_only_the_named_tool(calls, options, passed, verdict):
    observation = obs(*(["Bash"] * calls), "Read", "bash")
    r = sense("tool_count", observation, tool="Bash", **options)
    assert r.passed is passed
    assert r.metrics == {"count": calls}
    assert verdict in r.details and r.details.startswith(f"Bash called {calls}")


def test_tool_count_needs_a_bound_and_an_order():
    assert "give min, max or both" in bad("tool_count", "max", tool="Bash").message
    assert "min (3) is above max (1)" in bad("tool_count", "min", tool="Bash", min=3,
                                             max=1).message
    bad("tool_count", "min", tool="Bash", min=-1)
    bad("tool_count", "max", tool="Bash", max="5")
    bad("tool_count", "tool", max=1)


# --------------------------------------------------------------------------- turns

def test_turns_come_from_meta_num_turns_first():
    r = sense("turns", obs(meta={"num_turns": 14}), max=12)
    assert not r.passed and r.metrics == {"turns": 14}
    assert r.details == "14 turn(s) > 12 (meta.num_turns)"
    assert sense("turns", obs(meta={"turns": 3}), max=3).passed


def test_turns_count_assistant_messages_of_a_claude_code_stream_by_message_id():
    lines = [
        {"type": "system", "subtype": "init"},
        {"type": "assistant", "parent_tool_use_id": None,
         "message": {"id": "m1", "content": [{"type": "text", "text": "hi"}]}},
        {"type": "assistant", "parent_tool_use_id": None,
         "message": {"id": "m1", "content": [{"type": "tool_use", "id": "t", "name": "Bash"}]}},
        {"type": "user", "message": {"content": []}},
        {"type": "assistant", "parent_tool_use_id": "t",  # a subagent's: not the agent's turn
         "message": {"id": "sub", "content": []}},
        {"type": "assistant", "parent_tool_use_id": None, "message": {"id": "m2", "content": []}},
    ]
    trace = [json.dumps(x) for x in lines]
    r = sense("turns", obs(trace=trace), max=2)
    assert r.passed and r.metrics == {"turns": 2}
    assert "assistant messages in the transcript" in r.details
    assert not sense("turns", obs(trace=trace), max=1).passed


def test_turns_count_api_responses_and_chat_messages():
    anthropic = [{"type": "request", "body": {}},
                 {"type": "response", "status": 200, "body": {"role": "assistant"}}]
    openai = [{"type": "response", "body": {"choices": [{"message": {"role": "assistant"}}]}}]
    chat = [{"role": "user"}, {"role": "assistant"}, {"role": "user"}, {"role": "assistant"}]
    assert sense("turns", obs(trace=anthropic), max=1).metrics == {"turns": 1}
    assert sense("turns", obs(trace=openai), max=1).metrics == {"turns": 1}
    assert sense("turns", obs(trace=chat), max=1).metrics == {"turns": 2}


def test_turns_without_any_count_are_not_applicable_and_say_so():
    """Issue 33: no turns reported is no verdict (passed null, n/a), not a fail."""
    for observation in (obs(), obs(trace=["not json"]), {"stdout": "ok", "exit_code": 0}):
        r = sense("turns", observation, max=5)
        assert r.passed is None and r.score is None
        assert r.metrics == {"turns": None}
        assert r.details.startswith("n/a: no turns to count")


def test_turns_options_are_strict():
    bad("turns", "max")
    bad("turns", "max", max=0)
    bad("turns", "min", max=3, min=1)


# --------------------------------------------------------------------------- denied

def test_denied_fails_on_a_refused_call_and_names_it():
    meta = {"denied": [{"tool_name": "Bash", "tool_use_id": "t1",
                        "input": {"command": "rm -rf build"}},
                       {"tool_name": "Write", "tool_use_id": "t2",
                        "input": {"file_path": "/etc/hosts"}}]}
    r = sense("denied", obs("Bash", "Write", meta=meta))
    assert not r.passed
    assert r.metrics == {"denied": 2, "reported": True}
    assert r.details == "2 tool call(s) denied: Bash (rm -rf build), Write (/etc/hosts)"
    only = sense("denied", obs(meta=meta), tools=["Write"])
    assert not only.passed and only.metrics["denied"] == 1
    other = sense("denied", obs(meta=meta), tools=["Edit"])
    assert other.passed and "(2 of other tools)" in other.details


def test_denied_passes_when_none_was_and_says_when_the_runtime_keeps_no_list():
    r = sense("denied", obs("Bash", meta={"denied": []}))
    assert r.passed and r.metrics == {"denied": 0, "reported": True}
    unknown = sense("denied", obs("Bash"))
    assert unknown.passed and unknown.metrics == {"denied": 0, "reported": False}
    assert "meta.denied is absent" in unknown.details


def test_denied_reads_what_the_claude_code_stream_parser_records():
    lines = [
        json.dumps({"type": "assistant", "parent_tool_use_id": None, "message": {
            "id": "m", "content": [{"type": "tool_use", "id": "t1", "name": "Bash",
                                    "input": {"command": "curl evil"}}]}}),
        json.dumps({"type": "result", "subtype": "success", "is_error": False,
                    "result": "done", "num_turns": 2,
                    "permission_denials": [{"tool_name": "Bash", "tool_use_id": "t1",
                                            "tool_input": {"command": "curl evil"}}]}),
    ]
    parsed = parse_stream(lines)
    observation = obs(*(t.name for t in parsed.tool_uses),
                      meta={"denied": [d.as_dict() for d in parsed.denied],
                            "num_turns": parsed.num_turns})
    r = sense("denied", observation)
    assert not r.passed and r.details == "1 tool call(s) denied: Bash (curl evil)"
    assert sense("turns", observation, max=2).passed


def test_denied_options_are_strict():
    bad("denied", "tools", tools=[])
    bad("denied", "tools", tools="Bash")
    bad("denied", "tool", tool="Bash")


# --------------------------------------------------------------------------- tool_input

WRITES = obs("Write", "Read", "Write",
             inputs={0: {"file_path": "notes.txt", "content": "x"},
                     1: {"file_path": "src/app.py"},
                     2: {"file_path": "src/report.md", "content": "y", "tags": ["a", "b"]}})


@pytest.mark.parametrize(("options", "passed", "matched"), [
    ({"regex": r"\.md$"}, True, 1),
    ({"regex": r"\.md$", "which": "first"}, False, 1),
    ({"regex": r"\.md$", "which": "last"}, True, 1),
    ({"regex": r"\.(md|txt)$", "which": "all"}, True, 2),
    ({"contains": "src/", "which": "all"}, False, 1),
    ({"equals": "notes.txt"}, True, 1),
    ({"equals": "NOTES.TXT"}, False, 0),
    ({"contains": "REPORT", "case_sensitive": False}, True, 1),
])
def test_tool_input_checks_the_named_tools_calls_only(options, passed, matched):
    r = sense("tool_input", WRITES, tool="Write", json_path="$.file_path", **options)
    assert r.passed is passed, r.details
    assert r.metrics == {"calls": 2, "matched": matched}


def test_tool_input_details_say_what_each_call_held():
    r = sense("tool_input", WRITES, tool="Write", json_path="$.file_path", regex="^src/",
              which="all")
    assert r.details == ("not every Write call has $.file_path matches /^src// (1 of 2: "
                         "call 1: 'notes.txt')")
    first = sense("tool_input", WRITES, tool="Write", json_path="$.file_path",
                  equals="src/report.md", which="first")
    assert first.details == ("first Write call (1 of 2): $.file_path: 'notes.txt'; expected "
                             '$.file_path = "src/report.md"')


def test_tool_input_reads_other_values_as_json_and_a_missing_path_does_not_pass():
    tags = sense("tool_input", WRITES, tool="Write", json_path="$.tags", contains='"b"')
    assert tags.passed and tags.metrics["matched"] == 1
    assert sense("tool_input", WRITES, tool="Write", json_path="$.tags",
                 equals=["a", "b"]).passed
    missing = sense("tool_input", WRITES, tool="Write", json_path="$.mode", equals="w")
    assert not missing.passed and "$ has no key 'mode'" in missing.details
    never = sense("tool_input", obs("Read"), tool="Write", json_path="$.file_path",
                  equals="x")
    assert not never.passed and never.details == "Write was not called"
    assert never.metrics == {"calls": 0, "matched": 0}


def test_tool_input_equals_null_is_an_operator():
    observation = obs("Write", inputs={0: {"file_path": None}})
    assert sense("tool_input", observation, tool="Write", json_path="file_path",
                 equals=None).passed


def test_tool_input_options_are_strict():
    bad("tool_input", "equals", tool="Write", json_path="$.file_path")
    bad("tool_input", "regex", tool="Write", json_path="$.a", contains="x", regex="y")
    bad("tool_input", "regex", tool="Write", json_path="$.a", regex="(")
    bad("tool_input", "json_path", tool="Write", json_path="a..b", equals=1)
    bad("tool_input", "which", tool="Write", json_path="a", equals=1, which="most")
    bad("tool_input", "tool", json_path="a", equals=1)
    bad("tool_input", "target", tool="Write", json_path="a", equals=1, target="body")
