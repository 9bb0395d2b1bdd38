"""The trial component's deadlines: one timer for every trial in flight, each trial cancelled
at its own deadline, as a timer of its own would."""

import asyncio
from typing import Any

import pytest

from ix.domain.types import Subject
from ix.engine.pipeline import Deadlines, TrialComponent
from ix.engine.plan import SubjectPlan, TrialKey
from ix.eval.models import EvalCase, EvalObservation
from ix.matrix import Construct


class Sleepy:
    """A runtime whose answer to case `c-<ms>` takes <ms> milliseconds."""

    async def invoke(self, subject: Any, case: EvalCase, *, seed: int, attempt: int) -> Any:
        await asyncio.sleep(int(case.id.split("-")[1]) / 1000)
        return EvalObservation(content=case.id)


def _construct(ms: int) -> Construct[TrialKey]:
    plan = SubjectPlan(Subject(name="s"), {"kind": "x"}, Sleepy(), (), "x")  # type: ignore[arg-type]
    return Construct(TrialKey(plan, EvalCase(id=f"c-{ms}", prompt="p",
                                             expectation="must_trigger"), 0, 1))


def test_each_slow_trial_times_out_at_its_deadline_and_the_others_answer() -> None:
    # 200 ms between the slowest answer and the deadline: a loaded CI machine keeps to it
    component = TrialComponent(timeout_s=0.3)

    async def main() -> list[Any]:
        return await asyncio.gather(*[component.run(_construct(ms))
                                      for ms in (0, 800, 10, 1200, 50, 600, 100)])

    outcomes = asyncio.run(main())
    got = {o.observation.content if o.observation else None: o for o in outcomes}
    assert sorted(k for k in got if k) == ["c-0", "c-10", "c-100", "c-50"]
    timed_out = [o for o in outcomes if o.error is not None]
    assert len(timed_out) == 3
    for o in timed_out:
        assert o.error == {"kind": "timeout", "message": "no answer within timeout_s=0.3"}
        assert 290 <= o.duration_ms < 600  # at the deadline, not at the answer


def test_a_trial_started_later_gets_its_full_timeout() -> None:
    component = TrialComponent(timeout_s=0.2)

    async def main() -> list[Any]:
        first = asyncio.ensure_future(component.run(_construct(1000)))
        await asyncio.sleep(0.12)
        # starts 0.12 s after the first: its deadline is 0.2 s from now, not the first's
        second = await component.run(_construct(150))
        return [await first, second]

    first, second = asyncio.run(main())
    assert first.error is not None and first.error["kind"] == "timeout"
    assert second.error is None and second.observation.content == "c-150"


def test_a_cancel_that_is_not_the_deadline_goes_through() -> None:
    component = TrialComponent(timeout_s=5)

    async def main() -> None:
        task = asyncio.ensure_future(component.run(_construct(1000)))
        await asyncio.sleep(0.05)
        task.cancel()
        await task

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(main())


def test_one_timer_serves_many_trials_and_the_queue_stays_small() -> None:
    async def main() -> tuple[int, int, int]:
        loop = asyncio.get_running_loop()
        set_timers = 0
        call_at = loop.call_at

        def counted(*args: Any) -> Any:
            nonlocal set_timers
            set_timers += 1
            return call_at(*args)

        loop.call_at = counted  # type: ignore[method-assign]
        deadlines = Deadlines(loop, 60)
        slow = deadlines.start(None)  # a trial that never answers, at the head
        longest = 0
        for _ in range(5000):  # trials that never wait: each done before the next starts
            entry = deadlines.start(None)
            deadlines.done(entry)
            longest = max(longest, len(deadlines._queue))
        deadlines.done(slow)
        for _ in range(5000):
            deadlines.done(deadlines.start(None))
        return longest, len(deadlines._queue), set_timers

    longest, left, set_timers = asyncio.run(main())
    assert longest <= 70 and left == 0
    assert set_timers == 1  # not one a trial
