"""Charts of the HTML report as inline SVG strings: heatmap, bars with interval whiskers,
histogram, line plot, execution timeline.

Pure functions: numbers and labels in, one `<svg>` string out, no I/O and no script. Every
text a caller passes (labels, titles: case ids, subject names, error messages) is escaped
here, so a caller may mark the result safe. Each chart has a `viewBox` and a natural width;
the report's CSS scales it down to the page (`max-width: 100%`). Shapes carry a class
(`cell`, `bar`, `whisker`, `bin`, `point`, `mark`) that the stylesheet and the tests use;
hovering a shape shows its `<title>`.
"""

import html
import itertools
import math
import string
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

#: Okabe–Ito colours (distinguishable with the common colour-vision deficiencies).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
           "#000000")
#: Trial outcomes on the timeline: outcome matches the expectation, goes against it, errored.
STATUS_COLORS = {"ok": "#009E73", "wrong": "#E69F00", "error": "#D00000"}
_FONT = 12
_LABEL_CHARS = 26


def color(i: int) -> str:
    """The i-th series colour (cycles after eight)."""
    return PALETTE[i % len(PALETTE)]


def esc(text: object) -> str:
    """Text escaped for SVG/HTML element content and quoted attribute values."""
    return html.escape(str(text), quote=True)


@dataclass(frozen=True)
class Labels:
    """What a chart writes for each name: the name itself when it fits, else a short key
    (`A`, `B`, …) that the chart's key spells out in full (`A = <name>`). A name is never
    cut: two conditions that differ only at their end must not look alike."""

    shown: Mapping[str, str]
    key: Sequence[tuple[str, str]]  # (key, name), in the order the keys were given

    def __getitem__(self, name: str) -> str:
        return self.shown[name]


def keyed(names: Sequence[str], chars: int = _LABEL_CHARS,
           taken: Labels | None = None) -> Labels:
    """`names` as they fit in `chars` characters; the longer ones by key. `taken`: the
    labels of another axis of the same chart, whose keys (and names) are not reused."""
    used = set(names) | (set(taken.shown.values()) if taken else set())
    shown: dict[str, str] = {}
    key: list[tuple[str, str]] = []
    letters = _keys()
    for name in dict.fromkeys(names):
        if len(name) <= chars:
            shown[name] = name
            continue
        k = next(k for k in letters if k not in used)
        shown[name] = k
        key.append((k, name))
    return Labels(shown, key)


def _keys() -> Iterator[str]:
    """A, B, …, Z, A2, B2, …"""
    for n in itertools.count(1):
        for c in string.ascii_uppercase:
            yield c if n == 1 else f"{c}{n}"


def _key_lines(key: Sequence[tuple[str, str]], x: float, y: float) -> tuple[list[str], float,
                                                                           float]:
    """The chart's key under it, one `A = <full name>` line each: the shapes, the height
    they take and the right edge of the longest line."""
    out = [_text(x, y + 16 * (i + 1), f"{k} = {name}", cls="key")
           for i, (k, name) in enumerate(key)]
    right = max((x + _text_width(f"{k} = {name}") for k, name in key), default=x)
    return out, (16 * len(key) + 8 if key else 0.0), right


def _text_width(text: str) -> float:
    """Room for `text` at the chart's font size (generous: wide letters count more)."""
    wide = sum(1 for ch in text if ch in "MWmw@%")
    return 7.0 * len(text) + 3.0 * wide


def _n(x: float) -> str:
    """A coordinate, short: one decimal, no trailing zero."""
    s = f"{x:.1f}"
    return s[:-2] if s.endswith(".0") else s


def _svg(width: float, height: float, label: str, body: Sequence[str], kind: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="chart chart-{kind}" '
            f'viewBox="0 0 {_n(width)} {_n(height)}" width="{_n(width)}" '
            f'height="{_n(height)}" role="img" aria-label="{esc(label)}" '
            f'font-size="{_FONT}">' + "".join(body) + "</svg>")


def _title(text: str) -> str:
    return f"<title>{esc(text)}</title>" if text else ""


def _text(x: float, y: float, text: str, *, anchor: str = "start", cls: str = "",
          extra: str = "") -> str:
    c = f' class="{cls}"' if cls else ""
    return (f'<text x="{_n(x)}" y="{_n(y)}" text-anchor="{anchor}"{c}{extra}>'
            f"{esc(text)}</text>")


