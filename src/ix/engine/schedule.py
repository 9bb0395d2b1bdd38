"""A `load:` run's schedule: when each request is due and which case it sends.

Planned once, before anything runs (`ix.engine.plan.build_plan`), from the experiment's
seed: the same experiment and seed give the same schedule, so two runs (or two subjects of
one run, which all get the same one) face the same arrivals. `ix.engine.load_test` sends it.
"""

import hashlib
import math
import random
from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LoadPlan:
    """A subject's schedule (the same for every subject): send offsets and case picks."""

    options: Mapping[str, Any]       # experiment.yaml's `load:`, defaults filled in
    schedule: tuple[float, ...]      # seconds after the subject's load began, ascending
    picks: tuple[int, ...]           # the index (into the plan's cases) of each request's case

    @property
    def requests(self) -> int:
        return len(self.schedule)

    @property
    def warmup(self) -> int:
        """The first `warmup` requests are the warm-up's."""
        return bisect_left(self.schedule, float(self.options["warmup_s"]))

    @property
    def window_s(self) -> float:
        return float(self.options["warmup_s"]) + float(self.options["duration_s"])

    @property
    def max_in_flight(self) -> int:
        return int(self.options["max_in_flight"])


def _rng(seed: int, what: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}:load:{what}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def load_plan(options: Mapping[str, Any], seed: int, cases: int) -> LoadPlan:
    """The schedule of `options` (`load:`) over `cases` cases: uniform arrivals i / rps, or
    Poisson ones (exponential gaps) drawn from `seed`; cases in turn, or drawn from `seed`."""
    rps, window = float(options["rps"]), (float(options["warmup_s"])
                                          + float(options["duration_s"]))
    if options["arrivals"] == "poisson":
        rng, at, times = _rng(seed, "arrivals"), 0.0, []
        while (at := at + rng.expovariate(rps)) < window:
            times.append(at)
        schedule = tuple(times)
    else:  # the epsilon keeps an exact product (200 rps × 3 s) from planning one more
        schedule = tuple(i / rps for i in range(math.ceil(window * rps - 1e-9)))
    if options["order"] == "random":
        draw = _rng(seed, "cases")
        picks = tuple(draw.randrange(cases) for _ in schedule)
    else:
        picks = tuple(i % cases for i in range(len(schedule)))
    return LoadPlan(dict(options), schedule, picks)
