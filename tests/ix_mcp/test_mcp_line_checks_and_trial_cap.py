"""`ix.mcp.stdio.check` (each line of stdin, as JSON-RPC 2.0 says) and `ix.mcp.cap` (what one
`run_experiment` call may start), in process; tests/ix_mcp/test_mcp_hardening.py drives both
through the real server."""

import json
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("mcp")

import mcp_types as types

from ix.domain.errors import ConfigError
from ix.mcp import cap
from ix.mcp.stdio import check


@pytest.mark.parametrize("message", [
    {"jsonrpc": "2.0", "id": 1, "method": "ping"},
    {"jsonrpc": "2.0", "id": "a", "method": "tools/call",
     "params": {"name": "x", "arguments": {}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 0, "result": {}},
    {"jsonrpc": "2.0", "id": 2, "error": {"code": -1, "message": "no"}},
])
def test_a_valid_message_is_passed_on_as_written(message):
    line = json.dumps(message).encode()
    assert check(line) == line.decode()


@pytest.mark.parametrize("line", [b"", b"   ", b"\r", b"\t \t"])
def test_a_blank_line_is_ignored(line):
    assert check(line) is None


@pytest.mark.parametrize(("line", "code", "ident"), [
    (b"{", types.PARSE_ERROR, None),
    (b"\xc3\x28", types.PARSE_ERROR, None),
    (b"{" * 50_000, types.PARSE_ERROR, None),
    (b"[1, 2]", types.INVALID_REQUEST, None),
    (b"[]", types.INVALID_REQUEST, None),
    (b"true", types.INVALID_REQUEST, None),
    (b'{"jsonrpc": "2.0", "id": 1}', types.INVALID_REQUEST, 1),
    (b'{"jsonrpc": 2.0, "id": 1, "method": "ping"}', types.INVALID_REQUEST, 1),
    (b'{"jsonrpc": "2.0", "id": [1], "method": "ping"}', types.INVALID_REQUEST, None),
    (b'{"jsonrpc": "2.0", "id": {}, "method": "ping"}', types.INVALID_REQUEST, None),
    (b'{"jsonrpc": "2.0", "id": false, "method": "ping"}', types.INVALID_REQUEST, None),
    (b'{"jsonrpc": "2.0", "id": "x", "method": null}', types.INVALID_REQUEST, "x"),
    (b'{"jsonrpc": "2.0", "id": 3, "method": "ping", "params": 7}', types.INVALID_REQUEST, 3),
    (b'{"jsonrpc": "2.0", "id": 4, "result": []}', types.INVALID_REQUEST, 4),
    (b'{"jsonrpc": "2.0", "id": 5, "error": "bad"}', types.INVALID_REQUEST, 5),
])
def test_a_malformed_line_gets_the_error_object_the_spec_defines(line, code, ident):
    found = check(line)
    assert isinstance(found, types.JSONRPCError)
    assert found.error.code == code and found.id == ident
    assert found.error.message == ("Parse error" if code == types.PARSE_ERROR
                                   else "Invalid Request")
    assert found.error.data  # says what was wrong
    # and it is a valid JSON-RPC message itself, as the SDK writes it
    text = found.model_dump_json(by_alias=True, exclude_unset=True)
    assert json.loads(text) == {"jsonrpc": "2.0", "id": ident, "error": {
        "code": code, "message": found.error.message, "data": found.error.data}}


def _plan(trials: int, cases: int = 4, subjects: int = 1, adaptive: bool = False) -> Any:
    return SimpleNamespace(trials=trials, cases=[None] * cases, subjects=[None] * subjects,
                           adaptive=adaptive, total=trials * cases * subjects)


def test_a_plan_within_the_limit_passes():
    cap.check(_plan(2500), budget=None, limit=10_000)  # exactly 10,000
    cap.check(_plan(5000), budget=10_000, limit=10_000)  # the budget brings it under


@pytest.mark.parametrize(("plan", "budget", "said"), [
    (_plan(2501), None, "would start 10,004 trials (2,501 per case x 4 cases x 1 subject)"),
    (_plan(10, cases=1, subjects=2000), None, "20,000 trials (10 per case x 1 case x 2,000 "
                                              "subjects)"),
    (_plan(5000, adaptive=True), None, "(up to 5,000 per case"),
    (_plan(5000), 10_001, "would start 10,001 trials"),
    (_plan(10_001, cases=1), 1, "10,001 trials per case is more than this server allows"),
])
def test_a_plan_over_the_limit_is_refused_saying_the_count_and_the_way_out(plan, budget, said):
    with pytest.raises(ConfigError) as raised:
        cap.check(plan, budget=budget, limit=10_000)
    assert raised.value.field == "trials"
    assert said in raised.value.message and "(10,000)" in raised.value.message
    assert "ix mcp --max-trials N (or IX_MCP_MAX_TRIALS=N)" in raised.value.message


@pytest.mark.parametrize(("flag", "env", "limit"), [
    (None, {}, 10_000),
    (None, {"IX_MCP_MAX_TRIALS": " 250 "}, 250),
    (None, {"IX_MCP_MAX_TRIALS": "1_000_000"}, 1_000_000),
    (None, {"IX_MCP_MAX_TRIALS": ""}, 10_000),
    (40, {"IX_MCP_MAX_TRIALS": "250"}, 40),
])
def test_the_limit_is_the_flag_else_the_environment_else_ten_thousand(flag, env, limit):
    assert cap.max_trials(flag, env) == limit


@pytest.mark.parametrize(("flag", "env", "field"), [
    (None, {"IX_MCP_MAX_TRIALS": "0"}, "$IX_MCP_MAX_TRIALS"),
    (None, {"IX_MCP_MAX_TRIALS": "-5"}, "$IX_MCP_MAX_TRIALS"),
    (None, {"IX_MCP_MAX_TRIALS": "1e4"}, "$IX_MCP_MAX_TRIALS"),
    (None, {"IX_MCP_MAX_TRIALS": "unlimited"}, "$IX_MCP_MAX_TRIALS"),
    (0, {}, "--max-trials"),
])
def test_a_bad_limit_is_an_error_naming_where_it_came_from(flag, env, field):
    with pytest.raises(ConfigError) as raised:
        cap.max_trials(flag, env)
    assert raised.value.field == field
