"""Trials as data: `query_results(lab, **filters)` gives a `ResultSet` — the trials that match,
their activation rate and correct rate (docs/results.md, "Glossary"), aggregates and
exports. `ix results`, `ix export` and `ix.Lab` go through here.

Each method reads the lab's index as it is when called (refreshed first if a trials.jsonl
changed), so an object never answers from stale files. Bad input — an unknown run or
experiment, a malformed date, SQL that does not parse or bind or would write — raises
`ConfigError`; checks that need no data run before the index is touched.
"""

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ix.api.query import EXPORT_FORMATS, QueryResult, Table, run_query
from ix.api.runs import RunEntry, lab_run
from ix.api.timespec import Moment, parse_moment
from ix.domain.errors import ConfigError, Warn
from ix.fs.resolve import find_lab
from ix.query.aggregate import (
    Method,
    aggregate,
    by_subject,
    group_columns,
    preload_statistics,
)
from ix.query.case_table import DIFFICULTY_LEVELS
from ix.query.index import NO_SPEC, RunFacts, TrialIndex
from ix.query.sql_guard import sql_error
from ix.query.views import (
    COLUMN_NAMES,
    COLUMNS,
    TrialFilter,
    cursor,
    pending_imports,
    refreshed_index,
    shared_views,
)
from ix.store.layout import RunDir
from ix.store.lookup import ambiguous, matching_runs
from ix.store.summaries import summary_as_written

if TYPE_CHECKING:
    import duckdb

    from ix.api.schemas import AggregateRow

_ORDER = "started_at, experiment, run_id, subject, probe_id, trial, attempt"
_NUMERIC = {c for c, t, _ in COLUMNS if t in ("INTEGER", "BIGINT", "DOUBLE", "BOOLEAN")}


@dataclass(frozen=True)
class Rate:
    """A rate over trials with its credible interval, cases as clusters (statistics.md).

    `metric` names it: "activation_rate" (`passed` of `valid` trials; with "_must" or
    "_not", of the must_trigger or should_not_trigger cases alone) or "correct_rate"
    (`passed` of `valid` majority votes, one per run, subject and must_trigger or
    should_not_trigger case, were right)."""

    estimate: float | None
    lo: float | None
    hi: float | None
    passed: int
    valid: int
    errors: int
    level: float
    metric: str = "activation_rate"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def rates_of(row: Mapping[str, Any], level: float = 0.95) -> dict[str, Rate]:
    """An aggregate row's rates by name: activation_rate (pooled), activation_rate_must,
    activation_rate_not and correct_rate."""
    out = {}
    for name, hits, total in (("activation_rate", "passed", "valid"),
                              ("activation_rate_must", "passed_must", "valid_must"),
                              ("activation_rate_not", "passed_not", "valid_not"),
                              ("correct_rate", "correct", "votes")):
        out[name] = Rate(row[name], row[f"{name}_lo"], row[f"{name}_hi"], row[hits],
                         row[total], row["errors"], level, name)
    return out