def _label_width(shown: Sequence[str]) -> float:
    """Room for a column of labels (each a name that fits, or its key)."""
    return 14 + max((_text_width(t) for t in shown), default=28.0)


def _clamp(x: float, lo: float, hi: float) -> float:
    return min(max(x, lo), hi)


def _legend(names: Sequence[str], colors: Sequence[str], x: float, y: float,
            width: float) -> tuple[list[str], float, float]:
    """Swatches and full names, wrapped to `width` (a name longer than that gets a line of
    its own, and the chart widens to hold it); returns the shapes, the height used and the
    right edge of the widest line."""
    out: list[str] = []
    cx, cy, right = x, y, x
    for name, fill in zip(names, colors, strict=True):
        w = 14 + _text_width(name) + 14
        if cx > x and cx + w > x + width:
            cx, cy = x, cy + 18
        out.append(f'<rect class="swatch" x="{_n(cx)}" y="{_n(cy - 9)}" width="10" '
                   f'height="10" fill="{fill}">{_title(name)}</rect>')
        out.append(_text(cx + 14, cy, name, cls="legend"))
        right = max(right, cx + w - 14)
        cx += w
    return out, cy - y + 18, right


def _ticks(lo: float, hi: float, count: int = 4) -> list[float]:
    """About `count` round tick values covering [lo, hi]."""
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    return [round(first + i * step, 10) for i in range(int((hi - first) / step + 1e-9) + 1)]


def _fmt(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".") if x != int(x) else str(int(x))


# --- heatmap ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Cell:
    """One heatmap cell: `value` in [0, 1] (None: no data), its tooltip, and whether to flag
    it (drawn with a red outline, e.g. a majority vote that goes against the expectation)."""

    value: float | None
    title: str = ""
    flagged: bool = False


def shade(value: float) -> str:
    """A sequential colour for a value in [0, 1]: pale for 0, dark blue for 1."""
    v = _clamp(value, 0.0, 1.0)
    lo, hi = (247, 251, 255), (8, 69, 148)
    r, g, b = (round(a + (z - a) * v) for a, z in zip(lo, hi, strict=True))
    return f"#{r:02x}{g:02x}{b:02x}"


def _scale_legend(x: float, y: float) -> list[str]:
    """The heatmap's key: five shades from 0 to 100 %, and the flagged outline."""
    out = [_text(x, y + 12, "0", cls="tick")]
    for k in range(5):
        out.append(f'<rect x="{_n(x + 12 + 22 * k)}" y="{_n(y)}" width="22" height="16" '
                   f'fill="{shade(k / 4)}"/>')
    out.append(_text(x + 12 + 110 + 4, y + 12, "100 %", cls="tick"))
    out.append(f'<rect x="{_n(x + 172)}" y="{_n(y + 1)}" width="20" height="14" fill="#ffffff" '
               'stroke="#D00000" stroke-width="2"/>')
    out.append(_text(x + 198, y + 12, "vote wrong", cls="tick"))
    return out


