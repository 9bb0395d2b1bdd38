"""`load:` end to end: the open-loop generator through the real `ix run`, against a local
service whose latency follows a known distribution (tests/engine/load_server.py, a process of
its own) and a local program. Every run whose latencies or schedule are measured is a real
`ix` process (the test process's own threads would share its event loop's CPU), as are the
exit 2 of a bad `load:` and the report at 80 columns; the other refusals, the resume after
Ctrl-C and the report's other formats run in process (`ix_in_process`).

The accuracy test holds the percentiles ix reports against the service times the server
itself recorded for the same requests (in each answer's `X-Service-Ms`), not against wall
clock throughput: what it pins is that ix measures latency right under load. It runs at
100 rps, where the client's CPU (httpx: a few ms a request on a busy 2-core box) leaves the
event loop room even when other tests share the machine; benchmarks/load_generator.py runs
the issue's figure (200 rps for 30 s) and prints it.
"""

import json
import math
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from conftest import _ix_argv, _ix_env, case, ix_in_process, run_ix, write

SERVER = Path(__file__).with_name("load_server.py")


class Service:
    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, str(SERVER), *args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.url = f"http://127.0.0.1:{int(self.proc.stdout.readline())}"

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def service() -> Iterator[Service]:
    s = Service("--median-ms", "100", "--sigma", "0.4", "--seed", "7")
    yield s
    s.close()


def http_experiment(lab: Path, url: str, load: str, *, sensors: str = "", name: str = "svc",
                    extra: str = "") -> Path:
    """An http experiment with `load`; `sensors`: more items of its `sensors:` list."""
    d = lab / name
    more = f"\n  {sensors}" if sensors else ""
    (d / "cases").mkdir(parents=True, exist_ok=True)
    (d / "experiment.yaml").write_text(
        f"name: {name}\n"
        "runtime:\n"
        "  kind: http\n"
        "  method: POST\n"
        f'  url: "{url}/ask/{{{{ case.id }}}}"\n'
        '  body: {q: "{{ prompt }}"}\n'
        "  retries: 0\n"
        f"sensors:\n  - {{kind: http_status, expected: 200}}{more}\n"
        f"load: {load}\n{extra}", encoding="utf-8")
    case(d, "ping", "must_trigger", "ping")
    case(d, "pong", "must_trigger", "pong")
    case(d, "edge", "acceptable", "not sent")
    return d


