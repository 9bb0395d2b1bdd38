"""Who writes candidate descriptions for `ix optimize`: a runtime, or the offline `keywords`.

A proposer gets a `ProposalRequest` (train evidence only) and answers with text; the loop
parses and checks what it says. `RuntimeProposer` sends `request_text` as the prompt of one
trial of any text-producing runtime (a registry profile such as `claude-sonnet-api`, or a
kind: `anthropic`, `openai`, `claude-code`, `command`, ...) and reads the answer's text.
`KeywordsProposer` is a documented baseline that needs no model: it adds the distinctive
words of the missed must prompts ("Also for ...") and a "Not for ..." clause made of the
distinctive words of the prompts it fired on wrongly. It optimises for a word router (the
`lexical` runtime reads exactly such words), and says so in its note and each answer's
rationale: a model reads a description as a whole, and a word list may help it less.
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
from ix.runtimes.lexical import idf, stem, words
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
    #: why the proposer proposed what it did, when it says (the `keywords` baseline does)
    rationale: str = ""


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
    number of wrong prompts it appears in, and is proposed only if at least `MIN_PROMPTS`
    of those prompts hold it: a word of one prompt is that prompt's, not the kind of request
    (a Spanish word of one prompt, a file name). Words are read as the `lexical` router
    reads them, so a contraction ("don't", "it's") is no word; a word with a letter outside
    a-z ("página") is not English and is never proposed. Never added: words the description
    already has; never excluded: words of the skill's own name and description, and words
    of a missed must prompt; never added: words of a wrongly fired prompt. Candidate i adds
    more words than candidate i − 1, and the even ones also exclude, so the candidates of a
    round differ.
    """

    name = KEYWORDS
    kind = KEYWORDS
    note = ("optimises for a word router: it adds and excludes single words, which the "
            "`lexical` runtime matches; a model reads the description as a whole, so judge "
            "its candidates on the subject you care about")

    def propose(self, request: ProposalRequest, *, seed: int) -> Answer:
        own = _stems([request.skill.replace("-", " ").replace("_", " "),
                      request.description])
        must = [m.prompt for m in request.misses if m.expectation == "must_trigger"]
        fired = [m.prompt for m in request.misses if m.expectation == "should_not_trigger"]
        add = _distinctive(must, avoid=own | _stems(fired))
        drop = _distinctive(fired, avoid=own | _stems(must))
        out: list[str] = []
        for i in range(request.count):
            n = 3 * (i // 2 + 1)
            text = _extended(request.description, [w for w, _ in add[:n]],
                             [w for w, _ in drop[:n]] if i % 2 == 0 else [])
            if text not in out and text != request.description:
                out.append(text)
        return Answer(json.dumps(request.as_dict(), ensure_ascii=False),
                      json.dumps({"descriptions": out}, ensure_ascii=False),
                      rationale=_rationale(add, drop, len(must), len(fired)))


#: A word is proposed only if at least this many of the wrong prompts hold it.
MIN_PROMPTS = 2
#: A token with a letter outside a-z (an accented or non-Latin word): never English.
_FOREIGN = re.compile(r"\w*[^\W\x00-\x7f]\w*")


def _words(prompt: str) -> list[str]:
    """The words the lexical router reads in `prompt` (contractions dropped), less those
    of non-English tokens."""
    return words(_FOREIGN.sub(" ", prompt))


def _stems(texts: Sequence[str]) -> set[str]:
    return {stem(w) for t in texts for w in _words(t)}


def _distinctive(prompts: Sequence[str], avoid: set[str]) -> list[tuple[str, int]]:
    """(word, prompts holding it) of `prompts`, held by at least `MIN_PROMPTS` of them, most
    distinctive first: rarity × prompts holding it (ties: a-z)."""
    weight: Counter[str] = Counter()
    surface: dict[str, str] = {}
    for prompt in prompts:
        for word in dict.fromkeys(w for w in _words(prompt) if len(w) > 2 and not w.isdigit()):
            s = stem(word)
            if s in avoid:
                continue
            surface.setdefault(s, word)
            weight[s] += 1
    kept = [s for s in weight if weight[s] >= MIN_PROMPTS]
    ranked = sorted(kept, key=lambda s: (-weight[s] * idf(s), surface[s]))
    return [(surface[s], weight[s]) for s in ranked]


def _rationale(add: Sequence[tuple[str, int]], drop: Sequence[tuple[str, int]],
               n_must: int, n_fired: int) -> str:
    """One paragraph: the words found (with the number of wrong prompts holding each), or why
    none was, and what is never proposed."""
    def listed(found: Sequence[tuple[str, int]], prompts: int, what: str) -> str:
        if found:
            return (", ".join(f"{w} ({n})" for w, n in found[:9])
                    + f" (prompts holding each, of the {prompts} {what})")
        if not prompts:
            return f"none (no {what})"
        if prompts < MIN_PROMPTS:
            return f"none (1 {what[:-1]}: a word must be in {MIN_PROMPTS} or more)"
        return f"none (no word is in {MIN_PROMPTS} or more of the {prompts} {what})"

    return (f"For a word router (the lexical runtime's reading). To add: "
            f"{listed(add, n_must, 'missed must prompts')}; to exclude: "
            f"{listed(drop, n_fired, 'wrongly fired prompts')}. Never proposed: words of fewer "
            f"than {MIN_PROMPTS} prompts (one prompt's own: a name, a file, a foreign word), "
            "contractions, words with a letter outside a-z (not English); never excluded: "
            "words of the skill's own name and description.")


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
