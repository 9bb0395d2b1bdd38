"""`load:`'s open-loop generator at 200 rps for 30 s against a service of known latency.

    .venv/bin/python benchmarks/load_generator.py [--rps 200] [--duration 30] [--warmup 5]
        [--median-ms 100] [--sigma 0.4] [--arrivals uniform|poisson]

Starts tests/engine/load_server.py (its own process: each request sleeps a seeded lognormal
time and reports the time it slept), runs the real `ix run --json` on an http experiment
with that `load:`, and prints: offered, sent and achieved rps; the generator's schedule
error (p50/p99/max of send time − scheduled time); and each latency percentile ix reported,
with its interval, against two truths — the same percentile of the service times the server
recorded for the same requests (what ix should measure, plus the request's own overhead) and
the distribution's analytic quantile (which the interval should cover, up to that overhead).
Target (issue 20): every percentile within 10% of the truth at 200 rps on 2 cores.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SERVER = REPO / "tests" / "engine" / "load_server.py"
IX = str(Path(sys.executable).parent / "ix")
sys.path.insert(0, str(SERVER.parent))
from load_server import lognormal_quantile  # noqa: E402


def nearest_rank(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(1, math.ceil(len(ordered) * q - 1e-9)) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rps", type=float, default=200)
    parser.add_argument("--duration", type=float, default=30)
    parser.add_argument("--warmup", type=float, default=5)
    parser.add_argument("--median-ms", type=float, default=100)
    parser.add_argument("--sigma", type=float, default=0.4)
    parser.add_argument("--arrivals", choices=("uniform", "poisson"), default="uniform")
    args = parser.parse_args()
    server = subprocess.Popen([sys.executable, str(SERVER), "--median-ms", str(args.median_ms),
                               "--sigma", str(args.sigma), "--seed", "1"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None and server.stdin is not None
    url = f"http://127.0.0.1:{int(server.stdout.readline())}"
    try:
        with tempfile.TemporaryDirectory() as tmp:
            lab = Path(tmp) / "lab"
            exp = lab / "svc"
            (exp / "cases").mkdir(parents=True)
            (exp / "experiment.yaml").write_text(
                "name: svc\n"
                f"runtime: {{kind: http, method: POST, url: '{url}/ask', retries: 0,\n"
                "          body: {q: '{{ prompt }}'}}\n"
                "sensors:\n  - {kind: http_status, expected: 200}\n"
                "  - {kind: latency, max_ms: 1000, percentile: 99}\n"
                f"load: {{rps: {args.rps}, duration_s: {args.duration}, "
                f"warmup_s: {args.warmup}, arrivals: {args.arrivals}}}\n")
            for name in ("a", "b", "c"):
                (exp / "cases" / f"{name}.md").write_text(
                    f"---\nexpectation: must_trigger\n---\nrequest {name}\n")
            env = {k: v for k, v in os.environ.items() if not k.startswith("IX_")}
            t0 = time.perf_counter()
            done = subprocess.run([IX, "run", "--lab", str(lab), "--json"], env=env,
                                  capture_output=True, text=True, check=False)
            wall = time.perf_counter() - t0
            if done.returncode not in (0, 1):
                sys.exit(f"ix run failed ({done.returncode}): {done.stderr}")
            summary = json.loads(done.stdout)
            records = [json.loads(line) for line in
                       (exp / "results" / "trials.jsonl").read_text().splitlines()]
    finally:
        server.stdin.close()
        server.wait(timeout=10)
    (s,) = summary["load"]["subjects"]
    measured = [r for r in records if not r["load"]["warmup"] and r["error"] is None]
    service = [float(r["observation"]["headers"]["x-service-ms"]) for r in measured]
    r = s["requests"]
    e = s["schedule_error"]
    print(f"load: {args.rps:g} rps ({args.arrivals}) for {args.duration:g} s after "
          f"{args.warmup:g} s warm-up; service lognormal median {args.median_ms:g} ms, "
          f"sigma {args.sigma:g}; `ix run` took {wall:.1f} s; {os.cpu_count()} CPUs, load "
          f"average {os.getloadavg()[0]:.2f}")
    print(f"rate: offered {s['offered_rps']:g} rps, sent {s['sent_rps']:.2f}, achieved "
          f"{s['achieved_rps']:.2f} (completed / {s['window_s']:g} s window)")
    print(f"requests: planned {r['planned']}, sent {r['sent']}, completed {r['completed']}, "
          f"errored {r['errored']}, dropped {r['dropped']}, waited {r['waited']}, warm-up "
          f"{r['warmup']}")
    print(f"schedule error: p50 {e['p50_ms']:.3f} ms, p99 {e['p99_ms']:.3f} ms, max "
          f"{e['max_ms']:.3f} ms")
    print(f"{'':4} {'ix [95% interval]':>28} {'server':>9} {'err':>7} {'analytic':>9} "
          f"{'err':>7} {'covers':>6}")
    worst = 0.0
    for name, q in (("p50", 0.50), ("p95", 0.95), ("p99", 0.99)):
        p = s["latency_ms"][name]
        seen, lo, hi = p["value"], *p["ci"]
        server_q = nearest_rank(service, q)
        true_q = lognormal_quantile(q, args.median_ms, args.sigma)
        err_s, err_t = seen / server_q - 1, seen / true_q - 1
        worst = max(worst, abs(err_s), abs(err_t))
        covers = lo is not None and hi is not None and lo <= true_q <= hi
        print(f"{name:4} {seen:9.2f} [{lo:8.2f}, {hi:8.2f}] {server_q:9.2f} {err_s:+7.1%} "
              f"{true_q:9.2f} {err_t:+7.1%} {'yes' if covers else 'no':>6}")
    overhead = sorted(a - b for a, b in zip((m["duration_ms"] for m in measured), service,
                                            strict=True))
    print(f"per-request overhead (ix's latency − the server's service time): p50 "
          f"{nearest_rank(overhead, 0.5):.2f} ms, p99 {nearest_rank(overhead, 0.99):.2f} ms")
    print(f"worst percentile error: {worst:.1%} (target ≤ 10%): "
          f"{'met' if worst <= 0.10 else 'MISSED'}")


if __name__ == "__main__":
    main()
