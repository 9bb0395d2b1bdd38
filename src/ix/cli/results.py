"""`ix results` (filtered trials, or aggregates per group) and `ix query "SQL"`.

The views, columns and aggregates are described in docs/queries.md.
"""

import csv
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from ix.api import query as api_query
from ix.api import results as api_results
from ix.api.results import Method
from ix.api.routing import explain_routing
from ix.api.trials import reading_word
from ix.cli.explain import print_explained
from ix.cli.options import JsonFormat as Json
from ix.cli.options import Lab
from ix.cli.output import err, out, print_json, warn
from ix.domain.errors import ConfigError
from ix.report.tables import decimal

if TYPE_CHECKING:
    from ix.api.schemas import AggregateRow

Format = Annotated[str | None, typer.Option(
    "--format", "-f", help="table (default), json or csv.", show_default=False)]
Many = list[str] | None

FORMATS = ("table", "json", "csv")
TABLE_LIMIT = 50       # trials a table shows unless --limit says otherwise
QUERY_TABLE_ROWS = 1000


def _once(say: Callable[[str], None]) -> Callable[[str], None]:
    """`say`, each message once: the index is read by each query of the command (the scope,
    then the rows), and would repeat what it has to say (a copied folder, skipped lines)."""
    said: set[str] = set()

    def once(message: str) -> None:
        if message not in said:
            said.add(message)
            say(message)
    return once


def _format(fmt: str | None, json_out: bool) -> str:
    if fmt is not None and fmt not in FORMATS:
        raise ConfigError(f"unknown format {fmt!r}; allowed: {', '.join(FORMATS)}",
                          field="--format")
    if json_out and fmt not in (None, "json"):
        raise ConfigError(f"--json asks for JSON but --format asks for {fmt}", field="--format")
    return "json" if json_out else (fmt or "table")


