"""Cases from a table (docs/experiments.md, "Cases from a table"): a map of case fields to
columns, and the rows of a table it turns into case frontmatter and prompts.

The map: `field=column` pairs, comma-separated, e.g.
`prompt=query,expectation=should_trigger[true=must_trigger,false=should_not_trigger],id=name`.
`[...]` maps a column's values (compared as text, letter case aside); a quoted right side
(`expectation='must_trigger'`) is a constant for every row. Fields: `prompt`, `expectation`,
`id`, `rationale`, `tags`, `difficulty`, `metadata.<key>`. A field the map leaves out is taken
from a column of its own name when the table has one (`prompt` also from `query` and
`expectation` from `should_trigger`: skill-creator's trigger eval set reads with no map).

skill-creator's formats are read as they are (anthropics/skills, skills/skill-creator/SKILL.md,
"Description Optimization", Step 1: a JSON list of `{"query": ..., "should_trigger": true}`;
and references/schemas.md, "evals.json": `{"skill_name": ..., "evals": [{"id", "prompt",
"expected_output", "files", "expectations"}]}`, whose evals are prompts the skill must take).
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ix.domain.errors import ConfigError, did_you_mean, raise_all
from ix.fs.names import name_problem, normalise, shown, skeleton
from ix.fs.tables import Table, read_table

#: The values of `ix.eval.models.Expectation` and `Difficulty` (ix.fs imports no eval type).
EXPECTATIONS = ("must_trigger", "should_not_trigger", "acceptable")
DIFFICULTIES = ("easy", "medium", "hard")
FIELDS = ("prompt", "expectation", "id", "rationale", "tags", "difficulty")
#: An id made for a row that has none: `must-001`, `not-001`, `edge-001` (the names of 001_…).
PREFIXES = {"must_trigger": "must", "should_not_trigger": "not", "acceptable": "edge"}
#: What an expectation cell may hold with no value map: a name, or a yes/no.
_TRUTH = {"true": "must_trigger", "yes": "must_trigger", "1": "must_trigger",
          "false": "should_not_trigger", "no": "should_not_trigger", "0": "should_not_trigger",
          **{e: e for e in EXPECTATIONS}}
#: A field the map leaves out comes from a column of one of these names, when there is one.
_DEFAULT_COLUMNS = {"prompt": ("prompt", "query"), "expectation": ("expectation", "should_trigger"),
                    "id": ("id",), "rationale": ("rationale",), "tags": ("tags",),
                    "difficulty": ("difficulty",)}


@dataclass(frozen=True)
class FieldMap:
    """One `field=column[value=value,...]` of a map, or `field='constant'`."""

    column: str | None
    constant: str | None = None
    values: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TableCase:
    """A row made a case: its frontmatter (id and expectation always) and its prompt."""

    path: Path
    where: str
    meta: dict[str, Any]
    prompt: str


@dataclass(frozen=True)
class CaseTable:
    path: Path
    #: csv, jsonl, json, parquet; or skill-creator's `trigger eval set` or `evals.json`
    format: str
    cases: tuple[TableCase, ...]
    #: the table's columns no field was taken from
    unmapped: tuple[str, ...]


def parse_map(text: str, *, file: Path | str | None = None, where: str = "--map"
              ) -> dict[str, FieldMap]:
    """The fields of a map, each checked; a `ConfigError` naming `where` and the bad part."""
    out: dict[str, FieldMap] = {}
    for part in _split(text, ",", file, where):
        name, eq, right = part.partition("=")
        name, right = name.strip(), right.strip()
        if not eq or not name or not right:
            raise ConfigError(f"{part.strip()!r} is not field=column", file=file, field=where)
        if name not in FIELDS and not (name.startswith("metadata.") and name[9:].strip()):
            raise ConfigError(f"unknown field {name!r}{did_you_mean(name, FIELDS)}: the fields "
                              f"are {', '.join(FIELDS)} and metadata.<key>", file=file,
                              field=where)
        if name in out:
            raise ConfigError(f"field {name!r} is mapped twice", file=file, field=where)
        out[name] = _field(name, right, file, where)
    if not out:
        raise ConfigError("empty: give field=column pairs, e.g. prompt=query", file=file,
                          field=where)
    return out


def _split(text: str, sep: str, file: Path | str | None, where: str) -> list[str]:
    """`text` cut at each `sep` outside brackets and quotes."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if quote or depth:
        raise ConfigError(f"unclosed {quote or '['} in {text!r}", file=file, field=where)
    return [p for p in [*parts, text[start:]] if p.strip()]


