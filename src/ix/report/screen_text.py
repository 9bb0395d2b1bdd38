"""The first screen (`ix.report.screen`) on a terminal: `ix run` prints it with the verdict
last, where the eye lands when the command ends; `ix report` leads with it, verdict first.
Condition names are never wrapped: when a table would not fit, they become keys with a legend
(`ix.report.tables.Keyed`)."""

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ix.report import tables as layout
from ix.report.answer import interval_text, num_text

Label = Callable[[str], str]
_STATUS = {"excellent": "bold green", "good": "green", "needs_work": "yellow", "poor": "bold red",
           "all trials errored": "bold red"}
VERDICT_STYLE = {"SUPPORTED": "bold green", "REFUTED": "bold red", "INCONCLUSIVE": "bold yellow"}
_EXPECT = {"must_trigger": "must", "should_not_trigger": "not", "acceptable": "edge"}


def _estimate(value: float | None, ci: Sequence[float | None] | None) -> Text:
    if value is None:
        return Text("n/a", style="dim")
    text = Text(f"{value:.3f}")
    if ci is not None:
        text.append(f" {interval_text(ci)}", style="dim")
    return text


def counted(n: int, word: str) -> str:
    """`1 trial`, `9 trials`: a count with its noun in the number it takes."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def title(s: Mapping[str, Any]) -> Text:
    """`coexistence: 29 cases × 3 subjects × 9 trials, completed`."""
    trials = s.get("trials_per_case")
    count = counted(trials, "trial") if isinstance(trials, int) else "adaptive trials"
    text = Text(str(s["experiment"]), style="bold")
    text.append(f": {counted(s['cases'], 'case')} × {counted(len(s['subjects']), 'subject')}"
                f" × {count}, {s['status']}")
    if s.get("reason"):
        text.append(f" ({s['reason']})", style="red")
    return text


def verdict_word(s: Mapping[str, Any]) -> str:
    """`SUPPORTED`, `REFUTED`, `INCONCLUSIVE`, `NO VERDICT`, or `no goal`."""
    return s["verdict"][0].split(" — ", 1)[0] if s["verdict"] else "no goal"


def verdict_parts(s: Mapping[str, Any], *, last: bool,
                  sla: Sequence[RenderableType] = ()) -> list[RenderableType]:
    """The goal's verdict and its evidence (`last`: evidence first, the verdict line last),
    or, with no goal, the headline metric with its interval (a load run's `sla` instead)."""
    lines = list(s["verdict"])
    # beside the verdict: the judge it rests on, checked against people or not
    judge = [Text("\n".join(s["judge"]), style="yellow")] if s.get("judge") else []
    # and the per-case gates it missed, each case named
    judge += [Text("\n".join(f"GATE FAILED — {line}" for line in s["gates"]), style="red")] \
        if s.get("gates") else []
    if not lines and sla:
        return [*sla, *judge]
    if not lines:
        h = s.get("headline")
        text = Text("no goal", style="bold")
        if h is not None:
            text.append(f": {s['metric_label']} of {h['subject']} ")
            text.append_text(_estimate(h["value"], h["ci"]))
        text.append(" (a `goal:` in experiment.yaml states what would answer the question)",
                    style="dim")
        return [text, *judge]
    head = Text()
    word, _, rest = lines[0].partition(" — ")
    head.append(word, style=VERDICT_STYLE.get(word, "bold"))
    head.append(f" — {rest}" if rest else "")
    evidence = [Text("\n".join(lines[1:]))] if lines[1:] else []
    return [*evidence, head, *judge] if last else [head, *judge, *evidence]


def subject_table(s: Mapping[str, Any], label: Label) -> Table:
    level = f"{s['level']:.0%}"
    t = layout.table(None, "subject", f"{s['metric_label']} [{level} CI]", "n", "status",
                     right=(f"{s['metric_label']} [{level} CI]", "n"))
    for row in s["subjects"]:
        name = Text(label(row["name"]))
        if row["role"]:
            name.append(f" ({row['role']})", style="dim")
        status = Text(row["status"], style=_STATUS.get(row["status"], ""))
        if row["errors"] and row["status"] != "all trials errored":
            status.append(f", {row['errors']} errored", style="red")
        t.add_row(name, _estimate(row["value"], row["ci"]), f"{row['n']} {row['unit']}",
                  status)
    return t


def answer_parts(s: Mapping[str, Any], label: Label) -> list[RenderableType]:
    a = s.get("answer")
    if not a:
        return []
    if a["kind"] == "context":
        return _context(a, label)
    if a["kind"] == "sweep":
        return _sweep(a, label)
    return _deltas(a, label)


def _deltas(a: Mapping[str, Any], label: Label) -> list[RenderableType]:
    controls = list(dict.fromkeys(r["control"] for r in a["rows"]))
    against = label(controls[0]) if len(controls) == 1 else "its control"
    head = Text(f"{a['metric_label']}: each variant against {against}", style="bold")
    head.append(" (p: two-sided, Holm across variants)", style="dim")
    t = layout.table(None, "variant", a["metric_label"], "delta [95% CI]", "P(better)",
                     "p Holm", "flipped",
                     right=(a["metric_label"], "delta [95% CI]", "P(better)", "p Holm",
                            "flipped"))
    for r in a["rows"]:
        if r["not_compared"]:
            delta = Text("not compared", style="dim")
        else:
            delta = Text(f"{num_text(r['diff'], 2, sign=True)} ")
            delta.append(interval_text(r["diff_ci"]), style="dim")
            lo, hi = (r["diff_ci"] or [None, None])[:2]
            if lo is not None and hi is not None and (lo > 0 or hi < 0):
                delta.stylize("bold")
        flips = Text(str(len(r["flipped"])), style="bold red" if r["flipped"] else "dim")
        t.add_row(label(r["variant"]), num_text(r["value"]), delta, num_text(r["p_better"]),
                  num_text(r["p_holm"]), flips)
    return [head, t]


def _context(a: Mapping[str, Any], label: Label) -> list[RenderableType]:
    lengths = [str(n) for n in a["lengths"]]
    head = Text(f"{a['metric_label']} by context length ({a['unit']} of {a['prefix']})",
                style="bold")
    head.append("; trend: activation rate (must) per doubling of (1 + length)", style="dim")
    t = layout.table(None, "subject", *lengths, "trend [95% CI]", "P(declines)",
                     right=(*lengths, "trend [95% CI]", "P(declines)"))
    lines = Text()
    for r in a["rows"]:
        trend = Text(f"{num_text(r['trend'], 3, sign=True)} ")
        trend.append(interval_text(r["trend_ci"]), style="dim")
        t.add_row(label(r["subject"]), *(num_text(r["values"].get(n), 2) for n in lengths), trend,
                  num_text(r["p_declines"]))
        i = r["interaction"]
        if i is not None:
            if lines.plain:
                lines.append("\n")
            lines.append(f"{label(r['subject'])} vs {label(i['versus'])}: trend "
                         f"{num_text(i['diff'], 3, sign=True)} per doubling "
                         f"{interval_text(i['diff_ci'])}, "
                         f"P(declines faster) {num_text(i['p_declines_faster'])}, p Holm "
                         f"{num_text(i['p_holm'])}")
    return [head, t, *([lines] if lines.plain else [])]


def _sweep(a: Mapping[str, Any], label: Label) -> list[RenderableType]:
    head = Text(f"sweep of {label(a['subject'])}: {a['grid']}", style="bold")
    head.append(f"; {a['metric_label']} and P(best)", style="dim")
    t = layout.table(None, "condition", f"{a['metric_label']} [95% CI]", "P(best)",
                     right=(f"{a['metric_label']} [95% CI]", "P(best)"))
    for r in a["rows"]:
        t.add_row(label(r["subject"]), _estimate(r["value"], r["ci"]), num_text(r["p_best"]))
    parts: list[RenderableType] = [head, t]
    if a.get("best"):
        parts.append(Text(f"best: {label(a['best']['subject'])}, P(best) "
                          f"{num_text(a['best']['p_best'])}"))
    return parts


def cases_parts(s: Mapping[str, Any], label: Label, sensor: str | None) -> list[RenderableType]:
    rows, total = s["cases_that_matter"], s["cases_that_matter_total"]
    if not total:
        return [Text(f"every case right and settled in every subject ({s['cases']} cases)",
                     style="green")]
    hit = "invoked" if sensor in (None, "activation") else "passed"
    head = Text(f"cases that matter: {total} of {s['cases']} wrong, unsettled or flipped"
                + (f", the {len(rows)} worst" if len(rows) < total else ""), style="bold")
    head.append(f" (k/n: trials {hit}; ✓ right, ✗ wrong)", style="dim")
    columns = [label(c) for c in s["case_columns"]]
    counted = s["conditions"] > len(columns)
    t = layout.table(None, "case", "expect", *columns, *(["wrong in"] if counted else []),
                     right=(*columns, "wrong in"))
    for r in rows:
        cells = [_cell(r["cells"].get(c)) for c in s["case_columns"]]
        t.add_row(r["probe_id"], _EXPECT.get(r["expectation"], r["expectation"]), *cells,
                  *([f"{r['wrong_in']} of {r['of']}"] if counted else []))
    return [head, t]


def _cell(c: Mapping[str, Any] | None) -> Text:
    if c is None:
        return Text("-", style="dim")
    if c["right"] is None:
        return Text(f"n/a ({c['errors']} err)", style="dim")
    text = Text(f"{c['hits']}/{c['n']} ")
    text.append("✓" if c["right"] else "✗", style="green" if c["right"] else "bold red")
    return text


def screen_renderable(s: Mapping[str, Any], *, sensor: str | None = None,
                      verdict_last: bool = True, errors: RenderableType | None = None,
                      files: Sequence[str] = (),
                      extra: Sequence[RenderableType] = (),
                      sla: Sequence[RenderableType] = ()) -> RenderableType:
    """The screen: `ix run` (`verdict_last`, with the run's `files` above the verdict) or the
    head of `ix report` (the verdict under the title). `errors`: the errored-trials block;
    `extra`: what follows the cases (a load test's latency table). `sla`: a load run's
    answer (`ix.report.load_test.sla_parts`): a service is judged by its objectives, so they
    stand where the subject table, the cases and the headline metric would."""
    context = (s.get("answer") or {}).get("kind") == "context"
    names = [*(r["subject"] for r in s["answer"]["rows"])] if context else \
        [row["name"] for row in s["subjects"]]
    names += s["case_columns"]

    def body(label: Label) -> list[RenderableType]:
        # with `context:` the table by length is the subjects' lines (one row per subject)
        parts: list[RenderableType] = [] if context else [subject_table(s, label), Text("")]
        answer = answer_parts(s, label)
        if answer:
            parts += [*answer, Text("")]
        return [*parts, *cases_parts(s, label, sensor)]

    parts: list[RenderableType] = [title(s)]
    if not verdict_last:
        parts += [*verdict_parts(s, last=False, sla=sla), Text("")]
    if errors is not None:
        parts.append(errors)
    if not sla:
        parts.append(layout.Keyed(names, body))
    parts += extra
    if verdict_last:
        footer = Text(f"every table, case and diagnostic: `ix report {s['run_id']}`",
                      style="dim")
        if s["cases_that_matter_total"] > len(s["cases_that_matter"]):
            footer = Text(f"{s['cases_that_matter_total'] - len(s['cases_that_matter'])} more "
                          f"cases and every table: `ix report {s['run_id']}`", style="dim")
        if s.get("skipped_cases"):
            footer.append(f"; {s['skipped_cases']} acceptable case(s) not run", style="dim")
        parts += [footer, *(Text(f, style="dim") for f in files), Text(""),
                  *verdict_parts(s, last=True, sla=sla)]
    return Group(*parts)
