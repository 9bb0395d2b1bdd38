"""Markdown for `ix report --format md` and `ix leaderboard --format md`: GitHub tables, for
a pull request, a wiki or a CI job summary.

Every value that comes from the lab (case ids, subject and experiment names, tags, error
messages, annotations: text that a cloned lab or a model's answer may have written) goes
through `md_text` or `md_code`, so that it renders as the text it is: never as HTML, a link,
emphasis or a table cell of its own.
"""

import html
import re
from collections.abc import Mapping
from typing import Any

from ix.report import outcome_text
from ix.report.answer import metric_name
from ix.report.case_stats import correlation_lines, frontier_lines, percentile_table
from ix.report.judge_text import judge_lines
from ix.report.load_test import percentiles, rate_text, rps, schedule_text, sla_lines
from ix.report.pairwise_text import pairwise_lines
from ix.report.terminal import (
    METRIC_NAMES,
    SENSOR_FAMILY_NOTE,
    TOP,
    ci,
    declines,
    estimate_text,
    fmt,
    rate_cell,
    rate_word,
    several_sensors,
)

_EXPECT = {"must_trigger": "must", "should_not_trigger": "not", "acceptable": "edge"}

# What Markdown gives meaning to inside a line: escapes, code, emphasis, table cells,
# strikethrough, headings, and the `]` that makes a link, an image or a link's definition
# (`](`, `][`, `]:`; other brackets stay as they are, like ix's own `[0.2, 0.8]`). `<`, `>`
# and `&` become HTML entities: never a tag, an autolink or a character reference.
_SPECIAL = re.compile(r"([\\`*_|~#]|\](?=[(\[:]))")
# ... and at the start of a line: a list item's marker (`- `, `+ `, `1. `, `1) `)
_LEADING = re.compile(r"^(\s*)([-+]|\d{1,9}[.)])(?=\s|$)")
_BREAK = re.compile(r"\r\n|[\r\n]")


def md_text(value: Any) -> str:
    """`value` as Markdown text that renders as itself, on one line (fit for a table cell),
    without the spaces around it (which Markdown drops, or reads as an indented block)."""
    text = _SPECIAL.sub(_escaped, _BREAK.sub(" ", str(value)).strip(" \t"))
    text = _LEADING.sub(lambda m: m.group(1) + m.group(2)[:-1] + "\\" + m.group(2)[-1], text)
    return html.escape(text, quote=False)


def _escaped(special: re.Match[str]) -> str:
    """`special` behind a backslash. A function, not a template string: `re` parses a
    template anew on every call, which cost more than the rest of `md_text`."""
    return "\\" + special.group(1)


def md_code(value: Any) -> str:
    """`value` as an inline code span (nothing in it is interpreted), on one line; the fence
    is longer than any run of backticks inside it. Not for table cells (a `|` splits them)."""
    text = _BREAK.sub(" ", str(value))
    fence = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(md_text(h) for h in header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(md_text(c) for c in row) + " |" for row in rows]
    return [*lines, ""]


def leaderboard_lines(board: dict[str, Any], labels: tuple[str, ...] = ()) -> list[str]:
    name = METRIC_NAMES.get(board["metric"], board["metric"])
    rows = []
    for row in board["rows"]:
        lo, hi = row["rank_ci"]
        rows.append([row["rank"], *(row.get(k, "") for k in labels), row["subject"],
                     f"{fmt(row['value'])} {ci(row['ci'])}", row["n"], fmt(row["p_rank"]),
                     fmt(row["p_above_next"]), lo if lo == hi else f"{lo}–{hi}",
                     fmt(row["p_best"])])
    return _table(["rank", *labels, "subject", f"{name} [95% CI]", "n", "P(rank right)",
                   "P(beats next)", "rank range", "P(best)"], rows)


def _cell(cell: dict[str, Any] | None) -> str:
    if cell is None:
        return "-"
    if cell["score"] is None:
        return f"n/a ({cell['errors']} errored)"
    mark = "✓" if cell["correct"] else "✗"
    errors = f" {cell['errors']} err" if cell["errors"] else ""
    return f"{cell['score']:.2f} {ci(cell['score_ci'])} {cell['passed']}/{cell['n']} {mark}" \
           f"{errors}"


