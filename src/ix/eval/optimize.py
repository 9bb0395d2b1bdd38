"""What `ix optimize` decides without running anything: the split, the evidence a proposer
may see, the request it gets, and how its answer is read.

Soundness rests on two walls. The holdout cases are chosen once (stratified by expectation,
seeded) and judge only the final comparison; nothing about them — not a prompt, not a score —
reaches a proposer (`ProposalRequest` is built from train cases only, and `request_text`
is the whole of what an LLM proposer reads). And a candidate is chosen on train F1, then
judged on cases it was not chosen on, by `judge`: four stated conditions, calibrated by
simulation (docs/optimize.md).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ix.domain.errors import ConfigError
from ix.eval.models import EvalCase
from ix.stats.paired_f1 import PairedF1

__all__ = ["CREDIBILITY", "MIN_CHANGED", "TOLERANCE", "Judgement", "Miss", "ProposalRequest",
           "Split", "judge", "misses", "parse_answer", "request_text", "split_cases"]

#: `--credibility`: P(holdout F1 better) must reach it, and the exact paired test's p must be
#: at most 1 − it. At 0.95 a change that helps some cases and hurts as many is recommended in
#: at most 0.05 of holdouts (docs/optimize.md; 0.9 with the posterior alone let 0.10–0.19 by).
CREDIBILITY = 0.95
#: `--tolerance`: the 95% interval of the holdout F1 difference must end above −this.
TOLERANCE = 0.05
#: `--min-changed`: the gain must rest on at least this many holdout cases the candidate
#: gets right and the original wrong.
MIN_CHANGED = 3

#: The expectations a split stratifies on (acceptable cases never run, so never split).
STRATA = ("must_trigger", "should_not_trigger")


@dataclass(frozen=True)
class Split:
    """Case ids for choosing candidates (`train`) and for judging the final one (`holdout`)."""

    train: tuple[str, ...]
    holdout: tuple[str, ...]
    seed: int
    fraction: float

    def as_dict(self) -> dict[str, Any]:
        return {"seed": self.seed, "fraction": self.fraction, "train": list(self.train),
                "holdout": list(self.holdout)}


def split_cases(cases: Sequence[EvalCase], fraction: float, seed: int) -> Split:
    """A seeded split stratified by expectation: within must and within not cases,
    round(n × fraction) go to the holdout (at least one, and at least one left to train).

    Needs two or more cases of each expectation: with one, either side would go without."""
    if not 0 < fraction < 1:
        raise ConfigError(f"must be a fraction between 0 and 1 (exclusive), got {fraction}",
                          field="--holdout")
    train: list[str] = []
    holdout: list[str] = []
    for expectation in STRATA:
        ids = sorted(c.id for c in cases if c.expectation == expectation)
        if len(ids) < 2:
            raise ConfigError(
                f"the experiment has {len(ids)} {expectation} case(s); a train/holdout split "
                "needs at least 2 of each expectation (more make an honest verdict possible)",
                field="cases")
        random.Random(f"ix-optimize:{seed}:{expectation}").shuffle(ids)
        k = min(max(1, round(len(ids) * fraction)), len(ids) - 1)
        holdout += ids[:k]
        train += ids[k:]
    return Split(tuple(sorted(train)), tuple(sorted(holdout)), seed, fraction)


@dataclass(frozen=True)
class Miss:
    """A train case the description gets wrong: its majority vote contradicts `expectation`.
    `took` is the skill most of its trials called (None: no skill)."""

    id: str
    prompt: str
    expectation: str
    activation_rate: float
    took: str | None

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "prompt": self.prompt, "expectation": self.expectation,
                "activation_rate": self.activation_rate, "took": self.took}


def misses(probe_results: Sequence[Mapping[str, Any]], cases: Mapping[str, EvalCase],
           allowed: Sequence[str]) -> list[Miss]:
    """The wrong cases of one subject's `probe_results` (a summary's), limited to `allowed`
    ids (the train split: a holdout case is never a miss a proposer hears of)."""
    out = []
    for probe in probe_results:
        pid = probe["probe_id"]
        if probe.get("correct") is not False or pid not in allowed:
            continue
        routes = sorted(probe.get("routes") or [], key=lambda r: -int(r.get("trials", 0)))
        took = routes[0].get("skill") if routes else None
        out.append(Miss(pid, cases[pid].prompt, probe["expectation"],
                        float(probe.get("score") or 0.0), took))
    return out


@dataclass(frozen=True)
class ProposalRequest:
    """Everything a proposer is told, all of it from train cases."""

    skill: str
    description: str
    body_summary: str
    misses: tuple[Miss, ...]
    tried: tuple[tuple[str, float], ...]  # (description, train F1), best first
    count: int
    round: int
    other_skills: tuple[str, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        return {"skill": self.skill, "description": self.description,
                "body_summary": self.body_summary, "round": self.round, "count": self.count,
                "misses": [m.as_dict() for m in self.misses],
                "tried": [{"description": d, "train_f1": f} for d, f in self.tried],
                "other_skills": list(self.other_skills)}


def body_summary(body: str, limit: int = 600) -> str:
    """A SKILL.md body in a few hundred characters: its headings and first lines, joined."""
    kept: list[str] = []
    for line in body.splitlines():
        text = line.strip().lstrip("#").strip()
        if text:
            kept.append(text)
        if sum(len(k) + 1 for k in kept) >= limit:
            break
    joined = " / ".join(kept)
    return joined if len(joined) <= limit else joined[: limit - 1].rstrip() + "…"


def request_text(req: ProposalRequest, max_chars: int) -> str:
    """The request an LLM proposer reads: the task, the rules, the evidence, the format."""
    wrong = "\n".join(
        f"- [{'should trigger' if m.expectation == 'must_trigger' else 'should NOT trigger'}"
        f"; {'no skill' if m.took is None else m.took} took it] {json.dumps(m.prompt)}"
        for m in req.misses) or "- (none: every training prompt is routed right)"
    tried = "\n".join(f"- train F1 {f1:.3f}: {json.dumps(d)}" for d, f1 in req.tried)
    others = ", ".join(req.other_skills) or "(none)"
    return (
        f"You improve the description of a Claude Code skill named {req.skill!r}. Claude "
        "decides whether to use a skill from its name and description alone, so the "
        "description must make it fire on the requests the skill is for and stay quiet on "
        "the rest.\n\n"
        f"What the skill does (its instructions, summarised): {req.body_summary}\n\n"
        f"Other skills installed next to it: {others}\n\n"
        f"Current description: {json.dumps(req.description)}\n\n"
        f"Training prompts the current description gets wrong:\n{wrong}\n\n"
        f"Descriptions tried so far, with their F1 on the training prompts:\n{tried}\n\n"
        f"Write {req.count} new, different descriptions. Each is one line of plain text, at "
        f"most {max_chars} characters, with no XML tags. Generalise from the prompts: describe "
        "the kind of request, do not copy them.\n\n"
        'Answer with JSON only, exactly: {"descriptions": ["...", "..."]}'
    )


_FENCE = re.compile(r"\A```(?:json)?\s*\n(?P<body>.*)\n```\Z", re.DOTALL)


def parse_answer(text: str) -> list[str]:
    """The descriptions of a proposer's answer: a JSON object `{"descriptions": [str, ...]}`,
    alone or alone in one ```json fence. Anything else raises ValueError saying what came."""
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    if fenced:
        stripped = fenced.group("body").strip()
    try:
        data = json.loads(stripped)
    except ValueError:
        shown = stripped[:80] + ("…" if len(stripped) > 80 else "")
        raise ValueError(f"the answer is not the JSON asked for: {shown!r}") from None
    if not isinstance(data, dict) or set(data) != {"descriptions"}:
        raise ValueError('the answer must be one JSON object {"descriptions": [...]}')
    items = data["descriptions"]
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise ValueError('"descriptions" must be a list of strings')
    return items


@dataclass(frozen=True)
class Judgement:
    """The holdout verdict: `recommended` when every subject meets every condition; `why`
    says so in a line (the numbers and the rule), `failed` lists, per subject, the conditions
    it missed."""

    recommended: bool
    why: str
    failed: dict[str, list[str]]


def _conditions(r: PairedF1, credibility: float, tolerance: float,
                min_changed: int) -> list[tuple[bool, str, str]]:
    """(met, said when met, said when missed) for each condition of one subject."""
    alpha = 1.0 - credibility
    return [
        (r.prob_b_better >= credibility,
         f"P(holdout F1 better) = {r.prob_b_better:.3f} ≥ {credibility:g}",
         f"P(holdout F1 better) = {r.prob_b_better:.3f} < {credibility:g}"),
        (r.p_value <= alpha + 1e-12,
         f"exact paired p = {r.p_value:.3f} ≤ {alpha:.2g}",
         f"exact paired p = {r.p_value:.3f} > {alpha:.2g} (were each changed case a coin "
         "flip, a difference this large would be that common)"),
        (r.lo > -tolerance,
         f"the 95% interval's lower end {r.lo:+.3f} > -{tolerance:g}",
         f"the 95% interval's lower end {r.lo:+.3f} ≤ -{tolerance:g} (it allows a loss "
         f"beyond the tolerance {tolerance:g})"),
        (r.improved >= min_changed,
         f"the gain rests on {r.improved} improved case(s) (≥ {min_changed})",
         f"the gain rests on {r.improved} improved case(s), fewer than {min_changed} "
         f"(of {r.improved + r.worsened} changed)"),
    ]


def judge(results: Mapping[str, PairedF1], *, credibility: float = CREDIBILITY,
          tolerance: float = TOLERANCE, min_changed: int = MIN_CHANGED) -> Judgement:
    """Recommend the candidate only if, for every subject (`results`: subject -> its paired
    holdout comparison), P(holdout F1 better) ≥ `credibility`, the exact paired test's
    p ≤ 1 − `credibility`, the 95% interval's lower end > −`tolerance`, and at least
    `min_changed` holdout cases were improved (the candidate right, the original wrong)."""
    failed: dict[str, list[str]] = {}
    met: dict[str, list[str]] = {}
    for subject, r in results.items():
        if r.improved + r.worsened == 0:
            failed[subject] = ["the candidate changed the majority vote of no held-out case"]
            continue
        conds = _conditions(r, credibility, tolerance, min_changed)
        failed[subject] = [miss for ok, _, miss in conds if not ok]
        met[subject] = [said for ok, said, _ in conds if ok]
    several = len(results) > 1

    def named(subject: str, parts: list[str]) -> str:
        return f"{subject}: {', '.join(parts)}" if several else ", ".join(parts)

    recommended = bool(results) and not any(failed.values())
    if not results:
        why = "no credible improvement: no subject to judge"
    elif recommended:
        why = "; ".join(named(s, met[s]) for s in results)
    else:
        why = "no credible improvement: " + "; ".join(
            named(s, parts) for s, parts in failed.items() if parts)
    return Judgement(recommended, why, failed)