def heatmap(rows: Sequence[str], cols: Sequence[str],
            cells: Mapping[tuple[str, str], Cell], *, label: str = "heatmap",
            show_values: bool = True) -> str:
    """Rows × columns of coloured cells (value in [0, 1]); a missing cell is grey."""
    cw, ch = 46.0, 18.0
    col_names = keyed(cols, 18)
    row_names = keyed(rows, taken=col_names)
    left = _label_width([row_names[r] for r in rows])
    # column labels at -45°: room above for the longest one, and for a glyph's own height
    top = 18 + 0.72 * max((_text_width(col_names[c]) for c in cols), default=28.0)
    key, key_h, key_right = _key_lines([*col_names.key, *row_names.key], 8.0,
                                       top + ch * len(rows) + 34)
    width = max(left + cw * len(cols) + 40, 300.0, key_right + 8)
    height = top + ch * len(rows) + 40 + key_h
    out: list[str] = _scale_legend(8.0, top + ch * len(rows) + 14) + key
    for j, col in enumerate(cols):
        x = left + cw * j + cw / 2
        out.append(f'<text x="{_n(x)}" y="{_n(top - 6)}" transform="rotate(-45 {_n(x)} '
                   f'{_n(top - 6)})" class="col-label">{esc(col_names[col])}'
                   f"{_title(col)}</text>")
    # shared attributes sit on groups: a big run has thousands of cells
    rects = ['<g stroke="#ffffff" stroke-width="1">']
    labels = ['<g text-anchor="middle" font-size="10" fill="#111111" pointer-events="none">']
    for i, row in enumerate(rows):
        y = top + ch * i
        out.append(f'<text x="{_n(left - 6)}" y="{_n(y + ch / 2 + 4)}" text-anchor="end" '
                   f'class="row-label">{esc(row_names[row])}{_title(row)}</text>')
        for j, col in enumerate(cols):
            cell = cells.get((row, col))
            x = left + cw * j
            if cell is None or cell.value is None:
                fill, ink, shown, value = "#d9d9d9", "", "–", ""
            else:
                fill = shade(cell.value)
                ink = ' fill="#ffffff"' if cell.value > 0.55 else ""
                shown = f"{round(100 * cell.value)}"
                value = f' data-value="{cell.value:g}"'
            flag = ' stroke="#D00000" stroke-width="2"' if cell and cell.flagged else ""
            rects.append(f'<rect class="cell" x="{_n(x)}" y="{_n(y)}" width="{_n(cw)}" '
                         f'height="{_n(ch)}" fill="{fill}"{flag}{value}>'
                         f"{_title(cell.title if cell else f'{row} · {col}: no data')}</rect>")
            if show_values:
                labels.append(f'<text x="{_n(x + cw / 2)}" y="{_n(y + ch / 2 + 4)}"{ink}>'
                              f"{esc(shown)}</text>")
    out += [*rects, "</g>", *labels, "</g>"] if show_values else [*rects, "</g>"]
    return _svg(width, height, label, out, "heatmap")


# --- bars with whiskers ----------------------------------------------------------------------

@dataclass(frozen=True)
class Bar:
    """One horizontal bar from 0 (or the domain's low end) to `value`, with an interval
    whisker [lo, hi]; `value` None draws no bar and says n/a."""

    label: str
    value: float | None
    lo: float | None = None
    hi: float | None = None
    title: str = ""
    color: str = PALETTE[0]


def bar_chart(bars: Sequence[Bar], *, domain: tuple[float, float] = (0.0, 1.0),
              label: str = "bar chart", plot_width: float = 300.0) -> str:
    """Horizontal bars with interval whiskers on a shared axis over `domain`. The bar starts
    at 0 when 0 is inside the domain (differences grow left or right of it), else at the
    domain's low end; values and interval ends outside the domain are clamped to it."""
    d0, d1 = domain
    if not d1 > d0:
        raise ValueError(f"domain must be increasing; got {domain!r}")
    row = 24.0
    names = keyed([b.label for b in bars])
    left = _label_width([names[b.label] for b in bars])
    right = 118.0
    top, bottom = 8.0, 24.0
    key, key_h, key_right = _key_lines(names.key, 8.0, top + row * len(bars) + bottom - 4)
    width = max(left + plot_width + right, key_right + 8)
    height = top + row * len(bars) + bottom + key_h

    def x(v: float) -> float:
        return left + plot_width * (_clamp(v, d0, d1) - d0) / (d1 - d0)

    base = x(0.0) if d0 <= 0.0 <= d1 else x(d0)
    out: list[str] = list(key)
    axis_y = top + row * len(bars)
    for t in _ticks(d0, d1):
        out.append(f'<line class="grid" x1="{_n(x(t))}" y1="{_n(top)}" x2="{_n(x(t))}" '
                   f'y2="{_n(axis_y)}" stroke="#e0e0e0"/>')
        out.append(_text(x(t), axis_y + 14, _fmt(t), anchor="middle", cls="tick"))
    out.append(f'<line class="axis" x1="{_n(base)}" y1="{_n(top)}" x2="{_n(base)}" '
               f'y2="{_n(axis_y)}" stroke="#666666"/>')
    for i, b in enumerate(bars):
        y = top + row * i
        mid = y + row / 2
        out.append(_text(left - 6, mid + 4, names[b.label], anchor="end", cls="row-label"))
        if b.value is None:
            out.append(_text(base + 4, mid + 4, "n/a", cls="na"))
            continue
        xv = x(b.value)
        out.append(f'<rect class="bar" x="{_n(min(base, xv))}" y="{_n(y + 5)}" '
                   f'width="{_n(abs(xv - base))}" height="{_n(row - 10)}" fill="{b.color}" '
                   f'data-value="{b.value:g}">{_title(b.title or b.label)}</rect>')
        text = f"{b.value:.2f}"
        if b.lo is not None and b.hi is not None:
            lo, hi = x(b.lo), x(b.hi)
            out.append(f'<path class="whisker" d="M{_n(lo)} {_n(mid)}H{_n(hi)}'
                       f"M{_n(lo)} {_n(mid - 5)}V{_n(mid + 5)}M{_n(hi)} {_n(mid - 5)}"
                       f'V{_n(mid + 5)}" stroke="#222222" stroke-width="1.5" fill="none" '
                       f'data-lo="{b.lo:g}" data-hi="{b.hi:g}"/>')
            text += f" [{b.lo:.2f}, {b.hi:.2f}]"
        out.append(_text(left + plot_width + 8, mid + 4, text, cls="value"))
    return _svg(width, height, label, out, "bars")


