"""`ix label --import` and `ix judge check` through the real `ix` (issue 36): a judge (a real
program behind the `command` runtime) grades twelve cases; people's labels disagree with it
on two; the check reports the agreement `ix.stats.judges` gives on exactly those pairs."""

import json
import sys
from pathlib import Path

import pytest

from conftest import ix_in_process, run_ix, too_wide, write
from ix.stats import judges

JUDGE = """
import json, sys
prompt = sys.stdin.read()
print(json.dumps({"scores": {"right": 10 if "good" in prompt else 0}, "reasoning": "r"}))
"""


@pytest.fixture
def judged(lab: Path) -> Path:
    exp = lab / "e"
    write(exp / "experiment.yaml", """
        name: e
        trials: 1
        runtime: {kind: mock}
        sensors:
          - {kind: llm_judge, agent: rubric.md}
        """)
    write(exp / "judge.py", JUDGE)
    write(exp / "rubric.md", f"""---
name: made-right
runtime: {{kind: command, argv: [{json.dumps(sys.executable)}, {json.dumps(str(exp / "judge.py"))}],
          stdin: "{{{{ prompt }}}}"}}
dimensions: [right]
scale: [0, 10]
---
Case: {{{{ probe.prompt }}}}
""")
    for i in range(6):
        write(exp / "cases" / f"good-{i}.md", f"---\nexpectation: must_trigger\n---\ngood {i}\n")
        write(exp / "cases" / f"bad-{i}.md", f"---\nexpectation: must_trigger\n---\nbad {i}\n")
    assert ix_in_process("run", "--lab", str(lab), "e").code in (0, 1)
    return exp


def test_labels_imported_and_the_judge_checked_against_them(judged: Path, tmp_path: Path):
    lab = judged.parent
    table = tmp_path / "labels.csv"
    # people pass good-0..5 but good-5, and fail bad-0..5 but bad-5: two disagreements
    rows = [f"good-{i},made-right,{'fail' if i == 5 else 'pass'}" for i in range(6)]
    rows += [f"bad-{i},made-right,{'pass' if i == 5 else 'fail'}" for i in range(6)]
    table.write_text("probe_id,sensor,value\n" + "\n".join(rows) + "\n")
    r = run_ix("label", "--import", str(table), "--experiment", "e", "--lab", str(lab),
               "--labeller", "ana")
    assert r.code == 0 and "added 12 label(s)" in r.stdout, r.output

    r = run_ix("judge", "check", "e", "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    [entry] = json.loads(r.stdout)["judges"]
    judge = [True] * 6 + [False] * 6
    human = [True] * 5 + [False] + [False] * 5 + [True]
    want = judges.agreement(judge, human)
    assert entry["labelled"] == 12 and entry["judged_rate"]["passed"] == 6
    assert entry["kappa"]["value"] == pytest.approx(want.kappa.value, abs=1e-6)
    assert entry["tpr"]["value"] == pytest.approx(5 / 6, abs=1e-6)

    text = ix_in_process("judge", "check", "e", "--lab", str(lab), env={"COLUMNS": "80"})
    assert text.code == 0
    assert "made-right: judged pass rate 0.500 (6/12); true pass rate" in " ".join(
        text.stdout.split())
    assert not too_wide(text.stdout)


def test_a_bad_label_file_is_refused_whole_naming_its_line(judged: Path, tmp_path: Path):
    lab = judged.parent
    table = tmp_path / "labels.csv"
    table.write_text("probe_id,sensor,value\ngood-0,made-right,pass\ngood-1,made-right,meh\n")
    r = run_ix("label", "--import", str(table), "--experiment", "e", "--lab", str(lab))
    assert r.code == 2 and "Traceback" not in r.stderr
    assert f"{table}: line 3: value: pass or fail" in r.stderr, r.stderr
    assert not (judged / "results" / "labels.jsonl").exists()
    empty = ix_in_process("judge", "check", "e", "--lab", str(lab))
    assert empty.code == 0 and "no label yet" in empty.stdout


def test_ix_label_over_a_pipe_saves_each_answer_and_goes_on_where_it_stopped(judged: Path):
    """The terminal flow, scripted: one answer a line; a word it does not know is asked
    again, `s` skips; the end of input stops with every answer kept; a second session
    skips the trials already labelled by the same labeller."""
    import subprocess

    from conftest import _ix_argv, _ix_env

    lab = judged.parent

    def session(answers: str, *extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*_ix_argv(), "label", "e", "--lab", str(lab), "--labeller",
                               "ana", *extra], input=answers, capture_output=True, text=True,
                              env=_ix_env(None, None), timeout=120)

    first = session("y\nmaybe\nn\ns\n", "--sample", "3")
    assert first.returncode == 0, first.stderr
    assert "labelling made-right in run" in first.stderr and "3 trial(s)" in first.stderr
    assert "answer y, n, s or q (got 'maybe')" in first.stderr
    assert "prompt:" in first.stderr and "answer:" in first.stderr
    assert "added 2 label(s)" in first.stdout
    labels = [json.loads(x) for x in (judged / "results" / "labels.jsonl").read_text()
              .splitlines()]
    assert [x["value"] for x in labels] == [True, False]
    assert all(x["labeller"] == "ana" and x["trial"] == 0 and x["run_id"] for x in labels)
    again = session("", "--sample", "12")  # the end of input at once: nothing added
    assert again.returncode == 0 and "10 trial(s) (2 labelled before)" in again.stderr
    assert "added 0 label(s)" in again.stdout
    bad = session("", "--sensor", "nope")
    assert bad.returncode == 2 and "no reading of 'nope'" in bad.stderr
