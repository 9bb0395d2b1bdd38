"""Running a graph over constructs: one at a time, or a stream of them with bounded concurrency."""

import asyncio
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Sized,
)
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from ix.matrix.artifact import Artifact
from ix.matrix.component import Component
from ix.matrix.construct import Construct
from ix.matrix.dag import Dag, DagCompiler
from ix.matrix.errors import ComponentError
from ix.matrix.scheduler import DagScheduler
from ix.matrix.sink import ArtifactSink

S = TypeVar("S")


@dataclass(frozen=True, slots=True)
class Outcome(Generic[S]):
    """One construct out of `run_many`: finished, or as far as it got when `error` was raised."""

    construct: Construct[S]
    error: ComponentError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class _Crash:
    """A failure outside any component (the input iterator, the sink): stop the stream."""

    __slots__ = ("error",)

    def __init__(self, error: Exception) -> None:
        self.error = error


_DONE = object()  # every construct ran


class _SharedAsyncIterator(Generic[S]):
    """Serialises `anext` across workers: an async generator refuses concurrent `anext` calls."""

    __slots__ = ("_exhausted", "_iterator", "_lock")

    def __init__(self, iterator: AsyncIterator[Construct[S]]) -> None:
        self._iterator = iterator
        self._lock = asyncio.Lock()
        self._exhausted = False

    async def next(self) -> Construct[S] | None:
        """The next construct, or None once the input is exhausted."""
        async with self._lock:
            if self._exhausted:
                return None
            try:
                return await anext(self._iterator)
            except StopAsyncIteration:
                self._exhausted = True
                return None


async def _attempt(component: Component, construct: Construct[Any]) -> tuple[bool, Any]:
    """Runs `component`, returning (ok, data or exception) so siblings in a level all finish."""
    try:
        return True, await component.run(construct)
    except Exception as error:
        return False, error


