"""Design checks end to end: `ix validate` and `ix run` warn before anything runs, `--strict`
refuses (exit 2, nothing written), and `ix validate --json` carries the warnings.

Each check of docs/experiments.md ("Design checks") is provoked once, from a design that is
clean otherwise; the clean design itself warns about nothing. Which check fires, and what its
line says, is logic, asked in process (`ix_in_process`); that the real command prints the
warnings, refuses with `--strict` and runs without it is checked on the real command
(`test_a_clean_design_warns_about_nothing`, `test_strict_refuses_with_nothing_written`,
`test_a_run_without_strict_warns_then_runs`).
"""

import json
from pathlib import Path

import pytest

from conftest import case, flat, ix_in_process, run_ix, tree_digest, write

CLEAN = """
name: exp
trials: 3
runtime: {kind: mock, default_rate: 0.5}
subjects:
  - name: control
  - name: variant
goal:
  hypothesis: the variant differs
  metric: f1
  direction: differ
"""


def lab_with(lab: Path, yaml: str = CLEAN, n_must: int = 10, n_not: int = 10,
             prompts: dict[str, str] | None = None) -> Path:
    exp = lab / "exp"
    write(exp / "experiment.yaml", yaml)
    for i in range(1, n_must + 1):
        case(exp, f"must-{i:03d}", "must_trigger", f"Summarise the sales file number {i}.")
    for i in range(1, n_not + 1):
        case(exp, f"not-{i:03d}", "should_not_trigger", f"Write a haiku about topic {i}.")
    case(exp, "edge-001", "acceptable", "Look at this file?")
    for case_id, prompt in (prompts or {}).items():
        expectation = "must_trigger" if case_id.startswith("must") else "should_not_trigger"
        case(exp, case_id, expectation, prompt)
    return exp


def warnings_of(lab: Path, *args: str, ix=ix_in_process) -> list[dict]:
    """`ix validate --json`'s warnings: which checks fire is logic, asked in process; that
    the real command carries them is checked once (`ix=run_ix`, the clean design)."""
    r = ix("validate", "--lab", str(lab), "--json", *args)
    assert r.code == 0, r.output
    [report] = json.loads(r.stdout)
    return report["warnings"]


def codes(lab: Path, *args: str) -> set[str]:
    return {w["code"] for w in warnings_of(lab, *args)}


def test_a_clean_design_warns_about_nothing(lab):
    lab_with(lab)
    r = run_ix("validate", "--lab", str(lab))
    assert r.code == 0 and "warning" not in r.stderr, r.output
    assert warnings_of(lab, ix=run_ix) == []
    strict = run_ix("validate", "--lab", str(lab), "--strict")
    assert strict.code == 0, strict.output


