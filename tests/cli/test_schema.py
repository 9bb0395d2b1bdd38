"""Stable JSON: real outputs of `ix` validate against the schemas `ix schema` prints.

Every `--json` output, the trial line and the summary file are checked against the JSON
Schemas generated from the pydantic models (`ix.api.schemas`), which forbid unknown keys: a
field added, renamed or dropped on either side breaks a test here (docs/json.md says how to
version such a change). The outputs are asked in process (`ix_in_process`: the same `main`);
a sample goes through the real command too, which prints the same (`REAL`), and `ix schema`'s
own contract (output, exit 2 on an unknown name) is the real command's.
"""

import json
import shutil
from pathlib import Path

import pytest

from conftest import case, flat, ix_in_process, run_ix, write
from ix.api.schemas import SCHEMA_VERSION, SCHEMAS, json_schema

jsonschema = pytest.importorskip("jsonschema")


def check(name: str, data: object) -> None:
    validator = jsonschema.Draft202012Validator(json_schema(name))
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    shown = "\n".join(f"  at {list(e.absolute_path)}: {e.message[:300]}" for e in errors[:10])
    assert not errors, f"{len(errors)} error(s) against schema {name!r}:\n{shown}"


def ok_json(*args: str, cwd: Path | None = None) -> object:
    r = ix_in_process(*args, cwd=cwd)
    assert r.code == 0, r.output
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> dict:
    """A lab with two runs of a two-subject experiment (errors, several sensors, a goal,
    tags and difficulty), a tag and an annotation."""
    lab = tmp_path_factory.mktemp("schema") / "lab"
    exp = lab / "exp"
    write(exp / "experiment.yaml", """
        name: exp
        trials: 3
        runtime: {kind: mock, default_rate: 0.6, error_rates: {must-002: 0.5}}
        sensors: [activation, {kind: latency, max_ms: 60000}]
        subjects:
          - name: control
          - name: variant
            runtime: {kind: mock, default_rate: 0.8}
        goal:
          hypothesis: the variant activates more
          metric: recall
          direction: increase
          min_effect: 0.05
    """)
    for i in range(1, 5):
        case(exp, f"must-{i:03d}", "must_trigger", f"Please summarise file {i}.",
             extra="tags: [csv]\ndifficulty: easy\n")
        case(exp, f"not-{i:03d}", "should_not_trigger", f"Unrelated question {i}.")
    case(exp, "edge-001", "acceptable", "Maybe?")
    runs = [ok_json("run", "--lab", str(lab), "exp", "--json", "--seed", str(seed))
            for seed in (0, 1)]
    ids = [r["run_id"] for r in runs]  # type: ignore[index]
    assert ix_in_process("tag", ids[0], "base", "--lab", str(lab)).code == 0
    assert ix_in_process("annotate", ids[0], "must-001", "looked at it",
                         "--lab", str(lab)).code == 0
    return {"lab": lab, "exp": exp, "runs": runs, "ids": ids}


def test_run_json_is_a_summary(made):
    for summary in made["runs"]:
        check("run", summary)
        check("summary", summary)
        assert summary["schema_version"] == SCHEMA_VERSION


def test_every_trial_line_and_summary_file(made):
    results = made["exp"] / "results"
    lines = [json.loads(x) for x in (results / "trials.jsonl").read_text().splitlines()]
    assert any(t["error"] for t in lines) and any(t.get("readings") for t in lines)
    for line in lines:
        check("trial", line)
    stamped = list(results.glob("summary-*Z.json"))  # two runs in one second share a name
    per_run = list(results.glob("runs/*/summary.json"))
    assert len(per_run) == 2 and 1 <= len(stamped) <= 2
    files = [results / "summary-latest.json", *stamped, *per_run]
    for f in files:
        check("summary", json.loads(f.read_text()))


def test_validate_ls_and_dry_run(made):
    lab = made["lab"]
    broken = lab / "broken"
    write(broken / "experiment.yaml", "name: broken\nruntime: mock\ntrials: 2\nbogus: 1\n")
    case(broken, "must-001", "must_trigger")
    try:
        r = ix_in_process("validate", "--lab", str(lab), "--json")
        assert r.code == 2, r.output
        reports = json.loads(r.stdout)
        check("validate", reports)
        assert {x["ok"] for x in reports} == {True, False}
        strict = ix_in_process("validate", "--lab", str(lab), "exp", "--json", "--strict")
        assert strict.code == 2
        check("validate", json.loads(strict.stdout))
        check("ls", ok_json("ls", "--lab", str(lab), "--json"))
    finally:
        shutil.rmtree(broken)
    check("run-dry-run", ok_json("run", "--lab", str(lab), "--dry-run", "--json"))


