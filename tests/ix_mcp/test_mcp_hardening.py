"""`ix mcp` under attack (issue 14, items 12-14): signals, oversized runs, malformed JSON-RPC.

Signals and malformed messages are sent to the real `ix mcp` over raw pipes, line by line,
so that stdin stays open (a client that has not hung up) and every byte on stdout is seen;
the run limit is driven through the official MCP client, as Claude Code would.
"""

import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import _ix_argv, mock_experiment

pytest.importorskip("mcp")

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

#: How soon a signalled server must be gone: it takes about a second (the trials in flight
#: get one second, then are cancelled); the margin is for a loaded machine. The server
#: before this fix never exited while the client kept stdin open.
EXIT_BOUND_S = 5.0


def _env(tmp: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IX_")}
    env["XDG_CONFIG_HOME"] = str(tmp / ".no-user-config")
    return env | (extra or {})


class RawServer:
    """`ix mcp` in a subprocess, spoken to with raw JSON-RPC lines; stdout read by a thread,
    so that a test can wait for a line with a timeout."""

    def __init__(self, lab: Path, tmp: Path):
        self.proc = subprocess.Popen([*_ix_argv(), "mcp", "--lab", str(lab)], env=_env(tmp),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.stdout: list[bytes] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.stdout.append(line)
            self.lines.put(line)

    def send(self, message: dict[str, Any] | bytes) -> None:
        assert self.proc.stdin is not None
        raw = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.proc.stdin.write(raw + b"\n")
        self.proc.stdin.flush()

    def receive(self, timeout: float = 30) -> dict[str, Any]:
        return json.loads(self.lines.get(timeout=timeout))

    def answer(self, ident: int, timeout: float = 30) -> dict[str, Any]:
        """The response to request `ident`, skipping notifications."""
        while True:
            message = self.receive(timeout)
            if message.get("id") == ident and "method" not in message:
                return message

    def initialize(self) -> None:
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "attacker", "version": "1"}}})
        assert self.answer(0)["result"]["serverInfo"]["name"] == "ix"
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def ended_within(self, seconds: float) -> tuple[int, float]:
        """Wait for the process (stdin still open); its exit code and how long it took."""
        start = time.monotonic()
        code = self.proc.wait(timeout=seconds)
        return code, time.monotonic() - start

    def stderr(self) -> str:
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode("utf-8", "replace")


@contextmanager
def raw_server(lab: Path, tmp: Path) -> Iterator[RawServer]:
    server = RawServer(lab, tmp)
    try:
        yield server
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
        server.proc.wait()
        if server.proc.stdin is not None:
            server.proc.stdin.close()
        server.reader.join(timeout=5)
        for line in server.stdout:  # nothing but the protocol, whatever happened
            assert json.loads(line)["jsonrpc"] == "2.0", line


def _only_run(exp: Path) -> tuple[Path, dict[str, Any]]:
    (spec,) = (exp / "results" / "runs").glob("*/spec.yaml")
    return spec.parent, yaml.safe_load(spec.read_text())


def _trial_lines(exp: Path, run_id: str) -> list[dict[str, Any]]:
    lines = (exp / "results" / "trials.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["run_id"] == run_id]


# -- item 12: a signal ends the server promptly, idle or mid-run ---------------------------


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_an_idle_server_at_once_though_the_client_keeps_stdin_open(
        lab, tmp_path, signum):
    mock_experiment(lab)
    with raw_server(lab, tmp_path) as server:
        server.initialize()
        server.send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert server.answer(1)["result"] == {}
        server.proc.send_signal(signum)
        code, took = server.ended_within(EXIT_BOUND_S)
        assert code == 130 and took < EXIT_BOUND_S
        assert "Traceback" not in server.stderr()


@pytest.mark.slow
def test_sigterm_mid_run_ends_the_server_promptly_and_the_run_is_kept_and_resumable(
        lab, tmp_path, ix):
    exp = mock_experiment(lab, "slow", n_must=4, n_not=2, n_edge=0, trials=10,
                          runtime_extra="latency_ms: 100", extra_yaml="concurrency: 2\n")
    planned = 6 * 10
    with raw_server(lab, tmp_path) as server:
        server.initialize()
        server.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "run_experiment", "arguments": {"experiment": "slow"},
            "_meta": {"progressToken": "run"}}})
        while True:  # a few trials done, the run going on
            message = server.receive()
            assert message.get("method") == "notifications/progress", message
            if message["params"]["progress"] >= 4:
                break
        server.proc.send_signal(signal.SIGTERM)
        code, took = server.ended_within(EXIT_BOUND_S)
        assert code == 130 and took < EXIT_BOUND_S
        err = server.stderr()
        assert "Traceback" not in err and "SIGTERM" in err
    # the run is recorded cancelled by the signal, its completed trials kept
    folder, spec = _only_run(exp)
    assert spec["status"] == "cancelled"
    assert spec["stop_reason"].startswith("interrupted (SIGINT or SIGTERM)")
    kept = _trial_lines(exp, folder.name)
    assert 4 <= spec["trials_written"] == len(kept) < planned
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["run_status"] == "cancelled"
    # and the command line finishes it: every planned trial once, none twice
    done = ix("run", "slow", "--lab", str(lab), "--resume", cwd=tmp_path)
    assert done.code == 0, done.output
    _, spec = _only_run(exp)
    assert spec["status"] == "completed" and spec["trials_written"] == planned
    trials = _trial_lines(exp, folder.name)
    assert len({(t["subject"], t["probe_id"], t["trial"]) for t in trials}) == planned
    assert len(trials) == planned
    assert [t for t in trials[:len(kept)]] == kept  # what was kept, kept as it was


