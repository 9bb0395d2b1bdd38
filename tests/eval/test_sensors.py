"""Sensors by kind: what each reads, when it passes, and the options it refuses."""

import pytest

from ix.domain.errors import ConfigError
from ix.domain.types import Interaction
from ix.eval.json_path import parse_json_path
from ix.eval.models import EvalCase, EvalObservation, ToolCall
from ix.eval.sensors import (
    SENSORS,
    build_sensor,
    json_equal,
    resolve_json_path,
    sensor_kinds,
)

CASE = EvalCase(id="c", prompt="p", expectation="must_trigger")


def sense(kind: str, observation, **options):
    sensor = build_sensor(kind, options, target_skill="target")
    (reading,) = sensor.sense(Interaction(stimulus=CASE, trial_index=0,
                                          observation=observation))
    assert reading.sensor_name == kind == sensor.name
    if reading.score is not None:
        assert reading.score == (1.0 if reading.passed else 0.0)
    return reading


def bad(kind: str, field: str, **options) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        build_sensor(kind, options, target_skill="t")
    assert info.value.field == field, info.value
    return info.value


def test_every_kind_is_listed_with_llm_judge_and_a_typo_gets_a_did_you_mean():
    assert {"activation", "exit_code", "matcher", "http_status", "latency",
            "token"} <= set(SENSORS)
    # built by the planner: they read a rubric file, or compare subjects
    assert sensor_kinds() == sorted([*SENSORS, "llm_judge", "panel", "pairwise_judge"])
    err = bad("activaton", "sensor.kind")
    assert err.message.startswith("unknown sensor 'activaton'; did you mean 'activation'?")
    assert "llm_judge" in err.message and "exit_code" in err.message
    assert "did you mean" not in bad("nonsense", "sensor.kind").message


def test_activation_still_reads_the_skill_call():
    obs = EvalObservation(tool_calls=(ToolCall(name="Skill", input={"skill": "target"}),))
    assert sense("activation", obs).passed
    assert not sense("activation", EvalObservation()).passed


# --- exit_code ---

def test_exit_code_passes_on_the_expected_code():
    r = sense("exit_code", EvalObservation(exit_code=0))
    assert r.passed and r.metrics == {"exit_code": 0}
    r = sense("exit_code", EvalObservation(exit_code=2))
    assert not r.passed and r.metrics == {"exit_code": 2} and "expected 0" in r.details
    assert sense("exit_code", EvalObservation(exit_code=2), expected=2).passed
    assert sense("exit_code", EvalObservation(exit_code=-9), expected=-9).passed


def test_exit_code_without_an_exit_code_fails():
    r = sense("exit_code", EvalObservation(content="hi"))
    assert not r.passed and r.metrics == {"exit_code": None} and "no exit code" in r.details


def test_exit_code_bad_options():
    bad("exit_code", "sensor.expected", expected="0")
    bad("exit_code", "sensor.expected", expected=True)
    bad("exit_code", "sensor.code", code=1)


# --- http_status ---

def test_http_status_single_and_list():
    assert sense("http_status", EvalObservation(status=200)).passed
    r = sense("http_status", EvalObservation(status=404))
    assert not r.passed and r.metrics == {"status": 404} and "expected 200" in r.details
    assert sense("http_status", EvalObservation(status=404), expected=[400, 404]).passed
    assert not sense("http_status", EvalObservation(status=500), expected=[400, 404]).passed
    assert not sense("http_status", EvalObservation(exit_code=0)).passed


def test_http_status_bad_options():
    bad("http_status", "sensor.expected", expected=[])
    bad("http_status", "sensor.expected", expected=99)
    bad("http_status", "sensor.expected", expected="200")


# --- latency ---

def test_latency_is_inclusive_of_the_limit():
    r = sense("latency", EvalObservation(duration_ms=250), max_ms=250)
    assert r.passed and r.metrics == {"duration_ms": 250}
    r = sense("latency", EvalObservation(duration_ms=251), max_ms=250.5)
    assert not r.passed and r.score == 0.0 and "> 250.5" in r.details
    assert sense("latency", EvalObservation(), max_ms=0).passed  # 0 ms where n/a


def test_latency_bad_options():
    bad("latency", "sensor.max_ms")
    bad("latency", "sensor.max_ms", max_ms=-1)
    bad("latency", "sensor.max_ms", max_ms="fast")


# --- token ---

def test_token_counts_input_and_output():
    obs = EvalObservation(tokens_input=70, tokens_output=30)
    r = sense("token", obs, max_tokens=100)
    assert r.passed and r.metrics == {"tokens": 100}
    r = sense("token", obs, max_tokens=99)
    assert not r.passed and r.metrics == {"tokens": 100}


def test_token_bad_options():
    bad("token", "sensor.max_tokens")
    bad("token", "sensor.max_tokens", max_tokens=1.5)
    bad("token", "sensor.max_tokens", max_tokens=-1)


# --- matcher ---

