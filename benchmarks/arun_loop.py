"""How free `ix.api.arun` leaves its event loop: another task asks for a turn every 1 ms
while a mock run goes on, and this prints how long it waited (p50, p99, max).

    .venv/bin/python benchmarks/arun_loop.py [--trials 10000]

Two runs of 100 cases on the mock runtime (concurrency 100): latency 0 (every trial is CPU
work on the loop: the worst case) and latency 5 ms (a subject that answers over the
network, the usual case), each after a warm-up run (imports done). A blocked loop shows as
a maximum near the run's whole duration; the idle loop's figure is printed for reference
(the machine's own noise).
"""

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from ix import api


def experiment(lab: Path, name: str, trials: int, latency_ms: int) -> None:
    d = lab / name
    (d / "cases").mkdir(parents=True)
    (d / "experiment.yaml").write_text(
        f"name: {name}\nskill: target\ntrials: {trials}\nruntime:\n  kind: mock\n"
        f"  latency_ms: {latency_ms}\n", encoding="utf-8")
    for i in range(100):
        expectation = "must_trigger" if i % 2 else "should_not_trigger"
        (d / "cases" / f"c-{i:03d}.md").write_text(
            f"---\nid: c-{i:03d}\nexpectation: {expectation}\n---\nPrompt {i}.\n",
            encoding="utf-8")


async def waits_during(work: "asyncio.Future[object] | None", seconds: float = 0.0
                       ) -> tuple[list[float], float]:
    """The ticker's waits (ms) while `work` runs (or for `seconds`), and the elapsed time."""
    waits: list[float] = []
    started = last = time.perf_counter()
    while (work is not None and not work.done()) or (
            work is None and time.perf_counter() - started < seconds):
        await asyncio.sleep(0.001)
        now = time.perf_counter()
        waits.append((now - last) * 1000)
        last = now
    return waits, time.perf_counter() - started


def line(label: str, waits: list[float], elapsed: float) -> str:
    waits = sorted(waits)
    return (f"{label:<28} {elapsed:6.2f} s  turns {len(waits):6d}  wait p50 "
            f"{statistics.median(waits):5.1f} ms  p99 {waits[int(len(waits) * 0.99)]:6.1f} ms  "
            f"max {waits[-1]:6.1f} ms")


async def main(trials_per_case: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        lab = Path(tmp)
        for latency in (0, 5):
            experiment(lab, f"lat{latency}", trials_per_case, latency)
        print(line("idle loop", *await waits_during(None, 2.0)))
        await api.arun(lab, ["lat0"], api.Overrides(trials=1))  # warm-up: imports
        for latency in (0, 5):
            run = asyncio.ensure_future(api.arun(lab, [f"lat{latency}"]))
            waits, elapsed = await waits_during(run)
            [result] = run.result()
            print(line(f"arun, latency {latency} ms ({result.written:,} trials)", waits,
                       elapsed))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=100, help="trials per case (x100 cases)")
    asyncio.run(main(parser.parse_args().trials))
