"""`lexical`: an offline skill router, BM25 scoring plus a seeded softmax. A baseline, not an LLM.

Each trial scores the prompt against each skill the subject has (its name, hyphens split into
words, plus its description) with Okapi BM25, then samples one choice among the skills and a
"no skill" option whose score is `threshold`, with probability proportional to
exp(score / temperature), drawn from the trial seed. `temperature: 0` is a deterministic argmax.
Each choice draws from the trial seed and its own name (`LexicalRuntime._sample`), so under
common trial seeds (DESIGN.md §2) adding a skill can only take trials away from the others.

With a history before the prompt (a case's `history`, a `context:` prefix), a skill's score
is the word-weighted average of its scores for each of the user's messages, the prompt
included: earlier text about other things dilutes it (`LexicalRuntime.scores`).

A skill's score depends on that skill and the prompt alone: words weigh by their rarity in
ordinary English (a fixed table shipped with ix, `lexical_background.tsv`), BM25's average
length is fixed, and words in the description's exclusion clauses ("Do NOT use for ...",
"not for ...", "use X instead") count against it. So skills compete only through the softmax,
and installing another skill never raises a skill's chance of being chosen.

What it is for: offline demos, tests and a floor to compare real subjects against. What it is
not: a model of Claude. It matches words, so it misses paraphrases and fires on shared
vocabulary, and its activation rates say nothing about how Claude would route the same prompts.
`LexicalRuntime.scores` and `.probabilities` show the numbers behind a decision; each trial
records why in `observation.meta.routing` (the best skills' scores, the threshold, the stems
that carried each score), which `ix results --explain CASE` prints.
"""

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field

from ix.domain.errors import TrialError
from ix.domain.model import Model
from ix.domain.types import Subject
from ix.eval.models import EvalObservation, ToolCall
from ix.runtimes._conversation import history_of
from ix.runtimes._seeding import name_index, uniform
from ix.runtimes.registry import RuntimeContext, RuntimeKind, register

#: The key of the "answer directly, call no skill" option in `scores` and `probabilities`.
NO_SKILL = ""


class LexicalOptions(Model):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    threshold: float = 2.0
    temperature: float = Field(0.5, ge=0.0)
    k1: float = Field(1.2, ge=0.0)
    b: float = Field(0.75, ge=0.0, le=1.0)
    skills: list[str] | None = None


# --- text -----------------------------------------------------------------------------------

# A word, with what an apostrophe joins to it ("don't", "skill's", "o'clock") kept whole
_WORD = re.compile(r"[a-z0-9]+(?:['\u2019\u02bc][a-z0-9]+)*")
_APOSTROPHE = re.compile(r"['\u2019\u02bc]")
#: What follows the apostrophe of a contraction ("n't", "'ll", "'re", "'ve", "'d", "'m"): the
#: whole word goes, as its stem is a function word ("do", "is", "we", "I").
_CONTRACTED = frozenset({"t", "ll", "re", "ve", "d", "m"})
_STOP_WORDS = """
    a about after all also am an and any are as at be been before being but by can could did do
    does doing done for from get got had has have having he her here him his how i if in into is
    it its just me my no nor not of off on once only or other our out over own please same she
    should so some such than that the their them then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would you
    your
"""
#: The pieces of contractions, should a text split them some other way ("don`t", "isn t"):
#: never evidence of what a prompt is about.
_CONTRACTION_PIECES = """
    don doesn didn isn aren wasn weren hasn haven hadn wouldn shouldn couldn mustn needn mightn
    shan ain t s ll re ve d m
"""
_STOP = frozenset(_STOP_WORDS.split()) | frozenset(_CONTRACTION_PIECES.split())
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
def words(text: str) -> list[str]:
    """Lowercase `[a-z0-9]+` words, stop words dropped, as written (`tokenize` stems them).

    A contraction is no word ("don't", "we'll", "I'm": dropped whole), a possessive's "'s"
    goes ("the skill's" reads "skill"), any other apostrophe separates words ("o'clock");
    contraction pieces are stop words too, so a split contraction never counts either."""
    out = []
    for token in _WORD.findall(text.lower()):
        pieces = _APOSTROPHE.split(token)
        if len(pieces) == 2 and pieces[1] in _CONTRACTED:
            continue
        out += [w for w in pieces if w not in _STOP]
    return out


