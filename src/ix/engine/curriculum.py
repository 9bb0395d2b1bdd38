"""`curriculum:` — cases run in an adaptive order that finds each subject's frontier, the
difficulty at which its success crosses 50% (`ix.stats.frontier`).

Each subject runs one trial at a time: the next goes to the difficulty where its outcome is
expected to narrow the frontier's posterior most (`next_difficulty`), to the case of that
difficulty with the fewest trials so far (ties in an order drawn from the experiment's seed,
the same for every subject), at that case's next trial index (so its seed is the one a fixed
run gives it; a case runs at most `trials` times). A subject stops when the frontier's
interval is at most `stop_width` wide (`settled`), after `max_trials` trials (`max_trials`),
or when no case has a trial left (`exhausted`). One trial in flight per subject keeps a run
reproducible: the order depends on outcomes only, never on which trial finished first.
Subjects run side by side, each in its own sequence.
"""

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ix.engine.adaptive import TrialFeed
from ix.engine.plan import Plan, SubjectPlan, TrialKey
from ix.eval.frontier import Curriculum, case_difficulty, next_step, pad_of
from ix.eval.models import EvalCase
from ix.matrix import Construct

#: The key under which a run's `stopped` carries why each subject's curriculum stopped.
CURRICULUM = "\0curriculum"


@dataclass
class _Subject:
    sp: SubjectPlan
    issued: dict[str, int] = field(default_factory=dict)     # case id -> trials handed out
    counts: dict[float, list[int]] = field(default_factory=dict)  # difficulty -> [k, n]
    trials: int = 0
    pending: bool = False


class CurriculumFeed(TrialFeed):
    """A curriculum's trials (`TrialFeed`), one per subject at a time (module docstring)."""

    def __init__(self, plan: Plan, make: Callable[[TrialKey], Construct[TrialKey]],
                 admit: Callable[[TrialKey], bool | None] | None = None):
        assert plan.curriculum is not None
        super().__init__(make, admit)
        self.plan = plan
        self.rule: Curriculum = plan.curriculum
        self.stopped: dict[str, str] = {}
        rank = {c.id: hashlib.sha256(f"{plan.seed}:curriculum:{c.id}".encode()).digest()
                for c in plan.cases}
        self._cases: dict[float, list[EvalCase]] = {}
        self._where: dict[str, tuple[float, EvalCase]] = {}
        for case in sorted(plan.cases, key=lambda c: rank[c.id]):
            x = case_difficulty(case, self.rule.by)
            if x is not None:
                self._cases.setdefault(x, []).append(case)
                self._where[case.id] = (x, case)
        self._subjects = {sp.subject.name: _Subject(sp) for sp in plan.subjects}
        for state in self._subjects.values():
            self._next(state)

    def _refused(self, key: TrialKey) -> None:
        self._subjects[key.subject.subject.name].pending = False  # the circuit breaker

    def done(self, record: dict[str, Any]) -> None:
        """A trial finished: count it at its case's difficulty, then choose the next."""
        self._inflight -= 1
        state = self._subjects[record["subject"]]
        state.pending = False
        x, case = self._where[record["probe_id"]]
        reading = record["reading"]
        if not record["error"] and reading is not None and reading.get("passed") is not None:
            cell = state.counts.setdefault(x, [0, 0])
            cell[0] += bool(reading["passed"]) == (case.expectation == "must_trigger")
            cell[1] += 1
        self._next(state)
        self._wake.set()

    def _next(self, state: _Subject) -> None:
        name = state.sp.subject.name
        if self._halted or state.pending or name in self.stopped:
            return
        open_levels = [x for x, cases in self._cases.items()
                       if any(state.issued.get(c.id, 0) < self.plan.trials for c in cases)]
        step = next_step(self.rule, state.counts, sorted(open_levels), state.trials,
                         self._pad())
        if isinstance(step, str):
            self.stopped[name] = step
            return
        x = step
        case = min(self._cases[x], key=lambda c: state.issued.get(c.id, 0))
        trial = state.issued.get(case.id, 0)
        state.issued[case.id] = trial + 1
        state.trials += 1
        state.pending = True
        self._ready.append(TrialKey(state.sp, case, trial,
                                    self.plan.trial_seed(name, case.id, trial), 0))

    def _pad(self) -> float:
        return pad_of(list(self._cases))