@pytest.mark.slow
def test_sigint_mid_run_cancels_slow_trials_in_flight_instead_of_waiting_for_them(
        lab, tmp_path):
    """Trials that would take a minute are not waited for: after a grace of a second they
    are cancelled, the run recorded `cancelled`, and the server gone."""
    exp = mock_experiment(lab, "glacial", n_must=2, n_not=0, n_edge=0, trials=1,
                          runtime_extra="latency_ms: 60000", extra_yaml="concurrency: 2\n")
    with raw_server(lab, tmp_path) as server:
        server.initialize()
        server.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "run_experiment", "arguments": {"experiment": "glacial"}}})
        deadline = time.monotonic() + 30
        while not list((exp / "results" / "runs").glob("*/spec.yaml")):
            assert time.monotonic() < deadline, "the run never started"
            time.sleep(0.05)
        time.sleep(0.5)  # its two trials in flight
        server.proc.send_signal(signal.SIGINT)
        code, took = server.ended_within(EXIT_BOUND_S)
        assert code == 130 and took < EXIT_BOUND_S
        assert "Traceback" not in server.stderr()
    _, spec = _only_run(exp)
    assert spec["status"] == "cancelled" and spec["trials_written"] == 0
    assert spec["stop_reason"] == ("interrupted (SIGINT or SIGTERM); trials in flight were "
                                   "cancelled")


# -- item 13: what one call may start --------------------------------------------------------


