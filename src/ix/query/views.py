"""SQL over the lab's trials (DuckDB, in memory): the views `trials`, `trials_all`, `cases`.

`trials` holds one row per trial — the latest attempt of each (run, subject, case, trial), as
aggregation counts it (DESIGN.md §3); `trials_all` adds the attempts that a retry or resume
superseded. Both read the Parquet index of `ix.query.index` joined with the case files' tags,
difficulty and family (`ix.query.case_table`), less the lines of an import whose run folder
is not in place yet (it appears all at once). Nothing here writes to the lab except that
index; user SQL is refused unless it is a single read-only statement, and every connection is
locked once its views are defined: it opens no file but the index files they read
(`ix.query.sql_guard`, docs/queries.md).
"""

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ix.domain.errors import Warn
from ix.fs.storage_faults import storage_faults
from ix.query.index import TrialIndex, open_index
from ix.query.index_parts import ROW_COLUMNS
from ix.query.sql_guard import CONFIG, VIEWS, check_read_only, lock, sql_error
from ix.store.staging import pending_runs

if TYPE_CHECKING:
    from pathlib import Path

    import duckdb

#: The columns of `trials` and `trials_all`, in order, with their types and meaning.
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("experiment", "VARCHAR", "the experiment's name"),
    ("run_id", "VARCHAR", "the run that recorded the trial"),
    ("subject", "VARCHAR", "the subject's name"),
    ("probe_id", "VARCHAR", "the case id"),
    ("trial", "INTEGER", "trial index, 0-based"),
    ("seed", "BIGINT", "the derived trial seed"),
    ("attempt", "INTEGER", "0 for the first attempt; retries count up"),
    ("expectation", "VARCHAR", "must_trigger, should_not_trigger or acceptable"),
    ("passed", "BOOLEAN", "the (first) sensor passed; null when the trial errored"),
    ("score", "DOUBLE", "the (first) sensor's score; null when the trial errored"),
    ("correct", "BOOLEAN", "passed matched the expectation (null for acceptable cases)"),
    ("outcome", "VARCHAR", "right or wrong: `correct` in words (null where it is null)"),
    ("sensor", "VARCHAR", "the (first) sensor's name"),
    ("error", "VARCHAR", "the error kind (timeout, runtime_error, ...), null if none"),
    ("error_message", "VARCHAR", "the error's message"),
    ("tokens_input", "BIGINT", "input tokens of the observation"),
    ("tokens_output", "BIGINT", "output tokens of the observation"),
    ("tokens", "BIGINT", "tokens_input + tokens_output"),
    ("cost", "DOUBLE", "cost of the observation in USD"),
    ("duration", "DOUBLE", "wall-clock duration of the trial in milliseconds"),
    ("started_at", "TIMESTAMP", "when the trial started (UTC)"),
    ("invoked", "VARCHAR[]", "the skills the trial invoked (Skill calls), each once, in order"),
    ("first_invoked", "VARCHAR", "the first skill invoked: the one that took the prompt; "
     "null when none was"),
    ("tags", "VARCHAR[]", "the case's tags (from its file; [] when none)"),
    ("difficulty", "VARCHAR", "the case's difficulty: easy, medium, hard or null"),
    ("difficulty_level", "INTEGER", "the difficulty as an ordinal: easy 1, medium 2, hard 3"),
    ("variant_of", "VARCHAR", "the case file a `variants:` case was expanded from; null "
     "for others"),
    ("paraphrase_of", "VARCHAR", "the case a `probe: paraphrase` case rewords; null for "
     "others"),
    ("family", "VARCHAR", "the original the case was generated from, at the root (a "
     "paraphrase of a variant: the variants' file), else its own id: one unit of the "
     "statistics (GROUP BY family counts each original once)"),
)
COLUMN_NAMES = tuple(c for c, _, _ in COLUMNS)

_CASE_COLUMNS = ("{source: 'VARCHAR', probe_id: 'VARCHAR', expectation: 'VARCHAR', "
                 "tags: 'VARCHAR[]', difficulty: 'VARCHAR', difficulty_level: 'INTEGER', "
                 "variant_of: 'VARCHAR', paraphrase_of: 'VARCHAR', family: 'VARCHAR'}")
