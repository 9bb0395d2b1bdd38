"""Which verdicts a goal can still reach from its control (`ix.stats.reachability`, STATS.md
§10): the boundary cases, the cap on an assumed effect, and the claim the floor rule rests
on, checked against the Dirichlet posterior sampled independently with numpy."""

import numpy as np
import pytest

from ix.stats.comparisons import paired_diff_cdf
from ix.stats.decisions import goal_verdict
from ix.stats.reachability import capped_effect, reachability


@pytest.mark.parametrize(("direction", "m", "control", "interval", "verdicts", "why"), [
    # a decrease from a control at 0 (whatever its interval) cannot be observed
    ("decrease", 0.05, 0.0, (0.0, 0.15), ["refuted"], "floor"),
    # an increase from 1
    ("increase", 0.05, 1.0, (0.85, 1.0), ["refuted"], "ceiling"),
    # no plausible control leaves room beyond min_effect: the far end is at most m
    ("decrease", 0.05, 0.02, (0.001, 0.05), ["refuted"], "room"),
    ("increase", 0.1, 0.95, (0.9, 0.99), ["refuted"], "room"),
    # just more room than min_effect: both remain
    ("decrease", 0.05, 0.02, (0.001, 0.0501), ["supported", "refuted"], None),
    # a control below min_effect but an interval that reaches past it: still reachable
    ("decrease", 0.1, 0.056, (0.01, 0.25), ["supported", "refuted"], None),
    # min_effect 0: "no fall" (refuted) needs a rise, impossible from a control at 1
    ("decrease", 0.0, 1.0, (0.9, 1.0), ["supported"], "ceiling"),
    ("increase", 0.0, 0.0, (0.0, 0.1), ["supported"], "floor"),
    # differ: one open direction is enough for supported; with m = 0 refuted has no region
    ("differ", 0.05, 0.0, (0.0, 0.15), ["supported", "refuted"], None),
    ("differ", 0.0, 0.5, (0.3, 0.7), ["supported"], "no-width"),
])
def test_reachability_on_the_boundary_cases(direction, m, control, interval, verdicts, why):
    r = reachability(direction, m, control, interval)
    assert r.verdicts == verdicts
    assert r.why == why


def test_the_room_is_measured_in_the_goal_s_direction():
    r = reachability("decrease", 0.05, 0.3, (0.2, 0.4))
    assert (r.room, r.room_most) == (0.3, 0.4)
    r = reachability("increase", 0.05, 0.3, (0.2, 0.4))
    assert (r.room, r.room_most) == pytest.approx((0.7, 0.8))


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="direction"):
        reachability("down", 0.1, 0.5, (0.4, 0.6))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        reachability("decrease", 0.1, 1.5, (0.4, 0.6))


@pytest.mark.parametrize(("effect", "control", "interval", "capped"), [
    (-0.1, 0.0, (0.0, 0.15), 0.0),          # at the floor: nothing can fall
    (0.1, 1.0, (0.85, 1.0), 0.0),           # at the ceiling: nothing can rise
    (-0.2, 0.056, (0.01, 0.165), -0.165),   # a fall beyond the control's upper bound
    (0.2, 0.9, (0.85, 0.97), 0.15),         # a rise beyond 1 - its lower bound
    (-0.1, 0.3, (0.2, 0.4), -0.1),          # room enough: unchanged
    (-0.2, 0.1, None, -0.1),                # an assumed rate: its own room
    (0.0, 0.0, None, 0.0),
])
def test_an_assumed_effect_is_capped_at_the_room(effect, control, interval, capped):
    assert capped_effect(effect, control, interval) == pytest.approx(capped)


def _p_fall_sampled(t: tuple[int, int, int, int], m: float, rng) -> float:
    """P(control − treatment > m) under Dirichlet(1 + counts) of the paired 2×2 table
    (both, treatment only, control only, neither), by 200,000 seeded draws."""
    p = rng.dirichlet(np.array(t, dtype=float) + 1.0, 200_000)
    return float(np.mean(p[:, 2] - p[:, 1] > m))


@pytest.mark.parametrize(("treatment_only", "neither"), [(0, 18), (3, 15), (0, 200), (5, 5)])
def test_a_control_at_0_never_makes_a_fall_credible(treatment_only, neither):
    # the control activates on no case: its table has no `both` and no `control only`, and
    # P(fall beyond m) stays below 1/2 — the goal's verdict can never be supported
    rng = np.random.default_rng(20251)
    t = (0, treatment_only, 0, neither)
    for m in (0.0, 0.01, 0.05):
        sampled = _p_fall_sampled(t, m, rng)
        exact = paired_diff_cdf(0, treatment_only, 0, neither, -m)   # P(treatment − control ≤ −m)
        assert exact == pytest.approx(sampled, abs=0.005)
        assert exact <= 0.5
        v = goal_verdict(lambda d, t=t: paired_diff_cdf(*t, d), direction="decrease",
                         min_effect=m, credibility=0.8)
        assert v.verdict != "supported"


@pytest.mark.parametrize(("table", "m"), [((0, 0, 1, 59), 0.08), ((1, 0, 2, 57), 0.12),
                                          ((0, 3, 1, 40), 0.1)])
def test_no_room_beyond_min_effect_bounds_p_supported_by_the_control_s_tail(table, m):
    # a fall beyond m needs a control above m: P(effect < -m) <= P(control > m), the
    # control's marginal Beta(both + control_only + 1, treatment_only + neither + 1)
    # (scipy as the reference); so when the far end of the control's bounds at c is at
    # most m, supported is out of reach at c
    from scipy import stats as sps

    both, t_only, c_only, neither = table
    a, b = both + c_only + 1, t_only + neither + 1
    p_fall = paired_diff_cdf(*table, -m)       # P(treatment - control <= -m)
    assert p_fall <= sps.beta.sf(m, a, b) + 1e-9
    c = 0.95
    hi = sps.beta.ppf(c, a, b)
    r = reachability("decrease", m, (both + c_only) / sum(table), (sps.beta.ppf(1 - c, a, b), hi))
    assert r.supported == (hi > m)
    if not r.supported:
        assert p_fall < c
        v = goal_verdict(lambda d: paired_diff_cdf(*table, d), direction="decrease",
                         min_effect=m, credibility=c)
        assert v.verdict != "supported"
