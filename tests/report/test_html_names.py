"""The HTML report never cuts a condition's name: a chart writes a name whole, or a key
(`A`) that its key spells out (`A = frontend-design-plus-theme-factory[...][ctx=128]`), so
two conditions that differ only at their end never look alike (issue 33). The browser test
(tests/browser/test_html_report.py) checks that nothing is clipped on the page either."""

import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import EXAMPLE_LAB, ix_in_process
from ix.api.reports import report
from ix.report import charts
from ix.report.html import render_report_html

LONG = "frontend-design-plus-theme-factory"


def long_named_lab(root: Path) -> Path:
    """The example's context experiment (a sweep × context lengths) with a long subject
    name: eight conditions `frontend-design-plus-theme-factory[...][ctx=N]`."""
    lab = root / "lab"
    for name in ("context-degradation", "skills"):
        shutil.copytree(EXAMPLE_LAB / name, lab / name,
                        ignore=shutil.ignore_patterns("results"))
    spec = lab / "context-degradation" / "experiment.yaml"
    spec.write_text(spec.read_text().replace("- name: assistant", f"- name: {LONG}")
                    .replace('"assistant[', f'"{LONG}['), encoding="utf-8")
    return lab


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict:
    lab = long_named_lab(tmp_path_factory.mktemp("names"))
    r = ix_in_process("run", "--lab", str(lab), "--json", "--progress", "none")
    assert r.code == 0, r.output
    return dict(report(lab, json.loads(r.stdout)["run_id"]))


def shown_names(svg: str) -> set[str]:
    """The names a chart shows: its texts, and the full names its key spells out."""
    texts = [e.text or "" for e in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text")]
    return {t.split(" = ", 1)[1] if re.match(r"[A-Z]\d* = ", t) else t for t in texts}


def section(html: str, name: str) -> str:
    return html.split(f'<section id="{name}">', 1)[1].split("</section>", 1)[0]


def test_every_chart_shows_every_conditions_full_name(data):
    names = data["summary"]["subjects"]
    assert len(names) == 8 and all(n.startswith(LONG + "[") for n in names)
    page = render_report_html(data)
    assert "…" not in page  # nothing is cut with an ellipsis anywhere
    charts_of = {where: re.findall(r"<svg.*?</svg>", section(page, where), re.S)
                 for where in ("heatmap", "rates", "timeline", "context", "sweep")}
    assert all(charts_of.values()), {k: len(v) for k, v in charts_of.items()}
    for where, svgs in charts_of.items():
        for svg in svgs:
            shown = shown_names(svg)
            if where == "sweep":  # the sweep's bars: the conditions at the longest length
                wanted = [row["subject"] for row in data["sweep"]["rows"]]
            elif where == "context":  # the curves: one per subject without its length
                wanted = [s["subject"] for s in data["context"]["subjects"]]
            else:
                wanted = names
            assert set(wanted) <= shown, (where, sorted(set(wanted) - shown))


def test_a_name_that_fits_is_written_and_a_longer_one_gets_a_key_never_a_cut():
    keyed = charts.keyed(["short", "A", "x" * 40, "y" * 40], chars=10)
    assert keyed["short"] == "short" and keyed["A"] == "A"
    assert keyed["x" * 40] == "B" and keyed["y" * 40] == "C"  # "A" is a name: not a key
    assert list(keyed.key) == [("B", "x" * 40), ("C", "y" * 40)]
    svg = charts.bar_chart([charts.Bar("x" * 40, 0.5), charts.Bar("short", 0.2)])
    assert shown_names(svg) >= {"x" * 40, "short"} and "…" not in svg
    legend = charts.line_plot(["0 turns"], [charts.Series("z" * 90, [charts.Point(0.5)])])
    assert "z" * 90 in shown_names(legend)