def report_markdown(report: Mapping[str, Any]) -> str:
    r, s = report["run"], report["summary"]
    lines = [f"# {md_text(r['experiment'])} · run {md_text(r['run_id'])}", "",
             f"Status **{md_text(r['status'])}** · {md_text(r['started_at'])} → "
             f"{md_text(r['finished_at'])} · seed {md_text(r['seed'])} · "
             f"{md_text(r['trials_per_case'])} trial(s) per case · git "
             f"{md_code(r['git_commit'] or 'n/a')}"
             + (f" · tags: {', '.join(map(md_text, r['tags']))}" if r["tags"] else "")
             + (f" · prior {md_text(r['prior'])}" if r.get("prior", "uniform") != "uniform"
                else "")
             + (f" · scorer {md_text(r['scorer'])}" if r.get("scorer") not in (None, "majority")
                else ""), ""]
    if r.get("reason"):
        lines += [f"**{md_text(r['status'])}:** {md_text(r['reason'])}", ""]
    load = report.get("load")  # a service under load: its SLA is the answer, first
    if load:
        lines += ["## Service level", "", *(f"- {md_text(line.strip())}"
                                            for line in sla_lines(load)), ""]
        lines += _load(load)
    elif report.get("screen"):
        lines += screen_markdown(report["screen"], r.get("sensor"))
        lines += _outcome_changes(report.get("outcomes"))
        paired = pairwise_lines(report.get("pairwise"))
        if paired:
            lines += [*(f"- {md_text(line)}" for line in paired), ""]
    lines += _answer(report.get("answer") or {}, verdict=not report.get("screen"))
    word = rate_word(r.get("sensor"))
    counted = "invoked" if word == "activation rate" else "passed"
    lines += ["## Summary", "", f"{word.capitalize()} [95% CI], {counted}/valid trials, ✓ when "
              "the case's majority vote is right.", ""]
    lines += _table(["case", "expect", *s["subjects"]],
                    [[row["probe_id"], _EXPECT.get(row["expectation"], row["expectation"]),
                      *(_cell(row["by_subject"].get(n)) for n in s["subjects"])]
                     for row in s["cases"]])
    if not load:  # not a classifier's words for a service
        lines += _table(["subject", "precision", "recall", "F1", "TP/FP/FN/TN", "errors",
                         "status"],
                        [[n, *(estimate_text(m[k], m[f"{k}_ci"]) for k in ("precision",
                                                                           "recall", "f1")),
                          f"{m['tp']}/{m['fp']}/{m['fn']}/{m['tn']}", m["errors"],
                          m["status"]] for n, m in s["metrics"].items()])
        lines += _reliability(s["metrics"])
    lines += _sensors(report.get("sensors"))
    judged = judge_lines(report.get("judges") or [])
    if judged:
        lines += ["## Judges", "", "```text", *judged, "```", ""]
    if not load:
        lines += _interpretation((report.get("answer") or {}).get("interpretation") or [])
    lines += _comparisons(report.get("comparisons") or [], r.get("sensor"))
    lines += _context(report.get("context"))
    lines += _sweep(report.get("sweep"))
    frontiers = frontier_lines(report)
    if frontiers:
        lines += ["## Frontier", "", *(f"- {md_text(line)}" for line in frontiers), ""]
    header, rows = percentile_table(report)
    if rows:
        level = round(float(report["percentiles"]["level"]) * 100)
        lines += ["## Score percentiles per case", "",
                  f"Each with its {level}% distribution-free interval (order statistics).", ""]
        lines += _table(header, rows)
    correlated = correlation_lines(report)
    if correlated:
        lines += ["## Correlation with case properties", "",
                  *(f"- {md_text(line)}" for line in correlated), ""]
    board = report.get("leaderboard") or {}
    if len(board.get("rows") or []) > 1:  # one subject: nothing to rank
        lines += [f"## Leaderboard by {METRIC_NAMES.get(board['metric'], board['metric'])}",
                  ""]
        lines += leaderboard_lines(board)
    lines += _routing(report.get("routing") or [])
    lines += ["## Score breakdown per case", "", "Mean ± sd (min–max) of the readings' scores, "
              "with the mean of each numeric sensor metric.", ""]
    rows = []
    for row in report["breakdown"]:
        cells = []
        for n in s["subjects"]:
            b = row["by_subject"].get(n)
            if b is None:
                cells.append("-")
                continue
            sd = f" ± {b['sd']:.2f}" if b["sd"] is not None else ""
            extra = ", ".join(f"{k}={fmt(v, 2)}" for k, v in b["metrics"].items())
            cells.append(f"{fmt(b['mean'], 2)}{sd} ({fmt(b['min'], 2)}–{fmt(b['max'], 2)})"
                         + (f" {extra}" if extra else ""))
        rows.append([row["probe_id"], *cells])
    lines += _table(["case", *s["subjects"]], rows)
    lines += _failures(report["failures"])
    lines += _cost(report["cost"])
    lines += _outcomes(report.get("outcomes"))
    if report["annotations"]:
        lines += ["## Annotations", ""]
        # (never an empty start: `- [case]: text` would define a link)
        lines += [f"- {md_text(a.get('at') or '?')} {md_text(a.get('user') or '?')}"
                  + (f" [{md_text(a['case'])}]" if a.get("case") else "")
                  + f": {md_text(a['text'])}" for a in report["annotations"]]
        lines.append("")
    if report.get("baseline"):
        lines += baseline_lines(report["baseline"])
    return "\n".join(lines).rstrip("\n") + "\n"