_CASES_DDL = ("source VARCHAR, probe_id VARCHAR, expectation VARCHAR, tags VARCHAR[], "
              "difficulty VARCHAR, difficulty_level INTEGER, variant_of VARCHAR, "
              "paraphrase_of VARCHAR, family VARCHAR")


def connect(lab: "Path", warn: Warn | None = None, *,
            writable: Sequence[str] = ()) -> "duckdb.DuckDBPyConnection":
    """An in-memory DuckDB connection with the views over the lab's (refreshed) index,
    locked: it opens no file but the index's and the `writable` ones (see `connect_index`).

    An index that cannot be brought up to date (a full disk) is a `StorageError`."""
    return connect_index(refreshed_index(lab, warn), writable=writable)


def refreshed_index(lab: "Path", warn: Warn | None = None) -> TrialIndex:
    """The lab's index brought up to date, its skipped lines reported to `warn`: one snapshot
    that any number of connections (`connect_index`) read alike."""
    with storage_faults("the lab's query index could not be brought up to date"):
        index = open_index(lab, warn)
    if warn is not None:
        for c in index.copies():
            runs = f"run {c.runs[0]}" if len(c.runs) == 1 else f"{len(c.runs)} runs " \
                f"({c.runs[0]}, ...)"
            warn(f"{c.source.trials_file}: {runs} also recorded in {c.kept}/ (a copied "
                 f"folder): each trial is counted once, as {c.kept}'s")
        for s in index.sources:
            if s.skipped:
                warn(f"{s.trials_file}: skipped {s.skipped} torn or corrupt line(s)")
            if s.torn:
                warn(f"{s.trials_file}: skipped the torn last line (a run stopped mid-write, "
                     "or is writing it now)")
    return index


def connect_index(index: TrialIndex, *,
                  writable: Sequence[str] = ()) -> "duckdb.DuckDBPyConnection":
    """The views over one snapshot of the index. The connection is locked once they exist:
    it reads only the index files they name, writes only the files `writable` (an export's
    temporary file), reaches no network, loads no extension and changes no setting."""
    return _define(index, writable)


def schema_connection() -> "duckdb.DuckDBPyConnection":
    """The same views over no rows, locked: checks a query's SQL without reading or writing."""
    return _define(None)


#: How many sets of views `shared_views` keeps: those of the latest snapshots read (of any
#: lab) in this process.
SHARED = 4
_shared: list[tuple[tuple[TrialIndex, tuple[tuple[str, str], ...]],
                    "duckdb.DuckDBPyConnection"]] = []
_shared_lock = threading.Lock()
_defining = threading.Lock()


def shared_views(index: TrialIndex) -> "duckdb.DuckDBPyConnection":
    """The views over one snapshot of the index (`connect_index`, locked alike), defined once
    and kept for the next reader in this process: opening a DuckDB database and defining the
    views costs tens of milliseconds, a cursor (`cursor`) nothing. A snapshot is the index's
    files and the imports not in place yet: any change to either defines new views. Never
    close the connection: read through `cursor`, and hold the connection meanwhile."""
    key = (index, pending_imports(index))
    found = _kept(key)
    if found is not None:
        return found
    with _defining:  # a reader that comes meanwhile waits for these views, not makes its own
        found = _kept(key)
        if found is not None:
            return found
        con = _define(index, pending=key[1])
        with _shared_lock:
            kept = [(k, c) for k, c in _shared if k != key] + [(key, con)]
            _shared[:] = kept[-SHARED:]  # the others close once their last reader is done
    return con


def _kept(key: tuple[TrialIndex, tuple[tuple[str, str], ...]]
          ) -> "duckdb.DuckDBPyConnection | None":
    with _shared_lock:
        for i, (k, con) in enumerate(_shared):
            if k == key:
                _shared.append(_shared.pop(i))
                return con
    return None


@contextmanager
def cursor(views: "duckdb.DuckDBPyConnection") -> Iterator["duckdb.DuckDBPyConnection"]:
    """A cursor of `shared_views`' connection: the same views, locked alike; one per thread."""
    with _shared_lock:
        con = views.cursor()
    try:
        yield con
    finally:
        con.close()


