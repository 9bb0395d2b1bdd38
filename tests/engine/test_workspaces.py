"""Outcome experiments (DESIGN.md §10, issue 35): each trial in a fresh copy of its case's
fixtures, what the subject made kept and listed, and sensors on the files. The logic is asked
in process (`run_plan` on a lab of real files, the `command` runtime running a real Python
program); `test_an_outcome_run_through_the_real_ix` holds the command line to it."""

import hashlib
import json
import os
import sys
from pathlib import Path

import pytest

from conftest import ix_in_process, run_ix, timeless, too_wide, tree_digest, write
from ix.domain.errors import ConfigError
from ix.engine.cache import stimulus_of
from ix.engine.plan import Overrides, build_plan
from ix.engine.resume import cases_digest
from ix.engine.run import run_plan
from ix.lab.loader import load_experiment

#: The subject: sums the `input.csv` it finds into `summary.txt` (wrong on a seed's whim,
#: 30%), deletes its input, prints where it ran, and with `EXTRA` set does what a test asks.
TOOL = """
import os, random, sys
from pathlib import Path
r = random.Random(int(sys.argv[1]))
given = next(Path(".").rglob("input.csv"))
total = sum(int(x) for x in given.read_text().split())
open("summary.txt", "w").write(f"total={total}\\n" if r.random() < 0.7 else "oops\\n")
given.unlink()
extra = os.environ.get("EXTRA", "")
if extra == "usage":  # what it spent, for `report_usage` (after its folder, on the last line)
    print(os.getcwd())
    print('{"tokens_input": %d, "tokens_output": 50, "cost_usd": 0.001}' % (100 + total))
    raise SystemExit(0)
if extra == "symlink":
    os.symlink("/etc/passwd", "leak.txt")
if extra == "big":
    with open("big.bin", "wb") as f:
        f.truncate(3 << 20)
if extra == "nested":
    os.makedirs("out/deep", exist_ok=True)
    open("out/deep/report.json", "w").write('{"ok": true, "n": 3}')
print(os.getcwd())
"""

CHECK = """
import json, os
ok = os.path.exists("summary.txt") and open("summary.txt").read().startswith("total=")
print(json.dumps({"score": 1.0 if ok else 0.25}))
raise SystemExit(0 if ok else 1)
"""


def outcome_lab(lab: Path, *, extra: str = "", trials: int = 4, sensors: str = "",
                workspace: str = "{template: template, max_file_mb: 1}") -> Path:
    exp = lab / "out"
    write(exp / "experiment.yaml", f"""
        name: out
        trials: {trials}
        workspace: {workspace}
        runtime:
          kind: command
          argv: [{json.dumps(sys.executable)}, "{{{{ workspace }}}}/tool.py", "{{{{ seed }}}}"]
          env: {{EXTRA: "{extra}"}}
        sensors:
          - {{kind: file_matches, path: summary.txt, regex: "^total=6$"}}
          - {{kind: file_exists, path: "**/*.txt"}}
          - {{kind: check, command: [{json.dumps(sys.executable)}, check.py]}}
        {sensors}
        """)
    write(exp / "template" / "tool.py", TOOL)
    write(exp / "template" / "check.py", CHECK)
    write(exp / "cases" / "sum" / "files" / "input.csv", "1\n2\n3\n")
    write(exp / "cases" / "sum.md", "---\nexpectation: must_trigger\n---\nSum input.csv.\n")
    write(exp / "cases" / "given" / "input.csv", "2\n4\n")
    write(exp / "cases" / "given.md", "---\nexpectation: must_trigger\nfiles: [given]\n"
                                      "---\nSum it.\n")
    return exp


def lines(exp: Path) -> list[dict]:
    return [json.loads(x) for x in (exp / "results" / "trials.jsonl").read_text().splitlines()]