def _answer(a: dict[str, Any], verdict: bool = True) -> list[str]:
    """The answer in sentences: the goal's verdict (bold; unless the first screen said it)
    and each variant's sentence (`ix.report.answer`)."""
    lines = ["## Answer", ""] if verdict else []
    if not verdict:
        pass
    elif a.get("verdict"):
        verdict_lines = a["verdict"]
        word, _, rest = verdict_lines[0].partition(" — ")
        lines += [f"**{md_text(word)}** — {md_text(rest)}", ""]
        lines += [f"- {md_text(line)}" for line in verdict_lines[1:]]
        lines += [""] if len(verdict_lines) > 1 else []
    else:
        lines += ["No goal stated (experiment.yaml `goal:` states one).", ""]
    if a.get("comparisons"):
        lines += [f"- {md_text(c)}" for c in a["comparisons"]]
        lines.append("")
    if a.get("robustness"):
        lines += [f"- {md_text(c)}" for c in a["robustness"]]
        lines.append("")
    return lines


def screen_markdown(s: Mapping[str, Any], sensor: str | None = None) -> list[str]:
    """The first screen (`ix.report.screen`) in Markdown: the verdict, one row per subject,
    the comparison that answers the question, the cases that matter."""
    lines = ["## Answer", ""]
    if s["verdict"]:
        word, _, rest = s["verdict"][0].partition(" — ")
        lines += [f"**{md_text(word)}** — {md_text(rest)}", ""]
        lines += [f"- {md_text(line)}" for line in s["verdict"][1:]]
    else:
        h = s.get("headline") or {}
        lines.append("No goal stated (experiment.yaml `goal:` states one)"
                     + (f"; {md_text(s['metric_label'])} of {md_text(h['subject'])} "
                        f"{fmt(h['value'])} {ci(h['ci'])}" if h else "") + ".")
    lines += [f"- ⚠ {md_text(line)}" for line in s.get("judge") or ()]
    lines += [f"- **GATE FAILED** — {md_text(line)}" for line in s.get("gates") or ()]
    lines.append("")
    level = f"{s['level']:.0%}"
    if (s.get("answer") or {}).get("kind") != "context":
        lines += _table(["subject", f"{s['metric_label']} [{level} CI]", "n", "status"],
                        [[row["name"] + (f" ({row['role']})" if row["role"] else ""),
                          estimate_text(row["value"], row["ci"]) if row["ci"] is not None
                          else fmt(row["value"]), f"{row['n']} {row['unit']}",
                          row["status"] + (f", {row['errors']} errored" if row["errors"]
                                           else "")] for row in s["subjects"]])
    a = s.get("answer")
    if a and a["kind"] == "comparisons":
        lines += [f"**{md_text(a['metric_label'])}: each variant against its control** "
                  "(p: two-sided, Holm across variants)", ""]
        lines += _table(["variant", "control", a["metric_label"], "delta [95% CI]",
                         "P(better)", "p Holm", "flipped"],
                        [[r["variant"], r["control"], fmt(r["value"]),
                          "not compared" if r["not_compared"] else
                          f"{_signed(r['diff'])} {ci(r['diff_ci'])}", fmt(r["p_better"]),
                          fmt(r["p_holm"]),
                          len(r["flipped"])] for r in a["rows"]])
    elif a and a["kind"] == "context":
        lengths = [str(n) for n in a["lengths"]]
        lines += [f"**{md_text(a['metric_label'])} by context length** ({md_text(a['unit'])} "
                  f"of {md_text(a['prefix'])}); trend: activation rate (must) per doubling of "
                  "(1 + length)", ""]
        lines += _table(["subject", *lengths, "trend [95% CI]", "P(declines)"],
                        [[r["subject"], *(fmt(r["values"].get(n), 2) for n in lengths),
                          f"{_signed(r['trend'], 3)} {ci(r['trend_ci'])}", fmt(r["p_declines"])]
                         for r in a["rows"]])
    elif a and a["kind"] == "sweep":
        lines += [f"**Sweep of {md_text(a['subject'])}**: {md_text(a['grid'])}", ""]
        lines += _table(["condition", f"{a['metric_label']} [95% CI]", "P(best)"],
                        [[r["subject"], estimate_text(r["value"], r["ci"]), fmt(r["p_best"])]
                         for r in a["rows"]])
    if s["cases_that_matter"]:
        hit = "invoked" if sensor in (None, "activation") else "passed"
        counted = s["conditions"] > len(s["case_columns"])
        lines += [f"**Cases that matter**: {s['cases_that_matter_total']} of {s['cases']} "
                  f"wrong, unsettled or flipped (k/n: trials {hit}; ✓ right, ✗ wrong)", ""]
        lines += _table(["case", "expect", *s["case_columns"],
                         *(["wrong in"] if counted else [])],
                        [[r["probe_id"], _EXPECT.get(r["expectation"], r["expectation"]),
                          *(_screen_cell(r["cells"].get(c)) for c in s["case_columns"]),
                          *([f"{r['wrong_in']} of {r['of']}"] if counted else [])]
                         for r in s["cases_that_matter"]])
    return lines


