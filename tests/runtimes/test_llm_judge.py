"""`llm_judge`: a rubric graded by a judge subject, parsed strictly, end to end.

The judge here is a real program behind the `command` runtime (no paid model can run in
tests): it reads the rendered rubric on stdin and answers JSON scores, so everything from
template rendering to parsing is exercised for real. The run that scores and the refusal
of a bad rubric (`ix run`, `ix validate`) go through the real `ix` (`run_ix`); the other
cases, the same command's logic, through `ix_in_process` (the judge is still a real program).
"""

import json
import sys
import textwrap

from conftest import ix_in_process, run_ix, write

JUDGE = textwrap.dedent('''
    import json, sys
    text = sys.stdin.read()
    if "MALFORMED" in text:
        print("I think it is fine.")
    else:
        good = "Using the" in text and "EXPECTED: yes" in text
        print(json.dumps({"scores": {"correctness": 9 if good else 2, "tone": 8},
                          "reasoning": "seen: " + str(good)}))
''')

RUBRIC = """---
name: quality
runtime:
  kind: command
  argv: [{python}, {judge}]
  stdin: "{{{{ prompt }}}}"
dimensions: [correctness, tone]
scale: [0, 10]
pass_threshold: 0.7
---
Question: {{{{ probe.prompt }}}}
Grade this answer: {{{{ observation.content }}}}
EXPECTED: {{{{ probe.expected }}}}
Answer with JSON only.
"""


def lab_with_judge(lab, rubric=RUBRIC):
    judge = write(lab / "judge.py", JUDGE)
    d = lab / "judged"
    write(d / "rubrics" / "quality.md", rubric.format(python=sys.executable, judge=judge))
    write(d / "experiment.yaml", """
        name: judged
        trials: 2
        runtime: {kind: mock, default_rate: 1.0}
        sensor: {kind: llm_judge, agent: rubrics/quality.md}
        skill: helper
    """)
    write(d / "cases" / "must-001.md",
          "---\nexpectation: must_trigger\nmetadata: {expected: 'yes'}\n---\nHelp me\n")
    write(d / "cases" / "not-001.md",
          "---\nexpectation: should_not_trigger\nmetadata: {expected: 'no'}\n---\nBye\n")
    return d


def test_the_judge_scores_every_dimension_and_decides_by_the_threshold(lab):
    d = lab_with_judge(lab)
    r = run_ix("run", "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    lines = [json.loads(x) for x in (d / "results" / "trials.jsonl").read_text().splitlines()]
    by_case = {x["probe_id"]: x["reading"] for x in lines}
    must, other = by_case["must-001"], by_case["not-001"]
    assert must["sensor_name"] == "quality"
    assert must["metrics"] == {"correctness": 9.0, "tone": 8.0}
    assert must["passed"] is True and must["score"] == 0.85
    assert other["metrics"] == {"correctness": 2.0, "tone": 8.0} and other["passed"] is False
    assert "seen: True" in must["details"]
    s = json.loads(r.stdout)
    assert s["metrics"]["tp"] == 1 and s["metrics"]["tn"] == 1


def test_an_unparseable_judge_answer_is_an_errored_trial_not_a_failure(lab):
    d = lab_with_judge(lab)
    (d / "cases" / "must-001.md").write_text(
        "---\nexpectation: must_trigger\nmetadata: {expected: 'yes'}\n---\nMALFORMED please\n")
    r = ix_in_process("run", "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    lines = [json.loads(x) for x in (d / "results" / "trials.jsonl").read_text().splitlines()]
    bad = [x for x in lines if x["probe_id"] == "must-001"]
    assert all(x["error"]["kind"] == "judge_unparseable" and x["reading"] is None for x in bad)
    assert json.loads(r.stdout)["errors"] == 2


def test_a_bad_rubric_is_exit_2_naming_the_file_and_field(lab):
    lab_with_judge(lab, RUBRIC.replace("dimensions: [correctness, tone]\n", ""))
    r = run_ix("run", "--lab", str(lab))
    assert r.code == 2 and "quality.md" in r.stderr and "dimensions" in r.stderr
    missing = run_ix("validate", "--lab", str(lab))
    assert missing.code == 2


def test_a_missing_rubric_names_the_agent_option(lab):
    d = lab_with_judge(lab)
    (d / "rubrics" / "quality.md").unlink()
    r = ix_in_process("run", "--lab", str(lab))
    assert r.code == 2 and "sensor.agent" in r.stderr


def test_a_template_variable_the_case_lacks_is_a_recorded_trial_error(lab):
    d = lab_with_judge(lab)
    (d / "cases" / "must-001.md").write_text("---\nexpectation: must_trigger\n---\nHelp\n")
    r = ix_in_process("run", "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    lines = [json.loads(x) for x in (d / "results" / "trials.jsonl").read_text().splitlines()]
    errs = [x["error"] for x in lines if x["probe_id"] == "must-001"]
    assert all(e["kind"] == "judge_template" and "expected" in e["message"] for e in errs)
