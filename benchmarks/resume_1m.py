"""Resume of a 1,000,000-trial run with one trial missing: how long until it is complete?

    .venv/bin/python benchmarks/resume_1m.py [--cases 1000] [--trials 1000]

Runs the mock experiment once (1,000 cases × 1,000 trials, latency 0) with `ix run`,
removes one trial line from `trials.jsonl` as if the process had died before writing it,
then times `ix run --resume` (the whole command: reading the log back, rebuilding the
tallies, running the one missing trial, writing the summary). Target: <= 5 s. Also prints
the peak RSS of both commands. Needs ~0.5 GB of disk in a temporary folder.
"""

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

IX = str(Path(sys.executable).parent / "ix")
ENV = {k: v for k, v in os.environ.items()
       if not k.startswith("IX_") and k != "PYTHONDONTWRITEBYTECODE"}


def timed(args: list[str]) -> tuple[float, int]:
    """Wall time and peak RSS (MiB) of one `ix` command, measured from a fresh interpreter
    so that no other child's maximum is mixed in."""
    code = ("import resource, subprocess, sys, time\n"
            "t0 = time.perf_counter()\n"
            f"subprocess.run({[IX, *args]!r}, check=True, stdout=subprocess.DEVNULL)\n"
            "print(time.perf_counter() - t0, "
            "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=ENV, check=True).stdout.split()
    return float(out[0]), int(out[1]) // 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--trials", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ix-resume-") as tmp:
        exp = Path(tmp) / "lab" / "big"
        (exp / "cases").mkdir(parents=True)
        for i in range(args.cases):
            e = "must_trigger" if i % 2 else "should_not_trigger"
            (exp / "cases" / f"c-{i:04d}.md").write_text(f"---\nexpectation: {e}\n---\np{i}\n")
        (exp / "experiment.yaml").write_text(
            f"name: big\nskill: t\ntrials: {args.trials}\n"
            "runtime: {kind: mock, default_rate: 0.5}\n")
        n = args.cases * args.trials
        wall, rss = timed(["run", "--lab", str(exp.parent)])
        print(f"full run: {n:,} trials in {wall:.1f} s ({n / wall:,.0f}/s), peak RSS {rss} MiB")
        log = exp / "results" / "trials.jsonl"
        data = log.read_bytes()
        cut = data.index(b"\n", len(data) // 2) + 1
        end = data.index(b"\n", cut) + 1
        log.write_bytes(data[:cut] + data[end:])  # one trial never written
        wall, rss = timed(["run", "--lab", str(exp.parent), "--resume"])
        print(f"resume with 1 trial missing: {wall:.2f} s (target <= 5 s), peak RSS {rss} MiB")
        lines = sum(1 for _ in log.open("rb"))
        print(f"trials.jsonl now has {lines:,} lines (expected {n:,})")


if __name__ == "__main__":
    main()
