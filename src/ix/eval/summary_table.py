"""A run's summary as one flat table: `summary.csv` beside `summary.json` (docs/results.md,
"summary.csv"), and the headline figures an MLflow export logs (`ix.interchange.mlflow`).

One row per subject and metric, "long": `run_id, experiment, subject, metric, value,
ci_low, ci_high, n`. A spreadsheet pivots it (subjects as columns, or metrics), filters it,
and stacks the tables of many runs, which stay one shape whatever the experiment measured:
an activation run's precision and pass@k, an outcome run's tokens and cost, a load run's
percentiles and error rate. Every estimate that has an interval carries it on its own row;
an undefined value (`null` in the summary) is an empty cell, never 0. A load run's rows are
a service's (throughput, error rate, latency, SLA), without a classifier's precision or
recall.
"""

import csv
import io
from collections.abc import Iterator, Mapping
from dataclasses import astuple, dataclass
from typing import Any

COLUMNS = ("run_id", "experiment", "subject", "metric", "value", "ci_low", "ci_high", "n")

#: the counts of the confusion matrix: no interval, and not estimates
_COUNTS = ("tp", "fp", "fn", "tn")


@dataclass(frozen=True)
class MetricRow:
    """One figure of one subject: `value` with its interval (`ci_low`, `ci_high`: None when
    it has none) and `n`, what it was computed from (trials, cases or requests), if known."""

    subject: str
    metric: str
    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    n: int | None = None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def _row(subject: str, metric: str, value: Any, ci: Any = None, n: Any = None) -> MetricRow:
    low = high = None
    if isinstance(ci, list | tuple) and len(ci) == 2:
        low, high = _number(ci[0]), _number(ci[1])
    count = n if isinstance(n, int) and not isinstance(n, bool) else None
    return MetricRow(subject, metric, _number(value), low, high, count)


def _block_rows(name: str, block: Mapping[str, Any], *, service: bool) -> Iterator[MetricRow]:
    """`service`: a load run, judged by its SLA (`load_rows`), not as a classifier: no
    precision, recall, F1, specificity or confusion counts."""
    metrics = {} if service else block.get("metrics") or {}
    for key, value in metrics.items():
        if key.endswith("_ci") or key in _COUNTS or isinstance(value, dict | list):
            continue
        yield _row(name, key, value, metrics.get(f"{key}_ci"))
    for key in _COUNTS:
        if key in metrics:
            yield _row(name, key, metrics[key])
    for scope, rate in (block.get("trial_level") or {}).items():
        if isinstance(rate, dict):
            yield _row(name, f"trial_rate.{scope}", rate.get("rate"), rate.get("ci"),
                       rate.get("n_trials"))
    for kind, mark in (("pass_at_k", "@"), ("pass_hat_k", "^")):
        intervals = block.get(f"{kind}_ci") or {}
        for k, value in (block.get(kind) or {}).items():
            yield _row(name, f"pass{mark}{k}", value, intervals.get(k))
    yield _row(name, "errors", block.get("errors"))
    yield _row(name, "trials", block.get("trials"))
    for key, value in (block.get("usage") or {}).items():
        yield _row(name, key, value)


def _outcome_rows(outcomes: Mapping[str, Any], subject: str) -> Iterator[MetricRow]:
    for metric, estimate in ((outcomes.get("by_subject") or {}).get(subject) or {}).items():
        if isinstance(estimate, dict):
            yield _row(subject, f"mean.{metric}", estimate.get("value"), estimate.get("ci"),
                       estimate.get("n_cases"))


def load_rows(load: Mapping[str, Any]) -> Iterator[MetricRow]:
    """A load run's figures per subject (the summary's `load` block): throughput, error rate
    and latency percentiles with their intervals, and each objective's rate."""
    for s in load.get("subjects") or []:
        name = str(s.get("subject"))
        requests = s.get("requests") or {}
        finished = (requests.get("completed") or 0) + (requests.get("errored") or 0)
        yield _row(name, "offered_rps", s.get("offered_rps"))
        yield _row(name, "achieved_rps", s.get("achieved_rps"), n=requests.get("completed"))
        yield _row(name, "error_rate", s.get("error_rate"), s.get("error_rate_ci"), finished)
        latency = s.get("latency_ms") or {}
        for p in ("p50", "p95", "p99"):
            q = latency.get(p) or {}
            yield _row(name, f"latency_{p}_ms", q.get("value"), q.get("ci"), latency.get("n"))
        for sla in s.get("sla") or []:
            yield _row(name, f"sla[{sla.get('objective')}]", sla.get("rate"),
                       sla.get("rate_ci"), sla.get("n"))


def summary_rows(summary: Mapping[str, Any]) -> list[MetricRow]:
    """Every subject's figures, in the summary's order of subjects (the control first)."""
    blocks = summary.get("subjects") or []
    rows: list[MetricRow] = []
    outcomes = summary.get("outcomes") or {}
    for block in blocks:
        name = str(block.get("name"))
        rows.extend(_block_rows(name, block, service=bool(summary.get("load"))))
        rows.extend(_outcome_rows(outcomes, name))
    if summary.get("load"):
        rows.extend(load_rows(summary["load"]))
    return rows


def _cell(value: float | int | str | None) -> str | float | int:
    return "" if value is None else value


def summary_csv(summary: Mapping[str, Any]) -> str:
    """`summary.csv`: the header `COLUMNS`, then `summary_rows`; numbers as JSON writes them."""
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(COLUMNS)
    run_id, experiment = summary.get("run_id") or "", summary.get("experiment_name") or ""
    for row in summary_rows(summary):
        writer.writerow([run_id, experiment, *(_cell(v) for v in astuple(row))])
    return text.getvalue()


__all__ = ["COLUMNS", "MetricRow", "load_rows", "summary_csv", "summary_rows"]
