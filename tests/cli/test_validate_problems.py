"""`ix validate` catches typos before they cost a run (issue 16, §2 and §1's last item).

Every problem of the lab at once, each `file: field: message`; did-you-mean for keys, kinds,
skills, values; a `.txt` case reported; which runtime each subject uses and whether its
credentials are set; `ix new --skill` refusing an unknown skill unless `--allow-missing`.
Single-problem labs live in `tests/bad_inputs/` (skill-shorthand-typo, sensor-skill-typo,
subject-skill-typo, case-txt-file, *-typo, unknown-key-did-you-mean).
What is refused and said is asked in process (`ix_in_process`, the same `main`); the real `ix`
keeps the contract: every problem on stderr, nothing on stdout, exit 2 (`validate`); one line
and exit 2 (`run`, `new`).
"""

import json
import re
import shutil
from pathlib import Path

from conftest import REPO, case, flat, ix_in_process, run_ix, tree_digest, write

NO_KEY = {"ANTHROPIC_API_KEY": "", "ANTHROPIC_AUTH_TOKEN": "", "OPENAI_API_KEY": ""}


def skill(lab: Path, name: str, description: str) -> None:
    write(lab / "skills" / name / "SKILL.md",
          f"---\nname: {name}\ndescription: {description}\n---\nBody\n")


def cases(exp: Path, n: int = 2) -> None:
    for i in range(1, n + 1):
        case(exp, f"must-{i:03d}", "must_trigger", f"Make a spreadsheet of sales, take {i}")
        case(exp, f"not-{i:03d}", "should_not_trigger", f"Write a haiku, take {i}")


def many_problems(lab: Path) -> None:
    """Two experiments, seven problems between them, in four files."""
    skill(lab, "xlsx", "Create and edit Excel spreadsheets.")
    skill(lab, "pdf", "Read and merge PDF files.")
    one = lab / "one"
    write(one / "experiment.yaml", """
        name: one
        skill: xlsxx
        runtime: lexical
        trails: 3
        sensor: {kind: activaton}
        """)
    cases(one)
    case(one, "must-003", "must_triger", "Put these numbers in a workbook")
    write(one / "cases" / "must-004.txt", "---\nexpectation: must_trigger\n---\nA sheet\n")
    two = lab / "two"
    write(two / "experiment.yaml", """
        name: two
        runtime: lexical
        sensor: {kind: activation, skill: xslx}
        subjects:
          - name: a
            skills: [xlsx, pfd]
          - name: b
            runtime: {kind: mok}
        """)
    cases(two)


EXPECTED = [  # (file under the lab, field, words)
    ("one/experiment.yaml", "skill", ["'xlsxx' not found", "did you mean 'xlsx'?"]),
    ("one/experiment.yaml", "trails", ["unknown key", "did you mean 'trials'?"]),
    ("one/experiment.yaml", "sensor.kind", ["did you mean 'activation'?", "llm_judge"]),
    ("one/cases/must-003.md", "expectation", ["did you mean 'must_trigger'?"]),
    ("one/cases/must-004.txt", "extension", ["not a case file", "must-004.md"]),
    ("two/experiment.yaml", "subjects[0].skills[1]", ["'pfd' not found",
                                                      "did you mean 'pdf'?"]),
    ("two/experiment.yaml", "sensor.skill", ["did you mean 'xlsx'?"]),
    ("two/experiment.yaml", "subjects[1].runtime", ["did you mean 'mock'?"]),
]


def test_validate_reports_every_problem_of_the_lab_at_once(lab):
    many_problems(lab)
    before = tree_digest(lab)
    r = run_ix("validate", "--lab", str(lab), env={"COLUMNS": "80"})
    assert r.code == 2, r.output
    assert "Traceback" not in r.output and r.stdout == ""
    lines = flat(r.stderr).splitlines()  # each problem a message, wrapped to the width
    assert all(line.startswith("ix: error: ") for line in lines), r.stderr
    for file, field, words in EXPECTED:
        found = [x for x in lines if x.startswith(f"ix: error: {lab / file}: {field}: ")]
        assert len(found) == 1, (file, field, r.stderr)
        for word in words:
            assert word in found[0], (word, found[0])
    assert len(lines) == len(EXPECTED), r.stderr
    assert tree_digest(lab) == before

    js = ix_in_process("validate", "--lab", str(lab), "--json")
    assert js.code == 2
    reports = {r["experiment"]: r for r in json.loads(js.stdout)}
    assert not reports["one"]["ok"] and not reports["two"]["ok"]
    assert len(reports["one"]["errors"]) == 5 and len(reports["two"]["errors"]) == 3
    assert reports["one"]["error"] == reports["one"]["errors"][0]


def test_run_stops_at_the_first_problem_and_says_how_many_more(lab):
    many_problems(lab)
    before = tree_digest(lab)
    r = run_ix("run", "--lab", str(lab), "one")
    assert r.code == 2 and "Traceback" not in r.output
    [line] = flat(r.stderr).splitlines()
    assert line.startswith("ix: error: ")
    assert re.search(r"\(and [34] more problems: `ix validate` lists them all\)$", line), line
    assert tree_digest(lab) == before