def pending_imports(index: TrialIndex) -> tuple[tuple[str, str], ...]:
    """(source, run id) of each import whose lines may be in the log before its run folder."""
    return tuple(sorted((s.name, run_id) for s in index.sources
                        for run_id in pending_runs(s.trials_file.parent)))


def _define(index: TrialIndex | None, writable: Sequence[str] = (),
            pending: Sequence[tuple[str, str]] | None = None) -> "duckdb.DuckDBPyConnection":
    import duckdb

    con = duckdb.connect(config=dict(CONFIG))
    con.execute("SET GLOBAL TimeZone = 'UTC'")  # GLOBAL: every cursor's too
    parts = index.paths("parts") if index else []
    superseded = index.paths("superseded") if index else []
    cases = index.paths("cases") if index else []
    row_ddl = ", ".join(f"{c} {t}" for c, t in ROW_COLUMNS)
    if pending is None:
        pending = pending_imports(index) if index else ()
    if parts and pending:  # an import's lines before its run folder: not there yet
        con.execute("CREATE TABLE _pending (source VARCHAR, run_id VARCHAR)")
        con.executemany("INSERT INTO _pending VALUES (?, ?)", list(pending))
        con.execute(f"CREATE VIEW _rows AS SELECT * FROM read_parquet({_list(parts)}) r "
                    "ANTI JOIN _pending p ON r.source = p.source AND r.run_id = p.run_id")
    elif parts:
        con.execute(f"CREATE VIEW _rows AS SELECT * FROM read_parquet({_list(parts)})")
    else:
        con.execute(f"CREATE TABLE _rows ({row_ddl})")
    if cases:
        con.execute(f"CREATE TABLE _cases AS SELECT * FROM read_json({_list(cases)}, "
                    f"format = 'newline_delimited', columns = {_CASE_COLUMNS})")
    else:
        con.execute(f"CREATE TABLE _cases ({_CASES_DDL})")
    anti = ""
    if superseded:
        con.execute(f"CREATE VIEW _superseded AS SELECT * FROM read_parquet({_list(superseded)})")
        anti = ("ANTI JOIN _superseded s ON r.source = s.source AND r.part = s.part "
                "AND r.line = s.line")
    copied = [str(index.root / index.copied)] if index and index.copied and parts else []
    once = once_all = ""
    if copied:  # a copied folder's rows: each trial once (DESIGN.md §3, `ix.query.index`)
        con.execute(f"CREATE VIEW _copied AS SELECT * FROM read_parquet({_list(copied)})")
        once = ("ANTI JOIN _copied d ON r.source = d.source AND r.part = d.part "
                "AND r.line = d.line")
        once_all = ("ANTI JOIN (SELECT * FROM _copied WHERE same_attempt) d "
                    "ON r.source = d.source AND r.part = d.part AND r.line = d.line")
    select = _select()
    con.execute(f"CREATE VIEW trials_all AS {select} FROM _rows r {once_all} LEFT JOIN _cases c "
                "ON c.source = r.source AND c.probe_id = r.probe_id")
    con.execute(f"CREATE VIEW trials AS {select} FROM _rows r {anti} {once} LEFT JOIN _cases c "
                "ON c.source = r.source AND c.probe_id = r.probe_id")
    con.execute("CREATE VIEW cases AS SELECT source AS experiment_dir, probe_id, expectation, "
                "tags, difficulty, difficulty_level, variant_of, paraphrase_of, family "
                "FROM _cases")
    lock(con, readable=[*parts, *superseded, *copied], writable=writable)  # _cases is read already
    return con


