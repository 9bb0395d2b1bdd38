"""The seed's aggregate step (`ix.domain.verdicts`): one rule from a case's trials to its
`ProbeResult`, whether the trials are counted (the engine's `Tally`) or kept (`Verdict`s)."""

import random
from fractions import Fraction

import pytest

from ix.domain import ProbeResult, Reading, Verdict, aggregate_readings
from ix.eval.models import EvalCase
from ix.eval.scoring import Tally


def verdict(passed: bool | None, trial: int = 0, probe: str = "c",
            expectation: str = "must_trigger") -> Verdict:
    reading = None if passed is None else Reading(sensor_name="activation", passed=passed)
    return Verdict(probe_id=probe, trial=trial, expectation=expectation, reading=reading)


@pytest.mark.parametrize("seed", range(40))
def test_kept_and_counted_trials_give_the_same_result(seed):
    """Random outcomes (None: no verdict) of a random case: `aggregate_readings` over the
    `Verdict`s equals `Tally` over the same outcomes, and both equal the rule computed here
    in exact fractions."""
    rnd = random.Random(seed)
    expectation = rnd.choice(["must_trigger", "should_not_trigger"])
    outcomes = [rnd.choice([True, False, None]) for _ in range(rnd.randint(1, 9))]
    kept = aggregate_readings(verdict(o, i, expectation=expectation)
                              for i, o in enumerate(outcomes))
    tally = Tally([EvalCase(id="c", prompt="p", expectation=expectation)])  # type: ignore[arg-type]
    for i, o in enumerate(outcomes):
        tally.add("c", o, i)
    counted = tally.probe_results()[0]
    assert kept.model_dump(exclude={"trials"}) == counted.model_dump(exclude={"trials"})
    valid = [o for o in outcomes if o is not None]
    rate = Fraction(sum(valid), len(valid)) if valid else Fraction(0)
    fired = rate > Fraction(1, 2)
    assert kept.score == float(rate)
    assert kept.correct is (bool(valid) and fired == (expectation == "must_trigger"))
    assert [v.trial for v in kept.trials] == list(range(len(outcomes)))
    # the count-only aggregate keeps the trials too (`Tally.trial_verdicts`), in trial order
    assert [(v.trial, v.passed) for v in counted.trials] == \
        [(v.trial, v.passed) for v in kept.trials]


def test_a_tie_does_not_activate_and_a_reading_without_a_verdict_does_not_count():
    half = aggregate_readings([verdict(True, 0), verdict(False, 1)])
    assert half.score == 0.5 and half.correct is False
    na = Verdict(probe_id="c", trial=2, expectation="must_trigger",
                 reading=Reading(sensor_name="turns", passed=None))
    assert na.passed is None
    assert aggregate_readings([verdict(True, 0), na]) == ProbeResult(
        probe_id="c", expectation="must_trigger", score=1.0, correct=True,
        trials=(verdict(True, 0), na))


def test_one_case_at_a_time():
    with pytest.raises(ValueError, match="one case's verdicts"):
        aggregate_readings([verdict(True, 0, "a"), verdict(True, 1, "b")])
    with pytest.raises(ValueError, match="one case's verdicts"):
        aggregate_readings([verdict(True, 0), verdict(True, 1,
                                                     expectation="should_not_trigger")])
    with pytest.raises(ValueError, match="at least one"):
        aggregate_readings([])


def test_the_seed_import_paths_name_the_same_types():
    """The domain-models seed imports them from `ix.eval.models` and `ix.eval.service`."""
    from ix.domain.ports import Storage
    from ix.eval import models, service

    assert models.Verdict is Verdict and models.ProbeResult is ProbeResult
    assert service.Storage is Storage
