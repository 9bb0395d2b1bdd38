"""`ix.api.run` and `ix.api.arun` on the real mock runtime: the observer's events, the async
twin on a running loop, and the deprecated keyword form."""

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import mock_experiment
from ix import api


class Recorder(api.Observer):
    """Every event, in order, with the thread it came on."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []
        self.threads: set[int] = set()

    def _add(self, kind: str, what: Any) -> None:
        self.events.append((kind, what))
        self.threads.add(threading.get_ident())

    def on_design(self, plan: Any, warnings: list[Any]) -> None:
        self._add("design", [w.code for w in warnings])

    def on_plan(self, plan: Any) -> None:
        self._add("plan", plan.total)

    def on_trial(self, record: dict[str, Any]) -> None:
        self._add("trial", (record["probe_id"], record["trial"]))

    def on_warning(self, message: str) -> None:
        self._add("warning", message)


def _torn_experiment(lab: Path) -> Path:
    """Three cases of one trial (design warnings: too few cases) whose trial log ends in a
    torn line (a warning when the run opens it)."""
    d = mock_experiment(lab, trials=1, n_must=2, n_not=1, n_edge=0, rates={"must-001": 1.0})
    (d / "results").mkdir()
    (d / "results" / "trials.jsonl").write_text('{"torn": ', encoding="utf-8")
    return d


def _kinds(events: list[tuple[str, Any]]) -> list[str]:
    return [kind for kind, _ in events]


def test_observer_hears_design_plan_warning_and_trials_in_order(lab: Path) -> None:
    _torn_experiment(lab)
    seen = Recorder()
    [result] = api.run(lab, ["exp"], observer=seen)
    assert result.status == "completed"
    assert _kinds(seen.events) == ["design", "plan", "warning", "trial", "trial", "trial"]
    assert seen.events[0][1] == ["too-few-cases", "too-few-cases"]
    assert seen.events[1][1] == 3
    assert "removed a torn last line" in seen.events[2][1]
    assert sorted(what for kind, what in seen.events if kind == "trial") == [
        ("must-001", 0), ("must-002", 0), ("not-001", 0)]


def test_default_observer_says_design_warnings_through_on_warning(lab: Path) -> None:
    mock_experiment(lab, trials=1, n_must=2, n_not=1, n_edge=0, rates={"must-001": 1.0})

    class Warnings(api.Observer):
        def __init__(self) -> None:
            self.said: list[str] = []

        def on_warning(self, message: str) -> None:
            self.said.append(message)

    heard = Warnings()
    api.run(lab, ["exp"], observer=heard)
    assert len(heard.said) == 2
    assert all(line.endswith("[too-few-cases]") and "experiment.yaml: cases:" in line
               for line in heard.said)


def test_arun_observer_hears_the_same_events_on_the_loop_thread(lab: Path) -> None:
    _torn_experiment(lab)
    seen = Recorder()

    async def main() -> tuple[list[api.RunResult], int]:
        return (await api.arun(lab, ["exp"], options=api.RunOptions(command=["test"]),
                               observer=seen), threading.get_ident())

    [result], loop_thread = asyncio.run(main())
    assert result.status == "completed" and result.written == 3
    assert _kinds(seen.events) == ["design", "plan", "warning", "trial", "trial", "trial"]
    assert seen.threads == {loop_thread}  # even design and warnings, found in a worker
    spec = yaml.safe_load((result.run_dir / "spec.yaml").read_text(encoding="utf-8"))
    assert spec["status"] == "completed" and spec["command"] == ["test"]


def test_arun_leaves_the_loop_free_while_it_runs(lab: Path) -> None:
    """Another task of the loop keeps ticking between the run's trials (30 trials of 20 ms,
    one at a time)."""
    mock_experiment(lab, trials=10, n_must=2, n_not=1, n_edge=0,
                    runtime_extra="latency_ms: 20")
    timeline: list[str] = []

    class Trials(api.Observer):
        def on_trial(self, record: dict[str, Any]) -> None:
            timeline.append("trial")

    async def ticker(done: asyncio.Event) -> None:
        while not done.is_set():
            timeline.append("tick")
            await asyncio.sleep(0.005)

    async def main() -> list[api.RunResult]:
        done = asyncio.Event()
        ticking = asyncio.create_task(ticker(done))
        try:
            return await api.arun(lab, ["exp"], api.Overrides(concurrency=1),
                                  observer=Trials())
        finally:
            done.set()
            await ticking

    [result] = asyncio.run(main())
    assert result.status == "completed" and result.written == 30
    first, last = timeline.index("trial"), len(timeline) - 1 - timeline[::-1].index("trial")
    assert timeline[first:last].count("tick") >= 10  # it ran while the trials did


def test_arun_cancelled_records_the_run_cancelled_and_lets_the_cancel_through(
        lab: Path) -> None:
    mock_experiment(lab, trials=20, n_must=2, n_not=1, n_edge=0,
                    runtime_extra="latency_ms: 20")
    seen = Recorder()

    async def main() -> None:
        task = asyncio.create_task(api.arun(lab, ["exp"], api.Overrides(concurrency=2),
                                            observer=seen))
        while sum(kind == "trial" for kind, _ in seen.events) < 4:
            await asyncio.sleep(0.005)
        task.cancel()
        await task

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(main())
    [run_dir] = (lab / "exp" / "results" / "runs").iterdir()
    spec = yaml.safe_load((run_dir / "spec.yaml").read_text(encoding="utf-8"))
    trials = sum(kind == "trial" for kind, _ in seen.events)
    assert spec["status"] == "cancelled"
    assert spec["trials_written"] == trials and 4 <= trials < 60
    assert (run_dir / "summary.json").is_file()


def test_arun_stops_scheduling_on_limits_stop(lab: Path) -> None:
    mock_experiment(lab, trials=20, n_must=2, n_not=1, n_edge=0)
    stop = threading.Event()

    class StopAfterThree(api.Observer):
        trials = 0

        def on_trial(self, record: dict[str, Any]) -> None:
            self.trials += 1
            if self.trials == 3:
                stop.set()

    options = api.RunOptions(limits=api.Limits(stop=stop))
    [result] = asyncio.run(api.arun(lab, ["exp"], api.Overrides(concurrency=1),
                                    options=options, observer=StopAfterThree()))
    assert result.status == "cancelled"
    assert "Limits.stop" in result.summary["stop_reason"]
    assert 3 <= result.written < 60


def test_run_refuses_a_strict_design_before_anything_runs(lab: Path) -> None:
    d = mock_experiment(lab, trials=1, n_must=2, n_not=1, n_edge=0)
    seen = Recorder()
    with pytest.raises(api.DesignError):
        asyncio.run(api.arun(lab, ["exp"], options=api.RunOptions(strict=True),
                             observer=seen))
    assert _kinds(seen.events) == ["design"]
    assert not (d / "results").exists()


def test_deprecated_keywords_still_work_with_a_warning(lab: Path) -> None:
    _torn_experiment(lab)
    heard: list[str] = []
    with pytest.warns(DeprecationWarning, match=r"on_plan=, on_trial=, warn="):
        [result] = api.run(lab, ["exp"], on_plan=lambda plan: heard.append("plan"),
                           on_trial=lambda record: heard.append("trial"), warn=heard.append,
                           command=["old"])
    assert result.status == "completed"
    # design warnings went to warn (no on_design), as before
    assert [h if h in ("plan", "trial") else "warning" for h in heard] == [
        "warning", "warning", "plan", "warning", "trial", "trial", "trial"]


def test_deprecated_keywords_and_options_together_are_refused(lab: Path) -> None:
    mock_experiment(lab)
    with pytest.raises(TypeError, match="not both"):
        api.run(lab, ["exp"], options=api.RunOptions(), strict=True)
    with pytest.raises(TypeError, match=r"unexpected keyword argument.*on_done"):
        api.run(lab, ["exp"], on_done=print)


def test_an_observer_that_raises_in_on_plan_stops_before_the_run_starts(lab: Path) -> None:
    d = mock_experiment(lab)

    class Refuse(api.Observer):
        def on_plan(self, plan: Any) -> None:
            raise api.ConfigError("too many trials", field="trials")

    started = time.monotonic()
    with pytest.raises(api.ConfigError, match="too many trials"):
        asyncio.run(api.arun(lab, ["exp"], observer=Refuse()))
    assert not (d / "results" / "runs").exists()
    assert time.monotonic() - started < 60