def test_each_trial_works_on_a_copy_and_what_it_made_is_kept_and_judged(lab: Path):
    exp = outcome_lab(lab)
    before = tree_digest(exp)
    result = run_plan(build_plan(load_experiment(exp, lab), Overrides()))
    assert result.status == "completed"
    # the subject deleted input.csv in every trial: the fixtures are as they were
    assert {k: v for k, v in tree_digest(exp).items() if not k.startswith("results")} == before
    got = lines(exp)
    assert len(got) == 8 and all(line["error"] is None for line in got)
    for line in got:
        summary = [o for o in line["outputs"] if o["path"] == "summary.txt"]
        assert len(line["outputs"]) == 1 and len(summary) == 1  # tool.py, check.py unchanged
        kept = (result.run_dir / "artifacts" / "out" / line["probe_id"] / str(line["trial"])
                / "summary.txt").read_bytes()
        assert summary[0]["size"] == len(kept)
        assert summary[0]["sha256"] == hashlib.sha256(kept).hexdigest()
        right = kept == b"total=6\n"
        matches, exists, check = line["readings"]
        assert matches["passed"] is right and exists["passed"] is True
        assert check["passed"] is right and check["score"] == (1.0 if right else 0.25)
        ran_in = Path(line["observation"]["stdout"].strip())
        assert ran_in.name.startswith("ix-ws-") and not ran_in.exists()  # removed after
    assert {line["probe_id"] for line in got if line["reading"]["passed"]} == {"sum", "given"}


def test_the_seed_reaches_the_program_so_a_trial_reproduces(lab: Path):
    exp = outcome_lab(lab, trials=6)
    run_plan(build_plan(load_experiment(exp, lab), Overrides()))
    first = {(x["probe_id"], x["trial"]): x["outputs"] for x in lines(exp)}
    (exp / "results" / "trials.jsonl").unlink()
    run_plan(build_plan(load_experiment(exp, lab), Overrides()))
    again = {(x["probe_id"], x["trial"]): x["outputs"] for x in lines(exp)}
    assert first == again
    assert len({json.dumps(v) for v in first.values()}) == 2  # both answers drawn in 12 trials


@pytest.mark.parametrize(("extra", "path", "refused"), [
    ("symlink", "leak.txt", "a symbolic link"),
    ("big", "big.bin", "over max_file_mb (1)"),
])
def test_a_link_or_a_file_over_the_limit_is_listed_refused_never_kept(lab: Path, extra, path,
                                                                      refused):
    exp = outcome_lab(lab, extra=extra, trials=1)
    result = run_plan(build_plan(load_experiment(exp, lab), Overrides(filters=("sum",))))
    (line,) = lines(exp)
    (out,) = [o for o in line["outputs"] if o["path"] == path]
    assert out["refused"].startswith(refused) if extra == "symlink" else refused in out["refused"]
    assert "sha256" not in out
    assert not (result.run_dir / "artifacts" / "out" / "sum" / "0" / path).exists()
    assert any(o["path"] == "summary.txt" and "sha256" in o for o in line["outputs"])


def test_nested_outputs_are_kept_in_place_and_read_by_json_path(lab: Path):
    exp = outcome_lab(lab, extra="nested", trials=1, sensors=(
        '  - {kind: file_matches, path: "out/**/*.json", json_path: "$.n", equals: 3}'))
    result = run_plan(build_plan(load_experiment(exp, lab), Overrides(filters=("sum",))))
    (line,) = lines(exp)
    assert line["readings"][3]["passed"] is True, line["readings"][3]
    assert (result.run_dir / "artifacts" / "out" / "sum" / "0" / "out" / "deep"
            / "report.json").read_text() == '{"ok": true, "n": 3}'


def test_fixtures_key_the_cache_and_the_resume_check(lab: Path):
    exp = outcome_lab(lab)
    cases = load_experiment(exp, lab).experiment.cases
    digest, keys = cases_digest(cases), [stimulus_of(c) for c in cases]
    assert all(isinstance(k["workspace"], str) and "source" not in json.dumps(k) for k in keys)
    write(exp / "cases" / "sum" / "files" / "input.csv", "1\n2\n4\n")  # a fixture changed
    changed = load_experiment(exp, lab).experiment.cases
    assert cases_digest(changed) != digest
    now = [stimulus_of(c) for c in changed]
    assert now[1] != keys[1] and now[0] == keys[0]  # "sum" sorts second; "given" unchanged


