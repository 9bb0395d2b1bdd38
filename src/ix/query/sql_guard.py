"""What a user's SQL may do: read the views of the lab's trials, and nothing else.

`ix query` and the MCP tool `query_results` run SQL that a person — or a model reading
untrusted case text and answers — wrote. Two walls stand between it and the machine:

- `check_read_only` lets through one SELECT (or an EXPLAIN of one) and nothing else, before
  anything runs: no COPY, ATTACH, INSTALL, LOAD, PRAGMA, SET, CALL, and no EXPLAIN ANALYZE of
  any of them (it would run it).
- `lock` shuts the connection in once the views are defined: DuckDB may open no file but the
  index files the views read (and the one file an export writes), reaches no network, installs
  and loads no extension, and no setting can change after. A query that tries is refused with
  one line naming the rule (`refusal`), and nothing is read or written.
"""

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ix.domain.errors import ConfigError, IxError
from ix.fs.storage_faults import storage_error

if TYPE_CHECKING:
    import duckdb

VIEWS = ("trials", "trials_all", "cases")
RULE = f"only read-only queries (SELECT) over the views {', '.join(VIEWS)} are allowed"

#: Set when the connection is made, before any SQL runs: no extension is fetched or loaded
#: behind a query's back (`read_text('http://…')` would install httpfs).
CONFIG = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}

# DuckDB's words for what `lock` forbids, and what the user is told.
_REFUSALS = (
    ("disabled by configuration", "file and network access is disabled"),
    ("disabled through configuration", "file and network access is disabled"),
    ("external extensions is disabled", "extensions cannot be installed or loaded"),
    ("extension is not loaded", "extensions cannot be installed or loaded"),
    ("autoloading", "extensions cannot be installed or loaded"),
    ("configuration has been locked", "settings cannot be changed"),
)


def lock(con: "duckdb.DuckDBPyConnection", readable: Sequence[str] = (),
         writable: Sequence[str] = ()) -> None:
    """From now on `con` opens only the files `readable` and `writable` (exact paths), no
    network, no extension, and refuses every SET."""
    allowed = [*readable, *writable]
    if allowed:  # DuckDB >= 1.2; before it, every file is refused
        con.execute("SET allowed_paths = " + _list(allowed))
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def refusal(exc: BaseException) -> ConfigError | None:
    """The `ConfigError` naming the rule when DuckDB refused what `lock` forbids, else None."""
    text = str(exc)
    for words, what in _REFUSALS:
        if words in text:
            return ConfigError(f"{RULE}: {what}", field="SQL")
    if "Table with name" in text and "does not exist" in text:  # also `FROM '/etc/passwd'`
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        hint = next((f" {line}" for line in lines[1:] if line.lower().startswith("did you")), "")
        return ConfigError(f"{lines[0]}{hint} ({RULE})", field="SQL")
    return None


def check_read_only(sql: str) -> None:
    """One SELECT (or EXPLAIN of one) statement, else a `ConfigError`: user SQL never writes,
    and EXPLAIN ANALYZE, which runs what it explains, explains only a SELECT."""
    import duckdb

    kind = _kind(sql)
    if kind != duckdb.StatementType.SELECT:
        name = str(kind).rsplit(".", 1)[-1]
        name = "INSTALL or LOAD" if name == "LOAD" else name
        raise ConfigError(f"{RULE}, not {name}", field="SQL")


def _kind(sql: str) -> "duckdb.StatementType":
    """The kind of the one statement `sql` holds; of an EXPLAIN, the kind it explains."""
    import duckdb

    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        inner = _explained(sql)  # `EXPLAIN ATTACH …` does not parse; what it explains does
        if inner is not None and inner != duckdb.StatementType.SELECT:
            return inner
        raise sql_error(exc) from None
    if len(statements) != 1:
        raise ConfigError(f"give exactly one SQL statement (got {len(statements)})",
                          field="SQL")
    kind = statements[0].type
    if kind == duckdb.StatementType.EXPLAIN:
        inner = _explained(sql)
        if inner is None:
            raise ConfigError(f"{RULE}: EXPLAIN must explain one SELECT", field="SQL")
        return inner
    first = _first_word(sql)
    if kind == duckdb.StatementType.SELECT and first not in _SELECTS:
        raise ConfigError(f"{RULE}, not {first}", field="SQL")  # PRAGMA is a SELECT to some
    return kind                                                 # DuckDB versions


#: The words a read-only query starts with (DuckDB's SELECT, its shorthands and SHOW).
_SELECTS = frozenset({"SELECT", "WITH", "FROM", "VALUES", "TABLE", "(", "DESCRIBE", "DESC",
                      "SHOW", "SUMMARIZE", "UNPIVOT"})


def _first_word(sql: str) -> str:
    import duckdb

    for pos, kind in duckdb.tokenize(sql):
        if kind != duckdb.token_type.comment:
            return sql[pos:].split(None, 1)[0].split("(", 1)[0].upper() or "("
    return ""


def _explained(text: str) -> "duckdb.StatementType | None":
    """The kind of statement an EXPLAIN wraps: EXPLAIN [ANALYZE | (options)] statement.

    Each reading of what follows EXPLAIN that parses as one statement is a candidate; the real
    one is among them (it parsed inside the EXPLAIN). SELECT only when every candidate is a
    SELECT; a non-SELECT candidate, or none, refuses the query."""
    import duckdb

    tokens = [(pos, kind) for pos, kind in duckdb.tokenize(text)
              if kind != duckdb.token_type.comment]
    if not tokens or text[tokens[0][0]:].upper()[:7] != "EXPLAIN":
        return None
    starts = [tokens[1][0]] if len(tokens) > 1 else []
    if len(tokens) > 2 and text[tokens[1][0]:].upper()[:7] in ("ANALYZE", "ANALYSE"):
        starts.append(tokens[2][0])
    if len(tokens) > 1 and text[tokens[1][0]] == "(":
        depth = 0
        for i, (pos, _) in enumerate(tokens[1:], start=1):
            depth += {"(": 1, ")": -1}.get(text[pos], 0)
            if depth == 0:
                if i + 1 < len(tokens):
                    starts.append(tokens[i + 1][0])
                break
    kinds = []
    for start in starts:
        try:
            parsed = duckdb.extract_statements(text[start:])
        except duckdb.Error:
            continue
        if len(parsed) == 1:
            kind = parsed[0].type
            if kind == duckdb.StatementType.SELECT and _first_word(text[start:]) not in _SELECTS:
                kind = duckdb.StatementType.PRAGMA  # a PRAGMA some DuckDB versions call SELECT
            kinds.append(kind)
    if not kinds:
        return None
    others = [k for k in kinds if k != duckdb.StatementType.SELECT]
    return others[0] if others else duckdb.StatementType.SELECT


def _list(paths: Sequence[str]) -> str:
    return "[" + ", ".join("'" + p.replace("'", "''") + "'" for p in paths) + "]"


def sql_error(exc: Exception, field: str = "SQL") -> IxError:
    """A DuckDB error as one line: its first line, plus the candidates it suggests; one the
    storage caused (a full disk writing an export) as the `StorageError` that says so."""
    refused = refusal(exc)  # what the locked connection may not do
    if refused is not None:
        return refused
    fault = storage_error(exc)
    if fault is not None:
        return fault
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    message = lines[0] if lines else type(exc).__name__
    hints = [line for line in lines[1:] if line.lower().startswith(("candidate", "did you"))]
    if hints:
        message += f" ({hints[0]})"
    return ConfigError(message, field=field)