def test_compare_report_and_leaderboard(made):
    lab, (a, b) = made["lab"], made["ids"]
    check("compare", ok_json("compare", a, b, "--lab", str(lab), "--json"))
    report = ok_json("report", b, "--lab", str(lab), "--format", "json", "--baseline", "base")
    check("report", report)
    assert report["baseline"] and report["annotations"] == []  # type: ignore[index]
    check("report", ok_json("report", a, "--lab", str(lab), "--format", "json"))
    check("leaderboard", ok_json("leaderboard", "--lab", str(lab), "--json"))


def test_results_rows_and_aggregates(made):
    lab = str(made["lab"])
    rows = ok_json("results", "--lab", lab, "--json")
    assert rows
    check("results", rows)
    check("results", ok_json("results", "--lab", lab, "--json", "--group-by", "subject",
                             "--group-by", "tag", "--correlation"))
    check("results", ok_json("results", "--lab", lab, "--json", "--stats"))
    check("query", ok_json("query", "SELECT subject, count(*) AS n FROM trials GROUP BY 1",
                           "--lab", lab, "--json"))


def test_plan_tags_annotations_and_the_rest(made, tmp_path):
    lab, (a, _) = str(made["lab"]), made["ids"]
    check("plan", ok_json("plan", "--width", "0.2", "--mde", "0.1", "--json"))
    check("plan", ok_json("plan", "exp", "--lab", lab, "--json"))
    check("tag", ok_json("tag", "--lab", lab, "--json"))
    check("annotate", ok_json("annotate", a, "--list", "--lab", lab, "--json"))
    check("cache-stats", ok_json("cache", "stats", "--lab", lab, "--json"))
    check("subjects-list", ok_json("subjects", "list", "--json"))
    check("export", ok_json("export", a, "--format", "jsonl", "--out",
                            str(tmp_path / "a.jsonl"), "--lab", lab, "--json"))
    new_lab = tmp_path / "fresh"
    new_lab.mkdir()
    check("new", ok_json("new", "x", "--lab", str(new_lab), "--runtime", "mock", "--json"))
    # before its first run, an experiment is planned from its design (`from_design`, 1.2)
    planned = ok_json("plan", "x", "--lab", str(new_lab), "--width", "0.2", "--json")
    assert "from_design" in planned
    check("plan", planned)


def test_a_drifted_output_fails_its_schema(made):
    """The self-test of the above: an extra key, a missing one or a wrong type is caught."""
    summary = json.loads(json.dumps(made["runs"][0]))
    summary["new_field"] = 1
    with pytest.raises(AssertionError, match="new_field"):
        check("summary", summary)
    line = json.loads((made["exp"] / "results" / "trials.jsonl").read_text().splitlines()[0])
    del line["seed"]
    with pytest.raises(AssertionError, match="seed"):
        check("trial", line)
    line = json.loads((made["exp"] / "results" / "trials.jsonl").read_text().splitlines()[0])
    line["trial"] = "0"
    with pytest.raises(AssertionError):
        check("trial", line)


def test_ix_schema_prints_and_lists_the_schemas():
    listed = ok_json("schema", "--list", "--json")
    assert listed["schema_version"] == SCHEMA_VERSION  # type: ignore[index]
    names = [s["name"] for s in listed["schemas"]]  # type: ignore[index]
    assert names == list(SCHEMAS)
    assert {"trial", "summary", "run", "validate", "ls", "compare", "report",
            "results"} <= set(names)
    one = ok_json("schema", "summary")
    assert one == json_schema("summary")
    assert one["schema_version"] == SCHEMA_VERSION  # type: ignore[index]
    jsonschema.Draft202012Validator.check_schema(one)
    everything = ok_json("schema")
    assert set(everything["schemas"]) == set(SCHEMAS)  # type: ignore[index]
    for schema in everything["schemas"].values():  # type: ignore[index]
        jsonschema.Draft202012Validator.check_schema(schema)
    text = ix_in_process("schema", "--list")
    assert text.code == 0 and "summary" in text.stdout


#: The real command on a sample of the above: its stdout is the JSON `main` prints in process.
REAL = {"ls": ["ls", "--lab", "{lab}", "--json"],
        "report": ["report", "{b}", "--lab", "{lab}", "--format", "json", "--baseline", "base"],
        "results": ["results", "--lab", "{lab}", "--json", "--stats"],
        "schema": ["schema", "summary"], "schema --list": ["schema", "--list"]}


@pytest.mark.parametrize("label", REAL)
def test_the_real_command_prints_what_main_prints_in_process(made, label):
    args = [a.format(lab=made["lab"], b=made["ids"][1]) for a in REAL[label]]
    real = run_ix(*args)
    assert real.code == 0 and real.stdout.strip(), real.output
    assert ix_in_process(*args) == real


def test_an_unknown_schema_is_one_line_exit_2():
    r = run_ix("schema", "nosuch")
    assert r.code == 2 and "Traceback" not in r.output
    lines = flat(r.stderr).splitlines()
    assert len(lines) == 1 and "nosuch" in lines[0] and "summary" in lines[0]