# --- histogram -------------------------------------------------------------------------------

def histogram(series: Mapping[str, Sequence[float]], *, bins: int = 10,
              domain: tuple[float, float] = (0.0, 1.0), label: str = "histogram",
              colors: Sequence[str] | None = None) -> str:
    """Counts of each series' values in `bins` equal bins over `domain`, the series side by
    side in each bin (the last bin is closed: a value equal to the high end counts)."""
    d0, d1 = domain
    if not d1 > d0 or bins < 1:
        raise ValueError("need an increasing domain and at least one bin")
    names = list(series)
    fills = list(colors) if colors is not None else [color(i) for i in range(len(names))]
    counts = {name: [0] * bins for name in names}
    for name, values in series.items():
        for v in values:
            if d0 <= v <= d1:
                counts[name][min(bins - 1, int((v - d0) / (d1 - d0) * bins))] += 1
    peak = max((max(c) for c in counts.values()), default=0) or 1
    left, plot_w, plot_h, top = 40.0, 420.0, 150.0, 10.0
    legend, legend_h, right = _legend(names, fills, left, top + plot_h + 40, plot_w)
    width, height = max(left + plot_w + 16, right + 8), top + plot_h + 34 + legend_h
    out: list[str] = []
    for t in _ticks(0, peak):
        y = top + plot_h - plot_h * t / peak
        out.append(f'<line class="grid" x1="{_n(left)}" y1="{_n(y)}" x2="{_n(left + plot_w)}" '
                   f'y2="{_n(y)}" stroke="#e0e0e0"/>')
        out.append(_text(left - 5, y + 4, _fmt(t), anchor="end", cls="tick"))
    slot = plot_w / bins
    each = (slot - 4) / max(1, len(names))
    for k in range(bins):
        a = d0 + (d1 - d0) * k / bins
        b = d0 + (d1 - d0) * (k + 1) / bins
        for s, name in enumerate(names):
            c = counts[name][k]
            if not c:
                continue
            h = plot_h * c / peak
            closing = "]" if k == bins - 1 else ")"
            out.append(f'<rect class="bin" x="{_n(left + slot * k + 2 + each * s)}" '
                       f'y="{_n(top + plot_h - h)}" width="{_n(each)}" height="{_n(h)}" '
                       f'fill="{fills[s]}" data-count="{c}">'
                       f"{_title(f'{name}: {c} in [{_fmt(a)}, {_fmt(b)}{closing}')}</rect>")
    for t in _ticks(d0, d1, 5):
        xt = left + plot_w * (t - d0) / (d1 - d0)
        out.append(_text(xt, top + plot_h + 14, _fmt(t), anchor="middle", cls="tick"))
    out.append(f'<line class="axis" x1="{_n(left)}" y1="{_n(top + plot_h)}" '
               f'x2="{_n(left + plot_w)}" y2="{_n(top + plot_h)}" stroke="#666666"/>')
    return _svg(width, height, label, out + legend, "histogram")


# --- line plot -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Point:
    """A value in [0, 1] with its interval and tooltip."""

    value: float
    lo: float | None = None
    hi: float | None = None
    title: str = ""


@dataclass(frozen=True)
class Series:
    """One line: a point per category (None where the series has no data there)."""

    name: str
    points: Sequence[Point | None]
    color: str = PALETTE[0]


