"""The summary's `load` block from counted requests (ix.eval.load_test_summary), and the
schedule a `load:` plans (ix.engine.schedule)."""

import pytest
from pydantic import TypeAdapter

from ix.engine.schedule import load_plan
from ix.eval.load_test_summary import LoadTally, Objective, load_block, objectives
from ix.eval.schemas import LoadOut, summary_adapter

OPTIONS = {"rps": 100.0, "duration_s": 10.0, "warmup_s": 2.0, "arrivals": "uniform",
           "order": "cycle", "max_in_flight": 1000}


def tally(latencies: list[float], errored: int = 0, **kw) -> LoadTally:
    n = len(latencies) + errored
    return LoadTally("svc", planned=kw.pop("planned", n), window_s=kw.pop("window_s", 10.0),
                     latencies_ms=latencies, errored=errored, late_ms=[0.5] * (n - 1) + [9.0],
                     **kw)


def test_rates_counts_percentiles_and_schedule_error():
    t = tally([float(v) for v in range(1, 1001)], errored=0, warmup=200)
    (s,) = load_block(OPTIONS, [t], [])["subjects"]
    assert s["offered_rps"] == 100 and s["achieved_rps"] == 100 and s["sent_rps"] == 100
    assert s["requests"] == {"planned": 1000, "sent": 1000, "completed": 1000, "errored": 0,
                             "dropped": 0, "waited": 0, "warmup": 200}
    p = s["latency_ms"]
    assert (p["p50"]["value"], p["p95"]["value"], p["p99"]["value"]) == (500, 950, 990)
    for q in ("p50", "p95", "p99"):
        lo, hi = p[q]["ci"]
        assert lo <= p[q]["value"] <= hi and p[q]["coverage"] >= 0.95
    assert s["error_rate"] == 0 and s["error_rate_ci"][0] == 0
    assert s["schedule_error"] == {"p50_ms": 0.5, "p99_ms": 0.5, "max_ms": 9.0}
    assert s["sla"] == [] and s["verdict"] is None


def test_sla_verdicts_met_missed_and_inconclusive():
    fast = [10.0] * 1000
    met, missed, unsure = (load_block(OPTIONS, [tally(fast)], [o])["subjects"][0]["sla"][0]
                           for o in (Objective("sensor", 50, 99), Objective("sensor", 5, 50),
                                     Objective("sensor", 10, 99.9)))
    assert met["verdict"] == "met" and met["objective"] == "p99 ≤ 50 ms"
    assert met["within"] == met["n"] == 1000 and met["rate"] == 1
    assert missed["verdict"] == "missed" and missed["within"] == 0
    # 1000 requests cannot bound a p99.9 from above (3,688 are needed)
    assert unsure["verdict"] == "inconclusive" and "3,688 are needed" in unsure["reason"]


def test_errored_requests_count_against_an_sla():
    t = tally([10.0] * 950, errored=50)
    (every, p99) = load_block(OPTIONS, [t], [Objective("sensors[1]", 100),
                                            Objective("sensors[2]", 100, 99)]
                              )["subjects"][0]["sla"]
    assert every["verdict"] == "missed" and "50 errored" in every["reason"]
    assert every["within"] == 950 and every["n"] == 1000
    assert p99["verdict"] == "missed"  # 5% errored: the p99 is "slower than any answer"
    assert p99["quantile"]["value"] is None  # +inf is written as null


def test_objectives_are_the_latency_sensors_named_where_they_are_written():
    listed = objectives([{"kind": "http_status", "expected": 200},
                         {"kind": "latency", "max_ms": 200, "percentile": 95}], listed=True)
    assert listed == [Objective("sensors[1]", 200.0, 95.0)]
    assert objectives([{"kind": "latency", "max_ms": 5}], listed=False) == \
        [Objective("sensor", 5.0)]


def test_an_empty_subject_has_no_estimates():
    (s,) = load_block(OPTIONS, [LoadTally("svc")], [Objective("sensor", 10)])["subjects"]
    assert s["achieved_rps"] is None and s["latency_ms"]["p50"]["value"] is None
    assert s["error_rate"] is None and s["sla"][0]["verdict"] is None and s["verdict"] is None


def test_the_block_validates_against_the_summary_schema():
    block = load_block(OPTIONS, [tally([1.0, 2.0], errored=1)], [Objective("sensor", 1, 50)])
    TypeAdapter(LoadOut).validate_python(block)
    assert "load" in summary_adapter().json_schema()["properties"]


def test_uniform_schedule_plans_rps_times_the_window_exactly():
    plan = load_plan({**OPTIONS, "rps": 200.0, "duration_s": 3.0, "warmup_s": 0.5}, 0, 3)
    assert plan.requests == 700 and plan.warmup == 100
    assert plan.schedule[:3] == (0.0, 0.005, 0.01) and plan.schedule[-1] < 3.5
    assert plan.picks[:5] == (0, 1, 2, 0, 1)


def test_poisson_arrivals_and_random_cases_are_seeded():
    options = {**OPTIONS, "arrivals": "poisson", "order": "random"}
    a, b, c = load_plan(options, 1, 4), load_plan(options, 1, 4), load_plan(options, 2, 4)
    assert a == b and a.schedule != c.schedule
    assert a.requests == pytest.approx(1200, rel=0.1)  # 100 rps over 12 s
    assert all(x < y for x, y in zip(a.schedule, a.schedule[1:], strict=False))
    assert set(a.picks) == {0, 1, 2, 3}
