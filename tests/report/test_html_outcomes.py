"""The HTML report's outcomes: "At what cost" (each subject against the control, paired by
case) right after the Summary, and "Outcomes per trial" further down, in the words of
`ix.report.outcome_text` that the terminal and Markdown reports write; nothing for a run
from before the section. The report data is a real one (two mock subjects, in process); its
`outcomes` are swapped for chosen numbers where a test needs them."""

import copy
import json

import pytest
from markupsafe import escape

from conftest import comparison_experiment, ix_in_process
from ix.report.html import report_body_html


def estimate(value: float | None, lo: float | None, hi: float | None) -> dict:
    return {"value": value, "ci": [lo, hi], "n_cases": 8, "method": "bootstrap-t"}


def comparison(subject: str, metric: str, ratio: dict, p_lower: float | None,
               p_holm: float | None) -> dict:
    return {"subject": subject, "control": "base", "metric": metric,
            "difference": estimate(None, None, None), "ratio": ratio, "p_lower": p_lower,
            "p": p_holm, "p_holm": p_holm}


#: Tokens and cost, a judge's dimension (a name outside `outcome_text.LABELS`), and a
#: subject whose name is markup.
BOLD = "<b>bold</b>"
OUTCOMES = {
    "level": 0.9,
    "metrics": ["tokens_output", "cost_usd", "judge.correctness"],
    "by_subject": {
        "base": {"tokens_output": estimate(1200, 1000, 1400),
                 "cost_usd": estimate(0.0123, 0.01, 0.015),
                 "judge.correctness": estimate(0.5, 0.4, 0.6)},
        BOLD: {"tokens_output": estimate(1656, 1400, 1900),
               "cost_usd": estimate(0.02, 0.017, 0.024),
               "judge.correctness": estimate(None, None, None)},
    },
    "comparisons": [
        comparison(BOLD, "tokens_output", estimate(1.38, 1.21, 1.57), 0.01, 0.002),
        comparison(BOLD, "cost_usd", estimate(1.6, None, None), 0.2, None),
        comparison(BOLD, "judge.correctness", estimate(None, None, None), None, None),
    ],
    "cost_per_success": {"base": estimate(0.03, 0.02, 0.04), BOLD: estimate(0.025, 0.02, 0.03)},
    "cost_per_success_ratio": {BOLD: estimate(0.83, 0.7, 0.95)},
    "note": "per trial that stood <without> error",
}


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """`ix report --json` of a run of two mock subjects: its outcomes compare them."""
    lab = tmp_path_factory.mktemp("outcomes") / "lab"
    comparison_experiment(lab, n_must=3, n_not=2, trials=2, control=0.2,
                          variants={"variant": 0.9})
    r = ix_in_process("run", "--lab", str(lab), "--json", "--progress", "none")
    assert r.code == 0, r.output
    r = ix_in_process("report", json.loads(r.stdout)["run_id"], "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    return json.loads(r.stdout)


def section(html: str, name: str) -> str:
    return html.split(f'<section id="{name}">', 1)[1].split("</section>", 1)[0]


def test_a_real_run_has_both_sections_at_what_cost_right_after_the_summary(data):
    outcomes = data["outcomes"]
    assert outcomes["comparisons"] and outcomes["comparisons"][0]["control"] == "control"
    body = report_body_html(data)
    at = [body.find(x) for x in ("<h2>Summary</h2>", "<h2>At what cost</h2>",
                                 '<section id="heatmap">', "<h2>Outcomes per trial</h2>",
                                 "<h2>Failures</h2>")]
    assert -1 not in at and at == sorted(at), at
    cost = section(body, "cost")
    assert "paired by case against control at 95%" in cost.lower()
    assert cost.count('<td class="name">variant</td>') == len(outcomes["comparisons"])
    table = section(body, "outcomes")
    assert str(escape(outcomes["note"])) in table
    assert "tool calls" in table  # a quantity, by its label
    assert '<a href="#cost">' in body and '<a href="#outcomes">' in body


def test_changes_show_their_interval_and_every_name_is_escaped(data):
    body = report_body_html({**data, "outcomes": OUTCOMES})
    cost = section(body, "cost")
    assert "<b>" not in body.split('<section id="summary">', 1)[1]  # only the data has one
    assert '<td class="name">&lt;b&gt;bold&lt;/b&gt;</td>' in cost
    assert "against base at 90%" in cost and "change [90% CI]" in cost
    tokens, dollars, judge, per_success = cost.split("<tr>")[2:]  # after the head's
    assert "output tokens" in tokens and '<td class="num">+38% [+21%, +57%]</td>' in tokens
    assert '<td class="num">0.01</td>' in tokens and '<td class="num">0.002</td>' in tokens
    assert '<td class="num">+60%</td>' in dollars  # no interval: no brackets
    assert "judge: correctness" in judge and '<td class="num">–</td>' in judge
    assert "cost per success" in per_success and "-17% [-30%, -5%]" in per_success
    table = section(body, "outcomes")
    assert '<th class="num name">&lt;b&gt;bold&lt;/b&gt;</th>' in table
    assert "1,656 [1,400, 1,900]" in table and "&lt;without&gt;" in table
    assert "90% interval" in table


def test_no_comparison_leaves_out_at_what_cost_but_keeps_the_table(data):
    one = copy.deepcopy(OUTCOMES)
    one["by_subject"].pop(BOLD)
    one.update(comparisons=[], cost_per_success_ratio={})
    body = report_body_html({**data, "outcomes": one})
    assert '<section id="cost">' not in body and '<a href="#cost">' not in body
    assert "<h2>Outcomes per trial</h2>" in body


@pytest.mark.parametrize("how", ["missing", "none"])
def test_a_run_from_before_the_outcomes_shows_neither_section(data, how):
    older = {k: v for k, v in data.items() if k != "outcomes"}
    if how == "none":
        older["outcomes"] = None
    body = report_body_html(older)
    for gone in ("At what cost", "Outcomes per trial", '<section id="cost">',
                 '<section id="outcomes">', '<a href="#cost">', '<a href="#outcomes">'):
        assert gone not in body
    assert "<h2>Summary</h2>" in body and "<h2>Failures</h2>" in body
