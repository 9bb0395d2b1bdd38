"""A read-only SELECT over the lab's trials (`ix query`, `Lab.query`), and the `Table` that
`ResultSet` builds on: rows, counts, data frames and exports of any such SELECT.

Each method reads the lab's index as it is when called (refreshed first if a trials.jsonl
changed). SQL that does not parse, names an unknown table or column, or would write is a
`ConfigError` before the lab is read.
"""

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from ix.domain.errors import ConfigError, Warn
from ix.fs.files import shared_mode
from ix.fs.resolve import find_lab
from ix.query.index import TrialIndex
from ix.query.sql_guard import sql_error
from ix.query.views import (
    check_read_only,
    connect_index,
    cursor,
    literal,
    refreshed_index,
    schema_connection,
    shared_views,
)

if TYPE_CHECKING:
    import duckdb

EXPORT_FORMATS = ("csv", "json", "jsonl", "parquet")


class Table:
    """A read-only SELECT over the lab's views, run when asked (`rows`, `export`, ...)."""

    def __init__(self, lab: Path, sql: str, warn: Warn | None = None):
        self.lab = lab
        self._sql = sql
        self._warn = warn
        self._held: TrialIndex | None = None
        self._held_con: duckdb.DuckDBPyConnection | None = None  # views over `_held`

    @property
    def sql(self) -> str:
        """The SELECT this table runs (over the views `trials`, `trials_all`, `cases`)."""
        return self._sql

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[Self]:
        """Inside `with t.snapshot():` every call reads one snapshot of the index, e.g. rows
        and counts that agree while a run is appending trials, through one set of views
        (defined once: a page that asks several things of one set pays for them once)."""
        if self._held is not None:
            yield self
            return
        self._held = refreshed_index(self.lab, self._warn)
        try:
            yield self
        finally:
            self._held = None
            self._held_con = None  # shared: other readers may use it still

    @contextlib.contextmanager
    def _connect(self, writable: tuple[str, ...] = ()
                 ) -> Iterator["duckdb.DuckDBPyConnection"]:
        """A connection over the held snapshot (else the index as it is now), locked: it
        reads the index and writes only the files `writable` (ix.query.sql_guard). To read,
        a cursor of the views this process keeps for the snapshot (`shared_views`)."""
        index = self._held if self._held is not None else refreshed_index(self.lab, self._warn)
        if writable:
            with connect_index(index, writable=writable) as con:
                yield con
            return
        views = self._held_con if self._held_con is not None else shared_views(index)
        if self._held is not None:
            self._held_con = views  # the same views for the rest of the snapshot
        with cursor(views) as con:
            yield con

    def _run(self, con: "duckdb.DuckDBPyConnection", sql: str) -> "duckdb.DuckDBPyRelation":
        """The query as a relation (bound, not run); bad SQL is a `ConfigError`."""
        import duckdb

        try:
            return con.sql(sql)
        except duckdb.Error as exc:
            raise sql_error(exc) from None

    def _execute(self, con: "duckdb.DuckDBPyConnection",
                 sql: str) -> "duckdb.DuckDBPyConnection":
        """The query run, its rows ready to fetch; an error while running is a `ConfigError`."""
        import duckdb

        try:
            return con.execute(sql)
        except duckdb.Error as exc:
            raise sql_error(exc) from None

    def _scalar(self, sql: str) -> Any:
        with self._connect() as con:  # fetch all: a half-read result blocks a held connection
            rows = self._execute(con, sql).fetchall()
        return rows[0][0] if rows else None

    @property
    def columns(self) -> list[str]:
        with schema_connection() as con:
            return list(self._run(con, self.sql).columns)

    def rows(self) -> list[dict[str, Any]]:
        """Every row as a dict (column name -> Python value)."""
        return list(iter(self))  # not list(self): its length hint would run a count first

    def __iter__(self) -> Iterator[dict[str, Any]]:
        import duckdb

        with self._connect() as con:
            cursor = self._execute(con, self.sql)
            names = [d[0] for d in cursor.description or ()]
            try:
                while batch := cursor.fetchmany(10_000):
                    for values in batch:
                        yield dict(zip(names, values, strict=True))
            except duckdb.Error as exc:
                raise sql_error(exc) from None

    def __len__(self) -> int:
        return int(self._scalar(f"SELECT count(*) FROM ({self.sql})") or 0)

    def page(self, order: str, limit: int, offset: int = 0) -> list[dict[str, Any]]:
        """`limit` rows from `offset` in `order` (columns of the views, as ix writes them)."""
        with self._connect() as con:
            cursor = self._execute(con, f"SELECT * FROM ({self.sql}) ORDER BY {order} "
                                        f"LIMIT {int(limit)} OFFSET {int(offset)}")
            names = [d[0] for d in cursor.description or ()]
            return [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]

    def to_dataframe(self) -> Any:
        """A pandas DataFrame (else a polars one); ImportError naming both if neither is there."""
        import importlib.util

        with self._connect() as con:
            relation = self._run(con, self.sql)
            if importlib.util.find_spec("pandas") is not None:
                return relation.df()
            if importlib.util.find_spec("polars") is not None:
                return relation.pl()
        raise ImportError("to_dataframe() needs pandas or polars; install one of them "
                          "(pip install pandas)")

    def _export_select(self) -> str:
        return self.sql

    def export(self, format: str, path: str | Path) -> Path:
        """Write the rows to `path` as csv, json (one array), jsonl (one object per line) or
        parquet (typed columns); to a temporary file first, then renamed into place."""
        if format not in EXPORT_FORMATS:
            raise ConfigError(f"unknown format {format!r}; allowed: {', '.join(EXPORT_FORMATS)}",
                              field="--format")
        dest = Path(path).expanduser().resolve()
        if not dest.parent.is_dir():
            raise ConfigError(f"the folder {dest.parent} does not exist", field="--out")
        if dest.is_dir():
            raise ConfigError(f"{dest} is a folder; give a file name", field="--out")
        options = {"csv": "FORMAT csv, HEADER true", "json": "FORMAT json, ARRAY true",
                   "jsonl": "FORMAT json", "parquet": "FORMAT parquet"}[format]
        select = self.sql if format == "parquet" else self._export_select()
        fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
        os.close(fd)
        try:
            with self._connect(writable=(tmp,)) as con:  # this file and no other
                self._run(con, f"SELECT * FROM ({select}) LIMIT 0")
                self._execute(con, f"COPY ({select}) TO {literal(tmp)} "
                                   f"({options}, USE_TMP_FILE false)")

            os.chmod(tmp, shared_mode(dest))  # as every export and report (docs/export.md)
            os.replace(tmp, dest)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return dest


class QueryResult(Table):
    """The rows of a user's SQL (`ix query`, `Lab.query`)."""


def run_query(lab: str | Path | None, sql: str, warn: Warn | None = None) -> QueryResult:
    """A user's read-only SQL over `trials`, `trials_all` and `cases`, checked before it runs."""
    import duckdb

    if not isinstance(sql, str) or not sql.strip():
        raise ConfigError("give an SQL query, e.g. \"SELECT subject, avg(passed::INT) FROM "
                          "trials GROUP BY subject\"", field="SQL")
    lab_path = find_lab(lab)
    check_read_only(sql)
    with schema_connection() as con:  # parse and bind against the views before reading
        try:
            con.sql(sql)
        except duckdb.Error as exc:
            raise sql_error(exc) from None
    return QueryResult(lab_path, sql.strip().rstrip(";"), warn)


__all__ = ["EXPORT_FORMATS", "QueryResult", "Table", "run_query"]
