"""`ix.store.import_run`: an import is written all at once, or leaves the lab as it was.

In process: a storage fault injected at each file-system call of an import in turn (the
first, the second, ...), the settling of what killed imports leave, and imports taking turns.
The real command under real faults (SIGKILL, RLIMIT_FSIZE) is
tests/interchange/test_hardening_import.py.
"""

import errno
import json
import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import tree_digest, write
from ix.api import transfer
from ix.domain.errors import IxError

FAULTY_CALLS = ("write", "fsync", "rename", "replace", "link", "mkdir", "open", "unlink",
                "rmdir", "ftruncate")


def source(path: Path, run_id: str = "20250101T000000Z-aaaaaa", cases: int = 3) -> Path:
    lines = [{"run_id": run_id, "experiment": "e", "subject": s, "probe_id": f"c{c}",
              "trial": t, "seed": t, "attempt": 0, "expectation": "must_trigger",
              "started_at": "2025-01-01T00:00:00.000Z", "duration_ms": 1.0,
              "observation": None, "reading": {"sensor_name": "activation",
                                               "passed": (c + t) % 2 == 0},
              "error": None}
             for s in ("a", "b") for c in range(cases) for t in range(2)]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def lab_with_experiment(lab: Path, tmp_path: Path) -> Path:
    write(lab / "e" / "experiment.yaml", "name: e\nruntime: {kind: mock}\n"
                                         "subjects: [{name: a}, {name: b}]\n")
    for c in range(3):
        write(lab / "e" / "cases" / f"c{c}.md", "---\nexpectation: must_trigger\n---\nx\n")
    transfer.import_results(lab, source(tmp_path / "earlier.jsonl",
                                        "20240101T000000Z-bbbbbb"), "jsonl")
    return lab


@pytest.mark.parametrize("target", ["e", "brand-new"])
def test_a_failure_at_any_step_of_writing_leaves_the_lab_as_it_was(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str) -> None:
    """A full disk at the 1st, 2nd, ... file-system call of an import: each time either the
    import is refused as a storage fault and the lab is byte for byte as it was (the old
    summary-latest.json never rewritten), or the fault was harmless (a folder that exists,
    the removal of the staging folder: the next import settles it) and the run is whole."""
    out = source(tmp_path / "run.jsonl")
    pristine = lab_with_experiment(tmp_path / "pristine", tmp_path)
    before = tree_digest(pristine)
    real = {name: getattr(os, name) for name in FAULTY_CALLS}
    calls = {"n": 0, "fail": 0}

    def faulty(name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            calls["n"] += 1
            if calls["n"] == calls["fail"]:
                raise OSError(errno.ENOSPC, "No space left on device")
            return real[name](*args, **kwargs)
        return call

    def attempt(fail: int) -> tuple[Path, Any]:
        lab = tmp_path / f"lab-{fail}"
        shutil.copytree(pristine, lab, symlinks=True)
        calls.update(n=0, fail=fail)
        for name in FAULTY_CALLS:
            monkeypatch.setattr(os, name, faulty(name))
        try:
            return lab, transfer.import_results(lab, out, "jsonl", experiment=target)
        except IxError as exc:  # a StorageError: one line, exit 2
            return lab, exc
        finally:
            monkeypatch.undo()

    _, clean = attempt(0)
    assert not isinstance(clean, IxError), clean
    total, refused = calls["n"], 0
    for fail in range(1, total + 1):
        lab, result = attempt(fail)
        where = f"call {fail} of {total}"
        if isinstance(result, IxError):
            refused += 1
            assert "No space left on device" in result.render(), where
            assert tree_digest(lab) == before, where
        else:
            from ix.store.import_run import settle

            settle(lab)
            results = result.experiment_dir / "results"
            assert (result.run_dir / "spec.yaml").is_file(), where
            latest = json.loads((results / "summary-latest.json").read_text())
            assert latest["run_id"] == result.run_id, where
            lines = (results / "trials.jsonl").read_bytes().splitlines()
            assert sum(json.loads(x)["run_id"] == result.run_id for x in lines) == 12, where
        assert not list(lab.rglob(".ix-import-*")), where
        shutil.rmtree(lab)
    assert refused > 5  # the writing really was interrupted at many steps


def test_settling_removes_an_import_that_never_reached_the_log(tmp_path: Path) -> None:
    """Staging folders of imports killed before their append (a run's, and a new
    experiment's) are removed; the lab is otherwise untouched."""
    from ix.store.import_run import settle

    lab = lab_with_experiment(tmp_path / "lab", tmp_path)
    before = tree_digest(lab)
    stage = lab / "e" / "results" / ".ix-import-20250101T000000Z-cccccc.tmp"
    (stage / "run").mkdir(parents=True)
    (stage / "run" / "spec.yaml").write_text("run_id: x\n")
    (stage / "trials.jsonl").write_text('{"run_id": "20250101T000000Z-cccccc"}\n')
    (lab / ".ix-import-0123456789ab.tmp" / "fresh" / "cases").mkdir(parents=True)
    (lab / ".ix-import-0123456789ab.tmp" / "fresh" / "experiment.yaml").write_text("name: f\n")
    done = settle(lab)
    assert len(done) == 2 and all(d.startswith("removed") for d in done)
    assert tree_digest(lab) == before


def test_imports_take_turns_in_a_lab(tmp_path: Path) -> None:
    """While one import holds the lab's turn, another waits (and says so), then goes on."""
    from ix.store.import_run import import_turn

    lab = lab_with_experiment(tmp_path / "lab", tmp_path)
    out = source(tmp_path / "run.jsonl")
    said: list[str] = []
    finished: list[float] = []

    def other() -> None:
        transfer.import_results(lab, out, "jsonl", warn=said.append)
        finished.append(time.monotonic())

    with import_turn(lab):
        thread = threading.Thread(target=other)
        thread.start()
        time.sleep(1.0)
        released = time.monotonic()
        assert not finished
    thread.join(timeout=60)
    assert finished and finished[0] >= released
    assert any("waiting" in s for s in said)


def test_settling_an_import_stopped_after_it_kept_the_old_summary(tmp_path: Path) -> None:
    """An import stopped after it linked the old summary-latest.json aside (and before its
    own took its place) is completed by settling, the link left behind notwithstanding."""
    from ix.store.import_run import settle

    lab = lab_with_experiment(tmp_path / "lab", tmp_path)
    results = lab / "e" / "results"
    run_id = "20250101T000000Z-cccccc"
    stage = results / f".ix-import-{run_id}.tmp"
    stage.mkdir()
    line = json.dumps({"run_id": run_id, "trial": 0}) + "\n"
    (stage / "trials.jsonl").write_text(line)
    with (results / "trials.jsonl").open("a") as f:
        f.write(line)  # the lines reached the log
    (results / "runs" / run_id).mkdir()  # and the run folder its place
    os.link(results / "summary-latest.json", stage / "previous-latest.json")
    (stage / "summary-latest.json").write_text(json.dumps({"run_id": run_id}))
    done = settle(lab)
    assert done == [f"completed run {run_id} of e, an import that was stopped part way "
                    "(1 of its lines were in the log)"]
    assert json.loads((results / "summary-latest.json").read_text())["run_id"] == run_id
    assert not stage.exists()