@pytest.mark.parametrize(("files", "words"), [
    ("[../escape.txt]", "must be a path inside the case's folder"),
    ("[/etc/passwd]", "must be a path inside the case's folder"),
    ("[missing.txt]", "no file or folder 'missing.txt'"),
    ("[bits/link.txt]", "is a symbolic link"),
])
def test_a_bad_fixture_is_a_configuration_error_naming_the_case_and_field(lab, files, words):
    exp = outcome_lab(lab)
    (exp / "cases" / "bits").mkdir()
    os.symlink("/etc/passwd", exp / "cases" / "bits" / "link.txt")
    write(exp / "cases" / "bad.md", f"---\nexpectation: must_trigger\nfiles: {files}\n---\nx\n")
    with pytest.raises(ConfigError) as caught:
        load_experiment(exp, lab)
    text = caught.value.render()
    assert words in text and "bad.md" in text and "files[0]" in text


def test_a_link_among_the_template_files_is_refused(lab: Path):
    exp = outcome_lab(lab)
    os.symlink("/etc/passwd", exp / "template" / "passwd")
    with pytest.raises(ConfigError, match="symbolic link"):
        load_experiment(exp, lab)


def test_file_sensors_without_a_workspace_give_no_verdict(lab: Path):
    exp = lab / "plain"
    write(exp / "experiment.yaml", """
        name: plain
        trials: 1
        runtime: {kind: command, argv: ["true"]}
        sensor: {kind: file_exists, path: x}
        """)
    write(exp / "cases" / "a.md", "---\nexpectation: must_trigger\n---\nx\n")
    run_plan(build_plan(load_experiment(exp, lab), Overrides()))
    (line,) = lines(exp)
    assert line["error"]["kind"] == "not_applicable" and "no workspace" in line["error"]["message"]
    assert "outputs" not in line


def test_an_outcome_run_through_the_real_ix(lab: Path):
    """The command line: exit 0, the trial lines list the outputs, which are on disk; a bad
    `files:` is exit 2 naming the file and field, with nothing written."""
    exp = outcome_lab(lab, trials=2)
    done = run_ix("run", "--lab", str(lab), "--json")
    assert done.code == 0, done.stderr
    got = lines(exp)
    assert len(got) == 4 and all(o["path"] == "summary.txt" for x in got for o in x["outputs"])
    assert len(list((exp / "results" / "runs").glob("*/artifacts/out/*/*/summary.txt"))) == 4
    report = run_ix("report", "--lab", str(lab), "out", env={"COLUMNS": "80"})
    assert report.code == 0 and not too_wide(report.stdout)
    assert "outcomes per trial: mean of case means [95% CI]" in report.stdout
    assert "time (s)" in report.stdout and "input tokens" not in report.stdout  # none spent
    write(exp / "cases" / "bad.md", "---\nexpectation: must_trigger\nfiles: [nope.csv]\n---\nx\n")
    before = tree_digest(exp)
    bad = run_ix("run", "--lab", str(lab))
    assert bad.code == 2 and "bad.md" in bad.stderr and "files[0]" in bad.stderr
    assert "Traceback" not in bad.stderr and tree_digest(exp) == before


def test_a_fixture_beside_the_case_files_is_no_stray_case_file(lab: Path):
    """A file in `cases/` that no case names is reported (a `.txt` case would be left out);
    one a case's `files:` names is its fixture."""
    exp = outcome_lab(lab)
    write(exp / "cases" / "notes.txt", "a stray\n")
    write(exp / "cases" / "input.csv", "1\n")
    write(exp / "cases" / "own.md", "---\nexpectation: must_trigger\nfiles: [input.csv]\n---\nx\n")
    with pytest.raises(ConfigError) as caught:
        load_experiment(exp, lab)
    assert "notes.txt" in caught.value.render() and "input.csv" not in caught.value.render()
    (exp / "cases" / "notes.txt").unlink()
    cases = {c.id: c for c in load_experiment(exp, lab).experiment.cases}
    assert [f.path for f in cases["own"].workspace.files] == ["check.py", "tool.py", "input.csv"]