class ResultSet(Table):
    """The trials that match some filters, one row per trial with the columns of `trials`."""

    #: Which runs were read (set by `query_results`; None for a set built by hand).
    scope: "Scope | None" = None

    def __init__(self, lab: Path, filters: TrialFilter, limit: int | None = None,
                 warn: Warn | None = None):
        self.filters = filters
        self.limit = limit
        order = f" ORDER BY {_ORDER}"
        tail = f"{order} LIMIT {int(limit)}" if limit is not None else order
        super().__init__(lab, f"SELECT * FROM {filters.view} WHERE {filters.where()}{tail}",
                         warn)

    def __repr__(self) -> str:
        return f"ResultSet({self.lab}, {self.filters}, limit={self.limit})"

    @property
    def _source(self) -> str:
        """The rows as a subquery, unordered when nothing is cut (aggregates need no order)."""
        if self.limit is None:
            return f"(SELECT * FROM {self.filters.view} WHERE {self.filters.where()})"
        return f"({self.sql})"

    def _export_select(self) -> str:
        """Text formats: started_at as ISO-8601 UTC, tags and invoked (in csv) as JSON
        arrays."""
        return (f"SELECT * REPLACE (strftime(started_at, '%Y-%m-%dT%H:%M:%S.%gZ') AS "
                f"started_at) FROM ({self.sql})")

    def export(self, format: str, path: str | Path) -> Path:
        if format == "csv":
            table = Table(self.lab, f"SELECT * REPLACE (to_json(tags)::VARCHAR AS tags, "
                                    f"to_json(invoked)::VARCHAR AS invoked) "
                                    f"FROM ({self._export_select()})", self._warn)
            table._held = self._held  # the same snapshot, inside `snapshot()`
            return table.export("csv", path)
        return super().export(format, path)

    def count(self) -> int:
        """The rows of this set (at most `limit`)."""
        return len(self)

    def total(self) -> int:
        """The trials that match the filters, whatever the limit."""
        return int(self._scalar(f"SELECT count(*) FROM {self.filters.view} "
                                f"WHERE {self.filters.where()}") or 0)

    def activation_rate(self, level: float = 0.95, scope: str | None = None) -> Rate:
        """Passed / valid trials (errored ones excluded): the share in which the skill under
        test was invoked, with its interval (cases as clusters); of the must_trigger cases
        (`scope="must"`, metric "activation_rate_must"), the should_not_trigger ones
        ("not"), or every case pooled (None)."""
        if scope not in (None, "must", "not"):
            raise ConfigError(f"unknown scope {scope!r}; allowed: must, not", field="scope")
        name = "activation_rate" if scope is None else f"activation_rate_{scope}"
        return rates_of(self.stats(level=level), level)[name]

    def correct_rate(self, level: float = 0.95) -> Rate:
        """The share of majority votes (one per run, subject and must_trigger or
        should_not_trigger case) that match the expectation, with its interval."""
        return rates_of(self.stats(level=level), level)["correct_rate"]

    def pass_rate(self, level: float = 0.95) -> Rate:
        """Deprecated alias of `activation_rate` (kept so older scripts run; "pass rate"
        no longer names anything in ix's output)."""
        return self.activation_rate(level)

    def mean(self, column: str) -> float | None:
        """The mean of a numeric column over the rows that have it (booleans count as 0/1)."""
        if column not in _NUMERIC:
            raise ConfigError(f"no numeric column {column!r}; numeric columns: "
                              f"{', '.join(c for c in COLUMN_NAMES if c in _NUMERIC)}",
                              field="column")
        value = self._scalar(f"SELECT avg({column}::DOUBLE) FROM {self._source}")
        return float(value) if value is not None else None

    def stats(self, *, level: float = 0.95,
              correlation: Method | None = None) -> "AggregateRow":
        """The aggregate of every row (see `group_by`)."""
        return self.group_by(level=level, correlation=correlation)[0]

    def group_by(self, *keys: str, level: float = 0.95,
                 correlation: Method | None = None) -> "list[AggregateRow]":
        """One aggregate per group of `keys` (experiment, run, subject, case, tag, difficulty,
        expectation, invoked, family): n, errors, valid, passed, cases, families (the clusters
        of the intervals), activation_rate, votes, correct,
        correct_rate (each rate with _lo/_hi), and mean, std,
        p50, p90, p99 of score, duration, tokens and cost; with `correlation` ("pearson" or
        "spearman"), score against the difficulty's ordinal too (docs/queries.md)."""
        group_columns(keys)
        preload_statistics()
        if not 0 < level < 1:
            raise ConfigError(f"must be between 0 and 1, got {level}", field="level")
        if correlation not in (None, "pearson", "spearman"):
            raise ConfigError(f"unknown method {correlation!r}; allowed: pearson, spearman",
                              field="correlation")
        import duckdb

        with self._connect() as con:
            try:
                rows = aggregate(con, self._source, keys, level=level, correlation=correlation)
                return cast("list[AggregateRow]", rows)  # the columns of ix.query.aggregate
            except duckdb.Error as exc:
                raise sql_error(exc) from None

    def goal_metrics(self) -> dict[str, list[str]]:
        """The goals of the runs these trials came from: each goal metric and the
        experiments whose goal it is (read from each run's summary; a run without one, or
        without a goal, adds nothing). What `ix results` leads with (DESIGN.md §8)."""
        pairs = self._connect_rows(f"SELECT DISTINCT experiment, run_id FROM {self._source} "
                                   "WHERE run_id IS NOT NULL ORDER BY experiment")
        found: dict[str, list[str]] = {}
        for experiment, run_id in pairs:
            try:
                path = RunDir(lab_run(self.lab, run_id).folder).summary
                goal = json.loads(path.read_text(encoding="utf-8")).get("goal")
            except (ConfigError, OSError, ValueError, AttributeError):
                continue
            metric = goal.get("metric") if isinstance(goal, dict) else None
            if isinstance(metric, str) and experiment not in found.get(metric, []):
                found.setdefault(metric, []).append(experiment)
        return found

    def _connect_rows(self, sql: str) -> list[tuple[Any, ...]]:
        with self._connect() as con:
            return list(self._execute(con, sql).fetchall())

    def correlation(self, method: Method = "pearson", level: float = 0.95) -> dict[str, Any]:
        """Score against difficulty (easy 1, medium 2, hard 3): r, lo, hi, n, method."""
        row = self.stats(level=level, correlation=method)
        return {"r": row["score_difficulty_r"], "lo": row["score_difficulty_lo"],
                "hi": row["score_difficulty_hi"], "n": row["score_difficulty_n"],
                "method": method, "level": level}


