"""Rich renderables for `ix report`, `ix leaderboard` and the configuration diff of
`ix compare` (the `table` format), and the variants-against-control tables that `ix run`'s
summary (`ix.report.console`) shows too."""

from collections.abc import Mapping
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ix.lab.sweep import grid_words
from ix.report import outcome_text
from ix.report import tables as layout
from ix.report.answer import METRIC_NAMES, metric_name  # one table of display names
from ix.report.case_stats import correlation_lines, frontier_lines, percentile_table
from ix.report.judge_text import judge_lines
from ix.report.load_test import load_parts, sla_parts
from ix.report.pairwise_text import pairwise_parts
from ix.report.screen_text import screen_renderable

_EXPECT = {"must_trigger": "must", "should_not_trigger": "not", "acceptable": "edge"}
#: Rows of the long tables shown on a terminal (the JSON keeps them all).
TOP = 10


def fmt(x: float | None, digits: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def estimate_text(x: float | None, interval: list[float | None] | None) -> str:
    """`0.750 [0.41, 0.93]`, or `n/a` for an undefined value (precision with no predicted
    positive), whose interval is only the prior's."""
    return "n/a" if x is None else f"{fmt(x)} {ci(interval)}"


def ci(interval: list[float | None] | None) -> str:
    if not interval or interval[0] is None or interval[1] is None:
        return "[n/a]"
    return f"[{interval[0]:.2f}, {interval[1]:.2f}]"


#: Columns of free text or lists: they wrap at spaces inside a table (`ix.report.tables`).
PROSE = ("subjects", "cases", "example", "examples", "by subject", "prompt", "message")


def _table(title: str, *columns: str, right: tuple[str, ...] = ()) -> Table:
    """A table that is never cut when printed (`ix.report.tables`): ids and numbers stay on
    one line, the `PROSE` columns wrap at spaces."""
    return layout.table(title, *columns, right=right, prose=[c for c in columns if c in PROSE])


def leaderboard_table(board: dict[str, Any], title: str, labels: tuple[str, ...] = ()) -> Table:
    name = METRIC_NAMES.get(board["metric"], board["metric"])
    table = _table(title, "rank", *labels, "subject", f"{name} [95% CI]", "n",
                   "P(rank right)", "P(beats next)", "rank range", "P(best)",
                   right=("rank", "n", "P(rank right)", "P(beats next)", "P(best)"))
    layout.key(table, 1 + len(labels))  # too narrow for a table: one record per subject
    for row in board["rows"]:
        lo, hi = row["rank_ci"]
        table.add_row(str(row["rank"]), *(str(row.get(k, "")) for k in labels), row["subject"],
                      f"{fmt(row['value'])} {ci(row['ci'])}", str(row["n"]),
                      fmt(row["p_rank"]), fmt(row["p_above_next"]),
                      f"{lo}" if lo == hi else f"{lo}–{hi}", fmt(row["p_best"]))
    return table


def _cell(cell: dict[str, Any] | None) -> Text:
    if cell is None:
        return Text("-", style="dim")
    if cell["score"] is None:
        return Text(f"n/a ({cell['errors']} errored)", style="dim")
    text = Text(f"{cell['score']:.2f} ")
    text.append(ci(cell["score_ci"]), style="dim")
    text.append(f" {cell['passed']}/{cell['n']} ")
    text.append("✓" if cell["correct"] else "✗", style="green" if cell["correct"] else "red")
    if cell["errors"]:
        text.append(f" {cell['errors']}err", style="red")
    return text


def rate_word(sensor: str | None) -> str:
    """What a case's score is: the activation rate of the skill under test, or the pass rate
    of a capability sensor (DESIGN.md §8)."""
    return "activation rate" if sensor in (None, "activation") else "pass rate"


def summary_tables(report: Mapping[str, Any]) -> list[RenderableType]:
    """The cases' rates; then, but for a service under load (judged by its SLA, not as a
    classifier), precision, recall and F1 and the reliability table."""
    s = report["summary"]
    word = rate_word(report["run"].get("sensor"))
    hit = "invoked" if word == "activation rate" else "passed"
    scorer = report["run"].get("scorer") or "majority"
    table = _table(f"summary: {word} [95% CI], {hit}/valid trials per case; ✓ right, ✗ wrong "
                   + ("(the case's majority vote)" if scorer == "majority"
                      else f"(the case's verdict by the {scorer} scorer)"),
                   "case", "expect", *s["subjects"])
    for row in s["cases"]:
        table.add_row(row["probe_id"], _EXPECT.get(row["expectation"], row["expectation"]),
                      *(_cell(row["by_subject"].get(name)) for name in s["subjects"]))
    metrics = _table("metrics per subject", "subject", "precision", "recall", "F1",
                     "TP/FP/FN/TN", "errors", "status")
    for name, m in s["metrics"].items():
        metrics.add_row(name, *(estimate_text(m[k], m[f"{k}_ci"])
                                for k in ("precision", "recall", "f1")),
                        f"{m['tp']}/{m['fp']}/{m['fn']}/{m['tn']}", str(m["errors"]),
                        str(m["status"]))
    if report.get("load"):
        return [table]
    return [table, Text(""), metrics, *reliability_parts(s["metrics"])]


def _icc(r: dict[str, Any] | None) -> str:
    if not r or r.get("icc") is None:
        return "n/a"
    floored = " floored" if r["icc"] < 0 else ""  # a negative ICC: design effect 1
    return f"{r['icc']:.2f} ({r['design_effect']:.2f}{floored})"


def reliability_parts(metrics: dict[str, dict[str, Any]]) -> list[RenderableType]:
    """Specificity, between-case ICC (design effect) and unsettled votes per subject; nothing
    for a summary written before them."""
    if not any(m.get("reliability") is not None for m in metrics.values()):
        return []
    table = _table("specificity and reliability per subject", "subject", "specificity",
                   "ICC must (deff)", "ICC not (deff)", "unsettled",
                   right=("unsettled",))
    lines = Text()
    for name, m in metrics.items():
        rel = m.get("reliability") or {}
        spec = "n/a" if m.get("specificity") is None else \
            f"{fmt(m['specificity'])} {ci(m.get('specificity_ci'))}"
        cases = m.get("unsettled") or []
        table.add_row(name, spec, _icc(rel.get("must_trigger")),
                      _icc(rel.get("should_not_trigger")), str(len(cases)))
        if cases:
            shown = ", ".join(f"{u['probe_id']} {u['p_flip']:.2f}" for u in cases[:TOP])
            more = f", +{len(cases) - TOP} more" if len(cases) > TOP else ""
            lines.append(f"\nunsettled votes of {name} (P(flip) > 0.2): {shown}{more}",
                         style="yellow")
    return [Text(""), table, lines] if lines else [Text(""), table]


def several_sensors(by_subject: Mapping[str, Mapping[str, Any]] | None) -> list[str]:
    """The sensors of a run that read with more than one (none: one sensor, whose numbers
    the case table already shows), in their order."""
    names: dict[str, None] = {}
    for sensors in (by_subject or {}).values():
        names.update(dict.fromkeys(sensors))
    return list(names) if len(names) > 1 else []


def rate_cell(r: Mapping[str, Any] | None) -> str:
    """`0.80 [0.62, 0.91] 24/30` (a sensor's pass rate, its interval, passed/valid)."""
    if r is None:
        return "-"
    if not r["n"]:
        return "n/a 0/0"
    return f"{fmt(r['rate'], 2)} {ci(r['rate_ci'])} {r['passed']}/{r['n']}"


def sensor_parts(report: Mapping[str, Any]) -> list[RenderableType]:
    """With more than one sensor, each one's pass rate per subject (issue 20); the first
    row is the sensor that decides the trials."""
    by_subject = report.get("sensors") or {}
    names = several_sensors(by_subject)
    if not names:
        return []
    subjects = list(by_subject)
    table = _table("pass rate per sensor [95% CI] passed/valid trials (first: decides the "
                   "trial)", "sensor", *subjects)
    for name in names:
        table.add_row(name, *(rate_cell(by_subject[s].get(name)) for s in subjects))
    return [table, Text("")]


def judge_parts(report: Mapping[str, Any]) -> list[RenderableType]:
    """Each judge: checked against people's labels or not, its corrected pass rate, its
    noise over repeats, a panel's agreement (`ix.report.judge_text`)."""
    lines = judge_lines(report.get("judges") or [])
    if not lines:
        return []
    return [Text("judges (docs/judges.md)", style="bold"), Text("\n".join(lines)), Text("")]


def breakdown_table(report: Mapping[str, Any]) -> Table:
    names = report["summary"]["subjects"]
    table = _table("score breakdown per case: mean ± sd (min–max) of the readings' scores",
                   "case", *names)
    for row in report["breakdown"]:
        cells = []
        for name in names:
            b = row["by_subject"].get(name)
            if b is None:
                cells.append(Text("-", style="dim"))
                continue
            sd = f" ± {b['sd']:.2f}" if b["sd"] is not None else ""
            text = Text(f"{fmt(b['mean'], 2)}{sd} ({fmt(b['min'], 2)}–{fmt(b['max'], 2)})")
            if b["metrics"]:
                text.append(" " + ", ".join(f"{k}={fmt(v, 2)}" for k, v in b["metrics"].items()),
                            style="dim")
            cells.append(text)
        table.add_row(row["probe_id"], *cells)
    return table


def failure_parts(report: Mapping[str, Any]) -> list[RenderableType]:
    f = report["failures"]
    parts: list[RenderableType] = []
    if f["errors"]:
        errors = _table(f"errored trials by kind ({f['errored_trials']} standing)", "kind",
                        "count", "retried away", "subjects", "cases", "example",
                        right=("count", "retried away"))
        for g in f["errors"]:
            example = g["examples"][0] if g["examples"] else None
            errors.add_row(g["kind"], str(g["count"]), str(g["superseded"]),
                           ", ".join(f"{k} {v}" for k, v in g["subjects"].items()),
                           ", ".join(g["cases"]),
                           Text(f"{example['probe_id']}: {example['message']}")
                           if example else "")
        parts += [errors, Text("")]
    else:
        parts.append(Text("no errored trials", style="dim"))
    if f["cases"]:
        cases = _table("cases that fail most (errored, or outcome against the expectation)",
                       "case", "expect", "failed", "rate", "errored", "wrong", "by subject",
                       right=("failed", "rate", "errored", "wrong"))
        for row in f["cases"][:TOP]:
            cases.add_row(row["probe_id"], _EXPECT.get(row["expectation"], row["expectation"]),
                          f"{row['failed']}/{row['trials']}", fmt(row["fail_rate"], 2),
                          str(row["errored"]), str(row["wrong"]),
                          ", ".join(f"{k} {v['failed']}/{v['trials']}"
                                    for k, v in row["by_subject"].items()))
        more = len(f["cases"]) - TOP
        parts.append(cases)
        examples = example_text(report)
        if examples is not None:
            parts.append(examples)
        if more > 0:
            parts.append(Text(f"+{more} more failing case(s) (--format json lists all)",
                              style="dim"))
    else:
        parts.append(Text("no failing case", style="dim"))
    return parts


def example_text(report: Mapping[str, Any]) -> Text | None:
    """Each failing case's prompt and one wrong trial of every subject that got it wrong."""
    shown = [row for row in report["failures"]["cases"][:TOP] if row.get("examples")]
    if not shown:
        return None
    text = Text("wrong answers: each failing case's prompt, one wrong trial per subject",
                style="bold")
    for row in shown:
        text.append(f"\n{row['probe_id']} ({_EXPECT.get(row['expectation'], '?')})")
        if row.get("prompt"):
            text.append(f": {row['prompt']}", style="italic")
        for e in row["examples"]:
            text.append(f"\n  {e['subject']} #{e['trial']}: {e['details'] or 'wrong'}")
            if e.get("answer"):
                text.append(f" — {e['answer']}", style="dim")
    return text


def routing_parts(report: Mapping[str, Any]) -> list[RenderableType]:
    """Which skill took the prompts: per subject and expectation, the trials the skill
    under test took first, that no skill took, and that each other skill took; then the cases
    whose trials went astray ("must-003: taken by pdf 4/9, none 2/9")."""
    routing = report.get("routing") or []
    if not routing:
        return []
    table = _table("which skill took the prompt (first skill invoked, valid trials)",
                   "subject", "expect", "trials", "skill under test", "none", "others",
                   right=("trials", "none"))
    astray = Text()
    for r in routing:
        for row in r["expectations"]:
            if not row["trials"]:
                continue
            table.add_row(r["subject"], _EXPECT.get(row["expectation"], row["expectation"]),
                          str(row["trials"]), f"{r['target']} {row['target']}",
                          str(row["none"]),
                          ", ".join(f"{k} {v}" for k, v in row["other"].items()) or "-")
        for c in r["cases"]:
            astray.append(("\n" if astray else "")
                          + f"{r['subject']}: {c['probe_id']}: taken by {c['taken_by']}")
    parts: list[RenderableType] = [table]
    if astray:
        parts.append(Text.assemble(Text("cases that went elsewhere than expected:\n",
                                        style="bold"), astray))
    return [*parts, Text("")]


def cost_parts(report: Mapping[str, Any]) -> list[RenderableType]:
    c = report["cost"]
    total = c["total"]
    if not (total["tokens_input"] or total["tokens_output"] or total["cost_usd"]):
        return [Text(f"cost: no tokens or cost recorded ({total['attempts']} attempts; the "
                     "runtime reports none)", style="dim")]
    parts: list[RenderableType] = []
    for title, rows in (("cost by subject", c["by_subject"]), ("cost by case", c["by_case"])):
        ordered = sorted(rows.items(), key=lambda kv: (-(kv[1]["cost_usd"] or 0.0), kv[0]))
        table = _table(title + (f" (top {TOP})" if len(ordered) > TOP else ""),
                       title.split()[-1], "attempts", "input tokens", "output tokens", "USD",
                       right=("attempts", "input tokens", "output tokens", "USD"))
        for name, u in ordered[:TOP]:
            table.add_row(name, str(u["attempts"]), f"{u['tokens_input']:,}",
                          f"{u['tokens_output']:,}", f"{u['cost_usd']:.4f}")
        parts += [table, Text("")]
    parts.append(Text(f"total: {total['attempts']} attempts, {total['tokens_input']:,} input + "
                      f"{total['tokens_output']:,} output tokens, ${total['cost_usd']:.4f} "
                      f"({c['note']})"))
    return parts


def outcome_parts(report: Mapping[str, Any]) -> list[RenderableType]:
    """Tokens, time and cost per trial with intervals, per subject (`ix.report.outcome_text`);
    nothing when the run has no such section. The changes against the control are on the
    first screen (`outcome_change_parts`)."""
    outcomes = report.get("outcomes")
    if not outcomes:
        return []
    level = f"{outcomes['level'] * 100:g}%"
    subjects, rows = outcome_text.subject_rows(outcomes)
    table = _table(f"outcomes per trial: mean of case means [{level} CI]", "quantity",
                   *subjects, right=tuple(subjects))
    for row in rows:
        table.add_row(*row)
    return [Text(""), table]


def outcome_change_parts(report: Mapping[str, Any]) -> list[RenderableType]:
    """At what cost: each subject against the control, paired by case, the change of its
    tokens, time and cost per trial and of its cost per success (the first screen's)."""
    outcomes = report.get("outcomes")
    against = outcome_text.comparison_rows(outcomes) if outcomes else []
    if not outcomes or not against:
        return []
    level = f"{outcomes['level'] * 100:g}%"
    control = outcomes["comparisons"][0]["control"] if outcomes["comparisons"] else ""
    table = _table(f"at what cost: against {control}, paired by case, the change of the "
                   f"mean [{level} CI]", "subject", "quantity", "change", "P(lower)",
                   "p Holm", right=("change", "P(lower)", "p Holm"))
    for row in against:
        table.add_row(*row)
    return [Text(""), table]


def annotation_text(annotations: list[dict[str, Any]]) -> Text:
    text = Text("annotations\n", style="bold")
    for a in annotations:
        where = f" [{a['case']}]" if a.get("case") else ""
        text.append(f"  {a.get('at', '')} {a.get('user', '')}{where}: ", style="dim")
        text.append(f"{a['text']}\n")
    return text


def baseline_parts(b: dict[str, Any]) -> list[RenderableType]:
    head = Text(f"against baseline {b['tag']} ({b['run']}): ", style="bold")
    if not b["regressed"]:
        head.append("no regression", style="bold green")
        head.append(f" — {b['rule']}", style="dim")
        return [head]
    head.append(f"{len(b['regressions'])} regression(s)", style="bold red")
    table = _table("regressions (run − baseline)", "subject", "metric", "before", "after",
                   "delta [95% CI]", "p worse (Holm)",
                   right=("before", "after", "delta [95% CI]", "p worse (Holm)"))
    for r in b["regressions"]:
        table.add_row(r["subject"], METRIC_NAMES.get(r["metric"], r["metric"]),
                      fmt(r["before"]), fmt(r["after"]),
                      f"{fmt(r['diff'])} {ci(r['diff_ci'])}", fmt(r["p_worse_holm"]))
    return [head, table, Text(b["rule"], style="dim")]


_VERDICT_STYLE = {"SUPPORTED": "bold green", "REFUTED": "bold red",
                  "INCONCLUSIVE": "bold yellow", "NO VERDICT": "bold"}


def verdict_text(lines: list[str]) -> Text:
    """The goal's lines of `ix.report.answer`, the verdict word coloured."""
    text = Text()
    for i, line in enumerate(lines):
        if i == 0:
            word = line.split(" — ", 1)[0]
            text.append(word, style=_VERDICT_STYLE.get(word, "bold"))
            text.append(line[len(word):], style="bold")
        else:
            text.append(f"\n  {line}", style="yellow" if line.startswith(
                ("to settle it", "more cases")) else "dim")
    return text


def answer_parts(report: Mapping[str, Any], verdict: bool = True) -> list[RenderableType]:
    """The answer in sentences: the goal's verdict (unless the first screen above said it)
    and each variant's sentence."""
    a = report.get("answer") or {}
    parts: list[RenderableType] = []
    if not verdict:
        pass
    elif a.get("verdict"):
        parts += [verdict_text(a["verdict"]), Text("")]
    elif a.get("verdict") == []:
        parts += [Text("no goal stated (experiment.yaml `goal:` states one)", style="dim"),
                  Text("")]
    if a.get("comparisons"):
        parts += [Text("\n".join(a["comparisons"])), Text("")]
    if a.get("robustness"):
        parts += [Text("\n".join(a["robustness"])), Text("")]
    return parts


def interpretation_parts(report: Mapping[str, Any]) -> list[RenderableType]:
    """Each subject's status, issues and suggestions (`ix.report.answer.interpretation`)."""
    rows = (report.get("answer") or {}).get("interpretation") or []
    if not any(r["issues"] or r["suggestions"] for r in rows):
        return []
    text = Text("interpretation", style="bold")
    for r in rows:
        text.append(f"\n{r['subject']}: {r['status'] or 'no status'}")
        for issue in r["issues"]:
            text.append(f"\n  issue: {issue}", style="yellow")
        for suggestion in r["suggestions"]:
            text.append(f"\n  suggestion: {suggestion}", style="cyan")
    return [text, Text("")]


def comparison_table(summary: Mapping[str, Any]) -> RenderableType:
    """Each variant against the control, one table per variant: the goal's (primary) metric
    first, then the exploratory ones under a row saying their intervals and P(better) are
    unadjusted for the number of metrics read. p is the two-sided test's (McNemar or the
    case-level t), Holm across variants. Fits 80 columns. With `context:`, one table per
    subject against the control, a row per length (`by_length_tables`)."""
    if any(c.get("at_length") is not None for c in summary["comparisons"]):
        return by_length_tables(summary)
    sensor = summary.get("sensor")
    tables: list[RenderableType] = [Text("variants against the control (p: two-sided test, "
                                         "Holm across variants)", style="bold")]
    for comp in summary["comparisons"]:
        table = Table(title=f"{comp['variant']} vs {comp['control']} (control)",
                      title_justify="left", show_edge=False, pad_edge=False)
        for col in ("metric", "control", "variant", "delta [95% CI]", "P(better)", "p Holm"):
            table.add_column(col, justify="left" if col == "metric" else "right",
                             no_wrap=True)
        roles = {m.get("role", "exploratory") for m in comp["metrics"].values()}
        for role in ("primary", "exploratory"):
            if role not in roles:
                continue
            label = Text(role, style="dim italic")
            if role == "primary":
                table.add_row(label, "", "", Text("goal's metric", style="dim italic"))
            else:
                table.add_row(label, "", "", Text("unadjusted", style="dim italic"))
            for metric, m in comp["metrics"].items():
                if m.get("role", "exploratory") != role:
                    continue
                # "act. rate (must)": the scope kept, the table within 80 columns
                name = metric_name(metric, sensor).replace("activation rate", "act. rate")
                table.add_row(*_comparison_row(name, m))
        sensors = comp.get("sensors") or {}
        if len(sensors) > 1:  # one sensor: its pass rate is already the metrics'
            table.add_row(Text("sensor pass rate", style="dim italic"), "", "",
                          Text("case-level", style="dim italic"),
                          Text("unadjusted", style="dim italic"))
            for name, m in sensors.items():
                table.add_row(*_comparison_row(name, m))
        tables.append(table)
        tables += [Text(f"not compared: {m['not_compared']}", style="dim")
                   for m in comp["metrics"].values() if m.get("not_compared")]
    if any(len(c.get("sensors") or {}) > 1 for c in summary["comparisons"]):
        tables.append(Text(SENSOR_FAMILY_NOTE, style="dim"))
    return Group(*tables)


#: Under the comparison tables of a run with several sensors (STATS.md §10, one family).
SENSOR_FAMILY_NOTE = ("sensor pass rates: p Holm-adjusted across every variant × sensor at "
                      "once (one family); their delta and P(better) are unadjusted")


def _condition(name: str, length: int | None) -> str:
    """`s[ctx=8]` at length 8 → `s`: the condition, without its length."""
    return name if length is None else name.removesuffix(f"[ctx={length}]")


def by_length_tables(summary: Mapping[str, Any]) -> RenderableType:
    """With `context:` (DESIGN.md §7): each subject or sweep cell against the control at the
    same length, one row per length, on the goal's metric (else the activation rate); every
    metric is in the summary's `comparisons`. No row pairs two lengths: the lengths of one
    subject are its context table's."""
    comps = summary["comparisons"]
    key = next((k for c in comps for k, m in c["metrics"].items()
                if m.get("role") == "primary"), "activation_rate")
    name = metric_name(key, summary.get("sensor"))
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for c in comps:
        n = c.get("at_length")
        groups.setdefault((_condition(c["variant"], n), _condition(c["control"], n)),
                          []).append(c)
    parts: list[RenderableType] = [Text(
        f"{name}: each subject against the control at the same context length (p: two-sided "
        f"test, Holm across the {len(comps)} comparisons)", style="bold")]
    for (variant, control), found in groups.items():
        table = _table(f"{variant} vs {control} (control)", "length", "control", "variant",
                       "delta [95% CI]", "P(better)", "p Holm",
                       right=("length", "control", "variant", "delta [95% CI]", "P(better)",
                              "p Holm"))
        for c in found:
            if key in c["metrics"]:
                table.add_row(*_comparison_row(str(c.get("at_length")), c["metrics"][key]))
        parts.append(table)
    return Group(*parts)


def _comparison_row(label: str, m: Mapping[str, Any]) -> tuple[Any, ...]:
    if m.get("not_compared"):  # a side has no data: no difference, no P(better)
        return (label, fmt(m["control"]), fmt(m["variant"]),
                Text("not compared", style="dim"), "n/a", "-")
    delta = Text("n/a " if m["diff"] is None else f"{m['diff']:+.2f} ")
    delta.append(ci(m["diff_ci"]), style="dim")
    if m["diff_ci"][0] is not None and (m["diff_ci"][0] > 0 or m["diff_ci"][1] < 0):
        delta.stylize("bold")
    p = m.get("p_value_holm")
    return (label, fmt(m["control"]), fmt(m["variant"]), delta, fmt(m["p_variant_better"]),
            "-" if p is None else f"{p:.3f}")


def flips_text(summary: Mapping[str, Any]) -> Text:
    """Per comparison, the cases whose majority vote changed beyond trial noise, and how many
    more changed within it (`beyond_noise`; summaries written before it list every change)."""
    text = Text()
    quiet: list[str] = []  # comparisons without a flip beyond noise: one line for them all
    for comp in summary["comparisons"]:
        flips = comp["flips"]
        tested = all("beyond_noise" in f for f in flips)
        beyond = [f for f in flips if f.get("beyond_noise", True)]
        within = len(flips) - len(beyond)
        if not beyond:
            quiet.append(comp["variant"] + (f" ({within} within noise)" if within else ""))
            continue
        shown = ", ".join(f"{f['probe_id']} ({f['control_score']:.2f}→{f['variant_score']:.2f}, "
                          f"now {f['now']})" for f in beyond[:8])
        more = f", +{len(beyond) - 8} more" if len(beyond) > 8 else ""
        noise = f"; {within} more changed within trial noise" if within else ""
        what = "flipped beyond trial noise" if tested else "flipped"
        text.append(f"{comp['variant']}: {len(beyond)} case(s) {what}: {shown}{more}{noise}\n")
    if len(quiet) == 1:
        text.append(f"{quiet[0]}: no case changed its majority vote beyond trial noise\n",
                    style="dim")
    elif quiet:
        text.append("no case changed its majority vote beyond trial noise in "
                    + ", ".join(quiet) + "\n", style="dim")
    return text


def comparison_parts(report: Mapping[str, Any]) -> list[RenderableType]:
    """The variants against the control, as the run's summary shows them."""
    if not report.get("comparisons"):
        return []
    block = {"comparisons": report["comparisons"], "sensor": report["run"].get("sensor")}
    return [comparison_table(block), flips_text(block)]


def declines(v: Mapping[str, Any], level: float) -> bool:
    """A length against the shortest is a decline: its Holm-adjusted p (one family per
    subject) below 1 − level, and lower (STATS.md §10)."""
    p, d = v.get("p_value_holm"), v.get("diff")
    return p is not None and d is not None and p < 1.0 - level and d < 0


def context_parts(context: Mapping[str, Any] | None) -> list[RenderableType]:
    """An experiment with `context:`: per subject, the metrics at every length with the
    change from the shortest (p Holm-adjusted across the subject's lengths; bold: a
    decline), then the trend and the interaction with the control, in words. Summaries
    written before the adjustment show P(lower), labelled unadjusted."""
    if not context:
        return []
    level = float(context.get("level") or 0.95)
    parts: list[RenderableType] = [Text(
        "by context length: each length against the subject's shortest (p: two-sided test, "
        "Holm across the subject's lengths; bold: a decline); the trend is the one test of "
        "a decline", style="dim")]
    unit = str(context["unit"]).replace("_", " ")
    for s in context["subjects"]:
        rows = s["lengths"]
        shortest = rows[0]["length"]
        versus = {v["length"]: v for v in s["versus_shortest"]}
        adjusted = all("p_value_holm" in v for v in s["versus_shortest"])
        p_col = "p Holm" if adjusted else "P(lower)"
        table = _table(f"{s['subject']} by context length ({unit} of {context['prefix']})",
                       "length", "activation rate", f"vs {shortest}", p_col, "recall",
                       right=("length", "activation rate", f"vs {shortest}", p_col, "recall"))
        for row in rows:
            v = versus.get(row["length"])
            diff = Text("" if v is None else (
                "n/a" if v["diff"] is None else f"{v['diff']:+.2f} {ci(v['diff_ci'])}"))
            if v is not None and declines(v, level):
                diff.stylize("bold")
            p = "" if v is None else fmt(v["p_value_holm"] if adjusted else v["p_lower"])
            table.add_row(str(row["length"]),
                          f"{fmt(row['activation_rate'], 2)} {ci(row['activation_rate_ci'])}",
                          diff, p, f"{fmt(row['recall'], 2)} {ci(row['recall_ci'])}")
        parts.append(table)
        if not adjusted:  # a summary written before the lengths were one Holm family
            parts.append(Text("P(lower): unadjusted for the number of lengths", style="dim"))
        t = s.get("trend")
        if t is not None:
            parts.append(Text(
                f"trend: activation rate {t['slope']:+.3f} per doubling of (1 + {unit}) "
                f"{ci(t['slope_ci'])}, P(declines) {fmt(t['p_decline'])} "
                f"({t['n_cases']} must_trigger cases)", style="bold"))
        i = s.get("interaction")
        if i is not None:
            parts.append(Text(interaction_line(i), style="bold"))
        parts.append(Text(""))
    return parts


def interaction_line(i: Mapping[str, Any]) -> str:
    """The interaction in words: this subject's trend minus the control's, with interval,
    P(declines faster) and p (Holm across the run's interactions)."""
    diff = "n/a" if i["diff"] is None else f"{i['diff']:+.3f}"
    return (f"interaction with {i['versus']} (trend − its trend): {diff} per doubling "
            f"{ci(i['diff_ci'])}, P(declines faster) {fmt(i['p_lower'])}, p Holm "
            f"{fmt(i['p_value_holm'])} ({i['n_cases']} cases)")


def sweep_parts(sweep: Mapping[str, Any] | None) -> list[RenderableType]:
    """A `sweep:`: every condition on the metric with its interval and P(best), in grid
    order, then the best condition in words."""
    if not sweep:
        return []
    name = METRIC_NAMES.get(sweep["metric"], sweep["metric"])
    grid = grid_words(sweep["keys"], len(sweep["ablate"]))
    if any(row.get("by_length") for row in sweep["rows"]):
        return _sweep_by_length(sweep, name, grid)
    where = f", at context length {sweep['at_length']}" if sweep["at_length"] is not None else ""
    table = _table(f"sweep of {sweep['subject']}: {grid}{where}", "condition",
                   f"{name} [95% CI]", "P(best)", right=(f"{name} [95% CI]", "P(best)"))
    for row in sweep["rows"]:
        table.add_row(row["subject"], f"{fmt(row['value'])} {ci(row['ci'])}",
                      fmt(row["p_best"]))
    parts: list[RenderableType] = [table]
    best = sweep.get("best")
    if best is not None:
        parts.append(Text(f"best by {name}: {best['subject']}, P(best) {fmt(best['p_best'])}",
                          style="bold"))
    return [*parts, Text("")]


def _sweep_by_length(sweep: Mapping[str, Any], name: str, grid: str) -> list[RenderableType]:
    """A sweep with `context:`: each condition's P(best) at every length (bold: the likeliest
    best there); its trend against the unswept subject is its interaction, with its context
    table."""
    lengths = sorted({a["length"] for row in sweep["rows"] for a in row.get("by_length") or []})
    table = _table(f"sweep of {sweep['subject']}: {grid}; P(best) by {name} at each context "
                   "length", "condition", *map(str, lengths), right=tuple(map(str, lengths)))
    top = {n: max((a["p_best"] or 0.0 for row in sweep["rows"]
                   for a in row.get("by_length") or [] if a["length"] == n), default=None)
           for n in lengths}
    for row in sweep["rows"]:
        at = {a["length"]: a for a in row.get("by_length") or []}
        cells = []
        for n in lengths:
            a = at.get(n)
            cell = Text("" if a is None else fmt(a["p_best"]))
            if a is not None and a["p_best"] is not None and a["p_best"] == top[n]:
                cell.stylize("bold")
            cells.append(cell)
        table.add_row(_condition(row["subject"], sweep["at_length"]), *cells)
    return [table, Text("by trend: each condition's interaction with the unswept subject, "
                        "under its context table", style="dim"), Text("")]


def _level(report: Mapping[str, Any]) -> str:
    return f"{round(float(report['percentiles']['level']) * 100)}%"


def case_stat_parts(report: Mapping[str, Any]) -> list[RenderableType]:
    """A curriculum's frontiers, the per-case scores' percentiles (a table) and `--by`'s
    correlations (a line each)."""
    parts: list[RenderableType] = [Text(line) for line in frontier_lines(report)]
    if parts:
        parts.append(Text(""))
    header, rows = percentile_table(report)
    if rows:
        table = _table(f"score percentiles per case [{_level(report)} CI]", *header,
                       right=("cases",))
        for row in rows:
            table.add_row(*row)
        parts += [table, Text("")]
    lines = correlation_lines(report)
    if lines:
        parts += [Text("correlation with case properties", style="bold"),
                  *(Text(line) for line in lines), Text("")]
    return parts


def report_renderable(report: Mapping[str, Any]) -> RenderableType:
    r = report["run"]
    head = Text(f"{r['experiment']} · run {r['run_id']} · {r['status']}", style="bold")
    if r.get("reason"):
        head.append(f"\n{r['status']}: {r['reason']}", style="red")
    if r["tags"]:
        head.append(f" · tags: {', '.join(r['tags'])}", style="cyan")
    head.append(f"\n{r['started_at']} → {r['finished_at']} · seed {r['seed']} · "
                f"{r['trials_per_case']} trial(s) per case · git {r['git_commit'] or 'n/a'}"
                + (f" · scorer {r['scorer']}" if r.get("scorer") not in (None, "majority")
                   else ""), style="dim")
    board = report.get("leaderboard") or {}
    lead: list[RenderableType] = []
    load = report.get("load")  # a service under load: its SLA first, in a service's words
    if report.get("screen"):  # the first screen, verdict first; the details follow
        lead = [screen_renderable(report["screen"], sensor=r.get("sensor"),
                                  verdict_last=False,
                                  extra=[*load_parts(load), *outcome_change_parts(report),
                                         *pairwise_parts(report.get("pairwise"))],
                                  sla=sla_parts(load)),
                Text(""),
                Text("details", style="bold underline"), Text("")]
    parts: list[RenderableType] = [head, Text(""), *lead,
                                   *answer_parts(report, verdict=not lead),
                                   *summary_tables(report), Text(""),
                                   *sensor_parts(report), *judge_parts(report),
                                   *([] if load else interpretation_parts(report)),
                                   *comparison_parts(report),
                                   *context_parts(report.get("context")),
                                   *sweep_parts(report.get("sweep")),
                                   *([] if report.get("screen") else load_parts(load)),
                                   *case_stat_parts(report)]
    if len(board.get("rows") or []) > 1:  # one subject: nothing to rank
        name = METRIC_NAMES.get(board["metric"], board["metric"])
        parts += [leaderboard_table(board, f"leaderboard by {name}"), Text("")]
    parts += routing_parts(report)
    parts += [breakdown_table(report), Text(""), Text("failure analysis", style="bold"),
              *failure_parts(report), Text(""), *cost_parts(report),
              *outcome_parts(report)]
    if report["annotations"]:
        parts += [Text(""), annotation_text(report["annotations"])]
    if report.get("baseline"):
        parts += [Text(""), *baseline_parts(report["baseline"])]
    return Group(*parts)


def leaderboards_renderable(result: Mapping[str, Any]) -> RenderableType:
    """`ix leaderboard`: one board per experiment, and the pooled board when there is one."""
    parts: list[RenderableType] = []
    for board in result["boards"]:
        labels = ("run",) if len({row["run"] for row in board["rows"]}) > 1 else ()
        runs = ", ".join(sorted({row["run"] for row in board["rows"]}))
        parts += [leaderboard_table(board, f"{board['experiment']} (run {runs})", labels),
                  Text("")]
    overall = result.get("overall")
    if overall:
        parts += [leaderboard_table(overall, "overall: counts pooled over the experiments",
                                    ("experiments",)), Text("")]
    for note in result.get("notes", []):
        parts.append(Text(note, style="dim"))
    return Group(*parts)


def config_changes_text(changes: list[dict[str, Any]]) -> Text:
    """`ix compare`: what changed in configuration, per later run."""
    text = Text()
    for item in changes:
        if not item["changes"]:
            text.append(f"configuration: unchanged in {item['run']}\n", style="dim")
            continue
        text.append(f"configuration changed in {item['run']}:\n", style="bold")
        for c in item["changes"]:
            if c["change"] == "added":
                text.append(f"  + {c['path']}: {_short(c['after'])}\n", style="green")
            elif c["change"] == "removed":
                text.append(f"  - {c['path']}: {_short(c['before'])}\n", style="red")
            else:
                text.append(f"  ~ {c['path']}: {_short(c['before'])} → {_short(c['after'])}\n")
        for skill in item.get("skills") or []:
            text.append_text(skill_change_text(skill))
    return text


def skill_change_text(s: dict[str, Any]) -> Text:
    """A changed skill: its description before and after, whole, and the words that changed."""
    subjects = ", ".join(str(x) for x in s["subjects"])
    text = Text(f"skill {s['skill']} changed (subjects {subjects}):\n", style="bold")
    if s["description_changed"] is False:
        text.append("  its description is the same; the rest of SKILL.md changed\n",
                    style="dim")
        return text
    for label, key in (("before", "description_before"), ("after", "description_after")):
        value = s[key]
        text.append(f"  description {label}: ", style="dim")
        text.append(f"{value}\n" if value is not None else "not recorded by that run\n",
                    style="" if value is not None else "dim")
    for d in s.get("description_diff") or []:
        if d["removed"]:
            text.append(f"  - {d['removed']}\n", style="red")
        if d["added"]:
            text.append(f"  + {d['added']}\n", style="green")
    return text


def _short(value: Any) -> str:
    """A configuration value in full (never cut: a changed value may differ at its end)."""
    return repr(value) if isinstance(value, str) else str(value)
