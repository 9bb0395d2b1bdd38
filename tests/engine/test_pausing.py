"""A run paused in process (`ix.engine.pausing`): the `paused` marker holds back new trials,
and a stop asked while paused still ends the run (`cancelled`, the marker removed)."""

import threading
import time
from datetime import UTC, datetime

import pytest

from conftest import mock_experiment
from ix.engine.plan import Overrides, build_plan
from ix.engine.run import Limits, run_plan
from ix.lab.loader import load_experiment
from ix.store.layout import RunDir
from ix.store.pausing import mark_paused, unmark_paused


def _plan(lab):
    exp = mock_experiment(lab, n_must=3, n_not=3, n_edge=0, trials=2,
                          runtime_extra="latency_ms: 100", extra_yaml="concurrency: 2\n")
    return build_plan(load_experiment(exp, lab), Overrides())


@pytest.mark.slow
def test_the_marker_holds_back_new_trials_until_it_is_removed(lab):
    heard: list[tuple[bool, datetime]] = []
    started: list[datetime] = []
    window: list[datetime] = []

    def on_trial(record):
        started.append(datetime.fromisoformat(record["started_at"].replace("Z", "+00:00")))
        if len(started) == 1:  # pause after the first trial, from another thread
            folder = next((lab / "exp" / "results" / "runs").iterdir())

            def pause_then_continue():
                mark_paused(folder, "a test")
                time.sleep(0.6)  # the gate looks every 0.2 s: it must have seen it
                window.append(datetime.now(UTC))
                unmark_paused(folder)

            threading.Thread(target=pause_then_continue).start()

    result = run_plan(_plan(lab), on_trial=on_trial,
                      on_pause=lambda run_id, paused: heard.append((paused, datetime.now(UTC))))
    assert result.status == "completed" and result.written == 12
    assert [p for p, _ in heard] == [True, False]
    paused_at, continued_at = heard[0][1], heard[1][1]
    assert (continued_at - paused_at).total_seconds() > 0.2
    # no trial started while paused: from the pause being heard to the marker's removal
    assert not [s for s in started if paused_at < s < window[0]], (paused_at, started)
    assert [s for s in started if s > window[0]]  # and the rest after
    assert not RunDir(result.run_dir).paused.exists()


@pytest.mark.slow
def test_a_stop_asked_while_paused_ends_the_run(lab):
    stop = threading.Event()
    plan = _plan(lab)

    def on_pause(run_id, paused):
        if paused:
            threading.Timer(0.3, stop.set).start()

    def on_trial(record):
        runs = lab / "exp" / "results" / "runs"
        mark_paused(next(runs.iterdir()), "a test")

    result = run_plan(plan, on_trial=on_trial, on_pause=on_pause, limits=Limits(stop=stop))
    assert result.status == "cancelled", result.summary.get("stop_reason")
    assert result.written < 12
    assert "Limits.stop" in result.summary["stop_reason"]
    assert not RunDir(result.run_dir).paused.exists()
