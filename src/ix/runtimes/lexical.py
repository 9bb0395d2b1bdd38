"""`lexical`: an offline skill router, BM25 scoring plus a seeded softmax. A baseline, not an LLM.

Each trial scores the prompt against every skill the subject has (its name, hyphens split into
words, plus its description) with Okapi BM25 over that subject's skills, then samples one
choice among the skills and a "no skill" option whose score is `threshold`, with probability
proportional to exp(score / temperature), drawn from the trial seed. `temperature: 0` is a
deterministic argmax.

What it is for: offline demos, tests and a floor to compare real subjects against. What it is
not: a model of Claude. It matches words, so it misses paraphrases and fires on shared
vocabulary, and its activation rates say nothing about how Claude would route the same prompts.
`LexicalRuntime.scores` and `.probabilities` show the numbers behind a decision.
"""

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ix.domain.errors import TrialError
from ix.domain.types import Subject
from ix.eval.models import EvalObservation, ToolCall
from ix.runtimes._seeding import trial_rng
from ix.runtimes.registry import RuntimeContext, RuntimeKind, register

#: The key of the "answer directly, call no skill" option in `scores` and `probabilities`.
NO_SKILL = ""


class LexicalOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    threshold: float = 1.5
    temperature: float = Field(0.5, ge=0.0)
    k1: float = Field(1.2, ge=0.0)
    b: float = Field(0.75, ge=0.0, le=1.0)
    skills: list[str] | None = None


# --- text -----------------------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9]+")
_STOP_WORDS = """
    a about after all also am an and any are as at be been before being but by can could did do
    does doing done for from get got had has have having he her here him his how i if in into is
    it its just me my no nor not of off on once only or other our out over own please same she
    should so some such than that the their them then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would you
    your
"""
_STOP = frozenset(_STOP_WORDS.split())
_DOUBLE_OK = frozenset("lsz")  # "miss", "fill", "buzz" keep their double letter


