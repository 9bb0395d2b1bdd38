"""Property-based fuzzing of what reads untrusted bytes: the YAML loader, the frontmatter parser,
and the two trial-log readers (`read_trials`, and the resume reader `read_state`).

Loaders: whatever the input, the only exception is `ConfigError` (which the CLI prints as one
line, exit 2), and data that round-trips through YAML comes back equal. Readers: every line ix
wrote reads back, every garbage line is skipped with a warning, and the two readers agree on
what a run recorded.
"""

import datetime
import json
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ix.domain.errors import ConfigError
from ix.domain.types import Reading
from ix.engine.resume import ERRORED, FAILED, PASSED, read_state
from ix.eval.models import EvalObservation
from ix.fs.frontmatter import read_frontmatter, split_frontmatter
from ix.fs.yamlio import ALIAS_BUDGET, dump_yaml, load_yaml_file, parse_yaml, read_text
from ix.store.trials import read_trials

#: Hundreds of generated inputs per test: left out by `scripts/test --fast`.
pytestmark = pytest.mark.slow

FUZZ = settings(max_examples=300, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])

# ------------------------------------------------------------------ YAML-ish text

# Pieces YAML gives meaning to, so that random text reaches past the tokenizer: anchors,
# aliases, tags, merge keys, flow and block collections, documents, directives, scalars.
YAML_PIECES = st.sampled_from([
    "a", "b", "name", "exp", "1", "-1", "0.5", "1e400", "true", "null", "~", "'q'", '"d\\n"',
    ": ", ":", "- ", "-", "? ", "[", "]", "{", "}", ",", "&x ", "*x", "&y ", "*y", "<<: ",
    "!!str ", "!!int ", "!!python/object:os.system ", "!custom ", "%YAML 1.1\n", "---\n",
    "...\n", "|\n", ">-\n", "#c", "\n", "\n  ", "\n    ", "\t", " ", "\ufeff", "\x00", "\x85",
    "é", "😀",
])
yaml_text = st.one_of(
    st.text(max_size=200),
    st.lists(YAML_PIECES, max_size=60).map("".join),
)


@FUZZ
@given(yaml_text)
def test_the_yaml_loader_raises_nothing_but_config_error(text: str) -> None:
    try:
        parse_yaml(text, file="fuzz.yaml")
    except ConfigError as exc:
        assert "fuzz.yaml" in str(exc)


@FUZZ
@given(st.binary(max_size=300))
def test_a_file_of_any_bytes_loads_or_is_a_config_error(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "fuzz.yaml"
    path.write_bytes(data)
    try:
        load_yaml_file(path)
    except ConfigError as exc:
        assert str(path) in str(exc)
    try:
        read_frontmatter(path)
    except ConfigError as exc:
        assert str(path) in str(exc)


# JSON-like data, as experiments hold: string keys, nested lists and mappings, scalars.
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20),
                    st.floats(allow_nan=False), st.text(max_size=30))
json_like = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(max_size=10), inner, max_size=4)),
    max_leaves=20)


@FUZZ
@given(json_like)
def test_yaml_written_by_ix_reads_back_equal(data) -> None:
    assert parse_yaml(dump_yaml(data), file="x.yaml") == data


@FUZZ
@given(st.integers(0, 14), st.integers(1, 9))
def test_aliases_expand_within_the_budget_or_are_refused(depth: int, fanout: int) -> None:
    """Chains of anchors and aliases (`l1: &l1 [*l0, *l0, ...]`): those within the budget load
    (and survive a walk of the data), the rest are a `ConfigError` naming the alias bomb, never
    a hang or a MemoryError."""
    lines = ["l0: &l0 [x]"]
    sizes = [2]  # values each level expands to: l0 is a list and its item
    for i in range(1, depth + 1):
        lines.append(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * fanout)}]")
        sizes.append(1 + fanout * sizes[-1])
    written = 1 + (depth + 1) + 2 + depth  # the root, the keys, l0 and its item, each list
    added = 1 + (depth + 1) + sum(sizes) - written
    try:
        data = parse_yaml("\n".join(lines) + "\n", file="a.yaml")
    except ConfigError as exc:
        assert added > ALIAS_BUDGET, exc
        assert "alias bomb" in str(exc) and f"{added:,} values" in str(exc)
        assert str(exc).startswith(f"a.yaml: l{depth}:")  # the field where it expands
        return
    assert added <= ALIAS_BUDGET
    assert json.loads(json.dumps(data)) == data