def _field(name: str, right: str, file: Path | str | None, where: str) -> FieldMap:
    allowed = {"expectation": EXPECTATIONS, "difficulty": DIFFICULTIES}.get(name)
    if right[0] in "'\"" and right[-1] == right[0] and len(right) > 1:
        constant = right[1:-1]
        if allowed and constant not in allowed:
            raise ConfigError(f"{name}={right}: {constant!r} is not one of "
                              f"{', '.join(allowed)}", file=file, field=where)
        return FieldMap(None, constant)
    match = re.fullmatch(r"([^\[\]]+?)\s*(?:\[(.*)\])?", right, flags=re.S)
    if match is None:
        raise ConfigError(f"{name}={right}: not column or column[value=value,...]", file=file,
                          field=where)
    values = {}
    for pair in _split(match.group(2) or "", ",", file, where):
        key, eq, value = (s.strip() for s in pair.partition("="))
        if not eq or not key or not value:
            raise ConfigError(f"{name}: {pair.strip()!r} in [...] is not value=value",
                              file=file, field=where)
        if allowed and value not in allowed:
            raise ConfigError(f"{name}: {value!r} is not one of {', '.join(allowed)}",
                              file=file, field=where)
        values[key.casefold()] = value
    return FieldMap(match.group(1).strip(), None, values)


def load_case_table(path: Path, map_text: str | None = None, *,
                    file: Path | str | None = None, where: str = "--map",
                    inside: Path | None = None) -> CaseTable:
    """Every row of the table at `path` as a case, each row checked: every problem is raised
    together (`ConfigErrors`), each naming the table, the row and the column; map problems
    name `file` and `where` (the option; `cases` for experiment.yaml's `cases.map`, whose
    table must lie `inside` the lab)."""
    if inside is not None:
        try:
            path = path.resolve()
        except (OSError, RuntimeError) as exc:  # a symlink loop
            raise ConfigError(f"cannot resolve: {exc}", file=file, field=f"{where}.from") \
                from None
        if not path.is_relative_to(inside.resolve()):
            raise ConfigError(f"{path} is outside the lab; a table of cases lies inside it",
                              file=file, field=f"{where}.from")
        where = f"{where}.map"
    table = read_table(path)
    fmt = table.format
    given = parse_map(map_text, file=file, where=where) if map_text is not None else {}
    if table.document is not None:
        table, defaults = _evals_json(table)
        fmt = "skill-creator evals.json"
    else:
        defaults = {}
        if {"query", "should_trigger"} <= set(table.columns) <= {"query", "should_trigger"}:
            fmt = "skill-creator trigger eval set"
    fields = _fields(table, {**defaults, **given}, file, where)
    used = {f.column for f in fields.values()}
    cases, problems = [], []
    for row_where, row in table.rows:
        try:
            cases.append(_case(row_where, row, fields, path))
        except ConfigError as exc:
            problems.append(exc)
    if not table.rows:
        problems.append(ConfigError("no rows: the table holds no cases", file=path))
    problems += _check_ids(cases, fields.get("id"), path)
    raise_all(problems)
    if "id" not in fields:
        cases = _numbered(cases)
    return CaseTable(path, fmt, tuple(cases),
                     tuple(c for c in table.columns if c not in used))


def _evals_json(table: Table) -> tuple[Table, dict[str, FieldMap]]:
    """skill-creator's evals.json: its `evals` as the rows."""
    doc = table.document
    evals = doc.get("evals") if isinstance(doc, dict) else None
    if not isinstance(evals, list):
        raise ConfigError("a JSON table is a list of rows (objects), or skill-creator's "
                          "evals.json ({\"skill_name\": ..., \"evals\": [...]})",
                          file=table.path)
    rows = tuple((f"evals[{i}]", item) for i, item in enumerate(evals)
                 if isinstance(item, dict))
    if len(rows) != len(evals):
        raise ConfigError("each of evals is an object", file=table.path, field="evals")
    columns = tuple(dict.fromkeys(k for _, r in rows for k in r))
    defaults = {"expectation": FieldMap(None, "must_trigger"),
                **{f"metadata.{k}": FieldMap(k) for k in
                   ("expected_output", "expectations", "files") if k in columns}}
    if "id" in columns:
        defaults["metadata.eval_id"] = FieldMap("id")
        defaults["id"] = FieldMap(None)  # ids are made (must-001...): skill-creator's are numbers
    return Table(table.path, "json", columns, rows), defaults


