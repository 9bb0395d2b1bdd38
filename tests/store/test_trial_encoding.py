"""The trial line's encoder (`ix.store.trials.encode_line`, orjson) writes the same JSON values
the stdlib's encoder wrote — key order, text, floats — and refuses what it refused."""

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ix.store.trials import TrialWriter, encode_line

values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20)


def _stdlib(record: object) -> str:
    return json.dumps(record, ensure_ascii=False, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(record=st.dictionaries(st.text(), values, max_size=6))
def test_the_line_holds_the_values_the_stdlib_wrote(record):
    raw = encode_line(record)
    assert raw.endswith(b"\n") and raw.count(b"\n") == 1
    # the same values, keys in the same order (floats by their shortest repr, as Python's)
    assert json.loads(raw) == json.loads(_stdlib(record))
    assert list(json.loads(raw)) == list(record)
    assert raw.decode("utf-8")  # text as UTF-8, not escaped


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("where", ["top", "observation", "meta", "readings"])
def test_a_float_that_is_not_finite_is_refused_as_ever(tmp_path, bad, where):
    """orjson writes NaN as `null`; the line would say something else than the record: the
    writer refuses it (`ValueError`, as the stdlib's encoder did) and writes nothing."""
    record: dict = {"run_id": "r", "observation": None, "reading": {"score": None},
                    "error": None}
    if where == "top":
        record["duration_ms"] = bad
    elif where == "observation":
        record["observation"] = {"cost_usd": bad}
    elif where == "meta":
        record["observation"] = {"meta": {"x": None, "y": [bad]}}
    else:
        record["readings"] = [{"score": None}, {"score": bad}]
    with pytest.raises(ValueError):
        _stdlib(record)
    log = tmp_path / "trials.jsonl"
    with TrialWriter(log) as writer, pytest.raises(ValueError):
        writer.write(record)
    assert log.read_bytes() == b""


@pytest.mark.parametrize("record", [
    {"meta": {"big": 2**64 + 1}},          # beyond 64 bits: orjson refuses it
    {"metrics": {1: "a", None: 2}},        # keys that are not text: the stdlib's names
    {"content": "null", "meta": {"none": None}, "error": None},  # nulls that are no NaN
    {"nested": [[[[[[1]]]]]] * 3},
])
def test_what_orjson_does_not_write_is_written_as_the_stdlib_did(record):
    assert json.loads(encode_line(record)) == json.loads(_stdlib(record))


def test_a_lone_surrogate_is_refused_as_ever():
    with pytest.raises(ValueError):
        encode_line({"content": "\ud800"})
