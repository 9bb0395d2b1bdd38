"""`ix report --format github`: the first screen as GitHub Markdown, verdict first, within
GitHub's limits by leaving out whole sections (never a value) and saying which command shows
them."""

import json
from pathlib import Path

import pytest

from conftest import comparison_experiment, ix_in_process
from ix.report.github import COMMENT_LIMIT, report_github

GOAL = """goal:
  hypothesis: the variant degrades recall
  metric: recall
  compare: [control, variant]
  direction: decrease
  min_effect: 0.1
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[Path, str, dict]:
    lab = tmp_path_factory.mktemp("gh") / "lab"
    lab.mkdir()
    comparison_experiment(lab, n_must=10, n_not=4, trials=5, control=0.95,
                          variants={"variant": 0.2}, goal=GOAL)
    r = ix_in_process("run", "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    run_id = json.loads(r.stdout)["run_id"]
    data = json.loads(ix_in_process("report", run_id, "--lab", str(lab), "--json").stdout)
    return lab, run_id, data


def test_the_first_screen_reads_verdict_subjects_deltas_and_flipped_cases(run):
    lab, run_id, _ = run
    r = ix_in_process("report", run_id, "--lab", str(lab), "--format", "github")
    assert r.code == 0, r.output
    text = r.stdout
    assert text.startswith(f"## e · run `{run_id}`\n")
    order = [text.index(s) for s in ("**SUPPORTED** — goal: the variant degrades recall",
                                     "| control (control) | 1.000 [",
                                     "| variant (treatment) | 0.000 [",
                                     "| variant | control | 0.000 | -1.00 [",
                                     "**Cases that matter**", "| must-00")]
    assert order == sorted(order)
    assert "## Summary" not in text and "Score breakdown" not in text  # the first screen only
    assert text.rstrip().endswith(f"the whole report: `ix report {run_id}`</sub>")
    assert len(text) <= COMMENT_LIMIT


@pytest.mark.parametrize("share", [0.3, 0.7, 0.99])
def test_over_the_limit_whole_sections_are_left_out_and_named(run, share):
    _, run_id, data = run
    full = report_github(data)
    limit = int(len(full) * share)
    cut = report_github(data, limit=limit)
    assert "**SUPPORTED** — goal" in cut  # the heading and the verdict are never left out
    kept = [line for line in cut.splitlines() if line and "left out" not in line]
    assert all(line in full.splitlines() for line in kept)  # whole lines: no value cut
    assert "more section(s) left out to keep within GitHub's limit" in cut
    assert f"`ix report {run_id}` shows them" in cut
    if share > 0.5:  # below, the heading and the verdict alone are longer
        assert len(cut) <= limit


def test_within_the_limit_nothing_is_left_out(run):
    _, _, data = run
    assert "left out" not in report_github(data)
