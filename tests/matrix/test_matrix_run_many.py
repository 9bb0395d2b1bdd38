import asyncio
import itertools
from collections.abc import AsyncIterator, Iterator
from contextlib import aclosing
from typing import Any

import pytest
from matrix_support import arithmetic, only_this_task_left, run_clean, step

from ix.matrix import Construct, Orchestrator, Outcome
from ix.matrix.orchestrator import TURN_EVERY

N = frozenset({"n"})


def seeds(count: int) -> Iterator[Construct[int]]:
    return (Construct.seeded(i, {"n": i}) for i in range(count))


async def collect(stream: AsyncIterator[Outcome[Any]]) -> list[Outcome[Any]]:
    return [outcome async for outcome in stream]


def test_run_many_yields_every_construct_exactly_once() -> None:
    orchestrator = Orchestrator(arithmetic(), given=N)
    outcomes = run_clean(collect(orchestrator.run_many(seeds(50), concurrency=7)))
    assert sorted(o.construct.subject for o in outcomes) == list(range(50))
    assert all(
        o.ok and o.construct.data("sum") == sum(x * x for x in range(1, o.construct.subject + 1))
        for o in outcomes
    )


def test_run_many_never_exceeds_the_concurrency_limit() -> None:
    in_flight = peak = 0

    async def track(construct: Construct[Any]) -> None:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        for _ in range(3):
            await asyncio.sleep(0)
        in_flight -= 1

    orchestrator = Orchestrator([step("track", set(), "tracked", track)])
    inputs = (Construct(i) for i in range(40))
    outcomes = run_clean(collect(orchestrator.run_many(inputs, concurrency=3)))
    assert len(outcomes) == 40
    assert peak == 3


def test_one_failing_construct_is_reported_and_the_others_still_run() -> None:
    def squares(construct: Construct[int]) -> list[int]:
        if construct.subject == 7:
            raise ValueError("seven")
        return [x * x for x in construct.data("numbers")]

    graph = [*arithmetic()[:2], step("squares", {"numbers"}, "squares", squares)]
    outcomes = run_clean(collect(Orchestrator(graph, given=N).run_many(seeds(20), concurrency=4)))
    assert len(outcomes) == 20
    failed = [o for o in outcomes if not o.ok]
    assert len(failed) == 1
    error = failed[0].error
    assert error is not None and error.component == "squares"
    assert failed[0].construct.subject == 7 and failed[0].construct.has("numbers")
    assert all(o.construct.has("sum") for o in outcomes if o.ok)


def test_run_many_accepts_an_async_iterable_shared_by_several_workers() -> None:
    async def source() -> AsyncIterator[Construct[int]]:
        for construct in seeds(30):
            await asyncio.sleep(0)
            yield construct

    orchestrator = Orchestrator(arithmetic(), given=N)
    outcomes = run_clean(collect(orchestrator.run_many(source(), concurrency=5)))
    assert sorted(o.construct.subject for o in outcomes) == list(range(30))


def test_run_many_pulls_lazily_from_an_infinite_input_and_closes_cleanly() -> None:
    pulled = 0

    def endless() -> Iterator[Construct[int]]:
        nonlocal pulled
        for i in itertools.count():
            if pulled == 1_000:  # guard: an eager runner fails the bound below instead of hanging
                return
            pulled += 1
            yield Construct.seeded(i, {"n": 3})

    async def main() -> bool:
        orchestrator = Orchestrator(arithmetic(), given=N)
        async with aclosing(orchestrator.run_many(endless(), concurrency=4)) as stream:
            received = 0
            async for _ in stream:
                received += 1
                if received == 10:
                    break
        return asyncio.all_tasks() == {asyncio.current_task()}

    assert run_clean(main()), "workers still pending after the stream was closed"
    assert pulled <= 10 + 3 * 4  # consumed + queued + held by workers: bounded, not the input


