"""`ix report --format html` opened in a real browser (Debian's Chromium through Playwright):
the charts render, nothing is fetched, nothing runs, hostile strings read as text, and the
page fits a phone and prints. Runs are made by the real `ix run`; screenshots land under
each test's temporary directory."""

import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from browser_support import Watched
from conftest import EXAMPLE_LAB, case, run_ix, write

#: Chromium and a real report or server: left out by `scripts/test --fast`. (The runs
#: stay real `ix` subprocesses: the browser holds an event loop, so `ix run` cannot run
#: in this process while it is open.)
pytestmark = pytest.mark.slow

SCRIPT = "<script>window.__pwned = 'script'; alert('script')</script>"
IMG = "<img src=x onerror=\"window.__pwned = 'img'; alert('img')\">"
PAYLOAD = SCRIPT + IMG
CASE_ID = "<img src=x onerror=alert('case-id')>"  # ids may not hold '/'
SUBJECT = "<svg onload=alert('subject')>"


@dataclass
class Made:
    """A run and its HTML report."""

    lab: Path
    run_id: str
    html: Path
    data: dict[str, Any]  # ix report --json

    @property
    def url(self) -> str:
        return self.html.resolve().as_uri()


def run(lab: Path) -> str:
    """`ix run` of the lab's experiment; its run id."""
    r = run_ix("run", "--lab", str(lab), "--json", timeout=180)
    # 2: the hostile lab's erring subject fails every trial (a program that is not there)
    assert r.code in (0, 1, 2), r.output
    return str(json.loads(r.stdout)["run_id"])


def report(lab: Path, run_id: str, *html_args: str) -> Made:
    """`ix report --format html` of the run (and its JSON, to know what to expect)."""
    r = run_ix("report", run_id, "--lab", str(lab), "--format", "html", *html_args)
    assert r.code == 0, r.output
    html = Path(r.stderr.strip().removeprefix("wrote ").strip())
    assert html.is_file(), r.output
    r = run_ix("report", run_id, "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    return Made(lab, run_id, html, json.loads(r.stdout))


@pytest.fixture(scope="module")
def mock_run(tmp_path_factory: pytest.TempPathFactory) -> Made:
    """Three mock subjects (one erring), a goal, difficulties, an annotation and a tag."""
    lab = tmp_path_factory.mktemp("mock") / "lab"
    exp = lab / "exp"

    def runtime(rates: dict[str, float], errors: dict[str, float] | None = None) -> str:
        text = f"      kind: mock\n      activation_rates: {json.dumps(rates)}\n"
        return text + (f"      error_rates: {json.dumps(errors)}\n" if errors else "")

    write(exp / "experiment.yaml",
          "name: exp\ndescription: Does adding skill B degrade skill A?\ntrials: 4\n"
          "sensor: {kind: activation, skill: target}\n"
          "goal: {hypothesis: 'B lowers recall', metric: recall, compare: [control, with-b],"
          " direction: decrease, min_effect: 0.05}\n"
          "subjects:\n"
          "  - name: control\n    runtime:\n"
          + runtime({"must-001": 1, "must-002": 0.9, "must-003": 0.8, "not-001": 0.1})
          + "  - name: with-b\n    runtime:\n"
          + runtime({"must-001": 0.5, "must-002": 0.2, "not-001": 0.5})
          + "  - name: flaky\n    runtime:\n"
          + runtime({"must-001": 0.9, "must-002": 0.9, "must-003": 0.9},
                    {"must-002": 0.5, "not-002": 0.5}))
    for i, level in enumerate(("easy", "medium", "hard"), start=1):
        case(exp, f"must-{i:03d}", "must_trigger", extra=f"difficulty: {level}\n")
    case(exp, "not-001", "should_not_trigger", extra="difficulty: easy\n")
    case(exp, "not-002", "should_not_trigger", extra="difficulty: hard\n")
    run_id = run(lab)
    assert run_ix("annotate", run_id, "--lab", str(lab), "looks fine").code == 0
    assert run_ix("tag", run_id, "v1", "--lab", str(lab)).code == 0
    return report(lab, run_id)


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory: pytest.TempPathFactory) -> Made:
    """Hostile strings in a case id, a prompt, a subject's name, its answers, its error
    messages and in annotations, through the `command` runtime."""
    lab = tmp_path_factory.mktemp("hostile") / "lab"
    exp = lab / "exp"
    echo = f"import sys; print(sys.argv[1]); print({PAYLOAD!r})"
    write(exp / "experiment.yaml", "\n".join([
        "name: exp", "trials: 2", "sensor: {kind: matcher, contains: NEVER-PRINTED}",
        "subjects:",
        f"  - name: {json.dumps(SUBJECT)}",
        "    runtime:",
        "      kind: command",
        f"      argv: [{json.dumps(sys.executable)}, -c, {json.dumps(echo)}, '{{{{ prompt }}}}']",
        f"  - name: {json.dumps('erring ' + IMG)}",  # names may not hold '/' (</script>)
        "    runtime:",
        "      kind: command",
        "      argv: ['/nonexistent/{{ prompt }}']",
        ""]))
    case(exp, "hostile", "must_trigger", prompt=f"Say {PAYLOAD}",
         extra=f"id: {json.dumps(CASE_ID)}\n")
    case(exp, "plain", "should_not_trigger", prompt="hello & <b>bold</b>")
    run_id = run(lab)
    for args in ([run_id, f"run note {PAYLOAD}"], [run_id, CASE_ID, f"case note </pre>{PAYLOAD}"]):
        r = run_ix("annotate", *args, "--lab", str(lab))
        assert r.code == 0, r.output
    return report(lab, run_id, "--out", str(lab.parent / "hostile.html"))


