"""Markdown for `ix report --format md` and `ix leaderboard --format md`: GitHub tables, for
a pull request, a wiki or a CI job summary."""

from typing import Any

from ix.report.terminal import METRIC_NAMES, TOP, ci, fmt

_EXPECT = {"must_trigger": "must", "should_not_trigger": "not", "acceptable": "edge"}


def _esc(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(_esc(h) for h in header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_esc(c) for c in row) + " |" for row in rows]
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


def report_markdown(report: dict[str, Any]) -> str:
    r, s = report["run"], report["summary"]
    lines = [f"# {r['experiment']} · run {r['run_id']}", "",
             f"Status **{r['status']}** · {r['started_at']} → {r['finished_at']} · seed "
             f"{r['seed']} · {r['trials_per_case']} trial(s) per case · git "
             f"`{r['git_commit'] or 'n/a'}`" + (f" · tags: {', '.join(r['tags'])}"
                                               if r["tags"] else ""), ""]
    lines += ["## Summary", "", "Pass rate [95% CI], passed/valid trials, ✓ when the case's "
              "majority vote is right.", ""]
    lines += _table(["case", "expect", *s["subjects"]],
                    [[row["probe_id"], _EXPECT.get(row["expectation"], row["expectation"]),
                      *(_cell(row["by_subject"].get(n)) for n in s["subjects"])]
                     for row in s["cases"]])
    lines += _table(["subject", "precision", "recall", "F1", "TP/FP/FN/TN", "errors", "status"],
                    [[n, *(f"{fmt(m[k])} {ci(m[f'{k}_ci'])}" for k in ("precision", "recall",
                                                                      "f1")),
                      f"{m['tp']}/{m['fp']}/{m['fn']}/{m['tn']}", m["errors"], m["status"]]
                     for n, m in s["metrics"].items()])
    board = report["leaderboard"]
    lines += [f"## Leaderboard by {METRIC_NAMES.get(board['metric'], board['metric'])}", ""]
    lines += leaderboard_lines(board)
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
    if report["annotations"]:
        lines += ["## Annotations", ""]
        lines += [f"- {a.get('at', '')} {a.get('user', '')}"
                  + (f" [{a['case']}]" if a.get("case") else "") + f": {_esc(a['text'])}"
                  for a in report["annotations"]]
        lines.append("")
    if report.get("baseline"):
        lines += _baseline(report["baseline"])
    return "\n".join(lines).rstrip("\n") + "\n"


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
        lines += ["Cases that fail most (a trial fails when it errored or its outcome goes "
                  "against the case's expectation):", ""]
        lines += _table(["case", "expect", "failed", "rate", "errored", "wrong", "by subject"],
                        [[c["probe_id"], _EXPECT.get(c["expectation"], c["expectation"]),
                          f"{c['failed']}/{c['trials']}", fmt(c["fail_rate"], 2), c["errored"],
                          c["wrong"], ", ".join(f"{k} {v['failed']}/{v['trials']}"
                                                for k, v in c["by_subject"].items())]
                         for c in f["cases"][:TOP]])
    else:
        lines += ["No failing case.", ""]
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


def _baseline(b: dict[str, Any]) -> list[str]:
    lines = [f"## Against baseline `{b['tag']}` ({b['run']})", ""]
    if not b["regressed"]:
        return [*lines, f"No regression ({b['rule']}).", ""]
    lines += [f"**{len(b['regressions'])} regression(s)** ({b['rule']}):", ""]
    lines += _table(["subject", "metric", "before", "after", "delta [95% CI]", "P(better)"],
                    [[r["subject"], METRIC_NAMES.get(r["metric"], r["metric"]),
                      fmt(r["before"]), fmt(r["after"]), f"{fmt(r['diff'])} {ci(r['diff_ci'])}",
                      fmt(r["p_better"])] for r in b["regressions"]])
    return lines


def leaderboards_markdown(result: dict[str, Any]) -> str:
    lines = ["# Leaderboard", ""]
    for board in result["boards"]:
        runs = sorted({row["run"] for row in board["rows"]})
        lines += [f"## {board['experiment']}", "", f"Run(s): {', '.join(runs)}", ""]
        lines += leaderboard_lines(board, ("run",) if len(runs) > 1 else ())
    if result.get("overall"):
        lines += ["## Overall", "", "Counts pooled over the experiments (micro-average).", ""]
        lines += leaderboard_lines(result["overall"], ("experiments",))
    lines += [f"_{note}_" for note in result.get("notes", [])]
    return "\n".join(lines).rstrip("\n") + "\n"