def test_breaking_out_without_closing_still_cancels_every_worker() -> None:
    async def main() -> bool:
        orchestrator = Orchestrator(arithmetic(), given=N)
        async for outcome in orchestrator.run_many(seeds(10_000), concurrency=8):
            if outcome.construct.subject >= 5:
                break
        return await only_this_task_left()

    assert run_clean(main())


@pytest.mark.parametrize("way", ["run_many", "run_each"])
def test_cancelling_the_consumer_cancels_every_worker(way: str) -> None:
    async def main() -> bool:
        started = asyncio.Event()

        async def hang(construct: Construct[Any]) -> None:
            started.set()
            await asyncio.Event().wait()

        orchestrator = Orchestrator([step("hang", set(), "never", hang)])
        consumer = asyncio.create_task(
            collect(orchestrator.run_many(seeds(100), concurrency=4)) if way == "run_many"
            else orchestrator.run_each(seeds(100), concurrency=4, handle=lambda outcome: None))
        await started.wait()
        consumer.cancel()
        with pytest.raises(asyncio.CancelledError):
            await consumer
        return await only_this_task_left()

    assert run_clean(main())


def test_a_failing_input_iterator_ends_the_stream_with_its_error() -> None:
    def broken() -> Iterator[Construct[int]]:
        yield from seeds(3)
        raise OSError("input went away")

    async def main() -> None:
        orchestrator = Orchestrator(arithmetic(), given=N)
        with pytest.raises(OSError, match="input went away"):
            await collect(orchestrator.run_many(broken(), concurrency=2))
        assert await only_this_task_left()

    run_clean(main())


@pytest.mark.parametrize("concurrency", [0, -1])
def test_run_many_rejects_a_concurrency_below_one_when_called(concurrency: int) -> None:
    with pytest.raises(ValueError, match="concurrency"):
        Orchestrator(arithmetic(), given=N).run_many(seeds(1), concurrency=concurrency)


def test_run_many_of_nothing_yields_nothing() -> None:
    assert run_clean(collect(Orchestrator(arithmetic(), given=N).run_many([], concurrency=3))) == []


def test_run_each_hands_every_outcome_to_the_handler_failures_included() -> None:
    def odd_fails(construct: Construct[Any]) -> int:
        if construct.data("n") % 2:
            raise ValueError("odd")
        return construct.data("n")

    handled: list[Any] = []
    orchestrator = Orchestrator([step("even", {"n"}, "even", odd_fails)], given=N)
    run_clean(orchestrator.run_each(seeds(40), concurrency=6, handle=handled.append))
    assert sorted(o.construct.subject for o in handled) == list(range(40))
    assert {o.construct.subject for o in handled if not o.ok} == set(range(1, 40, 2))


def test_a_handler_that_raises_ends_the_run_with_its_error_and_cancels_every_worker() -> None:
    async def main() -> int:
        seen = 0

        def handle(outcome: Any) -> None:
            nonlocal seen
            seen += 1
            if seen == 5:
                raise OSError("disk full")

        orchestrator = Orchestrator(arithmetic(), given=N)
        with pytest.raises(OSError, match="disk full"):
            await orchestrator.run_each(seeds(10_000), concurrency=8, handle=handle)
        assert await only_this_task_left()
        return seen

    assert run_clean(main()) < 5 + 8  # stopped, not run to the end of the input


def test_run_each_gives_the_loop_a_turn_when_components_never_wait() -> None:
    async def main() -> list[int]:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        seen: list[int] = []
        task = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        orchestrator = Orchestrator(arithmetic(), given=N)  # no component ever suspends
        await orchestrator.run_each(seeds(400), concurrency=2,
                                    handle=lambda outcome: seen.append(ticks))
        task.cancel()
        return seen

    seen = run_clean(main())
    assert len(seen) == 400 and seen[-1] - seen[0] >= 400 // TURN_EVERY // 2 - 1
