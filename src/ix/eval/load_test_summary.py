"""The summary's `load` block: each subject under the open-loop generator (`load:`).

What the engine counted of the measured requests (`LoadTally`: those scheduled after the
warm-up) becomes rates, latency percentiles with distribution-free intervals
(`ix.stats.quantiles`: order statistics whose ranks come from the exact binomial), the error
rate with its Beta interval, the generator's schedule error, and a verdict per `latency`
sensor read as a service-level objective.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ix.eval.schemas import (
    LoadOut,
    LoadSubjectOut,
    LoadVerdict,
    QuantileOut,
    ScheduleErrorOut,
    SlaOut,
)
from ix.stats.beta import credible_interval
from ix.stats.quantiles import QuantileEstimate, min_sample, quantile_interval

LEVEL = 0.95
PERCENTILES = (("p50", 0.50), ("p95", 0.95), ("p99", 0.99))
METHOD = ("latency: nearest-rank percentiles of the answered measured requests; each "
          "interval is [X_(l), X_(u)], order statistics whose ranks come from the exact "
          "Binomial(n, q) (distribution-free, coverage ≥ the level, `coverage` gives it; a "
          "null end: too few requests to bound that side); error rate and SLA rates: Beta "
          "posterior (uniform prior), one-sided at 0 and n; SLA percentiles count an errored "
          "request as slower than any answer")


@dataclass
class LoadTally:
    """One subject's measured requests, as the engine counted them."""

    subject: str
    planned: int = 0                                     # scheduled in the measured window
    window_s: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)  # answered without an error
    errored: int = 0
    late_ms: list[float] = field(default_factory=list)   # each sent request's lateness
    waited: int = 0
    dropped: int = 0
    warmup: int = 0                                      # warm-up requests sent

    @property
    def sent(self) -> int:
        return len(self.late_ms)

    @property
    def finished(self) -> int:
        return len(self.latencies_ms) + self.errored


@dataclass(frozen=True)
class Objective:
    """A `latency` sensor of the experiment, read as an SLA."""

    sensor: str
    max_ms: float
    percentile: float | None = None

    def words(self) -> str:
        if self.percentile is None:
            return f"every request ≤ {self.max_ms:g} ms"
        return f"p{self.percentile:g} ≤ {self.max_ms:g} ms"


def objectives(sensors: Sequence[Mapping[str, Any]], *, listed: bool) -> list[Objective]:
    """The `latency` sensors among `sensors` (experiment.yaml's `sensors`, or its one
    `sensor` when `listed` is False) as objectives."""
    out = []
    for i, s in enumerate(sensors):
        if s.get("kind") != "latency":
            continue
        percentile = s.get("percentile")
        out.append(Objective(f"sensors[{i}]" if listed else "sensor", float(s["max_ms"]),
                             None if percentile is None else float(percentile)))
    return out


def _quantile(est: QuantileEstimate) -> QuantileOut:
    return {"value": _finite(est.value), "ci": [_finite(est.lo), _finite(est.hi)],
            "coverage": None if est.n == 0 else est.coverage}


def _finite(x: float | None) -> float | None:
    """An +inf end (an errored request in an SLA's percentile) is written as null: JSON has
    no infinity, and null already reads "not bounded"."""
    return None if x is None or x == float("inf") else round(x, 3)


def _rate(k: int, n: int) -> tuple[float | None, list[float | None]]:
    if n == 0:
        return None, [None, None]
    lo, hi = credible_interval(k, n, LEVEL)
    return k / n, [lo, hi]


def _nearest(values: list[float], q: float) -> float | None:
    if not values:
        return None
    return round(quantile_interval(values, q, LEVEL).value or 0.0, 3)


def _ms(x: float | None) -> str:
    return "slower than any answer" if x == float("inf") else f"{x:.1f} ms"