class Results:
    """`lab.results`: `query(**filters)` gives the matching trials as a `ResultSet`."""

    def __init__(self, lab: Path, warn: Warn | None = None):
        self.lab = lab
        self._warn = warn

    def query(self, **filters: Any) -> ResultSet:
        return query_results(self.lab, warn=self._warn, **filters)


Values = str | Sequence[str] | None


def query_results(lab: str | Path | None = None, *, experiment: Values = None,
                  subject: Values = None, case: Values = None, tag: Values = None,
                  difficulty: Values = None, run: Values = None, since: Moment | None = None,
                  until: Moment | None = None, passed: bool | None = None,
                  correct: bool | None = None, errors: bool | None = None,
                  all_attempts: bool = False, all_runs: bool = True, limit: int | None = None,
                  warn: Warn | None = None) -> ResultSet:
    """The trials of the lab that match every given filter (several values of one: any).

    `case` takes globs of case ids; `since`/`until` ISO dates or datetimes (UTC unless they
    say otherwise), durations back from now (`7d`, `12h`, `30m`) or datetime objects;
    `passed` True keeps trials whose reading passed (the activation sensor's: the skill was
    invoked), False those that ran and did not pass; `correct` True keeps trials whose outcome
    is right (the reading matches the case's expectation), False those whose outcome is wrong
    (acceptable cases have neither); `errors` True keeps errored trials, False drops them;
    `run` takes run ids or unique prefixes.
    Without `run`: `all_runs` False keeps the latest completed run of each experiment (what
    `ix results` shows by default), True every run; either way an imported copy of trials
    the lab already holds (an import whose origin run is in the lab, or was imported before)
    is left out, so no trial counts twice (`ResultSet.scope` says what was kept).
    """
    lab_path = find_lab(lab)
    difficulties = _many("--difficulty", difficulty)
    for d in difficulties:
        if d not in DIFFICULTY_LEVELS:
            raise ConfigError(f"unknown difficulty {d!r}; allowed: {', '.join(DIFFICULTY_LEVELS)}",
                              field="--difficulty")
    start = parse_moment(since, field="--since") if since is not None else None
    stop = parse_moment(until, field="--until", end=True) if until is not None else None
    if start is not None and stop is not None and start >= stop:
        raise ConfigError(f"--since ({start:%Y-%m-%d %H:%M:%S}) is not before --until "
                          f"({stop:%Y-%m-%d %H:%M:%S}), so no trial can match", field="--since")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ConfigError(f"must be a whole number >= 0, got {limit!r}", field="--limit")
    for name, flag in (("passed", passed), ("correct", correct), ("errors", errors),
                       ("all_attempts", all_attempts), ("all_runs", all_runs)):
        if flag is not None and not isinstance(flag, bool):
            raise ConfigError(f"must be True, False or None, got {flag!r}", field=name)
    filters = TrialFilter(
        subjects=_many("--subject", subject), cases=_many("--case", case),
        tags=_many("--tag", tag), difficulties=difficulties, since=start, until=stop,
        passed=passed, correct=correct, errors=errors, all_attempts=all_attempts)
    experiments, runs = _many("--experiment", experiment), _many("--run", run)
    index = refreshed_index(lab_path, warn)
    views = shared_views(index)
    with cursor(views) as con:
        filters = replace(filters, experiments=_experiments(con, lab_path, experiments),
                          runs=_runs(con, lab_path, runs))
    scope = Scope("runs", (), ()) if runs else _scope(index, latest=not all_runs)
    filters = replace(filters, scope=scope.runs if scope.kind == "latest" else None,
                      exclude_runs=scope.copies)
    found = ResultSet(lab_path, filters, limit, warn)
    found.scope = scope
    return found