def test_a_workspace_named_where_there_is_none_or_a_missing_check_is_an_errored_trial(lab):
    exp = lab / "plain"
    write(exp / "experiment.yaml", f"""
        name: plain
        trials: 1
        runtime: {{kind: command, argv: [{json.dumps(sys.executable)}, "{{{{ workspace }}}}"]}}
        """)
    write(exp / "cases" / "a.md", "---\nexpectation: must_trigger\n---\nx\n")
    run_plan(build_plan(load_experiment(exp, lab), Overrides()))
    (line,) = lines(exp)
    assert line["error"]["kind"] == "template_error"
    assert "this case has no workspace" in line["error"]["message"]
    exp = outcome_lab(lab, trials=1, sensors="  - {kind: check, command: [no-such-grader-ix]}")
    run_plan(build_plan(load_experiment(exp, lab), Overrides(filters=("sum",))))
    (line,) = lines(exp)
    assert line["error"]["kind"] == "check_failed" and "no-such-grader-ix" in \
        line["error"]["message"]


def test_a_workspace_trial_is_never_replayed_from_the_cache(lab: Path):
    exp = outcome_lab(lab, trials=1)
    assert ix_in_process("run", "--lab", str(lab), "--cache").code == 0
    cache = lab / ".ix" / "cache" / "observations"
    assert not cache.exists() or not [p for p in cache.rglob("*") if p.is_file()]
    done = ix_in_process("run", "--lab", str(lab), "--cache-mode", "replay", "--json")
    assert done.code != 0
    replayed = lines(exp)[-2:]
    assert {x["error"]["kind"] for x in replayed} == {"cache_miss"}
    assert "never replayed" in replayed[0]["error"]["message"]


@pytest.mark.parametrize(("stdout", "usage"), [
    ('done\n{"tokens_input": 12, "tokens_output": 3, "cost_usd": 0.5}\n',
     {"tokens_input": 12, "tokens_output": 3, "cost_usd": 0.5}),
    ('{"tokens_input": 12, "cost_usd": 1}', {"tokens_input": 12, "cost_usd": 1.0}),
    ('{"tokens_input": -1, "tokens_output": 2.5, "cost_usd": "x"}', {}),
    ('{"tokens_input": true, "cost_usd": NaN}', {}),
    ("not json", {}), ("", {}), ("[1, 2]", {}),
])
def test_a_program_reports_its_usage_on_its_last_line(stdout, usage):
    from ix.runtimes.command import reported_usage

    assert reported_usage(stdout) == usage


def test_a_subjects_skills_are_installed_in_its_workspace_and_are_no_outputs(lab: Path):
    write(lab / "skills" / "tidy" / "SKILL.md", "---\nname: tidy\ndescription: Tidy up.\n---\n"
                                                "Steps.\n")
    write(lab / "skills" / "tidy" / "ref" / "notes.md", "more\n")
    exp = lab / "sk"
    write(exp / "experiment.yaml", f"""
        name: sk
        trials: 1
        workspace: {{}}
        runtime:
          kind: command
          argv: [{json.dumps(sys.executable)}, -c, "import os; print(sorted(
            os.path.join(d, f) for d, _, fs in os.walk('.claude') for f in fs))"]
        subjects:
          - name: bare
          - name: skilled
            skills: [tidy]
        sensor: exit_code
        """)
    write(exp / "cases" / "a.md", "---\nexpectation: must_trigger\n---\nx\n")
    run_plan(build_plan(load_experiment(exp, lab), Overrides()))
    seen = {x["subject"]: (x["observation"]["stdout"].strip(), x["outputs"]) for x in lines(exp)}
    assert seen["bare"] == ("[]", [])
    assert seen["skilled"] == ("['.claude/skills/tidy/SKILL.md', "
                               "'.claude/skills/tidy/ref/notes.md']", [])


def test_a_check_finds_its_grader_in_the_experiment_and_is_told_the_case(lab: Path):
    exp = outcome_lab(lab, trials=1, sensors=(
        f'  - {{kind: check, command: [{json.dumps(sys.executable)}, "{{{{ experiment }}}}'
        '/grade.py"]}'))
    write(exp / "grade.py", "import os, sys\nprint(os.environ['IX_CASE_ID'])\n"
                            "sys.exit(0 if os.environ['IX_CASE_ID'] == 'sum' else 3)\n")
    run_plan(build_plan(load_experiment(exp, lab), Overrides()))
    graded = {x["probe_id"]: x["readings"][3] for x in lines(exp)}
    assert graded["sum"]["passed"] is True and graded["sum"]["metrics"]["exit_code"] == 0
    assert graded["given"]["passed"] is False and graded["given"]["metrics"]["exit_code"] == 3


