"""Case text and templates are untrusted: a prompt never reaches a shell, and templates
(runtime options, judge rubrics) render in Jinja's sandbox, where reaching for Python's
internals is a recorded trial error, never code execution.

The real `ix run` in a subprocess (`run_ix`) wherever a test checks what reaches a program
ix starts: the `command` runtime running a small recorder script that reports exactly what it
received (its arguments, its stdin, an environment variable), a shell the user chose, and an
`llm_judge` whose judge is such a script too. A template refused in the sandbox (a recorded
trial error, exit 2) is checked in the real `ix run` for one payload, the others in process
(`ix_in_process`).
"""

import json
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import ix_in_process, run_ix, write

PY = sys.executable

RECORDER = textwrap.dedent("""
    import json, os, sys
    print(json.dumps({"argv": sys.argv[1:], "stdin": sys.stdin.read(),
                      "env": os.environ.get("CASE_TEXT")}))
""")

# Each would create a file named pwned-<n> if a shell (or a template engine) ran it.
HOSTILE = {
    "subst": "$(touch pwned-1)",
    "backticks": "`touch pwned-2`",
    "semicolon": "hello; touch pwned-3",
    "and": "hello && touch pwned-4 || touch pwned-4b",
    "pipe": "hello | touch pwned-5",
    "quotes": "'; touch pwned-6; echo '\"; touch pwned-6b; \"",
    "newline": "hello\ntouch pwned-7\n$(touch pwned-7b)",
    "redirect": "hello > pwned-8 < /etc/passwd",
    "glob-and-vars": "* ~ $HOME ${IFS} %PATH% !! -rf --help",
    "jinja": "{{ 7 * 7 }} {% for x in range(3) %}x{% endfor %} {{ ''.__class__.__mro__ }}",
    "jinja-escape": "{{ cycler.__init__.__globals__.os.system('touch pwned-9') }}",
}


def pwned(*roots: Path) -> list[Path]:
    return [p for root in roots for p in root.rglob("pwned*")]


def records(experiment: Path) -> list[dict]:
    text = (experiment / "results" / "trials.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def test_case_text_reaches_the_program_literally_and_never_a_shell(lab: Path, tmp_path: Path):
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    d = lab / "hostile"
    write(d / "recorder.py", RECORDER)
    write(d / "experiment.yaml", f"""
        name: hostile
        trials: 1
        runtime:
          kind: command
          argv: [{json.dumps(PY)}, {json.dumps(str(d / "recorder.py"))}, "{{{{ prompt }}}}",
                 "--id={{{{ case.id }}}}", "{{{{ case.metadata.note }}}}"]
          stdin: "{{{{ prompt }}}}"
          env: {{CASE_TEXT: "{{{{ prompt }}}}"}}
          cwd: {json.dumps(str(sandbox))}
        sensor: exit_code
        """)
    for name, text in HOSTILE.items():
        note = json.dumps(text)  # metadata is case text too (a JSON string is YAML)
        write(d / "cases" / f"{name}.md",
              f"---\nexpectation: must_trigger\nmetadata: {{note: {note}}}\n---\n{text}\n")

    r = run_ix("run", "--lab", str(lab), "--json", cwd=tmp_path)

    assert r.code == 0, r.output
    assert json.loads(r.stdout)["errors"] == 0
    got = {rec["probe_id"]: json.loads(rec["observation"]["stdout"]) for rec in records(d)}
    assert set(got) == set(HOSTILE)
    for name, text in HOSTILE.items():
        prompt = text.strip()
        assert got[name] == {"argv": [prompt, f"--id={name}", text], "stdin": prompt,
                             "env": prompt}, name
    assert pwned(tmp_path, lab) == []


def test_a_hostile_case_through_a_shell_the_user_chose_is_still_one_argument(lab: Path,
                                                                             tmp_path: Path):
    """`sh -c 'printf %s "$1"' sh "{{ prompt }}"`: the prompt is a positional argument, data."""
    d = lab / "via-sh"
    write(d / "experiment.yaml", """
        name: via-sh
        trials: 1
        runtime:
          kind: command
          argv: [sh, -c, 'printf %s "$1"', sh, "{{ prompt }}"]
          cwd: SANDBOX
        sensor: exit_code
        """.replace("SANDBOX", json.dumps(str(tmp_path))))
    for name, text in HOSTILE.items():
        write(d / "cases" / f"{name}.md", f"---\nexpectation: must_trigger\n---\n{text}\n")
    r = run_ix("run", "--lab", str(lab), "--json", cwd=tmp_path)
    assert r.code == 0, r.output
    for rec in records(d):
        assert rec["observation"]["stdout"] == HOSTILE[rec["probe_id"]].strip()
    assert pwned(tmp_path, lab) == []


ARGV_PAYLOADS = [
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ cycler.__init__.__globals__.os.system('touch pwned-argv') }}",
    "{{ prompt.__class__.__base__.__subclasses__() }}",
    "{{ lipsum.__globals__['os'].popen('touch pwned-lipsum').read() }}",
]


