"""Running a graph over constructs: one at a time, or a stream of them with bounded concurrency."""

import asyncio
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Sized
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

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
    """A worker failed outside any component (the input iterator, the sink): stop the stream."""

    __slots__ = ("error",)

    def __init__(self, error: Exception) -> None:
        self.error = error


_DONE = object()  # a worker found the input exhausted


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
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ValueError(f"concurrency must be an int >= 1, got {concurrency!r}")
        workers = concurrency
        if isinstance(constructs, Sized):
            workers = max(1, min(concurrency, len(constructs)))
        return self._stream(constructs, workers)

    async def _stream(
        self,
        constructs: Iterable[Construct[S]] | AsyncIterable[Construct[S]],
        workers: int,
    ) -> AsyncIterator[Outcome[S]]:
        queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=workers)
        if isinstance(constructs, AsyncIterable):
            source = _SharedAsyncIterator(aiter(constructs))
            tasks = [asyncio.create_task(self._work_async(source, queue)) for _ in range(workers)]
        else:
            iterator = iter(constructs)
            tasks = [asyncio.create_task(self._work(iterator, queue)) for _ in range(workers)]
        try:
            live = workers
            get = queue.get
            while live:
                item = await get()
                if item is _DONE:
                    live -= 1
                elif type(item) is _Crash:
                    raise item.error
                else:
                    yield item
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _work(self, iterator: Iterator[Construct[S]], queue: asyncio.Queue[Any]) -> None:
        # A plain `next` cannot be interleaved on one event loop, so workers share the
        # iterator without a lock.
        run = self.run
        put = queue.put
        try:
            for construct in iterator:
                try:
                    outcome = Outcome(await run(construct))
                except ComponentError as error:
                    outcome = Outcome(error.construct, error)
                await put(outcome)
        except Exception as error:
            await put(_Crash(error))
            return
        await put(_DONE)

    async def _work_async(self, source: _SharedAsyncIterator[S], queue: asyncio.Queue[Any]) -> None:
        run = self.run
        put = queue.put
        try:
            while (construct := await source.next()) is not None:
                try:
                    outcome = Outcome(await run(construct))
                except ComponentError as error:
                    outcome = Outcome(error.construct, error)
                await put(outcome)
        except Exception as error:
            await put(_Crash(error))
            return
        await put(_DONE)