def test_a_case_grades_with_its_own_checks(lab: Path):
    """`checks:` in a case's frontmatter, run by the `case_checks` sensor: it passes when all
    pass; a case without checks has no verdict from it; a bad check is exit 2 at load, naming
    the case file and `checks[i]`. Checks key the resume check, not the cache."""
    exp = outcome_lab(lab, trials=1, sensors="  - {kind: case_checks}")
    write(exp / "cases" / "sum.md", """---
expectation: must_trigger
checks:
  - {kind: file_exists, path: summary.txt}
  - {kind: file_matches, path: summary.txt, contains: "total="}
  - {kind: check, command: [python3, "{{ experiment }}/template/check.py"]}
---
Sum input.csv.
""")
    cases = {c.id: c for c in load_experiment(exp, lab).experiment.cases}
    assert cases["sum"].checks[2]["command"][1] == f"{exp}/template/check.py"
    assert "checks" not in stimulus_of(cases["sum"])
    run_plan(build_plan(load_experiment(exp, lab), Overrides()))
    graded = {x["probe_id"]: (x["readings"][0]["passed"], x["readings"][3])
              for x in lines(exp)}
    right, checks = graded["sum"]
    assert checks["sensor_name"] == "case_checks" and checks["passed"] is right
    assert checks["metrics"] == {"checks": 3, "failed": 0 if right else 2}
    assert graded["given"][1]["passed"] is None  # no checks: n/a
    write(exp / "cases" / "sum.md", "---\nexpectation: must_trigger\nchecks:\n"
                                    "  - {kind: file_matches, path: x, regex: '('}\n---\nx\n")
    with pytest.raises(ConfigError) as caught:
        load_experiment(exp, lab)
    assert "sum.md" in caught.value.render() and "checks[0].regex" in caught.value.render()
    write(exp / "cases" / "sum.md", "---\nexpectation: must_trigger\nchecks:\n"
                                    "  - {kind: activation}\n---\nx\n")
    with pytest.raises(ConfigError, match=r"checks\[0\]\.kind.*file_exists, file_matches"):
        load_experiment(exp, lab)


JUDGE = """
import json, sys
prompt = sys.stdin.read()
good = "### summary.txt" in prompt and "total=6" in prompt
print(json.dumps({"scores": {"right": 10 if good else 0}, "reasoning": prompt[-120:]}))
"""


def test_a_judge_is_shown_the_files_the_subject_made(lab: Path):
    """`llm_judge` with `inputs: [answer, files]`: a rubric that does not name `files` gets
    them appended (each path and text); the judge here is a real program behind `command`."""
    exp = outcome_lab(lab, trials=2, sensors=(
        "  - {kind: llm_judge, agent: rubric.md, inputs: [answer, files]}"))
    write(exp / "judge.py", JUDGE)
    write(exp / "rubric.md", f"""---
name: made-right
runtime: {{kind: command, argv: [{json.dumps(sys.executable)}, {json.dumps(str(exp / "judge.py"))}],
          stdin: "{{{{ prompt }}}}"}}
dimensions: [right]
scale: [0, 10]
---
Did the agent sum the file? Answer JSON.
""")
    result = run_plan(build_plan(load_experiment(exp, lab), Overrides()))
    by_case: dict[str, list[float]] = {}
    for line in lines(exp):
        matches, judged = line["readings"][0], line["readings"][3]
        assert judged["sensor_name"] == "made-right"
        assert judged["passed"] is matches["passed"], (judged, matches)
        by_case.setdefault(line["probe_id"], []).append(judged["metrics"]["right"])
    # the judge's dimension is an outcome: the mean of its case means, with a t interval
    outcomes = result.summary["outcomes"]
    assert "made-right.right" in outcomes["metrics"]
    got = outcomes["by_subject"][result.summary["subject"]]["made-right.right"]
    means = [sum(v) / len(v) for v in by_case.values()]
    assert got["value"] == pytest.approx(sum(means) / len(means))
    assert got["n_cases"] == 2 and got["method"] == "t"


@pytest.mark.parametrize(("metric", "words"), [
    ("made-right.wrong", "no judge's dimension 'made-right.wrong'; the judges grade "
                         "made-right.right"),
    ("made-right.right", None)])