def stem(word: str) -> str:
    """A light suffix stripper (-ies, -es, -s, -ing, -ed, final -e), keeping stems of 3+ letters.

    Not Porter: just enough that "summarise", "summarising" and "summarises" meet. -ing/-ed stay
    when the stem would end in "e" ("speed", "seeing"), and "tagged" loses its doubled letter.
    """
    w = word
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 4 and w.endswith("es") and w[:-2].endswith(("s", "x", "z", "ch", "sh")):
        w = w[:-2]
    elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix in ("ing", "ed"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3 and not w[: -len(suffix)].endswith("e"):
            w = w[: -len(suffix)]
            if len(w) >= 4 and w[-1] == w[-2] and w[-1] not in _DOUBLE_OK and w[-1] not in "aeiou":
                w = w[:-1]
            break
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    return w


@lru_cache(maxsize=4096)
def tokenize(text: str) -> tuple[str, ...]:
    """Lowercase `[a-z0-9]+` words, stop words dropped, stemmed; the same for prompts and skills."""
    return tuple(stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP)


def skill_document(name: str, description: str) -> str:
    """What a skill is matched on: its name with hyphens as spaces, then its description."""
    return f"{name.replace('-', ' ')} {description}"


# --- index ----------------------------------------------------------------------------------

SkillsKey = tuple[tuple[str, str], ...]  # ((name, description), ...) in the subject's order


@dataclass(frozen=True)
class _Index:
    names: tuple[str, ...]
    tfs: tuple[Mapping[str, int], ...]
    lengths: tuple[int, ...]
    avg_length: float
    idf: Mapping[str, float]


@lru_cache(maxsize=256)
def _index(skills: SkillsKey) -> _Index:
    docs = [Counter(tokenize(skill_document(n, d))) for n, d in skills]
    lengths = tuple(sum(tf.values()) for tf in docs)
    df: Counter[str] = Counter(term for tf in docs for term in tf)
    n = len(docs)
    # The Lucene form of the Okapi IDF: never negative, even for a word every skill shares.
    idf = {t: math.log(1 + (n - k + 0.5) / (k + 0.5)) for t, k in df.items()}
    return _Index(
        names=tuple(name for name, _ in skills),
        tfs=tuple(docs),
        lengths=lengths,
        avg_length=(sum(lengths) / n) or 1.0,
        idf=idf,
    )


@lru_cache(maxsize=8192)
def _bm25(skills: SkillsKey, prompt: str, k1: float, b: float) -> tuple[float, ...]:
    index = _index(skills)
    terms = set(tokenize(prompt)) & index.idf.keys()
    out = []
    for tf, length in zip(index.tfs, index.lengths, strict=True):
        norm = k1 * (1 - b + b * length / index.avg_length)
        out.append(sum(
            index.idf[t] * tf[t] * (k1 + 1) / (tf[t] + norm) for t in terms if t in tf
        ))
    return tuple(out)


def _softmax(scores: Sequence[float], temperature: float) -> list[float]:
    top = max(scores)
    weights = [math.exp((s - top) / temperature) for s in scores]
    total = sum(weights)
    return [w / total for w in weights]


# --- runtime --------------------------------------------------------------------------------


class LexicalRuntime:
    """Routes each prompt to one of the subject's skills, or to none, by word overlap."""

    def __init__(self, options: LexicalOptions, context: RuntimeContext):
        self.options = options

    def scores(self, subject: Subject, prompt: str) -> dict[str, float]:
        """BM25 score of each skill considered, plus `NO_SKILL` at `threshold`, sorted by name."""
        skills = self._skills(subject)
        bm25 = _bm25(skills, prompt, self.options.k1, self.options.b)
        out = dict(sorted(zip((n for n, _ in skills), bm25, strict=True)))
        out[NO_SKILL] = self.options.threshold
        return out

    def probabilities(self, subject: Subject, prompt: str) -> dict[str, float]:
        """The chance of each choice in one trial (one-hot at `temperature: 0`)."""
        scores = self.scores(subject, prompt)
        if self.options.temperature == 0:
            best = self._argmax(scores)
            return {name: float(name == best) for name in scores}
        return dict(zip(scores, _softmax(list(scores.values()), self.options.temperature),
                        strict=True))

    async def invoke(
        self, subject: Subject, stimulus: Any, *, seed: int = 0, attempt: int = 0
    ) -> EvalObservation:
        scores = self.scores(subject, stimulus.prompt)
        if self.options.temperature == 0:
            choice = self._argmax(scores)
        else:
            choice = self._sample(scores, trial_rng(seed, attempt).random())
        if choice == NO_SKILL:
            return EvalObservation(content="Answered directly.")
        return EvalObservation(
            content=f"Using the {choice} skill.",
            tool_calls=(ToolCall(name="Skill", input={"skill": choice}),),
        )

    def _skills(self, subject: Subject) -> SkillsKey:
        raw = subject.config.get("skills") or ()
        skills = tuple(_name_and_description(entry) for entry in raw)
        if self.options.skills is not None:
            known = {name for name, _ in skills}
            unknown = [name for name in self.options.skills if name not in known]
            if unknown:
                raise TrialError(
                    "unknown_skill",
                    f"lexical: runtime option skills names {', '.join(unknown)}, which subject "
                    f"{subject.name!r} does not have; it has: {', '.join(sorted(known)) or 'none'}",
                )
            wanted = set(self.options.skills)
            skills = tuple(s for s in skills if s[0] in wanted)
        if not skills:
            raise TrialError(
                "no_skills",
                f"lexical: subject {subject.name!r} has no skills to route to; give it `skills:`",
            )
        return skills

    @staticmethod
    def _argmax(scores: Mapping[str, float]) -> str:
        # A skill must beat the threshold outright; among equal skills the first name wins.
        best = NO_SKILL
        for name, score in scores.items():
            if name != NO_SKILL and score > scores[best]:
                best = name
        return best

    def _sample(self, scores: Mapping[str, float], u: float) -> str:
        names = list(scores)
        cumulative = 0.0
        for name, p in zip(names, _softmax(list(scores.values()), self.options.temperature),
                           strict=True):
            cumulative += p
            if u < cumulative:
                return name
        return names[-1]


def _name_and_description(entry: Any) -> tuple[str, str]:
    if isinstance(entry, str):
        return entry, ""
    if isinstance(entry, Mapping) and "name" in entry:
        return str(entry["name"]), str(entry.get("description") or "")
    raise TrialError(
        "bad_skills", f"lexical: a subject skill must be a mapping with a name, got {entry!r}"
    )


register(RuntimeKind(
    name="lexical",
    options=LexicalOptions,
    build=LexicalRuntime,
    default_concurrency=100,
    summary="offline lexical skill router (BM25 + seeded softmax): a baseline, not an LLM",
))