def test_matcher_contains_on_each_target():
    obs = EvalObservation(content="Hello World", stdout="out text", stderr="WARNING: x",
                          body='{"a": 1}')
    assert sense("matcher", obs, contains="World").passed
    assert not sense("matcher", obs, contains="world").passed
    assert sense("matcher", obs, contains="world", case_sensitive=False).passed
    assert sense("matcher", obs, contains="out", target="stdout").passed
    assert sense("matcher", obs, contains="warning", target="stderr",
                 case_sensitive=False).passed
    assert sense("matcher", obs, contains='"a"', target="body").passed
    r = sense("matcher", obs, contains="absent")
    assert not r.passed and "does not contain" in r.details


def test_matcher_on_a_missing_target_fails():
    r = sense("matcher", EvalObservation(content="x"), contains="x", target="body")
    assert not r.passed and "no body" in r.details


def test_matcher_regex():
    obs = EvalObservation(content="version 1.23.4 built")
    r = sense("matcher", obs, regex=r"\d+\.\d+\.\d+")
    assert r.passed and r.metrics == {"match": "1.23.4"}
    assert not sense("matcher", obs, regex=r"^built").passed
    assert not sense("matcher", obs, regex="VERSION").passed
    assert sense("matcher", obs, regex="VERSION", case_sensitive=False).passed


def test_matcher_json_path_equals():
    body = '{"a": {"b": [{"c": "yes"}, {"c": 2}]}, "ok": true, "n": 1, "odd key": null}'
    obs = EvalObservation(content=body, body=body)
    assert sense("matcher", obs, json_path="a.b[0].c", equals="yes").passed
    assert sense("matcher", obs, json_path="$.a.b[-1].c", equals=2.0).passed
    assert sense("matcher", obs, json_path="ok", equals=True, target="body").passed
    assert not sense("matcher", obs, json_path="n", equals=True).passed  # 1 is not true
    assert not sense("matcher", obs, json_path="ok", equals=1).passed
    assert sense("matcher", obs, json_path='["odd key"]', equals=None).passed
    assert sense("matcher", obs, json_path="a.b[1]", equals={"c": 2}).passed
    r = sense("matcher", obs, json_path="a.b[0].c", equals="no")
    assert not r.passed and '"yes"' in r.details and '"no"' in r.details
    r = sense("matcher", obs, json_path="a.x", equals=1)
    assert not r.passed and "no key 'x'" in r.details
    r = sense("matcher", obs, json_path="a.b[5]", equals=1)
    assert not r.passed and "no index 5" in r.details
    r = sense("matcher", obs, json_path="ok.b", equals=1)
    assert not r.passed and "not an object" in r.details


def test_matcher_json_path_on_text_that_is_not_json_fails_with_details():
    r = sense("matcher", EvalObservation(content="<html>oops</html>"), json_path="a",
              equals=1)
    assert not r.passed and "not JSON" in r.details


def test_matcher_top_level_array():
    obs = EvalObservation(content='[{"id": 7}]')
    assert sense("matcher", obs, json_path="[0].id", equals=7).passed
    assert sense("matcher", obs, json_path="$[0].id", equals=7).passed


def test_matcher_bad_options_name_the_field():
    assert "valid regular expression" in bad("matcher", "sensor.regex", regex="(").message
    assert "exactly one" in bad("matcher", "sensor.contains").message
    bad("matcher", "sensor.regex", contains="a", regex="b")
    bad("matcher", "sensor.equals", json_path="a.b")
    bad("matcher", "sensor.equals", contains="a", equals=1)
    bad("matcher", "sensor.json_path", json_path="a..b", equals=1)
    bad("matcher", "sensor.json_path", json_path="a[x]", equals=1)
    bad("matcher", "sensor.json_path", json_path="a.", equals=1)
    bad("matcher", "sensor.target", contains="a", target="headers")
    bad("matcher", "sensor.case_sensitive", contains="a", case_sensitive="no")
    bad("matcher", "sensor.pattern", pattern="x")


def test_matcher_errors_in_a_sensor_list_name_the_item():
    with pytest.raises(ConfigError) as info:
        build_sensor("matcher", {"regex": "["}, target_skill="t", field="sensors[1]")
    assert info.value.field == "sensors[1].regex"


@pytest.mark.parametrize("text,parts", [
    ("a", ("a",)),
    ("a.b[0].c", ("a", "b", 0, "c")),
    ("$.a-b._c", ("a-b", "_c")),
    ("[2][-1]", (2, -1)),
    ("a['x.y'][\"q\\\"r\"]", ("a", "x.y", 'q"r')),
    ("$", ()),
])
def test_json_path_parser(text, parts):
    assert parse_json_path(text) == parts


@pytest.mark.parametrize("text", ["", ".a", "a.", "a..b", "a[", "a[b]", "a b", "1a", "a.[0]",
                                  "a[0]b"])
def test_json_path_parser_refuses(text):
    with pytest.raises(ValueError):
        parse_json_path(text)


def test_json_path_resolution_and_equality():
    assert resolve_json_path({"a": [1, {"b": 2}]}, ("a", 1, "b")) == 2
    with pytest.raises(LookupError):
        resolve_json_path({"a": []}, ("a", 0))
    assert json_equal(1, 1.0) and not json_equal(True, 1) and not json_equal(0, False)
    assert json_equal({"a": [1, None]}, {"a": [1.0, None]})
    assert not json_equal({"a": 1}, {"a": 1, "b": 2}) and not json_equal("1", 1)
