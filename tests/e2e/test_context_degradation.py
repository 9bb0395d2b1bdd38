"""A context-degradation experiment through the real `ix`: every subject at every length,
the summary's `context` block (schema-valid), the curve and the trend printed at 80
columns by `ix run` and `ix report`, and a goal on two lengths."""

import json

from conftest import run_ix, write
from ix.eval.schemas import summary_problems


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
    r = run_ix("run", "--lab", str(lab), env=env)
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

    md = run_ix("report", "--lab", str(lab), "--format", "md", cwd=exp, env=env)
    assert md.code == 0 and "## By context length" in md.stdout and "### haiku" in md.stdout
    js = run_ix("report", "--lab", str(lab), "--json", cwd=exp, env=env)
    assert json.loads(js.stdout)["context"] == context
