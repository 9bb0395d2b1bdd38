"""Parquet parts of the trial index: a byte range of a `trials.jsonl`, parsed by DuckDB.

A part holds one row per trial record of the range, flattened to `ROW_COLUMNS`; lines that
are not trial records are counted, not kept. Every file is written to a temporary name and
renamed, so a reader never opens half of one.
"""

import json
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb

#: The columns of a part, in order: `source` is the experiment's folder, (`part`, `line`) a
#: record's position (the part's sequence number, the line within it).
ROW_COLUMNS: tuple[tuple[str, str], ...] = (
    ("source", "VARCHAR"), ("part", "INTEGER"), ("line", "BIGINT"),
    ("experiment", "VARCHAR"), ("run_id", "VARCHAR"), ("subject", "VARCHAR"),
    ("probe_id", "VARCHAR"), ("trial", "INTEGER"), ("seed", "BIGINT"), ("attempt", "INTEGER"),
    ("expectation", "VARCHAR"), ("passed", "BOOLEAN"), ("score", "DOUBLE"),
    ("sensor", "VARCHAR"), ("error", "VARCHAR"), ("error_message", "VARCHAR"),
    ("tokens_input", "BIGINT"), ("tokens_output", "BIGINT"), ("tokens", "BIGINT"),
    ("cost", "DOUBLE"), ("duration", "DOUBLE"), ("started_at", "TIMESTAMP"),
)

_JSON_COLUMNS = (
    "{experiment: 'VARCHAR', run_id: 'VARCHAR', subject: 'VARCHAR', probe_id: 'VARCHAR', "
    "trial: 'INTEGER', seed: 'BIGINT', attempt: 'INTEGER', expectation: 'VARCHAR', "
    "started_at: 'VARCHAR', duration_ms: 'DOUBLE', "
    "observation: 'STRUCT(tokens_input BIGINT, tokens_output BIGINT, cost_usd DOUBLE, "
    "duration_ms DOUBLE)', "
    "reading: 'STRUCT(passed BOOLEAN, score DOUBLE, sensor_name VARCHAR)', "
    "error: 'STRUCT(kind VARCHAR, message VARCHAR)'}"
)


def complete_end(log: Path, start: int, size: int) -> tuple[int, bool]:
    """Where the indexable bytes of [start, size) end, and whether a torn line follows.

    A last line without its newline is indexable when it is a whole JSON object (a writer
    always starts the next record on a fresh line); otherwise it is left for later.
    """
    with log.open("rb") as f:
        pos, chunk = size, 1 << 16
        while pos > start:
            read_from = max(start, pos - chunk)
            f.seek(read_from)
            data = f.read(pos - read_from)
            cut = data.rfind(b"\n")
            if cut >= 0:
                end = read_from + cut + 1
                break
            pos = read_from
        else:
            end = start
        if end == size:
            return size, False
        f.seek(end)
        fragment = f.read(size - end)
    if not fragment.strip():
        return size, False
    try:
        whole = isinstance(json.loads(fragment), dict)
    except (ValueError, UnicodeDecodeError):
        whole = False
    return (size, False) if whole else (end, True)


def write_part(con: "duckdb.DuckDBPyConnection", root: Path, name: str, seq: int, log: Path,
               start: int, end: int, state: dict[str, int], dest: Path) -> tuple[int, int]:
    """Parse bytes [start, end) of the log into a Parquet part; (rows, skipped lines)."""
    if start == 0 and end == state["size"]:
        rows, skipped = _parse(con, log, name, seq, dest)
        if file_state(log) == state:  # nothing was appended while DuckDB read the file
            return rows, skipped
    tmp = root / f".{safe_name(name)}-{secrets.token_hex(6)}.jsonl.tmp"
    try:
        with log.open("rb") as src, tmp.open("wb") as out:
            src.seek(start)
            remaining = end - start
            while remaining > 0:
                block = src.read(min(remaining, 1 << 24))
                if not block:
                    break
                out.write(block)
                remaining -= len(block)
        return _parse(con, tmp, name, seq, dest)
    finally:
        tmp.unlink(missing_ok=True)


