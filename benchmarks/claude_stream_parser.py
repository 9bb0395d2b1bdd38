"""Time to parse a Claude Code stream-json transcript (`ix.runtimes.claude_stream`).

    .venv/bin/python benchmarks/claude_stream_parser.py [--repeat 7] [--fixture NAME]

Parses the largest fixture in tests/fixtures/claude-stream/ (by default; it is the
`--include-partial-messages` transcript, 29 lines, ~14 KB) as a whole text, many times per
measurement, and prints the best and median µs per parse over `--repeat` measurements, with
the throughput in lines/s and MB/s. For scale: the CLI itself takes ~0.5 s to start, so the
parser is a rounding error per trial; the target is < 1 ms per transcript of this size.
"""

import argparse
import statistics
import timeit
from pathlib import Path

from ix.runtimes.claude_stream import parse_stream

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "claude-stream"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--fixture", default=None, help="a file name in the fixtures folder")
    args = parser.parse_args()

    files = sorted(FIXTURES.glob("*.json*"), key=lambda p: p.stat().st_size)
    path = FIXTURES / args.fixture if args.fixture else files[-1]
    text = path.read_text(encoding="utf-8")
    n_lines = sum(1 for line in text.splitlines() if line.strip())
    result = parse_stream(text)
    assert result.has_result and result.tool_uses, "the fixture should parse to facts"

    timer = timeit.Timer(lambda: parse_stream(text))
    number, _ = timer.autorange()
    number = max(number, 200)
    per_parse = [t / number for t in timer.repeat(repeat=args.repeat, number=number)]
    best, median = min(per_parse), statistics.median(per_parse)
    print(f"fixture: {path.name} ({len(text.encode()):,} bytes, {n_lines} lines)")
    print(f"parses per measurement: {number:,} x {args.repeat}")
    print(f"best:   {best * 1e6:8.1f} µs/parse   ({n_lines / best:,.0f} lines/s, "
          f"{len(text.encode()) / best / 1e6:.1f} MB/s)")
    print(f"median: {median * 1e6:8.1f} µs/parse")


if __name__ == "__main__":
    main()