def line_plot(categories: Sequence[str], series: Sequence[Series], *,
              label: str = "line plot", y_label: str = "", bands: bool = False) -> str:
    """Each series as a line across the categories (y in [0, 1]), with interval whiskers;
    series are nudged sideways so their whiskers do not hide each other. `bands` also
    shades each series' intervals between its points (a curve's uncertainty)."""
    left, plot_w, plot_h, top = 44.0, 400.0, 170.0, 12.0
    legend, legend_h, right = _legend([s.name for s in series], [s.color for s in series],
                                      left, top + plot_h + 40, plot_w)
    slot = plot_w / max(1, len(categories))
    cats = keyed(categories, max(4, int(slot / 7)))
    key, key_h, key_right = _key_lines(cats.key, left, top + plot_h + 34 + legend_h)
    width = max(left + plot_w + 16, right + 8, key_right + 8)
    height = top + plot_h + 34 + legend_h + key_h

    def y(v: float) -> float:
        return top + plot_h * (1 - _clamp(v, 0.0, 1.0))

    out: list[str] = []
    for t in _ticks(0.0, 1.0):
        out.append(f'<line class="grid" x1="{_n(left)}" y1="{_n(y(t))}" '
                   f'x2="{_n(left + plot_w)}" y2="{_n(y(t))}" stroke="#e0e0e0"/>')
        out.append(_text(left - 5, y(t) + 4, _fmt(t), anchor="end", cls="tick"))
    if y_label:
        out.append(f'<text x="12" y="{_n(top + plot_h / 2)}" text-anchor="middle" '
                   f'transform="rotate(-90 12 {_n(top + plot_h / 2)})" class="tick">'
                   f"{esc(y_label)}</text>")
    for k, cat in enumerate(categories):
        out.append(_text(left + slot * (k + 0.5), top + plot_h + 16, cats[cat],
                         anchor="middle", cls="tick"))
    spread = min(slot * 0.5, 12.0 * len(series))
    for s_i, s in enumerate(series):
        nudge = (s_i - (len(series) - 1) / 2) * (spread / max(1, len(series)))
        xy = [(left + slot * (k + 0.5) + nudge, p) for k, p in enumerate(s.points)]
        run = [(x, p.lo, p.hi) for x, p in xy
               if p is not None and p.lo is not None and p.hi is not None]
        if bands and len(run) > 1:
            edge = [f"{_n(x)} {_n(y(hi))}" for x, _, hi in run]
            edge += [f"{_n(x)} {_n(y(lo))}" for x, lo, _ in reversed(run)]
            out.append(f'<path class="band" d="M{"L".join(edge)}Z" fill="{s.color}" '
                       'fill-opacity="0.15" stroke="none"/>')
        path, pen = [], "M"
        for x, p in xy:
            if p is None:
                pen = "M"
                continue
            path.append(f"{pen}{_n(x)} {_n(y(p.value))}")
            pen = "L"
        if len(path) > 1:
            out.append(f'<path class="line" d="{"".join(path)}" stroke="{s.color}" '
                       f'stroke-width="2" fill="none"/>')
        for x, p in xy:
            if p is None:
                continue
            if p.lo is not None and p.hi is not None:
                out.append(f'<path class="whisker" d="M{_n(x)} {_n(y(p.lo))}V{_n(y(p.hi))}" '
                           f'stroke="{s.color}" stroke-width="1.5"/>')
            out.append(f'<circle class="point" cx="{_n(x)}" cy="{_n(y(p.value))}" r="4" '
                       f'fill="{s.color}" data-value="{p.value:g}">'
                       f"{_title(p.title or f'{s.name}: {p.value:.2f}')}</circle>")
    out.append(f'<line class="axis" x1="{_n(left)}" y1="{_n(top + plot_h)}" '
               f'x2="{_n(left + plot_w)}" y2="{_n(top + plot_h)}" stroke="#666666"/>')
    return _svg(width, height, label, out + legend + key, "line")


# --- timeline --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Mark:
    """One trial on the timeline: start and duration in ms from the run's first start."""

    start_ms: float
    duration_ms: float
    status: str  # a key of STATUS_COLORS
    title: str = ""


@dataclass(frozen=True)
class Lane:
    """One subject's row: its trials (`marks`) or, for big runs, per-bin counts of each
    status (`bins`, one mapping per bin of `bin_ms` width)."""

    name: str
    marks: Sequence[Mark] = ()
    bins: Sequence[Mapping[str, int]] = field(default_factory=tuple)
    title: str = ""


