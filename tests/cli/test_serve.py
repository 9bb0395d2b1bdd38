"""`ix serve` (warm start): the real server in the background; a command sent through it
prints what it prints without it, exits with the same code, reads the client's stdin and
sees the client's environment; Ctrl-C reaches it; `ix serve --stop` ends the server; a stale
socket is passed over silently."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import _ix_argv, _ix_env, ix_in_process, mock_experiment, run_ix, write


def _socket_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="ixs-", dir="/tmp"))  # a Unix socket path is short


def _start(sock: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([*_ix_argv(), "serve"], env=_ix_env(None, _via(sock)),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()  # said once the socket listens
    assert line.startswith(f"serving on {sock}"), line
    return proc


def _via(sock: Path, **more: str) -> dict[str, str]:
    """The environment of a command that uses the server on `sock`."""
    return {"IX_SERVE_SOCKET": str(sock), "IX_NO_SERVE": "", **more}


def _served(sock: Path) -> int:
    status = run_ix("serve", "--status", "--json", env=_via(sock))
    assert status.code == 0, status.output
    state = json.loads(status.stdout)
    assert state["serving"], state
    return int(state["served"])


@pytest.fixture(scope="module")
def server() -> Iterator[Path]:
    folder = _socket_dir()
    sock = folder / "serve.sock"
    proc = _start(sock)
    yield sock
    proc.terminate()
    proc.wait(timeout=30)
    shutil.rmtree(folder, ignore_errors=True)


def _lab(root: Path) -> Path:
    lab = root / "lab"
    mock_experiment(lab, rates={"must-001": 0.8}, trials=3)
    assert ix_in_process("run", "--lab", str(lab)).code == 0
    return lab


@pytest.mark.slow
def test_a_command_through_the_server_prints_and_exits_as_without_it(server, tmp_path):
    lab = _lab(tmp_path)
    assert (server.stat().st_mode & 0o777) == 0o600
    assert (server.parent.stat().st_mode & 0o777) == 0o700
    before = _served(server)
    for args, code in ((["ls"], 0), (["report"], 0), (["report", "no-such-run"], 2)):
        warm = run_ix(*args, "--lab", str(lab), env=_via(server, COLUMNS="200"))
        cold = run_ix(*args, "--lab", str(lab), env={"COLUMNS": "200"})
        assert (warm.code, warm.stdout, warm.stderr) == (cold.code, cold.stdout, cold.stderr)
        assert warm.code == code, warm.output
    assert _served(server) == before + 3  # they did go through the server
    # the client's environment: its width and NO_COLOR shape the output, not the server's
    narrow = run_ix("ls", "--lab", str(lab), env=_via(server, COLUMNS="50"))
    assert narrow.stdout == run_ix("ls", "--lab", str(lab), env={"COLUMNS": "50"}).stdout
    assert narrow.stdout != run_ix("ls", "--lab", str(lab), env=_via(server)).stdout
    env = run_ix("ls", "--lab", str(lab), "--json", env=_via(server, NO_COLOR="1",
                                                               IX_NO_SUCH="x"))
    assert env.code == 0 and json.loads(env.stdout)


@pytest.mark.slow
def test_the_command_reads_the_clients_stdin(server, tmp_path):
    lab = tmp_path / "lab"
    write(lab / "skills" / "s" / "SKILL.md", "---\nname: s\ndescription: CSV.\n---\n")
    exp = lab / "gen"
    answer = {"must": ["Sum a.csv", "Sum b.csv"], "should_not": [], "near_miss": []}
    write(exp / "gen.py", f"print({json.dumps(json.dumps(answer))})\n")
    write(exp / "experiment.yaml", f"""
        name: gen
        sensor: {{kind: activation, skill: s}}
        trials: 1
        runtime: {{kind: command, argv: [{json.dumps(sys.executable)},
                                        {json.dumps(str(exp / "gen.py"))}]}}
        subjects: [{{name: s, skills: [s], runtime: {{kind: mock, default_rate: 1.0}}}}]
        probe: {{kind: generate, from: skill, n: 2, runtime: command}}
        """)
    write(exp / "cases" / "must-001.md", "---\nexpectation: must_trigger\n---\nSum c.csv\n")
    assert ix_in_process("run", "--lab", str(lab), "gen").code in (0, 1)
    before = _served(server)
    r = run_ix("cases", "review", "gen", "--lab", str(lab), stdin="y\nn\n", env=_via(server))
    assert r.code == 0, r.output
    assert "accepted 1, dropped 1" in " ".join(r.stdout.split()), r.output
    assert (exp / "cases" / "gen-must-001.md").exists()
    assert not (exp / "cases" / "gen-must-002.md").exists()
    assert _served(server) == before + 1


@pytest.mark.slow
def test_ctrl_c_on_the_client_reaches_the_command(server, tmp_path):
    lab = tmp_path / "lab"
    exp = mock_experiment(lab, n_must=4, n_not=0, n_edge=0, trials=20,
                          runtime_extra="latency_ms: 200", extra_yaml="concurrency: 2\n")
    client = subprocess.Popen([*_ix_argv(), "run", "--lab", str(lab)],
                              env=_ix_env(None, _via(server)), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    log = exp / "results" / "trials.jsonl"
    deadline = time.monotonic() + 30
    while not (log.exists() and log.read_text().count("\n") >= 2):
        assert time.monotonic() < deadline, "the run did not start"
        time.sleep(0.02)
    client.send_signal(signal.SIGINT)
    out, err = client.communicate(timeout=60)
    assert client.returncode == 130, out + err
    summary = json.loads((exp / "results" / "summary-latest.json").read_text())
    assert summary["run_status"] == "cancelled"
    assert summary["subjects"][0]["trials"] < 80


@pytest.mark.slow
def test_stop_ends_the_server_and_a_stale_socket_is_passed_over(tmp_path):
    folder = _socket_dir()
    try:
        sock = folder / "serve.sock"
        proc = _start(sock)
        again = run_ix("serve", env=_via(sock))  # one server per socket
        assert again.code == 2 and "already answers" in again.stderr, again.output
        stopped = run_ix("serve", "--stop", env=_via(sock))
        assert stopped.code == 0 and f"stopped the ix server (pid {proc.pid})" in \
            " ".join(stopped.stdout.split()), stopped.output
        assert proc.wait(timeout=30) == 0
        assert not sock.exists()
        # a socket whose server is gone (killed): `ix` runs the command itself, silently
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stale.bind(str(sock))
        stale.close()
        lab = _lab(tmp_path)
        r = run_ix("ls", "--lab", str(lab), env=_via(sock))
        assert r.code == 0 and r.stderr == "" and "exp" in r.stdout, r.output
        status = run_ix("serve", "--status", env=_via(sock))
        assert status.code == 0 and "no ix server answers" in status.stdout, status.output
        assert os.path.exists(sock)  # left as it was: only `ix serve` replaces it
    finally:
        shutil.rmtree(folder, ignore_errors=True)
