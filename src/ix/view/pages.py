"""The viewer's pages: experiments and runs → a run (the report's charts, its cases) → a case's
trials (paged) → one trial → its trace; two runs side by side; an `ix optimize` session.

Pages are server-rendered by Jinja with autoescape on: every string of the lab (a model's
answer, a case's prompt, an error message) reaches the browser escaped. URLs carry run ids in
the path and subject/case names in the query string, and are built with `href`.
"""

import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import lru_cache
from importlib.resources import files
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import ChainableUndefined, Environment, PackageLoader, select_autoescape
from markupsafe import Markup
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from ix._version import __version__
from ix.api.runs import RunEntry
from ix.api.trials import outcome_of, reading_word
from ix.report.answer import metric_name
from ix.report.html import REPORT_CSS, report_body_html
from ix.report.optimize import OPTIMIZE_CSS, optimize_body_html, verdict_line
from ix.report.tables import decimal
from ix.report.terminal import METRIC_NAMES, rate_word
from ix.view.page_data import (
    CASES_PAGE,
    OUTCOMES,
    PAGE_SIZE,
    Lookup,
    NotFound,
    check_text,
)
from ix.view.trace import pretty, trace_events

STATIC_TYPES = {"view.css": "text/css; charset=utf-8", "favicon.svg": "image/svg+xml"}


# --------------------------------------------------------------------------- rendering

def href(path: str, **query: Any) -> str:
    """A URL of this app: `path` with the non-empty `query` values, all quoted."""
    pairs = [(k, str(v)) for k, v in query.items() if v is not None and v != "" and v is not False]
    return path + ("?" + urlencode(pairs) if pairs else "")


def run_href(run_id: str, view: str = "", **query: Any) -> str:
    """A URL of a run's page: the run itself, or its `trials`, `trial` or `trace` view."""
    return href(f"/runs/{quote(run_id, safe='')}" + (f"/{view}" if view else ""), **query)


def session_href(session_id: str) -> str:
    """A URL of an optimize session's page."""
    return href(f"/optimize/{quote(session_id, safe='')}")


