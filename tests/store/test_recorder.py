"""`ix.store.recorder.RunRecorder`: start or reopen under the lock -> record -> finish."""

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from ix.domain.errors import RunBusy
from ix.store.layout import ExperimentDir
from ix.store.recorder import RunRecorder
from ix.store.spec_schema import RunSpec

STARTED = datetime(2026, 11, 26, 1, 2, 3, tzinfo=UTC)


def _spec(run_id: str, status: str = "running") -> RunSpec:
    return {"run_id": run_id, "experiment": "exp", "status": status}  # type: ignore[typeddict-item]


def _line(run_id: str, trial: int) -> dict:
    return {"run_id": run_id, "experiment": "exp", "subject": "s", "probe_id": "c",
            "trial": trial, "attempt": 0, "reading": {"passed": True}, "error": None}


def _log(place: ExperimentDir) -> list[dict]:
    return [json.loads(raw) for raw in place.trials.read_text(encoding="utf-8").splitlines()]


def _status(recorder: RunRecorder) -> str:
    return yaml.safe_load(recorder.run.spec.read_text(encoding="utf-8"))["status"]


def test_a_started_run_is_locked_its_lines_on_disk_at_once_and_finished_whole(
        tmp_path: Path):
    place = ExperimentDir.at(tmp_path / "exp")
    recorder = RunRecorder.start(place.results, STARTED, _spec)
    assert recorder.run == place.run(recorder.run_id)
    assert _status(recorder) == "running"
    with pytest.raises(RunBusy):  # a second process (here: a second open) cannot take it
        RunRecorder.reopen(place.results, recorder.run_id)
    recorder.open_log()
    recorder.record(_line(recorder.run_id, 0))
    # a crash now loses nothing: the line is in the log before the run finishes
    assert [r["trial"] for r in _log(place)] == [0]
    recorder.record(_line(recorder.run_id, 1))
    assert recorder.written == 2
    recorder.close_log()
    archived = recorder.finish({"run_id": recorder.run_id, "run_status": "completed"},
                               _spec(recorder.run_id, "completed"), STARTED)
    assert archived == place.results / "summary-20261126T010203Z.json"
    for path in (archived, place.latest_summary, recorder.run.summary):
        assert json.loads(path.read_text())["run_status"] == "completed"
    assert _status(recorder) == "completed"
    recorder.release()
    again = RunRecorder.reopen(place.results, recorder.run_id)  # the lock was let go
    again.release()


def test_a_reopened_run_appends_to_the_same_log_and_an_abandoned_one_keeps_its_lines(
        tmp_path: Path):
    place = ExperimentDir.at(tmp_path / "exp")
    first = RunRecorder.start(place.results, STARTED, _spec)
    first.open_log()
    first.record(_line(first.run_id, 0))
    first.close_log()
    first.release()  # killed: the spec still says running

    second = RunRecorder.reopen(place.results, first.run_id)
    second.write_spec(_spec(first.run_id))
    second.open_log()
    second.record(_line(first.run_id, 1))
    second.close_log()
    second.abandon(_spec(first.run_id, "failed"))
    second.release()
    assert [r["trial"] for r in _log(place)] == [0, 1]
    assert _status(second) == "failed"
    assert not place.latest_summary.exists()


def test_a_recorder_records_nothing_before_its_log_is_open(tmp_path: Path):
    recorder = RunRecorder.start(ExperimentDir.at(tmp_path / "exp").results, STARTED, _spec)
    with pytest.raises(RuntimeError):
        recorder.record(_line(recorder.run_id, 0))
    assert recorder.written == 0
    recorder.release()


@pytest.mark.parametrize("fresh", [False, True])
def test_a_whole_run_appears_only_when_finished(tmp_path: Path, fresh: bool):
    place = ExperimentDir.at(tmp_path / "exp")
    run_id = "20261126T010203Z-000abc"
    recorder = RunRecorder.whole(place.results, run_id, fresh=fresh)
    recorder.record(_line(run_id, 0))
    recorder.record(_line(run_id, 1))
    assert recorder.written == 2
    assert not place.results.exists()  # nothing on disk until finish
    recorder.finish({"run_id": run_id, "run_status": "completed"},
                    _spec(run_id, "completed"), STARTED)
    assert [r["trial"] for r in _log(place)] == [0, 1]
    assert _status(recorder) == "completed"
    assert json.loads(place.latest_summary.read_text())["run_id"] == run_id
    assert recorder.run.summary.is_file()
    assert not [p for p in place.results.iterdir() if p.name.startswith(".")]  # no staging


def test_an_abandoned_whole_run_leaves_no_trace(tmp_path: Path):
    place = ExperimentDir.at(tmp_path / "exp")
    recorder = RunRecorder.whole(place.results, "20261126T010203Z-000abc")
    recorder.record(_line(recorder.run_id, 0))
    recorder.abandon()
    recorder.release()
    assert not place.results.exists()
    assert recorder.written == 0