def _signed(x: float | None, digits: int = 2) -> str:
    return "n/a" if x is None else f"{x:+.{digits}f}"


def _screen_cell(c: Mapping[str, Any] | None) -> str:
    if c is None:
        return "-"
    if c["right"] is None:
        return f"n/a ({c['errors']} errored)"
    return f"{c['hits']}/{c['n']} {'✓' if c['right'] else '✗'}"


def _interpretation(rows: list[dict[str, Any]]) -> list[str]:
    """Each subject's status, issues and suggestions (`ix.report.answer`)."""
    if not rows:
        return []
    lines = ["## Interpretation", ""]
    for r in rows:
        lines.append(f"- {md_text(r['subject'])}: **{md_text(r['status'] or 'no status')}**")
        lines += [f"  - issue: {md_text(x)}" for x in r["issues"]]
        lines += [f"  - suggestion: {md_text(x)}" for x in r["suggestions"]]
    return [*lines, ""]


def _icc(r: dict[str, Any] | None) -> str:
    if not r or r.get("icc") is None:
        return "n/a"
    floored = " floored" if r["icc"] < 0 else ""  # a negative ICC: design effect 1
    return f"{r['icc']:.2f} ({r['design_effect']:.2f}{floored})"


def _reliability(metrics: dict[str, dict[str, Any]]) -> list[str]:
    """Specificity, between-case ICC (design effect) and unsettled votes per subject."""
    if not any(m.get("reliability") is not None for m in metrics.values()):
        return []
    lines = ["Specificity [95% CI] on the should_not cases; between-case ICC of the trials "
             "(design effect 1 + (K−1)·ICC); cases whose majority vote would flip with more "
             "trials with probability > 0.2.", ""]
    rows = []
    for n, m in metrics.items():
        rel = m.get("reliability") or {}
        spec = "n/a" if m.get("specificity") is None else \
            f"{fmt(m['specificity'])} {ci(m.get('specificity_ci'))}"
        unsettled = ", ".join(f"{u['probe_id']} ({u['p_flip']:.2f})"
                              for u in m.get("unsettled") or []) or "none"
        rows.append([n, spec, _icc(rel.get("must_trigger")),
                     _icc(rel.get("should_not_trigger")), unsettled])
    return lines + _table(["subject", "specificity", "ICC must (deff)", "ICC not (deff)",
                           "unsettled votes (P(flip))"], rows)