@dataclass(frozen=True)
class CaseTrials:
    """One case of one run, as the viewer's case page shows it (`case_trials`)."""

    #: per subject with a trial, of the case's trials that stand: n, errors, valid, passed,
    #: activation_rate with its _lo and _hi, duration_p50 and _p90, tokens_mean, cost_sum
    stats: list[dict[str, Any]]
    #: per subject and first skill invoked (`first_invoked`, None: none was): `valid` trials
    routes: list[dict[str, Any]]
    #: one page of the trials that pass the filters, by subject, trial and attempt
    rows: list[dict[str, Any]]
    #: how many trials pass the filters
    total: int


def case_trials(lab: str | Path | None, run: RunEntry, case: str, *, subject: str | None = None,
                correct: bool | None = None, errors: bool | None = None,
                all_attempts: bool = False, limit: int = 50, offset: int = 0,
                warn: Warn | None = None) -> CaseTrials:
    """The trials of exactly one case (an id, not a glob) of `run`, read from one snapshot of
    the index through one set of views: each subject's aggregate, the skills that took its
    valid trials, and the trials that match `subject`, `correct` and `errors` (as
    `query_results` takes them), `limit` of them from `offset`.

    Each subject's activation-rate interval is the run's summary's `score_ci` when the
    summary counts the same trials under the same rule (the trials that stand, a uniform
    prior, a 95% level); only otherwise is it computed (`beta_interval`: numpy and scipy
    load). Nothing of the case: empty lists and 0."""
    import duckdb

    lab_path = find_lab(lab)
    case_only = TrialFilter(runs=(run.run_id,), cases=(_exact_glob(case),))
    shown = replace(case_only, subjects=(subject,) if subject is not None else (),
                    correct=correct, errors=errors, all_attempts=all_attempts)
    source = f"(SELECT * FROM {case_only.view} WHERE {case_only.where()})"
    views = shared_views(refreshed_index(lab_path, warn))
    with cursor(views) as con:
        try:
            stats, routes = by_subject(con, source)
            if not _summary_intervals(stats, run, case):
                computed = {r["subject"]: r for r in aggregate(con, source, ["subject"])}
                for row in stats:
                    for end in ("activation_rate_lo", "activation_rate_hi"):
                        row[end] = computed[row["subject"]][end]
            found = con.execute(f"SELECT * FROM {shown.view} WHERE {shown.where()} "
                                f"ORDER BY subject, trial, attempt "
                                f"LIMIT {int(limit)} OFFSET {int(offset)}")
            names = [d[0] for d in found.description or ()]
            rows = [dict(zip(names, values, strict=True)) for values in found.fetchall()]
            (total,), = con.execute(f"SELECT count(*) FROM {shown.view} "
                                    f"WHERE {shown.where()}").fetchall()
        except duckdb.Error as exc:
            raise sql_error(exc) from None
    return CaseTrials(stats, routes, rows, int(total))