def _sla(objective: Objective, tally: LoadTally, ordered: list[float]) -> SlaOut:
    n = tally.finished
    within = sum(1 for v in ordered if v <= objective.max_ms)
    rate, rate_ci = _rate(within, n)
    quantile: QuantileOut | None = None
    verdict: LoadVerdict | None
    if n == 0:
        verdict, reason = None, "no measured request finished"
    elif objective.percentile is None:
        verdict = "met" if within == n else "missed"
        reason = (f"all {n:,} requests within {objective.max_ms:g} ms" if within == n else
                  f"{n - within:,} of {n:,} requests not within {objective.max_ms:g} ms"
                  + (f" ({tally.errored:,} errored)" if tally.errored else ""))
    else:
        q = objective.percentile / 100.0
        # an errored request counts as slower than any answer: it did not meet the objective
        est = quantile_interval(ordered + [float("inf")] * tally.errored, q, LEVEL,
                                presorted=True)
        quantile = _quantile(est)
        name = f"p{objective.percentile:g}"
        shown = _ms(est.value)
        if est.hi is not None and est.hi <= objective.max_ms:
            verdict, reason = "met", f"{name} {shown}, at most {_ms(est.hi)} (95%)"
        elif est.lo is not None and est.lo > objective.max_ms:
            verdict, reason = "missed", f"{name} {shown}, at least {_ms(est.lo)} (95%)"
        else:
            verdict = "inconclusive"
            reason = f"{name} {shown}; its 95% interval straddles {objective.max_ms:g} ms"
            if est.hi is None and n < (need := min_sample(q, LEVEL)):
                reason = (f"{name} {shown}; {n:,} requests cannot bound it from above: "
                          f"{need:,} are needed")
    return {"sensor": objective.sensor, "max_ms": objective.max_ms,
            "percentile": objective.percentile, "objective": objective.words(),
            "within": within, "n": n, "rate": rate, "rate_ci": rate_ci, "quantile": quantile,
            "verdict": verdict, "reason": reason}


def _subject(tally: LoadTally, rps: float, slas: Sequence[Objective]) -> LoadSubjectOut:
    ordered = sorted(tally.latencies_ms)
    latency = {name: _quantile(quantile_interval(ordered, q, LEVEL, presorted=True))
               for name, q in PERCENTILES}
    completed = len(ordered)
    error_rate, error_ci = _rate(tally.errored, tally.finished)
    window = tally.window_s
    late = sorted(tally.late_ms)
    checks = [_sla(o, tally, ordered) for o in slas]
    verdicts = {c["verdict"] for c in checks}
    verdict: LoadVerdict | None = None
    if checks and verdicts != {None}:
        verdict = ("missed" if "missed" in verdicts else
                   "inconclusive" if verdicts & {"inconclusive", None} else "met")
    schedule: ScheduleErrorOut = {"p50_ms": _nearest(late, 0.50), "p99_ms": _nearest(late, 0.99),
                                  "max_ms": round(late[-1], 3) if late else None}
    return {
        "subject": tally.subject, "window_s": round(window, 3), "offered_rps": rps,
        "sent_rps": round(tally.sent / window, 3) if window > 0 else None,
        "achieved_rps": round(completed / window, 3) if window > 0 else None,
        "requests": {"planned": tally.planned, "sent": tally.sent, "completed": completed,
                     "errored": tally.errored, "dropped": tally.dropped,
                     "waited": tally.waited, "warmup": tally.warmup},
        "latency_ms": {"n": completed, "p50": latency["p50"], "p95": latency["p95"],
                       "p99": latency["p99"]},
        "error_rate": error_rate, "error_rate_ci": error_ci,
        "schedule_error": schedule, "sla": checks, "verdict": verdict,
    }


def load_block(options: Mapping[str, Any], tallies: Sequence[LoadTally],
               slas: Sequence[Objective]) -> LoadOut:
    """The `load` block: `options` is the experiment's `load:` (every key, defaults filled)."""
    return {"rps": float(options["rps"]), "duration_s": float(options["duration_s"]),
            "warmup_s": float(options["warmup_s"]), "arrivals": options["arrivals"],
            "order": options["order"], "max_in_flight": int(options["max_in_flight"]),
            "level": LEVEL, "method": METHOD,
            "subjects": [_subject(t, float(options["rps"]), slas) for t in tallies]}
