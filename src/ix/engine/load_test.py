"""`load:` — an open-loop generator: a run whose trials are requests sent on a schedule.

A fixed-concurrency run is a closed loop: the next trial starts when one ends, so a slow
service is offered less load and its slowness hides (coordinated omission). Under `load:`,
request i of a subject is due at `schedule[i]` seconds after that subject's load began
(i / rps, or seeded Poisson arrivals) and is sent then, whether or not earlier ones were
answered. Each request is an ordinary trial (trial index = request number, seed derived as
usual) run by the same pipeline and recorded by the same loop as any other
(`ix.engine.run._execute`): `LoadFeed` only decides *when* each construct is released.

At most `max_in_flight` requests are in flight; a request due while that many are waits
for a slot (counted `waited`, and its lateness shows in the schedule error), and one whose
slot frees only after the window ended is not sent (`dropped`). Subjects take turns: each
gets the whole schedule alone, after the previous one's requests have all finished.
"""

import asyncio
import gc
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from ix.domain.errors import ConfigError
from ix.engine.plan import Plan, SubjectPlan, TrialKey
from ix.engine.schedule import LoadPlan
from ix.eval.load_test_summary import LoadTally, Objective, load_block, objectives
from ix.eval.schemas import LoadOut
from ix.matrix import Construct

#: Between planning a subject's schedule and its first request: the loop's turn to settle.
LEAD_S = 0.02


def refuse_load_with(plan: Plan, *, cache: str | None, executor: str) -> None:
    """`load:` measures live subjects from this process: not behind the observation cache
    (a replayed answer has no latency), not on another executor (its hops would be timed)."""
    if plan.load is None:
        return
    if cache is not None:
        raise ConfigError("an experiment with `load:` measures live answers; leave --cache "
                          "out", field="--cache")
    if executor != "local":
        raise ConfigError(f"an experiment with `load:` runs on the local executor, not "
                          f"{executor!r}", field="--executor")


def _key(plan: Plan, sp: SubjectPlan, load: LoadPlan, i: int) -> TrialKey:
    case = plan.cases[load.picks[i]]
    return TrialKey(sp, case, i, plan.trial_seed(sp.subject.name, case.id, i))


class _Subject:
    """One subject's requests while its load runs: what the summary counts."""

    def __init__(self, name: str, load: LoadPlan) -> None:
        self.tally = LoadTally(name, planned=load.requests - load.warmup)
        self.sent: dict[int, float] = {}   # request -> lateness (ms), until it finishes
        self.in_flight = 0
        self.idle = asyncio.Event()
        self.idle.set()


class LoadFeed:
    """The plan's trials as an async iterator of constructs, each released at its time; the
    recording loop hands every record back (`done`) to free its slot and count it."""

    def __init__(self, plan: Plan, load: LoadPlan) -> None:
        self.plan, self.load = plan, load
        self._subjects = {sp.subject.name: _Subject(sp.subject.name, load)
                          for sp in plan.subjects}
        self._halted = False
        self._waiter: asyncio.Future[None] | None = None
        self._slots: asyncio.Semaphore | None = None

    def halt(self) -> None:
        """Send nothing more (a first Ctrl-C): the requests in flight finish."""
        self._halted = True
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def start(self, construct: Callable[[TrialKey], Construct[TrialKey]],
              admit: Callable[[TrialKey], bool | None]) -> AsyncIterator[Construct[TrialKey]]:
        """The constructs, each when due: `construct` makes one of a key; `admit` is the
        run's gate (False: the subject is stopped; None: stop everything)."""
        return self._run(construct, admit)

    async def _run(self, construct: Callable[[TrialKey], Construct[TrialKey]],
                   admit: Callable[[TrialKey], bool | None]
                   ) -> AsyncIterator[Construct[TrialKey]]:
        loop = asyncio.get_running_loop()
        slots = self._slots = asyncio.Semaphore(self.load.max_in_flight)
        schedule, warmup, window = self.load.schedule, self.load.warmup, self.load.window_s
        for sp in self.plan.subjects:  # set-up (imports, a connection pool) is not timed
            prepare = getattr(sp.runtime, "prepare", None)
            if prepare is not None:
                await prepare()
        # what is alive now (the workers, the pools, httpx's modules) lives for the whole
        # load: the collector's pauses, which delay sends and inflate latencies, skip it
        gc.freeze()
        for sp in self.plan.subjects:
            state = self._subjects[sp.subject.name]
            tally = state.tally
            t0 = loop.time() + LEAD_S
            ended: float | None = None  # when sending stopped early, s after t0
            for i, offset in enumerate(schedule):
                if not await self._until(loop, t0 + offset):
                    ended = loop.time() - t0
                    break
                if slots.locked():  # max_in_flight requests in flight: wait for one
                    tally.waited += i >= warmup
                    await slots.acquire()
                    if loop.time() - t0 >= window:  # a slot only once the window ended
                        tally.dropped += len(schedule) - max(i, warmup)
                        slots.release()
                        break
                else:
                    await slots.acquire()
                key = _key(self.plan, sp, self.load, i)
                verdict = admit(key)
                if not verdict:  # None: stop all (a signal, a limit); False: the breaker
                    slots.release()
                    ended = loop.time() - t0
                    if verdict is None:
                        self._halted = True
                    break
                late_ms = max(0.0, (loop.time() - t0 - offset) * 1000.0)
                state.sent[i] = late_ms
                state.in_flight += 1
                state.idle.clear()
                if i < warmup:
                    tally.warmup += 1
                else:
                    tally.late_ms.append(late_ms)
                yield construct(key)
            measured = float(self.load.options["duration_s"])
            if ended is not None:
                measured = min(measured, max(0.0, ended - float(self.load.options["warmup_s"])))
            tally.window_s = measured
            # the next subject starts alone: this one's requests all finish first
            await state.idle.wait()
            if self._halted:
                return

    async def _until(self, loop: asyncio.AbstractEventLoop, due: float) -> bool:
        """Sleep until loop time `due`; False when halted meanwhile (or before)."""
        if self._halted:
            return False
        if due > loop.time():
            waiter = self._waiter = loop.create_future()
            handle = loop.call_at(due, _wake, waiter)
            try:
                await waiter
            finally:
                handle.cancel()
                self._waiter = None
        return not self._halted

    def done(self, record: dict[str, Any]) -> bool:
        """A request's record, before it is written: its `load` facts are added, its slot
        freed and its outcome counted. False for a warm-up request (left out of every
        statistic, the run's tallies too)."""
        state = self._subjects[record["subject"]]
        i = int(record["trial"])
        late_ms = state.sent.pop(i, 0.0)
        warm = i < self.load.warmup
        record["load"] = {"at_s": round(self.load.schedule[i], 6), "late_ms": round(late_ms, 3),
                          "warmup": warm}
        state.in_flight -= 1
        if state.in_flight == 0:
            state.idle.set()
        if self._slots is not None:
            self._slots.release()
        if warm:
            return False
        if record.get("error"):
            state.tally.errored += 1
        else:
            state.tally.latencies_ms.append(float(record["duration_ms"]))
        return True

    def block(self, sensors: Sequence[Mapping[str, Any]], *, listed: bool) -> LoadOut:
        """The summary's `load` block; `sensors` as `objectives` takes them."""
        slas: list[Objective] = objectives(sensors, listed=listed)
        return load_block(self.load.options, [s.tally for s in self._subjects.values()], slas)


def _wake(waiter: "asyncio.Future[None]") -> None:
    if not waiter.done():
        waiter.set_result(None)