def _failures(f: dict[str, Any]) -> list[str]:
    lines = ["## Failure analysis", ""]
    if f["errors"]:
        lines += [f"{f['errored_trials']} errored trial(s) stand (errored attempts that a retry "
                  "replaced are counted under *retried away*).", ""]
        lines += _table(["kind", "count", "retried away", "subjects", "cases", "examples"],
                        [[g["kind"], g["count"], g["superseded"],
                          ", ".join(f"{k} {v}" for k, v in g["subjects"].items()),
                          ", ".join(g["cases"]),
                          "; ".join(f"{e['probe_id']}: {e['message']}" for e in g["examples"])]
                         for g in f["errors"]])
    else:
        lines += ["No errored trials.", ""]
    if f["cases"]:
        lines += ["Cases most often wrong (a trial counts when its outcome is wrong — its "
                  "reading goes against the case's expectation — or it errored):", ""]
        lines += _table(["case", "expect", "wrong or errored", "rate", "errored", "wrong",
                         "by subject", "prompt", "wrong examples (one per subject)"],
                        [[c["probe_id"], _EXPECT.get(c["expectation"], c["expectation"]),
                          f"{c['failed']}/{c['trials']}", fmt(c["fail_rate"], 2), c["errored"],
                          c["wrong"], ", ".join(f"{k} {v['failed']}/{v['trials']}"
                                                for k, v in c["by_subject"].items()),
                          c.get("prompt") or "-", _examples(c.get("examples") or [])]
                         for c in f["cases"][:TOP]])
    else:
        lines += ["No case has a wrong or errored trial.", ""]
    return lines


def _examples(examples: list[dict[str, Any]]) -> str:
    return "; ".join(f"{e['subject']} #{e['trial']}: {e['details'] or 'wrong'}"
                     + (f" — {e['answer']}" if e.get("answer") else "") for e in examples) or "-"


def _routing(routing: list[dict[str, Any]]) -> list[str]:
    """Which skill took the prompts (`ix.report.run_report.routing`)."""
    if not routing:
        return []
    lines = ["## Which skill took the prompt", "",
             "Valid trials by the first skill they invoked: the skill under test, none, or "
             "another skill.", ""]
    lines += _table(["subject", "expect", "trials", "skill under test", "none", "others"],
                    [[r["subject"], _EXPECT.get(row["expectation"], row["expectation"]),
                      row["trials"], f"{r['target']} {row['target']}", row["none"],
                      ", ".join(f"{k} {v}" for k, v in row["other"].items()) or "-"]
                     for r in routing for row in r["expectations"] if row["trials"]])
    astray = [f"- {md_text(r['subject'])}: {md_text(c['probe_id'])}: taken by "
              f"{md_text(c['taken_by'])}" for r in routing for c in r["cases"]]
    if astray:
        lines += ["Cases whose trials went elsewhere than expected:", "", *astray, ""]
    return lines


def _cost(c: dict[str, Any]) -> list[str]:
    t = c["total"]
    lines = ["## Cost", "", f"Total: {t['attempts']} attempts, {t['tokens_input']:,} input + "
             f"{t['tokens_output']:,} output tokens, ${t['cost_usd']:.4f} ({c['note']}).", ""]
    for title, rows in (("subject", c["by_subject"]), ("case", c["by_case"])):
        ordered = sorted(rows.items(), key=lambda kv: (-(kv[1]["cost_usd"] or 0.0), kv[0]))
        lines += _table([title, "attempts", "input tokens", "output tokens", "USD"],
                        [[k, u["attempts"], u["tokens_input"], u["tokens_output"],
                          f"{u['cost_usd']:.4f}"] for k, u in ordered])
    return lines


