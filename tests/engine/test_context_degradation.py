"""A context-degradation experiment: every subject at every length, the summary's `context`
block (schema-valid), the curve and the trend printed at 80 columns by `ix run` and `ix
report`, and a goal on two lengths. The real `ix` prints the run at 80 columns, is killed
midway, and drives the real claude-code CLI; the rest is asked in process (`ix_in_process`)."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_messages_sse import FAKE_KEY, FakeMessages

from conftest import ix_in_process, run_ix, stable_summary, write
from ix.eval.schemas import summary_problems
from ix.lab.loader import load_experiment
from ix.runtimes._conversation import anthropic_history


def lab_with_decay(lab):
    exp = lab / "ctx"
    rates = ", ".join(f"must-{i:03d}: 0.95" for i in range(10))
    write(exp / "experiment.yaml", f"""
        name: ctx
        trials: 5
        sensor: {{kind: activation, skill: csv}}
        subjects:
          - name: sonnet
            runtime: {{kind: mock, activation_rates: {{{rates}}}, context_decay: {{half_life: 16}}}}
          - name: haiku
            runtime: {{kind: mock, activation_rates: {{{rates}}}, context_decay: {{half_life: 4}}}}
        context:
          prefix: builtin:coding-session
          lengths: [0, 8, 32]
        goal:
          hypothesis: A long session makes csv-summary fire less often.
          metric: activation_rate
          compare: ["sonnet[ctx=0]", "sonnet[ctx=32]"]
          direction: decrease
        """)
    for i in range(10):
        write(exp / "cases" / f"must-{i:03d}.md",
              f"---\nexpectation: must_trigger\n---\nProfile data{i}.csv please.\n")
        write(exp / "cases" / f"not-{i:03d}.md",
              f"---\nexpectation: should_not_trigger\n---\nA haiku about rain, {i}.\n")
    return exp


def test_a_context_run_prints_the_curve_and_the_trend_and_writes_the_block(lab):
    exp = lab_with_decay(lab)
    env = {"COLUMNS": "80"}
    v = ix_in_process("validate", "--lab", str(lab), env=env)
    assert v.code == 0 and "runtime mock" in v.stdout and "sonnet[ctx=0]," in v.stdout, v.output
    r = run_ix("run", "--lab", str(lab), "--detail", env=env)
    assert r.code == 0, r.output
    # every line fits (a path is printed whole, however long)
    assert max(len(line) for line in r.stdout.splitlines() if str(lab) not in line) <= 80
    for subject in ("sonnet", "haiku"):
        assert f"{subject} by context length (turns of builtin:coding-session)" in r.stdout
    assert r.stdout.count("trend: activation rate -") == 2
    assert "sonnet[ctx=32]" in r.stdout and "haiku[ctx=8]" in r.stdout
    assert "supported" in r.stdout  # the goal on two lengths is decided like any other

    summary = json.loads((exp / "results" / "summary-latest.json").read_text())
    assert summary_problems(summary) == []
    assert [s["name"] for s in summary["subjects"]] == [
        "sonnet[ctx=0]", "sonnet[ctx=8]", "sonnet[ctx=32]",
        "haiku[ctx=0]", "haiku[ctx=8]", "haiku[ctx=32]"]
    context = summary["context"]
    assert (context["prefix"], context["unit"], context["lengths"]) == (
        "builtin:coding-session", "turns", [0, 8, 32])
    sonnet, haiku = context["subjects"]
    assert [row["subject"] for row in haiku["lengths"]] == [
        "haiku[ctx=0]", "haiku[ctx=8]", "haiku[ctx=32]"]
    assert haiku["trend"]["slope"] < sonnet["trend"]["slope"] < 0  # haiku forgets faster
    assert haiku["trend"]["p_decline"] > 0.99 and haiku["trend"]["n_cases"] == 10
    assert [v["length"] for v in haiku["versus_shortest"]] == [8, 32]
    assert haiku["versus_shortest"][1]["p_lower"] > 0.99
    assert summary["goal"]["verdict"] == "supported"

    md = ix_in_process("report", "--lab", str(lab), "--format", "md", cwd=exp, env=env)
    assert md.code == 0 and "## By context length" in md.stdout and "### haiku" in md.stdout
    js = ix_in_process("report", "--lab", str(lab), "--json", cwd=exp, env=env)
    assert json.loads(js.stdout)["context"] == context
    page = lab / "report.html"
    html = ix_in_process("report", "--lab", str(lab), "--format", "html", "--out", str(page),
                         cwd=exp)
    assert html.code == 0, html.output
    text = page.read_text()
    section = text[text.index('<section id="context">'):]
    section = section[:section.index("</section>")]
    assert 'aria-label="activation rate by context length"' in section or \
        "activation rate by context length" in section
    assert section.count("<circle") == 6  # two subjects x three lengths
    assert section.count('class="band"') == 2  # each curve with its interval band
    assert "<h3>haiku</h3>" in section and "P(declines)" in section


@pytest.mark.slow
def test_a_context_run_killed_midway_resumes_to_the_uninterrupted_summary(lab, tmp_path):
    """SIGKILL while the expanded subjects run, then `--resume`: every (subject, case, trial)
    once, and the summary — context block included — that a run never interrupted has."""
    def experiment(root):
        exp = root / "e"
        write(exp / "experiment.yaml", """
            name: e
            trials: 4
            concurrency: 4
            seed: 5
            sensor: {kind: activation, skill: t}
            subjects:
              - name: s
                runtime: {kind: mock, default_rate: 0.9, latency_ms: 15,
                          context_decay: {half_life: 8}}
            context: {prefix: builtin:coding-session, lengths: [0, 4, 16]}
            """)
        for i in range(8):
            write(exp / "cases" / f"c{i}.md",
                  f"---\nexpectation: {'must_trigger' if i % 2 else 'should_not_trigger'}\n"
                  f"---\nprompt {i}\n")
        return exp

    def stable(root):
        return stable_summary(
            json.loads((root / "e" / "results" / "summary-latest.json").read_text()))

    ref = tmp_path / "reference"
    experiment(ref)
    assert ix_in_process("run", "--lab", str(ref)).code == 0  # the reference, in process
    exp = experiment(lab)
    env = {k: v for k, v in os.environ.items() if not k.startswith("IX_")}
    proc = subprocess.Popen([str(Path(sys.executable).parent / "ix"), "run", "--lab", str(lab)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    log = exp / "results" / "trials.jsonl"
    deadline = time.monotonic() + 30
    while not (log.exists() and len(log.read_bytes().splitlines()) >= 30):
        assert time.monotonic() < deadline, "too few trials written"
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert 30 <= len(log.read_bytes().splitlines()) < 96
    r = ix_in_process("run", "--lab", str(lab), "--resume")
    assert r.code == 0, r.output
    lines = [json.loads(x) for x in log.read_text().splitlines() if x.endswith("}")]
    keys = [(x["subject"], x["probe_id"], x["trial"]) for x in lines]
    assert len(keys) == len(set(keys)) == 3 * 8 * 4
    assert stable(lab) == stable(ref)
    assert stable(lab)["context"]["subjects"][0]["subject"] == "s"


def test_a_context_run_on_the_real_claude_code_cli_sends_the_prefix_at_each_length(lab):
    """`ix run` with a claude-code subject against a loopback Messages API: at length 0 the
    request has no prior turns, at length 4 exactly the prefix's first four turns (as the
    Messages API sees them) before the prompt."""
    exp = lab / "e"
    write(lab / "skills" / "csv" / "SKILL.md",
          "---\nname: csv\ndescription: Profile CSV files.\n---\nx\n")
    write(exp / "experiment.yaml", """
        name: e
        trials: 1
        sensor: {kind: activation, skill: csv}
        subjects:
          - name: cc
            skills: [csv]
            runtime: {kind: claude-code, max_turns: 1, env: {CLAUDE_CODE_MAX_RETRIES: 0}}
        context: {prefix: builtin:coding-session, lengths: [0, 4]}
        """)
    write(exp / "cases" / "must-0.md", "---\nexpectation: must_trigger\n---\nProfile a.csv\n")
    write(exp / "cases" / "not-0.md", "---\nexpectation: should_not_trigger\n---\nA haiku\n")
    with FakeMessages() as api:
        r = run_ix("run", "--lab", str(lab), timeout=300,
                   env={"ANTHROPIC_API_KEY": FAKE_KEY, "ANTHROPIC_BASE_URL": api.url})
        requests = [q for q in api.requests if q.path.startswith("/v1/messages")]
    assert r.code == 0, r.output

    def turns(body):  # the conversation's messages before the prompt's, system ones aside
        messages = [m for m in body["messages"] if m["role"] != "system"]
        return messages[:-1]

    prefix = load_experiment(exp, lab).context.cut(4)
    expected = anthropic_history(prefix)
    by_length = sorted(len(turns(q.body)) for q in requests)
    assert by_length == [0, 0, len(expected), len(expected)]  # 2 cases at each length
    for q in requests:
        got = turns(q.body)
        if got:
            assert [m["role"] for m in got] == [m["role"] for m in expected]
            assert json.dumps(got[0]["content"]).count(prefix[0].content[:30]) == 1


def test_the_cache_the_index_and_the_results_work_on_the_expanded_subjects(lab):
    """Each length is its own stimulus for the cache (a replay hits at every length and
    gives the same answers), and `ix query`/`ix results` count the expanded subjects."""
    exp = lab_with_decay(lab)
    first = ix_in_process("run", "--lab", str(lab), "--cache")
    assert first.code == 0, first.output
    summary = json.loads((exp / "results" / "summary-latest.json").read_text())
    replay = ix_in_process("run", "--lab", str(lab), "--cache", "--cache-mode", "replay",
                           "--json")
    assert replay.code == 0, replay.output
    again = json.loads(replay.stdout)
    assert again["context"] == summary["context"]  # every length answered from the cache
    q = ix_in_process("query", "--lab", str(lab), "--json",
                      "SELECT subject, count(*) AS n FROM trials GROUP BY subject ORDER BY subject")
    assert q.code == 0, q.output
    rows = {r["subject"]: r["n"] for r in json.loads(q.stdout)}
    assert set(rows) == {f"{s}[ctx={n}]" for s in ("sonnet", "haiku") for n in (0, 8, 32)}
    assert set(rows.values()) == {2 * 20 * 5}  # two runs (recorded, replayed) of 20 x 5 each
