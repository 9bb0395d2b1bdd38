"""`prior: jeffreys` in experiment.yaml reaches every rate interval of the run's summary
(issue 15 §1); the default stays uniform. In process, through `ix.api.experiments.run`."""

import pytest
from scipy import stats

from conftest import mock_experiment
from ix.api.experiments import run


def _summary(lab, extra_yaml: str = "") -> dict:
    mock_experiment(lab, rates={"must-001": 1.0, "must-002": 0.5, "not-001": 0.0},
                    trials=4, extra_yaml=extra_yaml)
    (result,) = run(lab, warn=lambda _: None)
    return result.summary


def _one_sided_or_equal(k: int, n: int, a: float, b: float) -> list[float]:
    q = [0.0, 0.95] if k == 0 else [0.05, 1.0] if k == n else [0.025, 0.975]
    return list(stats.beta.ppf(q, k + a, n - k + b))


@pytest.mark.parametrize(("yaml", "prior", "ab", "u_prior"), [
    ("", "uniform", (1.0, 1.0), (1.0, 1.0)),
    ("prior: jeffreys\n", "jeffreys", (0.5, 0.5), (0.5, 0.5)),
])
def test_the_prior_reaches_score_precision_recall_and_f1(lab, yaml, prior, ab, u_prior):
    s = _summary(lab, yaml)
    assert s["statistics"]["prior"] == prior
    assert ("Jeffreys" in s["statistics"]["methods"]["score_ci"]) == (prior == "jeffreys")
    for p in s["probe_results"]:
        assert p["score_ci"] == pytest.approx(_one_sided_or_equal(p["passed"], p["n"], *ab),
                                              abs=1e-6)
    m = s["metrics"]
    assert m["precision_ci"] == pytest.approx(
        _one_sided_or_equal(m["tp"], m["tp"] + m["fp"], *ab), abs=1e-6)
    assert m["recall_ci"] == pytest.approx(
        _one_sided_or_equal(m["tp"], m["tp"] + m["fn"], *ab), abs=1e-6)
    tp, misses = m["tp"], m["fp"] + m["fn"]
    post = stats.beta(tp + u_prior[0], misses + u_prior[1])
    u = ([0.0, post.ppf(0.95)] if tp == 0 < misses else [post.ppf(0.05), 1.0]
         if misses == 0 < tp else list(post.ppf([0.025, 0.975])))
    assert m["f1_ci"] == pytest.approx([2 * x / (1 + x) for x in u], abs=1e-6)


@pytest.mark.parametrize("yaml", ["", "prior: jeffreys\n"])
def test_a_non_uniform_prior_is_printed_in_the_terminal_summary_and_both_reports(lab, yaml):
    from rich.console import Console

    from ix.report.console import summary_renderable
    from ix.report.html import render_report_html
    from ix.report.markdown import report_markdown
    from ix.report.run_report import build_report

    s = _summary(lab, yaml)
    console = Console(width=80, record=True, color_system=None)
    console.print(summary_renderable(s))
    terminal = console.export_text()
    report = build_report(s, {}, [])
    markdown, page = report_markdown(report), render_report_html(report)
    jeffreys = bool(yaml)
    assert ("jeffreys prior" in " ".join(terminal.split())) == jeffreys
    assert ("prior jeffreys" in markdown) == jeffreys
    assert ("prior of the intervals</dt><dd>jeffreys" in page) == jeffreys
