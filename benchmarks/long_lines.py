"""Reading a trial log of long lines (real agents' answers): the resume reader and the index.

    .venv/bin/python benchmarks/long_lines.py [--lines 200000] [--bytes 2000] [--compact]

Writes a log of `--lines` trial lines of one run, each about `--bytes` long (an observation
whose content is padded, as a model's answer is), then times the resume reader
(`ix.store.trial_scan.read_state`) and a cold build of the query index (`ix.query.index.open_index`)
over it, each the best of three. Both must find the lines that Python cannot decode (nested
thousands deep, a number of thousands of digits) without decoding every long line; this
measures what that costs. `--compact`: the lines in the compact spacing ix writes since the
orjson encoder (else the stdlib's `", "` / `": "` of older logs). Run it with PYTHONPATH
pointing at another checkout's `src` to compare.
"""

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

from ix.engine.resume import read_state
from ix.query.index import open_index


def line(trial: int, pad: int, compact: bool = False) -> str:
    """A line as `ix run` writes it (its keys in its order), the answer `pad` characters."""
    record = {
        "run_id": "20261126T000000Z-abcdef", "experiment": "big", "subject": "s",
        "probe_id": f"c-{trial % 1000:04d}", "trial": trial // 1000,
        "seed": 7313006476905926081, "attempt": 0, "expectation": "must_trigger",
        "started_at": "2026-11-26T00:00:00.000Z", "duration_ms": 1200.5,
        "observation": {"content": "x" * pad,
                        "tool_calls": [{"name": "Skill", "input": {"skill": "t"}}],
                        "duration_ms": 1200, "tokens_input": 812, "tokens_output": 95,
                        "cost_usd": 0.0012},
        "reading": {"sensor_name": "activation", "passed": True, "score": 1.0,
                    "metrics": {}, "details": "t invoked"},
        "error": None,
    }
    return json.dumps(record, ensure_ascii=False,
                      separators=(",", ":") if compact else (", ", ": "))


def best(fn, times: int = 3) -> float:
    out = []
    for _ in range(times):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return min(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--bytes", type=int, default=2000)
    parser.add_argument("--compact", action="store_true", help="no spaces after , and :")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ix-long-") as tmp:
        lab = Path(tmp) / "lab"
        exp = lab / "big"
        (exp / "cases").mkdir(parents=True)
        (exp / "experiment.yaml").write_text("name: big\nskill: t\n")
        (exp / "cases" / "c-0000.md").write_text("---\nexpectation: must_trigger\n---\np\n")
        (exp / "results").mkdir()
        log = exp / "results" / "trials.jsonl"
        pad = max(0, args.bytes - len(line(0, 0)))
        with log.open("w") as f:
            for i in range(args.lines):
                f.write(line(i, pad, args.compact) + "\n")
        size = log.stat().st_size
        print(f"log: {args.lines:,} lines of ~{size // args.lines:,} bytes "
              f"({size / 2**20:.0f} MiB)")
        t = best(lambda: read_state(log, "20261126T000000Z-abcdef"))
        print(f"resume reader: {t:.2f} s ({args.lines / t:,.0f} lines/s)")

        def cold_index() -> None:
            shutil.rmtree(lab / ".ix", ignore_errors=True)
            index = open_index(lab)
            assert sum(s.rows for s in index.sources) == args.lines

        t = best(cold_index)
        print(f"index, built from nothing: {t:.2f} s ({args.lines / t:,.0f} lines/s)")


if __name__ == "__main__":
    main()
