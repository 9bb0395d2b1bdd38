"""The HTML report's page and data, without a browser (tests/browser/ opens it in one)."""

import copy
import json
import re
from pathlib import Path

import pytest

from conftest import ix_in_process, mock_experiment, run_ix
from ix.report import figures
from ix.report.html import REPORT_CSS, render_report_html, report_body_html


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict]:
    """A mock run without difficulties; its id and `ix report --json`."""
    lab = tmp_path_factory.mktemp("html") / "lab"
    mock_experiment(lab, rates={"must-001": 0.9, "must-002": 0.5, "not-001": 0.2}, trials=3)
    r = ix_in_process("run", "--lab", str(lab), "--json")  # set-up, in process
    assert r.code == 0, r.output
    run_id = json.loads(r.stdout)["run_id"]
    r = ix_in_process("report", run_id, "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    return lab, run_id, json.loads(r.stdout)


def test_every_css_rule_is_scoped_to_the_report():
    css = re.sub(r"/\*.*?\*/", "", REPORT_CSS, flags=re.S)
    selectors = [s.strip() for block in re.findall(r"([^{}]+)\{[^{}]*\}", css)
                 for s in block.split(",")]
    assert selectors
    assert [s for s in selectors if not s.startswith(".ix-report")] == []


def test_the_body_is_a_fragment_and_the_page_wraps_it(made):
    data = made[2]
    body = report_body_html(data)
    assert body.lstrip().startswith('<div class="ix-report">')
    assert not re.search(r"<(html|head|body|style|meta)[\s>]", body)
    page = render_report_html(data)
    assert page.startswith("<!DOCTYPE html>") and body in page
    assert '<meta http-equiv="Content-Security-Policy"' in page and REPORT_CSS in page


def test_a_run_without_difficulties_says_so_in_place_of_the_chart(made):
    data = made[2]
    assert data["difficulty"] is None
    body = report_body_html(data)
    section = body.split('id="difficulty"')[1].split("</section>")[0]
    assert "have no difficulty" in section and "<svg" not in section


def test_report_data_from_before_the_html_report_still_renders(made):
    """`ix view` may hand over older report data: the newer sections are left out."""
    data = copy.deepcopy(made[2])
    for key in ("goal", "comparisons", "rates", "difficulty", "timeline", "routing"):
        data.pop(key)
    for row in data["failures"]["cases"]:
        row.pop("examples")
        row.pop("prompt")
    body = report_body_html(data)
    assert "The trials have no start times" in body and "nothing to compare" in body


def test_html_goes_to_the_run_folder_by_default_or_to_out(made, tmp_path):
    lab, run_id, _ = made
    r = run_ix("report", run_id, "--lab", str(lab), "--format", "html")
    assert r.code == 0, r.output
    default = lab / "exp" / "results" / "runs" / run_id / "report.html"
    assert r.stderr.strip() == f"wrote {default}" and r.stdout == ""
    assert default.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    out = tmp_path / "elsewhere.html"
    r = ix_in_process("report", run_id, "--lab", str(lab), "-f", "html", "-o", str(out))
    assert r.code == 0 and out.is_file(), r.output


@pytest.mark.parametrize(("args", "message"), [
    (["report", "--json", "--format", "html"], "--format"),
    (["leaderboard", "--format", "html"], "unknown format 'html'"),
])
def test_html_where_it_does_not_apply_is_refused(made, args, message):
    # the real command once for the exit-2 contract, the leaderboard's refusal in process
    command = run_ix if args[0] == "report" else ix_in_process
    r = command(*args, "--lab", str(made[0]))
    assert r.code == 2 and message in r.stderr and "Traceback" not in r.output


def point(subject: str, start: float, status: str = "ok") -> figures.TrialPoint:
    return figures.TrialPoint(subject, "c", 0, 0, start, 10.0, status,
                              "boom" if status == "error" else None)


def test_a_small_timeline_keeps_each_trial_and_a_big_one_counts_per_bin():
    points = [point("a", 1000.0 + i, "error" if i % 10 == 0 else "ok") for i in range(50)]
    small = figures.timeline(points, ["a", "b"], limit=100)
    assert small["mode"] == "trials" and small["attempts"] == 50 and small["errors"] == 5
    lane_a, lane_b = small["lanes"]
    assert [m["t"] for m in lane_a["marks"]] == list(range(50)) and lane_b["marks"] == []
    assert small["span_ms"] == 59.0
    big = figures.timeline(points, ["a"], limit=10, bins=6)
    assert big["mode"] == "bins" and len(big["lanes"][0]["bins"]) == 6
    totals = [sum(b.values()) for b in big["lanes"][0]["bins"]]
    assert sum(totals) == 50
    assert sum(b["error"] for b in big["lanes"][0]["bins"]) == 5
    assert figures.timeline([], ["a"]) is None


def test_difficulty_counts_the_cases_whose_majority_vote_is_right():
    summary = {"subjects": [{"name": "s", "probe_results": [
        {"probe_id": "e1", "correct": True}, {"probe_id": "e2", "correct": False},
        {"probe_id": "h1", "correct": True}, {"probe_id": "x", "correct": True},
        {"probe_id": "h2", "correct": None}]}]}
    cases = [{"probe_id": "e1", "difficulty": "easy"}, {"probe_id": "e2", "difficulty": "easy"},
             {"probe_id": "h1", "difficulty": "hard"}, {"probe_id": "h2", "difficulty": "hard"},
             {"probe_id": "x", "difficulty": None}]
    d = figures.difficulty(summary, cases)
    assert d["levels"] == ["easy", "hard"] and d["unrated"] == 1
    easy, hard = d["by_subject"]["s"]
    assert (easy["k"], easy["n"], easy["rate"]) == (1, 2, 0.5)
    assert (hard["k"], hard["n"], hard["rate"]) == (1, 1, 1.0)
    assert easy["ci"][0] < 0.5 < easy["ci"][1]
    assert figures.difficulty(summary, [{"probe_id": "x", "difficulty": None}]) is None


def test_trial_listings_say_invoked_and_wrong_not_passed_and_failed(made):
    """DESIGN.md §8 in the HTML and Markdown reports: counts of invoked trials, and the cases
    most often wrong (a should-not case that fired is wrong, not "passed")."""
    from ix.report.markdown import report_markdown

    data = made[2]
    body = report_body_html(data)
    assert "invoked/valid trials" in body and "passed/valid" not in body
    assert "Cases most often wrong" in body and "Cases that fail most" not in body
    assert "Trials that invoked the skill, should_not_trigger cases" in body
    assert "Trials that passed" not in body
    text = report_markdown(data)
    assert "invoked/valid trials" in text and "passed/valid" not in text
    assert "Cases most often wrong" in text and "| wrong or errored |" in text
