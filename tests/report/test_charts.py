"""The SVG charts of the HTML report: every text escaped, shapes where the numbers say."""

import xml.etree.ElementTree as ET

import pytest

from ix.report import charts

NS = {"s": "http://www.w3.org/2000/svg"}
HOSTILE = ['<script>alert(1)</script>', '<img src=x onerror=alert(1)>', '"><svg onload=x>',
           "a & b ' c"]


def parse(svg: str) -> ET.Element:
    """The chart as XML: it must be well-formed, which an unescaped `<` or `&` would break."""
    return ET.fromstring(svg)


def shapes(root: ET.Element, cls: str) -> list[ET.Element]:
    return [e for e in root.iter() if cls in (e.get("class") or "").split()]


def every_text(root: ET.Element) -> str:
    return "\n".join(t for e in root.iter() for t in (e.text, e.tail, *e.attrib.values()) if t)


def test_hostile_labels_are_escaped_in_every_chart():
    name = "".join(HOSTILE)
    svgs = [
        charts.heatmap([name], [name], {(name, name): charts.Cell(0.5, name, flagged=True)}),
        charts.bar_chart([charts.Bar(name, 0.5, 0.2, 0.8, title=name)]),
        charts.histogram({name: [0.1, 0.5]}),
        charts.line_plot([name, "b"], [charts.Series(name, [charts.Point(0.3, 0.1, 0.5, name),
                                                            None])]),
        charts.timeline([charts.Lane(name, [charts.Mark(0, 5, "error", name)], title=name)],
                        10.0),
        charts.timeline([charts.Lane(name, bins=[{"ok": 1, "wrong": 0, "error": 2}])], 10.0,
                        bin_ms=10.0),
    ]
    for svg in svgs:
        assert "<script" not in svg and "<img" not in svg and "<svg onload" not in svg
        root = parse(svg)  # well-formed: nothing unescaped
        assert "<script>alert(1)</scri" in every_text(root)  # shown as text (maybe clipped)
        assert not [e for e in root.iter() if e.tag.split("}")[1] in ("script", "img",
                                                                      "foreignObject")]
        assert not [a for e in root.iter() for a in e.attrib if a.lower().startswith("on")]


def test_bars_are_proportional_to_their_values_and_whiskers_stay_on_the_axis():
    bars = [charts.Bar("a", 1.0, 0.8, 1.0), charts.Bar("b", 0.5, 0.3, 0.7),
            charts.Bar("c", 0.25, -0.5, 1.7), charts.Bar("d", None)]
    root = parse(charts.bar_chart(bars, plot_width=300))
    drawn = shapes(root, "bar")
    assert len(drawn) == 3  # None draws no bar
    widths = [float(r.get("width")) for r in drawn]
    assert widths[0] == pytest.approx(300, abs=0.1)
    assert widths[1] / widths[0] == pytest.approx(0.5, abs=0.01)
    assert widths[2] / widths[0] == pytest.approx(0.25, abs=0.01)
    x0 = float(drawn[0].get("x"))
    assert all(float(r.get("x")) == x0 for r in drawn)  # all start at 0
    for w in shapes(root, "whisker"):
        xs = [float(tok[1:].split()[0]) for tok in w.get("d").replace("H", " H").split()
              if tok[0] == "M"]
        assert all(x0 - 0.1 <= x <= x0 + 300 + 0.1 for x in xs)
    assert "n/a" in every_text(root)


def test_differences_grow_from_zero_in_a_signed_domain():
    root = parse(charts.bar_chart([charts.Bar("down", -0.5), charts.Bar("up", 0.25)],
                                  domain=(-1, 1), plot_width=400))
    down, up = shapes(root, "bar")
    zero = float(up.get("x"))
    assert float(down.get("x")) + float(down.get("width")) == pytest.approx(zero, abs=0.1)
    assert float(down.get("width")) == pytest.approx(100, abs=0.1)
    assert float(up.get("width")) == pytest.approx(50, abs=0.1)


def test_heatmap_has_a_cell_per_row_and_column_and_flags_wrong_votes():
    rows, cols = ["c1", "c2", "c3"], ["s1", "s2"]
    cells = {("c1", "s1"): charts.Cell(1.0, "t"), ("c1", "s2"): charts.Cell(0.0, "t", True),
             ("c2", "s1"): charts.Cell(None, "no data"), ("c3", "s2"): charts.Cell(0.5)}
    root = parse(charts.heatmap(rows, cols, cells))
    drawn = shapes(root, "cell")
    assert len(drawn) == 6
    assert sum(r.get("stroke") == "#D00000" for r in drawn) == 1
    assert sorted(r.get("data-value") for r in drawn if r.get("data-value")) == ["0", "0.5", "1"]
    assert charts.shade(0.0) != charts.shade(1.0)


def test_histogram_counts_each_value_once_and_closes_the_last_bin():
    root = parse(charts.histogram({"a": [0.0, 0.05, 0.5, 1.0, 1.0], "b": [0.99, 2.0]}, bins=10))
    counts = {}
    for r in shapes(root, "bin"):
        counts.setdefault(r.get("fill"), []).append(int(r.get("data-count")))
    assert sum(counts[charts.color(0)]) == 5
    assert sum(counts[charts.color(1)]) == 1  # 2.0 is outside the domain
    tallest = max(float(r.get("height")) for r in shapes(root, "bin"))
    two = [r for r in shapes(root, "bin") if r.get("data-count") == "2"]
    assert all(float(r.get("height")) == pytest.approx(tallest) for r in two)


def test_line_plot_has_a_point_per_value_and_breaks_at_missing_ones():
    series = [charts.Series("a", [charts.Point(1.0), charts.Point(0.5), None]),
              charts.Series("b", [None, charts.Point(0.0, 0.0, 0.2), charts.Point(0.25)])]
    root = parse(charts.line_plot(["easy", "medium", "hard"], series))
    points = shapes(root, "point")
    assert len(points) == 4
    y = {p.get("data-value"): float(p.get("cy")) for p in points}
    assert y["1"] < y["0.5"] < y["0.25"] < y["0"]  # higher values sit higher
    assert len(shapes(root, "line")) == 2


def test_timeline_places_trials_by_start_and_marks_errors():
    marks = [charts.Mark(0, 100, "ok"), charts.Mark(500, 500, "error"),
             charts.Mark(900, 0, "wrong")]
    root = parse(charts.timeline([charts.Lane("s", marks)], 1000.0))
    drawn = shapes(root, "mark")
    assert len(drawn) == 3
    xs = [float(r.get("x")) for r in drawn]
    assert xs[0] < xs[1] < xs[2]
    assert float(drawn[1].get("width")) == pytest.approx(5 * float(drawn[0].get("width")), rel=0.01)
    assert float(drawn[2].get("width")) >= 1.5  # a zero-length trial is still visible
    assert len(shapes(root, "mark-error")) == 1 and drawn[1].get("fill") == "#D00000"


def test_bad_domains_are_refused():
    with pytest.raises(ValueError):
        charts.bar_chart([charts.Bar("a", 0.5)], domain=(1, 0))
    with pytest.raises(ValueError):
        charts.histogram({"a": [0.5]}, bins=0)
