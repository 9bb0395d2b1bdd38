"""The progress bar is given its counts a few times a second, not on every trial, and still
ends at every trial that finished."""

from types import SimpleNamespace

from ix.api.options import trial_listener
from ix.cli.progress import RunProgress


def _plan(name: str, subjects: list[str], total: int) -> SimpleNamespace:
    return SimpleNamespace(
        loaded=SimpleNamespace(experiment=SimpleNamespace(name=name)), total=total,
        subjects=[SimpleNamespace(subject=SimpleNamespace(name=s), runtime_spec={"kind": "mock"})
                  for s in subjects])


def _record(subject: str, i: int, error: bool = False) -> dict[str, object]:
    return {"subject": subject, "probe_id": f"c-{i}", "trial": 0,
            "observation": {"tokens_input": 2, "tokens_output": 1, "cost_usd": 0.5},
            "reading": None if error else {"passed": True},
            "error": {"kind": "x", "message": "m"} if error else None}


def test_the_bar_is_updated_a_few_times_and_ends_at_every_trial():
    with RunProgress(mode="bar") as progress:
        bar = progress._progress
        assert bar is not None
        updates = []
        real = bar.update
        bar.update = lambda task, **kw: (updates.append(kw), real(task, **kw))[1]  # type: ignore[method-assign]
        progress.on_plan(_plan("e", ["a", "b"], 4000))
        tasks = dict(progress._tasks)
        for i in range(2000):
            progress.on_trial(_record("a", i, error=i % 10 == 0))
            progress.on_trial(_record("b", i))
        # a second experiment: the first one's bars end at their final counts
        progress.on_plan(_plan("f", ["a"], 10))
        for i in range(3):
            progress.on_trial(_record("a", i))
        last = dict(progress._tasks)
    assert len([u for u in updates if "advance" in u]) < 100  # not 4,003
    assert bar.tasks[tasks["a"]].completed == 2000
    assert bar.tasks[tasks["b"]].completed == 2000
    assert bar.tasks[last["a"]].completed == 3
    shown = [u for u in updates if u.get("errors")]
    assert shown and shown[-1]["errors"] == "200 errors"


def test_a_progress_that_shows_nothing_asks_the_engine_for_no_call_per_trial() -> None:
    assert trial_listener(RunProgress(mode="none")) is None  # off a terminal, `--json`
    for mode in ("bar", "json"):
        assert trial_listener(RunProgress(mode=mode)) is not None