def _outcomes(outcomes: Mapping[str, Any] | None) -> list[str]:
    """Tokens, time and cost per trial with intervals, per subject."""
    if not outcomes:
        return []
    level = f"{outcomes['level'] * 100:g}%"
    subjects, rows = outcome_text.subject_rows(outcomes)
    lines = ["## Outcomes", "", f"Per trial that stood without error: the mean of the case "
             f"means [{level} CI, cases as the unit] ({outcomes['note']}).", ""]
    return lines + _table(["quantity", *subjects], rows)


def _outcome_changes(outcomes: Mapping[str, Any] | None) -> list[str]:
    """At what cost (the first screen's): each subject against the control, paired by case."""
    against = outcome_text.comparison_rows(outcomes) if outcomes else []
    if not outcomes or not against:
        return []
    level = f"{outcomes['level'] * 100:g}%"
    control = outcomes["comparisons"][0]["control"] if outcomes["comparisons"] else ""
    lines = [f"**At what cost**: against {md_text(control)}, paired by case, the change of "
             "the mean "
             f"[{level} CI], P(lower), and the two-sided p adjusted by Holm across the "
             "subjects.", ""]
    return lines + _table(["subject", "quantity", "change", "P(lower)", "p Holm"], against)


def _sensors(by_subject: Mapping[str, Mapping[str, Any]] | None) -> list[str]:
    """With more than one sensor, each one's pass rate per subject (issue 20)."""
    names = several_sensors(by_subject)
    if not names or by_subject is None:
        return []
    subjects = list(by_subject)
    lines = ["## Sensors", "", "Each sensor's pass rate over the valid trials [95% CI, cases "
             "as clusters], "
             "passed/valid; the first decides the trial (its reading is the trial's).", ""]
    return lines + _table(["sensor", *subjects],
                          [[name, *(rate_cell(by_subject[s].get(name)) for s in subjects)]
                           for name in names])


def _comparisons(comparisons: list[dict[str, Any]], sensor: str | None = None) -> list[str]:
    """Each variant against the control: the goal's metric (primary) first; the others are
    exploratory and their intervals and P(better) say "unadjusted". With several sensors,
    each one's pass rate follows (case-level; p Holm-adjusted across variants × sensors)."""
    if not comparisons:
        return []
    lines = ["## Comparisons", "", "Variant − control with its 95% credible interval; p is the "
             "two-sided test (McNemar, or the case-level t-test for the activation rate), "
             "Holm-adjusted across variants. Exploratory metrics are unadjusted for the "
             "number of metrics read.", ""]
    if any(c.get("at_length") is not None for c in comparisons):
        lines[-2:-1] = [lines[-2] + " With `context:`, each subject is compared with the "
                        "control at the same length (one factor at a time); its lengths "
                        "against its shortest are under *By context length*."]
    for c in comparisons:
        rows = []
        ordered = sorted(c["metrics"].items(), key=lambda kv: kv[1].get("role") != "primary")
        for k, m in ordered:
            primary = m.get("role") == "primary"
            tag = "" if primary else " (unadjusted)"
            if m.get("not_compared"):  # a side has no data: say why instead of a P(better)
                rows.append([metric_name(k, sensor) + (" (primary)" if primary else ""),
                             fmt(m["control"]), fmt(m["variant"]),
                             f"not compared: {md_text(m['not_compared'])}", "n/a", "n/a"])
                continue
            rows.append([metric_name(k, sensor) + (" (primary)" if primary else ""),
                         fmt(m["control"]), fmt(m["variant"]),
                         f"{fmt(m['diff'])} {ci(m['diff_ci'])}{tag}",
                         f"{fmt(m['p_variant_better'])}{tag}", fmt(m.get("p_value_holm"))])
        sensors = c.get("sensors") or {}
        if len(sensors) > 1:  # one sensor: its pass rate is already the metrics'
            for k, m in sensors.items():
                rows.append([f"sensor {k} pass rate", fmt(m["control"]), fmt(m["variant"]),
                             f"{fmt(m['diff'])} {ci(m['diff_ci'])} (unadjusted)",
                             f"{fmt(m['p_variant_better'])} (unadjusted)",
                             f"{fmt(m.get('p_value_holm'))} (variants × sensors)"])
        lines += [f"### {md_text(c['variant'])} vs {md_text(c['control'])} (control)", ""]
        lines += _table(["metric", "control", "variant", "delta [95% CI]", "P(better)",
                         "p (Holm)"], rows)
    if any(len(c.get("sensors") or {}) > 1 for c in comparisons):
        lines += ["", SENSOR_FAMILY_NOTE[0].upper() + SENSOR_FAMILY_NOTE[1:] + "."]
    return lines


