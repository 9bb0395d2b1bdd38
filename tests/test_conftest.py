"""The suite's own helpers: `ix_in_process` answers as the real `ix` subprocess does, and
leaves the test process as it found it."""

import json
import os
import shutil
import signal
import sys
import warnings
from pathlib import Path

import pytest

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


def test_a_log_warning_reaches_stderr_in_process_as_in_a_process(tmp_path):
    """A record logged at WARNING reaches a real process's stderr by logging's last resort
    (here: a user config holding a token, readable by others, is not read); in process,
    pytest's own log handlers would take it out of sight."""
    lab = tmp_path / "lab"
    mock_experiment(lab, trials=1)
    user_config = write(tmp_path / "config" / "ix" / "config.yaml",
                        'runtime:\n  kind: http\n  url: http://127.0.0.1:9/c\n'
                        '  headers: {Authorization: "Bearer tok_live_0123456789abcdef"}\n')
    user_config.chmod(0o644)
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config")}
    inner = ix_in_process("validate", "--lab", str(lab), env=env)
    real = run_ix("validate", "--lab", str(lab), env=env)
    assert f"{user_config}: not read: it holds a secret" in real.stderr, real.output
    assert (inner.code, inner.stdout, inner.stderr) == (real.code, real.stdout, real.stderr)


def test_a_python_warning_in_process_is_printed_as_a_new_process_prints_it(tmp_path,
                                                                           monkeypatch):
    """Python's default filters, each call with a fresh registry: a UserWarning is printed
    every time, a DeprecationWarning outside `__main__` never."""
    from ix import api

    listed = api.list_experiments

    def list_experiments(lab):
        warnings.warn("a user warning", UserWarning, stacklevel=1)
        warnings.warn("a deprecation", DeprecationWarning, stacklevel=1)
        return listed(lab)

    monkeypatch.setattr(api, "list_experiments", list_experiments)
    mock_experiment(tmp_path, trials=1)
    for _ in range(2):
        r = ix_in_process("ls", "--lab", str(tmp_path))
        assert r.code == 0, r.output
        assert "UserWarning: a user warning" in r.stderr and "deprecation" not in r.output


def test_an_exception_main_lets_through_is_raised_in_process(tmp_path, monkeypatch):
    """A real process prints its traceback and exits 1; in process the exception is raised,
    so the test that met it fails (never a quiet exit code), and the process is restored."""
    from ix import api

    def list_experiments(lab):
        raise RuntimeError("a bug")

    monkeypatch.setattr(api, "list_experiments", list_experiments)
    before = (dict(os.environ), os.getcwd(), list(sys.argv))
    with pytest.raises(RuntimeError, match="a bug"):
        ix_in_process("ls", "--lab", str(tmp_path), cwd=tmp_path)
    assert (dict(os.environ), os.getcwd(), list(sys.argv)) == before


def test_the_width_in_process_is_the_columns_of_each_call(tmp_path):
    """ix's consoles are made on the first command that prints; made inside a call's
    environment they would keep its COLUMNS for every later call."""
    args = ("plan", "--mde", "0.1", "--paired", "--trials", "5")
    wide = ix_in_process(*args, env={"COLUMNS": "200"})
    narrow = ix_in_process(*args, env={"COLUMNS": "40"})
    import ix.cli.output  # after the calls, not to make the consoles before them

    assert ix.cli.output.out._width is None and ix.cli.output.err._width is None
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 40 < \
        max(len(line) for line in wide.stdout.splitlines())
    assert narrow == run_ix(*args, env={"COLUMNS": "40"})


class _Item:
    """What `pytest_collection_modifyitems` reads of a collected test."""

    def __init__(self, nodeid: str) -> None:
        self.nodeid, self.markers = nodeid, []

    def add_marker(self, marker: object) -> None:
        self.markers.append(marker)


def test_the_longest_work_is_handed_out_first_and_a_shared_file_stays_together(
        tmp_path, monkeypatch):
    """The recorded seconds order the tests (a file sharing fixtures weighs the sum of its
    tests and keeps its order); a listed test is marked slow; a line without seconds counts
    as `SLOW_S`."""
    import conftest

    shared = "tests/store/test_hardening_storage.py"  # holds a module-scoped fixture
    listed = tmp_path / "slow.txt"
    listed.write_text("# header\n"
                      f"{shared}::test_b\t3.0\n{shared}::test_c\t3.0\n"
                      "tests/x/test_one.py::test_long\t5.0\n"
                      "tests/x/test_one.py::test_old\n", encoding="utf-8")
    monkeypatch.setattr(conftest, "SLOW_LIST", listed)
    assert conftest._recorded_slow()["tests/x/test_one.py::test_old"] == conftest.SLOW_S
    names = ["tests/a/test_first.py::test_quick", f"{shared}::test_a", f"{shared}::test_b",
             "tests/x/test_one.py::test_old", f"{shared}::test_c",
             "tests/x/test_one.py::test_long"]
    items = [_Item(n) for n in names]
    conftest.pytest_collection_modifyitems(None, items)  # type: ignore[arg-type]
    assert [i.nodeid for i in items] == [
        f"{shared}::test_a", f"{shared}::test_b", f"{shared}::test_c",  # 6 s together
        "tests/x/test_one.py::test_long", "tests/x/test_one.py::test_old",
        "tests/a/test_first.py::test_quick"]
    assert [bool(i.markers) for i in items] == [False, True, True, True, True, False]