# ------------------------------------------------------------------ frontmatter

@FUZZ
@given(st.lists(st.one_of(st.sampled_from(["---", "--- ", "---\r", "expectation: must_trigger",
                                           "id: x", "[", "", "  ", "---x", "\x00"]),
                          st.text(max_size=20)), max_size=12),
       st.sampled_from(["\n", "\r\n", "\r"]))
def test_the_frontmatter_parser_raises_nothing_but_config_error(lines: list[str],
                                                                  eol: str) -> None:
    text = eol.join(lines)
    try:
        meta, body = split_frontmatter(text, file="case.md")
    except ConfigError as exc:
        assert "case.md" in str(exc)
        return
    assert isinstance(meta, dict) and isinstance(body, str)
    assert body in text


safe_keys = st.text(string.ascii_letters + "_", min_size=1, max_size=10)


@FUZZ
@given(st.dictionaries(safe_keys, json_like, min_size=1, max_size=5), st.text(max_size=200))
def test_frontmatter_written_out_splits_back_into_the_same_meta_and_body(meta, body) -> None:
    text = "---\n" + dump_yaml(meta) + "---\n" + body
    assert split_frontmatter(text, file="case.md") == (meta, body)


def test_a_block_parsed_once_reads_the_same_however_a_caller_changed_what_it_was_given(
        tmp_path) -> None:
    """Frontmatter is parsed once per process (`ix run` reads its case files twice): each
    read gets its own copy, and a file edited since reads as edited."""
    case = tmp_path / "case.md"
    case.write_text("---\ntags: [a]\nmetadata: {x: {y: [1]}}\nwhen: 2026-11-30\n---\nhi\n",
                    encoding="utf-8")
    first, _ = read_frontmatter(case)
    first["tags"].append("changed")
    first["metadata"]["x"]["y"].append(2)
    again, body = read_frontmatter(case)
    assert again == {"tags": ["a"], "metadata": {"x": {"y": [1]}},
                     "when": datetime.date(2026, 11, 30)} and body == "hi\n"
    case.write_text("---\ntags: [b]\n---\nhi\n", encoding="utf-8")
    assert read_frontmatter(case)[0] == {"tags": ["b"]}


# ------------------------------------------------------------------ trial logs

RUNS = ["20260101T000000Z-aaaaaa", "20260101T000001Z-bbbbbb"]
RUN = RUNS[0]
names = st.one_of(st.sampled_from(["a", "plain", "ünïcode", 'q"uote', "back\\slash", "x" * 300]),
                  st.text(max_size=12))


# Each strategy is built once: hypothesis validates a strategy on its first draw, and one
# built anew inside every composite draw cost the test half its time.
OBSERVATIONS = st.one_of(st.none(), st.builds(
    EvalObservation,
    content=st.text(max_size=40) | st.just("c" * 2500),
    duration_ms=st.integers(0, 10**6), tokens_input=st.integers(0, 10**6),
    tokens_output=st.integers(0, 10**6),
    cost_usd=st.floats(0, 10, allow_nan=False) | st.just(0.0)))
READINGS = st.one_of(st.none(), st.builds(
    Reading, sensor_name=st.sampled_from(["activation", "matcher", 'we"ird']),
    passed=st.booleans(), score=st.none() | st.floats(0, 1), details=st.text(max_size=20)))
ERRORS = st.one_of(st.none(), st.fixed_dictionaries(
    {"kind": st.sampled_from(["timeout", "runtime_error"]), "message": st.text(max_size=30)}))


