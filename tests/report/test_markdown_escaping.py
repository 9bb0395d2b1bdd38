"""`md_text` and `md_code`, which every Markdown report puts the lab's text through, render
as the text they hold (issue 14, item 15): whatever the text, a real CommonMark renderer
(markdown-it-py, which rich ships; raw HTML allowed, as many renderers do) gives it back as
text, in one paragraph, list item, table cell or code span: never HTML, a link, emphasis, a
heading, a list or a cell of its own. tests/report/test_hardening_markdown.py runs the reports.
"""

import html
import re

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from ix.report.markdown import md_code, md_text

RENDER = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])

#: Pieces Markdown and HTML give meaning to, so that random text hits them often.
PIECES = st.sampled_from([
    "<script>", "</script>", "<img src=x onerror=alert(1)>", "<!--", "-->", "&amp;", "&#60;",
    "&lt;", "|", "`", "``", "*", "**", "_", "__", "~~", "[", "]", "(", ")", "](", "][", "]:",
    "![", "#", "# ", "- ", "+ ", "1. ", "2) ", "> ", "\\", "\\|", "http://x.test", "<http://x>",
    "\n", "\r\n", "    ", "\t", " ", "a", "é", "😀",
])
TEXT = st.one_of(
    st.lists(PIECES, max_size=12).map("".join),
    st.text(st.characters(blacklist_categories=("Cc", "Cs")), max_size=40),
)


def _one_line(text: str) -> str:
    """`text` as Markdown shows it on one line: line breaks as spaces, no spaces around."""
    return re.sub(r"\r\n|[\r\n]", " ", text).strip(" \t")


def _inner(rendered: str, tag: str) -> str:
    found = re.fullmatch(rf"<{tag}>(.*)</{tag}>\n", rendered, re.S)
    assert found, rendered
    assert "<" not in found.group(1), rendered  # no element inside: text only
    return html.unescape(found.group(1))


@settings(max_examples=400, deadline=None)
@given(TEXT)
def test_md_text_renders_as_the_text_it_holds(text: str) -> None:
    assert _inner(RENDER.render("x " + md_text(text)), "p") == ("x " + _one_line(text)).strip()


@settings(max_examples=300, deadline=None)
@given(TEXT.filter(lambda t: t.strip()))
def test_md_text_at_the_start_of_a_list_item_stays_in_it(text: str) -> None:
    rendered = RENDER.render("- " + md_text(text))
    found = re.fullmatch(r"<ul>\n<li>(.*)</li>\n</ul>\n", rendered, re.S)
    assert found and "<" not in found.group(1), rendered
    assert html.unescape(found.group(1)).strip() == _one_line(text).strip()  # (U+00A0 too)


@settings(max_examples=300, deadline=None)
@given(TEXT, TEXT)
def test_md_text_is_one_table_cell(first: str, second: str) -> None:
    rendered = RENDER.render(f"| a | b |\n|---|---|\n| {md_text(first)} | {md_text(second)} |\n")
    cells = re.findall(r"<td>(.*?)</td>", rendered, re.S)
    assert len(cells) == 2, rendered
    assert [html.unescape(c).strip() for c in cells] == [_one_line(first).strip(),
                                                         _one_line(second).strip()]
    assert "<script" not in rendered and "<img" not in rendered


@settings(max_examples=300, deadline=None)
@given(TEXT.filter(lambda t: t.strip() and t == t.strip()))
def test_md_code_is_one_code_span(text: str) -> None:
    rendered = RENDER.render("x " + md_code(text))
    found = re.fullmatch(r"<p>x <code>(.*)</code></p>\n", rendered, re.S)
    assert found and "<" not in found.group(1), rendered
    assert html.unescape(found.group(1)) == _one_line(text)