def tokenize(text: str) -> tuple[str, ...]:
    """Lowercase `[a-z0-9]+` words, stop words dropped, stemmed; the same for prompts and skills."""
    return tuple(stem(w) for w in words(text))


def skill_document(name: str, description: str) -> str:
    """What a skill is matched on: its name with hyphens as spaces, then its description."""
    return f"{name.replace('-', ' ')} {description}"


# --- weights --------------------------------------------------------------------------------

#: The background's document length and frequency floor (scripts/lexical_background.py).
BACKGROUND_DOC_WORDS = 40
BACKGROUND_MIN_FREQUENCY = 1e-6
#: BM25's average document length, fixed so that one skill's length never rescales another's:
#: about the length of a skill description once stop words are dropped.
AVG_LENGTH = 40.0


@lru_cache(maxsize=1)
def _background() -> tuple[Mapping[str, float], float]:
    """Each stem's weight from English word frequencies, and the weight of any unlisted stem."""
    path = Path(__file__).with_name("lexical_background.tsv")
    weights: dict[str, float] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            term, value = line.split("\t")
            weights[term] = float(value)
    floor = -math.log(-math.expm1(-BACKGROUND_DOC_WORDS * BACKGROUND_MIN_FREQUENCY))
    return weights, floor


def idf(term: str) -> float:
    """A stem's weight in (0, 1]: -ln P(a 40-word English text has it), over that of a rare word.

    1 for a word rarer than one in a million ("csv", "xlsx") or unknown, about 0.47 for "data",
    0.35 for "use". Fixed, shipped with ix: it depends neither on the subject's skills nor on
    the lab's, so a score is in units of one rare word matched once.
    """
    weights, floor = _background()
    return weights.get(term, floor) / floor


# --- exclusions -----------------------------------------------------------------------------

# "Do NOT use for ...", "don't trigger when ...", "never use ...", "not for ...", "not intended
# for ...": the rest of the clause names what the skill is not for.
_EXCLUDE = re.compile(
    r"\b(?:(?:do\s+not|don[\u2019']?t|never)\s+(?:use|trigger|invoke|activate|call|load|apply)"
    r"(?:\s+(?:this|it|the))?(?:\s+skill)?(?:\s+(?:for|on|when|if|to))?"
    r"|not\s+(?:intended\s+|meant\s+|suitable\s+|designed\s+)?(?:for|when))\b",
    re.IGNORECASE,
)
# "use the docx skill instead", "instead use ...": the whole clause points elsewhere.
_INSTEAD = re.compile(r"\binstead\b(?!\s+of)", re.IGNORECASE)
# "..., even if tabular data is involved": a concession, neither for nor against.
_CONCESSION = re.compile(r",?\s*\beven\s+(?:if|when|though)\b", re.IGNORECASE)
_SENTENCE = re.compile(r"[.!?;](?=\s|$)|\n")
_ASIDE = re.compile(r"\(([^()]*)\)")


def split_exclusions(description: str) -> tuple[str, str]:
    """(what the skill is for, what it says it is not for): clauses that exclude go right.

    Clauses are sentences (split at . ! ? ; and new lines) and asides in parentheses that
    exclude ("(not for PDFs)", "(use docx instead)"); other asides stay in their sentence. A
    clause with "instead" (not "instead of") goes right whole; from "do not use/trigger",
    "don't use", "never use" or "not for" on, the rest of the clause goes right, up to a
    concession ("even if ..."), which counts for neither side.
    """
    keep: list[str] = []
    against: list[str] = []

    def excluding(text: str) -> bool:
        return bool(_INSTEAD.search(text) or _EXCLUDE.search(text))

    asides = [m.group(1) for m in _ASIDE.finditer(description) if excluding(m.group(1))]
    rest = _ASIDE.sub(lambda m: " " if excluding(m.group(1)) else f" {m.group(1)} ",
                      description)
    for clause in [*_SENTENCE.split(rest), *asides]:
        if _INSTEAD.search(clause):
            against.append(_CONCESSION.split(clause)[0])
            continue
        marker = _EXCLUDE.search(clause)
        if marker is None:
            keep.append(clause)
            continue
        keep.append(clause[: marker.start()])
        against.append(_CONCESSION.split(clause[marker.end():])[0])
    return " ".join(keep), " ".join(against)


