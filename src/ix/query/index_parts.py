"""Parquet parts of the trial index: a byte range of a `trials.jsonl`, parsed by DuckDB.

A part holds one row per trial record of the range, flattened to `ROW_COLUMNS`; lines that
are not trial records (by the rule of `ix.store.trial_lines`, which the resume reader applies
too) are counted, not kept. Every file is written to a temporary name and renamed, so a
reader never opens half of one.
"""

import json
import os
import secrets
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from ix.store.trial_lines import (
    JSON_COLUMNS,
    TYPED_COLUMNS,
    decode_line,
    parsed_select,
    suspects,
    typed_select,
)

if TYPE_CHECKING:
    import duckdb
    import numpy as np

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
    ("invoked", "VARCHAR[]"), ("first_invoked", "VARCHAR"),
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
    except (ValueError, RecursionError):  # not JSON, not UTF-8, 5,000 digits, nested deep
        whole = False
    return (size, False) if whole else (end, True)


def write_part(con: "duckdb.DuckDBPyConnection", root: Path, name: str, seq: int, log: Path,
               start: int, end: int, state: dict[str, int], dest: Path) -> tuple[int, int]:
    """Parse bytes [start, end) of the log into a Parquet part; (rows, skipped lines).

    The log (or a copy of the range) is read by DuckDB (on its threads) while numpy looks for
    the lines Python cannot decode (`_undecodable`, on one more): a log of ix's own lines has
    none, and the part stands. With some, a line longer than a read block, or a log that grew
    meanwhile, the range is read again from a copy with those lines made junk."""
    tmp = root / f".{safe_name(name)}-{secrets.token_hex(6)}.jsonl.tmp"
    try:
        with ThreadPoolExecutor(1) as pool:
            scan = pool.submit(_undecodable, log, start, end)
            whole = start == 0 and end == state["size"]
            if not whole:  # a range of the log: DuckDB reads files, so a copy of it
                with log.open("rb") as src, tmp.open("wb") as out:
                    src.seek(start)
                    _copy(src, out, end - start)
            parsed = _parse(con, log if whole else tmp, name, seq, dest)
            undecodable, longest = scan.result()
        if not undecodable and longest + 2 <= READ_BLOCK \
                and file_state(log) == state:  # nothing was appended while DuckDB read it
            return parsed
    finally:
        tmp.unlink(missing_ok=True)
    try:
        with log.open("rb") as src, tmp.open("wb") as out:
            src.seek(start)
            at = start
            for offset, length in [*undecodable, (end, 0)]:
                _copy(src, out, offset - at)
                if length:  # a line DuckDB would read and Python not: junk to every reader
                    out.write(b"null")
                    src.seek(length, os.SEEK_CUR)
                at = offset + length
        return _parse(con, tmp, name, seq, dest, longest)
    finally:
        tmp.unlink(missing_ok=True)


def _copy(src: BinaryIO, out: BinaryIO, size: int) -> None:
    while size > 0:
        block = src.read(min(size, 1 << 24))
        if not block:
            break
        out.write(block)
        size -= len(block)


def _undecodable(log: Path, start: int, end: int) -> tuple[list[tuple[int, int]], int]:
    """(offset, length) of each line of [start, end) that DuckDB may read but Python does not
    decode (`decode_line`): nested too deep, a number of thousands of digits, text after the
    object (which DuckDB before 2.0 ignores). The resume reader skips such a line as corrupt,
    so the index must too. Only suspects are decoded; a log of ix's own lines has none.
    Also the length of the longest line, which sizes DuckDB's read (`_parse`)."""
    found: list[tuple[int, int]] = []
    longest = 0
    with log.open("rb") as f:
        f.seek(start)
        at, remaining, carry = start, end - start, b""
        while remaining > 0:
            block = f.read(min(remaining, 1 << 24))
            if not block:
                break
            remaining -= len(block)
            data = carry + block
            cut = len(data) if remaining <= 0 else data.rfind(b"\n") + 1
            data, carry = data[:cut], data[cut:]
            odd, longest_here = _suspects(data)
            longest = max(longest, longest_here)
            for offset, line in odd:
                if decode_line(line) is None:
                    found.append((at + offset, len(line)))
            at += len(data)
    return found, longest


def _suspects(data: bytes) -> tuple[list[tuple[int, bytes]], int]:
    """The lines of `data` (whole lines) that Python might not decode though DuckDB does:
    nested deep or holding a huge number (`suspects`), not ending in "}", or with a trailing
    comma or "}{" (whitespace aside) — found with numpy, since a log has millions of lines
    and ix's own are never suspects; and the length of the longest line."""
    import numpy as np

    arr = np.frombuffer(data, np.uint8)
    ends = np.flatnonzero(arr == 10)
    if data and not data.endswith(b"\n"):
        ends = np.append(ends, len(data))
    if not len(ends):
        return [], 0
    starts = np.r_[0, ends[:-1] + 1]
    lengths = ends - starts
    odd = suspects(arr, starts, ends) | ((lengths > 0) & (arr[np.maximum(ends - 1, 0)] != 125))
    folded = arr | 32  # "}" and "]" alike, and "{" and "["
    closers = np.flatnonzero(folded == 125)                # "}" "]" after ","
    openers = np.flatnonzero(folded == 123)
    openers = openers[arr[openers] == 123]                 # "{" after "}"
    lenient = np.r_[_after(arr, closers, 44), _after(arr, openers, 125)]
    if len(lenient):
        odd[np.searchsorted(ends, lenient)] = True
    lines = [(int(starts[i]), data[int(starts[i]):int(ends[i])])
             for i in np.flatnonzero(odd).tolist()]
    return [(at, line) for at, line in lines if line.strip(b" \t\r")], int(lengths.max())


