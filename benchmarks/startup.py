"""Start-up of the `ix` command: best-of-N wall time, bytecode cache warm.

    .venv/bin/python benchmarks/startup.py [--repeat 20]

Times, each in a fresh process (after one unmeasured warm-up run that fills the bytecode
cache): a bare `python -c pass`, `ix --version`, `ix --help`, and `ix validate` on a copy of
`examples/lab` in a temporary folder. Prints each figure and its ratio to the bare interpreter
against the issue 17 targets: `ix --version` ≤ 3×, `ix --help` ≤ 8× a bare `python -c pass`,
`ix validate` on examples/lab ≤ 0.5 s. Best of N, because a shared machine only ever adds
time; the CPU time (user + system) of the same runs is printed too, since on a loaded machine
the wall time of a short process is mostly waiting for a core.
"""

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
IX = str(Path(sys.executable).parent / "ix")
# PYTHONPATH is kept so that a worktree's source (PYTHONPATH=src) is what is measured.
ENV = {k: v for k, v in os.environ.items()
       if not k.startswith(("IX_", "PYTHON")) or k == "PYTHONPATH"}


def best(argv: list[str], repeat: int, cwd: Path) -> tuple[float, float]:
    """The shortest of `repeat` wall times and CPU times of `argv` (seconds), after one
    warm-up run."""
    subprocess.run(argv, cwd=cwd, env=ENV, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)
    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(argv, cwd=cwd, env=ENV, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, check=False)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        if done.returncode:
            raise SystemExit(f"{' '.join(argv)} exited with {done.returncode}")
    return min(walls), min(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=20, help="runs per command (best of)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ix-startup-") as tmp:
        lab = Path(tmp) / "lab"
        shutil.copytree(REPO / "examples" / "lab", lab,
                        ignore=shutil.ignore_patterns("results", ".ix"))
        base, base_cpu = best([sys.executable, "-c", "pass"], args.repeat, lab)
        rows = [("python -c pass", (base, base_cpu), None, None)]
        for label, argv, target in (
                ("ix --version", [IX, "--version"], ("x", 3.0)),
                ("ix --help", [IX, "--help"], ("x", 8.0)),
                ("ix validate (examples/lab)", [IX, "validate", "--lab", str(lab)],
                 ("s", 0.5))):
            rows.append((label, best(argv, args.repeat, lab), *target))
    print(f"start-up, best of {args.repeat}, bytecode cache warm ({sys.version.split()[0]}, "
          f"{os.cpu_count()} cores)")
    print(f"  load average {os.getloadavg()[0]:.1f}; wall, then CPU (user + system) in "
          "brackets")
    for label, (seconds, cpu), unit, target in rows:
        line = f"  {label:<28} {seconds * 1000:7.1f} ms ({cpu * 1000:5.0f} ms CPU)"
        if unit == "x":
            ratio = seconds / base
            line += (f"  {ratio:5.1f}× python ({cpu / base_cpu:4.1f}× CPU)   "
                     f"(target ≤ {target:g}×: {'met' if ratio <= target else 'NOT met'})")
        elif unit == "s":
            line += f"  {'':5} {'':8} {'':12}   (target ≤ {target:g} s: " \
                    f"{'met' if seconds <= target else 'NOT met'})"
        print(line)


if __name__ == "__main__":
    main()
