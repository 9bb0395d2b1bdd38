"""A 100,000-trial mock run on a Ray cluster of 1 node, then of 2 nodes, on this machine.

    .venv/bin/python benchmarks/ray_nodes.py [--cases 1000] [--trials 100]
        [--latency 0] [--concurrency 256] [--batch 32]

Starts a head (1 CPU) with `ray start`, runs the real `ix run --executor ray` on a mock
experiment of cases x trials, adds a second node (1 CPU, on 127.0.0.2) and runs it again;
then on one node of 2 CPUs, and on the local executor, for reference. Prints, per run, the
wall-clock of the whole command, the engine's time (the run's started_at..finished_at),
trials/s, and how many trials each node ran (from the trial lines' `node`). Both nodes
share this machine's cores, so a second node adds a worker process, not CPU: whatever it
gains, one node of 2 CPUs (two worker processes) gains as well. The nodes are started and
killed here (harness: tests/engine/test_ray_cluster.py).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "engine")]

from test_ray_cluster import AUTH, free_port, kill_node, start_node  # noqa: E402

IX = str(Path(sys.executable).parent / "ix")
# children run from cached bytecode, as an installed ix does (see run_throughput.py); ix
# joins with the nodes' token (test_ray_cluster.AUTH)
ENV = {**{k: v for k, v in os.environ.items()
          if not k.startswith(("IX_", "RAY_AUTH_")) and k != "PYTHONDONTWRITEBYTECODE"}, **AUTH}


def make_lab(root: Path, cases: int, trials: int, latency_ms: float, concurrency: int) -> Path:
    exp = root / "bench"
    (exp / "cases").mkdir(parents=True)
    for i in range(cases):
        e = "must_trigger" if i % 2 == 0 else "should_not_trigger"
        (exp / "cases" / f"c-{i:05d}.md").write_text(
            f"---\nexpectation: {e}\n---\nPrompt number {i}\n", encoding="utf-8")
    (exp / "experiment.yaml").write_text(
        f"name: bench\nskill: target\ntrials: {trials}\nconcurrency: {concurrency}\n"
        f"runtime:\n  kind: mock\n  default_rate: 0.5\n  latency_ms: {latency_ms}\n",
        encoding="utf-8")
    return root


def run(lab: Path, batch: int, *executor: str) -> dict[str, object]:
    """One `ix run` from a clean results folder: wall and engine seconds, trials, by node."""
    subprocess.run(["rm", "-rf", str(lab / "bench" / "results")], check=True)
    t0 = time.perf_counter()
    proc = subprocess.run([IX, "run", "--lab", str(lab), "--json", *executor],
                          env={**ENV, "IX_RAY_BATCH": str(batch)}, capture_output=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"ix run failed ({proc.returncode}): {proc.stderr.decode()}")
    summary = json.loads(proc.stdout)
    started, finished = (datetime.fromisoformat(summary[k].replace("Z", "+00:00"))
                         for k in ("started_at", "finished_at"))
    by_node: Counter[str] = Counter()
    with (lab / "bench" / "results" / "trials.jsonl").open("rb") as f:
        for line in f:
            node = json.loads(line).get("node")
            by_node[node["ip"] if node else "here"] += 1
    return {"wall": wall, "engine": (finished - started).total_seconds(),
            "trials": sum(b["trials"] for b in summary["subjects"]), "by_node": by_node}


def show(label: str, r: dict[str, object]) -> None:
    n, wall, engine = r["trials"], r["wall"], r["engine"]
    assert isinstance(n, int) and isinstance(wall, float) and isinstance(engine, float)
    nodes = ", ".join(f"{ip}: {k:,}" for ip, k in sorted(r["by_node"].items()))  # type: ignore[attr-defined]
    print(f"{label:<15} {wall:6.1f} s {n / wall:6,.0f}/s   engine {engine:6.1f} s "
          f"{n / engine:6,.0f}/s")
    print(f"{'':<15} trials by node: {nodes}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--latency", type=float, default=0, help="the mock's latency_ms")
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--batch", type=int, default=32, help="IX_RAY_BATCH")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ix-bench-") as tmp:
        lab = make_lab(Path(tmp) / "lab", args.cases, args.trials, args.latency,
                       args.concurrency)
        # a few trials first, on each new node: its worker imports ix once
        warm = make_lab(Path(tmp) / "warm", 64, 1, 0, args.concurrency)
        n = args.cases * args.trials
        print(f"ix run --executor ray, {n:,} mock trials, latency {args.latency:g} ms, "
              f"concurrency {args.concurrency}, IX_RAY_BATCH={args.batch}; "
              f"{os.cpu_count()} cores\n")
        port = free_port()
        address = f"127.0.0.1:{port}"
        head = start_node("--head", f"--port={port}", "--num-cpus=1",
                          "--include-dashboard=false", f"--dashboard-port={free_port()}")
        second = None
        try:
            ray = ("--executor", "ray", "--address", address)
            run(warm, 1, *ray)
            show("1 node", run(lab, args.batch, *ray))
            second = start_node(f"--address={address}", "--node-ip-address=127.0.0.2",
                                "--num-cpus=1")
            run(warm, 1, *ray)
            show("2 nodes", run(lab, args.batch, *ray))
        finally:
            for node in (second, head):
                if node is not None:
                    kill_node(node)
        # the second node's worker process, without a second node: what the 2 nodes gained
        port = free_port()
        address = f"127.0.0.1:{port}"
        head = start_node("--head", f"--port={port}", "--num-cpus=2",
                          "--include-dashboard=false", f"--dashboard-port={free_port()}")
        try:
            ray = ("--executor", "ray", "--address", address)
            run(warm, 1, *ray)
            show("1 node, 2 CPUs", run(lab, args.batch, *ray))
        finally:
            kill_node(head)
        show("local", run(lab, args.batch))


if __name__ == "__main__":
    main()