@st.composite
def records(draw) -> dict:
    """A trial record shaped as ix writes it (engine/pipeline.py, key for key)."""
    observation = draw(OBSERVATIONS)
    reading = draw(READINGS)
    error = draw(ERRORS)
    record = {
        "run_id": draw(RUN_IDS),
        "experiment": draw(EXPERIMENTS),
        "subject": draw(names),
        "probe_id": draw(names),
        "trial": draw(TRIALS),
        "seed": draw(SEEDS),
        "attempt": draw(ATTEMPTS),
        "expectation": "must_trigger",
        "started_at": "2026-01-01T00:00:00.000Z",
        "duration_ms": draw(DURATIONS),
        "observation": (observation.model_dump(mode="json", exclude_none=True)
                        if observation is not None else None),
        "reading": reading.model_dump(mode="json") if reading is not None else None,
        "error": error,
    }
    if reading is not None and draw(st.booleans()):
        record["readings"] = [record["reading"], record["reading"]]
    if draw(st.booleans()):
        record["trace"] = "results/runs/x/traces/t.jsonl.gz"
    return record


RUN_IDS, EXPERIMENTS = st.sampled_from(RUNS), st.sampled_from(["exp", 'ex"p'])
TRIALS, SEEDS, ATTEMPTS = st.integers(0, 6), st.integers(0, 2**63 - 1), st.integers(0, 4)
DURATIONS = st.floats(0, 1e6, allow_nan=False)
RECORDS = records()


_LINE = json.JSONEncoder(ensure_ascii=False, allow_nan=False)  # as TrialWriter writes


def line_of(record: dict) -> bytes:
    return (_LINE.encode(record) + "\n").encode("utf-8")


def garbage(draw, record_line: bytes) -> bytes:
    """A line that is not a JSON object: cut short, random bytes, or another JSON value; or a
    record no reader can decode: a number of more than 4,300 digits (Python will not convert
    it) or a value nested deeper than the decoder goes, each where the resume reader's fast
    paths do not look (issue 14, item 7)."""
    kind = draw(GARBAGE_KINDS)
    if kind == "huge":
        digits = b"9" * draw(HUGE_DIGITS)
        return record_line.replace(b'"seed": ', b'"seed": ' + digits, 1)
    if kind == "deep":
        depth = draw(DEEP)  # past any recursion limit
        return record_line.replace(b'"expectation": "must_trigger"', b'"expectation": '
                                   b'"must_trigger", "x": ' + b"[" * depth + b"]" * depth, 1)
    if kind == "torn":
        return record_line[:draw(st.integers(1, len(record_line) - 2))] + b"\n"
    if kind == "bytes":  # '#' first: never JSON, whatever encoding json.loads detects
        return b"#" + draw(BYTES_80).replace(b"\n", b"") + b"\n"
    if kind == "value":
        return draw(VALUES) + b"\n"
    return b'{"run_id": "' + RUN.encode() + b'", ' + draw(BYTES_40).replace(
        b"\n", b"") + b"\n"


GARBAGE_KINDS = st.sampled_from(["torn", "bytes", "value", "marker", "huge", "deep"])
HUGE_DIGITS, DEEP = st.sampled_from([4301, 5000, 20_000]), st.sampled_from([20_000, 50_000])
BYTES_80, BYTES_40 = st.binary(max_size=80), st.binary(max_size=40)
VALUES = st.sampled_from([b"[1, 2]", b'"text"', b"42", b"null", b"{"])
LINE_COUNTS, BLANKS = st.integers(0, 25), st.sampled_from([b"\n", b"   \n", b"\r\n"])
WHATS = st.sampled_from(["record"] * 4 + ["garbage", "blank"])


@st.composite
def logs(draw) -> tuple[list[bytes], list[dict], int]:
    """Lines of a trial log: records, garbage and blank lines, maybe a torn last line.
    Returns (lines, the records among them in order, how many garbage lines)."""
    lines, good, bad = [], [], 0
    for _ in range(draw(LINE_COUNTS)):
        record = draw(RECORDS)
        what = draw(WHATS)
        if what == "record":
            lines.append(line_of(record))
            good.append(record)
        elif what == "garbage":
            lines.append(garbage(draw, line_of(record)))
            bad += 1
        else:
            lines.append(draw(BLANKS))
    if draw(st.booleans()):  # a crash mid-write: the last line has no newline
        cut = line_of(draw(RECORDS))
        lines.append(cut[:draw(st.integers(1, len(cut) - 2))])
        bad += 1
    return lines, good, bad


