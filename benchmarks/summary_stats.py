"""Time to compute a full summary, every interval included, for a large run.

    .venv/bin/python benchmarks/summary_stats.py [--cases 10000] [--trials 10] [--subjects 5]

Builds per-case tallies (seeded counts, no trials executed) and times what `ix run` does at
the end of a run: aggregation, per-case score intervals, precision/recall/F1 intervals,
trial-level rates with clustered SE and the hierarchical interval, pass@k and pass^k for
k = 1..trials, for every subject, then the JSON text of the summary. Target: <= 2 s for
10,000 cases x 10 trials x 5 subjects. The import of scipy is timed separately.
"""

import argparse
import json
import random
import statistics
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--subjects", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    t0 = time.perf_counter()
    import scipy.special  # noqa: F401  (what the first summary of a process pays once)

    from ix.eval.models import EvalCase
    from ix.eval.scoring import Tally
    from ix.eval.summary import build_summary, subject_block
    from ix.fs.files import dumps
    from ix.stats import clustered, intervals, passk  # noqa: F401
    imported = time.perf_counter() - t0

    rng = random.Random(0)
    cases = [EvalCase(id=f"c-{i:05d}", prompt="p",
                      expectation="must_trigger" if i % 2 else "should_not_trigger")
             for i in range(args.cases)]
    tallies = []
    for s in range(args.subjects):
        tally = Tally(cases)
        for c in cases:
            p = rng.betavariate(2, 2)
            for _ in range(args.trials):
                tally.add(c.id, None if rng.random() < 0.01 else rng.random() < p)
        tallies.append((f"subject-{s}", tally))

    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        blocks = [subject_block(name, "", tally, tally.results("bench"), args.trials)
                  for name, tally in tallies]
        summary = build_summary(experiment_name="bench", run_id="r", run_status="completed",
                                blocks=blocks, info={})
        text = dumps(summary)
        times.append(time.perf_counter() - t0)
    json.loads(text)  # it is valid JSON, NaN-free
    print(f"summary of {args.cases:,} cases x {args.trials} trials x {args.subjects} subjects "
          f"({args.cases * args.trials * args.subjects:,} trials), {len(text) / 1e6:.1f} MB "
          f"of JSON")
    print(f"  best {min(times):.3f} s, median {statistics.median(times):.3f} s "
          f"(target <= 2 s); importing scipy and ix.stats once: {imported:.3f} s")


if __name__ == "__main__":
    main()
