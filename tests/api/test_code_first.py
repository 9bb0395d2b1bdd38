"""`ix.Experiment`: an experiment built in Python writes and runs exactly what YAML would."""

import asyncio
import json
import os
import shutil
from pathlib import Path

import pytest

import ix
from conftest import ix_in_process, run_ix, tree_digest, write
from ix.domain.errors import ConfigError
from ix.domain.types import Reading
from ix.eval.models import EvalCase, EvalObservation

CASES = [
    {"id": "must-001", "expectation": "must_trigger", "prompt": "Summarise sales.csv",
     "tags": ["csv"], "difficulty": "easy"},
    {"id": "must-002", "expectation": "must_trigger", "prompt": "Profile q3.tsv"},
    {"id": "not-001", "expectation": "should_not_trigger", "prompt": "Write a haiku",
     "rationale": "Not about data."},
]
RUNTIME = {"kind": "mock", "activation_rates": {"must-001": 0.9, "must-002": 0.4,
                                                "not-001": 0.1}}
#: What differs between two runs of one experiment: when, how long, under which run id.
VARYING = {"run_id", "started_at", "duration_ms"}


def _records(trials: Path) -> list[dict]:
    lines = [json.loads(x) for x in trials.read_text().splitlines()]
    for line in lines:
        for key in VARYING:
            line.pop(key, None)
        (line.get("observation") or {}).pop("duration_ms", None)
    return sorted(lines, key=lambda x: (x["subject"], x["probe_id"], x["trial"]))


def test_the_same_experiment_in_yaml_and_in_python_gives_the_same_records(tmp_path: Path):
    yaml_lab = tmp_path / "yaml-lab"
    write(yaml_lab / "exp" / "experiment.yaml", """
        name: exp
        skill: target
        runtime:
          kind: mock
          activation_rates: {must-001: 0.9, must-002: 0.4, not-001: 0.1}
        trials: 7
        seed: 11
        """)
    write(yaml_lab / "exp" / "cases" / "must-001.md", "---\nexpectation: must_trigger\n"
          "tags: [csv]\ndifficulty: easy\n---\nSummarise sales.csv\n")
    write(yaml_lab / "exp" / "cases" / "must-002.md",
          "---\nexpectation: must_trigger\n---\nProfile q3.tsv\n")
    write(yaml_lab / "exp" / "cases" / "not-001.md", "---\nexpectation: should_not_trigger\n"
          "rationale: Not about data.\n---\nWrite a haiku\n")
    r = ix_in_process("run", "exp", "--lab", str(yaml_lab), "--json")  # the YAML run, compared
    assert r.code == 0, r.output

    code_lab = tmp_path / "code-lab"
    outcome = ix.Experiment("exp", cases=CASES, runtime=RUNTIME, skill="target", trials=7,
                            seed=11, lab=code_lab).run()
    assert outcome.status == "completed"
    assert _records(code_lab / "exp" / "results" / "trials.jsonl") == _records(
        yaml_lab / "exp" / "results" / "trials.jsonl")
    assert outcome.summary["metrics"] == json.loads(r.stdout)["metrics"]
    # the folder it wrote is an experiment `ix run` runs as it is
    again = ix_in_process("run", "exp", "--lab", str(code_lab), "--json")
    assert again.code == 0, again.output
    assert json.loads(again.stdout)["metrics"] == outcome.summary["metrics"]


class Greeter:
    """A user runtime: says hello to greetings."""

    async def invoke(self, subject, stimulus, *, seed=0, attempt=0):
        text = "hello there" if "greet" in stimulus.prompt else "no"
        return EvalObservation(content=text)


class SaysHello:
    name = "says_hello"

    def sense(self, interaction):
        passed = "hello" in interaction.observation.content
        return [Reading(sensor_name=self.name, passed=passed, score=float(passed))]


class Generated:
    """A user probe: the cases come from code."""

    def generate(self):
        yield EvalCase(id="must-greet", prompt="greet me", expectation="must_trigger")
        yield {"id": "not-sum", "expectation": "should_not_trigger", "prompt": "sum 2 and 2"}


def test_user_objects_run_in_memory_and_the_folder_says_what_they_were() -> None:
    outcome = ix.Experiment("greeter", probe=Generated(), subjects=[{"name": "v1"}],
                            runtime=Greeter(), sensors=[SaysHello()], trials=3).run()
    assert outcome.status == "completed"
    assert outcome.summary["metrics"]["f1"] == 1.0
    rate = outcome.results.activation_rate()
    assert (rate.passed, rate.valid) == (3, 6)
    config = (outcome.folder / "experiment.yaml").read_text()
    assert "kind: python" in config and f"object: {__name__}:Greeter" in config
    assert f"object: {__name__}:SaysHello" in config
    assert sorted(p.name for p in (outcome.folder / "cases").iterdir()) == [
        "must-greet.md", "not-sum.md"]
    # only this program can run it: `ix run` on the folder says so, exit 2
    r = run_ix("run", "greeter", "--lab", str(outcome.folder.parent))
    assert r.code == 2 and "exists only in the program" in r.stderr, r.output
    assert "Traceback" not in r.stderr


class Silent:
    """A second user runtime: never greets."""

    name = "silent"

    async def invoke(self, subject, stimulus, *, seed=0, attempt=0):
        return EvalObservation(content="...")


