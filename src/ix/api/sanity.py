"""`ix sanity`: the end-to-end check before paying for real trials (`ix.engine.sanity`).

Every chosen experiment is loaded and checked first (bad input: `ConfigError`, nothing run).
The runs go to a throwaway folder outside the lab, never into its `results/`: they are
evidence about ix and the experiment's wiring, not about a subject, and in `results/` they
would become the "latest run" that `ix report`, `ix ls`, goals and the leaderboard read. The
folder is removed when every check passes, and kept (its path reported, a lab of its own for
`ix results --lab`) when one fails or when asked to.
"""

import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ix.api.loading import resolve
from ix.engine.sanity import Check, Sanity, run_sanity, sanity_plans, unchecked
from ix.lab.loader import load_experiment

if TYPE_CHECKING:  # the output types: `ix sanity` stays clear of ix.api.schemas' import
    from ix.api.schemas import SanityOutput

__all__ = ["Check", "Sanity", "SanityReport", "as_json", "sanity"]


@dataclass(frozen=True)
class SanityReport:
    lab: Path
    experiments: tuple[Sanity, ...]
    seconds: float
    #: the folder of the runs, when kept (a check failed, or `keep`); None: removed
    kept: Path | None

    @property
    def checks(self) -> list[Check]:
        return [c for e in self.experiments for c in e.checks]

    @property
    def ok(self) -> bool:
        return all(c.status != "fail" for c in self.checks)


def sanity(lab: str | Path | None = None, experiments: Sequence[str] = (),
           keep: bool = False) -> SanityReport:
    """Check each experiment (the named ones, else those `ix run` would take) with the
    random, perfect and wrong subjects; see `ix.engine.sanity`."""
    started = time.perf_counter()
    lab_path, paths = resolve(lab, experiments)
    loaded = [load_experiment(p, lab_path) for p in paths]
    for one in loaded:  # every plan is made before anything runs: bad input stops here
        if unchecked(one) is None:
            sanity_plans(one)
    place = Path(tempfile.mkdtemp(prefix="ix-sanity-"))
    done: list[Sanity] = []
    try:
        for one in loaded:
            done.append(run_sanity(one, place))
    except BaseException:
        shutil.rmtree(place, ignore_errors=True)
        raise
    ok = all(c.status != "fail" for s in done for c in s.checks)
    if ok and not keep:
        shutil.rmtree(place, ignore_errors=True)
    return SanityReport(lab_path, tuple(done), time.perf_counter() - started,
                        None if ok and not keep else place)


def as_json(report: SanityReport) -> "SanityOutput":
    checks = report.checks
    return {"ok": report.ok, "passed": sum(c.status == "pass" for c in checks),
            "failed": sum(c.status == "fail" for c in checks),
            "skipped": sum(c.status == "skip" for c in checks),
            "seconds": round(report.seconds, 3),
            "trials": sum(e.trials for e in report.experiments), "lab": str(report.lab),
            "kept": str(report.kept) if report.kept is not None else None,
            "checks": [{"experiment": c.experiment, "subject": c.subject, "status": c.status,
                        "found": c.found, "next": c.next} for c in checks]}