@pytest.fixture(scope="module")
def long_names_run(tmp_path_factory: pytest.TempPathFactory) -> Made:
    """The example's sweep × context experiment with a long subject name: eight conditions
    `frontend-design-plus-theme-factory[context_decay.half_life=8][ctx=128]` and the like,
    pairs of which differ only at their end."""
    lab = tmp_path_factory.mktemp("names") / "lab"
    for name in ("context-degradation", "skills"):
        shutil.copytree(EXAMPLE_LAB / name, lab / name, ignore=shutil.ignore_patterns("results"))
    spec = lab / "context-degradation" / "experiment.yaml"
    spec.write_text(spec.read_text().replace("- name: assistant", f"- name: {LONG}")
                    .replace('"assistant[', f'"{LONG}['), encoding="utf-8")
    return report(lab, run(lab))


LONG = "frontend-design-plus-theme-factory"
#: A chart text's own words, without its tooltip (`<title>`).
OWN_TEXT = ("t => [...t.childNodes].filter(n => n.nodeType === 3).map(n => n.nodeValue)"
            ".join('')")


def open_report(watched_page: Any, made: Made, **size: int) -> Watched:
    w: Watched = watched_page(allow=(made.url,), **size)
    w.page.goto(made.url)
    w.page.wait_for_load_state("load")
    return w


def count(w: Watched, selector: str) -> int:
    return int(w.page.locator(selector).count())


def test_the_charts_render_with_no_network_and_no_errors(watched_page, mock_run):
    data = mock_run.data
    assert mock_run.html == mock_run.lab / "exp" / "results" / "runs" / mock_run.run_id / \
        "report.html"  # the default place (DESIGN.md §2)
    w = open_report(watched_page, mock_run)
    w.screenshot("mock-report")
    subjects, cases = data["summary"]["subjects"], data["summary"]["cases"]
    assert len(subjects) == 3 and len(cases) == 5

    assert count(w, "svg.chart-heatmap rect.cell") == len(subjects) * len(cases)
    bar_charts = w.page.locator("#rates svg.chart-bars")
    assert bar_charts.count() == 4  # the metric and three trial-level rates
    assert bar_charts.first.locator("rect.bar").count() == len(subjects)
    assert bar_charts.first.locator("path.whisker").count() == len(subjects)
    assert count(w, "#scores svg.chart-histogram rect.bin") > 0
    assert count(w, "#difficulty svg.chart-line circle.point") == 3 * 3
    attempts = data["timeline"]["attempts"]
    assert data["timeline"]["mode"] == "trials" and attempts == 3 * 5 * 4
    assert count(w, "#timeline svg.chart-timeline rect.mark") == attempts
    assert count(w, "#timeline rect.mark-error") == data["timeline"]["errors"] > 0
    assert count(w, "#comparisons svg.chart-bars") == 2  # each variant against the control
    for box in w.page.locator("svg.chart").all():  # laid out, not collapsed
        size = box.bounding_box()
        assert size is not None and size["width"] > 100 and size["height"] > 40

    text = w.page.inner_text("body")
    goal = data["goal"]
    assert f"{goal['verdict'].upper()} — goal:" in " ".join(text.split())  # the answer first
    assert "Does adding skill B degrade skill A?" in text
    assert "looks fine" in text and "v1" in text  # the annotation and the tag
    assert "runtime_error" in text  # the failures, with their messages
    for row in data["leaderboard"]["rows"]:
        assert row["subject"] in w.page.inner_text("#leaderboard")

    assert w.requests == [mock_run.url]  # the file itself, nothing else
    assert w.quiet(), (w.console_errors, w.page_errors, w.dialogs, w.blocked)