def _parse(con: "duckdb.DuckDBPyConnection", path: Path, name: str, seq: int,
           dest: Path) -> tuple[int, int]:
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE parsed AS
        SELECT {quote(name)} AS source, {seq}::INTEGER AS part, ordinality AS line,
            coalesce(experiment, {quote(name)}) AS experiment, run_id, subject, probe_id,
            trial, seed, coalesce(attempt, 0) AS attempt, expectation,
            reading.passed AS passed, reading.score AS score, reading.sensor_name AS sensor,
            error.kind AS error, error.message AS error_message,
            observation.tokens_input AS tokens_input,
            observation.tokens_output AS tokens_output,
            CASE WHEN observation.tokens_input IS NOT NULL
                   OR observation.tokens_output IS NOT NULL
                 THEN coalesce(observation.tokens_input, 0)
                    + coalesce(observation.tokens_output, 0) END AS tokens,
            observation.cost_usd AS cost,
            coalesce(duration_ms, observation.duration_ms) AS duration,
            try_cast(started_at AS TIMESTAMPTZ) AT TIME ZONE 'UTC' AS started_at,
            run_id IS NULL AND subject IS NULL AND probe_id IS NULL AS junk
        FROM read_json({quote(str(path))}, format = 'newline_delimited',
                       ignore_errors = true, maximum_object_size = 1073741824,
                       columns = {_JSON_COLUMNS}) WITH ORDINALITY
    """)
    row = con.execute("SELECT count(*) FILTER (NOT junk), count(*) FILTER (junk) "
                      "FROM parsed").fetchone()
    rows, skipped = (int(row[0]), int(row[1])) if row else (0, 0)
    columns = ", ".join(c for c, _ in ROW_COLUMNS)
    copy_to_parquet(con, f"SELECT {columns} FROM parsed WHERE NOT junk", dest)
    con.execute("DROP TABLE parsed")
    return rows, skipped


def write_superseded(con: "duckdb.DuckDBPyConnection", root: Path, name: str,
                      parts: list[str]) -> str | None:
    """(part, line) of every attempt a later attempt of the same trial supersedes (DESIGN §3)."""
    if not parts:
        return None
    key = "run_id, subject, probe_id, trial"
    source = f"read_parquet({parquet_list(root, parts)})"
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE superseded AS
        SELECT part, line FROM (
            SELECT part, line, row_number() OVER (
                PARTITION BY {key} ORDER BY attempt DESC, part DESC, line DESC) AS rank
            FROM {source}
            WHERE ({key}) IN (SELECT ({key}) FROM {source} GROUP BY ALL HAVING count(*) > 1)
        ) WHERE rank > 1
    """)
    found = con.execute("SELECT count(*) FROM superseded").fetchone()
    file = None
    if found and found[0]:
        file = f"{safe_name(name)}-superseded-{secrets.token_hex(6)}.parquet"
        copy_to_parquet(con, f"SELECT {quote(name)} AS source, part, line FROM superseded",
                        root / file)
    con.execute("DROP TABLE superseded")
    return file


def copy_to_parquet(con: "duckdb.DuckDBPyConnection", select: str, dest: Path) -> None:
    """COPY to a temporary file beside `dest`, then rename: a reader never sees half a part."""
    tmp = dest.with_name(f".{dest.name}.{secrets.token_hex(4)}.tmp")
    try:
        con.execute(f"COPY ({select}) TO {quote(str(tmp))} (FORMAT parquet)")
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)


def parquet_list(root: Path, names: list[str]) -> str:
    return "[" + ", ".join(quote(str(root / n)) for n in names) + "]"


def quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def file_state(path: Path) -> dict[str, int]:
    """What says a file changed: its inode, size and modification time."""
    st = path.stat()
    return {"ino": st.st_ino, "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def safe_name(name: str) -> str:
    """An experiment's folder name as part of a file name."""
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name)[:60]
