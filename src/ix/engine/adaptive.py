"""`trials: auto`: each case gets trials until its majority vote is settled, within bounds.

A case is settled when, under the posterior of its activation rate (Beta(1,1) prior), the
majority vote it would have after `max_trials` is already known at the experiment's
credibility c: the posterior predictive P(final vote activates) is ≥ c or ≤ 1 − c. So a case
whose first three trials agree stops at three (P = 0.955 with ten as the maximum), and a
borderline case gets the whole budget. Every case of every subject first gets `min_trials`;
then one more trial at a time while unsettled, up to `max_trials`. Trial indices and seeds
are those a fixed run uses, so a case that runs to the maximum sees exactly the trials of a
fixed run of that length. The credibility is the goal's, else 0.95.

Resumed (`--resume`) or retried (`--retry-failed`), a case starts from what the log holds:
its recorded trials that stand are counted, the others among them run again (missing ones,
or errored ones when retrying), and then the rule is walked from `min_trials` over the
trials in order — it stops where it first would have, or goes on past them. Resumed, a case
ends with exactly the trials an uninterrupted run gives it; retried, the newer outcomes may
settle it sooner (the trials recorded past that point still count) or call for more.
Limits and the circuit breaker hold the feed through the same gate as a fixed run.
"""

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from ix.engine.plan import Plan, SubjectPlan, TrialKey
from ix.engine.resume import ERRORED, FAILED, MISSING, PASSED, Continuation
from ix.eval.models import EvalCase
from ix.matrix import Construct
from ix.stats.sequential import majority_vote_probability

SETTLED = "settled"
MAX_TRIALS = "max_trials"


@dataclass
class _Case:
    """One case of one subject: trials 0..issued-1 are part of the run; the rule is next
    looked at with the outcomes of trials 0..n-1 counted (valid, passed)."""

    sp: SubjectPlan
    case: EvalCase
    outcomes: bytearray   # per trial: PASSED, FAILED, ERRORED, or MISSING while it runs
    issued: int = 0
    pending: int = 0      # trials issued and not finished (waiting, or in flight)
    n: int = 0
    valid: int = 0
    passed: int = 0


class TrialFeed:
    """An async source of constructs that grows as results come back: trials queued by the
    subclass (`_ready`), handed out through the run's gate `admit(key)` — True runs it, False
    leaves it out (its subject was stopped: `_refused`), None halts the feed (a limit was
    reached) — until nothing is queued and nothing is in flight."""

    def __init__(self, make: Callable[[TrialKey], Construct[TrialKey]],
                 admit: Callable[[TrialKey], bool | None] | None = None):
        self.make = make
        self.admit = admit
        self._ready: deque[TrialKey] = deque()
        self._inflight = 0
        self._wake = asyncio.Event()
        self._halted = False

    def __aiter__(self) -> AsyncIterator[Construct[TrialKey]]:
        return self

    async def __anext__(self) -> Construct[TrialKey]:
        while True:
            while not self._ready:
                if self._inflight == 0:
                    raise StopAsyncIteration
                self._wake.clear()
                await self._wake.wait()
            key = self._ready.popleft()
            verdict = True if self.admit is None else self.admit(key)
            if verdict is None:
                self.halt()
            elif verdict:
                self._inflight += 1
                return self.make(key)
            else:
                self._refused(key)

    def halt(self) -> None:
        """Schedule nothing more: what is in flight finishes, nothing new starts."""
        self._ready.clear()
        self._halted = True
        self._wake.set()

    def _refused(self, key: TrialKey) -> None:
        """The gate left `key` out (its subject was stopped)."""


class AdaptiveFeed(TrialFeed):
    """`trials: auto`'s trials (`TrialFeed`), growing as results come back (`done`)."""

    def __init__(self, plan: Plan, make: Callable[[TrialKey], Construct[TrialKey]],
                 continuation: Continuation | None = None,
                 admit: Callable[[TrialKey], bool | None] | None = None):
        super().__init__(make, admit)
        self._vote = majority_vote_probability
        self.plan = plan
        self.continuation = continuation
        self.stopped: dict[str, dict[str, str]] = {sp.subject.name: {} for sp in plan.subjects}
        self._first = min(plan.min_trials, plan.trials)
        recorded = continuation.state.codes if continuation is not None else {}
        self._cases: dict[tuple[str, str], _Case] = {}
        for case in plan.cases:
            states = []
            for sp in plan.subjects:
                codes = recorded.get((sp.subject.name, case.id), b"")
                state = _Case(sp, case, bytearray(max(plan.trials, len(codes))),
                              issued=max(self._first, len(codes)))
                self._cases[(sp.subject.name, case.id)] = state
                states.append(state)
            # trial by trial, each subject in turn: the order of a fixed run
            for trial in range(max(s.issued for s in states)):
                for state in states:
                    if trial < state.issued:
                        self._take(state, trial)
        for state in self._cases.values():
            self._advance(state)

    def done(self, record: dict[str, Any]) -> None:
        """A trial finished: note it, and decide whether its case needs another."""
        self._inflight -= 1
        state = self._cases[(record["subject"], record["probe_id"])]
        reading = record["reading"]
        state.outcomes[record["trial"]] = (ERRORED if record["error"] else
                                           PASSED if reading and reading["passed"] else FAILED)
        state.pending -= 1
        self._advance(state)
        self._wake.set()

    def _take(self, state: _Case, trial: int) -> None:
        """Trial `trial` is part of the case: its recorded outcome when that stands, else it
        is queued (with the attempt a retry gives it)."""
        name, case_id = state.sp.subject.name, state.case.id
        attempt = 0
        if self.continuation is not None:
            run = self.continuation
            code = run.state.code(name, case_id, trial)
            if code != MISSING and run.keeps(code):
                state.outcomes[trial] = code
                return
            if code != MISSING:  # errored, and retried: the next attempt
                attempt = run.state.attempt(name, case_id, trial) + 1
        state.pending += 1
        self._ready.append(TrialKey(state.sp, state.case, trial,
                                    self.plan.trial_seed(name, case_id, trial), attempt))

    def _advance(self, state: _Case) -> None:
        """Once every trial of the case so far finished: walk the rule over them, in order,
        to where it stops the case or asks for the next trial."""
        stopped = self.stopped[state.sp.subject.name]
        while state.pending == 0 and state.case.id not in stopped:
            n = state.n
            if n >= self._first:
                if n >= self.plan.trials:
                    stopped[state.case.id] = MAX_TRIALS
                    return
                if self._settled(state.passed, state.valid):
                    stopped[state.case.id] = SETTLED
                    return
            if n < state.issued:  # count trial n, then look again
                code = state.outcomes[n]
                state.valid += code in (PASSED, FAILED)
                state.passed += code == PASSED
                state.n += 1
                continue
            if self._halted:
                return
            state.issued += 1
            self._take(state, n)

    def _settled(self, passed: int, valid: int) -> bool:
        if valid == 0:
            return False
        p = self._vote(passed, valid, self.plan.trials)
        c = self.plan.credibility
        return p >= c or p <= 1 - c
