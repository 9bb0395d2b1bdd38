"""What durability costs: trials per second under each fsync policy of the trial log.

    .venv/bin/python benchmarks/fsync_cost.py [--repeat 3] [--cases 500] [--trials 10]
                                              [--dir DIR]

1. The real `ix run` in a subprocess, mock runtime, latency 0, concurrency 100 (the worst
   case: nothing but ix's own work per trial), with `IX_FSYNC=end` (the default: each line
   is handed to the OS as it is written, fsynced at the end) and `IX_FSYNC=line` (each
   line fsynced before the trial is counted). Trials/s of the engine (the summary's
   started_at..finished_at) and of the whole command.
2. The trial writer alone (`ix.store.trials.TrialWriter`), per line of a typical ~550-byte
   record: a plain buffered append (what the writer did before it took a lock), the writer
   with policy `end`, with an fsync every 64 lines or every 100 ms (a batch policy, measured
   here with a second descriptor; ix does not offer it), and with policy `line`.

The log lives in DIR (default: a temporary folder under the system's); an fsync costs what
that file system and disk make it cost (nothing on tmpfs), so the figures say where they
were measured.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from ix.store.trials import TrialWriter

IX = [str(Path(sys.executable).parent / "ix")]
ENV = {k: v for k, v in os.environ.items()
       if not k.startswith("IX_") and k != "PYTHONDONTWRITEBYTECODE"}

RECORD = {
    "run_id": "20261126T021500Z-3f9a1c", "experiment": "bench", "subject": "target",
    "probe_id": "c-00042", "trial": 3, "seed": 4611686018427387903, "attempt": 0,
    "expectation": "must_trigger", "started_at": "2026-11-26T02:15:00.123Z",
    "duration_ms": 0.412,
    "observation": {"content": "Using the target skill.",
                    "tool_calls": [{"name": "Skill", "input": {"skill": "target"}}],
                    "duration_ms": 0, "tokens_input": 0, "tokens_output": 0, "cost_usd": 0.0},
    "reading": {"sensor_name": "activation", "passed": True, "score": 1.0, "metrics": {},
                "details": "target invoked"},
    "error": None,
}


def make_lab(root: Path, cases: int, trials: int) -> Path:
    lab = root / "lab"
    exp = lab / "bench"
    (exp / "cases").mkdir(parents=True)
    for i in range(cases):
        e = "must_trigger" if i % 2 == 0 else "should_not_trigger"
        (exp / "cases" / f"c-{i:05d}.md").write_text(
            f"---\nexpectation: {e}\n---\nPrompt number {i}\n", encoding="utf-8")
    (exp / "experiment.yaml").write_text(
        f"name: bench\nskill: target\ntrials: {trials}\nconcurrency: 100\n"
        "runtime:\n  kind: mock\n  default_rate: 0.5\n  latency_ms: 0\n", encoding="utf-8")
    return lab


def ix_run(lab: Path, policy: str) -> tuple[float, float, int]:
    """(engine seconds, whole-command seconds, trials) of one `ix run`."""
    subprocess.run(["rm", "-rf", str(lab / "bench" / "results")], check=True)
    t0 = time.perf_counter()
    proc = subprocess.run([*IX, "run", "--lab", str(lab), "--json"], capture_output=True,
                          env={**ENV, "IX_FSYNC": policy})
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"ix run failed ({proc.returncode}): {proc.stderr.decode()}")
    s = json.loads(proc.stdout)
    started, finished = (datetime.fromisoformat(s[k].replace("Z", "+00:00"))
                         for k in ("started_at", "finished_at"))
    return (finished - started).total_seconds(), wall, sum(b["trials"] for b in s["subjects"])


def writer_cost(directory: Path, policy: str, lines: int) -> float:
    """Microseconds per line written by one policy."""
    path = directory / f"writer-{policy}.jsonl"
    path.unlink(missing_ok=True)
    t0 = time.perf_counter()
    if policy == "buffered":
        with path.open("a", encoding="utf-8") as f:
            for _ in range(lines):
                f.write(json.dumps(RECORD, ensure_ascii=False) + "\n")
                f.flush()
            f.flush()
            os.fsync(f.fileno())
    else:
        kind, _, every = policy.partition(":")
        writer = TrialWriter(path, fsync="line" if kind == "line" else "end")
        side = os.open(path, os.O_RDONLY)  # an fsync of any descriptor syncs the file
        last = time.perf_counter()
        try:
            for i in range(1, lines + 1):
                writer.write(RECORD)
                if every.endswith("ms"):
                    now = time.perf_counter()
                    if (now - last) * 1000 >= float(every[:-2]):
                        os.fsync(side)
                        last = now
                elif every and i % int(every) == 0:
                    os.fsync(side)
        finally:
            os.close(side)
            writer.close()
    seconds = time.perf_counter() - t0
    path.unlink()
    return seconds / lines * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ix-fsync-", dir=args.dir) as tmp:
        root = Path(tmp)
        fs = subprocess.run(["df", "--output=fstype", str(root)], capture_output=True,
                            text=True).stdout.split()[-1:]
        print(f"fsync cost on {root} ({fs[0] if fs else '?'}); python "
              f"{sys.version.split()[0]}, {os.cpu_count()} cores; median of {args.repeat}\n")
        lab = make_lab(root, args.cases, args.trials)
        ix_run(lab, "end")  # warm-up: bytecode cached, files in the page cache
        print(f"1) ix run, {args.cases * args.trials:,} trials, mock latency 0, concurrency 100")
        base = None
        for policy in ("end", "line"):
            runs = [ix_run(lab, policy) for _ in range(args.repeat)]
            n = runs[0][2]
            engine = statistics.median(r[0] for r in runs)
            wall = statistics.median(r[1] for r in runs)
            base = base or n / engine
            print(f"   IX_FSYNC={policy:<4}  engine {n / engine:>8,.0f} trials/s "
                  f"({(n / engine) / base:.2f}x)   whole command {n / wall:>8,.0f} trials/s")
        print("\n2) the trial writer alone, per ~550-byte line")
        for policy, lines in (("buffered", 100_000), ("end", 100_000), ("end:64", 20_000),
                              ("end:100ms", 20_000), ("line", 2_000)):
            cost = statistics.median(writer_cost(root, policy, lines)
                                     for _ in range(args.repeat))
            label = {"buffered": "plain buffered append (before)",
                     "end": "TrialWriter, fsync at the end",
                     "end:64": "fsync every 64 lines",
                     "end:100ms": "fsync every 100 ms",
                     "line": "TrialWriter, fsync every line"}[policy]
            print(f"   {label:<32} {cost:>9.2f} us/line = {1e6 / cost:>11,.0f} lines/s")


if __name__ == "__main__":
    main()