def lines(experiment: Path) -> list[dict]:
    text = (experiment / "results" / "trials.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def nearest_rank(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(1, math.ceil(len(ordered) * q - 1e-9)) - 1]


@pytest.mark.slow
def test_percentiles_under_load_match_the_service_times_the_server_recorded(lab):
    # answers of ~400 ms: the client's own share of a latency (its CPU, a busy machine's
    # scheduling) stays a few percent of it
    slow = Service("--median-ms", "400", "--sigma", "0.3", "--seed", "7")
    try:
        exp = http_experiment(lab, slow.url, "{rps: 100, duration_s: 4, warmup_s: 0.5}",
                              # an objective far above the ~800 ms p99 of the service: on a CI
                              # box shared by four workers the client's own share has reached
                              # 3 s, and this test checks the figures, not the machine
                              sensors="- {kind: latency, max_ms: 20000, percentile: 99}")
        r = run_ix("run", "--lab", str(lab), "--json")
    finally:
        slow.close()
    assert r.code == 0, r.output
    summary = json.loads(r.stdout)
    load = summary["load"]
    assert (load["rps"], load["duration_s"], load["warmup_s"]) == (100, 4, 0.5)
    assert load["arrivals"] == "uniform" and load["level"] == 0.95
    assert "exact" in load["method"] and "Binomial" in load["method"]
    (s,) = load["subjects"]
    req = s["requests"]
    # 450 requests due in 4.5 s, the first 50 (0.5 s) warm-up; none dropped (1000 in flight
    # at most), so however loaded the machine, all were sent, some of them late
    assert req["planned"] == 400 and req["warmup"] == 50
    assert req["sent"] == 400 and req["dropped"] == 0
    assert req["completed"] + req["errored"] == 400 and req["errored"] == 0
    assert s["offered_rps"] == 100 and s["window_s"] == 4
    assert s["achieved_rps"] == pytest.approx(req["completed"] / 4, abs=0.01)
    assert s["error_rate"] == 0 and s["error_rate_ci"][0] == 0 and s["error_rate_ci"][1] < 0.01
    schedule = s["schedule_error"]
    assert 0 <= schedule["p50_ms"] <= schedule["p99_ms"] <= schedule["max_ms"]

    records = lines(exp)
    assert len(records) == 450
    assert sorted(rec["trial"] for rec in records) == list(range(450))
    assert {rec["probe_id"] for rec in records} == {"ping", "pong"}  # cycled, edge skipped
    assert all(rec["load"]["warmup"] == (rec["load"]["at_s"] < 0.5) for rec in records)
    assert [rec["load"]["at_s"] for rec in sorted(records, key=lambda x: x["trial"])][:3] == \
        [0, 0.01, 0.02]
    measured = [rec for rec in records if not rec["load"]["warmup"]]
    truth = [float(rec["observation"]["headers"]["x-service-ms"]) for rec in measured]
    seen = [rec["duration_ms"] for rec in measured]
    assert all(a >= b for a, b in zip(seen, truth, strict=True))  # ix times the whole request
    overhead = max(a - b for a, b in zip(seen, truth, strict=True))
    for name, q in (("p50", 0.50), ("p95", 0.95), ("p99", 0.99)):
        p = s["latency_ms"][name]
        assert p["value"] == pytest.approx(nearest_rank(seen, q), abs=0.001)
        # each request's time is its service time plus the client's share, so the percentile
        # lies between the service times' and that plus the largest share; how small the
        # share is on a quiet machine (within 10% at 200 rps) is benchmarks/load_generator.py's
        # figure, not a test's: on a CI box shared by four workers it is not stable
        assert nearest_rank(truth, q) <= p["value"] <= nearest_rank(truth, q) + overhead, name
        lo, hi = p["ci"]
        assert lo <= p["value"] <= hi and p["coverage"] >= 0.95
    # the warm-up is left out of the run's tallies too
    assert summary["subjects"][0]["trials"] == 400
    (sla,) = s["sla"]
    assert sla["objective"] == "p99 ≤ 20000 ms" and sla["verdict"] == "met"
    assert s["verdict"] == "met"
    spec = yaml.safe_load((exp / "results" / "runs" / summary["run_id"] / "spec.yaml")
                          .read_text())
    assert spec["config"]["load"]["rps"] == 100


def _ours(text: str) -> list[str]:
    """The lines of a terminal summary but the paths (never cut, so as long as they are)."""
    return [line for line in text.splitlines() if "/lab" not in line]


def test_the_summary_and_the_report_show_the_load_block_in_80_columns(lab, service):
    http_experiment(lab, service.url, "{rps: 40, duration_s: 1, arrivals: poisson}",
                    sensors="- {kind: latency, max_ms: 5000}")
    r = run_ix("run", "--lab", str(lab), env={"COLUMNS": "80"})
    assert r.code == 0, r.output
    assert "load test · svc: 40 rps offered (poisson arrivals)" in r.stdout
    assert "latency ms  p50 " in r.stdout and "SLA every request ≤ 5000 ms: met" in r.stdout
    assert "distribution-free" in r.stdout
    assert max(len(line) for line in _ours(r.stdout)) <= 80 and "…" not in r.stdout
    # a service is worded by its SLA: the answer is the objective, its error rate and
    # throughput, never a classifier's precision, recall, F1 or status word
    sla = "SLA of svc: every request ≤ 5000 ms met"
    assert sla in r.stdout.splitlines()[-2]  # the verdict, last
    assert "error rate 0.0% [0.0%, " in r.stdout and "rps achieved of 40.0 offered" in r.stdout

    def classifier_words(text: str) -> list[str]:
        return [w for w in ("precision", "recall", "F1", "TP/FP", "specificity", "excellent",
                            "correct rate", "routing", "interpretation")
                if w in text]

    assert classifier_words(r.stdout) == []
    rep = run_ix("report", "--lab", str(lab), env={"COLUMNS": "80"})
    assert rep.code == 0, rep.output
    assert "schedule error p50" in rep.stdout
    assert max(len(line) for line in _ours(rep.stdout)) <= 80
    assert "…" not in rep.stdout
    assert rep.stdout.index(sla) < rep.stdout.index("load test · svc") \
        < rep.stdout.index("details")  # the answer first
    assert classifier_words(rep.stdout) == []
    # the other formats of the report in process (the real one is its table above)
    md = ix_in_process("report", "--lab", str(lab), "--format", "md")
    assert "## Load" in md.stdout and "| subject | answered | p50 | p95 | p99 |" in md.stdout
    assert md.stdout.index(f"- {sla}") < md.stdout.index("## Load") \
        < md.stdout.index("## Summary")
    assert classifier_words(md.stdout) == []
    page = lab / "report.html"
    html = ix_in_process("report", "--lab", str(lab), "--format", "html", "--out", str(page))
    assert html.code == 0, html.output
    text = page.read_text(encoding="utf-8")
    assert '<section id="load">' in text and "verdict-met" in text
    assert f"<p>{sla}" in text
    visible = re.sub(r"<[^>]+>", " ", re.sub(r"<style.*?</style>", "", text, flags=re.S))
    assert classifier_words(visible) == []
    data = json.loads(ix_in_process("report", "--lab", str(lab), "--json").stdout)
    assert data["load"]["subjects"][0]["subject"] == "svc"


@pytest.mark.slow
def test_a_command_subject_under_load_and_a_missed_sla_exits_1(lab):
    d = lab / "tool"
    write(d / "experiment.yaml", """
        name: tool
        runtime:
          kind: command
          argv: [/bin/sh, -c, "sleep 0.02; echo ok"]
        sensors:
          - {kind: exit_code, expected: 0}
          - {kind: latency, max_ms: 5000}
          - {kind: latency, max_ms: 5000, percentile: 99}
          - {kind: latency, max_ms: 1, percentile: 50}
        load: {rps: 10, duration_s: 1.5, order: random}
        """)
    case(d, "a", "must_trigger")
    case(d, "b", "must_trigger")
    r = run_ix("run", "--lab", str(lab), "--json")
    assert r.code == 1, r.output
    assert "SLA missed in tool: tool: p50 ≤ 1 ms" in r.stderr
    (s,) = json.loads(r.stdout)["load"]["subjects"]
    assert s["requests"]["sent"] == 15 and s["requests"]["completed"] == 15
    assert s["latency_ms"]["p50"]["value"] >= 20
    every, p99, p50 = s["sla"]
    assert (every["sensor"], every["verdict"]) == ("sensors[1]", "met")
    assert p99["verdict"] == "inconclusive" and "368 are needed" in p99["reason"]
    assert p99["quantile"]["ci"][1] is None
    assert p50["verdict"] == "missed" and s["verdict"] == "missed"


@pytest.mark.parametrize(("load", "field"), [
    ("{rps: 0, duration_s: 1}", "load.rps"),
    ("{rps: 5, duration_s: 1, burst: 3}", "load.burst"),
    ("{rps: 5, duration_s: 1, arrivals: bursty}", "load.arrivals"),
    ("{rps: 5}", "load.duration_s"),
    ("{rps: 100000, duration_s: 100}", "load"),
])
def test_bad_load_options_exit_2_naming_the_field(lab, load, field):
    http_experiment(lab, "http://127.0.0.1:9", load)
    # the real command once for the exit-2 contract (one line, no traceback); the other
    # fields in process
    command = run_ix if field == "load.rps" else ix_in_process
    r = command("run", "--lab", str(lab))
    assert r.code == 2, r.output
    assert field in r.stderr and "Traceback" not in r.output


def test_load_refuses_other_runtimes_and_a_trial_count(lab):
    d = lab / "m"
    write(d / "experiment.yaml", """
        name: m
        runtime: {kind: mock}
        load: {rps: 5, duration_s: 1}
        """)
    case(d, "a", "must_trigger")
    # in process: the exit-2 contract is the real command's in the bad load options
    r = ix_in_process("run", "--lab", str(lab))
    assert r.code == 2 and "load" in r.stderr and "(mock)" in r.stderr, r.output
    http_experiment(lab, "http://127.0.0.1:9", "{rps: 5, duration_s: 1}", name="h")
    r = ix_in_process("run", "h", "--lab", str(lab), "--trials", "3")
    assert r.code == 2 and "--trials" in r.stderr, r.output
    r = ix_in_process("run", "h", "--lab", str(lab), "--cache")
    assert r.code == 2 and "--cache" in r.stderr, r.output


@pytest.mark.slow
def test_ctrl_c_mid_load_keeps_every_completed_request(lab, service):
    exp = http_experiment(lab, service.url, "{rps: 20, duration_s: 60}")
    trials = exp / "results" / "trials.jsonl"
    proc = subprocess.Popen([*_ix_argv(), "run", "--lab", str(lab), "--json"],
                            env=_ix_env(None, None), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if trials.exists() and len(trials.read_bytes().splitlines()) >= 10:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    assert "Traceback" not in out + err
    summary = json.loads(out)
    assert summary["run_status"] == "cancelled"
    (s,) = summary["load"]["subjects"]
    records = lines(exp)
    # every request sent finished (the first Ctrl-C lets them) and is on disk
    assert len(records) == s["requests"]["sent"] >= 10
    assert s["requests"]["completed"] == len(records)
    assert 0 < s["window_s"] < 60  # the measured window ends where sending stopped
    assert all("load" in rec for rec in records)
    # the interrupted run is the real process; the refused resume after it, in process
    again = ix_in_process("run", "--lab", str(lab), "--resume")
    assert again.code == 2 and "--resume" in again.stderr and "load" in again.stderr, \
        again.output


def test_a_request_due_while_max_in_flight_are_out_waits_and_is_counted(lab, service):
    # 50 rps against ~100 ms answers keeps ~5 in flight: a cap of 1 makes most of them wait
    http_experiment(lab, service.url, "{rps: 50, duration_s: 1, max_in_flight: 1}")
    r = run_ix("run", "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    (s,) = json.loads(r.stdout)["load"]["subjects"]
    req = s["requests"]
    assert req["waited"] > 0 and req["dropped"] > 0
    assert req["sent"] + req["dropped"] == req["planned"] == 50
    assert s["schedule_error"]["max_ms"] > 50  # the waits are lateness