# --- scoring --------------------------------------------------------------------------------

SkillsKey = tuple[tuple[str, str], ...]  # ((name, description), ...) in the subject's order


@dataclass(frozen=True)
class _Document:
    """One skill as BM25 sees it: term counts for and against, and its length."""

    tf: Mapping[str, int]
    tf_against: Mapping[str, int]
    length: int


@lru_cache(maxsize=1024)
def _document(name: str, description: str) -> _Document:
    keep, against = split_exclusions(description)
    tf = Counter(tokenize(skill_document(name, keep)))
    tf_against = Counter(tokenize(against))
    return _Document(tf=tf, tf_against=tf_against,
                     length=sum(tf.values()) + sum(tf_against.values()))


@lru_cache(maxsize=8192)
def skill_score(name: str, description: str, prompt: str, k1: float = 1.2, b: float = 0.75
                ) -> float:
    """BM25 of one skill for a prompt, minus the same sum over its exclusion clauses.

    A function of this skill and the prompt alone (fixed weights, fixed average length), so
    installing other skills never changes it: skills compete only in the softmax.
    """
    doc = _document(name, description)
    norm = k1 * (1 - b + b * doc.length / AVG_LENGTH)

    def saturate(count: int) -> float:
        return count * (k1 + 1) / (count + norm) if count else 0.0

    return sum(
        idf(t) * (saturate(doc.tf.get(t, 0)) - saturate(doc.tf_against.get(t, 0)))
        for t in set(tokenize(prompt))
    )


@lru_cache(maxsize=8192)
def skill_terms(name: str, description: str, prompt: str, k1: float = 1.2, b: float = 0.75
                ) -> tuple[tuple[str, float], ...]:
    """What carried `skill_score`: each prompt stem's share of it (non-zero ones only), so
    they add up to the score. Negative where the stem is in the skill's exclusion clauses."""
    doc = _document(name, description)
    norm = k1 * (1 - b + b * doc.length / AVG_LENGTH)

    def saturate(count: int) -> float:
        return count * (k1 + 1) / (count + norm) if count else 0.0

    out = []
    for t in sorted(set(tokenize(prompt))):
        share = idf(t) * (saturate(doc.tf.get(t, 0)) - saturate(doc.tf_against.get(t, 0)))
        if share:
            out.append((t, share))
    return tuple(out)


