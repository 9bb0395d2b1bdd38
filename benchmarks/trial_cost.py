"""Where a trial's time goes: the engine's CPU per trial, and the cost of each step of it.

    .venv/bin/python benchmarks/trial_cost.py [--trials 10] [--repeat 5]

Runs the engine in this process (`run_plan` on the mock runtime, 1,000 cases, no progress)
and prints its CPU time per trial (process time, which a loaded machine disturbs less than
wall time), then the cost of each step a trial takes, alone: the runtime's answer, the
sensor, the scorer's record, the outcome sums and the report's digest (`ix run` feeds each
trial to both: issue 35's `outcomes`, `report.json`), encoding the trial line, and
appending it under the lock.
The target (issue 17): <= 50 us of ix per trial (>= 20,000 trials/s).
"""

import argparse
import asyncio
import itertools
import json
import shutil
import sys
import tempfile
import time
import timeit
from collections.abc import Coroutine
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from ix.domain.types import Interaction
from ix.engine import run as engine
from ix.engine.pipeline import OBSERVATION, READING, ScorerComponent, TrialOutcome
from ix.engine.plan import Overrides, build_plan
from ix.eval.scoring import Tally
from ix.lab.loader import load_experiment
from ix.matrix import Artifact, Construct
from ix.report.digest import TrialDigest
from ix.store.trials import TrialWriter, encode_line
from run_throughput import make_lab


def _at_once(coro: Coroutine[object, None, object]) -> object:
    """The value of a coroutine that never waits (the mock runtime, the scorer), without a
    loop: the cost measured is the step's, not asyncio's."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    raise RuntimeError(f"{coro!r} waited")

def each(label: str, stmt: object, number: int = 5000, repeat: int = 7) -> None:
    best = min(timeit.repeat(stmt, number=number, repeat=repeat)) / number  # type: ignore[arg-type]
    print(f"   {label:42s} {best * 1e6:7.2f} us")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=10, help="trials per case (1,000 cases)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ix-bench-") as tmp:
        lab = make_lab(Path(tmp), 1000, args.trials, 0, 100)
        plan = build_plan(load_experiment(lab / "bench", lab), Overrides())
        engine.preload(*engine.STATISTICS).join()  # what a run imports meanwhile, before timing
        spent: dict[str, float] = {}
        real_run = engine.asyncio.run

        def timed(coro: object) -> object:
            cpu, wall = time.process_time(), time.perf_counter()
            try:
                return real_run(coro)  # type: ignore[arg-type]
            finally:
                spent["cpu"] = time.process_time() - cpu
                spent["wall"] = time.perf_counter() - wall

        engine.asyncio.run = timed  # type: ignore[assignment]
        cpus, walls = [], []
        for _ in range(args.repeat):
            shutil.rmtree(lab / "bench" / "results", ignore_errors=True)
            engine.run_plan(plan, command=["bench"])
            cpus.append(spent["cpu"])
            walls.append(spent["wall"])
        engine.asyncio.run = real_run
        n = plan.total
        print(f"engine, in process: {n:,} trials on the mock runtime, best of {args.repeat}")
        print(f"   CPU  {min(cpus) / n * 1e6:6.1f} us/trial = {n / min(cpus):,.0f} trials/s"
              "   (target <= 50 us)")
        print(f"   wall {min(walls) / n * 1e6:6.1f} us/trial = {n / min(walls):,.0f} trials/s\n")

        print("each step of one trial, alone (best of 7)")
        sp, case = plan.subjects[0], plan.cases[0]
        sensor = sp.sensors[0]

        def answer() -> object:
            return _at_once(sp.runtime.invoke(sp.subject, case, seed=12345, attempt=0))

        observation = answer()
        interaction = Interaction(stimulus=case, trial_index=0, observation=observation)
        readings = tuple(sensor.sense(interaction))
        key = next(plan.each_trial())
        construct = Construct(key).append(Artifact(OBSERVATION, "trial", TrialOutcome(
            observation, None, engine.datetime.now(engine.UTC), 0.01))).append(
            Artifact(READING, "sensor", readings))
        scorer = ScorerComponent("20261126T204500123Z-ab12", "bench")

        def score() -> object:
            return _at_once(scorer.run(construct))

        record = score()
        encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False)
        each("runtime answers (mock invoke)", answer)
        each("Interaction for the sensors", lambda: Interaction(
            stimulus=case, trial_index=0, observation=observation))
        each("sensor reads it (activation)", lambda: sensor.sense(interaction))
        each("scorer builds the trial record", score)
        each("trial line encoded (stdlib json, C)", lambda: encoder.encode(record))
        each("trial line encoded (encode_line: orjson)", lambda: encode_line(record))
        each("3 artifacts appended to the construct", lambda: Construct(key).append(
            Artifact(OBSERVATION, "t", 1)).append(Artifact(READING, "s", 2)).append(
            Artifact("v", "r", 3)))
        # what a run does with each trial beyond its line (issue 34's regression since cdc87e6)
        tally = Tally(plan.cases, judges=())
        first = readings[0] if readings else None
        each("outcome sums (engine._measure)", lambda: engine._measure(
            tally, case, observation, record, first, readings))
        digest = TrialDigest(outcomes=False)
        # distinct trials, as in a run (a cycle, not a list sized to `each`'s call count)
        feed = itertools.cycle([{**record, "trial": i} for i in range(5000)])
        each("report digest (TrialDigest.add, ix.api)", lambda: digest.add(next(feed)))
        with TrialWriter(Path(tmp) / "w" / "trials.jsonl") as writer:
            each("line appended (lock, check, write)", lambda: writer.write(record),
                 number=2000)

        async def timer() -> None:
            loop = asyncio.get_running_loop()
            for _ in range(5000):
                loop.call_later(120, print).cancel()

        t0 = time.perf_counter()
        asyncio.run(timer())
        print(f"   {'timeout timer set and cancelled':42s} "
              f"{(time.perf_counter() - t0) / 5000 * 1e6:7.2f} us")


if __name__ == "__main__":
    main()