def _duration(ms: float) -> str:
    if ms >= 120_000:
        return f"{ms / 60_000:.1f}".rstrip("0").rstrip(".") + " min"
    if ms >= 1000:
        return f"{ms / 1000:.1f}".rstrip("0").rstrip(".") + " s"
    return f"{ms:.1f}".rstrip("0").rstrip(".") + " ms"


def timeline(lanes: Sequence[Lane], span_ms: float, *, bin_ms: float | None = None,
             label: str = "timeline") -> str:
    """Trials over time, one lane per subject. With marks: each trial a bar from its start
    for its duration (at least a hairline), stacked into sub-rows in turn so overlapping
    trials stay visible. With bins: per bin a column of how many trials started there,
    stacked by status. Errors are red in both."""
    span = max(span_ms, 1.0)
    lane_names = keyed([lane.name for lane in lanes])
    left = _label_width([lane_names[lane.name] for lane in lanes])
    plot_w, lane_h, sub_rows, top = 480.0, 40.0, 6, 8.0
    names = ["as expected", "against expectation", "error"]
    legend, legend_h, right = _legend(names, list(STATUS_COLORS.values()), left,
                                      top + lane_h * len(lanes) + 40, plot_w)
    key, key_h, key_right = _key_lines(lane_names.key, 8.0,
                                       top + lane_h * len(lanes) + 34 + legend_h)
    width = max(left + plot_w + 16, right + 8, key_right + 8)
    height = top + lane_h * len(lanes) + 34 + legend_h + key_h

    def x(ms: float) -> float:
        return left + plot_w * _clamp(ms / span, 0.0, 1.0)

    out: list[str] = []
    axis_y = top + lane_h * len(lanes)
    for t in _ticks(0.0, span, 4):
        out.append(f'<line class="grid" x1="{_n(x(t))}" y1="{_n(top)}" x2="{_n(x(t))}" '
                   f'y2="{_n(axis_y)}" stroke="#e0e0e0"/>')
        out.append(_text(x(t), axis_y + 14, _duration(t), anchor="middle", cls="tick"))
    peak = max((sum(b.values()) for lane in lanes for b in lane.bins), default=0) or 1
    for i, lane in enumerate(lanes):
        y0 = top + lane_h * i
        out.append(f'<line x1="{_n(left)}" y1="{_n(y0 + lane_h)}" x2="{_n(left + plot_w)}" '
                   f'y2="{_n(y0 + lane_h)}" stroke="#cccccc"/>')
        out.append(f'<text x="{_n(left - 6)}" y="{_n(y0 + lane_h / 2 + 4)}" text-anchor="end" '
                   f'class="row-label">{esc(lane_names[lane.name])}'
                   f"{_title(lane.title or lane.name)}"
                   "</text>")
        sub_h = (lane_h - 6) / sub_rows
        for k, m in enumerate(lane.marks):
            xs = x(m.start_ms)
            w = max(1.5, x(m.start_ms + m.duration_ms) - xs)
            ys = y0 + 3 + sub_h * (k % sub_rows)
            out.append(f'<rect class="mark mark-{esc(m.status)}" x="{_n(xs)}" y="{_n(ys)}" '
                       f'width="{_n(w)}" height="{_n(sub_h - 1)}" '
                       f'fill="{STATUS_COLORS.get(m.status, "#888888")}">{_title(m.title)}'
                       "</rect>")
        if bin_ms:
            bw = plot_w * bin_ms / span
            for k, counts in enumerate(lane.bins):
                yb = y0 + lane_h - 2
                total = sum(counts.values())
                if not total:
                    continue
                tip = (f"{lane.name}, {_duration(k * bin_ms)}–{_duration((k + 1) * bin_ms)}: "
                       + ", ".join(f"{v} {s}" for s, v in counts.items() if v))
                column = [f"<g>{_title(tip)}"]  # one tooltip for the column's stack
                for status in STATUS_COLORS:
                    c = counts.get(status, 0)
                    if not c:
                        continue
                    h = (lane_h - 6) * c / peak
                    yb -= h
                    column.append(f'<rect class="bin bin-{status}" x="{_n(x(k * bin_ms))}" '
                                  f'y="{_n(yb)}" width="{_n(max(bw - 0.5, 0.8))}" '
                                  f'height="{_n(h)}" fill="{STATUS_COLORS[status]}"/>')
                out.append("".join(column) + "</g>")
    return _svg(width, height, label, out + legend + key, "timeline")