@pytest.mark.parametrize("payload", ARGV_PAYLOADS)
def test_a_runtime_option_template_cannot_reach_python_internals(lab: Path, tmp_path: Path,
                                                                  payload: str):
    d = lab / "escape"
    write(d / "experiment.yaml", f"""
        name: escape
        trials: 1
        runtime:
          kind: command
          argv: [echo, {json.dumps(payload)}]
          cwd: {json.dumps(str(tmp_path))}
        sensor: exit_code
        """)
    write(d / "cases" / "a.md", "---\nexpectation: must_trigger\n---\nhello\n")
    ix = run_ix if payload == ARGV_PAYLOADS[0] else ix_in_process  # one in the real command
    r = ix("run", "--lab", str(lab), "--json", cwd=tmp_path)
    # planned fine; each trial fails safely, and a run whose every trial failed on its
    # template is a failed run of the lab's configuration: exit 2, trials recorded
    assert r.code == 2, r.output
    assert json.loads(r.stdout)["run_status"] == "failed"
    [rec] = records(d)
    assert rec["error"]["kind"] == "template_error", rec
    assert "unsafe" in rec["error"]["message"] or "undefined" in rec["error"]["message"], rec
    assert rec["observation"] is None
    assert pwned(tmp_path, lab) == []


JUDGE = textwrap.dedent("""
    import json, sys
    seen = sys.stdin.read()
    print(json.dumps({"scores": {"quality": 7}, "reasoning": seen}))
""")


def judge_lab(lab: Path, body: str, prompt: str) -> Path:
    d = lab / "judged"
    judge = write(lab / "judge.py", JUDGE)
    write(d / "rubrics" / "q.md", f"""---
name: q
runtime:
  kind: command
  argv: [{json.dumps(PY)}, {json.dumps(str(judge))}]
  stdin: "{{{{ prompt }}}}"
dimensions: [quality]
scale: [0, 10]
---
{body}
""")
    write(d / "experiment.yaml", """
        name: judged
        trials: 1
        runtime: {kind: mock, default_rate: 1.0}
        sensor: {kind: llm_judge, agent: rubrics/q.md}
        skill: helper
        """)
    write(d / "cases" / "must-001.md", f"---\nexpectation: must_trigger\n---\n{prompt}\n")
    write(d / "cases" / "not-001.md", "---\nexpectation: should_not_trigger\n---\nBye\n")
    return d


@pytest.mark.parametrize("payload", [
    "{{ ''.__class__.__mro__ }}",
    "{{ cycler.__init__.__globals__.os.system('touch pwned-judge') }}",
    "{{ observation.__class__.__init__.__globals__ }}",
    "{% for c in ''.__class__.__mro__[1].__subclasses__() %}{{ c }}{% endfor %}",
])
def test_a_rubric_reaching_for_python_internals_fails_safely(lab: Path, tmp_path: Path,
                                                              payload: str):
    d = judge_lab(lab, f"Grade {{{{ observation.content }}}} {payload}", "Help me")
    # refused before the judge starts; exit 2 of a failed run is asserted in the real command
    # by test_a_runtime_option_template_cannot_reach_python_internals
    r = ix_in_process("run", "--lab", str(lab), "--json", cwd=tmp_path)
    # a trial error per trial, not a crash: every trial failed on the rubric, so the run
    # failed for its configuration (exit 2) after recording each trial
    assert r.code == 2, r.output
    assert "Traceback" not in r.output
    recs = records(d)
    assert len(recs) == 2
    for rec in recs:
        assert rec["error"]["kind"] == "judge_template", rec
        assert "unsafe" in rec["error"]["message"], rec["error"]
        assert "rubrics/q.md" in rec["error"]["message"]
    assert json.loads(r.stdout)["errors"] == 2
    assert pwned(tmp_path, lab) == []


def test_case_text_shown_to_a_judge_is_data_not_template(lab: Path, tmp_path: Path):
    """The case's prompt and the subject's answer are values in the rubric: `{{ ... }}` in
    them reaches the judge as written, never rendered."""
    hostile = "{{ 7 * 7 }} {{ cycler.__init__.__globals__.os.system('touch pwned-case') }}"
    d = judge_lab(lab, "Question: {{ probe.prompt }}\nAnswer: {{ observation.content }}",
                  hostile)
    r = run_ix("run", "--lab", str(lab), "--json", cwd=tmp_path)
    assert r.code == 0, r.output
    judged = next(rec for rec in records(d) if rec["probe_id"] == "must-001")
    assert judged["error"] is None
    assert f"Question: {hostile}" in judged["reading"]["details"]
    assert "49" not in judged["reading"]["details"]
    assert pwned(tmp_path, lab) == []