@lru_cache(maxsize=4096)
def stems_of(text: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Each stem of `text` and the words as written that gave it ("summar": ["summarise"])."""
    out: dict[str, list[str]] = {}
    for w in words(text):
        found = out.setdefault(stem(w), [])
        if w not in found:
            found.append(w)
    return tuple((t, tuple(ws)) for t, ws in out.items())


#: A trial line's routing record keeps the best-scoring skills (and the chosen one) and, for
#: each, the stems that carried most of its score: enough to explain, small enough to store.
ROUTING_SKILLS = 3
ROUTING_TERMS = 5


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

    def scores(self, subject: Subject, prompt: str,
               earlier: Sequence[str] = ()) -> dict[str, float]:
        """Score of each skill considered, plus `NO_SKILL` at `threshold`, sorted by name.

        `earlier`: the user's messages before the prompt (a case's history). Then a skill's
        score is the average of its scores for each user message, weighted by the message's
        words: text about something else dilutes it, in proportion to its length, while the
        threshold stays put. Assistant turns and tool results are not read."""
        k1, b = self.options.k1, self.options.b
        # (words, text) of each earlier message with a word in it; none: the prompt alone
        before = [(n, m) for m in earlier if (n := len(tokenize(m)))]
        words = len(tokenize(prompt)) if before else 0
        total = words + sum(n for n, _ in before)

        def score(name: str, description: str) -> float:
            alone = skill_score(name, description, prompt, k1, b)
            if not before:
                return alone
            return (alone * words + sum(n * skill_score(name, description, m, k1, b)
                                        for n, m in before)) / total

        out = {name: score(name, description)
               for name, description in sorted(self._skills(subject))}
        out[NO_SKILL] = self.options.threshold
        return out

    def routing(self, subject: Subject, prompt: str, earlier: Sequence[str], choice: str,
                scores: Mapping[str, float]) -> dict[str, Any]:
        """Why `choice` was made, for the trial's `observation.meta.routing` (`_routing`).
        Built once per prompt, history, choice and scores: a case's trials share it, so
        the caller must not change it."""
        o = self.options
        return _routing(self._skills(subject), prompt, tuple(earlier), choice,
                        tuple(scores.items()), o.threshold, o.temperature, o.k1, o.b)

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
        earlier = [t.content for t in history_of(stimulus) if t.role == "user"]
        scores = self.scores(subject, stimulus.prompt, earlier)
        if self.options.temperature == 0:
            choice = self._argmax(scores)
        else:
            choice = self._sample(scores, seed, attempt)
        meta = {"routing": self.routing(subject, stimulus.prompt, earlier, choice, scores)}
        if choice == NO_SKILL:
            return EvalObservation(content="Answered directly.", meta=meta)
        return EvalObservation(
            content=f"Using the {choice} skill.",
            tool_calls=(ToolCall(name="Skill", input={"skill": choice}),),
            meta=meta,
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

    def _sample(self, scores: Mapping[str, float], seed: int, attempt: int) -> str:
        """One choice, with probability proportional to exp(score / temperature): an
        exponential race in which each choice draws its own time from the trial seed and its
        name (E / weight; the first to arrive wins). A choice's draw does not depend on which
        others exist, so under common trial seeds a subject with more skills can only lose
        trials to them, case by case: the one whose choice wins among many wins among fewer."""
        temperature = self.options.temperature
        best, best_key = NO_SKILL, -math.inf
        for name, score in scores.items():
            arrival = -math.log1p(-uniform(seed, attempt, name_index(name)))
            key = score / temperature - math.log(arrival) if arrival > 0 else math.inf
            if key > best_key:
                best, best_key = name, key
        return best


@lru_cache(maxsize=4096)
def _routing(skills: SkillsKey, prompt: str, earlier: tuple[str, ...], choice: str,
             scored: tuple[tuple[str, float], ...], threshold: float, temperature: float,
             k1: float, b: float) -> dict[str, Any]:
    """The threshold, the temperature, how many skills were scored, and the best
    `ROUTING_SKILLS` skills that matched a word (plus the chosen one) with their score and
    the stems that carried it — each stem's share of the score (summed over the user's
    messages, weighted as `LexicalRuntime.scores` weighs them) and the words it came from."""
    scores = dict(scored)
    described = dict(skills)
    ranked = sorted((n for n in scores if n != NO_SKILL), key=lambda n: (-scores[n], n))
    shown = [n for n in ranked if scores[n]][:ROUTING_SKILLS]  # no word matched: left out
    if choice != NO_SKILL and choice not in shown:
        shown.append(choice)
    texts = [(n, m) for m in earlier if (n := len(tokenize(m)))]
    if texts:
        texts.append((len(tokenize(prompt)), prompt))
    else:
        texts = [(1, prompt)]
    total = sum(n for n, _ in texts)
    written: dict[str, list[str]] = {}
    for _, text in texts:
        for t, ws in stems_of(text):
            known = written.setdefault(t, [])
            known += [w for w in ws if w not in known]
    out = []
    for name in shown:
        shares: dict[str, float] = {}
        for n, text in texts:
            for t, share in skill_terms(name, described[name], text, k1, b):
                shares[t] = shares.get(t, 0.0) + share * n / total
        top = sorted(shares.items(), key=lambda kv: (-abs(kv[1]), kv[0]))[:ROUTING_TERMS]
        out.append({"skill": name, "score": round(scores[name], 4),
                    "terms": [{"term": t, "words": written.get(t, [t]),
                               "share": round(v, 4)} for t, v in top]})
    return {"chosen": None if choice == NO_SKILL else choice, "threshold": threshold,
            "temperature": temperature, "scored": len(ranked), "skills": out}


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
    history="sent",
    options=LexicalOptions,
    build=LexicalRuntime,
    default_concurrency=100,
    summary="offline lexical skill router (BM25 + seeded softmax): a baseline, not an LLM",
))
