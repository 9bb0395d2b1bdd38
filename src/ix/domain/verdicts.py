"""From readings to a case's verdict: the seed's `Verdict`, `ProbeResult` and
`aggregate_readings` (domain models seed, "Eval Models" and "Type Flow").

One rule decides a case, wherever its trials are counted: of the trials with a verdict (a
reading whose `passed` is a boolean; an errored trial, or one whose first sensor had no
verdict, is left out), the fraction that passed is the case's `score`; the majority vote
activates when `score > 0.5` (so a tie does not), and is `correct` when it matches the
case's expectation. `majority` applies it to counts (the engine's `Tally`, which keeps
counts only), `aggregate_readings` to a case's trials (`Verdict`s), and both give the same
`ProbeResult`. `acceptable` cases never run and never count (`ix.eval.scoring`).

That rule is the default scorer; experiment.yaml's `scorers:` may choose another
(`ix.eval.scorers`: `any`, `all`, `mean`, `threshold`, or a plugin), which sees a case as a
`CaseTrials` and decides it with `scored`. The score stays the fraction that passed; only the
verdict (and so the case's vote) changes.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pydantic import ConfigDict

from ix.domain.model import Model
from ix.domain.types import Reading

_frozen = ConfigDict(frozen=True, arbitrary_types_allowed=True)


class Verdict(Model):
    """One trial of one probe: what came back and what the first sensor read of it (domain
    models seed, "Eval Models › Verdict"). `reading` is None for a trial with no verdict (it
    errored, or its sensor could not judge): it does not count towards the case's score."""

    model_config = _frozen

    probe_id: str
    #: the trial's index, from 0
    trial: int
    #: the case's expectation when it ran: `must_trigger` or `should_not_trigger`
    expectation: str
    #: what the subject answered (an `EvalObservation`, or the runtime's own object)
    observation: Any = None
    reading: Reading | None = None

    @property
    def passed(self) -> bool | None:
        """The trial's verdict: None when it has none."""
        return None if self.reading is None else self.reading.passed


class ProbeResult(Model):
    """One probe aggregated across its trials (domain models seed, "Eval Models ›
    ProbeResult"): `score` the fraction of its trials with a verdict that passed (0.0 with
    none), `correct` whether the majority vote matches the expectation (False with none).
    `trials` holds the `Verdict`s: all of them from `aggregate_readings`; from the engine's
    count-only aggregate (`ix.eval.scoring.Tally`) each trial's verdict without its
    observation, up to `TRIALS_KEPT` trials per subject (docs/results.md)."""

    model_config = _frozen

    probe_id: str
    expectation: str
    score: float
    correct: bool
    trials: tuple[Verdict, ...] = ()
    #: the case's vote (did it activate / pass as a whole) when a scorer other than the
    #: majority decided it (`scored`); None: the majority vote of `score` (`activated`)
    vote: bool | None = None

    @property
    def fired(self) -> bool:
        """The case's vote: the scorer's, else the majority vote of its score."""
        return activated(self.score) if self.vote is None else self.vote


def activated(score: float) -> bool:
    """The majority vote of a case whose trials passed at rate `score`: strictly more than
    half (a tie does not activate)."""
    return score > 0.5


def majority(probe_id: str, expectation: str, passed: int, valid: int,
             trials: tuple[Verdict, ...] = ()) -> ProbeResult:
    """The `ProbeResult` of a case whose `valid` trials (those with a verdict) include
    `passed` that passed."""
    score = passed / valid if valid else 0.0
    fired = activated(score)
    correct = fired if expectation == "must_trigger" else not fired
    return ProbeResult(probe_id=probe_id, expectation=expectation, score=score,
                       correct=bool(valid) and correct, trials=trials)


def aggregate_readings(verdicts: Iterable[Verdict]) -> ProbeResult:
    """The seed's aggregate step (Reading → ProbeResult): the `ProbeResult` of one case's
    trials, kept in its `trials`. Every verdict must be of the same probe and expectation
    (ValueError otherwise, or with none: a case's result needs its id)."""
    trials = tuple(verdicts)
    if not trials:
        raise ValueError("aggregate_readings needs at least one verdict (the case's id)")
    first = trials[0]
    mixed = {(v.probe_id, v.expectation) for v in trials} - {(first.probe_id,
                                                              first.expectation)}
    if mixed:
        raise ValueError(f"aggregate_readings takes one case's verdicts: {first.probe_id!r} "
                         f"({first.expectation}) and {sorted(mixed)!r} given together")
    votes = [v.passed for v in trials if v.passed is not None]
    return majority(first.probe_id, first.expectation, sum(votes), len(votes), trials)


@dataclass(frozen=True, slots=True)
class CaseTrials:
    """What a scorer sees of one case: its expectation and its valid trials' counts (an
    errored trial, or one whose first sensor had no verdict, is not among them)."""

    probe_id: str
    expectation: str
    #: valid trials whose first reading passed, of `valid` (at least 1 when a scorer is asked)
    passed: int
    valid: int
    #: the mean of the first reading's `score` over the valid trials that have one; None
    #: when none has
    mean_score: float | None = None

    @property
    def right(self) -> int:
        """Trials whose reading matched the expectation: passed on a `must_trigger` case,
        not passed on a `should_not_trigger` one."""
        return self.passed if self.expectation == "must_trigger" else self.valid - self.passed

    @property
    def rate(self) -> float:
        """The fraction of valid trials that passed (the case's `score`)."""
        return self.passed / self.valid if self.valid else 0.0


@runtime_checkable
class Scorer(Protocol):
    """Decides a case from its trials (experiment.yaml's `scorers:`): whether the case is
    correct, i.e. its trials as a whole match its expectation. Asked only of a case with a
    valid trial; a case without one has no verdict, whatever the scorer."""

    def verdict(self, case: CaseTrials) -> bool: ...


def scored(case: CaseTrials, scorer: Scorer) -> ProbeResult:
    """The `ProbeResult` of `case` as `scorer` decides it: its score the fraction that
    passed (as with the majority), `correct` the scorer's verdict, and the vote that follows
    from it (`correct` on a must case, its opposite on a should-not case)."""
    if not case.valid:
        return majority(case.probe_id, case.expectation, case.passed, case.valid)
    correct = bool(scorer.verdict(case))
    vote = correct if case.expectation == "must_trigger" else not correct
    return ProbeResult(probe_id=case.probe_id, expectation=case.expectation,
                       score=case.rate, correct=correct, vote=vote)