@asynccontextmanager
async def connected(lab: Path, tmp: Path, args: tuple[str, ...] = (),
                    env: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    argv = _ix_argv()
    params = StdioServerParameters(command=argv[0],
                                   args=[*argv[1:], "mcp", "--lab", str(lab), *args],
                                   env=_env(tmp, env), cwd=tmp)
    with (tmp / "stderr.txt").open("a", encoding="utf-8") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            yield session


def serve(lab: Path, tmp: Path, body: Callable[[ClientSession], Awaitable[None]],
          args: tuple[str, ...] = (), env: dict[str, str] | None = None) -> None:
    async def main() -> None:
        async with connected(lab, tmp, args, env) as session:
            with anyio.fail_after(120):
                await body(session)

    anyio.run(main)
    assert "Traceback" not in (tmp / "stderr.txt").read_text(encoding="utf-8")


async def refused(session: ClientSession, **arguments: Any) -> str:
    result = await session.call_tool("run_experiment", arguments)
    assert result.is_error, result.structured_content
    return result.content[0].text  # type: ignore[union-attr]


async def ran(session: ClientSession, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool("run_experiment", arguments)
    assert not result.is_error, result.content[0].text  # type: ignore[union-attr]
    assert result.structured_content is not None
    return result.structured_content


def test_a_call_that_would_start_more_trials_than_the_limit_is_refused_before_it_starts(
        lab, tmp_path):
    exp = mock_experiment(lab, "exp", n_must=2, n_not=2, n_edge=0, trials=5)

    async def body(session: ClientSession) -> None:
        text = await refused(session, experiment="exp", trials=5000)
        # the planned count, how it comes about, the limit, and the ways out
        assert text.startswith("run_experiment: trials: this call would start 20,000 trials "
                               "(5,000 per case x 4 cases x 1 subject), more than this server "
                               "allows in one call (10,000)"), text
        assert "budget.max_trials (at most 10,000" in text
        assert "ix mcp --max-trials N" in text and "IX_MCP_MAX_TRIALS=N" in text
        # the call: a billion trials per case, refused whatever the budget says
        for budget in (None, {"max_trials": 3}):
            text = await refused(session, experiment="exp", trials=1_000_000_000,
                                 **({"budget": budget} if budget else {}))
            assert text.startswith("run_experiment: trials: 1,000,000,000 trials per case is "
                                   "more than this server allows in one call (10,000)"), text
            assert "ix mcp --max-trials N" in text
        assert not (exp / "results").exists()  # nothing started, nothing written
        # an experiment.yaml the model edited is held to the same limit
        config = exp / "experiment.yaml"
        original = config.read_text()
        config.write_text(original.replace("trials: 5", "trials: 3000"))
        text = await refused(session, experiment="exp")
        assert "would start 12,000 trials (3,000 per case x 4 cases" in text
        config.write_text(original.replace("trials: 5", "trials: auto\nmax_trials: 3000"))
        text = await refused(session, experiment="exp")
        assert "would start 12,000 trials (up to 3,000 per case x 4 cases" in text
        assert not (exp / "results").exists()
        config.write_text(original)
        # a billion trials in flight for 20 trials: 20 workers, not a billion
        with anyio.fail_after(30):
            whole = await ran(session, experiment="exp", concurrency=1_000_000_000)
        assert whole["status"] == "completed" and whole["trials_written"] == 20
        # a budget under the limit runs part of it, `cancelled`, for --resume to continue
        part = await ran(session, experiment="exp", trials=5000, budget={"max_trials": 3})
        assert part["status"] == "cancelled" and part["trials_written"] == 3
        assert "--max-trials 3" in part["stop_reason"]

    serve(lab, tmp_path, body)


@pytest.mark.parametrize(("args", "env", "limit"), [
    ((), {"IX_MCP_MAX_TRIALS": "20"}, 20),
    (("--max-trials", "8"), {"IX_MCP_MAX_TRIALS": "20"}, 8),  # the flag over the environment
    (("--max-trials", "20"), {}, 20),
])
def test_the_limit_is_set_by_the_flag_or_the_environment(lab, tmp_path, args, env, limit):
    mock_experiment(lab, "exp", n_must=2, n_not=2, n_edge=0, trials=5)

    async def body(session: ClientSession) -> None:
        text = await refused(session, experiment="exp", trials=limit // 4 + 1)
        assert f"more than this server allows in one call ({limit})" in text
        done = await ran(session, experiment="exp", trials=limit // 4)
        assert done["status"] == "completed" and done["trials_written"] == limit

    serve(lab, tmp_path, body, args, env)


@pytest.mark.parametrize(("args", "env", "said"), [
    ((), {"IX_MCP_MAX_TRIALS": "lots"}, "ix: error: $IX_MCP_MAX_TRIALS: must be a whole "
                                        "number >= 1, got 'lots'"),
    ((), {"IX_MCP_MAX_TRIALS": "0"}, "ix: error: $IX_MCP_MAX_TRIALS:"),
    (("--max-trials", "0"), {}, "Invalid value for '--max-trials'"),
])
def test_a_bad_limit_exits_2_before_serving(lab, tmp_path, args, env, said):
    proc = subprocess.run([*_ix_argv(), "mcp", "--lab", str(lab), *args],
                          env=_env(tmp_path, env), capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and said in proc.stderr and proc.stdout == ""
    assert "Traceback" not in proc.stderr


def test_run_arguments_of_the_wrong_type_or_out_of_range_are_error_results(lab, tmp_path):
    exp = mock_experiment(lab, "exp", n_must=2, n_not=2, n_edge=0, trials=5)

    async def body(session: ClientSession) -> None:
        for arguments, field, said in [
            ({"trials": True}, "trials", "a boolean is not a number"),
            ({"trials": -1}, "trials", "greater than or equal to 1"),
            ({"trials": 2.5}, "trials", "fractional part"),
            ({"trials": "many"}, "trials", "'auto'"),
            ({"seed": 2**64}, "seed", "less than or equal to 9223372036854775807"),
            ({"seed": -(2**63) - 1}, "seed", "greater than or equal to"),
            ({"seed": True}, "seed", "a boolean is not a number"),
            ({"concurrency": False}, "concurrency", "a boolean is not a number"),
            ({"concurrency": 0}, "concurrency", "greater than or equal to 1"),
            ({"budget": {"max_trials": True}}, "budget.max_trials", "a boolean"),
            ({"budget": {"max_trials": 0}}, "budget.max_trials", "greater than or equal"),
            ({"budget": {"time_limit": 0}}, "budget.time_limit", "greater than 0"),
            ({"budget": {"max_cost": -0.5}}, "budget.max_cost", "greater than or equal"),
            ({"budget": {"max_runs": 1}}, "budget.max_runs", "unknown key"),
            ({"smoke": "maybe"}, "smoke", "valid boolean"),
        ]:
            text = await refused(session, experiment="exp", **arguments)
            assert text.startswith(f"run_experiment: invalid arguments: {field}: "), text
            assert said in text, (arguments, text)
        assert not (exp / "results").exists()
        # at the edges of their ranges they are accepted
        done = await ran(session, experiment="exp", trials=1, seed=2**63 - 1, concurrency=1)
        assert done["status"] == "completed" and done["summary"]["seed"] == 2**63 - 1

    serve(lab, tmp_path, body)


# -- item 14: malformed JSON-RPC is answered as the spec says ----------------------------------

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND = -32700, -32600, -32601

MALFORMED: list[tuple[bytes, int, Any, str]] = [
    # (the line, the error code, the id answered, a word of the explanation)
    (b'{"jsonrpc": "2.0", "id": 1, "method": "ping"', PARSE_ERROR, None, "not JSON"),
    (b"\xff\xfe not even UTF-8", PARSE_ERROR, None, "utf-8"),
    (b"[" * 100_000, PARSE_ERROR, None, "not JSON"),
    (b'{"jsonrpc": "2.0", "id": ' + b"9" * 5000 + b', "method": "ping"}', PARSE_ERROR, None,
     "not JSON"),
    (b'[{"jsonrpc": "2.0", "id": 2, "method": "ping"}]', INVALID_REQUEST, None, "batch"),
    (b"[]", INVALID_REQUEST, None, "empty batch"),
    (b"42", INVALID_REQUEST, None, "JSON object"),
    (b'"ping"', INVALID_REQUEST, None, "JSON object"),
    (b"null", INVALID_REQUEST, None, "JSON object"),
    (b'{"jsonrpc": "1.0", "id": 3, "method": "ping"}', INVALID_REQUEST, 3, '"2.0"'),
    (b'{"id": 4, "method": "ping"}', INVALID_REQUEST, 4, '"jsonrpc"'),
    (b'{"jsonrpc": "2.0", "id": 5}', INVALID_REQUEST, 5, '"method"'),
    (b'{"jsonrpc": "2.0", "id": "six", "method": 6}', INVALID_REQUEST, "six", '"method"'),
    (b'{"jsonrpc": "2.0", "id": null, "method": "ping"}', INVALID_REQUEST, None, '"id"'),
    (b'{"jsonrpc": "2.0", "id": 7.5, "method": "ping"}', INVALID_REQUEST, None, '"id"'),
    (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', INVALID_REQUEST, None, '"id"'),
    (b'{"jsonrpc": "2.0", "id": 8, "method": "ping", "params": [1]}', INVALID_REQUEST, 8,
     '"params"'),
    (b'{"jsonrpc": "2.0", "method": "notifications/x", "params": "p"}', INVALID_REQUEST, None,
     '"params"'),
    (b'{"jsonrpc": "2.0", "id": 9, "method": "no/such/method"}', METHOD_NOT_FOUND, 9, ""),
]


def test_malformed_json_rpc_is_answered_with_the_spec_error_and_the_server_serves_on(
        lab, tmp_path):
    mock_experiment(lab)
    with raw_server(lab, tmp_path) as server:
        server.initialize()
        for ident, (line, code, answered_id, word) in enumerate(MALFORMED, start=100):
            server.send(line)
            answer = server.receive(timeout=30)
            assert answer["jsonrpc"] == "2.0" and answer["id"] == answered_id, (line, answer)
            assert answer["error"]["code"] == code, (line[:80], answer)
            said = f"{answer['error']['message']}: {answer['error'].get('data', '')}"
            assert word.lower() in said.lower(), (line[:80], answer)
            # and the next message is served as usual
            server.send({"jsonrpc": "2.0", "id": ident, "method": "ping"})
            assert server.receive(timeout=30) == {"jsonrpc": "2.0", "id": ident, "result": {}}
        # blank lines and unknown notifications get no answer (the spec says none)
        server.send(b"   ")
        server.send({"jsonrpc": "2.0", "method": "notifications/no-such-thing"})
        server.send({"jsonrpc": "2.0", "id": "last", "method": "tools/call",
                     "params": {"name": "list_experiments", "arguments": {}}})
        answer = server.receive(timeout=30)
        assert answer["id"] == "last", answer
        assert answer["result"]["structuredContent"]["experiments"][0]["name"] == "exp"
        assert server.proc.stdin is not None
        server.proc.stdin.close()  # the client hangs up: a clean end
        code, _ = server.ended_within(30)
        assert code == 0
        err = server.stderr()
        assert "Traceback" not in err and "answered a malformed message" in err