def results(
    lab: Lab = None,
    experiment: Annotated[Many, typer.Option(
        "--experiment", "-e", help="Only this experiment (its name or folder); repeatable.",
        show_default=False)] = None,
    subject: Annotated[Many, typer.Option(
        "--subject", "-s", help="Only this subject; repeatable.", show_default=False)] = None,
    case: Annotated[Many, typer.Option(
        "--case", help="Only cases whose id matches this glob (must-*); repeatable.",
        show_default=False)] = None,
    tag: Annotated[Many, typer.Option(
        "--tag", help="Only cases with this tag; repeatable (any of them).",
        show_default=False)] = None,
    difficulty: Annotated[Many, typer.Option(
        "--difficulty", help="Only cases of this difficulty (easy, medium, hard); repeatable.",
        show_default=False)] = None,
    run: Annotated[Many, typer.Option(
        "--run", help="Only this run (an id or a unique prefix); repeatable.",
        show_default=False)] = None,
    all_runs: Annotated[bool, typer.Option(
        "--all-runs", help="Pool every run of every experiment. Default: the latest "
                           "completed run of each experiment (or the runs --run names); "
                           "imported copies of trials already in the lab are never counted "
                           "twice.")] = False,
    since: Annotated[str | None, typer.Option(
        "--since", help="Trials started at or after: a date (2026-11-20), a datetime "
                        "(2026-11-20T14:30, UTC unless it has a zone) or a duration back from "
                        "now (7d, 12h, 30m).", show_default=False)] = None,
    until: Annotated[str | None, typer.Option(
        "--until", help="Trials started before this (a bare date includes that day).",
        show_default=False)] = None,
    passed: Annotated[bool | None, typer.Option(
        "--passed/--failed", help="Only trials whose reading passed / that ran and did not "
                                  "pass: with the activation sensor, the skill was invoked / "
                                  "was not (whatever the case expected; see --right/--wrong).",
        show_default=False)] = None,
    correct: Annotated[bool | None, typer.Option(
        "--right/--wrong", help="Only trials whose outcome is right / wrong: the reading "
                                "matches / goes against the case's expectation (acceptable "
                                "cases are neither).", show_default=False)] = None,
    errors: Annotated[bool | None, typer.Option(
        "--errors/--no-errors", help="Only errored trials / no errored trials.",
        show_default=False)] = None,
    all_attempts: Annotated[bool, typer.Option(
        "--all-attempts", help="Also the attempts a retry or resume superseded (the view "
                               "trials_all).")] = False,
    group_by: Annotated[Many, typer.Option(
        "--group-by", "-g", help="Aggregate per group: subject, case, tag, difficulty, run, "
                                 "experiment, expectation, invoked (the first skill a trial "
                                 "invoked), family (the original a case was generated "
                                 "from); repeatable (subject × case).",
        show_default=False)] = None,
    stats: Annotated[bool, typer.Option(
        "--stats", help="Aggregate every matching trial into one row.")] = False,
    correlation: Annotated[bool, typer.Option(
        "--correlation", help="With the aggregates: the correlation of score with "
                              "difficulty (easy 1, medium 2, hard 3).")] = False,
    method: Annotated[str, typer.Option(
        "--correlation-method", help="pearson or spearman.")] = "pearson",
    limit: Annotated[int | None, typer.Option(
        "--limit", "-n", min=0, help=f"At most this many trials (0: all). Default: "
                                     f"{TABLE_LIMIT} in a table, all in json and csv.",
        show_default=False)] = None,
    explain: Annotated[str | None, typer.Option(
        "--explain", help="Why each trial of this case (an id or a glob) went where it did: "
                          "the skill chosen, its score against the threshold and the words "
                          "that carried it, as the runtime recorded them (the lexical "
                          "runtime does). With --experiment, --subject, --run.",
        show_default=False)] = None,
    fmt: Format = None,
    json_out: Json = False,
) -> None:
    """List the lab's trials (the latest attempt of each), filtered, or aggregate them.

    Scope: the latest completed run of each experiment unless --run or --all-runs says
    otherwise (the scope is printed on stderr). Aggregates give the activation rate (share
    of valid trials in which the skill fired) and the correct rate (share of majority votes,
    one per run x subject x case, that match the expectation), each with a 95% interval that
    treats a case's trials as one cluster (docs/results.md, "Glossary").

    Each trial's reading (invoked / not invoked with the activation sensor, else the sensor's
    passed / failed) and its outcome (right / wrong against the case's expectation).

    Examples: `ix results --subject claude-sonnet --since 7d --wrong`;
    `ix results --group-by subject --group-by case`; `ix results --group-by subject
    --correlation --format csv`. Exit 2 on bad input (unknown run, malformed date, ...).
    """
    fmt = _format(fmt, json_out)
    if method not in ("pearson", "spearman"):
        raise ConfigError(f"unknown method {method!r}; allowed: pearson, spearman",
                          field="--correlation-method")
    aggregate = bool(group_by or stats or correlation)
    if explain is not None:
        _explain(explain, lab=lab, experiment=experiment, subject=subject, run=run,
                 all_runs=all_runs, limit=limit, fmt=fmt,
                 others={"--case": case, "--tag": tag, "--difficulty": difficulty,
                         "--since": since, "--until": until, "--passed/--failed": passed,
                         "--right/--wrong": correct, "--errors/--no-errors": errors,
                         "--all-attempts": all_attempts or None, "--group-by": group_by,
                         "--stats": stats or None, "--correlation": correlation or None})
        return
    if limit is None and fmt == "table" and not aggregate:
        limit = TABLE_LIMIT
    rs = api_results.query_results(
        lab, experiment=experiment, subject=subject, case=case, tag=tag,
        difficulty=difficulty, run=run, since=since, until=until, passed=passed,
        correct=correct, errors=errors, all_attempts=all_attempts, all_runs=all_runs,
        limit=limit or None, warn=_once(warn))
    scope = Text(rs.scope.describe() if rs.scope else "", style="dim")
    if aggregate:
        pick: Method | None = None
        if correlation:
            pick = "spearman" if method == "spearman" else "pearson"
        rows = rs.group_by(*(group_by or ()), correlation=pick)
        goals = rs.goal_metrics() if fmt == "table" else {}
        _print_aggregates(rows, fmt, lead=_lead(goals))
        if fmt == "table":
            err.print(Text(RATE_CELLS, style="dim"))
            for metric, experiments in goals.items():
                err.print(Text(_goal_note(metric, experiments), style="dim"))
            err.print(scope)
        return
    if fmt != "table":
        _stream(rs, fmt)
        return
    with rs.snapshot():
        shown = rs.rows()
        total = len(shown) if len(shown) < (limit or 0) else rs.total()
    out.print(_trials_table(shown))
    note = f"{len(shown)} of {total} trial(s)"
    if len(shown) < total:
        note += " shown (--limit 0 for all; --format csv or json for every column)"
    err.print(Text(note, style="dim"))
    err.print(scope)


