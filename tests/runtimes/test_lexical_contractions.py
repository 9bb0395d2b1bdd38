"""The `lexical` router reads no contraction as evidence: "don't", "isn't", "it's" are dropped
whole, a possessive keeps its word, and the pieces a split contraction leaves (`don`, `t`,
`s`, `isn`, ...) are stop words. Before, the pieces matched between a skill's description and
an unrelated prompt and carried a should-not case past the threshold."""

import pytest

from ix.domain.types import Subject
from ix.runtimes.lexical import (
    NO_SKILL,
    LexicalOptions,
    LexicalRuntime,
    skill_score,
    tokenize,
    words,
)
from ix.runtimes.registry import RuntimeContext

# A published-style description written with contractions, and a prompt it is not for.
NAME = "frontend-design"
DESCRIPTION = ("Create distinctive, production-grade frontend interfaces. Use it when the "
               "user's page doesn't look right or isn't polished; don't settle for generic "
               "styles.")
SHOULD_NOT = "I don't know why my script isn't working and it's slow, don't you think it's odd?"
PIECES = ("don", "t", "s", "ll", "re", "ve", "d", "m", "isn", "doesn", "didn", "aren", "wasn",
          "weren", "hasn", "haven", "hadn", "wouldn", "shouldn", "couldn", "mustn", "needn")


def test_a_should_not_case_no_longer_fires_from_contraction_pieces() -> None:
    """Its only words in common with the description were contraction pieces: 3.1 of a
    threshold of 2.0, firing 90% of trials at the default temperature. Now they carry
    nothing, and the prompt scores what it scores with them taken out."""
    assert skill_score(NAME, DESCRIPTION, SHOULD_NOT) == 0.0
    plain = "I know why my script is working and slow, you think odd?"
    assert skill_score(NAME, DESCRIPTION, SHOULD_NOT) == skill_score(NAME, DESCRIPTION, plain)
    router = LexicalRuntime(LexicalOptions(), RuntimeContext(target_skill=None))
    subject = Subject(name="s", config={"skills": [{"name": NAME,
                                                    "description": DESCRIPTION}]})
    p = router.probabilities(subject, SHOULD_NOT)
    assert p[NAME] < 0.05 and p[NO_SKILL] > 0.95


@pytest.mark.parametrize("piece", PIECES)
def test_contraction_pieces_are_stop_words(piece: str) -> None:
    assert words(piece) == [] and tokenize(f"{piece} csv") == ("csv",)


@pytest.mark.parametrize(("text", "read"), [
    ("I don't know", ["know"]),
    ("it isn’t here, we’ll see", ["see"]),            # U+2019, as editors type it
    ("they'd say I'm sure you've won", ["say", "sure", "won"]),
    ("what's in the team's report", ["team", "report"]),  # a possessive keeps its word
    ("don`t and isn t", []),                         # pieces split another way: stop words
    ("at five o'clock", ["five", "o", "clock"]),     # another apostrophe splits as before
])
def test_contractions_are_dropped_whole_and_possessives_keep_their_word(
        text: str, read: list[str]) -> None:
    assert words(text) == read


def test_a_description_s_contractions_carry_no_weight() -> None:
    """The description's own contractions neither match a prompt's nor lengthen it."""
    without = DESCRIPTION.replace("user's", "user").replace("doesn't", "does not") \
        .replace("isn't", "is not").replace("don't", "do not")
    assert tokenize(DESCRIPTION) == tokenize(without)
