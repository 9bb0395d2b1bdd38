"""Tables a user keeps their cases in: CSV, JSONL, JSON and Parquet, read as rows of cells.

Each row comes with where it is in its file (`row 3` of a CSV counts the header as row 1, as a
spreadsheet does; `line 3` of a JSONL; `item 3` of a JSON list; `row 3` of a Parquet file), so
an error can name the file, the row and the column. Cells keep their type where the format has
types (JSON, Parquet: booleans, numbers, lists) and are text in a CSV.
"""

import csv
import io
import json
import math
from dataclasses import dataclass
from datetime import date, datetime, time
from decimal import Decimal
from pathlib import Path
from typing import Any

from ix.domain.errors import ConfigError
from ix.fs.yamlio import read_text

#: The formats by file suffix (`.tsv` is a CSV with tabs).
SUFFIXES = {".csv": "csv", ".tsv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl",
            ".json": "json", ".parquet": "parquet"}


@dataclass(frozen=True)
class Table:
    """A table's rows: each `(where, {column: cell})`; `columns` in the file's order."""

    path: Path
    format: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, dict[str, Any]], ...]
    #: the JSON document as a whole when it is not a list of rows (skill-creator's evals.json)
    document: Any = None


def read_table(path: Path) -> Table:
    """The rows of a CSV, JSONL, JSON or Parquet file (by suffix); a `ConfigError` naming the
    file (and the row) when it cannot be read."""
    fmt = SUFFIXES.get(path.suffix.lower())
    if fmt is None:
        raise ConfigError(f"unknown table format {path.suffix or '(no suffix)'!r}: a table is "
                          f"{', '.join(SUFFIXES)}", file=path)
    if not path.is_file():
        raise ConfigError("no such file" if not path.exists() else "not a regular file",
                          file=path)
    if fmt == "parquet":
        return _parquet(path)
    text = read_text(path)
    if fmt == "csv":
        return _csv(path, text, "\t" if path.suffix.lower() == ".tsv" else ",")
    if fmt == "jsonl":
        rows = []
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                rows.append((f"line {number}", _object(_json(line, path, f"line {number}"),
                                                       path, f"line {number}")))
        return _rows(path, "jsonl", rows)
    document = _json(text, path, None)
    if isinstance(document, list):
        return _rows(path, "json", [(f"item {i}", _object(item, path, f"item {i}"))
                                    for i, item in enumerate(document, start=1)])
    return Table(path, "json", (), (), document)


def _rows(path: Path, fmt: str, rows: list[tuple[str, dict[str, Any]]]) -> Table:
    columns: dict[str, None] = {}
    for _, row in rows:
        columns.update(dict.fromkeys(row))
    return Table(path, fmt, tuple(columns), tuple(rows))


def _object(value: Any, path: Path, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"a row is a JSON object of columns, not {type(value).__name__}",
                          file=path, field=where)
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _json(text: str, path: Path, where: str | None) -> Any:
    try:
        return json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise ConfigError("nested too deeply to read", file=path, field=where) from None
    except ValueError as exc:
        raise ConfigError(f"not valid JSON ({str(exc).split(';')[0]})", file=path,
                          field=where) from None


def _csv(path: Path, text: str, delimiter: str) -> Table:
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    number = 1
    try:
        header = next(reader, None)
        if not header:
            raise ConfigError("empty: a CSV table starts with a header row naming its columns",
                              file=path, field="row 1")
        header = [h.strip() for h in header]
        seen: set[str] = set()
        for h in header:
            if not h:
                raise ConfigError("a column has no name in the header row", file=path,
                                  field="row 1")
            if h in seen:
                raise ConfigError(f"column {h!r} is named twice in the header row", file=path,
                                  field="row 1")
            seen.add(h)
        rows = []
        for number, cells in enumerate(reader, start=2):
            if not any(c.strip() for c in cells):
                continue  # a blank line (a spreadsheet's trailing rows)
            if len(cells) > len(header):
                raise ConfigError(f"{len(cells)} values for {len(header)} columns", file=path,
                                  field=f"row {number}")
            rows.append((f"row {number}", dict(zip(header, cells, strict=False))))
    except csv.Error as exc:
        raise ConfigError(f"not valid CSV ({exc})", file=path, field=f"row {number + 1}") \
            from None
    return Table(path, "csv", tuple(header), tuple(rows))


def _parquet(path: Path) -> Table:
    import duckdb  # a core dependency; imported only to read a Parquet file

    try:
        with duckdb.connect() as db:
            result = db.execute("SELECT * FROM read_parquet(?)", [str(path)])
            columns = tuple(d[0] for d in result.description or ())
            fetched = result.fetchall()
    except duckdb.Error as exc:
        raise ConfigError(f"cannot read as Parquet: {str(exc).splitlines()[0]}", file=path) \
            from None
    rows = tuple((f"row {i}", {c: _plain(v) for c, v in zip(columns, values, strict=True)})
                 for i, values in enumerate(fetched, start=1))
    return Table(path, "parquet", columns, rows)


def _plain(value: Any) -> Any:
    """A Parquet cell as a value YAML and JSON write: decimals as numbers, times as text."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value