def _after(arr: "np.ndarray", positions: "np.ndarray", byte: int) -> "np.ndarray":
    """The positions whose `_before` is `byte`: looked for only where the byte just before is
    it or a blank (a few of the millions of braces in a log)."""
    import numpy as np

    positions = positions[positions > 0]
    prev = arr[positions - 1]
    exact, blank = prev == byte, (prev == 32) | (prev == 9) | (prev == 13)
    spaced = positions[blank]
    return np.r_[positions[exact], spaced[_before(arr, spaced) == byte]]


def _before(arr: "np.ndarray", positions: "np.ndarray") -> "np.ndarray":
    """The byte before each position, spaces, tabs and carriage returns skipped (-1: none)."""
    import numpy as np

    found = np.full(len(positions), -1, np.int16)
    at = positions - 1
    todo = np.flatnonzero(at >= 0)
    while len(todo):
        byte = arr[at[todo]]
        blank = (byte == 32) | (byte == 9) | (byte == 13)
        found[todo[~blank]] = byte[~blank]
        todo = todo[blank]
        at[todo] -= 1
        todo = todo[at[todo] >= 0]
    return found


#: The least `maximum_object_size` of a read: DuckDB reads a log in blocks of about this size,
#: one per thread (1 GiB, as ix read before, left a 556 MB log to one thread); a log with a
#: longer line is read with blocks that hold it.
READ_BLOCK = 1 << 22


def _parse(con: "duckdb.DuckDBPyConnection", path: Path, name: str, seq: int,
           dest: Path, longest: int = 0, hardened: bool = False) -> tuple[int, int]:
    """Every line typed (`typed_select`), then the suspects it flags by the hardened rule
    (`parsed_select` of the same lines): the same part as reading every line so (`hardened`,
    what tests/query/test_index_hardening.py compares it with), at a fraction of the cost; a
    log of ix's own lines has no suspects. `longest` is the length of the log's longest line.

    The typed read runs on every thread: a record's `line` is its row's place in the table
    the read fills in order (`rowid`), which is what `WITH ORDINALITY` numbers, read on one
    thread only; the hardened read, the reference, numbers so."""
    size = max(READ_BLOCK, longest + 2)

    def source(columns: str, numbered: bool) -> str:
        read = (f"read_json({quote(str(path))}, format = 'newline_delimited', "
                f"ignore_errors = true, maximum_object_size = {size}, columns = {columns})")
        return (f"{read} WITH ORDINALITY" if numbered
                else f"(SELECT *, NULL::BIGINT AS ordinality FROM {read})")

    con.execute("SET preserve_insertion_order = true")  # the rowid of a row is its line's place
    if hardened:
        select = parsed_select(source(JSON_COLUMNS, True), quote(name), seq)
        select = f"SELECT *, false AS suspect FROM ({select})"
    else:
        select = typed_select(source(TYPED_COLUMNS, False), quote(name), seq)
    con.execute("CREATE OR REPLACE TEMP TABLE parsed AS " + select)
    row = con.execute("SELECT count(*) FILTER (NOT junk AND NOT suspect), "
                      "count(*) FILTER (junk AND NOT suspect), count(*) FILTER (suspect) "
                      "FROM parsed").fetchone()
    rows, skipped, suspect = (int(row[0]), int(row[1]), int(row[2])) if row else (0, 0, 0)
    columns = ", ".join(c for c, _ in ROW_COLUMNS)
    line = "line" if hardened else "rowid + 1"
    placed = ", ".join(f"{line} AS line" if c == "line" else c for c, _ in ROW_COLUMNS)
    select = f"SELECT {placed} FROM parsed WHERE NOT junk"
    if suspect:
        lines = (f"(SELECT * FROM {source(JSON_COLUMNS, True)} "
                 f"WHERE ordinality IN (SELECT {line} FROM parsed WHERE suspect))")
        con.execute("CREATE OR REPLACE TEMP TABLE hardened AS "
                    + parsed_select(lines, quote(name), seq))
        row = con.execute("SELECT count(*) FILTER (NOT junk), count(*) FILTER (junk) "
                          "FROM hardened").fetchone()
        rows, skipped = (rows + int(row[0]), skipped + int(row[1])) if row else (rows, skipped)
        select = (f"SELECT {columns} FROM (SELECT {placed} FROM parsed "
                  f"WHERE NOT junk AND NOT suspect UNION ALL SELECT {columns} FROM hardened "
                  "WHERE NOT junk) ORDER BY line")
    copy_to_parquet(con, select, dest)
    con.execute("DROP TABLE parsed")
    con.execute("DROP TABLE IF EXISTS hardened")
    return rows, skipped


def run_ids(con: "duckdb.DuckDBPyConnection", part: Path) -> dict[str, str]:
    """Each run id of a part, with the experiment its lines name."""
    rows = con.execute(f"SELECT run_id, any_value(coalesce(experiment, '')) FROM "
                       f"read_parquet({quote(str(part))}) WHERE run_id IS NOT NULL "
                       "GROUP BY run_id").fetchall()
    return {str(run_id): str(experiment) for run_id, experiment in rows}


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
        con.execute(f"COPY ({select}) TO {quote(str(tmp))} (FORMAT parquet, COMPRESSION lz4)")
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
