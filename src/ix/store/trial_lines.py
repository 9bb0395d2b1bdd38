"""Which lines of a trial log are trial records: one rule for every reader that counts trials.

The resume reader (`ix.store.trial_scan`) and the query index (`ix.query.index_parts`) must count
the same lines, or `ix results` lists trials a resume does not know of (a garbage log once
gave 298 phantom rows). A line is a trial record when it is a JSON object whose

- `run_id`, `subject` and `probe_id` are strings;
- `trial` is an integer, 0 <= trial < 2**31; `attempt` is absent, null or such an integer;
- `observation` is absent, null or an object whose `tokens_input` and `tokens_output` are
  absent or integers 0 <= n < 2**63 and whose `cost_usd` is absent or a finite number;
- `reading` is absent, null or an object whose `passed` is absent, null or a boolean;
- `error` is absent, null or an object whose `kind` is a string (the trial errored).

Of a key written twice the first value counts, as DuckDB reads it. `trial_line` applies the
rule in Python (to the lines a fast reader does not read on its own); `parsed_select` applies
it in DuckDB to the columns of `read_json(..., columns = JSON_COLUMNS)`, and `typed_select`
to those of `read_json(..., columns = TYPED_COLUMNS)`, ~4× cheaper, for every line but those
its `suspect` column flags (which `parsed_select` then reads).
tests/query/test_index_hardening.py holds them to the same answer on every shape of line.
"""

import json
import math
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, NotRequired, TypedDict, TypeVar

if TYPE_CHECKING:
    import numpy as np

MAX_TRIAL = (1 << 31) - 1   # trial and attempt numbers: a DuckDB INTEGER
MAX_COUNT = (1 << 63) - 1   # token counts: a DuckDB BIGINT
LONG_LINE = 1000  # bytes: a shorter line nests too little, and has too few digits, to not decode
_NESTED = LONG_LINE // 2  # "[" and "{" in a line that may nest deeper than Python decodes
_DIGITS = bytes(48 if 48 <= i <= 57 else 32 for i in range(256))  # digits to "0", others " "


class ErrorRecord(TypedDict):
    """A trial line's `error`: why the trial has no verdict."""

    kind: str
    message: str


class TrialRecord(TypedDict):
    """One line of `trials.jsonl` as the engine writes it (DESIGN.md §3), keys in this order:
    one `write` of `ix.store.trials.encode_line(record)` (compact JSON, text as UTF-8) plus a
    newline, the bytes the fast reader (`ix.store.trial_scan`) reads — as it reads the
    stdlib's `", "` / `": "` spacing of older logs. tests/engine/test_trial_line_roundtrip.py
    and tests/store/test_trial_scan.py write every kind of it and read it back."""

    run_id: str
    experiment: str
    subject: str
    probe_id: str
    trial: int
    seed: int
    attempt: int
    node: NotRequired[dict[str, str]]  # `--executor ray`: the node that ran it (id, ip, host)
    expectation: str
    started_at: str        # ISO-8601 UTC, milliseconds, `Z`
    duration_ms: float
    observation: dict[str, Any] | None  # `EvalObservation` dumped without its None fields
    reading: dict[str, Any] | None      # the first sensor's `Reading`
    error: ErrorRecord | None
    readings: NotRequired[list[dict[str, Any]]]  # every sensor's, when several ran
    trace: NotRequired[str]  # the gzipped transcript, relative to the experiment's parent
    load: NotRequired[dict[str, Any]]  # a `load:` run's request: at_s, late_ms, warmup
    outputs: NotRequired[list[dict[str, Any]]]  # a workspace's files the subject made (§10)


class LineFacts(NamedTuple):
    """What a reader needs of one trial record."""

    run_id: str
    subject: str
    probe_id: str
    trial: int
    attempt: int
    errored: bool
    passed: bool
    tokens_input: int
    tokens_output: int
    cost_usd: float


