"""`ix calibrate`'s verdict (`ix.eval.calibrate`): how often it calls a proxy good enough to
screen at 20 cases, by the proxy's true κ, and the coverage of the κ interval it rests on,
by simulation against known truth (subject verdicts split ½, the proxy agreeing on each case
with probability (1 + κ)/2, so the population κ is κ)."""

import numpy as np
import pytest

from ix.eval.calibrate import MIN_KAPPA, MIN_KAPPA_LOW, agreement_of, verdict
from ix.stats.judges import agreement


def _simulate(kappa: float, n: int = 20, sims: int = 150) -> tuple[float, float]:
    rng = np.random.default_rng(11)
    covered = good = 0
    for s in range(sims):
        subject = rng.random(n) < 0.5
        proxy = subject ^ (rng.random(n) > (1 + kappa) / 2)
        k = agreement(proxy, subject, seed=s).kappa
        covered += bool(k.lo <= kappa <= k.hi)
        good += bool(k.value >= MIN_KAPPA and k.lo >= MIN_KAPPA_LOW)
    return covered / sims, good / sims


@pytest.mark.parametrize(("kappa", "most_good", "least_good"), [
    (0.4, 0.10, 0.0),   # a weak proxy: rarely called good enough at 20 cases
    (0.9, 1.0, 0.80),   # a strong one: nearly always
])
def test_the_kappa_interval_covers_and_the_verdict_separates_weak_from_strong(
        kappa, most_good, least_good):
    covered, good = _simulate(kappa)
    assert covered >= 0.90
    assert least_good <= good <= most_good


def _block(rates: dict[str, float]) -> dict:
    return {"probe_results": [{"probe_id": c, "expectation": "must_trigger", "score": r,
                               "n": 3} for c, r in rates.items()]}


def test_the_verdict_line_and_its_edges():
    subject = _block({f"c{i}": 1.0 if i < 10 else 0.0 for i in range(20)})
    proxy = _block({f"c{i}": 1.0 if i < 9 or i == 10 else 0.0 for i in range(20)})
    a = agreement_of(subject, proxy)
    assert (a["agreed"], a["tp"], a["fn"], a["fp"], a["tn"]) == (18, 9, 1, 1, 9)
    good, line = verdict("claude", "lexical", a, {"tau": None})
    assert line.startswith("lexical agrees with claude on 18/20 cases, kappa 0.80 [")
    assert good is True and line.endswith(": good enough to screen")
    reversed_order = {"tau": {"value": -0.33, "ci": [-1, 1], "n": 20, "method": ""}}
    good, line = verdict("claude", "lexical", a, reversed_order)
    assert good is False and "ranks the candidates otherwise" in line
    flat = agreement_of(_block({f"c{i}": 1.0 for i in range(5)}), proxy)
    good, line = verdict("claude", "lexical", flat, {"tau": None})
    assert good is None and "all one class" in line
    assert _block({})["probe_results"] == [] and agreement_of(subject, _block({}))["compared"] == 0
