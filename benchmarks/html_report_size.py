"""Size and render time of `ix report --format html` on 100 cases × 5 subjects × 10 trials.

    .venv/bin/python benchmarks/html_report_size.py [--cases 100] [--subjects 5] [--trials 10]

Makes a lab of one experiment (half must_trigger, half should_not_trigger cases, each with a
difficulty; five mock subjects with different activation rates, one of them erring on 5% of
its trials; a goal), runs it with the real `ix run` on the mock runtime, then:

- times the whole `ix report RUN --format html` command in a fresh process (median of 3),
- times `render_report_html` alone on the report data, in this process (median of 5),
- prints the file's size, gzipped too, and the size of its largest parts.

Target: well under 1 MB.
"""

import argparse
import gzip
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

IX = str(Path(sys.executable).parent / "ix")
ENV = {k: v for k, v in os.environ.items() if not k.startswith("IX_")}
LEVELS = ("easy", "medium", "hard")


def make_lab(root: Path, cases: int, subjects: int, trials: int) -> Path:
    lab = root / "lab"
    exp = lab / "big"
    (exp / "cases").mkdir(parents=True)
    ids = []
    for i in range(cases):
        expectation = "must_trigger" if i % 2 == 0 else "should_not_trigger"
        case_id = f"{'must' if i % 2 == 0 else 'not'}-{i:03d}"
        ids.append((case_id, expectation, i))
        (exp / "cases" / f"{case_id}.md").write_text(
            f"---\nexpectation: {expectation}\ndifficulty: {LEVELS[i % 3]}\n---\n"
            f"Prompt of case {case_id}\n", encoding="utf-8")
    lines = [f"name: big\ntrials: {trials}\nsensor: {{kind: activation, skill: target}}",
             "goal: {hypothesis: 'later subjects are worse', metric: recall, "
             "compare: [s0, s1], direction: decrease, min_effect: 0.05}", "subjects:"]
    for s in range(subjects):
        rates = {cid: round(max(0.0, (0.95 - 0.1 * s - 0.002 * i) if exp_ == "must_trigger"
                                else 0.05 + 0.03 * s), 3) for cid, exp_, i in ids}
        runtime = {"kind": "mock", "activation_rates": rates}
        if s == subjects - 1:
            runtime["error_rates"] = {cid: 0.05 for cid, _, _ in ids}
        lines.append(f"  - name: s{s}\n    runtime: {json.dumps(runtime)}")
    (exp / "experiment.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return lab


def timed(argv: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, env=ENV, capture_output=True)
    return time.perf_counter() - t0


def parts(html: str) -> dict[str, int]:
    """Bytes of each section of the page (by its id) and of the inline stylesheet."""
    out = {"<style>": len(re.search(r"<style>.*?</style>", html, re.S).group(0).encode())}
    starts = [(m.start(), m.group(1)) for m in re.finditer(r'<(?:section|header) id="([^"]+)"',
                                                          html)]
    for (a, name), (b, _) in zip(starts, [*starts[1:], (len(html), "")], strict=True):
        out[name] = len(html[a:b].encode())
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=100)
    ap.add_argument("--subjects", type=int, default=5)
    ap.add_argument("--trials", type=int, default=10)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        lab = make_lab(Path(tmp), args.cases, args.subjects, args.trials)
        run = subprocess.run([IX, "run", "--lab", str(lab), "--json"], env=ENV,
                             capture_output=True, text=True)
        if run.returncode not in (0, 1):
            sys.exit(run.stdout + run.stderr)
        run_id = json.loads(run.stdout)["run_id"]
        out = Path(tmp) / "report.html"
        command = [IX, "report", run_id, "--lab", str(lab), "--format", "html", "--out",
                   str(out)]
        wall = statistics.median(timed(command) for _ in range(3))

        from ix.api.reports import report
        from ix.report.html import render_report_html

        data = report(lab, run_id)
        renders = []
        for _ in range(5):
            t0 = time.perf_counter()
            html = render_report_html(data)
            renders.append(time.perf_counter() - t0)
        raw = out.read_bytes()
        trials = args.cases * args.subjects * args.trials
        print(f"{args.cases} cases × {args.subjects} subjects × {args.trials} trials = "
              f"{trials} trials (timeline: {data['timeline']['mode']})")
        print(f"HTML report: {len(raw):,} bytes ({len(raw) / 1024:.0f} KiB), gzipped "
              f"{len(gzip.compress(raw)):,} bytes")
        print(f"ix report --format html (whole command, fresh process): {wall:.2f} s")
        print(f"render_report_html alone: {statistics.median(renders) * 1000:.0f} ms")
        print("largest parts: " + ", ".join(
            f"{k} {v / 1024:.0f} KiB" for k, v in sorted(parts(html).items(),
                                                         key=lambda kv: -kv[1])[:6]))


if __name__ == "__main__":
    main()