def _first_wins(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        out.setdefault(key, value)
    return out


_DECODER = json.JSONDecoder(object_pairs_hook=_first_wins)


def decode_line(raw: bytes | str) -> Any:
    """The JSON value of one line, or None when it holds none: not JSON, not UTF-8, a lone
    surrogate escape (which DuckDB refuses), a number longer than Python converts (4,300
    digits) or nesting deeper than it decodes (which every reader skips as corrupt)."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        value = _DECODER.decode(text)
        if "\\u" in text:  # "\ud800" alone decodes, but is no text: DuckDB refuses the line
            json.dumps(value, ensure_ascii=False).encode("utf-8")
    except (ValueError, RecursionError):  # JSONDecodeError, UnicodeError: ValueErrors
        return None
    return value


def might_not_decode(raw: bytes) -> bool:
    """Whether `decode_line` might refuse a line that DuckDB reads: one nested deeper than
    Python decodes, or holding a number longer than it converts. Cheap: a reader that does
    not decode every line decodes these (`decode_line`) to know."""
    if len(raw) < LONG_LINE:
        return False
    if raw.count(b"[") + raw.count(b"{") >= _NESTED:
        return True
    digits = sys.get_int_max_str_digits()
    return 0 < digits < len(raw) and b"0" * (digits + 1) in raw.translate(_DIGITS)


def suspects(data: "np.ndarray", starts: "np.ndarray", ends: "np.ndarray") -> "np.ndarray":
    """`might_not_decode` for many lines at once: a mask over the lines [starts, ends) (in
    order, apart) of the bytes `data`, in a few passes over their bytes (a log of real
    agents' answers has millions of lines of kilobytes; decoding each to know costs seconds)."""
    import numpy as np

    out = np.zeros(len(starts), bool)
    long = np.flatnonzero(ends - starts >= LONG_LINE)
    if not len(long):
        return out
    opening = np.flatnonzero((data == 91) | (data == 123))  # "[" "{": a few a line, mostly
    counts = (np.searchsorted(opening, ends[long])
              - np.searchsorted(opening, starts[long]))
    out[long[counts >= _NESTED]] = True
    limit = sys.get_int_max_str_digits()
    if limit > 0 and (ends - starts).max() > limit:  # a shorter line holds no such number
        digit = ((data >= 48) & (data <= 57)).view(np.int8)
        edges = np.diff(digit, prepend=np.int8(0), append=np.int8(0))
        first, after = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        begins = first[after - first > limit]  # where each digit run too long begins
        at = np.searchsorted(ends, begins, side="right")  # the line it is in, if any
        inside = at < len(ends)
        at, begins = at[inside], begins[inside]
        out[at[starts[at] <= begins]] = True
    return out


def _index(value: Any) -> bool:
    return type(value) is int and 0 <= value <= MAX_TRIAL


def _count(value: Any) -> bool:
    return type(value) is int and 0 <= value <= MAX_COUNT


def _object(value: Any) -> bool:
    return value is None or isinstance(value, dict)


def trial_line(record: Any) -> LineFacts | None:
    """The trial record `record` (a decoded line) holds, or None when it is not one."""
    if not isinstance(record, dict):
        return None
    run_id, subject, probe_id = record.get("run_id"), record.get("subject"), record.get("probe_id")
    if not (isinstance(run_id, str) and isinstance(subject, str) and isinstance(probe_id, str)):
        return None
    trial, attempt = record.get("trial"), record.get("attempt")
    if not isinstance(trial, int) or not _index(trial) or not (attempt is None
                                                              or _index(attempt)):
        return None
    observation, reading, error = (record.get(k) for k in ("observation", "reading", "error"))
    if not (_object(observation) and _object(reading) and _object(error)):
        return None
    observation, reading = observation or {}, reading or {}
    if any(k in observation and not _count(observation[k])
           for k in ("tokens_input", "tokens_output")):
        return None
    cost = observation.get("cost_usd", 0.0)
    if not (type(cost) in (int, float) and math.isfinite(cost)):
        return None
    passed = reading.get("passed")
    if passed is not None and type(passed) is not bool:
        return None
    if error is not None and not isinstance(error.get("kind"), str):
        return None
    return LineFacts(run_id, subject, probe_id, trial, attempt or 0, error is not None,
                     passed is True, observation.get("tokens_input", 0),
                     observation.get("tokens_output", 0), float(cost))


# --------------------------------------------------------------------------- the same in SQL

#: The keys `read_json` reads: those the rule checks as raw JSON (`json_type` tells a string
#: from a number), the rest typed (a value of another type is read as null).
JSON_COLUMNS = (
    "{experiment: 'VARCHAR', run_id: 'JSON', subject: 'JSON', probe_id: 'JSON', "
    "trial: 'JSON', seed: 'BIGINT', attempt: 'JSON', expectation: 'VARCHAR', "
    "started_at: 'VARCHAR', duration_ms: 'DOUBLE', observation: 'JSON', reading: 'JSON', "
    "error: 'JSON'}"
)

#: The same keys, the three objects read as structs of the keys the rule and the index read,
#: each kept as raw JSON: no object is written out as text and parsed again (what costs
#: `JSON_COLUMNS` its time). A struct cannot tell an object from a value of another type (a
#: string, a list: every key NULL), nor a key given as null from one absent (NULL both): a
#: line where that could matter is a `suspect` of `typed_select`. ix's own lines never are:
#: every observation has its token counts and cost, every reading its sensor.
TYPED_COLUMNS = (
    "{experiment: 'VARCHAR', run_id: 'JSON', subject: 'JSON', probe_id: 'JSON', "
    "trial: 'JSON', seed: 'BIGINT', attempt: 'JSON', expectation: 'VARCHAR', "
    "started_at: 'VARCHAR', duration_ms: 'DOUBLE', "
    "observation: 'STRUCT(tokens_input JSON, tokens_output JSON, cost_usd JSON, "
    "duration_ms JSON, tool_calls STRUCT(name JSON, input STRUCT(skill JSON))[])', "
    "reading: 'STRUCT(passed JSON, score JSON, sensor_name JSON)', "
    "error: 'STRUCT(kind JSON, message JSON)'}"
)

# The rule reads each value as the JSON text read_json and json_extract write (minified: a
# string starts with `"`, an object with `{`, null is `null`, a boolean `true` or `false`) and
# parses a value only where its text does not tell enough (a number: integer or not, in range);
# each such parse once per value (`_TYPES`), since every parse of a JSON value costs.


def _str(value: str) -> str:
    return f"starts_with({value}, '\"')"


def _sql_object(column: str) -> str:
    """Absent, null or an object."""
    return f"({column} IS NULL OR {column} = 'null' OR starts_with({column}, '{{'))"


#: The JSON type of each number the rule reads but integers (`t_` and the value's name),
#: parsed once.
_TYPES = {"o3": "o[3]", "score": "rd[2]"}


def _int(value: str) -> str:
    """The integer `value` holds, or NULL: not one, or not a BIGINT. Unparsed: the text of a
    JSON integer is digits after an optional "-", which a cast reads; of any other value a cast
    fails, but for a number with a fraction or an exponent (`5.0`, `1e2`)."""
    return (f"CASE WHEN NOT (contains({value}, '.') OR contains({value}, 'e') "
            f"OR contains({value}, 'E')) THEN try_cast(CAST({value} AS VARCHAR) AS BIGINT) END")


def _number(value: str, kind: str, sql_type: str) -> str:
    return (f"CASE WHEN {kind} IN ('UBIGINT', 'BIGINT', 'DOUBLE') "
            f"THEN try_cast({value} AS {sql_type}) END")


def _valid(typed: bool) -> str:
    """The rule over the columns `_select` derives: from `JSON_COLUMNS`, or (`typed`) from
    `TYPED_COLUMNS` on a line that is no `suspect` (its observation and reading are absent,
    null or objects; an error of another type has no `kind`)."""
    objects = [] if typed else [_sql_object("observation"), _sql_object("reading"),
                                _sql_object("error")]
    error = (f"(error IS NULL OR {_str('er[1]')})" if typed else
             f"(error IS NULL OR error = 'null' OR {_str('er[1]')})")
    return " AND ".join([
        _str("run_id"), _str("subject"), _str("probe_id"),
        f"i_trial BETWEEN 0 AND {MAX_TRIAL}",
        f"(attempt IS NULL OR attempt = 'null' OR i_attempt BETWEEN 0 AND {MAX_TRIAL})",
        *objects,
        # an absent key reads as SQL NULL; a key given as null as 'null', which is no count
        "(o[1] IS NULL OR i_o1 >= 0)", "(o[2] IS NULL OR i_o2 >= 0)",
        "(o[3] IS NULL OR isfinite(cost))",
        "(rd[1] IS NULL OR rd[1] IN ('null', 'true', 'false'))",
        error,
    ])


#: `input.skill` of every Skill call of the observation, in order (`invoked_skills` in SQL):
#: a tool call that is not an object, or whose skill is not a string, names none.
def _typed_skill_calls(tool_calls: str) -> str:
    """`_skill_calls` of `TYPED_COLUMNS`' tool calls: a list of structs (a tool call that is
    no object has no name; a list that is none is NULL)."""
    return (f"[{_text('t.input.skill')} FOR t IN coalesce({tool_calls}, []) "
            f"IF {_text('t.name')} = 'Skill' AND {_str('t.input.skill')}]")


def _text(value: str) -> str:
    """The text of the JSON string `value`, unescaped; NULL if it holds no string. Without a
    backslash its text has no quote but the two around it."""
    return (f"CASE WHEN {_str(value)} THEN CASE WHEN contains({value}, '\\') "
            f"THEN json_extract_string({value}, '$') ELSE replace({value}, '\"', '') END END")


def _skill_calls(tool_calls: str) -> str:
    return ("[json_extract_string(t, '$.input.skill') FOR t IN coalesce(try_cast("
            f"{tool_calls} AS JSON[]), []) IF starts_with(t, '{{') "
            "AND json_extract_string(t, '$.name') = 'Skill' "
            "AND json_type(t, '$.input.skill') = 'VARCHAR']")


def invoked_skills(observation: Any) -> list[str]:
    """The skills a trial invoked: `input.skill` of each Skill call of its observation, each
    once, in the order first called (`plugin:skill` kept as written). The index's `invoked`
    column holds the same list; its first item, `first_invoked`, is the skill that took the
    prompt."""
    calls = observation.get("tool_calls") if isinstance(observation, dict) else None
    found: list[str] = []
    for call in calls if isinstance(calls, list) else ():
        if isinstance(call, dict) and call.get("name") == "Skill":
            skill = call.get("input", {}).get("skill") if isinstance(call.get("input"),
                                                                       dict) else None
            if isinstance(skill, str) and skill not in found:
                found.append(skill)
    return found


#: The trial a line is an attempt of: (run_id, subject, probe_id, trial).
TrialKey = tuple[str, str, str, int]
_Line = TypeVar("_Line", bound=Mapping[str, Any])


def trial_key(record: Mapping[str, Any]) -> TrialKey:
    """(run_id, subject, probe_id, trial) of a trial line: the attempts of one trial share it."""
    return (str(record.get("run_id")), str(record.get("subject")),
            str(record.get("probe_id")), int(record.get("trial") or 0))


def supersedes(line: Mapping[str, Any], standing_line: Mapping[str, Any]) -> bool:
    """Whether `line`, read after `standing_line` (an attempt of the same trial), stands in its
    place: its attempt is no lower (DESIGN.md §3: the latest attempt stands; of two lines of
    one attempt, the later)."""
    return int(line.get("attempt") or 0) >= int(standing_line.get("attempt") or 0)


def standing(lines: Iterable[_Line],
             superseded: Callable[[_Line], None] | None = None) -> dict[TrialKey, _Line]:
    """The line that stands of each trial (`trial_key`) of `lines`, in the log's order:
    "latest attempt wins", the rule aggregation counts by. Keys in the order of each trial's
    first line; `superseded` hears every line that a line of the same trial put out of standing
    (or that came after and stood no chance). The query index's SQL (`ix.query.index_parts.
    write_superseded`) and the resume reader (`ix.store.trial_scan`) choose the same lines:
    tests/store/test_standing.py holds them to it."""
    out: dict[TrialKey, _Line] = {}
    for line in lines:
        key = trial_key(line)
        old = out.get(key)
        if old is not None:
            if not supersedes(line, old):
                if superseded is not None:
                    superseded(line)
                continue
            if superseded is not None:
                superseded(old)
        out[key] = line
    return out


#: A line `typed_select` may read otherwise than `parsed_select`: an observation lacking a
#: token count or its cost (absent, null, or no object at all), a reading lacking all it is read
#: for (`{}`, or no object). An error's type needs no check: without a string `kind` the line is
#: junk either way.
_SUSPECT = (
    "(observation IS NOT NULL AND (observation.tokens_input IS NULL "
    "OR observation.tokens_output IS NULL OR observation.cost_usd IS NULL)) "
    "OR (reading IS NOT NULL AND reading.passed IS NULL AND reading.score IS NULL "
    "AND reading.sensor_name IS NULL)"
)


def parsed_select(source: str, name: str, seq: int) -> str:
    """A SELECT of one row per line of `source` (a `read_json(..., columns = JSON_COLUMNS)
    WITH ORDINALITY`): the part's columns and `junk`, true for a line that is no trial record.
    `name` is the experiment's folder, quoted; `seq` the part's sequence number."""
    return _select(source, name, seq, typed=False)


def typed_select(source: str, name: str, seq: int) -> str:
    """`parsed_select` of a `read_json(..., columns = TYPED_COLUMNS) WITH ORDINALITY`, plus
    `suspect`: true for a line whose columns may differ from `parsed_select`'s (none of ix's
    own), to be read by it instead; every other line's columns and `junk` are the same."""
    return _select(source, name, seq, typed=True)


#: A line's `started_at` as a UTC TIMESTAMP. ix writes UTC with a `Z`, which the plain cast
#: reads as it is (a fifth of the cost of reading it with a time zone, which is a tenth of
#: the index's build); any other offset is read with its time zone.
STARTED_AT = ("CASE WHEN ends_with(started_at, 'Z') THEN try_cast(started_at AS TIMESTAMP) "
              "ELSE try_cast(started_at AS TIMESTAMPTZ) AT TIME ZONE 'UTC' END")


def _select(source: str, name: str, seq: int, typed: bool) -> str:
    text = _text
    if typed:
        nested = ("[observation.tokens_input, observation.tokens_output, observation.cost_usd, "
                  "observation.duration_ms] AS o, "
                  "[reading.passed, reading.score, reading.sensor_name] AS rd, "
                  "[error.kind, error.message] AS er, "
                  f"{_typed_skill_calls('observation.tool_calls')} AS sk")
        suspect = f",\n            coalesce({_SUSPECT}, false) AS suspect"
    else:
        nested = ("json_extract(observation, ['$.tokens_input', '$.tokens_output', "
                  "'$.cost_usd', '$.duration_ms']) AS o, "
                  "json_extract(reading, ['$.passed', '$.score', '$.sensor_name']) AS rd, "
                  "json_extract(error, ['$.kind', '$.message']) AS er, "
                  + _skill_calls("json_extract(observation, '$.tool_calls')") + " AS sk")
        suspect = ""
    kinds = ", ".join(f"json_type({v}) AS t_{k}" for k, v in _TYPES.items())

    return f"""
        WITH raw AS (
            SELECT *, {nested} FROM {source}),
        kinds AS (SELECT *, {kinds} FROM raw),
        num AS (
            SELECT *, {_int('trial')} AS i_trial, {_int('attempt')} AS i_attempt,
                {_int('o[1]')} AS i_o1, {_int('o[2]')} AS i_o2,
                {_number('o[3]', 't_o3', 'DOUBLE')} AS cost,
                {_number('rd[2]', 't_score', 'DOUBLE')} AS score
            FROM kinds)
        SELECT {name} AS source, {seq}::INTEGER AS part, ordinality AS line,
            coalesce(experiment, {name}) AS experiment, {text('run_id')} AS run_id,
            {text('subject')} AS subject, {text('probe_id')} AS probe_id,
            try_cast(i_trial AS INTEGER) AS trial, seed,
            coalesce(try_cast(i_attempt AS INTEGER), 0) AS attempt, expectation,
            CASE rd[1] WHEN 'true' THEN true WHEN 'false' THEN false END AS passed, score,
            {text('rd[3]')} AS sensor, {text('er[1]')} AS error,
            {text('er[2]')} AS error_message,
            i_o1 AS tokens_input, i_o2 AS tokens_output,
            CASE WHEN o[1] IS NOT NULL OR o[2] IS NOT NULL
                 THEN try_cast(coalesce(i_o1::HUGEINT, 0) + coalesce(i_o2::HUGEINT, 0)
                               AS BIGINT)
                 END AS tokens,
            cost,
            coalesce(duration_ms, {_number('o[4]', 'json_type(o[4])', 'DOUBLE')}) AS duration,
            {STARTED_AT} AS started_at,
            list_filter(sk, lambda x, i: list_position(sk, x) = i) AS invoked,
            sk[1] AS first_invoked,
            NOT coalesce({_valid(typed)}, false) AS junk{suspect}
        FROM num
    """