def expected_state(recs: list[dict], run_id: str) -> tuple[dict, dict, int]:
    """What a resume must know, from the decoded records: the latest attempt (the later line on
    a tie) of each trial, the usage per subject (summed in log order), the count of lines."""
    latest: dict = {}
    usage: dict = {}
    count = 0
    for r in recs:
        if r.get("run_id") != run_id:
            continue
        count += 1
        key = (r["subject"], r["probe_id"], r["trial"])
        code = ERRORED if r.get("error") else PASSED if (r.get("reading") or {}).get(
            "passed") else FAILED
        if key not in latest or r["attempt"] >= latest[key][0]:
            latest[key] = (r["attempt"], code)
        spent = usage.setdefault(r["subject"], [0, 0, 0.0])
        observation = r.get("observation") or {}
        spent[0] += observation.get("tokens_input", 0)
        spent[1] += observation.get("tokens_output", 0)
        spent[2] += observation.get("cost_usd", 0.0)
    return latest, usage, count


def state_of(state) -> tuple[dict, dict, int]:
    return ({(s, p, t): (state.attempt(s, p, t), code) for s, p, t, code in state.outcomes()},
            state.usage, state.lines)


@pytest.mark.timeout(900)  # 400 examples: ~22 s alone, 2-3x that with four workers
@settings(max_examples=400, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(logs(), st.sampled_from([64, 97, 1024, 1 << 22]))
def test_the_trial_readers_read_every_record_skip_garbage_and_agree(tmp_path: Path, log,
                                                                    block: int) -> None:
    lines, good, bad = log
    path = tmp_path / "trials.jsonl"
    path.write_bytes(b"".join(lines))

    warned: list[str] = []
    read = list(read_trials(path, warned.append))
    assert read == good  # every record, in order, equal; nothing else
    assert len(warned) == bad and all(": skipped " in w for w in warned)

    for run_id in RUNS:
        resume_warned: list[str] = []
        state = state_of(read_state(path, run_id, resume_warned.append, block=block))
        assert state == expected_state(good, run_id)  # agrees with read_trials
        # the resume reader warns only of lines that may be this run's, at their numbers
        assert set(resume_warned) <= set(warned)


@FUZZ
@given(st.binary(max_size=2000), st.sampled_from([64, 1024, 1 << 22]))
def test_the_trial_readers_survive_any_bytes(tmp_path: Path, data: bytes, block: int) -> None:
    path = tmp_path / "trials.jsonl"
    path.write_bytes(data)
    read = list(read_trials(path, lambda _: None))
    assert all(isinstance(r, dict) for r in read)
    state = read_state(path, RUN, lambda _: None, block=block)
    assume(all(isinstance(r.get("trial"), int) for r in read if r.get("run_id") == RUN))
    assert state.lines <= len(read)


@pytest.mark.parametrize("size", [0, 1, 9, 10, 11, 4096])
def test_a_text_file_is_read_whole_up_to_the_limit_and_refused_beyond(tmp_path: Path,
                                                                      size: int) -> None:
    """`read_text` reads as much as the file holds (its size bounds the read), never more
    than `max_bytes`."""
    path = tmp_path / "case.md"
    path.write_text("x" * size, encoding="utf-8")
    limit = 10 if size <= 11 else 8192
    if size > limit:
        with pytest.raises(ConfigError, match="too large"):
            read_text(path, max_bytes=limit)
    else:
        assert read_text(path, max_bytes=limit) == "x" * size


def test_a_file_whose_size_says_nothing_is_read_whole() -> None:
    """A file of the kernel's (`st_size` 0) is read to its end, not cut at its size."""
    text = read_text(Path("/proc/self/status"))
    assert text.startswith("Name:") and "VmPeak" in text
