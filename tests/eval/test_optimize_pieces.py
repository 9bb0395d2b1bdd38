"""The parts of `ix optimize` that run nothing: the split, the request, reading an answer."""

import json
from collections import Counter

import pytest

from ix.domain.errors import ConfigError
from ix.eval.models import EvalCase
from ix.eval.optimize import Miss, ProposalRequest, misses, parse_answer, request_text, split_cases


def _cases(n_must: int, n_not: int, n_edge: int = 0) -> list[EvalCase]:
    return ([EvalCase(id=f"must-{i:03d}", prompt=f"m{i}", expectation="must_trigger")
             for i in range(n_must)]
            + [EvalCase(id=f"not-{i:03d}", prompt=f"n{i}", expectation="should_not_trigger")
               for i in range(n_not)]
            + [EvalCase(id=f"edge-{i}", prompt="e", expectation="acceptable")
               for i in range(n_edge)])


def test_split_is_stratified_seeded_and_disjoint() -> None:
    cases = _cases(10, 11, n_edge=3)
    split = split_cases(cases, 0.4, seed=7)
    assert split == split_cases(list(reversed(cases)), 0.4, seed=7)  # order does not matter
    assert not set(split.train) & set(split.holdout)
    kinds = Counter(c.split("-")[0] for c in split.holdout)
    assert kinds == {"must": 4, "not": 4}  # round(10*0.4), round(11*0.4)
    assert len(split.train) + len(split.holdout) == 21  # acceptable cases are in neither
    others = {split_cases(cases, 0.4, seed=s).holdout for s in range(20)}
    assert len(others) > 10  # the seed matters


def test_split_keeps_one_case_of_each_kind_on_each_side() -> None:
    split = split_cases(_cases(2, 2), 0.9, seed=0)
    assert len(split.train) == 2 and len(split.holdout) == 2
    with pytest.raises(ConfigError, match="at least 2 of each"):
        split_cases(_cases(1, 5), 0.4, seed=0)
    with pytest.raises(ConfigError) as bad:
        split_cases(_cases(5, 5), 1.0, seed=0)
    assert bad.value.field == "--holdout"


def test_misses_are_wrong_train_cases_with_the_skill_that_took_them() -> None:
    cases = {c.id: c for c in _cases(3, 3)}
    probes = [
        {"probe_id": "must-000", "expectation": "must_trigger", "correct": False, "score": 0.2,
         "routes": [{"skill": None, "trials": 1}, {"skill": "other", "trials": 4}]},
        {"probe_id": "must-001", "expectation": "must_trigger", "correct": True, "score": 1.0},
        {"probe_id": "not-000", "expectation": "should_not_trigger", "correct": False,
         "score": 1.0, "routes": [{"skill": "target", "trials": 5}]},
    ]
    got = misses(probes, cases, allowed=["must-000", "must-001"])
    assert got == [Miss("must-000", "m0", "must_trigger", 0.2, "other")]


def test_the_request_holds_the_evidence_and_asks_for_json() -> None:
    req = ProposalRequest(skill="csv", description="Old.", body_summary="Profiles files.",
                          misses=(Miss("must-1", 'Say "hi"', "must_trigger", 0.0, None),),
                          tried=(("Old.", 0.5),), count=3, round=1, other_skills=("git",))
    text = request_text(req, 1024)
    assert json.dumps('Say "hi"') in text and "no skill took it" in text
    assert "train F1 0.500" in text and "Write 3 new" in text and "git" in text
    assert text.rstrip().endswith('{"descriptions": ["...", "..."]}')


@pytest.mark.parametrize("answer", [
    '{"descriptions": ["a", "b"]}',
    '```json\n{"descriptions": ["a", "b"]}\n```',
    '  {"descriptions": ["a", "b"]}\n',
])
def test_answers_in_the_asked_form_are_read(answer: str) -> None:
    assert parse_answer(answer) == ["a", "b"]


@pytest.mark.parametrize("answer", [
    'Here you go: {"descriptions": ["a"]}',
    '{"descriptions": "a"}',
    '{"descriptions": ["a"], "notes": "x"}',
    '["a", "b"]',
    '{"descriptions": [1]}',
    "",
])
def test_anything_else_is_refused(answer: str) -> None:
    with pytest.raises(ValueError):
        parse_answer(answer)
