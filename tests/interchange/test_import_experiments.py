"""What `ix import` makes of a new experiment, and `ix run` of it (issue 16, §8).

An imported experiment keeps the prompts its source has (Inspect samples carry them), the
run's order of subjects and its goal; one whose source has no prompts (jsonl, csv) is marked
`imported:` with `prompts: false`, and `ix run` refuses it (exit 2, naming it and why)
instead of sending placeholder prompts to the default runtime. The real `ix` in a subprocess
for an import's exit 0 and JSON (the Inspect import) and for `ix run`'s refusal (exit 2, one
line); the other imports and runs in process.
"""

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import ix_in_process, run_ix, tree_digest, write

# Not in alphabetical order: an import must not sort them.
SUBJECTS = ["zeta-control", "alpha-variant", "mid"]
CASES = {"must-001": "must_trigger", "must-002": "must_trigger", "must-003": "must_trigger",
         "not-001": "should_not_trigger", "not-002": "should_not_trigger"}
GOAL = {"hypothesis": "alpha-variant lowers recall", "metric": "recall",
        "compare": ["zeta-control", "alpha-variant"], "direction": "decrease",
        "min_effect": 0.05, "credibility": 0.95}


def prompt(case_id: str) -> str:
    return f"Please handle {case_id}: a prompt of its own"


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One completed mock run of three subjects with a goal, exported in every format (set-up
    for the imports under test: in process)."""
    root = tmp_path_factory.mktemp("import-exp")
    lab = root / "lab"
    rates = "{" + ", ".join(f"{c}: 0.5" for c in CASES) + "}"
    subjects = "".join(f"  - name: {s}\n    runtime: {{kind: mock, activation_rates: {rates}}}\n"
                       for s in SUBJECTS)
    write(lab / "transfer" / "experiment.yaml",
          "name: transfer\ntrials: 3\nsensor: {kind: activation, skill: a}\n"
          f"subjects:\n{subjects}" + yaml.safe_dump({"goal": GOAL}, sort_keys=False))
    for case_id, expectation in CASES.items():
        write(lab / "transfer" / "cases" / f"{case_id}.md",
              f"---\nexpectation: {expectation}\n---\n{prompt(case_id)}\n")
    r = ix_in_process("run", "--lab", str(lab), "--json")
    assert r.code in (0, 1), r.output
    run_id = json.loads(r.stdout)["run_id"]
    out = {"lab": lab, "run": run_id}
    for fmt, name in (("inspect", "logs"), ("jsonl", "run.jsonl"), ("csv", "run.csv")):
        r = ix_in_process("export", run_id, "--lab", str(lab), "--format", fmt,
                   "--out", str(root / name))
        assert r.code == 0, r.output
        out[fmt] = root / name
    return out


def imported(source: dict[str, Any], fmt: str, fresh: Path, *, real: bool = False) -> Path:
    """`ix import` of the source in `fmt` into the empty lab `fresh`: in process (what it makes
    is under test, or set-up for another command), or with `real` the real command."""
    fresh.mkdir()
    command = run_ix if real else ix_in_process
    r = command("import", str(source[fmt]), "--format", fmt, "--lab", str(fresh), "--json")
    assert r.code == 0, r.output
    return Path(json.loads(r.stdout)["experiment_dir"])


def config(experiment: Path) -> dict[str, Any]:
    return yaml.safe_load((experiment / "experiment.yaml").read_text(encoding="utf-8"))


def case_body(experiment: Path, case_id: str) -> str:
    return (experiment / "cases" / f"{case_id}.md").read_text(encoding="utf-8").split(
        "---\n", 2)[2].strip()


@pytest.mark.parametrize("fmt", ["inspect", "jsonl", "csv"])
def test_an_imported_experiment_keeps_the_runs_subject_order(source, tmp_path, fmt):
    """Inspect logs ix wrote record the run's order; a jsonl or csv file has none, so its
    subjects keep the order in which they first appear in the file (trials interleave by
    completion time, so that order is the file's, not the run's)."""
    experiment = imported(source, fmt, tmp_path / "fresh")
    expected = SUBJECTS if fmt == "inspect" else first_appearance(source[fmt], fmt)
    assert sorted(expected) == sorted(SUBJECTS)
    assert [s["name"] for s in config(experiment)["subjects"]] == expected
    summary = json.loads((experiment / "results" / "summary-latest.json").read_text())
    assert [s["name"] for s in summary["subjects"]] == expected


def first_appearance(path: Path, fmt: str) -> list[str]:
    if fmt == "csv":
        import csv

        with path.open(newline="", encoding="utf-8") as f:
            names = [row["subject"] for row in csv.DictReader(f)]
    else:
        names = [json.loads(line)["subject"] for line in path.read_text().splitlines()
                 if line.strip()]
    return list(dict.fromkeys(names))


def test_an_inspect_import_keeps_each_prompt_and_the_goal(source, tmp_path):
    experiment = imported(source, "inspect", tmp_path / "fresh", real=True)  # the real command
    spec = config(experiment)
    assert spec["imported"] == {"source": "logs", "format": "inspect", "prompts": True}
    assert spec["goal"] == GOAL
    assert {c: case_body(experiment, c) for c in CASES} == {c: prompt(c) for c in CASES}
    summary = json.loads((experiment / "results" / "summary-latest.json").read_text())
    assert summary["goal"]["hypothesis"] == GOAL["hypothesis"]
    assert summary["goal"]["verdict"] in ("supported", "refuted", "inconclusive")


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_an_import_without_prompts_is_marked_and_its_placeholders_differ(source, tmp_path,
                                                                          fmt):
    experiment = imported(source, fmt, tmp_path / "fresh")
    name = source[fmt].name
    assert config(experiment)["imported"] == {"source": name, "format": fmt, "prompts": False}
    bodies = [case_body(experiment, c) for c in CASES]
    assert len(set(bodies)) == len(CASES)
    assert all(name in body and "no prompt" in body for body in bodies)


@pytest.mark.parametrize("args", [(), ("transfer",), ("transfer", "--runtime", "mock"),
                                  ("--dry-run",)])
def test_ix_run_refuses_an_imported_experiment_without_prompts(source, tmp_path, args):
    experiment = imported(source, "jsonl", tmp_path / "fresh")
    lab = experiment.parent
    before = tree_digest(lab)
    # the real command once for the exit-2 contract (one line, nothing written); the other
    # ways to ask in process
    command = run_ix if args == () else ix_in_process
    r = command("run", "--lab", str(lab), *args)
    assert r.code == 2, r.output
    assert r.stderr.startswith("ix: error: ") and "Traceback" not in r.output
    assert "'transfer'" in r.stderr and "no prompts" in r.stderr
    assert "placeholders" in r.stderr
    assert tree_digest(lab) == before


def test_ix_run_refuses_an_imported_experiment_with_no_runtime_unless_one_is_given(
        source, tmp_path):
    experiment = imported(source, "inspect", tmp_path / "fresh")
    lab = experiment.parent
    before = tree_digest(lab)
    r = ix_in_process("run", "--lab", str(lab), "transfer")
    assert r.code == 2, r.output
    assert "'transfer'" in r.stderr and "no runtime" in r.stderr
    for subject in SUBJECTS:
        assert subject in r.stderr
    assert tree_digest(lab) == before
    # the prompts are real: with a runtime named, it runs (the mock needs no skills)
    r = ix_in_process("run", "--lab", str(lab), "transfer", "--runtime", "mock", "--json")
    assert r.code in (0, 1), r.output
    assert [s["name"] for s in json.loads(r.stdout)["subjects"]] == SUBJECTS


def test_an_imported_experiment_trips_no_design_check_of_ix_validate(source, tmp_path):
    experiment = imported(source, "jsonl", tmp_path / "fresh")
    r = ix_in_process("validate", "--lab", str(experiment.parent))
    assert r.code == 0, r.output
    assert "[" not in r.stderr.replace("[kind", ""), r.stderr  # no "[design-code]" warning
