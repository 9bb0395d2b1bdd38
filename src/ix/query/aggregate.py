"""Aggregates of trials, per group: counts, the activation rate and the correct rate with
their intervals, and descriptions of score, duration, tokens and cost — computed by DuckDB,
with intervals from `ix.stats`.

The words are those of docs/results.md, "Glossary", and errored trials are excluded, as in
a summary. The **activation rate** is the share of valid trials whose (first) sensor
passed — with the activation sensor, in which the skill under test was invoked — of the
must_trigger cases (`activation_rate_must`, "activation rate (must)"), of the
should_not_trigger ones (`activation_rate_not`, "(not)"), or of every case (`activation_rate`,
pooled: a mix of two different things wherever both kinds are in the group). The
**correct rate** is the share of majority votes that match the expectation: one vote per
must_trigger or should_not_trigger case of each run and subject with a valid trial
(activated when more than half its valid trials passed), as a summary counts them.
Trials (and votes) of one case are not independent draws, so each interval treats the case
(experiment, case id) as a cluster: a group of one case gets the Beta credible interval of
its counts (`beta_interval`), a group of several the credible interval of the population
rate under the hierarchical beta-binomial model with cases as clusters
(`hierarchical_interval`, statistics.md), wider than pooling the trials would give. Cases
generated from one original (`variants:`, `probe: paraphrase`) are one cluster: the unit is
the family (experiment, `family`), which is the case itself for every other case.
Means, standard deviations (ddof 1) and percentiles (linear interpolation, as numpy's
default) are over the trials that have the value; a trial with several tags counts once in
each of its tags' groups.
"""

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from ix._lazy import Loading, preload
from ix.domain.errors import ConfigError
from ix.stats.clustered import hierarchical_interval
from ix.stats.describe import correlation
from ix.stats.intervals import beta_interval

if TYPE_CHECKING:
    import duckdb

#: `--group-by` names and the column each groups by.
GROUPS: dict[str, str] = {
    "experiment": "experiment", "run": "run_id", "subject": "subject", "case": "probe_id",
    "tag": "tag", "difficulty": "difficulty", "expectation": "expectation",
    "invoked": "first_invoked",  # the skill that took the prompt; null: none was invoked
    "family": "family",  # the original the case was generated from, else the case
}
METRICS = ("score", "duration", "tokens", "cost")
STATS = ("mean", "std", "p50", "p90", "p99")
Method = Literal["pearson", "spearman"]


def preload_statistics() -> Loading:
    """Import the intervals (scipy: ~0.3 s) in the background: started before the query, it
    overlaps with DuckDB's work, which releases the GIL. Join it before using them."""
    return preload("numpy", "scipy.special", "ix.stats.intervals", "ix.stats.clustered")


def group_columns(by: Sequence[str]) -> list[str]:
    """The columns of `--group-by` names, in order, each once; `ConfigError` on an unknown one."""
    columns: list[str] = []
    for name in by:
        if name not in GROUPS:
            raise ConfigError(f"cannot group by {name!r}; allowed: {', '.join(GROUPS)}",
                              field="--group-by")
        if GROUPS[name] not in columns:
            columns.append(GROUPS[name])
    return columns


def aggregate(con: "duckdb.DuckDBPyConnection", source: str, by: Sequence[str] = (), *,
              level: float = 0.95, correlation: Method | None = None) -> list[dict[str, Any]]:
    """One row per group of `source` (a table or a parenthesised SELECT over trial columns).

    `by` are `GROUPS` names; none gives a single row over everything. With `correlation`,
    each row also has the correlation of score with the difficulty's ordinal
    (easy 1, medium 2, hard 3) over the valid trials of cases that have a difficulty.
    """
    keys = group_columns(by)
    rows_sql = _with_tags(source, keys)
    select_keys = "".join(f"{k}, " for k in keys)
    metrics = []
    for m in METRICS:
        metrics += [f"avg({m}) AS {m}_mean", f"stddev_samp({m}) AS {m}_std",
                    f"quantile_cont({m}, [0.5, 0.9, 0.99]) AS {m}_q"]
    group = f"GROUP BY {', '.join(keys)} ORDER BY {', '.join(f'{k} NULLS LAST' for k in keys)}" \
        if keys else ""
    loader = preload_statistics()
    result = con.sql(f"""
        SELECT {select_keys} count(*) AS n, count(error) AS errors, count(passed) AS valid,
               count(*) FILTER (WHERE passed) AS passed,
               count(DISTINCT (experiment, probe_id)) AS cases,
               count(DISTINCT (experiment, family)) AS families, {', '.join(metrics)},
               sum(tokens) AS tokens_sum, sum(cost) AS cost_sum
        FROM {rows_sql} {group}
    """)
    names = result.columns
    records = [dict(zip(names, r, strict=True)) for r in result.fetchall()]
    loader.join()
    out = [_row(r, keys) for r in records]
    _intervals(out, _per_case(con, rows_sql, keys), keys, level)
    if correlation is not None:
        found = _correlations(con, rows_sql, keys, level, correlation)
        for row in out:
            r = found.get(tuple(row[k] for k in keys))
            row.update({"score_difficulty_r": _num(r.r) if r else None,
                        "score_difficulty_lo": _num(r.lo) if r else None,
                        "score_difficulty_hi": _num(r.hi) if r else None,
                        "score_difficulty_n": r.n if r else 0,
                        "score_difficulty_method": correlation})
    return out


