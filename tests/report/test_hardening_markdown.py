"""Markdown reports show names and notes as the text they are (issue 14, item 15).

Case ids, subject names, tags, battery names and annotations come from the lab (a cloned one,
a model's answer, an import): in `ix report --format md`, `ix leaderboard --format md` and a
battery's `report.md` (also printed by `ix batch`) they must never become HTML (`<script>`,
`<img onerror=…>`), a link, emphasis, a heading or an extra table cell. Each report is made by
the real `ix`, rendered with a real CommonMark renderer (markdown-it-py, which rich ships; raw
HTML allowed, as many renderers do) and checked: only the elements the report makes itself,
one column per subject, and every hostile string back as text.
"""

import html
import json
import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from conftest import case, ix_in_process, run_ix, write

RENDER = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


def _one_line(text: str) -> str:
    """`text` as Markdown shows it on one line: line breaks as spaces, no spaces around."""
    return re.sub(r"\r\n|[\r\n]", " ", text).strip(" \t")


CASE_IMG = "c<img src=x onerror=alert(1)>"
CASE_LINK = "[click](javascript:alert(1))"
CASE_PIPE = "a|b `tick` **bold** _em_ ~~gone~~"
SUBJECT_SVG = "s<svg onload=alert(1)>"
SUBJECT_HASH = "# heading | cell"
NOTE = "</td></tr></table><script>alert(1)</script>\n# not a heading\n- not an item | cell"
TAG = "x-_beta_"  # a valid tag that Markdown would read as emphasis
HOSTILE = (CASE_IMG, CASE_LINK, CASE_PIPE, SUBJECT_SVG, SUBJECT_HASH)

#: The elements a report makes itself; anything else came from the lab's text.
OWN_TAGS = {"h1", "h2", "h3", "p", "strong", "em", "code", "table", "thead", "tbody", "tr", "th",
            "td", "ul", "li"}


def _hostile_lab(root: Path) -> Path:
    lab = root / "lab"
    exp = lab / "exp"
    write(exp / "experiment.yaml", f"""
        name: exp
        trials: 2
        sensor: {{kind: activation, skill: target}}
        runtime:
          kind: mock
          default_rate: 0.5
        subjects:
          - name: '{SUBJECT_SVG}'
          - name: '{SUBJECT_HASH}'
    """)
    for i, case_id in enumerate((CASE_IMG, CASE_LINK, CASE_PIPE)):
        expectation = "must_trigger" if i % 2 == 0 else "should_not_trigger"
        case(exp, f"case-{i}", expectation, extra=f"id: '{case_id}'\n")
    return lab


def _ok(*args: str) -> str:
    r = run_ix(*args)
    assert r.code == 0, r.output
    return r.stdout


def _check_rendered(markdown: str, *texts: str) -> None:
    rendered = RENDER.render(markdown)
    tags = set(re.findall(r"<([a-zA-Z][\w-]*)", rendered))
    assert tags <= OWN_TAGS, (tags - OWN_TAGS, rendered)
    text = html.unescape(re.sub(r"<[^>]+>", "", rendered))
    for hostile in texts:
        assert _one_line(hostile) in text, hostile


@pytest.fixture(scope="module")
def hostile_lab(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    lab = _hostile_lab(tmp_path_factory.mktemp("md"))
    def set_up(*args: str) -> str:  # the run and its notes: in process, not under test
        r = ix_in_process(*args)
        assert r.code == 0, r.output
        return r.stdout

    run_id = json.loads(set_up("run", "--lab", str(lab), "exp", "--json"))["run_id"]
    set_up("annotate", "--lab", str(lab), run_id, NOTE)
    set_up("annotate", "--lab", str(lab), run_id, CASE_IMG, NOTE)
    set_up("tag", "--lab", str(lab), run_id, TAG)
    return lab, run_id


def test_a_markdown_report_shows_hostile_names_and_notes_as_text(hostile_lab):
    lab, run_id = hostile_lab
    markdown = _ok("report", "--lab", str(lab), run_id, "--format", "md")
    _check_rendered(markdown, *HOSTILE, NOTE, TAG)
    summary = markdown.split("## Summary")[1].split("##")[0]
    rows = [line for line in summary.splitlines() if line.startswith("|")]
    rendered = RENDER.render("\n".join(rows))
    # one column per subject, whatever the names hold
    assert {len(re.findall(r"<t[hd]>", row)) for row in rendered.split("<tr>")[1:]} == {4}
    against = _ok("report", "--lab", str(lab), run_id, "--format", "md", "--baseline", TAG)
    _check_rendered(against, TAG)


def test_a_markdown_leaderboard_shows_hostile_names_as_text(hostile_lab):
    lab, _ = hostile_lab
    _check_rendered(_ok("leaderboard", "--lab", str(lab), "--format", "md"), SUBJECT_SVG,
                    SUBJECT_HASH)


def test_a_battery_report_shows_hostile_names_as_text(hostile_lab):
    lab, _ = hostile_lab
    write(lab / "hostile.yaml", "name: 'n<img src=x onerror=alert(2)>'\nexperiments: [exp]\n"
                                "seeds: 1\ntrials: 1\n")
    printed = _ok("batch", str(lab / "hostile.yaml"), "--lab", str(lab))
    [folder] = [p for p in (lab / "batteries").iterdir() if p.is_dir()]
    markdown = (folder / "report.md").read_text(encoding="utf-8")
    _check_rendered(markdown, SUBJECT_SVG, SUBJECT_HASH, "n<img src=x onerror=alert(2)>")
    assert markdown.strip() in printed  # printed as written, not read as terminal markup
