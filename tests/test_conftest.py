"""The suite's own helpers: `ix_in_process` answers as the real `ix` subprocess does, and
leaves the test process as it found it."""

import json
import os
import shutil
import signal
import sys
from pathlib import Path

from conftest import ix_in_process, mock_experiment, run_ix, write

VOLATILE = {"run_id", "started_at", "duration_ms"}


def _lines(lab: Path) -> list[dict[str, object]]:
    text = (lab / "exp" / "results" / "trials.jsonl").read_text(encoding="utf-8")
    return [{k: v for k, v in json.loads(x).items() if k not in VOLATILE}
            for x in text.splitlines()]


def test_a_run_in_process_writes_what_the_command_writes(tmp_path):
    first = tmp_path / "a"
    mock_experiment(first, n_must=3, n_not=2, n_edge=1, trials=3)
    second = tmp_path / "b"
    shutil.copytree(first, second)
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    inner = ix_in_process("run", "--lab", str(first), "--seed", "7", "--json")
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers
    real = run_ix("run", "--lab", str(second), "--seed", "7", "--json")
    assert (inner.code, real.code) == (0, 0), inner.output + real.output
    assert _lines(first) == _lines(second) and len(_lines(first)) == 15
    a, b = json.loads(inner.stdout), json.loads(real.stdout)
    assert a["subjects"] == b["subjects"] and a["run_status"] == b["run_status"] == "completed"
    spec = (next((first / "exp" / "results" / "runs").iterdir()) / "spec.yaml").read_text()
    assert "- ix\n- run\n" in spec  # the command line recorded is the one given


def test_an_error_in_process_is_the_commands_one_line_and_exit_code(tmp_path):
    write(tmp_path / "exp" / "experiment.yaml", "name: exp\ntrials: many\n")
    inner = ix_in_process("validate", "--lab", str(tmp_path))
    real = run_ix("validate", "--lab", str(tmp_path))
    assert inner.code == real.code == 2
    assert inner.stderr == real.stderr and "experiment.yaml" in inner.stderr
    assert "Traceback" not in inner.output


def test_the_test_process_is_left_as_it_was(tmp_path, monkeypatch):
    mock_experiment(tmp_path, trials=1)
    monkeypatch.setenv("IX_TRIALS", "9")
    before = (dict(os.environ), os.getcwd(), list(sys.argv))
    r = ix_in_process("ls", cwd=tmp_path, env={"IX_SOMETHING": "x"})
    assert r.code == 0 and "exp" in r.stdout, r.output
    assert (dict(os.environ), os.getcwd(), list(sys.argv)) == before


def test_a_command_that_writes_bytes_is_captured_in_order(tmp_path):
    """`ix results --format json` writes its rows to `sys.stdout.buffer`."""
    mock_experiment(tmp_path, n_must=2, n_not=1, n_edge=0, trials=2)
    assert ix_in_process("run", "--lab", str(tmp_path)).code == 0
    inner = ix_in_process("results", "--lab", str(tmp_path), "--format", "json")
    real = run_ix("results", "--lab", str(tmp_path), "--format", "json")
    assert inner.code == real.code == 0, inner.output + real.output
    assert json.loads(inner.stdout) == json.loads(real.stdout) and len(json.loads(real.stdout)) == 6