class Orchestrator:
    """Runs the components of a graph over constructs, level by level.

    The graph is compiled and levelled once here, so per-construct work is just awaiting the
    components and appending their artifacts.
    """

    def __init__(
        self,
        graph: Dag | Iterable[Component],
        *,
        given: frozenset[str] = frozenset(),
        sink: ArtifactSink | None = None,
    ) -> None:
        if isinstance(graph, Dag):
            if given and given != graph.given:
                raise ValueError(
                    f"given={sorted(given)} conflicts with the Dag's given={sorted(graph.given)}"
                )
            self.dag = graph
        else:
            self.dag = DagCompiler().compile(graph, given=given)
        self.sink = sink
        self.levels = DagScheduler(self.dag).levels()

    async def run(self, construct: Construct[S]) -> Construct[S]:
        """`construct` with one artifact appended per component, in (level, name) order.

        Raises `ComponentError` (original exception as `__cause__`) carrying the construct as it
        stood: every artifact appended before the failure, including those of successful
        siblings in the failing level.
        """
        sink = self.sink
        for level in self.levels:
            if len(level) == 1:  # the common case: no task, no gather
                component = level[0]
                try:
                    data = await component.run(construct)
                except Exception as error:
                    raise ComponentError(component.name, construct, error) from error
                artifact = Artifact(component.provides, component.name, data)
                construct = construct.append(artifact)
                if sink is not None:
                    sink.write(artifact, construct)
                continue

            results = await asyncio.gather(*[_attempt(c, construct) for c in level])
            failures: list[tuple[Component, Exception]] = []
            for component, (ok, value) in zip(level, results, strict=True):
                if not ok:
                    failures.append((component, value))
                    continue
                artifact = Artifact(component.provides, component.name, value)
                construct = construct.append(artifact)
                if sink is not None:
                    sink.write(artifact, construct)
            if failures:
                (failed, cause), *others = failures
                failure = ComponentError(failed.name, construct, cause)
                for other, other_cause in others:
                    failure.add_note(f"component {other.name!r} also failed: {other_cause!r}")
                raise failure from cause
        return construct

    def run_many(
        self,
        constructs: Iterable[Construct[S]] | AsyncIterable[Construct[S]],
        *,
        concurrency: int,
    ) -> AsyncIterator[Outcome[S]]:
        """Runs every construct, at most `concurrency` at once, yielding outcomes as they finish.

        Memory stays flat whatever the input size: a fixed pool of workers pulls lazily from
        one shared iterator and hands outcomes back through a bounded queue. A failing
        component is reported in its `Outcome` and the stream goes on; a failure outside any
        component (the input, the sink) ends the stream with that exception. Closing or
        cancelling the iterator cancels and awaits every worker. `concurrency` is checked here,
        at call time, rather than at the first iteration.
        """
        return self._stream(constructs, _workers(constructs, concurrency))

    async def run_each(
        self,
        constructs: Iterable[Construct[S]] | AsyncIterable[Construct[S]],
        *,
        concurrency: int,
        handle: Callable[[Outcome[S]], object],
        gate: Callable[[], Awaitable[object] | None] | None = None,
    ) -> None:
        """`run_many` with each outcome handed to `handle`, as it finishes, by the worker that
        ran it: no queue between (a queue's put and get cost as much as a cheap construct's
        components). `handle` runs on the loop, so one call at a time. If it raises, or the
        input does, every worker is cancelled and awaited and the exception is raised here;
        so it is when this call is cancelled. `gate`, called before each construct is taken,
        returns None to go on or an awaitable to wait for first (a pause)."""
        await self._each(constructs, _workers(constructs, concurrency), handle, gate)

    async def _stream(
        self,
        constructs: Iterable[Construct[S]] | AsyncIterable[Construct[S]],
        workers: int,
    ) -> AsyncIterator[Outcome[S]]:
        queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=workers)

        async def produce() -> None:
            try:
                await self._each(constructs, workers, queue.put)
            except Exception as error:
                await queue.put(_Crash(error))
                return
            await queue.put(_DONE)

        producer = asyncio.create_task(produce())
        try:
            get = queue.get
            while True:
                item = await get()
                if item is _DONE:
                    return
                if type(item) is _Crash:
                    raise item.error
                yield item
        finally:
            producer.cancel()
            await asyncio.gather(producer, return_exceptions=True)

    async def _each(
        self,
        constructs: Iterable[Construct[S]] | AsyncIterable[Construct[S]],
        workers: int,
        deliver: Callable[[Outcome[S]], Any],
        gate: Callable[[], Awaitable[object] | None] | None = None,
    ) -> None:
        """`workers` tasks running the constructs, each outcome to `deliver` (awaited when it
        returns an awaitable: a queue's `put`); the first exception cancels the others, and
        once `deliver` raised no worker hands it another outcome."""
        failed: list[BaseException] = []
        source = _SharedAsyncIterator(aiter(constructs)) \
            if isinstance(constructs, AsyncIterable) else iter(constructs)
        tasks = [asyncio.create_task(self._work(source, deliver, failed, gate))
                 for _ in range(workers)]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _work(self, constructs: Iterator[Construct[S]] | _SharedAsyncIterator[S],
                    deliver: Callable[[Outcome[S]], Any], failed: list[BaseException],
                    gate: Callable[[], Awaitable[object] | None] | None = None) -> None:
        # A plain `next` cannot be interleaved on one event loop, so workers share an
        # iterator without a lock (an async one takes turns: `_SharedAsyncIterator`).
        run = self.run
        if isinstance(constructs, _SharedAsyncIterator):
            shared, iterator = constructs, None
        else:
            shared, iterator = None, constructs
        turn = 0
        while True:
            if gate is not None and (waiting_for := gate()) is not None:
                await waiting_for
            construct = next(iterator, None) if iterator is not None \
                else await cast(_SharedAsyncIterator[S], shared).next()
            if construct is None:
                return
            try:
                outcome = Outcome(await run(construct))
            except ComponentError as error:
                outcome = Outcome(error.construct, error)
            if failed:  # another outcome's `deliver` raised: the run is ending
                return
            try:
                waiting = deliver(outcome)
            except BaseException as error:
                failed.append(error)
                raise
            if waiting is not None:
                await waiting
            turn += 1
            if turn == TURN_EVERY:  # components that never wait would hold the loop
                turn = 0
                await asyncio.sleep(0)


#: Every this many constructs a worker gives the loop a turn (signals, the caller's tasks).
TURN_EVERY = 8


def _workers(constructs: object, concurrency: int) -> int:
    """How many workers: `concurrency` (an int >= 1, checked at call time), no more than the
    constructs when their number is known."""
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be an int >= 1, got {concurrency!r}")
    if isinstance(constructs, Sized):
        return max(1, min(concurrency, len(constructs)))
    return concurrency
