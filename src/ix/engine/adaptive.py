"""`trials: auto`: each case gets trials until its majority vote is settled, within bounds.

A case is settled when, under the posterior of its activation rate (Beta(1,1) prior), the
majority vote it would have after `max_trials` is already known at the experiment's
credibility c: the posterior predictive P(final vote activates) is ≥ c or ≤ 1 − c. So a case
whose first three trials agree stops at three (P = 0.955 with ten as the maximum), and a
borderline case gets the whole budget. Every case of every subject first gets `min_trials`;
then one more trial at a time while unsettled, up to `max_trials`. Trial indices and seeds
are those a fixed run uses, so a case that runs to the maximum sees exactly the trials of a
fixed run of that length. The credibility is the goal's, else 0.95.
"""

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Any

from ix.engine.plan import Plan, SubjectPlan, TrialKey, trial_seed
from ix.eval.models import EvalCase
from ix.eval.scoring import Tally
from ix.matrix import Construct

SETTLED = "settled"
MAX_TRIALS = "max_trials"


class AdaptiveFeed:
    """An async source of constructs that grows as results come back (`done`)."""

    def __init__(self, plan: Plan, tallies: dict[str, Tally],
                 make: Callable[[TrialKey], Construct[TrialKey]]):
        from ix.stats.sequential import majority_vote_probability

        self._vote = majority_vote_probability
        self.plan = plan
        self.tallies = tallies
        self.make = make
        self.issued: dict[tuple[str, str], int] = {}
        self.stopped: dict[str, dict[str, str]] = {sp.subject.name: {} for sp in plan.subjects}
        self._by_name = {sp.subject.name: sp for sp in plan.subjects}
        self._cases = {c.id: c for c in plan.cases}
        self._ready: deque[TrialKey] = deque()
        self._inflight = 0
        self._wake = asyncio.Event()
        self._halted = False
        first = min(plan.min_trials, plan.trials)
        for case in plan.cases:
            for trial in range(first):
                for sp in plan.subjects:
                    self._ready.append(self._key(sp, case, trial))
            for sp in plan.subjects:
                self.issued[(sp.subject.name, case.id)] = first

    def _key(self, sp: SubjectPlan, case: EvalCase, trial: int) -> TrialKey:
        return TrialKey(sp, case, trial, trial_seed(self.plan.seed, sp.subject.name, case.id,
                                                    trial))

    def __aiter__(self) -> AsyncIterator[Construct[TrialKey]]:
        return self

    async def __anext__(self) -> Construct[TrialKey]:
        while not self._ready:
            if self._inflight == 0:
                raise StopAsyncIteration
            self._wake.clear()
            await self._wake.wait()
        self._inflight += 1
        return self.make(self._ready.popleft())

    def halt(self) -> None:
        """Schedule nothing more: what is in flight finishes, nothing new starts."""
        self._ready.clear()
        self._halted = True
        self._wake.set()

    def done(self, record: dict[str, Any]) -> None:
        """A trial finished: decide whether its case needs another."""
        self._inflight -= 1
        subject, case_id = record["subject"], record["probe_id"]
        key = (subject, case_id)
        counts = self.tallies[subject].counts[case_id]
        issued = self.issued[key]
        finished = counts.valid + counts.errors
        if finished == issued and case_id not in self.stopped[subject]:
            if issued >= self.plan.trials:
                self.stopped[subject][case_id] = MAX_TRIALS
            elif self._settled(counts.passed, counts.valid):
                self.stopped[subject][case_id] = SETTLED
            elif not self._halted:
                sp = self._by_name[subject]
                self._ready.append(self._key(sp, self._cases[case_id], issued))
                self.issued[key] = issued + 1
        self._wake.set()

    def _settled(self, passed: int, valid: int) -> bool:
        if valid == 0:
            return False
        p = self._vote(passed, valid, self.plan.trials)
        c = self.plan.credibility
        return p >= c or p <= 1 - c
