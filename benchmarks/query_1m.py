"""Queries over 1,000,000 trials: `ix results`, aggregates, the index, a Parquet export.

    .venv/bin/python benchmarks/query_1m.py [--cases 1000] [--trials 500] [--subjects 2]
                                             [--real-run]

Builds a lab of one experiment with 1,000 cases (tags and difficulties in their files) and
two mock subjects × 500 trials = 1,000,000 trial lines, written directly in the engine's
line format (or, with --real-run, by a real `ix run` on the mock runtime, ~2 minutes),
1% of them errored and 1% retried. Then times whole `ix` commands in a fresh process each:

- the first `ix results --subject X` (builds the index under <lab>/.ix/index/),
- `ix results --subject X` and `ix results --group-by subject --group-by case` warm
  (targets: <= 1 s each),
- the first `ix results --subject X` after a new run appended 10,000 trials (<= 5 s),
- `ix query` with an aggregate, and a Parquet export of all 1,000,000 trials (<= 10 s),
- the same queries after the experiment folder was copied with its results (each trial is
  then in two folders and counted once, issue 33).

Needs ~1 GB of disk in a temporary folder.
"""

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

IX = str(Path(sys.executable).parent / "ix")
ENV = {k: v for k, v in os.environ.items()
       if not k.startswith("IX_") and k != "PYTHONDONTWRITEBYTECODE"}
DIFFICULTIES = ("easy", "medium", "hard")
TAGS = ("csv", "sql", "paraphrase", "direct", "near-miss")

LINE = ('{{"run_id": "{run}", "experiment": "big", "subject": "{subject}", '
        '"probe_id": "{case}", "trial": {trial}, "seed": {seed}, "attempt": {attempt}, '
        '"expectation": "{expectation}", "started_at": "{started}", "duration_ms": {ms}, '
        '"observation": {observation}, "reading": {reading}, "error": {error}}}\n')
OBSERVATION = ('{{"content": "{content}", "tool_calls": {calls}, "duration_ms": 0, '
               '"tokens_input": {tin}, "tokens_output": {tout}, "cost_usd": {cost}}}')
READING = ('{{"sensor_name": "activation", "passed": {passed}, "score": {score}, '
           '"metrics": {{}}, "details": "{details}"}}')


