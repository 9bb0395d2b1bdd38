"""Where the wall time of one `ix run` goes, phase by phase, in a fresh interpreter.

    .venv/bin/python benchmarks/run_phases.py [--cases 1000] [--trials 10] [--repeat 3]

Runs `ix run --json` on the mock runtime (the lab of `run_throughput.py`) in a child
interpreter that wraps the run's phases with a clock: start-up to the command (interpreter,
`ix` and the `run` command's imports), loading and planning (case files, design checks),
opening the run (spec, lock), the trials (the engine's loop), the summary (statistics, and
waiting for their background import), closing the run (summaries, spec), the report's
sections kept in `report.json`, and printing the answer. The gap between the whole command
(`run_throughput.py`) and the engine is here.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from run_throughput import ENV, make_lab

CHILD = r"""
import sys, time
t0 = time.perf_counter()
marks = {}

def timed(owner, name, label):
    inner = getattr(owner, name)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            marks[label] = marks.get(label, 0.0) + time.perf_counter() - start
    setattr(owner, name, wrapper)

def timed_async(owner, name, label):
    inner = getattr(owner, name)
    async def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return await inner(*args, **kwargs)
        finally:
            marks[label] = marks.get(label, 0.0) + time.perf_counter() - start
    setattr(owner, name, wrapper)

import ix.cli.main as cli_main
import ix.cli.run as cli_run
from ix.api import experiments
from ix.engine import run as engine
from ix.api import reports
from ix.store.recorder import RunRecorder
marks["imports (ix, the run command)"] = time.perf_counter() - t0
timed(experiments, "_prepare", "load, plan, design checks")
timed(RunRecorder, "start", "open the run")
timed_async(engine, "_execute", "trials (engine loop)")
timed(engine, "_summarise", "summary statistics")
timed(RunRecorder, "finish", "close the run (files)")
timed(reports, "keep_sections", "report.json (the report's sections)")
experiments.keep_sections = reports.keep_sections
sys.argv = ["ix", "run", "--lab", sys.argv[1], "--json"]
out = sys.stdout
sys.stdout = open("/dev/null", "w")
begun = time.perf_counter()
try:
    cli_main.main()
except SystemExit:
    pass
whole = time.perf_counter() - t0
sys.stdout = out
marks["the rest (printing, audit, exit)"] = (time.perf_counter() - begun) - sum(
    v for k, v in marks.items() if k != "imports (ix, the run command)")
marks["whole (in the child)"] = whole
import json
print(json.dumps(marks))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--latency-ms", type=float, default=0)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ix-bench-") as tmp:
        lab = make_lab(Path(tmp), args.cases, args.trials, args.latency_ms, args.concurrency)
        runs: list[dict[str, float]] = []
        for _ in range(args.repeat):
            results = lab / "bench" / "results"
            if results.exists():
                subprocess.run(["rm", "-rf", str(results)], check=True)
            proc = subprocess.run([sys.executable, "-c", CHILD, str(lab)], env=ENV,
                                  capture_output=True, text=True, check=True)
            runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    n = args.cases * args.trials
    print(f"one `ix run --json`: {args.cases:,} cases x {args.trials} trials = {n:,} trials, "
          f"latency {args.latency_ms:g} ms, concurrency {args.concurrency}; "
          f"median of {args.repeat} (cpus: {os.cpu_count()})")
    for label in runs[0]:
        values = [r[label] for r in runs]
        print(f"   {label:36s} {statistics.median(values):7.3f} s   "
              f"(min {min(values):.3f}, max {max(values):.3f})")


if __name__ == "__main__":
    main()