@pytest.mark.parametrize(("yaml", "n_must", "n_not", "prompts", "code", "field", "words"), [
    pytest.param(CLEAN, 4, 10, None, "too-few-cases", "cases",
                 ["4 must_trigger", "ix plan --width 0.55"], id="too-few-no-goal"),
    pytest.param(CLEAN.replace("direction: differ", "direction: differ\n  min_effect: 0.1")
                 .replace("metric: f1", "metric: recall"),
                 12, 12, None, "too-few-cases", "cases",
                 ["12 must_trigger", "twice min_effect", "at the worst-case rate 0.5",
                  "to settle with probability 0.8 by the one-sided t approximation",
                  "`ix plan exp`"], id="too-few-for-min-effect"),
    pytest.param(CLEAN.replace("trials: 3", "trials: 1"), 10, 10, None,
                 "one-trial-stochastic", "trials", ["control (mock)", "variant (mock)"],
                 id="one-trial-on-mock"),
    pytest.param(CLEAN.replace("trials: 3", "trials: 10"), 10, 10, None,
                 "even-trials-stochastic", "trials", ["control (mock)", "37.7%"],
                 id="even-trials-on-mock"),
    pytest.param(CLEAN, 10, 3, None, "unbalanced", "cases", ["10 must_trigger vs 3"],
                 id="unbalanced"),
    pytest.param(CLEAN.replace("metric: f1", "metric: recall"), 10, 0, None, "unbalanced",
                 "cases", ["no should_not_trigger"], id="no-near-misses"),
    pytest.param(CLEAN, 10, 10, {"not-011": "  summarise THE sales file\nnumber 3. "},
                 "duplicate-prompt", "cases", ["must-003", "not-011", "different expectations"],
                 id="duplicate-prompt"),
    pytest.param("name: exp\ntrials: 3\nruntime: {kind: lexical}\nsensor: {kind: activation, "
                 "skill: csv-summary}\nsubjects:\n  - name: a\n    skills: [other]\n"
                 "  - name: b\n    skills: [other]\n",
                 10, 10, None, "unseen-cases", "subjects[0].skills",
                 ["'csv-summary'", "can only fail"], id="skill-no-subject-has"),
    pytest.param(CLEAN.replace(", default_rate: 0.5", ""), 10, 10, None, "never-activates",
                 "runtime.default_rate",
                 ["subjects control, variant (mock) never call the skill",
                  "recall is 0 by construction"], id="mock-at-rate-0"),
])
def test_each_check_warns_on_validate_and_run(lab, yaml, n_must, n_not, prompts, code,
                                              field, words):
    if "lexical" in yaml:
        write(lab / "skills" / "other" / "SKILL.md",
              "---\nname: other\ndescription: Writes haiku poems.\n---\nBody\n")
        # in the lab (a skill that is nowhere is an error), but given to no subject
        write(lab / "skills" / "csv-summary" / "SKILL.md",
              "---\nname: csv-summary\ndescription: Summarise CSV files.\n---\nBody\n")
    lab_with(lab, yaml, n_must, n_not, prompts)
    found = [w for w in warnings_of(lab) if w["code"] == code]
    assert len(found) == 1, warnings_of(lab)
    assert found[0]["field"] == field
    for word in words:
        assert word in found[0]["message"], found[0]["message"]

    text = ix_in_process("validate", "--lab", str(lab))
    assert text.code == 0
    line = next(x for x in flat(text.stderr).splitlines() if f"[{code}]" in x)
    assert line.startswith("ix: warning: ") and "exp/experiment.yaml" in line
    assert f": {field}: " in line

    ran = ix_in_process("run", "--lab", str(lab), "--json")
    assert ran.code in (0, 1) and "Traceback" not in ran.output, ran.output
    assert f"[{code}]" in ran.stderr


def test_runtime_mock_on_the_command_line_warns_that_it_never_fires(lab):
    """`--runtime mock` takes no options: its default rate 0 makes recall 0, said before
    the run (issue 33)."""
    write(lab / "skills" / "csv-summary" / "SKILL.md",
          "---\nname: csv-summary\ndescription: Summarise CSV files.\n---\nBody\n")
    lab_with(lab, "name: exp\ntrials: 3\nruntime: {kind: lexical}\nsensor: {kind: activation,"
             " skill: csv-summary}\nsubjects:\n  - name: a\n    skills: [csv-summary]\n"
             "  - name: b\n    skills: [csv-summary]\n")
    assert "never-activates" not in codes(lab)
    r = ix_in_process("run", "--lab", str(lab), "--runtime", "mock", "--json")
    assert r.code in (0, 1), r.output
    [line] = [x for x in flat(r.stderr).splitlines() if "[never-activates]" in x]
    assert line.startswith("ix: warning: ") and "exp/experiment.yaml: --runtime: " in line
    assert "subjects a, b (mock) never call the skill" in line


def test_a_subject_given_no_skills_never_activates(lab):
    """On a runtime that reads skills, a subject with none can never call the skill under
    test, while another subject has it (else `unseen-cases`)."""
    write(lab / "skills" / "csv-summary" / "SKILL.md",
          "---\nname: csv-summary\ndescription: Summarise CSV files.\n---\nBody\n")
    lab_with(lab, "name: exp\ntrials: 3\nruntime: {kind: lexical}\nsensor: {kind: activation,"
             " skill: csv-summary}\nsubjects:\n  - name: a\n    skills: [csv-summary]\n"
             "  - name: b\n")
    r = ix_in_process("validate", "--lab", str(lab))
    assert r.code == 0, r.output
    [line] = [x for x in flat(r.stderr).splitlines() if "[never-activates]" in x]
    assert line.startswith("ix: warning: ") and "exp/experiment.yaml: subjects[1].skills: " \
        in line and "subject b (lexical) is given no skills" in line


