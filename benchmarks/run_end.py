"""The end of `ix run`: what printing the summary costs on a 1,000-case run.

    .venv/bin/python benchmarks/run_end.py [--repeat 3] [--cases 1000] [--trials 5]

Prints, for the real `ix` command in a subprocess with its output in a pipe (off a terminal,
as in CI or `ix run > log`), the wall time of `ix run` with the terminal summary and with
`--json`, and the summary's size in lines; then, in this process, the time rich takes to
render the summary `ix run` prints (`summary_renderable`) against every case's row
(`subject_table` over all cases, which `ix run` printed before issue 17 and `ix report` still
prints), on the same summary. To compare with another revision, run it with that
revision's sources first on the path (the children inherit the environment):

    git archive REV src | tar -x -C /tmp/rev && PYTHONPATH=/tmp/rev/src \
        .venv/bin/python benchmarks/run_end.py
"""

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: `python -m ix`, not the `ix` script: the same command on any revision put first on the path
IX = [sys.executable, "-m", "ix"]
ENV = {k: v for k, v in os.environ.items()
       if not k.startswith("IX_") and k != "PYTHONDONTWRITEBYTECODE"}
ENV["COLUMNS"] = "80"


def make_lab(root: Path, cases: int, trials: int) -> Path:
    """`cases` cases, half must and half not, on a mock that gets some of them wrong."""
    lab = root / f"lab-{cases}x{trials}"
    exp = lab / "bench"
    (exp / "cases").mkdir(parents=True)
    for i in range(cases):
        e = "must_trigger" if i % 2 == 0 else "should_not_trigger"
        (exp / "cases" / f"c-{i:05d}.md").write_text(
            f"---\nexpectation: {e}\n---\nPrompt number {i}\n", encoding="utf-8")
    rates = {f"c-{i:05d}": 0.95 for i in range(0, cases, 2)}  # most cases right ...
    rates.update({f"c-{i:05d}": 0.1 if i % 2 == 0 else 0.9  # ... and one in 37 wrong
                  for i in range(0, cases, 37)})
    (exp / "experiment.yaml").write_text(
        f"name: bench\nskill: target\ntrials: {trials}\nconcurrency: 100\n"
        f"runtime:\n  kind: mock\n  default_rate: 0.0\n"
        f"  activation_rates: {json.dumps(rates)}\n", encoding="utf-8")
    return lab


def run(lab: Path, *extra: str) -> tuple[float, str]:
    """One `ix run` with its output piped: wall seconds and stdout."""
    results = lab / "bench" / "results"
    if results.exists():
        subprocess.run(["rm", "-rf", str(results)], check=True)
    t0 = time.perf_counter()
    proc = subprocess.run([*IX, "run", "--lab", str(lab), "--progress", "none", *extra],
                          env=ENV, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"ix run failed ({proc.returncode}): {proc.stderr}")
    return wall, proc.stdout


def render_seconds(renderable: object, repeat: int) -> float:
    """Best of `repeat`: rich rendering `renderable` to an 80-column file, as off a terminal."""
    from rich.console import Console

    best = float("inf")
    for _ in range(repeat):
        console = Console(file=io.StringIO(), width=80, force_terminal=False)
        t0 = time.perf_counter()
        console.print(renderable)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--trials", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ix-bench-") as tmp:
        lab = make_lab(Path(tmp), args.cases, args.trials)
        run(lab, "--json")  # warm-up: bytecode cached, files in the page cache
        print(f"ix run, {args.cases:,} cases x {args.trials} trials on the mock runtime, "
              f"output piped; python {sys.version.split()[0]}, {os.cpu_count()} cores; "
              f"best and median of {args.repeat}\n")
        text = [run(lab) for _ in range(args.repeat)]
        plain = [run(lab, "--json") for _ in range(args.repeat)]
        for label, runs in (("terminal summary", text), ("--json", plain)):
            walls = [w for w, _ in runs]
            print(f"  ix run ({label}): best {min(walls):.3f} s, median "
                  f"{statistics.median(walls):.3f} s, {len(runs[-1][1].splitlines()):,} lines "
                  "of output")

        from rich.console import Group

        from ix.report import console as summary_console

        summary = json.loads(plain[-1][1])
        shown = render_seconds(summary_console.summary_renderable(summary), args.repeat)
        every = render_seconds(Group(*(
            summary_console.subject_table(b, b["name"], summary.get("sensor", "activation"))
            for b in summary["subjects"])), args.repeat)
        print(f"\n  rendering in-process (best of {args.repeat}): the summary `ix run` prints "
              f"{shown:.3f} s; every case's row {every:.3f} s")


if __name__ == "__main__":
    main()