def test_hostile_strings_show_as_text_and_nothing_runs(watched_page, hostile_run):
    data = hostile_run.data
    assert data["failures"]["errors"][0]["kind"] == "command_not_found"
    w = open_report(watched_page, hostile_run)
    w.page.wait_for_timeout(300)  # time for an onerror to fire, if it could
    w.screenshot("hostile-report")
    assert w.page.evaluate("typeof window.__pwned") == "undefined"
    assert w.dialogs == []
    assert count(w, "script") == 0 and count(w, "img") == 0 and count(w, "iframe") == 0
    assert count(w, "svg svg") == 0  # no injected <svg onload>
    handlers = w.page.evaluate("""() => [...document.querySelectorAll('*')].flatMap(
        e => [...e.attributes].map(a => a.name)).filter(n => n.startsWith('on'))""")
    assert handlers == []

    text = w.page.inner_text("body")
    assert CASE_ID in text  # the case id, in the tables
    assert SUBJECT in text  # a subject's name
    assert SCRIPT in text and IMG in text  # its answer and the other's error message
    assert f"run note {PAYLOAD}" in text and f"case note </pre>{PAYLOAD}" in text
    assert "no such program" in text
    assert w.page.locator("#leaderboard td", has_text=SUBJECT).count() == 1
    tips = w.page.evaluate("""() => [...document.querySelectorAll('svg title')]
        .map(t => t.textContent)""")
    assert any(CASE_ID in t for t in tips)  # chart tooltips: text as well
    assert w.requests == [hostile_run.url]
    assert w.quiet(), (w.console_errors, w.page_errors, w.dialogs, w.blocked)


def test_a_strict_content_security_policy_forbids_scripts_and_fetches(hostile_run):
    html = hostile_run.html.read_text(encoding="utf-8")
    head = html.split("</head>")[0]
    assert ('http-equiv="Content-Security-Policy" content="default-src &#39;none&#39;; '
            "style-src &#39;unsafe-inline&#39;; img-src data:") in head
    lowered = html.lower()
    for loader in ("<script", "<link", "<iframe", "<img", "@import", "url(", "src=\"http",
                   "href=\"http"):
        assert loader not in lowered


def test_the_policy_stops_markup_that_escaping_would_have_missed(watched_page, hostile_run,
                                                                 tmp_path):
    """Second line of defence: the same page with raw markup slipped into its body (as an
    escaping bug would) still runs nothing and fetches nothing."""
    page = hostile_run.html.read_text(encoding="utf-8")
    slipped = tmp_path / "slipped.html"
    slipped.write_text(page.replace('<div class="ix-report">', '<div class="ix-report">'
                                    + PAYLOAD + '<img src="https://example.invalid/x.png">'
                                    + '<link rel="stylesheet" href="https://example.invalid/s.css">',
                                    1), encoding="utf-8")
    w: Watched = watched_page(allow=(slipped.as_uri(),))
    w.page.goto(slipped.as_uri())
    w.page.wait_for_timeout(300)
    w.screenshot("slipped")
    assert count(w, "script") == 1 and count(w, "img") == 2  # the markup is there...
    assert w.page.evaluate("typeof window.__pwned") == "undefined"  # ...and inert
    assert w.dialogs == [] and w.page_errors == []
    others = [u for u in w.requests if u != slipped.as_uri()]
    assert len(others) == 3  # two images and the stylesheet, each refused by the policy
    assert sorted(w.failed) == sorted((u, "csp") for u in others)
    assert w.blocked == []  # ...before any of them reached the network (or the route)
    assert w.console_errors and all("Content Security Policy" in m for m in w.console_errors)