@pytest.mark.parametrize("sensor", [
    "sensor: {kind: activation, skill: csv-summary}",
    "sensors:\n  - {kind: activation, skill: csv-summary}",
    "sensors:\n  - {kind: activation, skill: csv-summary}\n  - {kind: turns, max: 3}",
], ids=["sensor", "sensors", "sensors-two"])
def test_sensor_and_sensors_are_one_spelling(lab, sensor):
    """The activation sensor under `sensors:` looks for its own skill, as under `sensor:`:
    no false `unseen-cases` for subjects named otherwise (issue 33)."""
    write(lab / "skills" / "csv-summary" / "SKILL.md",
          "---\nname: csv-summary\ndescription: Summarise CSV files.\n---\nBody\n")
    lab_with(lab, f"name: exp\ntrials: 3\nruntime: {{kind: lexical}}\n{sensor}\n"
             "subjects:\n  - name: a-only\n    skills: [csv-summary]\n"
             "  - name: a-too\n    skills: [csv-summary]\n")
    r = ix_in_process("validate", "--lab", str(lab))
    assert r.code == 0 and "warning" not in r.stderr, r.output


def test_strict_refuses_with_nothing_written(lab):
    exp = lab_with(lab, n_must=4)
    before = tree_digest(lab)
    v = run_ix("validate", "--lab", str(lab), "--strict")
    assert v.code == 2 and "Traceback" not in v.output
    assert "ix: error:" in v.stderr and "[too-few-cases]" in v.stderr
    r = run_ix("run", "--lab", str(lab), "--strict")
    assert r.code == 2 and "Traceback" not in r.output
    last = flat(r.stderr).splitlines()[-1]
    assert last.startswith("ix: error:") and "--strict" in last and "experiment.yaml" in last
    assert tree_digest(lab) == before and not (exp / "results").exists()
    j = run_ix("validate", "--lab", str(lab), "--strict", "--json")
    [report] = json.loads(j.stdout)
    assert j.code == 2 and report["ok"] is False and "--strict" in report["error"]
    assert [w["code"] for w in report["warnings"]] == ["too-few-cases"]


def test_a_run_without_strict_warns_then_runs(lab):
    exp = lab_with(lab, n_must=4)
    r = run_ix("run", "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    assert "[too-few-cases]" in r.stderr and json.loads(r.stdout)["run_id"]
    # one experiment: its warnings in full (`file: field: message [code]`), not a count
    assert "experiment.yaml: cases: 4" in flat(r.stderr) and "design warning" not in r.stderr
    assert (exp / "results" / "trials.jsonl").is_file()


def test_subject_and_filter_choices_are_checked_as_run(lab):
    """`--subject` leaving the goal without its control, and `--filter` leaving no
    should_not_trigger case, are warned about for that run."""
    lab_with(lab)
    r = ix_in_process("run", "--lab", str(lab), "--subject", "variant", "--json")
    assert "[no-control]" in r.stderr and "goal.compare" in r.stderr, r.output
    r = ix_in_process("run", "--lab", str(lab), "--filter", "expectation:must_trigger",
                      "--strict")
    assert r.code == 2 and "after --filter" in r.stderr, r.output


def test_smoke_is_checked_as_the_full_run(lab):
    """`--smoke` runs one trial of a few cases, but the warnings are those of the full run:
    no "one trial" nor "too few cases" for the smoke run's own choices."""
    lab_with(lab)
    r = ix_in_process("run", "--lab", str(lab), "--smoke", "--strict", "--json")
    assert r.code == 0, r.output
    assert "warning" not in r.stderr


def test_a_deterministic_runtime_may_run_one_trial(lab):
    lab_with(lab, CLEAN.replace("trials: 3", "trials: 1")
             .replace("default_rate: 0.5", "default_rate: 1.0"))
    assert "one-trial-stochastic" not in codes(lab)
    assert "one-trial-stochastic" in codes(lab, "--runtime", "random")