def test_a_goal_on_a_judges_dimension_names_one_the_judges_grade(lab: Path, metric, words):
    exp = outcome_lab(lab, trials=1, sensors=(
        "  - {kind: llm_judge, agent: rubric.md, inputs: [answer, files]}"))
    with (exp / "experiment.yaml").open("a") as f:
        f.write("subjects: [{name: plain}, {name: also}]\n"
                f"goal: {{hypothesis: h, metric: {metric}, direction: increase, "
                "min_effect: 1}\n")
    write(exp / "rubric.md", "---\nname: made-right\nruntime: {kind: mock}\n"
                             "dimensions: [right]\nscale: [0, 10]\n---\nGrade it.\n")
    if words is None:
        assert build_plan(load_experiment(exp, lab), Overrides()).cases
        return
    with pytest.raises(ConfigError, match="no judge") as caught:
        build_plan(load_experiment(exp, lab), Overrides())
    assert caught.value.field == "goal.metric" and words in str(caught.value)


def test_ix_run_says_at_what_cost_against_the_control(lab: Path):
    exp = outcome_lab(lab, trials=2, extra="usage")
    text = (exp / "experiment.yaml").read_text()
    write(exp / "experiment.yaml", text.replace("sensors:", "subjects:\n  - name: plain\n"
                                                "  - name: also\nsensors:", 1).replace(
        "  env:", "  report_usage: true\n  env:", 1))
    r = ix_in_process("run", "--lab", str(lab), env={"COLUMNS": "80"})
    assert r.code == 0, r.output
    assert "at what cost against plain" in r.stdout
    assert "  also: output tokens +0% [+0%, +0%], time (s) " in r.stdout
    assert not too_wide(r.stdout)


def test_a_resumed_run_has_the_outcomes_of_an_uninterrupted_one(lab: Path, tmp_path: Path):
    """The summary's `outcomes` come from the engine's tallies; a run stopped by a budget and
    resumed counts its recorded trials back in (each standing trial's numbers, every
    attempt's cost) and ends with the section an uninterrupted run has, which is also what
    the report computes from the lines on its own (`digest_of`)."""
    from ix.report.run_report import digest_of

    def usage_lab(root: Path) -> Path:
        exp = outcome_lab(root, trials=3, extra="usage")
        text = (exp / "experiment.yaml").read_text()
        write(exp / "experiment.yaml", text.replace(
            "sensors:", "subjects:\n  - name: plain\n  - name: also\nsensors:", 1).replace(
            "  env:", "  report_usage: true\n  env:", 1))
        return exp

    whole = usage_lab(lab)
    assert ix_in_process("run", "--lab", str(lab), "--json").code == 0
    other = tmp_path / "again"
    other.mkdir()
    halves = usage_lab(other)
    first = ix_in_process("run", "--lab", str(other), "--max-trials", "5")
    assert first.code == 130, first.output  # cancelled by the budget
    resumed = ix_in_process("run", "--lab", str(other), "--resume", "--json")
    assert resumed.code == 0, resumed.output

    def summary(exp: Path) -> dict:
        return json.loads((exp / "results" / "summary-latest.json").read_text())

    got, want = summary(halves)["outcomes"], summary(whole)["outcomes"]
    assert {"tokens_input", "cost_usd"} <= set(want["metrics"])
    assert timeless(got) == timeless(want)
    for exp in (whole, halves):
        runs = summary(exp)
        mine = [x for x in lines(exp) if x["run_id"] == runs["run_id"]]
        assert runs["outcomes"] == digest_of(mine).outcomes(["plain", "also"])


def test_the_same_prompt_on_other_files_is_another_question(lab: Path):
    from ix.eval.design import DesignWarning, _duplicates

    exp = outcome_lab(lab)
    write(exp / "cases" / "again.md", "---\nexpectation: must_trigger\nfiles: [given]\n"
                                      "---\nSum it.\n")
    cases = load_experiment(exp, lab).experiment.cases
    found: list[DesignWarning] = []
    _duplicates(list(cases), found)
    assert [w.message.split(" have")[0] for w in found] == ["cases again, given"]
    assert "same prompt (ignoring case and whitespace) and files" in found[0].message
