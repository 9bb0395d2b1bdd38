"""The bundled `outcome` example: does csv-summary help an agent do the job, at what cost?

`examples/lab/outcome` gives a scripted agent (`template/agent.py`, run by the `command`
runtime in each trial's workspace) a CSV fixture per case; `check.py` grades the profile it
writes. With csv-summary installed in the workspace (`.claude/skills/`) the agent slips less
and reads more. Asked in process, on a copy of the example lab."""

import json
from pathlib import Path

import pytest

from conftest import ix_in_process
from ix.api.reports import report as read_report


@pytest.mark.slow
def test_the_skill_helps_and_costs_more_tokens_but_less_per_success(example_lab: Path):
    r = ix_in_process("run", "--lab", str(example_lab), "outcome", "--json")
    assert r.code == 0, r.output
    summary = json.loads(r.stdout)
    assert summary["goal"]["verdict"] == "supported"
    passed = {s["name"]: sum(p["passed"] for p in s["probe_results"]) / sum(
        p["n"] for p in s["probe_results"]) for s in summary["subjects"]}
    assert passed["with-skill"] - passed["without-skill"] >= 0.3
    exp = example_lab / "outcome"
    lines = [json.loads(x) for x in (exp / "results" / "trials.jsonl").read_text().splitlines()]
    assert len(lines) == 100 and all(x["error"] is None for x in lines)
    # each trial's profile kept; the installed skill and the template are no outputs
    assert all([o["path"] for o in x["outputs"]] == ["summary.json"] for x in lines)
    report = read_report(example_lab, "outcome")  # report.json, kept by the run
    outcomes = report["outcomes"]
    (tokens,) = [c for c in outcomes["comparisons"] if c["metric"] == "tokens_input"]
    assert tokens["subject"] == "with-skill" and tokens["ratio"]["ci"][0] > 1.2
    per_success = outcomes["cost_per_success_ratio"]["with-skill"]
    assert per_success["value"] < 1  # dearer trials, but fewer wasted