def test_a_skill_typo_on_the_default_runtime_is_an_error_before_any_trial(lab):
    """The observed case: no runtime set (claude-code), no key, `skill:` misspelled; every
    trial used to error `no_skills` in a run that ended `completed`, exit 0."""
    skill(lab, "xlsx", "Create and edit Excel spreadsheets.")
    exp = lab / "exp"
    write(exp / "experiment.yaml", "name: exp\nskill: xslx\ntrials: 3\n")
    cases(exp)
    v = ix_in_process("validate", "--lab", str(lab), env=NO_KEY)
    assert v.code == 2
    assert (f"ix: error: {exp / 'experiment.yaml'}: skill: skill 'xslx' not found"
            in v.stderr), v.stderr
    assert "did you mean 'xlsx'?" in v.stderr
    r = ix_in_process("run", "--lab", str(lab), env=NO_KEY)
    assert r.code == 2 and "did you mean 'xlsx'?" in r.stderr
    assert not (exp / "results").exists()


def test_a_skill_that_exists_but_is_not_given_to_a_mock_subject_is_only_a_label(lab):
    """mock fakes the Skill call: its skill under test needs no folder (tests and demos)."""
    exp = lab / "exp"
    write(exp / "experiment.yaml", "name: exp\nskill: anything\ntrials: 3\n"
                                   "runtime: {kind: mock, default_rate: 0.5}\n")
    cases(exp)
    assert ix_in_process("validate", "--lab", str(lab)).code == 0


def test_validate_says_each_subjects_runtime_and_whether_its_credentials_are_set(lab):
    skill(lab, "xlsx", "Create and edit Excel spreadsheets.")
    write(lab / "ix.yaml", "runtime: lexical\n")
    exp = lab / "exp"
    write(exp / "experiment.yaml", """
        name: exp
        trials: 3
        sensor: {kind: activation, skill: xlsx}
        subjects:
          - name: offline
            skills: [xlsx]
          - name: api
            skills: [xlsx]
            runtime: {kind: anthropic, model: claude-sonnet-4-5, api_key_env: IX_TEST_KEY_B}
        """)
    cases(exp, 5)
    r = ix_in_process("validate", "--lab", str(lab), env={"COLUMNS": "80"})
    assert r.code == 0, r.output
    assert "  offline: runtime lexical (ix.yaml), no credentials needed" in r.stdout
    words = " ".join(r.stdout.split())  # wrapped at 80 columns, never inside a name
    assert ("api: runtime anthropic (experiment.yaml subjects[1].runtime), IX_TEST_KEY_B "
            "is not set") in words, r.stdout
    warning = [x for x in flat(r.stderr).splitlines() if "IX_TEST_KEY_B" in x]
    assert len(warning) == 1 and warning[0].startswith("ix: warning: ")
    assert "runtime: lexical" in warning[0]  # what to do

    r = ix_in_process("validate", "--lab", str(lab), "--json", env={"IX_TEST_KEY_B": "sk-x-123"})
    [report] = json.loads(r.stdout)
    api = report["subjects"][1]
    assert api["credentials_env"] == ["IX_TEST_KEY_B"] and api["credentials_present"]
    assert api["runtime_source"] == "experiment.yaml subjects[1].runtime"
    assert "sk-x-123" not in r.output
    offline = report["subjects"][0]
    assert offline["credentials_env"] == [] and offline["runtime_source"] == "ix.yaml"

    r = ix_in_process("validate", "--lab", str(lab), "--runtime", "claude-code", "--json",
                      env=NO_KEY)
    # the claude CLI may be missing here: then that is the (one) problem
    if r.code == 0:
        [report] = json.loads(r.stdout)
        assert {s["runtime_source"] for s in report["subjects"]} == {"--runtime"}
        assert not any(s["credentials_present"] for s in report["subjects"])


def test_new_refuses_an_unknown_skill_unless_allow_missing(lab):
    skill(lab, "csv-summary", "Summarise CSV files.")
    before = tree_digest(lab)
    r = run_ix("new", "exp", "--skill", "csv-sumary", "--runtime", "lexical", "--no-input",
               "--lab", str(lab))
    assert r.code == 2 and "Traceback" not in r.output
    [line] = flat(r.stderr).splitlines()
    assert line.startswith("ix: error: --skill: skill 'csv-sumary' not found")
    assert "did you mean 'csv-summary'?" in line and "--allow-missing" in line
    assert tree_digest(lab) == before

    r = ix_in_process("new", "exp", "--skill", "csv-sumary", "--runtime", "lexical",
                      "--no-input", "--allow-missing", "--lab", str(lab))
    assert r.code == 0, r.output
    assert (lab / "exp" / "experiment.yaml").is_file()
    v = ix_in_process("validate", "--lab", str(lab), "exp")
    assert v.code == 2 and "skill: skill 'csv-sumary' not found" in v.stderr

    r = ix_in_process("new", "--help")
    assert "--allow-missing" in r.stdout


def test_the_bundled_examples_validate_cleanly(tmp_path):
    for name in ("lab", "ix-skill-lab"):
        copy = tmp_path / name
        shutil.copytree(REPO / "examples" / name, copy,
                        ignore=shutil.ignore_patterns("results", "artifacts"))
        r = ix_in_process("validate", "--lab", str(copy), env=NO_KEY)
        assert r.code == 0, r.output
        assert "ix: error" not in r.stderr