def timed(args: list[str], *, python: str | None = None) -> float:
    """Wall time of one command (an `ix` command, or a Python snippet) in a fresh process."""
    argv = [sys.executable, "-c", python] if python else [IX, *args]
    code = ("import subprocess, sys, time\n"
            "t0 = time.perf_counter()\n"
            f"subprocess.run({argv!r}, check=True, stdout=subprocess.DEVNULL)\n"
            "print(time.perf_counter() - t0)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=ENV, check=True).stdout
    return float(out.split()[0])


def write_cases(exp: Path, cases: int) -> None:
    (exp / "cases").mkdir(parents=True)
    for i in range(cases):
        e = "must_trigger" if i % 2 else "should_not_trigger"
        tags = f"[{TAGS[i % len(TAGS)]}, {TAGS[(i // 5) % len(TAGS)]}]"
        (exp / "cases" / f"c-{i:04d}.md").write_text(
            f"---\nexpectation: {e}\ntags: {tags}\ndifficulty: {DIFFICULTIES[i % 3]}\n---\n"
            f"prompt {i}\n")


def write_lines(log: Path, run: str, subjects: list[str], cases: int, trials: int,
                minute: int, rng: random.Random) -> int:
    """Trial lines in the engine's format; 1% errored, and 1% retried (a second attempt)."""
    n = 0
    with log.open("a", encoding="utf-8") as f:
        for c in range(cases):
            expectation = "must_trigger" if c % 2 else "should_not_trigger"
            rate = (0.9 if c % 2 else 0.1) - 0.2 * (c % 3) * (1 if c % 2 else -1) / 2
            for s in subjects:
                for t in range(trials):
                    attempts = 2 if rng.random() < 0.01 else 1
                    for attempt in range(attempts):
                        n += 1
                        errored = attempt == 0 and (attempts == 2 or rng.random() < 0.01)
                        passed = rng.random() < rate
                        started = (f"2026-11-26T{(minute + c // 60) % 24:02d}:{c % 60:02d}:"
                                   f"{t % 60:02d}.{rng.randrange(1000):03d}Z")
                        common = {"run": run, "subject": s, "case": f"c-{c:04d}", "trial": t,
                                  "seed": rng.getrandbits(63), "attempt": attempt,
                                  "expectation": expectation, "started": started,
                                  "ms": round(rng.expovariate(1 / 40), 3)}
                        if errored:
                            f.write(LINE.format(**common, observation="null", reading="null",
                                                error='{"kind": "runtime_error", '
                                                      '"message": "mock error"}'))
                            continue
                        calls = '[{"name": "Skill", "input": {"skill": "t"}}]' if passed \
                            else "[]"
                        observation = OBSERVATION.format(
                            content="Using the t skill." if passed else "Answered directly.",
                            calls=calls, tin=rng.randint(200, 2000), tout=rng.randint(10, 400),
                            cost=round(rng.random() / 100, 6))
                        reading = READING.format(passed="true" if passed else "false",
                                                 score=1.0 if passed else 0.0,
                                                 details="t invoked" if passed else "not invoked")
                        f.write(LINE.format(**common, observation=observation, reading=reading,
                                            error="null"))
    return n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--trials", type=int, default=500)
    parser.add_argument("--subjects", type=int, default=2)
    parser.add_argument("--real-run", action="store_true",
                        help="record the trials with a real `ix run` on the mock runtime")
    parser.add_argument("--repeat", type=int, default=3, help="warm timings: best of N")
    args = parser.parse_args()
    subjects = [f"subject-{chr(97 + i)}" for i in range(args.subjects)]
    rng = random.Random(0)
    with tempfile.TemporaryDirectory(prefix="ix-query-") as tmp:
        lab = Path(tmp) / "lab"
        exp = lab / "big"
        write_cases(exp, args.cases)
        listed = "".join(f"  - {{name: {s}, skills: []}}\n" for s in subjects)
        (exp / "experiment.yaml").write_text(
            f"name: big\ntrials: {args.trials}\nsensor: {{kind: activation, skill: t}}\n"
            f"runtime: {{kind: mock, default_rate: 0.5, error_rates: {{}}}}\n"
            f"subjects:\n{listed}")
        log = exp / "results" / "trials.jsonl"
        log.parent.mkdir(parents=True)
        if args.real_run:
            wall = timed(["run", "--lab", str(lab)])
            print(f"ix run: {wall:.1f} s")
        else:
            n = write_lines(log, "20261126T000000Z-000001", subjects, args.cases, args.trials,
                            0, rng)
            spec = exp / "results" / "runs" / "20261126T000000Z-000001" / "spec.yaml"
            spec.parent.mkdir(parents=True)
            spec.write_text("run_id: 20261126T000000Z-000001\nexperiment: big\n"
                            "status: completed\nstarted_at: '2026-11-26T00:00:00.000Z'\n")
            print(f"wrote {n:,} trial lines ({log.stat().st_size / 1e6:.0f} MB) directly")
        lines = sum(1 for _ in log.open("rb"))
        lab_arg = ["--lab", str(lab)]
        x = subjects[0]

        first = timed(["results", *lab_arg, "--subject", x])
        print(f"first `ix results --subject {x}` (builds the index of {lines:,} lines): "
              f"{first:.2f} s")

        def warm(label: str, argv: list[str], target: float) -> None:
            times = [timed(argv) for _ in range(args.repeat)]
            print(f"{label}: best {min(times):.2f} s, median {statistics.median(times):.2f} s "
                  f"(target <= {target:g} s)")

        warm(f"warm `ix results --subject {x}`", ["results", *lab_arg, "--subject", x], 1)
        warm("warm `ix results --group-by subject --group-by case --format csv` "
             f"({args.subjects * args.cases:,} groups)",
             ["results", *lab_arg, "--group-by", "subject", "--group-by", "case",
              "--format", "csv"], 1)
        warm("warm `ix query` (pass rate per subject x difficulty)",
             ["query", *lab_arg, "SELECT subject, difficulty, avg(passed::INT) AS rate, "
              "count(*) AS n FROM trials GROUP BY ALL ORDER BY ALL"], 1)

        probe = subprocess.run(
            [sys.executable, "-c",
             "import time, ix.api, duckdb, ix.stats.intervals\n"
             f"lab = ix.Lab({str(lab)!r})\n"
             "t0 = time.perf_counter()\n"
             f"rs = lab.results.query(subject={x!r}, limit=50)\n"
             "with rs.snapshot(): rs.rows(); rs.total()\n"
             "t1 = time.perf_counter()\n"
             "lab.results.query().group_by('subject', 'case')\n"
             "print(t1 - t0, time.perf_counter() - t1)\n"],
            capture_output=True, text=True, env=ENV, check=True).stdout.split()
        print(f"in process, imports done: --subject {float(probe[0]):.2f} s, subject x case "
              f"aggregate {float(probe[1]):.2f} s")

        added = write_lines(log, "20261126T120000Z-000002", subjects, args.cases // 100 or 1,
                            args.trials, 12, rng)
        after = timed(["results", *lab_arg, "--subject", x])
        print(f"first `ix results --subject {x}` after a new run appended {added:,} trials: "
              f"{after:.2f} s (target <= 5 s)")
        warm(f"warm again `ix results --subject {x}`", ["results", *lab_arg, "--subject", x], 1)

        out = Path(tmp) / "all.parquet"
        export = timed([], python=f"import ix; ix.Lab({str(lab)!r}).results.query()"
                                  f".export('parquet', {str(out)!r})")
        print(f"Parquet export of every trial (ix.Lab(...).results.query().export, whole "
              f"process): {export:.2f} s, {out.stat().st_size / 1e6:.0f} MB (target <= 10 s)")
        run_out = Path(tmp) / "run.parquet"
        run_export = timed([], python=f"import ix; ix.Lab({str(lab)!r}).results.query("
                                      f"run='20261126T000000Z-000001').export('parquet', "
                                      f"{str(run_out)!r})")
        print(f"Parquet export of the first run ({lines:,} lines): {run_export:.2f} s")
        try:
            cli = timed(["export", "20261126T000000Z-000001", *lab_arg, "--format", "parquet",
                         "--out", str(Path(tmp) / "cli.parquet")])
            print(f"`ix export RUN --format parquet` of that run: {cli:.2f} s")
        except subprocess.CalledProcessError:
            print("`ix export RUN --format parquet` did not run here")
        index = lab / ".ix" / "index"
        size = sum(p.stat().st_size for p in index.iterdir())
        print(f"index: {size / 1e6:.0f} MB in {index}")

        # the folder copied with its results (issue 33): every trial is there twice, and
        # counted once; only the copied runs' rows are ranked
        shutil.copytree(exp, lab / "big-copy")
        first = timed(["results", *lab_arg, "--subject", x])
        print(f"first `ix results --subject {x}` after the folder was copied (indexes the "
              f"copy's {lines + added:,} lines): {first:.2f} s")
        warm(f"warm `ix results --subject {x}` with the copy",
             ["results", *lab_arg, "--subject", x], 1)
        warm("warm `ix query` with the copy (pass rate per subject x difficulty)",
             ["query", *lab_arg, "SELECT subject, difficulty, avg(passed::INT) AS rate, "
              "count(*) AS n FROM trials GROUP BY ALL ORDER BY ALL"], 1)


if __name__ == "__main__":
    main()
