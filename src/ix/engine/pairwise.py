"""The pairwise judge's pass over a run (`pairwise_judge`, docs/judges.md): after the trials,
each variant's answer is shown beside the control's, blind, for every case and trial both
answered without error.

Which one is shown first is drawn from the run's seed, the variant, the case and the trial
(`variant_first`), so a run judges the same way again; with `swap: true` each pair is judged
in both orders. Every judgement is one line of the run folder's `pairwise.jsonl`, appended
(and synced) as soon as it is made, so a crash loses none and `ix run --resume` asks only
for those missing; `--retry-failed` asks again for those that errored. A judgement stands
for the attempts it saw: a trial run again is judged again.
"""

import asyncio
import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ix.domain.errors import Warn
from ix.engine.pipeline import error_record
from ix.engine.plan import derived_seed
from ix.eval.models import EvalCase
from ix.fs.appending import append_line, read_log
from ix.store.layout import RunDir
from ix.store.trial_lines import standing
from ix.store.trials import read_trials

if TYPE_CHECKING:
    from ix.engine.plan import Plan

#: (variant, probe_id, trial, shown first, control's attempt, variant's attempt)
Key = tuple[str, str, int, str, int, int]


def variant_first(seed: int, variant: str, case_id: str, trial: int) -> bool:
    """Whether the variant's answer is shown first (the one order, without `swap`): a fair
    coin, derived, never random, so the same run judges the same way."""
    digest = hashlib.sha256(f"{seed}:pairwise:{variant}:{case_id}:{trial}".encode()).digest()
    return bool(digest[0] & 1)


def _text(line: dict[str, Any]) -> str:
    content = (line.get("observation") or {}).get("content")
    if content is None:
        return ""
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def _key(j: dict[str, Any]) -> Key:
    a = j["attempts"]
    return (j["variant"], j["probe_id"], j["trial"], j["shown_first"], a["control"],
            a["variant"])


def _judgement(item: Any) -> dict[str, Any]:
    """A line of `pairwise.jsonl`, checked enough to be keyed (`read_log`'s `parse`)."""
    try:
        _key(item)
    except (TypeError, KeyError) as exc:
        raise ValueError(f"no {exc}") from None
    return dict(item)


def read_judgements(directory: Path, warn: Warn | None = None) -> list[dict[str, Any]]:
    """Every judgement of a run, oldest first (a torn line skipped, with a warning)."""
    return read_log(RunDir(directory).pairwise, _judgement, "a pairwise judgement", warn)


def latest_judgements(directory: Path, warn: Warn | None = None) -> list[dict[str, Any]]:
    """The last judgement of each pair, order and attempts already in the run's log."""
    return list({_key(j): j for j in read_judgements(directory, warn)}.values())


async def judge_pairs(plan: "Plan", run_id: str, directory: Path, trials: Path,
                      judged: list[dict[str, Any]], retry: bool = False,
                      warn: Warn | None = None) -> None:
    """Judge every pair of the run not judged yet, a few at a time, each line appended to
    `pairwise.jsonl` as soon as it is made; `judged` gets every judgement that stands for the
    run's standing trials (the earlier ones first). `retry`: ask again for errored ones."""
    judge = plan.pairwise
    if judge is None or len(plan.subjects) < 2:
        return
    earlier: dict[Key, dict[str, Any]] = {}
    for j in read_judgements(directory, warn):
        earlier[_key(j)] = j  # a later line of the same key stands
    control = plan.subjects[0].subject.name
    variants = [sp.subject.name for sp in plan.subjects[1:]]
    lines = standing(t for t in read_trials(trials, warn, trials_only=True)
                     if t.get("run_id") == run_id)
    valid = {(s, p, t): line for (_, s, p, t), line in lines.items() if not line.get("error")}
    todo: list[tuple[Key, EvalCase, str, str]] = []
    for variant in variants:
        for case in plan.cases:
            for trial in range(plan.trials):
                a, b = valid.get((control, case.id, trial)), valid.get((variant, case.id, trial))
                if a is None or b is None:
                    continue
                first = "variant" if variant_first(plan.seed, variant, case.id, trial) \
                    else "control"
                orders = [first, "control" if first == "variant" else "variant"]
                for shown in orders[:2 if judge.swap else 1]:
                    key = (variant, case.id, trial, shown, int(a.get("attempt") or 0),
                           int(b.get("attempt") or 0))
                    old = earlier.get(key)
                    if old is not None and not (retry and old.get("error")):
                        judged.append(old)
                    else:
                        todo.append((key, case, _text(a), _text(b)))
    if not todo:
        return
    log = RunDir(directory).pairwise
    limit = asyncio.Semaphore(max(1, plan.concurrency))
    timeout = plan.loaded.experiment.timeout_s

    async def one(key: Key, case: EvalCase, control_text: str, variant_text: str) -> None:
        variant, _, trial, shown, control_attempt, variant_attempt = key
        texts = (variant_text, control_text) if shown == "variant" else \
            (control_text, variant_text)
        seed = derived_seed(repr(key))
        record: dict[str, Any] = {
            "run_id": run_id, "control": control, "variant": variant, "probe_id": case.id,
            "trial": trial, "attempts": {"control": control_attempt,
                                         "variant": variant_attempt},
            "shown_first": shown, "answer": None, "winner": None, "reasoning": "",
            "error": None}
        async with limit:
            try:
                answer, reasoning = await asyncio.wait_for(
                    judge.judge(case, texts[0], texts[1], seed), timeout)
                other = "control" if shown == "variant" else "variant"
                record["answer"] = answer
                record["winner"] = {"first": shown, "second": other, "tie": "tie"}[answer]
                record["reasoning"] = plan.redactor.text(reasoning)
            except Exception as exc:  # a judge that fails is an errored judgement
                record["error"] = error_record(exc, plan.redactor)
        record["judged_at"] = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        append_line(log, json.dumps(record, ensure_ascii=False) + "\n")
        judged.append(record)

    await asyncio.gather(*(one(*job) for job in todo))


__all__ = ["judge_pairs", "read_judgements", "variant_first"]
