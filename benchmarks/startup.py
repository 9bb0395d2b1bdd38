"""Start-up of the `ix` command and the commands that only read: best-of-N wall time,
bytecode cache warm.

    .venv/bin/python benchmarks/startup.py [--repeat 20] [--big] [--big-lab DIR]

Times, each in a fresh process (after one unmeasured warm-up run that fills the bytecode
cache): a bare `python -c pass`, `ix --version`, `ix --help`, and `ix validate` on a copy of
`examples/lab` in a temporary folder. Prints each figure and its ratio to the bare interpreter
against the issue 17 targets: `ix --version` ≤ 3×, `ix --help` ≤ 8× a bare `python -c pass`,
`ix validate` on examples/lab ≤ 0.5 s. Best of N, because a shared machine only ever adds
time; the CPU time (user + system) of the same runs is printed too, since on a loaded machine
the wall time of a short process is mostly waiting for a core.

Then (issue 33) the commands that read what a run wrote, on that copy after `ix run`: `ix ls`,
`ix report RUN --format table|md|json` (RUN: the lab's run with the most trials), `ix results`,
the closed-form `ix plan --mde` (independent and paired), each ≤ 0.5 s; and the viewer's run
page and case page (`/runs/RUN/trials?case=...`), server-side response time of a warm
`ix view` on 127.0.0.1 through httpx, each ≤ 0.3 s. With `--big`, the same on a lab of one
run of 1,000,000 trials (`view_first_render.make_lab`: 200 cases × 2 subjects × 2,500
trials by a real `ix run` on the mock runtime, ~2 minutes; `--big-lab DIR` keeps it in DIR
and reuses it when it is there), each against ≤ 1.5× its time on the example lab.
"""

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

import httpx

from view_first_render import Viewer, make_lab

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


def best_get(url: str, repeat: int) -> float:
    """The shortest of `repeat` response times of a GET of `url` (after one warm-up)."""
    httpx.get(url, timeout=120).raise_for_status()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        httpx.get(url, timeout=120).raise_for_status()
        times.append(time.perf_counter() - start)
    return min(times)


def biggest_run(lab: Path) -> tuple[str, str]:
    """The id of the lab's run with the most trials, and one of its cases."""
    found = []
    for summary in lab.glob("*/results/runs/*/summary.json"):
        data = json.loads(summary.read_text(encoding="utf-8"))
        trials = sum(b.get("trials") or 0 for b in data["subjects"])
        found.append((trials, data["run_id"], data["subjects"][0]["probe_results"][0]["probe_id"]))
    _, run, case = max(found)
    return run, case


def reading(lab: Path, repeat: int) -> list[tuple[str, tuple[float, float]]]:
    """Best wall and CPU times of the commands that read a run, and of the viewer's pages."""
    run, case = biggest_run(lab)
    at = ["--lab", str(lab)]
    rows = [(label, best([IX, *argv, *at], repeat, lab)) for label, argv in (
        ("ix ls", ["ls"]),
        ("ix report RUN (table)", ["report", run, "--format", "table"]),
        ("ix report RUN --format md", ["report", run, "--format", "md"]),
        ("ix report RUN --format json", ["report", run, "--format", "json"]),
        ("ix results", ["results"]),
        ("ix plan --mde 0.1", ["plan", "--mde", "0.1"]),
        ("ix plan --mde 0.1 --paired", ["plan", "--mde", "0.1", "--paired", "--trials", "5"]),
    )]
    viewer = Viewer(lab)
    try:
        for label, path in (("view: run page", f"runs/{run}"),
                            ("view: case page", f"runs/{run}/trials?" + urlencode(
                                {"case": case}))):
            rows.append((label, (best_get(viewer.url + path, repeat), float("nan"))))
    finally:
        viewer.stop()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=20, help="runs per command (best of)")
    parser.add_argument("--big", action="store_true",
                        help="also on a lab of 1,000,000 trials (~2 minutes to make)")
    parser.add_argument("--big-lab", type=Path, default=None,
                        help="keep the 1,000,000-trial lab here (reused when present)")
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
        subprocess.run([IX, "run", "--lab", str(lab)], env=ENV, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        small = reading(lab, args.repeat)
        big = None
        if args.big or args.big_lab:
            root = args.big_lab or Path(tmp) / "big"
            big_lab = root / "lab"
            if not (big_lab / "big" / "results" / "runs").is_dir():
                shutil.rmtree(root, ignore_errors=True)
                make_lab(root, 200, 2500, 2)
            big = reading(big_lab, args.repeat)
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
    print("  reading a run, examples/lab after `ix run` (target ≤ 0.5 s; pages ≤ 0.3 s)"
          + ("; 1,000,000 trials (target ≤ 1.5× the example lab)" if big else ""))
    for i, (label, (seconds, cpu)) in enumerate(small):
        target = 0.3 if label.startswith("view") else 0.5
        cpu_text = f"({cpu * 1000:5.0f} ms CPU)" if cpu == cpu else " " * 15
        line = (f"  {label:<28} {seconds * 1000:7.1f} ms {cpu_text}  "
                f"{'met' if seconds <= target else 'NOT met':7}")
        if big:
            wide, wide_cpu = big[i][1]
            ratio = wide / seconds
            cpu_text = f"({wide_cpu * 1000:5.0f} ms CPU)" if wide_cpu == wide_cpu else " " * 15
            line += (f"   1M: {wide * 1000:7.1f} ms {cpu_text} {ratio:4.1f}× "
                     f"{'met' if ratio <= 1.5 else 'NOT met'}")
        print(line)


if __name__ == "__main__":
    main()
