"""Ensembles in a run: members asked once per trial (their own line and the ensemble's share
the call), the ensemble's line combining what the members' lines say, refusals at planning."""

import json
from collections import Counter
from pathlib import Path

import pytest

import ix
from conftest import case, write
from ix.domain.errors import ConfigError
from ix.engine.plan import Overrides, build_plan
from ix.eval.models import EvalObservation, ToolCall
from ix.lab.loader import load_experiment

CASES = [{"id": f"must-{i}", "expectation": "must_trigger", "prompt": f"Do {i}"}
         for i in range(4)] + [{"id": f"not-{i}", "expectation": "should_not_trigger",
                                "prompt": f"Not {i}"} for i in range(4)]


class Counted:
    """A member whose every call is counted: fires on odd seeds."""

    name = "counted"

    def __init__(self) -> None:
        self.calls: Counter[tuple[str, int, int]] = Counter()

    async def invoke(self, subject, stimulus, *, seed=0, attempt=0):
        self.calls[(stimulus.id, seed, attempt)] += 1
        calls = (ToolCall(name="Skill", input={"skill": "target"}),) if seed % 2 else ()
        return EvalObservation(content="ok", tool_calls=calls, cost_usd=0.01)


def _lines(lab: Path) -> list[dict]:
    text = (lab / "team-exp" / "results" / "trials.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


@pytest.mark.parametrize("rule", ["majority", "any", "first"])
def test_each_member_is_asked_once_and_the_ensemble_combines_their_lines(tmp_path, rule):
    counted = Counted()
    outcome = ix.Experiment(
        "team-exp", cases=CASES, trials=3, lab=tmp_path,
        sensors=[{"kind": "activation", "skill": "target"}],
        subjects=[counted, {"name": "mocked", "runtime": {"kind": "mock", "default_rate": 0.5}},
                  {"name": "rand", "runtime": {"kind": "random"}},
                  {"name": "team", "ensemble": {"members": ["counted", "mocked", "rand"],
                                                "combine": rule}}]).run()
    assert outcome.status == "completed"
    assert set(counted.calls.values()) == {1} and len(counted.calls) == 8 * 3
    lines = _lines(tmp_path)
    own = {(r["subject"], r["probe_id"], r["trial"]): r["reading"]["passed"] for r in lines}
    teams = [r for r in lines if r["subject"] == "team"]
    assert len(teams) == 8 * 3
    for r in teams:
        meta = r["observation"]["meta"]["ensemble"]
        members = [own[(m["subject"], r["probe_id"], r["trial"])] for m in meta["members"]]
        assert [m["passed"] for m in meta["members"]] == members  # what their lines say
        want = {"majority": sum(members) >= 2, "any": any(members),
                "first": members[0]}[rule]
        assert r["reading"]["passed"] is want is meta["passed"]
        assert r["observation"]["cost_usd"] == 0 and meta["cost_usd"] > 0
    assert [s["name"] for s in outcome.summary["subjects"]] == ["counted", "mocked", "rand",
                                                                "team"]


def _lab(tmp_path: Path, team: str, extra_case: str = "") -> Path:
    d = write(tmp_path / "lab" / "e" / "experiment.yaml", f"""
        name: e
        sensor: {{kind: activation, skill: t}}
        subjects:
          - {{name: a, runtime: {{kind: mock, default_rate: 0.5}}}}
          - {{name: b, runtime: {{kind: random}}}}
          - {team}
        """).parent
    case(d, "must-1", "must_trigger", extra=extra_case)
    case(d, "not-1", "should_not_trigger")
    return d


@pytest.mark.parametrize("team,field,words", [
    ("{name: t, ensemble: {members: [a, c]}}", "subjects[2].ensemble.members[1]",
     "no subject 'c'"),
    ("{name: t, ensemble: {members: [a, t]}}", "subjects[2].ensemble.members[1]",
     "'t' is an ensemble"),
    ("{name: t, ensemble: {members: [a, a]}}", "subjects[2].ensemble.members",
     "listed twice"),
    ("{name: t, ensemble: {members: [a], combine: vote}}", "subjects[2].ensemble.combine",
     "'majority', 'any' or 'first'"),
])
def test_bad_members_are_refused_naming_the_file_and_field(tmp_path, team, field, words):
    d = _lab(tmp_path, team)
    with pytest.raises(ConfigError) as info:
        build_plan(load_experiment(d))
    errors = getattr(info.value, "errors", [info.value])
    assert any(e.field == field and words in e.message and str(e.file).endswith(
        "experiment.yaml") for e in errors), [e.render() for e in errors]


def test_a_member_left_out_by_subject_and_a_workspace_are_refused(tmp_path):
    d = _lab(tmp_path, "{name: t, ensemble: {members: [a, b]}}")
    with pytest.raises(ConfigError, match="add `--subject a`"):
        build_plan(load_experiment(d), Overrides(subjects=("t", "b")))
    write(d / "cases" / "must-1" / "files" / "data.csv", "x\n1\n")
    with pytest.raises(ConfigError, match="an ensemble combines answers") as info:
        build_plan(load_experiment(d))
    assert info.value.field == "subjects[2].ensemble"


def test_an_ensemble_with_its_own_runtime_is_refused(tmp_path):
    d = _lab(tmp_path, "{name: t, model: m, ensemble: {members: [a, b]}}")
    with pytest.raises(ConfigError, match="leave out its runtime, model") as info:
        load_experiment(d)
    assert info.value.field == "subjects[2]"
