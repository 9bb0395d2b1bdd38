"""The offline `keywords` proposer: what it adds, what it excludes, and its limits — only
words of two or more wrong prompts, never a word of the skill's own name or description in
"Not for", no contraction or non-English word — and that it says it optimises for a word
router."""

import json

from ix.engine.proposers import KeywordsProposer
from ix.eval.optimize import Miss, ProposalRequest, parse_answer
from ix.lab.skill_file import DESCRIPTION_MAX, check_description
from ix.runtimes.lexical import split_exclusions, words


def _request(description: str, misses: list[Miss], count: int = 3,
             skill: str = "table-profile") -> ProposalRequest:
    return ProposalRequest(skill=skill, description=description, body_summary="",
                           misses=tuple(misses), tried=(), count=count, round=1)


def _must(i: int, prompt: str) -> Miss:
    return Miss(f"must-{i}", prompt, "must_trigger", 0.0, None)


def _fired(i: int, prompt: str) -> Miss:
    return Miss(f"not-{i}", prompt, "should_not_trigger", 1.0, "table-profile")


def _proposed(request: ProposalRequest) -> tuple[set[str], set[str]]:
    """Every word any candidate adds (its positive part beyond the description's) and
    excludes (its "Not for" part)."""
    have = set(words(request.description))
    added: set[str] = set()
    excluded: set[str] = set()
    for text in parse_answer(KeywordsProposer().propose(request, seed=0).answer):
        keep, against = split_exclusions(text)
        added |= set(words(keep)) - have - {"requests"}
        excluded |= set(words(against))
    return added, excluded


MISSES = [
    Miss("must-1", "Check the nulls, dtypes and outliers of orders.xlsx, don't edit it.",
         "must_trigger", 0.0, None),
    Miss("must-2", "Count the nulls, dtypes and outliers in the orders.xlsx spreadsheet.",
         "must_trigger", 0.0, None),
    Miss("not-1", "Load sales.csv into a SQLite warehouse table.", "should_not_trigger", 1.0,
         "table-profile"),
    Miss("not-2", "Tune this SQLite query plan.", "should_not_trigger", 1.0, "table-profile"),
]


def test_adds_missed_words_and_excludes_false_positive_words() -> None:
    answer = KeywordsProposer().propose(_request("Describes things.", MISSES), seed=0)
    candidates = parse_answer(answer.answer)
    assert len(candidates) == 3 and len(set(candidates)) == 3
    for text in candidates:
        assert check_description(text) is None
        keep, against = split_exclusions(text)
        # in both missed must prompts and rarest in English: the first words added
        assert "dtypes" in keep and "xlsx" in keep
        assert "don" not in text.split()  # a contraction's piece is not a word
        assert "sqlite" not in keep
    _, against = split_exclusions(candidates[0])
    assert "sqlite" in against and "dtypes" not in against
    assert json.loads(answer.request)["misses"][0]["id"] == "must-1"


def test_never_longer_than_the_limit() -> None:
    long = "Profiles data. " * 66
    answer = KeywordsProposer().propose(_request(long.strip(), MISSES), seed=0)
    for text in parse_answer(answer.answer):
        assert len(text) <= DESCRIPTION_MAX


def test_nothing_to_learn_from_gives_nothing() -> None:
    answer = KeywordsProposer().propose(_request("Describes things.", []), seed=0)
    assert parse_answer(answer.answer) == []


def test_never_excludes_words_of_the_skill_s_own_name_or_description() -> None:
    """A frontend skill that fired on two prompts about its own subject: "Not for frontend"
    would exclude what the skill is for."""
    request = _request("Builds polished web pages with a strong visual identity.", [
        _fired(1, "Review the frontend build pipeline in webpack, please."),
        _fired(2, "My frontend webpack bundle is huge; trim the pages and design tokens."),
        _must(1, "Design a landing page with bold typography."),
        _must(2, "Design a landing page for a bakery, bold typography."),
    ], skill="frontend-design")
    added, excluded = _proposed(request)
    assert "webpack" in excluded          # in both wrongly fired prompts, not the skill's
    assert not excluded & {"frontend", "design", "pages", "web", "polished"}
    assert {"landing", "typography"} <= added


def test_keeps_only_words_seen_in_two_or_more_prompts() -> None:
    request = _request("Describes things.", [
        _must(1, "Count the nulls in orders.xlsx for the quarterly board."),
        _must(2, "Find the nulls in returns.xlsx, then email Priya."),
        _fired(1, "Plan a trip to Lisbon in spring."),
        _fired(2, "Plan my marathon training in spring."),
    ])
    added, excluded = _proposed(request)
    assert added == {"nulls", "xlsx"}
    assert excluded == {"plan", "spring"}
    for one_off in ("orders", "quarterly", "board", "returns", "email", "priya", "lisbon",
                    "marathon"):
        assert one_off not in added | excluded


def test_drops_contractions_and_non_english_words() -> None:
    """Contractions are no words (the lexical router drops them), a possessive keeps its
    word, and a word with a letter outside a-z is never English: neither it nor the pieces
    [a-z0-9] would cut it into ("página" -> "gina") are proposed."""
    request = _request("Describes things.", [
        _must(1, "Hazme una página de nulls; I donʼt mind the team's xlsx, it’s fine."),
        _must(2, "Revisa la página: nulls, can’t open the team's xlsx, wonʼt load."),
        _must(3, "Hazme la tabla de nulls del xlsx."),
    ])
    added, _ = _proposed(request)
    assert {"nulls", "xlsx", "team"} <= added
    for piece in ("don", "can", "won", "gina", "p", "t", "s"):
        assert piece not in added
    # in two prompts and written in a-z, a word is kept, whatever its language: the rule
    # asks for evidence beyond one prompt, and the router reads it like any other
    assert "hazme" in added
    rationale = KeywordsProposer().propose(request, seed=0).rationale
    assert "contractions, words with a letter outside a-z" in rationale


def test_says_it_optimises_for_a_word_router() -> None:
    proposer = KeywordsProposer()
    answer = proposer.propose(_request("Describes things.", MISSES), seed=0)
    assert "optimises for a word router" in proposer.note
    assert answer.rationale.startswith("For a word router")
    assert "nulls (2)" in answer.rationale and "sqlite (2)" in answer.rationale
