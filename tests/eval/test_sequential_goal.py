"""`stop: goal`'s rule in process (ix.eval.sequential_goal.judge_look, the function the
engine calls after each round) against simulation with known truth: a small, seeded version
of benchmarks/cost_to_verdict.py. Optional stopping at the plain credibility inflates false
"supported" at effect = min_effect; the looks' credibility keeps it at or below 1 − c."""

import numpy as np

from ix.eval.goal_sizing import Scenario, shifted
from ix.eval.models import EvalCase
from ix.eval.scoring import Tally
from ix.eval.sequential_goal import judge_look, rounds

GOAL = {"metric": "activation_rate", "direction": "increase", "min_effect": 0.1,
        "credibility": 0.95, "compare": ["control", "treatment"]}
CASES, TRIALS, LOOKS, REPS = 40, 3, 5, 600


def _runs(effect: float, looks_judged_at: int) -> tuple[float, float]:
    """(share of runs ending "supported", mean share of cases run), judging each of LOOKS
    looks at look_credibility(c, looks_judged_at)."""
    rng = np.random.default_rng(7)
    control = rng.random(2000)
    s = shifted(Scenario(np.ones(2000, dtype=bool), control, control, TRIALS),
                "activation_rate", effect)
    cases = [EvalCase(id=f"c{i}", prompt="-", expectation="must_trigger") for i in range(CASES)]
    supported, used = 0, 0.0
    for _ in range(REPS):
        idx = rng.choice(2000, CASES)
        tallies = []
        for theta in (s.control[idx], s.treatment[idx]):
            draws = rng.random((CASES, TRIALS)) < theta[:, None]
            tally = Tally(cases)
            for case, row in zip(cases, draws, strict=True):
                c = tally.counts[case.id]
                c.valid, c.passed = TRIALS, int(row.sum())
                c.valid_bits = (1 << TRIALS) - 1
                c.passed_bits = int(sum(1 << t for t in range(TRIALS) if row[t]))
            tallies.append(tally)
        seen: list[EvalCase] = []
        order = rounds(cases, int(rng.integers(1 << 30)), LOOKS)
        for r, chunk in enumerate(order):
            seen.extend(chunk)
            look = judge_look(GOAL, *tallies, seen, looks=looks_judged_at,
                              last=r == len(order) - 1, interval=False)
            if look.decision != "continue":
                break
        supported += look.decision == "supported"
        used += len(seen) / CASES
    return supported / REPS, used / REPS


def test_false_support_at_min_effect_holds_under_stopping_and_naive_looks_inflate_it():
    guarded, _ = _runs(0.1, LOOKS)
    naive, _ = _runs(0.1, 1)       # every look at the plain 0.95: optional stopping
    assert guarded <= 0.05, guarded
    assert naive > guarded + 0.02, (naive, guarded)


def test_a_clear_effect_stops_early_and_is_supported():
    supported, used = _runs(0.35, LOOKS)
    assert supported >= 0.9 and used < 0.6, (supported, used)


def test_rounds_are_seeded_disjoint_and_cover_every_case():
    cases = [EvalCase(id=f"c{i}", prompt="-", expectation="must_trigger") for i in range(11)]
    a, b = rounds(cases, 3, 4), rounds(cases, 3, 4)
    assert a == b and len(a) == 4 and [len(r) for r in a] in ([3, 3, 2, 3], [3, 2, 3, 3],
                                                               [2, 3, 3, 3], [3, 3, 3, 2])
    assert sorted(c.id for r in a for c in r) == sorted(c.id for c in cases)
    assert rounds(cases, 4, 4) != a
    assert len(rounds(cases[:2], 0, 5)) == 2