def _fields(table: Table, given: dict[str, FieldMap], file: Path | str | None,
            where: str) -> dict[str, FieldMap]:
    """The map with its left-out fields taken from columns of their names; every column it
    names checked to be there."""
    fields = dict(given)
    for name, candidates in _DEFAULT_COLUMNS.items():
        if name not in fields:
            found = next((c for c in candidates if c in table.columns), None)
            if found is not None:
                fields[name] = FieldMap(found)
    fields = {k: v for k, v in fields.items() if v.column is not None or v.constant is not None}
    columns = ", ".join(table.columns) or "none"
    for name, f in fields.items():
        if f.column is not None and f.column not in table.columns:
            raise ConfigError(f"{name}={f.column}: the table has no column {f.column!r}"
                              f"{did_you_mean(f.column, table.columns)} (columns: {columns})",
                              file=file or table.path, field=where)
    for name in ("prompt", "expectation"):
        if name not in fields:
            raise ConfigError(f"no {name}: map it to a column ({name}=COLUMN) "
                              f"(columns: {columns})", file=file or table.path, field=where)
    return fields


def _text(value: Any) -> str | None:
    """A cell as text: None for an empty one; booleans as `true`/`false`."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = value if isinstance(value, str) else str(value)
    return text if text.strip() else None


def _case(where: str, row: Mapping[str, Any], fields: dict[str, FieldMap], path: Path
          ) -> TableCase:
    def at(name: str) -> str:
        column = fields[name].column
        return f"{where}, {column}" if column is not None else f"{where} ({name})"

    def value(name: str) -> Any:
        f = fields[name]
        return f.constant if f.column is None else row.get(f.column)

    def chosen(name: str, allowed: tuple[str, ...], plain: Mapping[str, str]) -> str | None:
        f = fields[name]
        text = _text(value(name))
        if text is None:
            return None
        key = text.strip().casefold()
        got = f.values.get(key) if f.values else plain.get(key)
        if got is None:
            known = ", ".join(f.values or plain)
            raise ConfigError(f"{text!r} gives no {name}: the values that do are {known}",
                              file=path, field=at(name))
        return got

    prompt = _text(value("prompt"))
    if prompt is None or isinstance(value("prompt"), list | dict):
        raise ConfigError("the prompt is empty" if prompt is None else "the prompt is not text",
                          file=path, field=at("prompt"))
    expectation = chosen("expectation", EXPECTATIONS, _TRUTH)
    if expectation is None:
        raise ConfigError("no expectation (must_trigger, should_not_trigger, acceptable)",
                          file=path, field=at("expectation"))
    meta: dict[str, Any] = {"expectation": expectation}
    if "id" in fields:
        case_id = _text(value("id"))
        problem = "must not be empty" if case_id is None else name_problem(case_id)
        if problem is not None:
            raise ConfigError(f"invalid case id {shown(case_id or '')}: {problem}", file=path,
                              field=at("id"))
        meta = {"id": normalise(case_id or ""), **meta}
    if "rationale" in fields and (rationale := _text(value("rationale"))) is not None:
        meta["rationale"] = rationale
    if "tags" in fields and (tags := _tags(value("tags"))):
        meta["tags"] = tags
    if "difficulty" in fields:
        difficulty = chosen("difficulty", DIFFICULTIES, {d: d for d in DIFFICULTIES})
        if difficulty is not None:
            meta["difficulty"] = difficulty
    metadata = {name[9:].strip(): value(name) for name in fields
                if name.startswith("metadata.") and value(name) not in (None, "", [], {})}
    if metadata:
        meta["metadata"] = metadata
    return TableCase(path, where, meta, prompt.strip())


def _tags(value: Any) -> list[str]:
    items = value if isinstance(value, list) else re.split(r"[,;]", _text(value) or "")
    return [t for t in (normalise(str(x).strip()) for x in items if x is not None) if t]


def _check_ids(cases: list[TableCase], id_field: FieldMap | None, path: Path
               ) -> list[ConfigError]:
    """Two rows with one id, or ids that look alike (`ix.fs.names.skeleton`)."""
    problems: list[ConfigError] = []
    seen: dict[str, tuple[str, str]] = {}
    for c in cases:
        case_id = c.meta.get("id")
        if case_id is None:
            continue
        other = seen.get(skeleton(case_id))
        if other is not None:
            same = "the id of" if other[0] == case_id else f"an id that looks like {other[0]!r} in"
            field_ = f"{c.where}, {id_field.column}" if id_field and id_field.column else c.where
            problems.append(ConfigError(f"case id {shown(case_id)} is {same} {other[1]}",
                                        file=path, field=field_))
        else:
            seen[skeleton(case_id)] = (case_id, c.where)
    return problems


def _numbered(cases: list[TableCase]) -> list[TableCase]:
    """Ids for rows that have none: `must-001`, `not-001`, `edge-001`, in the table's order."""
    counts: dict[str, int] = {}
    out = []
    for c in cases:
        prefix = PREFIXES[c.meta["expectation"]]
        counts[prefix] = counts.get(prefix, 0) + 1
        out.append(TableCase(c.path, c.where, {"id": f"{prefix}-{counts[prefix]:03d}",
                                               **c.meta}, c.prompt))
    return out
