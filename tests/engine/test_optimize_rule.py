"""`ix optimize`'s recommended rule, end to end in process: a candidate whose holdout gain
rests on 2 changed cases — the shape of a held-out lab's false recommendation (+0.23 with
95% interval [−0.10, 0.51], P(better) 0.91, on 2 of 7 must cases) — is not recommended,
and the session says which conditions it missed; the same lab with enough changed cases is
recommended. The lexical router at temperature 0 makes every vote deterministic."""

import json
from pathlib import Path

import pytest

import ix.api.optimize as api_optimize
from ix.api.optimize import Settings, optimize
from ix.engine.proposers import Answer
from ix.eval.models import EvalCase
from ix.eval.optimize import ProposalRequest, split_cases

ORIGINAL = "Profiles tables, their columns, nulls, dtypes and cardinality in a spreadsheet."
CANDIDATE = f"{ORIGINAL} Also for zorblat quenfy ledgers."
BOTH = "Check the columns, nulls and dtypes of this spreadsheet."       # both fire
ONLY_CANDIDATE = "Run the zorblat quenfy pass over the ledgers."         # the candidate only
NEITHER = ("Write a haiku about autumn leaves.", "Plan a three day trip to Lisbon.",
           "Explain how a heat pump works.", "Suggest names for a bakery.",
           "Translate this paragraph into French.", "Review my cover letter.",
           "Convert 30 miles to kilometres.", "List prime numbers below fifty.")
N_MUST, N_NOT, SEED = 18, 13, 7   # holdout 0.4: 7 must and 5 not cases


class Fixed:
    """A proposer that proposes one description, whatever it is told."""

    name = kind = "fixed"

    def propose(self, request: ProposalRequest, *, seed: int) -> Answer:
        return Answer("", json.dumps({"descriptions": [CANDIDATE]}))


def make_lab(lab: Path, improved: int) -> Path:
    """Holdout must cases: `improved` the candidate alone fires on, 3 both fire on, the rest
    neither; holdout not cases: none fires. Train: 4 must cases only the candidate fires on."""
    folder = lab / "skills" / "table-profile"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: table-profile\ndescription: {ORIGINAL}\n---\n\n# Table profile\n",
        encoding="utf-8")
    experiment = lab / "rule"
    (experiment / "cases").mkdir(parents=True)
    (experiment / "experiment.yaml").write_text(
        "name: rule\nruntime: {kind: lexical, temperature: 0}\n"
        "sensor: {kind: activation, skill: table-profile}\ntrials: 1\n"
        f"seed: {SEED}\nsubjects:\n  - name: tp\n    skills: [table-profile]\n",
        encoding="utf-8")
    ids = [f"must-{i:02d}" for i in range(N_MUST)] + [f"not-{i:02d}" for i in range(N_NOT)]
    cases = [EvalCase(id=i, prompt="p", expectation="must_trigger" if i.startswith("must")
                      else "should_not_trigger") for i in ids]
    split = split_cases(cases, 0.4, SEED)
    held_must = [i for i in split.holdout if i.startswith("must")]
    train_must = [i for i in split.train if i.startswith("must")]
    prompts = {i: NEITHER[k % len(NEITHER)] for k, i in enumerate(ids)}
    for k, i in enumerate(held_must):
        prompts[i] = (ONLY_CANDIDATE if k < improved else BOTH if k < improved + 3
                      else NEITHER[k % len(NEITHER)])
    for k, i in enumerate(train_must):
        prompts[i] = ONLY_CANDIDATE if k < 4 else BOTH
    for i in ids:
        expectation = "must_trigger" if i.startswith("must") else "should_not_trigger"
        (experiment / "cases" / f"{i}.md").write_text(
            f"---\nexpectation: {expectation}\n---\n{prompts[i]}\n", encoding="utf-8")
    return lab


@pytest.fixture(autouse=True)
def fixed_proposer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api_optimize, "make_proposer", lambda name, loaded: Fixed())


def test_a_gain_resting_on_two_changed_cases_is_not_recommended_and_says_why(
        tmp_path: Path) -> None:
    state = optimize(make_lab(tmp_path / "lab", improved=2), "rule", Settings()).state
    holdout = state["holdout"]
    (row,) = holdout["subjects"]
    assert row["pairs"] == {"must": [3, 0, 2, 2], "not": [0, 0, 0, 5]}   # the set-up
    assert row["difference"] > 0 and row["difference_ci"][0] < -0.05
    assert row["prob_better"] > 0.9   # the old rule (P ≥ 0.9) recommended it
    assert holdout["verdict"] == "not recommended" and state["recommended"] is False
    assert state["recommended_file"] is None
    why = holdout["why"]
    assert why.startswith("no credible improvement: ")
    assert "the gain rests on 2 improved case(s), fewer than 3" in why
    assert "the 95% interval's lower end -0.0" in why.replace("−", "-")
    assert "exact paired p = 0.250 > 0.05" in why
    assert row["failed"] and all(f in why for f in row["failed"])
    assert (holdout["tolerance"], holdout["min_changed"]) == (0.05, 3)
    assert state["settings"]["credibility"] == 0.95


def test_the_rule_is_stated_and_settable(tmp_path: Path) -> None:
    """The settings are the rule: loosened (credibility 0.7, so the exact p = 0.25 passes at
    ≤ 0.3; tolerance 0.2; at least 2 improved cases), the same gain is recommended, and the
    session records the rule it was judged by."""
    lab = make_lab(tmp_path / "lab", improved=2)
    state = optimize(lab, "rule", Settings(credibility=0.7, tolerance=0.2,
                                           min_changed=2)).state
    assert state["holdout"]["verdict"] == "recommended", state["holdout"]["why"]
    assert "the gain rests on 2 improved case(s) (≥ 2)" in state["holdout"]["why"]
    assert state["settings"]["tolerance"] == 0.2 and state["settings"]["min_changed"] == 2


def test_a_gain_on_enough_changed_cases_is_recommended(tmp_path: Path) -> None:
    state = optimize(make_lab(tmp_path / "lab", improved=6), "rule", Settings()).state
    (row,) = state["holdout"]["subjects"]
    assert row["pairs"]["must"] == [1, 0, 6, 0]
    assert state["holdout"]["verdict"] == "recommended", state["holdout"]["why"]
    assert row["p_value"] == pytest.approx(2 ** -6) and row["failed"] == []
    assert row["improved"] == 6 and row["worsened"] == 0