def _select() -> str:
    exprs = {
        "correct": ("CASE r.expectation WHEN 'must_trigger' THEN r.passed "
                    "WHEN 'should_not_trigger' THEN NOT r.passed END"),
        "outcome": ("CASE r.expectation WHEN 'must_trigger' THEN "
                    "CASE WHEN r.passed THEN 'right' WHEN NOT r.passed THEN 'wrong' END "
                    "WHEN 'should_not_trigger' THEN "
                    "CASE WHEN r.passed THEN 'wrong' WHEN NOT r.passed THEN 'right' END END"),
        "tags": "coalesce(c.tags, []::VARCHAR[])",
        "difficulty": "c.difficulty",
        "difficulty_level": "c.difficulty_level",
        "variant_of": "c.variant_of",
        "paraphrase_of": "c.paraphrase_of",
        "family": "coalesce(c.family, r.probe_id)",
    }
    return "SELECT " + ", ".join(f"{exprs.get(c, f'r.{c}')} AS {c}" for c in COLUMN_NAMES)


# --------------------------------------------------------------------------- user SQL

# --------------------------------------------------------------------------- filters

@dataclass(frozen=True)
class TrialFilter:
    """Which trials: each field narrows the set (AND); several values of one field are OR.

    Values are checked by the caller (`ix.api.results`); `where()` quotes every one of them.
    """

    experiments: tuple[str, ...] = ()
    subjects: tuple[str, ...] = ()
    cases: tuple[str, ...] = ()          # globs on probe_id
    tags: tuple[str, ...] = ()           # the case has any of them
    difficulties: tuple[str, ...] = ()
    runs: tuple[str, ...] = ()           # exact run ids
    since: datetime | None = None        # naive UTC, inclusive
    until: datetime | None = None        # naive UTC, exclusive
    passed: bool | None = None           # True: passed; False: ran and did not pass
    correct: bool | None = None          # True: outcome right; False: outcome wrong
    errors: bool | None = None           # True: errored only; False: no errored trial
    all_attempts: bool = False           # superseded attempts too (`trials_all`)
    scope: tuple[str, ...] | None = None  # the runs in scope (`ix results`' default); None: all
    exclude_runs: tuple[str, ...] = ()   # runs left out (imported copies of other runs)

    @property
    def view(self) -> str:
        return "trials_all" if self.all_attempts else "trials"

    def where(self) -> str:
        """The SQL condition (`TRUE` when nothing is filtered)."""
        terms = []
        if self.experiments:
            names = _values(self.experiments)
            terms.append(f"experiment IN ({names})")
        for column, values in (("subject", self.subjects), ("difficulty", self.difficulties),
                               ("run_id", self.runs)):
            if values:
                terms.append(f"{column} IN ({_values(values)})")
        if self.scope is not None:
            terms.append(f"run_id IN ({_values(self.scope)})" if self.scope else "FALSE")
        if self.exclude_runs:
            terms.append(f"(run_id IS NULL OR run_id NOT IN ({_values(self.exclude_runs)}))")
        if self.cases:
            terms.append("(" + " OR ".join(f"probe_id GLOB {literal(g)}"
                                           for g in self.cases) + ")")
        if self.tags:
            terms.append(f"list_has_any(tags, [{_values(self.tags)}])")
        if self.since is not None:
            terms.append(f"started_at >= {literal(self.since)}")
        if self.until is not None:
            terms.append(f"started_at < {literal(self.until)}")
        if self.passed is not None:
            terms.append("passed" if self.passed else "NOT passed")
        if self.correct is not None:
            terms.append("correct" if self.correct else "NOT correct")
        if self.errors is not None:
            terms.append("error IS NOT NULL" if self.errors else "error IS NULL")
        return " AND ".join(terms) or "TRUE"


def literal(value: Any) -> str:
    """A SQL literal: strings quoted (quotes doubled), datetimes as TIMESTAMP, numbers as is."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, datetime):
        return f"TIMESTAMP '{value.replace(tzinfo=None).isoformat(sep=' ')}'"
    return "'" + str(value).replace("'", "''") + "'"


def _values(values: Sequence[str]) -> str:
    return ", ".join(literal(v) for v in values)


def _list(paths: Sequence[str]) -> str:
    return "[" + _values(paths) + "]"


__all__ = ["COLUMNS", "COLUMN_NAMES", "SHARED", "VIEWS", "TrialFilter", "check_read_only",
           "connect", "connect_index", "cursor", "literal", "refreshed_index",
           "schema_connection", "shared_views", "sql_error"]