def _context(context: Mapping[str, Any] | None) -> list[str]:
    """An experiment with `context:`: each subject's metrics by length, the change from the
    shortest and the trend."""
    if not context:
        return []
    unit = str(context["unit"]).replace("_", " ")
    lines = ["## By context length", "",
             f"Every case ran after the first *length* {unit} of {md_code(context['prefix'])}. "
             "The change from the shortest length is the case-level paired difference of the "
             "activation rate, its two-sided p Holm-adjusted across the subject's longer "
             "lengths (a decline: p < 0.05 and lower); the trend is the mean per-case slope of "
             "the activation rate against log2(1 + length), with its 95% credible interval — "
             "the one test of a decline. The interaction is a subject's trend minus the "
             "control's, case by case (p Holm-adjusted across the subjects).", ""]
    for s in context["subjects"]:
        shortest = s["lengths"][0]["length"]
        versus = {v["length"]: v for v in s["versus_shortest"]}
        rows = []
        adjusted = all("p_value_holm" in v for v in s["versus_shortest"])
        for row in s["lengths"]:
            v = versus.get(row["length"])
            diff = "" if v is None else f"{fmt(v['diff'])} {ci(v['diff_ci'])}"
            if v is not None and declines(v, float(context.get("level") or 0.95)):
                diff += " (declines)"
            rows.append([row["length"], f"{fmt(row['activation_rate'])} "
                         f"{ci(row['activation_rate_ci'])}", diff,
                         "" if v is None else fmt(v["p_value_holm"] if adjusted
                                                  else v["p_lower"]),
                         f"{fmt(row['recall'])} {ci(row['recall_ci'])}",
                         f"{fmt(row['f1'])} {ci(row['f1_ci'])}",
                         f"{fmt(row.get('correct_rate'))} {ci(row.get('correct_rate_ci'))}"])
        lines += [f"### {md_text(s['subject'])}", ""]
        lines += _table(["length", "activation rate", f"vs {shortest}",
                         "p (Holm)" if adjusted else "P(lower) (unadjusted)", "recall",
                         "F1", "correct rate"], rows)
        t = s.get("trend")
        if t is not None:
            lines += [f"Trend: the activation rate changes by **{fmt(t['slope'])}** per "
                      f"doubling of (1 + {unit}) {ci(t['slope_ci'])}; P(declines) "
                      f"{fmt(t['p_decline'])} ({t['n_cases']} must_trigger cases).", ""]
        i = s.get("interaction")
        if i is not None:
            lines += [f"Interaction with {md_text(i['versus'])}: its trend minus the control's "
                      f"is **{fmt(i['diff'])}** per doubling {ci(i['diff_ci'])}; P(declines "
                      f"faster) {fmt(i['p_lower'])}, p (Holm) {fmt(i['p_value_holm'])} "
                      f"({i['n_cases']} cases).", ""]
    return lines


def _load(load: Mapping[str, Any] | None) -> list[str]:
    """`load:`: rates and requests, latency percentiles, and the SLA verdicts per subject."""
    if not load:
        return []
    warm = f" after a {load['warmup_s']:g} s warm-up" if load["warmup_s"] else ""
    order = "in turn" if load["order"] == "cycle" else "in seeded random order"
    lines = ["## Load", "",
             f"{load['rps']:g} requests/s offered ({load['arrivals']} arrivals, cases {order})"
             f" for {load['duration_s']:g} s{warm}, at most {load['max_in_flight']:,} in "
             "flight. Latency percentiles in ms with 95% distribution-free intervals (order "
             "statistics, exact binomial; ∞: too few requests to bound it); error rate with "
             "its 95% credible interval.", ""]
    subjects = load["subjects"]
    lines += _table(["subject", "achieved rps", "sent", "answered", "errored", "dropped",
                     "waited", "error rate", "schedule error"],
                    [[s["subject"], rps(s["achieved_rps"]), *(f"{s['requests'][k]:,}" for k in (
                        "sent", "completed", "errored", "dropped", "waited")),
                      rate_text(s["error_rate"], s["error_rate_ci"]), schedule_text(s)]
                     for s in subjects])
    lines += _table(["subject", "answered", "p50", "p95", "p99"],
                    [[s["subject"], f"{s['latency_ms']['n']:,}", *percentiles(s)]
                     for s in subjects])
    checks = [[s["subject"], c["objective"], c["verdict"] or "n/a",
               f"{c['within']:,}/{c['n']:,}", c["reason"]] for s in subjects for c in s["sla"]]
    if checks:
        lines += _table(["subject", "SLA", "verdict", "within", "why"], checks)
    return lines