def _summary_intervals(stats: list[dict[str, Any]], run: RunEntry, case: str) -> bool:
    """Each row's (one subject's trials of `case`) activation-rate interval from the run's
    summary, where its `score_ci` is the interval `aggregate` would compute: the same passed
    and valid counts, a uniform prior and a 95% level (a case is one cluster, so its interval
    is `beta_interval` of these counts). False, with the rows unchanged, unless every row
    with a valid trial got one. The summary is read as JSON and only these values are taken,
    each checked (its full check, `read_summary`, costs more than the page on first use)."""
    try:
        summary = summary_as_written(RunDir(run.folder).summary)
    except ConfigError:
        return False
    statistics = summary.get("statistics")
    if not isinstance(statistics, dict) or statistics.get("level") != 0.95 \
            or statistics.get("prior") != "uniform":
        return False
    found: dict[str, tuple[int, int, float, float]] = {}  # subject: passed, valid, lo, hi
    for block in _dicts(summary.get("subjects")):
        probe = next((p for p in _dicts(block.get("probe_results"))
                      if p.get("probe_id") == case), None)
        if probe is None or not isinstance(block.get("name"), str):
            continue
        passed, valid, interval = probe.get("passed"), probe.get("n"), probe.get("score_ci")
        if type(passed) is int and type(valid) is int and isinstance(interval, list) \
                and len(interval) == 2 and all(type(x) in (int, float) for x in interval):
            found[block["name"]] = (passed, valid, float(interval[0]), float(interval[1]))
    known = [found.get(row["subject"]) for row in stats]
    if any(row["valid"] and (k is None or k[:2] != (row["passed"], row["valid"]))
           for row, k in zip(stats, known, strict=True)):
        return False
    for row, k in zip(stats, known, strict=True):
        if row["valid"] and k is not None:
            row["activation_rate_lo"], row["activation_rate_hi"] = k[2], k[3]
    return True