def test_runtime_objects_as_subjects_are_compared_like_any_subjects(tmp_path: Path) -> None:
    outcome = ix.Experiment("two", probe=Generated(), subjects=[Greeter(), Silent()],
                            sensors=[SaysHello()], trials=2, lab=tmp_path).run()
    assert [s["name"] for s in outcome.summary["subjects"]] == ["Greeter", "silent"]
    assert [s["metrics"]["tp"] for s in outcome.summary["subjects"]] == [1, 0]
    (comparison,) = outcome.summary["comparisons"]
    assert comparison["variant"] == "silent"


def test_arun_runs_on_the_callers_loop(tmp_path: Path) -> None:
    async def main():
        exp = ix.Experiment("g", cases=CASES, runtime=RUNTIME, skill="target", trials=2,
                            lab=tmp_path)
        return await exp.arun()

    outcome = asyncio.run(main())
    assert outcome.status == "completed" and len(outcome.results.rows()) == 6


def test_a_folder_it_did_not_write_is_never_overwritten(tmp_path: Path) -> None:
    write(tmp_path / "exp" / "experiment.yaml", "name: exp\nruntime: mock\n")
    write(tmp_path / "exp" / "cases" / "a.md", "---\nexpectation: must_trigger\n---\nHi\n")
    before = tree_digest(tmp_path)
    with pytest.raises(ConfigError, match="did not write"):
        ix.Experiment("exp", cases=CASES, runtime=RUNTIME, lab=tmp_path).run()
    assert tree_digest(tmp_path) == before


def test_rewriting_drops_cases_no_longer_given(tmp_path: Path) -> None:
    ix.Experiment("exp", cases=CASES, runtime=RUNTIME, lab=tmp_path).write()
    ix.Experiment("exp", cases=CASES[:2], runtime=RUNTIME, lab=tmp_path).write()
    assert sorted(p.name for p in (tmp_path / "exp" / "cases").iterdir()) == [
        "must-001.md", "must-002.md"]


def test_a_folder_without_experiment_yaml_is_never_overwritten(tmp_path: Path) -> None:
    write(tmp_path / "exp" / "cases" / "notes.md", "my notes, not a case\n")
    before = tree_digest(tmp_path)
    with pytest.raises(ConfigError, match="did not write") as caught:
        ix.Experiment("exp", cases=CASES, runtime=RUNTIME, lab=tmp_path).run()
    assert (caught.value.file, caught.value.field) == (str(tmp_path / "exp"), "name")
    assert tree_digest(tmp_path) == before


def test_a_rewrite_removes_only_the_case_files_it_wrote(tmp_path: Path) -> None:
    ix.Experiment("exp", cases=CASES, runtime=RUNTIME, lab=tmp_path).write()
    cases = tmp_path / "exp" / "cases"
    write(cases / "mine.md", "---\nexpectation: must_trigger\n---\nAdded by hand\n")
    write(cases / "README.txt", "notes\n")
    ix.Experiment("exp", cases=CASES[:2], runtime=RUNTIME, lab=tmp_path).write()
    assert sorted(p.name for p in cases.iterdir()) == [
        "README.txt", "mine.md", "must-001.md", "must-002.md"]
    assert (cases / "mine.md").read_text() == "---\nexpectation: must_trigger\n---\nAdded by hand\n"
    # a case given again is rewritten as the program says, atomically (no temporary left)
    ix.Experiment("exp", cases=[{**CASES[0], "prompt": "Summarise q4.csv"}], runtime=RUNTIME,
                  lab=tmp_path).write()
    assert sorted(p.name for p in cases.iterdir()) == ["README.txt", "mine.md", "must-001.md"]
    assert (cases / "must-001.md").read_text().endswith("---\nSummarise q4.csv\n")


def _links(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): os.readlink(p) for p in root.rglob("*") if p.is_symlink()}


@pytest.mark.parametrize(("link", "field"), [
    ("", "name"),                            # the experiment's folder
    ("experiment.yaml", "name"),
    ("cases", "cases"),
    ("cases/must-001.md", "cases[0].id"),
])
def test_nothing_is_written_through_a_symlink(tmp_path: Path, link: str, field: str) -> None:
    lab, outside = tmp_path / "lab", tmp_path / "outside"
    for root in (lab, outside):  # a folder ix.Experiment wrote, and its twin elsewhere
        ix.Experiment("exp", cases=CASES, runtime=RUNTIME, lab=root).write()
    write(outside / "exp" / "cases" / "notes.md", "someone's notes\n")
    here, there = lab / "exp" / link, outside / "exp" / link
    shutil.rmtree(here) if here.is_dir() else here.unlink()
    here.symlink_to(there, target_is_directory=there.is_dir())
    before = tree_digest(tmp_path), _links(tmp_path)
    with pytest.raises(ConfigError, match="symbolic link") as caught:
        ix.Experiment("exp", cases=CASES[:2], runtime=RUNTIME, lab=lab).run()
    assert (caught.value.file, caught.value.field) == (str(here), field)
    assert (tree_digest(tmp_path), _links(tmp_path)) == before


@pytest.mark.parametrize(("kwargs", "field"), [
    ({}, "cases"),
    ({"cases": [{"id": "a", "expectation": "must_trigger"}]}, "cases[0].prompt"),
    ({"cases": CASES, "probe": Generated()}, "probe"),
    ({"cases": CASES, "runtime": object()}, "runtime"),
    ({"cases": [*CASES, CASES[0]]}, "cases[3].id"),
])
def test_bad_arguments_name_the_argument(tmp_path: Path, kwargs: dict, field: str) -> None:
    with pytest.raises(ConfigError) as caught:
        ix.Experiment("exp", lab=tmp_path, **kwargs).write()
    assert caught.value.field == field
    assert not (tmp_path / "exp").exists()
