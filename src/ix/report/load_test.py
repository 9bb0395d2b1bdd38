"""The summary's `load` block in words: `ix run`'s summary and `ix report` on a terminal
(`ix.report.markdown` writes it with these numbers' formats; the HTML page renders the same
data in `templates/report_body.html.j2`).

Every line fits 80 columns at the widths a load test produces, and wraps (never cuts) a long
subject name.
"""

from collections.abc import Mapping
from typing import Any

from rich.console import RenderableType
from rich.text import Text

__all__ = ["load_parts", "missed_objectives", "ms", "percentiles", "rate_text", "rps",
           "schedule_text", "sla_lines", "sla_parts"]

_STYLE = {"met": "bold green", "missed": "bold red", "inconclusive": "yellow"}


def ms(x: float | None) -> str:
    """A latency in ms with the digits it needs: 0.213, 8.41, 81.2, 1204."""
    if x is None:
        return "n/a"
    if x < 1:
        return f"{x:.3f}"
    if x < 10:
        return f"{x:.2f}"
    if x < 1000:
        return f"{x:.1f}"
    return f"{x:,.0f}"


def _interval(ci: list[float | None]) -> str:
    """A percentile's interval; an open end is `∞` above (too few requests) or `0` below."""
    lo, hi = ci
    return f"[{'0' if lo is None else ms(lo)}, {'∞' if hi is None else ms(hi)}]"


def _percent(x: float | None) -> str:
    if x is None:
        return "n/a"
    return f"{x * 100:.2g}%" if 0 < x < 0.001 else f"{x * 100:.1f}%"


def rate_text(rate: float | None, ci: list[float | None]) -> str:
    """An error rate with its interval, in percent."""
    if rate is None:
        return "n/a"
    return f"{_percent(rate)} [{_percent(ci[0])}, {_percent(ci[1])}]"


def rps(x: float | None) -> str:
    return "n/a" if x is None else f"{x:,.1f}"


def _heading(load: Mapping[str, Any], s: Mapping[str, Any]) -> str:
    warm = f" after a {load['warmup_s']:g} s warm-up" if load["warmup_s"] else ""
    return (f"load test · {s['subject']}: {load['rps']:g} rps offered "
            f"({load['arrivals']} arrivals), {s['window_s']:g} s measured{warm}")


def _requests(s: Mapping[str, Any]) -> str:
    r = s["requests"]
    text = (f"achieved {rps(s['achieved_rps'])} rps · sent {r['sent']:,} · answered "
            f"{r['completed']:,} · errored {r['errored']:,} · dropped {r['dropped']:,}")
    return text + (f" · waited {r['waited']:,}" if r["waited"] else "")


def percentiles(s: Mapping[str, Any]) -> list[str]:
    """A subject's p50, p95 and p99: each `81.2 [80.4, 82.1]` (ms)."""
    lat = s["latency_ms"]
    return [f"{ms(lat[name]['value'])} {_interval(lat[name]['ci'])}"
            for name in ("p50", "p95", "p99")]


def schedule_text(s: Mapping[str, Any]) -> str:
    e = s["schedule_error"]
    return f"p50 {ms(e['p50_ms'])} ms · p99 {ms(e['p99_ms'])} ms · max {ms(e['max_ms'])} ms"


def load_parts(load: Mapping[str, Any] | None) -> list[RenderableType]:
    """Per subject: rates and requests, latency percentiles with their intervals, the error
    rate, the schedule error and each SLA's verdict."""
    if not load:
        return []
    parts: list[RenderableType] = []
    for s in load["subjects"]:
        text = Text(_heading(load, s), style="bold")
        text.append(f"\n  {_requests(s)}")
        p50, p95, p99 = percentiles(s)
        text.append(f"\n  latency ms  p50 {p50} · p95 {p95}\n              p99 {p99}")
        text.append(f" (n {s['latency_ms']['n']:,})", style="dim")
        text.append(f"\n  error rate {rate_text(s['error_rate'], s['error_rate_ci'])}")
        text.append(f"\n  schedule error {schedule_text(s)}", style="dim")
        for check in s["sla"]:
            text.append(f"\n  SLA {check['objective']}: ")
            text.append(check["verdict"] or "n/a", style=_STYLE.get(check["verdict"] or "", ""))
            text.append(f" ({check['reason']})")
        parts += [text, Text("")]
    parts.append(Text("latency intervals: 95%, distribution-free (order statistics, exact "
                      "binomial); error rate: 95% credible", style="dim"))
    return parts


def sla_lines(load: Mapping[str, Any] | None) -> list[str]:
    """A load run's answer, in a service's words: per subject its objectives' verdict (each
    objective with the percentile and interval it was judged on), then the error rate and
    the throughput against what was offered. No precision, recall or routing: a service is
    judged by its SLA, not as a classifier."""
    lines: list[str] = []
    for s in (load or {}).get("subjects") or []:
        checks = s["sla"]
        if checks:
            said = "; ".join(f"{c['objective']} {c['verdict'] or 'n/a'} ({c['reason']})"
                             for c in checks)
            overall = f"{s['verdict'] or 'n/a'} — " if len(checks) > 1 else ""
            lines.append(f"SLA of {s['subject']}: {overall}{said}")
        else:
            p95 = percentiles(s)[1]
            lines.append(f"SLA of {s['subject']}: none stated (a `latency` sensor with "
                         f"`max_ms` states one) — p95 {p95} ms")
        lines.append(f"  error rate {rate_text(s['error_rate'], s['error_rate_ci'])} · "
                     f"throughput {rps(s['achieved_rps'])} rps achieved of "
                     f"{rps(s['offered_rps'])} offered")
    return lines


def sla_parts(load: Mapping[str, Any] | None) -> list[RenderableType]:
    """`sla_lines` on a terminal, each verdict in its colour."""
    parts: list[RenderableType] = []
    for line in sla_lines(load):
        if line.startswith("  "):
            parts.append(Text(line, style="dim"))
            continue
        text = Text(line)
        for word, style in _STYLE.items():
            text.highlight_regex(rf"(?<=ms ){word}\b|(?<=: ){word}(?= —)", style)
        parts.append(text)
    return parts


def missed_objectives(summary: Mapping[str, Any]) -> list[str]:
    """Each SLA a subject missed, in words (`ix run` exits 1 when there is one)."""
    load = summary.get("load") or {}
    return [f"{s['subject']}: {c['objective']} ({c['reason']})"
            for s in load.get("subjects") or [] for c in s["sla"] if c["verdict"] == "missed"]