def _dicts(value: Any) -> list[dict[str, Any]]:
    """The dicts of a JSON list (none if it is not one)."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _exact_glob(value: str) -> str:
    """A glob (as `case` filters take) that matches exactly `value`."""
    return re.sub(r"([*?\[\\])", r"\\\1", value)


@dataclass(frozen=True)
class Scope:
    """Which runs a `ResultSet` reads: `kind` "latest" (the latest completed run of each
    experiment: `runs`), "all" (every run) or "runs" (those `--run` named); `copies` are the
    imported runs left out because their trials are in the lab already."""

    kind: str
    runs: tuple[str, ...]
    copies: tuple[str, ...]

    def describe(self) -> str:
        """One line for a reader: what was pooled, and how to widen it."""
        if self.kind == "runs":
            return "scope: the runs named by --run"
        if self.kind == "all":
            text = "scope: every run of every experiment (--all-runs)"
        else:
            n = len(self.runs)
            text = (f"scope: the latest completed run of each experiment ({n} run"
                    f"{'' if n == 1 else 's'}: {', '.join(self.runs) or 'none'}); "
                    "--all-runs pools every run")
        if self.copies:
            text += (f"; left out {len(self.copies)} imported cop"
                     f"{'y' if len(self.copies) == 1 else 'ies'} of trials already counted: "
                     f"{', '.join(self.copies)}")
        return text


def _scope(index: TrialIndex, *, latest: bool) -> Scope:
    """The runs in scope and the imported copies to leave out, from what each run's spec.yaml
    says (`TrialIndex`'s `RunFacts`, read again only when a spec changed).

    A run counts as completed when its spec says so, or when it has no spec (trials written
    before run folders existed). Imports are judged oldest first: one whose origin run is a
    run of the lab, or the origin of an import kept before, is a copy."""
    waiting = set(pending_imports(index))  # not in the views yet: not in any scope
    facts: dict[str, tuple[str, RunFacts]] = {}
    for run_id, source, held in sorted((run_id, s.name, s.specs.get(run_id))
                                       for s in index.sources for run_id in s.runs
                                       if (s.name, run_id) not in waiting):
        facts[run_id] = (source, held or NO_SPEC)
    made = {r for r, (_, f) in facts.items() if not f["origins"]}
    seen, copies = set(made), []
    for run_id, (_, f) in facts.items():
        origins = set(f["origins"])
        if not origins:
            continue
        if origins & seen:
            copies.append(run_id)
        else:
            seen |= origins
    if not latest:
        return Scope("all", (), tuple(copies))
    newest: dict[str, str] = {}
    for run_id, (source, f) in facts.items():  # oldest first: the last one wins
        if run_id not in copies and f["status"] == "completed":
            newest[source] = run_id
    return Scope("latest", tuple(sorted(newest.values())), tuple(copies))


def _many(field: str, value: Values) -> tuple[str, ...]:
    if value is None:
        return ()
    items = (value,) if isinstance(value, str) else tuple(value)
    for item in items:
        if not isinstance(item, str) or not item:
            raise ConfigError(f"must be a non-empty string (or a list of them), got {item!r}",
                              field=field)
    return items


def _experiments(con: "duckdb.DuckDBPyConnection", lab: Path,
                 given: tuple[str, ...]) -> tuple[str, ...]:
    """Experiment names (or folder names) as the trials record them; unknown ones refused."""
    if not given:
        return ()
    pairs = con.sql("SELECT DISTINCT source, experiment FROM _rows").fetchall()
    names: list[str] = []
    for value in given:
        hits = [name for source, name in pairs if value in (source, name)]
        if not hits:
            known = sorted({name for _, name in pairs})
            raise ConfigError(f"no trials of an experiment {value!r} in lab {lab} "
                              f"(experiments with trials: {', '.join(known) or 'none'})",
                              field="--experiment")
        names += [h for h in hits if h not in names]
    return tuple(names)


def _runs(con: "duckdb.DuckDBPyConnection", lab: Path, given: tuple[str, ...]) -> tuple[str, ...]:
    """Run ids, each given exactly or as a unique prefix or suffix; unknown or ambiguous ones
    refused (the ambiguous with every candidate)."""
    if not given:
        return ()
    known = [r for (r,) in con.sql("SELECT DISTINCT run_id FROM _rows WHERE run_id IS NOT NULL "
                                   "ORDER BY run_id").fetchall()]
    chosen: list[str] = []
    for value in given:
        hits = matching_runs(known, value)
        if not hits:
            latest = ", ".join(known[-3:]) or "none"
            raise ConfigError(f"no run {value!r} in the trials of lab {lab} (latest runs: "
                              f"{latest})", field="--run")
        if len(hits) > 1:
            raise ambiguous(value, hits, "--run")
        chosen += [h for h in hits if h not in chosen]
    return tuple(chosen)


__all__ = ["EXPORT_FORMATS", "CaseTrials", "Method", "QueryResult", "Rate", "ResultSet", "Results",
           "Scope", "Table", "case_trials", "query_results", "rates_of", "run_query"]