def _sweep(sweep: Mapping[str, Any] | None) -> list[str]:
    """A `sweep:`: every condition on the report's metric with P(best)."""
    if not sweep:
        return []
    name = METRIC_NAMES.get(sweep["metric"], sweep["metric"])
    where = (f" (at context length {sweep['at_length']})" if sweep["at_length"] is not None
             else "")
    keys = sorted(sweep["keys"])
    rows = [[r["subject"], *(r["values"].get(k, "") for k in keys), r["without"] or "",
             f"{fmt(r['value'])} {ci(r['ci'])}", fmt(r["p_best"])] for r in sweep["rows"]]
    lines = [f"## Sweep of {md_text(sweep['subject'])}{where}", "",
             f"Every condition on {name} with its 95% credible interval, and the probability "
             "that it is the best of them (the leaderboard's posteriors).", ""]
    lines += _table(["condition", *keys, "without", f"{name} [95% CI]", "P(best)"], rows)
    lengths = sorted({a["length"] for r in sweep["rows"] for a in r.get("by_length") or []})
    if lengths:
        lines += [f"P(best) by {name} at each context length (among the conditions at that "
                  "length); each condition's trend against the unswept subject is its "
                  "interaction, under *By context length*.", ""]
        lines += _table(["condition", *map(str, lengths)],
                        [[r["subject"], *(fmt(a["p_best"]) for n in lengths
                                          for a in r["by_length"] if a["length"] == n)]
                         for r in sweep["rows"]])
    if sweep.get("best"):
        lines += [f"Best by {name}: **{md_text(sweep['best']['subject'])}**, P(best) "
                  f"{fmt(sweep['best']['p_best'])}.", ""]
    return lines


def baseline_lines(b: Mapping[str, Any]) -> list[str]:
    """The regressions against `--baseline` (none: one line saying so)."""
    lines = [f"## Against baseline {md_code(b['tag'])} ({md_text(b['run'])})", ""]
    if not b["regressed"]:
        return [*lines, f"No regression ({md_text(b['rule'])}).", ""]
    lines += [f"**{len(b['regressions'])} regression(s)** ({md_text(b['rule'])}):", ""]
    lines += _table(["subject", "metric", "before", "after", "delta [95% CI]",
                     "p worse (Holm)"],
                    [[r["subject"], METRIC_NAMES.get(r["metric"], r["metric"]),
                      fmt(r["before"]), fmt(r["after"]), f"{fmt(r['diff'])} {ci(r['diff_ci'])}",
                      fmt(r["p_worse_holm"])] for r in b["regressions"]])
    return lines


def leaderboards_markdown(result: Mapping[str, Any]) -> str:
    lines = ["# Leaderboard", ""]
    for board in result["boards"]:
        runs = sorted({row["run"] for row in board["rows"]})
        lines += [f"## {md_text(board['experiment'])}", "",
                  f"Run(s): {', '.join(map(md_text, runs))}", ""]
        lines += leaderboard_lines(board, ("run",) if len(runs) > 1 else ())
    if result.get("overall"):
        lines += ["## Overall", "", "Counts pooled over the experiments (micro-average).", ""]
        lines += leaderboard_lines(result["overall"], ("experiments",))
    lines += [f"_{md_text(note)}_" for note in result.get("notes", [])]
    return "\n".join(lines).rstrip("\n") + "\n"
