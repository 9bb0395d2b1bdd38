"""`ix cache stats|clear` through the real `ix`, on a lab whose cache the Python API filled (the
cache a test then reads back, and repeats of a contract a real command here shows, in process)."""

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import Result, _ix_argv, ix_in_process, mock_experiment, run_ix, tree_digest, write
from ix.domain.errors import TrialError
from ix.domain.types import Subject
from ix.engine.cache import CachingRuntime
from ix.eval.models import EvalCase
from ix.runtimes import RuntimeContext, build_runtime
from ix.store.cache import CACHE_DIR, ObservationCache


def populate(lab: Path, n: int = 5) -> int:
    """Record `n` mock trials (one of them an error) in the lab's cache."""
    runtime = build_runtime({"kind": "mock", "default_rate": 0.5,
                             "error_rates": {"err-001": 1.0}}, RuntimeContext("target"))
    cached = CachingRuntime(runtime, ObservationCache(lab), "subject-key", "use")
    cases = [EvalCase(id=f"must-{i:03d}", prompt=f"p{i}", expectation="must_trigger")
             for i in range(1, n)] + [EvalCase(id="err-001", prompt="e",
                                               expectation="should_not_trigger")]

    async def record() -> None:
        for i, case in enumerate(cases):
            with contextlib.suppress(TrialError):
                await cached.invoke(Subject(name="s"), case, seed=i)

    asyncio.run(record())
    assert cached.recorded == n
    return n


@pytest.fixture
def filled(lab: Path) -> Path:
    d = mock_experiment(lab)
    write(d / "results" / "trials.jsonl", '{"probe_id": "must-001"}\n')
    populate(lab)
    return lab


def stats(lab: Path, *args: str, cli: Callable[..., Result] = ix_in_process) -> dict:
    """The cache's `ix cache stats --json`, in process unless `cli` is `run_ix`."""
    r = cli("cache", "stats", "--lab", str(lab), "--json", *args)
    assert r.code == 0, r.output
    return json.loads(r.stdout)


def test_help_lists_the_commands():
    r = run_ix("cache", "--help")
    assert r.code == 0, r.output
    assert "stats" in r.stdout and "clear" in r.stdout


def test_stats_of_an_empty_and_of_a_filled_cache(lab, filled, tmp_path):
    empty = tmp_path / "empty-lab"
    mock_experiment(empty)
    assert stats(empty) == {"lab": str(empty.resolve()),
                            "path": str(empty.resolve() / CACHE_DIR),
                            "entries": 0, "bytes": 0, "shards": 0}
    data = stats(filled, cli=run_ix)  # the real `ix cache stats --json`
    assert data["entries"] == 5 and data["bytes"] > 0 and 1 <= data["shards"] <= 5
    assert data["path"] == str(filled.resolve() / CACHE_DIR)
    # text, and the lab found from the working directory
    r = run_ix("cache", "stats", cwd=filled / "exp")
    assert r.code == 0, r.output
    assert "entries: 5" in r.stdout and str(CACHE_DIR) in r.stdout


def test_clear_with_yes_removes_the_entries_and_nothing_else(filled):
    experiment = tree_digest(filled / "exp")
    r = run_ix("cache", "clear", "--lab", str(filled), "--yes", "--json")
    assert r.code == 0, r.output
    assert json.loads(r.stdout) == {"lab": str(filled.resolve()),
                                    "path": str(filled.resolve() / CACHE_DIR), "removed": 5}
    assert stats(filled)["entries"] == 0
    assert tree_digest(filled / "exp") == experiment  # trials.jsonl and the rest untouched
    r = ix_in_process("cache", "clear", "--lab", str(filled), "--yes")
    assert r.code == 0 and "removed 0" in r.stdout


def test_clear_without_yes_and_without_a_terminal_refuses(filled):
    r = run_ix("cache", "clear", "--lab", str(filled))
    assert r.code == 2, r.output
    assert "--yes" in r.stderr and "Traceback" not in r.output
    assert stats(filled)["entries"] == 5


def test_clear_of_an_empty_cache_needs_no_confirmation(lab):
    mock_experiment(lab)
    r = run_ix("cache", "clear", "--lab", str(lab))
    assert r.code == 0, r.output
    assert "removed 0" in r.stdout


def test_no_lab_is_a_clean_error(tmp_path):
    r = run_ix("cache", "stats", cwd=tmp_path)
    assert r.code == 2 and "no lab found" in r.stderr and "Traceback" not in r.output
    r = ix_in_process("cache", "stats", "--lab", "no-such-lab", cwd=tmp_path)
    assert r.code == 2 and "--lab" in r.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
@pytest.mark.parametrize(("answer", "code", "left"), [("n", 1, 5), ("y", 0, 0)])
def test_clear_asks_on_a_terminal(filled, answer, code, left):
    main, tty = os.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("IX_")}
    env.update(NO_COLOR="1", XDG_CONFIG_HOME=str(filled / ".no-user-config"))
    try:
        proc = subprocess.Popen([*_ix_argv(), "cache", "clear", "--lab", str(filled)],
                                stdin=tty, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=env, text=True)
        os.write(main, f"{answer}\n".encode())
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        os.close(main)
        os.close(tty)
    assert proc.returncode == code, stdout + stderr
    assert "Remove 5 cached observation(s)" in stderr
    assert stats(filled)["entries"] == left