@pytest.mark.parametrize("width", [375, 1280])
def test_the_page_fits_the_width_without_horizontal_scroll(watched_page, mock_run, width):
    w = open_report(watched_page, mock_run, width=width, height=800)
    w.screenshot(f"mock-report-{width}px")
    scroll, client = w.page.evaluate(
        "[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert scroll <= client, f"the page scrolls sideways at {width} px: {scroll} > {client}"
    wide = w.page.evaluate(f"""() => [...document.querySelectorAll('.ix-report *')]
        .filter(e => !e.closest('.table-wrap') && !e.closest('svg'))
        .filter(e => e.getBoundingClientRect().right > {width} + 1)
        .map(e => e.tagName + '.' + e.className)""")
    assert wide == []  # only tables may be wider, and they scroll inside their frame
    assert w.quiet()


def test_print_emulation_renders_every_section(watched_page, mock_run, tmp_path):
    w = open_report(watched_page, mock_run)
    w.page.emulate_media(media="print")
    w.screenshot("mock-report-print")
    assert w.page.evaluate("getComputedStyle(document.querySelector('nav.toc')).display") \
        == "none"
    overflow = w.page.evaluate(
        "getComputedStyle(document.querySelector('.table-wrap')).overflowX")
    assert overflow == "visible"  # printed tables are not cut at a scroll edge
    for section in ("summary", "heatmap", "rates", "timeline", "comparisons", "failures"):
        assert w.page.locator(f"#{section}").is_visible()
    pdf = w.page.pdf(path=str(tmp_path / "report.pdf"))
    assert pdf.startswith(b"%PDF") and len(pdf) > 10_000
    assert w.quiet()



@pytest.mark.parametrize("width", [375, 1280])
def test_no_name_is_cut_or_clipped_in_a_chart_or_a_table(watched_page, long_names_run, width):
    """Every chart text lies inside its chart, and every condition's name is written whole
    (or spelled out in the chart's key); no table cell hides part of its content; at 1280 px
    the subjects' table needs no sideways scroll, its long names wrapping instead."""
    names = long_names_run.data["summary"]["subjects"]
    assert len(names) == 8
    w = open_report(watched_page, long_names_run, width=width, height=900)
    w.screenshot(f"long-names-{width}px")
    outside = w.page.evaluate("""() => [...document.querySelectorAll('svg.chart')].flatMap(
        svg => { const box = svg.getBoundingClientRect();
                 return [...svg.querySelectorAll('text')].filter(t => {
                     const r = t.getBoundingClientRect();
                     return r.left < box.left - 1 || r.right > box.right + 1
                         || r.top < box.top - 1 || r.bottom > box.bottom + 1; })
                   .map(OWN_TEXT); })""".replace("OWN_TEXT", OWN_TEXT))
    assert outside == []
    texts = w.page.evaluate(f"""() => [...document.querySelectorAll('svg.chart text')]
        .map({OWN_TEXT})""")
    assert not [t for t in texts if "…" in t]
    in_charts = {t.split(" = ", 1)[1] if " = " in t else t for t in texts}
    assert set(names) <= in_charts
    clipped = w.page.evaluate("""() => [...document.querySelectorAll(
        '.ix-report td, .ix-report th')].filter(c => c.scrollWidth > c.clientWidth + 1)
        .map(c => c.textContent)""")
    assert clipped == []
    summary = " ".join(w.page.inner_text("#summary").split())
    for name in names:
        assert name in summary.replace("- ", "-")  # wrapped, never cut
    if width == 1280:
        scroll, client = w.page.evaluate("""() => { const f = document.querySelector(
            '#summary .table-wrap'); return [f.scrollWidth, f.clientWidth]; }""")
        assert scroll <= client, f"the subjects' table scrolls: {scroll} > {client}"
    assert w.quiet()