def _explain(case: str, *, lab: Any, experiment: Many, subject: Many, run: Many,
             all_runs: bool, limit: int | None, fmt: str, others: dict[str, Any]) -> None:
    """`--explain CASE`: the routing decisions of the case's trials (`ix.cli.explain`)."""
    given = [flag for flag, value in others.items() if value]
    if given:
        raise ConfigError(f"--explain takes --experiment, --subject, --run, --all-runs and "
                          f"--limit; leave out {', '.join(given)}", field="--explain")
    if fmt == "csv":
        raise ConfigError("--explain prints text or JSON, not csv", field="--format")
    if limit is None and fmt == "table":
        limit = TABLE_LIMIT
    found = explain_routing(lab, case, experiment=experiment, subject=subject, run=run,
                            all_runs=all_runs, limit=limit or None, warn=warn)
    print_explained(found, case, fmt)


def query(
    sql: Annotated[str, typer.Argument(
        help="One read-only SQL statement over the views trials, trials_all and cases, e.g. "
             "\"SELECT subject, avg(passed::INT) FROM trials GROUP BY subject\".",
        show_default=False)],
    lab: Lab = None,
    fmt: Format = None,
    json_out: Json = False,
) -> None:
    """Run SQL (DuckDB) over the lab's trials; statements that would write are refused.

    Columns and examples: docs/queries.md. Exit 2 on bad SQL (with DuckDB's one-line reason).
    """
    fmt = _format(fmt, json_out)
    result = api_query.run_query(lab, sql, warn=warn)
    if fmt != "table":
        _stream(result, fmt)
        return
    rows = []
    for row in result:
        rows.append(row)
        if len(rows) > QUERY_TABLE_ROWS:
            break
    columns = list(rows[0]) if rows else result.columns
    table = Table(show_edge=False)
    for name in columns:
        table.add_column(Text(name))  # one line per value; records when too wide
    for row in rows[:QUERY_TABLE_ROWS]:
        table.add_row(*(_cell(row[c]) for c in columns))
    out.print(table)
    if len(rows) > QUERY_TABLE_ROWS:
        err.print(Text(f"first {QUERY_TABLE_ROWS} rows shown; --format csv or json prints "
                       "them all", style="dim"))


def _stream(table: api_query.Table, fmt: str) -> None:
    """json or csv of every row, written by DuckDB to a temporary file and copied to stdout."""
    fd, tmp = tempfile.mkstemp(prefix="ix-results-", suffix=f".{fmt}")
    os.close(fd)
    try:
        table.export(fmt, tmp)
        sys.stdout.flush()
        with open(tmp, "rb") as f:
            shutil.copyfileobj(f, sys.stdout.buffer)
        sys.stdout.buffer.flush()
    except BrokenPipeError:  # `ix results --format csv | head`: the reader has enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    finally:
        os.unlink(tmp)


def _print_aggregates(rows: "list[AggregateRow]", fmt: str, lead: str = "must") -> None:
    if fmt == "json":
        print_json(rows)
    elif fmt == "csv":
        _write_csv(rows)
    else:
        out.print(_aggregate_table(rows, lead))


