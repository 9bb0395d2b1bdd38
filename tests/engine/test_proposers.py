"""The offline `keywords` proposer: what it adds, what it excludes, and its limits."""

import json

from ix.engine.proposers import KeywordsProposer
from ix.eval.optimize import Miss, ProposalRequest, parse_answer
from ix.lab.skill_file import DESCRIPTION_MAX, check_description
from ix.runtimes.lexical import split_exclusions


def _request(description: str, misses: list[Miss], count: int = 3) -> ProposalRequest:
    return ProposalRequest(skill="table-profile", description=description, body_summary="",
                           misses=tuple(misses), tried=(), count=count, round=1)


MISSES = [
    Miss("must-1", "Check the nulls and dtypes of orders.xlsx, don't edit it.",
         "must_trigger", 0.0, None),
    Miss("must-2", "Count the nulls and outliers in the spreadsheet.", "must_trigger", 0.0,
         None),
    Miss("not-1", "Load sales.csv into a SQLite warehouse table.", "should_not_trigger", 1.0,
         "table-profile"),
]


def test_adds_missed_words_and_excludes_false_positive_words() -> None:
    answer = KeywordsProposer().propose(_request("Describes things.", MISSES), seed=0)
    candidates = parse_answer(answer.answer)
    assert len(candidates) == 3 and len(set(candidates)) == 3
    for text in candidates:
        assert check_description(text) is None
        keep, against = split_exclusions(text)
        assert "nulls" in keep  # in both missed must prompts: the first word added
        assert "don" not in text.split()  # a contraction's piece is not a word
        assert "sqlite" not in keep
    _, against = split_exclusions(candidates[0])
    assert "sqlite" in against and "nulls" not in against
    assert json.loads(answer.request)["misses"][0]["id"] == "must-1"


def test_never_longer_than_the_limit() -> None:
    long = "Profiles data. " * 66
    answer = KeywordsProposer().propose(_request(long.strip(), MISSES), seed=0)
    for text in parse_answer(answer.answer):
        assert len(text) <= DESCRIPTION_MAX


def test_nothing_to_learn_from_gives_nothing() -> None:
    answer = KeywordsProposer().propose(_request("Describes things.", []), seed=0)
    assert parse_answer(answer.answer) == []
