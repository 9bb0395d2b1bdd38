"""The summary's `judges` block at the end of a run (issue 36): the run's judges, read from
its plan, against the experiment's labels, over the run's standing lines read back from the
log (so a resumed run's recorded trials count as its new ones do)."""

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ix.domain.errors import Warn
from ix.eval.judge_summary import judges_block
from ix.runtimes.judge import judges_of
from ix.store.labels import latest_labels, read_labels
from ix.store.trial_lines import standing
from ix.store.trials import read_trials

if TYPE_CHECKING:
    from ix.engine.plan import Plan
    from ix.eval.schemas import JudgeOut


def described(plan: "Plan") -> list[dict[str, Any]]:
    """Each judge of the plan as the `judges` block names it (every subject has the same)."""
    return [j.describe() for j in judges_of(plan.subjects[0].sensors)] if plan.subjects else []


def judges_summary(plan: "Plan", trials: Path, run_id: str, level: float,
                   warn: Warn | None = None) -> "list[JudgeOut] | None":
    """The block, or None for a plan without a judge."""
    judges = described(plan)
    if not judges:
        return None
    labels = latest_labels(read_labels(plan.loaded.path, warn))
    return run_judges(judges, trials, run_id, labels, level, warn)


def run_judges(judges: Sequence[Mapping[str, Any]], trials: Path, run_id: str,
               labels: Sequence[Mapping[str, Any]], level: float,
               warn: Warn | None = None) -> "list[JudgeOut]":
    """The `judges` block of `judges` over the standing lines of run `run_id` in the trial
    log `trials`, against `labels` (`ix report` calls it again with today's labels)."""
    lines = (t for t in read_trials(trials, warn, trials_only=True)
             if t.get("run_id") == run_id)
    records: list[Mapping[str, Any]] = list(standing(lines).values())
    return judges_block(judges, records, labels, level)