#: The rate columns of the aggregate table (DESIGN.md §8: an activation rate says its scope).
_RATE_COLUMNS = {
    "must": ("activation rate (must)", "activation_rate_must", "passed_must", "valid_must"),
    "not": ("activation rate (not)", "activation_rate_not", "passed_not", "valid_not"),
    "correct": ("correct rate", "correct_rate", "correct", "votes"),
}
#: What a rate cell holds (said once, on stderr, to keep the columns narrow).
RATE_CELLS = ("rates: estimate [95% CI] and counts — invoked/valid trials, correct/votes for "
              "the correct rate")
#: Which rate column stands for a goal's metric (the one it leads with), and how.
_GOAL_COLUMNS = {"activation_rate": ("must", "the same"),
                 "recall": ("must", "its trial-level counterpart"),
                 "pass_rate": ("correct", "the same"), "correct_rate": ("correct", "the same")}


def _lead(goals: Mapping[str, list[str]]) -> str:
    """The rate column to lead with: the goal's metric's, when the goals in scope agree."""
    columns = {_GOAL_COLUMNS[m][0] for m in goals if m in _GOAL_COLUMNS}
    return columns.pop() if len(columns) == 1 else "must"


def _goal_note(metric: str, experiments: list[str]) -> str:
    """Where the goal's metric is in the table (or that `ix report` gives it)."""
    whose = f"the goal's metric of {', '.join(experiments)}: {metric}"
    if metric in _GOAL_COLUMNS:
        column, how = _GOAL_COLUMNS[metric]
        return f"{whose}; the {_RATE_COLUMNS[column][0]} column ({how}) leads"
    return f"{whose}; ix report RUN gives it with its interval"


def _write_csv(rows: Sequence[Mapping[str, Any]]) -> None:
    if not rows:
        return
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(list(rows[0]))
    for row in rows:
        writer.writerow(["" if v is None else str(v).lower() if isinstance(v, bool) else v
                         for v in row.values()])


_KEY_TITLES = {"probe_id": "case", "run_id": "run", "first_invoked": "invoked"}


def _aggregate_table(rows: Sequence[Mapping[str, Any]], lead: str = "must") -> Table:
    keys = [k for k in (rows[0] if rows else {}) if k not in _STAT_KEYS and
            not k.startswith(("score_", "duration_", "tokens_", "cost_", "activation_rate",
                              "correct_rate", "valid_", "passed_"))]
    rates = [lead, *(c for c in _RATE_COLUMNS if c != lead)]
    table = Table(show_edge=False)
    for k in keys:
        table.add_column(_KEY_TITLES.get(k, k))
    for title in ("trials", "cases", "errors", *(_RATE_COLUMNS[c][0] for c in rates),
                  "score mean", "duration p50 / p90 / p99 (ms)", "tokens mean", "cost (USD)"):
        table.add_column(title, justify="right")
    correlated = bool(rows) and "score_difficulty_r" in rows[0]
    if correlated:
        table.add_column(f"r(score, difficulty) [95% CI] ({rows[0]['score_difficulty_method']})",
                         justify="right")
    for r in rows:
        cells: list[Text | str] = [Text("none", style="dim") if k == "first_invoked"
                                   and r[k] is None else _cell(r[k]) for k in keys]
        durations = " / ".join(_number(r[f"duration_{p}"], 1) for p in ("p50", "p90", "p99"))
        families = r.get("families", r["cases"])  # the clusters: rewordings of one prompt
        cases = (str(r["cases"]) if families == r["cases"]
                 else f"{r['cases']} ({families} families)")
        cells += [str(r["n"]), cases, str(r["errors"])]
        for c in rates:
            _, name, hits, total = _RATE_COLUMNS[c]
            cells.append("-" if r.get(name) is None
                         else f"{_rate(r, name)} {r[hits]}/{r[total]}")
        cells += [_number(r["score_mean"], 3), durations, _number(r["tokens_mean"], 1),
                  _number(r["cost_sum"], 4)]
        if correlated:
            cells.append(_correlation(r))
        table.add_row(*cells)
    return table