def _pct(value: Any, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{100 * float(value):.{digits}f}%"


def _ci(pair: Any) -> str:
    if not pair or pair[0] is None or pair[1] is None:
        return ""
    return f"[{100 * pair[0]:.1f}, {100 * pair[1]:.1f}]"


def _num(value: Any, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value):
            return "n/a"

        return decimal(value, digits, grouping=True)  # one rule with `ix query` (0.750)
    return str(value)


def _when(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"
    return str(value).replace("T", " ")


def _metric(key: Any, sensor: Any = None) -> str:
    """A metric's display name; `sensor` is the run's first sensor kind (a capability
    sensor's `activation_rate` reads "pass rate (must)": DESIGN.md §8)."""
    if key == "activation_rate":
        return metric_name(key, sensor if isinstance(sensor, str) else None)
    return METRIC_NAMES.get(key, str(key).replace("_", " "))


@lru_cache(maxsize=1)
def environment() -> Environment:
    env = Environment(loader=PackageLoader("ix.view", "templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True),
                      undefined=ChainableUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(pct=_pct, ci=_ci, num=_num, when=_when, pretty=pretty, metric=_metric)
    env.globals.update(href=href, run_href=run_href, session_href=session_href,
                       version=__version__, reading_word=reading_word)
    return env


def compile_templates() -> None:
    """Compile every page's template ahead (at startup, in the background): a first request
    then only renders, ~10 ms instead of ~100 ms for a case's page."""
    env = environment()
    for name in env.list_templates(extensions=["html"]):
        env.get_template(name)


def render(template: str, **context: Any) -> str:
    context.setdefault("lab", "")
    return environment().get_template(template).render(**context)


def _page(request: Request, template: str, **context: Any) -> HTMLResponse:
    lookup = _lookup(request)
    return HTMLResponse(render(template, lab=str(lookup.lab), **context))


def _lookup(request: Request) -> Lookup:
    lookup: Lookup = request.app.state.lookup
    return lookup


def _int(request: Request, name: str, default: int | None = None, low: int = 0) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        if default is None:
            raise HTTPException(400, f"{name} is required")
        return default
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 9 or int(raw) < low:
        raise HTTPException(400, f"{name} must be a whole number >= {low}")
    return int(raw)


def _run(request: Request, name: str = "run") -> RunEntry:
    ref = request.path_params.get(name) if name == "run" else request.query_params.get(name)
    if not ref:
        raise NotFound("no run given")
    return _lookup(request).run(ref)


def report_html(report: Mapping[str, Any]) -> Markup:
    """The HTML report's sections and charts (`ix report --format html`), to embed."""
    return Markup(report_body_html(report))  # the report escapes every string it embeds


# --------------------------------------------------------------------------- pages

def experiments(request: Request) -> HTMLResponse:
    found = _lookup(request).experiments()
    for e in found:
        e["sessions"] = [_session_row(s) for s in e["sessions"]]
    return _page(request, "experiments.html", experiments=found)


def _session_row(state: Mapping[str, Any]) -> dict[str, Any]:
    """An optimize session as the experiments page lists it."""
    kind, verdict = verdict_line(state)
    return {"id": str(state.get("id")), "status": state.get("status"), "kind": kind,
            "verdict": verdict, "skill": state.get("skill"), "applied": bool(state.get("applied")),
            "started_at": state.get("started_at")}


def optimize_page(request: Request) -> HTMLResponse:
    """An `ix optimize` session: its report (`ix.report.optimize`), as `report.html` has it."""
    state = _lookup(request).session(str(request.path_params.get("session") or ""))
    return _page(request, "optimize.html", s=state,
                 body=Markup(optimize_body_html(state)))  # escapes every string it embeds


def run_page(request: Request) -> HTMLResponse:
    lookup = _lookup(request)
    run = _run(request)
    result = lookup.report(run)
    page = _int(request, "page", 1, low=1)
    cases = _cases(result.data) if result.data else _cases_from_trials(lookup.case_table(run))
    pages = max(1, math.ceil(len(cases) / CASES_PAGE))
    shown = cases[(page - 1) * CASES_PAGE: page * CASES_PAGE]
    subjects = sorted({s for c in cases for s in c["by_subject"]}) if not result.data \
        else result.data["summary"]["subjects"]
    counts = lookup.memo(run, "counts", lambda: lookup.run_counts(run.run_id).get(run.run_id))
    sensor = result.data["run"].get("sensor") if result.data else lookup.sensor(run)
    data = result.data
    body = lookup.memo(run, "body", lambda: report_html(data)) if data else None
    return _page(request, "run.html", run=run, report=result.data, note=result.note,
                 body=body, cases=shown,
                 subjects=subjects, page=page, pages=pages, counts=counts,
                 case_count=len(cases), rate_word=rate_word(sensor))


def _cases(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The run's cases from the report's summary table: per subject score, interval, n."""
    out = []
    for row in report["summary"]["cases"]:
        out.append({"probe_id": row["probe_id"], "expectation": row["expectation"],
                    "by_subject": {name: {"rate": cell.get("score"), "ci": cell.get("score_ci"),
                                          "n": cell.get("n"), "errors": cell.get("errors", 0),
                                          "correct": cell.get("correct")}
                                   for name, cell in row["by_subject"].items()}})
    return out


def _cases_from_trials(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The same from the trials recorded so far (a run without a summary yet)."""
    by_case: dict[str, dict[str, Any]] = {}
    for r in rows:
        entry = by_case.setdefault(str(r["probe_id"]), {
            "probe_id": r["probe_id"], "expectation": r.get("expectation"), "by_subject": {}})
        entry["by_subject"][r["subject"]] = {
            "rate": r["activation_rate"],
            "ci": [r["activation_rate_lo"], r["activation_rate_hi"]],
            "n": r["valid"], "errors": r["errors"], "correct": None}
    return list(by_case.values())


def trials_page(request: Request) -> HTMLResponse:
    lookup = _lookup(request)
    run = _run(request)
    case = check_text(request.query_params.get("case"), "case")
    subject = request.query_params.get("subject") or None
    if subject is not None:
        check_text(subject, "subject")
    outcome = request.query_params.get("outcome") or "all"
    if outcome not in OUTCOMES:
        raise HTTPException(400, f"outcome must be one of {', '.join(OUTCOMES)}")
    all_attempts = request.query_params.get("attempts") == "all"
    page = _int(request, "page", 1, low=1)
    found = lookup.case(run, case, subject, outcome, all_attempts, page)
    if not found.stats:
        raise NotFound(f"no trials of case {case!r} in run {run.run_id}")
    pages = max(1, math.ceil(found.total / PAGE_SIZE))
    return _page(request, "trials.html", run=run, case=case, subject=subject, outcome=outcome,
                 outcomes=OUTCOMES, all_attempts=all_attempts, stats=found.stats,
                 rows=found.rows, total=found.total, page=page, pages=pages,
                 case_file=lookup.case_file(run, case),
                 subjects=[s["subject"] for s in found.stats],
                 routes=lookup.case_routes(found.routes), rate_word=rate_word(lookup.sensor(run)))


def _trial_args(request: Request) -> tuple[str, str, int, int | None]:
    subject = check_text(request.query_params.get("subject"), "subject")
    case = check_text(request.query_params.get("case"), "case")
    trial = _int(request, "trial")
    attempt = _int(request, "attempt") if request.query_params.get("attempt") else None
    return subject, case, trial, attempt


def trial_page(request: Request) -> HTMLResponse:
    lookup = _lookup(request)
    run = _run(request)
    subject, case, trial, attempt = _trial_args(request)
    record = lookup.trial(run, subject, case, trial, attempt)
    observation = record.get("observation") if isinstance(record.get("observation"),
                                                          dict) else None
    extra = {k: v for k, v in (observation or {}).items()
             if k not in ("content", "tool_calls", "duration_ms", "tokens_input",
                          "tokens_output", "cost_usd")}
    return _page(request, "trial.html", run=run, record=record, subject=subject, case=case,
                 trial=trial, observation=observation, extra=extra,
                 outcome=outcome_of(record), attempts=lookup.attempts(run, subject, case, trial),
                 line=pretty(record), outputs=lookup.outputs(run, record))


def output_file(request: Request) -> Response:
    """A file the trial's subject made, as a download: never shown as a page (it is the
    subject's, and could be HTML), always `application/octet-stream`."""
    lookup = _lookup(request)
    run = _run(request)
    subject, case, trial, attempt = _trial_args(request)
    path = request.query_params.get("file")
    if not path:
        raise HTTPException(400, "file: which output (its path, as the trial lists it)")
    record = lookup.trial(run, subject, case, trial, attempt)
    data = lookup.output(run, record, path)
    name = path.rsplit("/", 1)[-1]
    return Response(data, media_type="application/octet-stream", headers={
        "Content-Disposition": f"attachment; filename*=UTF-8''{quote(name, safe='')}",
        "X-Content-Type-Options": "nosniff"})


def trace_page(request: Request) -> HTMLResponse:
    lookup = _lookup(request)
    run = _run(request)
    subject, case, trial, attempt = _trial_args(request)
    record = lookup.trial(run, subject, case, trial, attempt)
    trace = lookup.trace(run, record)
    if trace is None:
        raise NotFound("this trial has no trace (its runtime keeps none)")
    return _page(request, "trace.html", run=run, record=record, subject=subject, case=case,
                 trial=trial, trace=trace, events=trace_events(trace.lines))


def compare_page(request: Request) -> HTMLResponse:
    lookup = _lookup(request)
    a, b = _run(request, "a"), _run(request, "b")
    result, problem = lookup.compare(a, b)
    summaries = (lookup.summary(a), lookup.summary(b))
    counts = lookup.run_counts(a.run_id, b.run_id)
    return _page(request, "compare.html", a=a, b=b, result=result, problem=problem,
                 counts=(counts.get(a.run_id), counts.get(b.run_id)),
                 cases=_side_by_side(*summaries), flipped=_flipped(result),
                 sensor=result.get("sensor") or lookup.sensor(a))


def _side_by_side(sa: Mapping[str, Any] | None, sb: Mapping[str, Any] | None) -> dict[str, Any]:
    """Per case and subject: each run's score and n, from the two summaries."""
    subjects: list[str] = []
    rows: dict[str, dict[str, Any]] = {}
    for side, summary in (("a", sa), ("b", sb)):
        for block in (summary or {}).get("subjects", []):
            if block["name"] not in subjects:
                subjects.append(block["name"])
            for p in block["probe_results"]:
                row = rows.setdefault(p["probe_id"], {"probe_id": p["probe_id"],
                                                      "expectation": p["expectation"],
                                                      "cells": {}})
                row["cells"].setdefault(block["name"], {})[side] = {
                    "score": p.get("score"), "n": p.get("n"), "correct": p.get("correct")}
    return {"subjects": subjects, "rows": [rows[k] for k in sorted(rows)]}


def _flipped(result: Mapping[str, Any]) -> set[tuple[str, str]]:
    return {(c["subject"], f["probe_id"]) for c in result.get("comparisons", [])
            for f in c.get("flips", [])}


# --------------------------------------------------------------------------- assets

@lru_cache(maxsize=8)
def _asset(name: str) -> bytes:
    return files("ix.view").joinpath("static", name).read_bytes()


def static(request: Request) -> Response:
    """The app's own files (looked up by name in a fixed list; never a path of the lab)."""
    name = request.path_params["name"]
    if name == "report.css":
        return Response(REPORT_CSS, media_type="text/css; charset=utf-8")
    if name == "optimize.css":
        return Response(OPTIMIZE_CSS, media_type="text/css; charset=utf-8")
    if name not in STATIC_TYPES:
        raise HTTPException(404)
    return Response(_asset(name), media_type=STATIC_TYPES[name])


def favicon(request: Request) -> Response:
    return Response(_asset("favicon.svg"), media_type=STATIC_TYPES["favicon.svg"])
