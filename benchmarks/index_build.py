"""A cold build of the query index in process: `open_index` of a log no index knows yet.

    .venv/bin/python benchmarks/index_build.py [--lines 1000000] [--repeat 3] [--threads N]
                                                [--lab DIR] [--steps]

Writes a lab of one experiment whose `trials.jsonl` holds `--lines` trial lines in the
engine's format (as `query_1m.py` writes them: 2 subjects, 1% errored, 1% retried; kept in
`--lab` and reused if given), then times `ix.query.index.open_index` after removing
`<lab>/.ix`, best of `--repeat`: wall and CPU time (CPU includes DuckDB's threads), and
peak RSS. `--steps` prints the time of each step of the build (finding the lines Python
cannot decode, the typed read, the Parquet copy, superseded attempts, the case table).
`--threads 1` runs DuckDB in one thread, for instruction counts that a loaded machine does
not change:

    valgrind --tool=callgrind --callgrind-out-file=/dev/null .venv/bin/python \\
        benchmarks/index_build.py --lines 50000 --repeat 1 --threads 1 --lab /tmp/lab50k

(and the same with `--lines 1` for the fixed cost). Run it with PYTHONPATH pointing at
another checkout's `src` to compare. The target (issue 34): 1,000,000 lines in <= 6 s.
"""

import argparse
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from query_1m import write_cases, write_lines

RUN = "20261126T000000Z-000001"


def make_lab(lab: Path, lines: int) -> None:
    """One experiment of 1,000 cases (fewer for a short log) and `lines` trial lines."""
    log = lab / "big" / "results" / "trials.jsonl"
    if log.is_file():
        return
    exp = lab / "big"
    cases = min(1000, max(1, lines // 2))
    write_cases(exp, cases)
    (exp / "experiment.yaml").write_text(
        "name: big\ntrials: 1\nsensor: {kind: activation, skill: t}\n"
        "runtime: {kind: mock, default_rate: 0.5}\nsubjects:\n"
        "  - {name: subject-a, skills: []}\n  - {name: subject-b, skills: []}\n")
    log.parent.mkdir(parents=True)
    trials = max(1, -(-lines // (2 * cases)))
    write_lines(log, RUN, ["subject-a", "subject-b"], cases, trials, 0, random.Random(0))
    with log.open("rb") as f:  # cut to `lines` (the retries make a few more)
        kept = b"".join(line for _, line in zip(range(lines), f, strict=False))
    log.write_bytes(kept)
    spec = exp / "results" / "runs" / RUN / "spec.yaml"
    spec.parent.mkdir(parents=True)
    spec.write_text(f"run_id: {RUN}\nexperiment: big\nstatus: completed\n"
                    "started_at: '2026-11-26T00:00:00.000Z'\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0, help="DuckDB's threads (0: default)")
    parser.add_argument("--lab", type=Path, help="keep the lab here and reuse it")
    parser.add_argument("--steps", action="store_true", help="time each step of the build")
    args = parser.parse_args()

    import duckdb

    if args.threads:
        connect = duckdb.connect

        def one_thread(*a, **k):  # type: ignore[no-untyped-def]
            con = connect(*a, **k)
            con.execute(f"SET threads = {args.threads}")
            return con

        duckdb.connect = one_thread

    import ix.query.index as index
    import ix.query.index_parts as parts

    if args.steps:
        for module, name in [(parts, "_undecodable"), (parts, "_parse"),
                             (parts, "copy_to_parquet"), (index, "write_superseded"),
                             (index, "_write_cases")]:
            inner = getattr(module, name)

            def timed(*a, _inner=inner, _name=name, **k):  # type: ignore[no-untyped-def]
                w, c = time.perf_counter(), time.process_time()
                try:
                    return _inner(*a, **k)
                finally:
                    print(f"   {_name}: {time.perf_counter() - w:.2f} s wall, "
                          f"{time.process_time() - c:.2f} s CPU")

            setattr(module, name, timed)

    with tempfile.TemporaryDirectory(prefix="ix-index-") as tmp:
        lab = args.lab or Path(tmp) / "lab"
        make_lab(lab, args.lines)
        log = lab / "big" / "results" / "trials.jsonl"
        n = sum(1 for _ in log.open("rb"))
        print(f"{n:,} trial lines ({log.stat().st_size / 1e6:.0f} MB); "
              f"DuckDB {duckdb.__version__}, threads {args.threads or 'default'}")
        walls, cpus = [], []
        for _ in range(args.repeat):
            shutil.rmtree(lab / ".ix", ignore_errors=True)
            w, c = time.perf_counter(), time.process_time()
            built = index.open_index(lab)
            walls.append(time.perf_counter() - w)
            cpus.append(time.process_time() - c)
            [source] = built.sources
            assert source.rows + source.skipped >= n - 2, (source.rows, source.skipped, n)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"cold open_index: best {min(walls):.2f} s wall, {min(cpus):.2f} s CPU "
              f"(of {args.repeat}); {source.rows:,} rows, {source.skipped:,} skipped; "
              f"peak RSS {rss:.0f} MiB   (target, 1M lines: <= 6 s)")


if __name__ == "__main__":
    main()
