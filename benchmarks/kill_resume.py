"""Kill-and-resume: SIGKILL the real `ix run` at many seeded random points, resume, check.

    .venv/bin/python benchmarks/kill_resume.py [--points 200] [--seed 1]

Each kill point starts `ix run` on a fresh copy of a 12-case x 8-trial mock experiment and
SIGKILLs it while Python starts, as its run folder is made, after N trial lines, after N
lines plus a torn line written here, or while the summary files are written. Then
`ix run --resume` (a plain `ix run` when the kill came before the run existed) must finish
the run: every JSON/YAML file parsed at the kill, each trial recorded exactly once, a torn
line reported and removed, the summary equal to an uninterrupted run's, the spec completed.
The harness is that of tests/engine/test_crash_safety.py (which runs 15 points); this prints
the figure: runs survived / tried, by phase. About 2 s a point.
"""

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "engine")]

from test_crash_safety import PHASES, TOTAL, sweep  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ix-kill-") as root:
        outcomes = sweep(Path(root), seed=args.seed, n=args.points)
    tried, survived = Counter(), Counter()
    for o in outcomes:
        tried[o.point.phase] += 1
        survived[o.point.phase] += o.survived
    print(f"kill points: {len(outcomes)} (seed {args.seed}), "
          f"{time.perf_counter() - t0:.0f} s")
    for phase in PHASES:
        print(f"  {phase:<11} survived {survived[phase]:>3} / {tried[phase]:<3}")
    landed = Counter("before the run folder" if o.fresh_start else
                     "in the run folder, before any trial" if o.lines_at_kill == 0 else
                     "among the trials" if o.lines_at_kill < TOTAL else "after the last trial"
                     for o in outcomes)
    print("  landed: " + ", ".join(f"{k} {v}" for k, v in landed.items()))
    print(f"  torn last lines repaired: {sum(o.torn_line is not None for o in outcomes)}")
    for o in outcomes:
        if not o.survived:
            print(f"  FAILED {o.point}: {o.failures}")
    print(f"survived {sum(survived.values())} / {len(outcomes)}")
    sys.exit(0 if all(o.survived for o in outcomes) else 1)


if __name__ == "__main__":
    main()