def by_subject(con: "duckdb.DuckDBPyConnection", source: str
               ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Of `source`'s trials, per subject: n, errors, valid, passed, activation_rate (its
    `_lo`/`_hi` None: no interval is computed), duration_p50 and _p90, tokens_mean and
    cost_sum, as `aggregate` computes them; and per subject and first skill invoked
    (`first_invoked`) the valid trials. One query, nothing but DuckDB: what a case page
    shows of its trials."""
    found = con.execute(f"""
        SELECT subject, first_invoked, grouping(first_invoked) AS per_subject, count(*) AS n,
               count(error) AS errors, count(passed) AS valid,
               count(*) FILTER (WHERE passed) AS passed,
               quantile_cont(duration, [0.5, 0.9]) AS duration_q, avg(tokens) AS tokens_mean,
               sum(cost) AS cost_sum
        FROM {source} AS t GROUP BY GROUPING SETS ((subject), (subject, first_invoked))
        ORDER BY subject NULLS LAST, first_invoked NULLS LAST""")
    names = [d[0] for d in found.description or ()]
    stats, routes = [], []
    for r in (dict(zip(names, values, strict=True)) for values in found.fetchall()):
        valid, passed = int(r["valid"]), int(r["passed"])
        if not r["per_subject"]:
            routes.append({"subject": r["subject"], "first_invoked": r["first_invoked"],
                           "valid": valid})
            continue
        q = r["duration_q"] or [None, None]
        stats.append({"subject": r["subject"], "n": int(r["n"]), "errors": int(r["errors"]),
                      "valid": valid, "passed": passed,
                      "activation_rate": passed / valid if valid else None,
                      "activation_rate_lo": None, "activation_rate_hi": None,
                      "duration_p50": _num(q[0]), "duration_p90": _num(q[1]),
                      "tokens_mean": _num(r["tokens_mean"]), "cost_sum": _num(r["cost_sum"])})
    return stats, routes


def _with_tags(source: str, keys: list[str]) -> str:
    """`source`, with one row per tag of each trial (a trial without tags: tag null)."""
    if "tag" not in keys:
        return f"{source} AS t"
    return (f"(SELECT *, unnest(CASE WHEN len(tags) = 0 THEN [NULL::VARCHAR] ELSE tags END) "
            f"AS tag FROM {source}) AS t")


def _row(r: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    valid, passed = int(r["valid"]), int(r["passed"])
    row: dict[str, Any] = {k: r[k] for k in keys}
    row.update({"n": int(r["n"]), "errors": int(r["errors"]), "valid": valid,
                "passed": passed, "cases": int(r["cases"]), "families": int(r["families"]),
                "activation_rate": passed / valid if valid else None,
                "activation_rate_lo": None, "activation_rate_hi": None,
                **{k.format(scope): v for scope in ("must", "not") for k, v in (
                    ("valid_{}", 0), ("passed_{}", 0), ("activation_rate_{}", None),
                    ("activation_rate_{}_lo", None), ("activation_rate_{}_hi", None))},
                "votes": 0, "correct": 0, "correct_rate": None,
                "correct_rate_lo": None, "correct_rate_hi": None})
    for m in METRICS:
        q = r[f"{m}_q"] or [None, None, None]
        row.update({f"{m}_mean": _num(r[f"{m}_mean"]), f"{m}_std": _num(r[f"{m}_std"]),
                    f"{m}_p50": _num(q[0]), f"{m}_p90": _num(q[1]), f"{m}_p99": _num(q[2])})
    row["tokens_sum"] = int(r["tokens_sum"]) if r["tokens_sum"] is not None else None
    row["cost_sum"] = _num(r["cost_sum"])
    return row


#: Per case of a group: valid trials, passed, majority votes, votes that were right, then
#: valid and passed trials of must_trigger cases, then of should_not_trigger cases.
_CaseCounts = dict[tuple[Any, ...], list[tuple[int, ...]]]
#: The rates with an interval: (name, column of the totals, column of the hits).
_RATES = (("activation_rate", 0, 1), ("correct_rate", 2, 3),
          ("activation_rate_must", 4, 5), ("activation_rate_not", 6, 7))

_RIGHT = ("(expectation = 'must_trigger' AND 2 * passed > valid) OR "
          "(expectation = 'should_not_trigger' AND 2 * passed <= valid)")


def _per_case(con: "duckdb.DuckDBPyConnection", rows_sql: str, keys: list[str]) -> _CaseCounts:
    """Each group's counts per family (experiment, family: the case itself unless it was
    generated from an original): the clusters of its intervals. A vote is a (run, subject,
    case) with a valid trial and an expectation to meet."""
    cell = list(dict.fromkeys([*keys, "experiment", "family", "probe_id", "run_id", "subject",
                               "expectation"]))
    outer = "".join(f"{k}, " for k in keys)
    found: _CaseCounts = {}
    for *key, valid, passed, votes, right, must_valid, must_passed, not_valid, not_passed \
            in con.sql(f"""
            SELECT {outer} sum(valid), sum(passed),
                   count(*) FILTER (WHERE valid > 0 AND expectation IN
                                    ('must_trigger', 'should_not_trigger')),
                   count(*) FILTER (WHERE valid > 0 AND ({_RIGHT})),
                   coalesce(sum(valid) FILTER (WHERE expectation = 'must_trigger'), 0),
                   coalesce(sum(passed) FILTER (WHERE expectation = 'must_trigger'), 0),
                   coalesce(sum(valid) FILTER (WHERE expectation = 'should_not_trigger'), 0),
                   coalesce(sum(passed) FILTER (WHERE expectation = 'should_not_trigger'), 0)
            FROM (SELECT {', '.join(cell)}, count(passed) AS valid,
                         count(*) FILTER (WHERE passed) AS passed
                  FROM {rows_sql} GROUP BY {', '.join(cell)})
            GROUP BY {outer} experiment, family""").fetchall():
        found.setdefault(tuple(key), []).append(tuple(int(x) for x in (
            valid, passed, votes, right, must_valid, must_passed, not_valid, not_passed)))
    return found


def _intervals(rows: list[dict[str, Any]], per_case: _CaseCounts, keys: list[str],
               level: float) -> None:
    """Each row's correct rate and activation rates of its must and not cases, and each
    rate's interval, cases as clusters (none where nothing counts)."""
    import numpy as np

    for row in rows:
        counts = np.array(per_case.get(tuple(row[k] for k in keys), []), dtype=float)
        if counts.size:
            row["votes"], row["correct"] = int(counts[:, 2].sum()), int(counts[:, 3].sum())
            if row["votes"]:
                row["correct_rate"] = row["correct"] / row["votes"]
            for scope, total, hits in (("must", 4, 5), ("not", 6, 7)):
                valid, passed = int(counts[:, total].sum()), int(counts[:, hits].sum())
                row[f"valid_{scope}"], row[f"passed_{scope}"] = valid, passed
                if valid:
                    row[f"activation_rate_{scope}"] = passed / valid
        for name, total, hits in _RATES:
            if not counts.size or row[name] is None:
                continue
            n, k = counts[:, total], counts[:, hits]
            k, n = k[n > 0], n[n > 0]
            lo: float
            hi: float
            if len(n) == 1:  # one case: its draws are exchangeable, of its own rate
                los, his = beta_interval(k, n, level)
                lo, hi = float(los[0]), float(his[0])
            else:
                lo, hi = hierarchical_interval(k, n, level=level, estimate=row[name])
            row[f"{name}_lo"], row[f"{name}_hi"] = _num(lo), _num(hi)


def _correlations(con: "duckdb.DuckDBPyConnection", rows_sql: str, keys: list[str],
                  level: float, method: Method) -> dict[tuple[Any, ...], Any]:
    import numpy as np

    group = f"GROUP BY {', '.join(keys)}" if keys else ""
    found = {}
    for *key, scores, levels in con.sql(
            f"SELECT {''.join(f'{k}, ' for k in keys)} list(score), "
            f"list(difficulty_level::DOUBLE) FROM {rows_sql} WHERE score IS NOT NULL "
            f"AND difficulty_level IS NOT NULL AND error IS NULL {group}").fetchall():
        found[tuple(key)] = correlation(np.asarray(scores, float), np.asarray(levels, float),
                                        level, method)
    return found


def _num(value: Any) -> float | None:
    """A float for JSON: None for null and NaN (JSON has no NaN)."""
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) or math.isinf(value) else value