_STAT_KEYS = {"n", "errors", "valid", "passed", "cases", "families", "votes", "correct"}


def _rate(r: Mapping[str, Any], name: str) -> str:
    """`0.85 [0.62, 0.95]`, or - where no trial counts."""
    if r[name] is None:
        return "-"
    return f"{r[name]:.2f} [{r[f'{name}_lo']:.2f}, {r[f'{name}_hi']:.2f}]"


def _correlation(r: Mapping[str, Any]) -> str:
    if r["score_difficulty_r"] is None:
        return f"- (n={r['score_difficulty_n']})"
    ci = ""
    if r["score_difficulty_lo"] is not None:
        ci = f" [{r['score_difficulty_lo']:.2f}, {r['score_difficulty_hi']:.2f}]"
    return f"{r['score_difficulty_r']:.2f}{ci} (n={r['score_difficulty_n']})"


def _trials_table(rows: list[dict[str, Any]]) -> Table:
    """The trials, one per line; columns that say nothing here (one experiment, no tags, no
    difficulty) are left out to keep the table narrow."""
    optional = {"experiment": len({r["experiment"] for r in rows}) > 1,
                "difficulty": any(r["difficulty"] for r in rows),
                "tags": any(r["tags"] for r in rows),
                "invoked": any(r.get("invoked") for r in rows)}
    titles = [t for t in ("started (UTC)", "experiment", "run", "subject", "case", "trial",
                          "outcome", "reading", "invoked", "score", "ms", "tokens", "cost",
                          "difficulty", "tags")
              if optional.get(t, True)]
    table = Table(show_edge=False)
    for title in titles:
        numeric = title in ("trial", "score", "ms", "tokens", "cost")
        table.add_column(title, justify="right" if numeric else "left")
    for r in rows:
        trial = str(r["trial"]) + (f" (attempt {r['attempt']})" if r["attempt"] else "")
        cells: dict[str, Any] = {
            "started (UTC)": _cell(r["started_at"]), "experiment": _cell(r["experiment"]),
            "run": _cell(r["run_id"]), "subject": _cell(r["subject"]),
            "case": _cell(r["probe_id"]), "trial": trial, "outcome": outcome_text(r),
            "reading": Text(reading_word(r["passed"], r["sensor"])),
            "score": _number(r["score"], 2), "ms": _number(r["duration"], 1),
            "tokens": _cell(r["tokens"]), "cost": _number(r["cost"], 4),
            "difficulty": _cell(r["difficulty"]), "tags": _cell(r["tags"]),
            "invoked": _cell(r.get("invoked")) if r.get("invoked") else
            Text("-" if r["error"] is not None else "none")}
        table.add_row(*(cells[t] for t in titles))
    return table


def outcome_text(row: Mapping[str, Any]) -> Text:
    """A trial's outcome against its case's expectation, coloured by it: right (green),
    wrong or errored (red); "-" for an acceptable case, which has no right answer."""
    if row.get("error") is not None:
        return Text(f"error: {row['error']}", style="red")
    if row.get("outcome") is None:
        return Text("-")
    return Text(str(row["outcome"]), style="green" if row["outcome"] == "right" else "red")


def _number(value: Any, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _cell(value: Any) -> Text:
    """A value as plain text: `[/x]` in a name or a query's result is no Rich markup."""
    if value is None:
        return Text("-")
    if isinstance(value, datetime):
        return Text(value.isoformat(sep=" ", timespec="milliseconds"))
    if isinstance(value, list | tuple):
        return Text(", ".join(str(v) for v in value))
    if isinstance(value, float | Decimal):  # one rule with the viewer: 0.750, 0.300, 0.889
        return Text(decimal(float(value)))
    return Text(str(value))


def register(app: typer.Typer) -> None:
    """Add `ix results` and `ix query` to the `ix` command."""
    app.command("results")(results)
    app.command("query")(query)
