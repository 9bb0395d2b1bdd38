"""Who writes candidate descriptions for `ix optimize`: a runtime, or the offline `keywords`.

A proposer gets a `ProposalRequest` (train evidence only) and answers with text; the loop
parses and checks what it says. `RuntimeProposer` sends `request_text` as the prompt of one
trial of any text-producing runtime (a registry profile such as `claude-sonnet-api`, or a
kind: `anthropic`, `openai`, `claude-code`, `command`, ...) and reads the answer's text.
`KeywordsProposer` is a documented baseline that needs no model: it adds the distinctive
words of the missed must prompts ("Also for ...") and a "Not for ..." clause made of the
distinctive words of the prompts it fired on wrongly — the edit a careful person makes by
hand, and one the lexical router can read.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ix.domain.errors import ConfigError, TrialError
from ix.domain.types import Subject
from ix.eval.models import EvalCase
from ix.eval.optimize import ProposalRequest, request_text
from ix.lab.skill_file import DESCRIPTION_MAX
from ix.runtimes.lexical import idf, split_exclusions, stem, words
from ix.runtimes.registry import RuntimeContext, build_runtime

__all__ = ["KEYWORDS", "Answer", "KeywordsProposer", "Proposer", "RuntimeProposer"]

#: The built-in offline proposer's name (`--proposer keywords`, the default).
KEYWORDS = "keywords"


@dataclass(frozen=True)
class Answer:
    """What a proposer said: the request as sent, its answer as received, and what it cost."""

    request: str
    answer: str
    cost_usd: float = 0.0
    tokens_input: int = 0
    tokens_output: int = 0


class Proposer(Protocol):
    name: str
    kind: str

    def propose(self, request: ProposalRequest, *, seed: int) -> Answer: ...


class RuntimeProposer:
    """One trial of a runtime per round: the request is the prompt, the answer its text."""

    def __init__(self, name: str, spec: Mapping[str, Any]):
        self.name, self.kind, self.spec = name, str(spec["kind"]), dict(spec)
        self.runtime = build_runtime(self.spec, RuntimeContext(target_skill=None))

    def propose(self, request: ProposalRequest, *, seed: int) -> Answer:
        text = request_text(request, DESCRIPTION_MAX)
        stimulus = EvalCase(id=f"propose-round-{request.round}", prompt=text,
                            expectation="should_not_trigger")
        subject = Subject(name="proposer", description="ix optimize's proposer",
                          config={"skills": []})
        try:
            obs = asyncio.run(self.runtime.invoke(subject, stimulus, seed=seed, attempt=0))
        except TrialError as exc:
            raise ConfigError(f"the proposer ({self.name}) failed: {exc}",
                              field="--proposer") from None
        answer = obs.content or obs.stdout or obs.body or ""
        return Answer(text, answer, obs.cost_usd, obs.tokens_input, obs.tokens_output)


class KeywordsProposer:
    """The offline baseline: distinctive words in, wrongly matched words out.

    A word is distinctive by its rarity in English (`ix.runtimes.lexical.idf`) times the
    number of wrong prompts it appears in. Words already in the description's positive part
    are not added again; a word of a missed must prompt is never excluded, nor a word of a
    wrongly fired prompt added. Candidate i adds more words than candidate i − 1, and the
    even ones also exclude, so the candidates of a round differ.
    """

    name = KEYWORDS
    kind = KEYWORDS

    def propose(self, request: ProposalRequest, *, seed: int) -> Answer:
        keep, _ = split_exclusions(request.description)
        have = {stem(w) for w in words(keep)}
        must = [m.prompt for m in request.misses if m.expectation == "must_trigger"]
        fired = [m.prompt for m in request.misses if m.expectation == "should_not_trigger"]
        add = _distinctive(must, avoid=have | _stems(fired))
        drop = _distinctive(fired, avoid=have | _stems(must))
        out: list[str] = []
        for i in range(request.count):
            n = 3 * (i // 2 + 1)
            text = _extended(request.description, add[:n], drop[:n] if i % 2 == 0 else [])
            if text not in out and text != request.description:
                out.append(text)
        return Answer(json.dumps(request.as_dict(), ensure_ascii=False),
                      json.dumps({"descriptions": out}, ensure_ascii=False))


#: A contraction ("don't", "it's"): its pieces are not words worth adding.
_CONTRACTION = re.compile(r"\b\w+['\u2019]\w+\b")


def _words(prompt: str) -> list[str]:
    return words(_CONTRACTION.sub(" ", prompt))


def _stems(prompts: Sequence[str]) -> set[str]:
    return {stem(w) for p in prompts for w in _words(p)}


def _distinctive(prompts: Sequence[str], avoid: set[str]) -> list[str]:
    """Words of `prompts`, most distinctive first: rarity × prompts holding it (ties: a-z)."""
    weight: Counter[str] = Counter()
    surface: dict[str, str] = {}
    for prompt in prompts:
        for word in dict.fromkeys(w for w in _words(prompt) if len(w) > 2 and not w.isdigit()):
            s = stem(word)
            if s in avoid:
                continue
            surface.setdefault(s, word)
            weight[s] += 1
    ranked = sorted(weight, key=lambda s: (-weight[s] * idf(s), surface[s]))
    return [surface[s] for s in ranked]


def _extended(description: str, add: Sequence[str], drop: Sequence[str]) -> str:
    """The description with "Also for ..." and "Not for ..." sentences, within the limit."""
    add, drop = list(add), list(drop)
    while True:
        text = description.rstrip()
        if add:
            text = f"{text.rstrip('.')}. Also for requests about {', '.join(add)}."
        if drop:
            text = f"{text.rstrip('.')}. Not for {', '.join(drop)}."
        if len(text) <= DESCRIPTION_MAX or not (add or drop):
            return text
        (drop if len(drop) >= len(add) else add).pop()
