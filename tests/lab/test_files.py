"""`ix.fs.files.indented`: the stdlib's indented JSON, byte for byte, faster."""

import enum
import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ix.fs.files import compact, dumps, indented


class Colour(enum.IntEnum):
    RED = 1


class Name(str):
    pass


DOCUMENTS: list[Any] = [
    None, True, False, 0, -1, 2**70, 0.1 + 0.2, 1e-07, 1e22, -0.0, 1.0, "", "plain",
    "quote \" backslash \\ newline \n tab \t nul \x00 bell \x07", "é 日本 🙂 \u2028",
    [], {}, (), [[]], {"a": {}}, {"a": []}, [1, [2, [3, {}]]], (1, (2,)),
    {"k": None, "t": True, "f": False, "i": 3, "x": 2.5, "s": "v", "l": [1, "2", None],
     "d": {"nested": {"deeper": [{"a": 1}, {}]}}, "é": "ü", "": ""},
    [{"case": f"c-{i}", "rate": i / 7, "n": i, "ok": i % 2 == 0} for i in range(50)],
    # the slow path's: subclasses, keys that are not str, a value for `default`
    Colour.RED, {"colour": Colour.RED}, Name("n"), {Name("k"): Name("v")},
    {1: "one", 2.5: "x", None: 0, False: 1}, [Colour.RED, Name("x")],
]


@pytest.mark.parametrize("document", DOCUMENTS, ids=range(len(DOCUMENTS)))
def test_indented_is_the_stdlibs_text_byte_for_byte(document: Any) -> None:
    assert indented(document) == json.dumps(document, ensure_ascii=False, indent=2,
                                            allow_nan=False)
    assert dumps(document) == json.dumps(document, ensure_ascii=False, indent=2,
                                         allow_nan=False) + "\n"
    assert indented(document, default=str, allow_nan=True) == json.dumps(
        document, ensure_ascii=False, indent=2, default=str)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, {"x": [1, math.nan]}])
def test_a_nan_is_written_null_as_compact_writes_it(bad: Any) -> None:
    """JSON has no NaN: the indented text holds what `compact` holds (an undefined figure)."""
    assert json.loads(dumps(bad)) == json.loads(compact(bad))
    assert "NaN" not in indented(bad, allow_nan=True) and "Infinity" not in dumps(bad)


def test_a_nan_the_stdlib_writes_is_refused_as_it_refuses_it_or_written_when_allowed() -> None:
    bad = {Name("k"): math.nan}  # a subclass: the whole document is the stdlib's
    with pytest.raises(ValueError, match="Out of range float values"):
        dumps(bad)
    assert indented(bad, allow_nan=True) == json.dumps(bad, ensure_ascii=False, indent=2)


#: the floats orjson spells otherwise (exponents -5 to -9), and their neighbours
SMALL = [9.9e-05, 1e-05, 1.5e-07, 1e-06, 2.6e-05, 1e-09, 9.99e-10, 1e-10, 0.0001, 0.00012,
         -1e-05, -3.25e-08, 5e-324, 1e-300, 1e16, 1.5e16, 1e22, 123456.75]


@pytest.mark.parametrize("value", SMALL)
def test_a_small_float_is_spelt_as_python_spells_it_wherever_it_stands(value: float) -> None:
    document = [value, {"k": value, "l": [value, value], "q\\\"": value}, {"": value}]
    assert indented(document) == json.dumps(document, ensure_ascii=False, indent=2)
    assert indented(value) == json.dumps(value)


def test_a_number_inside_a_string_is_left_as_written() -> None:
    document = ["0.00001", "1.5e-7", 'x": 0.00001', {'a": 1e-7': "9.9e-5,", "b": 1e-07}]
    assert indented(document) == json.dumps(document, ensure_ascii=False, indent=2)


@settings(max_examples=400, deadline=None)
@given(st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**64 - 1) | st.text()
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20))
def test_any_plain_document_is_the_stdlibs_text(document: Any) -> None:
    assert indented(document) == json.dumps(document, ensure_ascii=False, indent=2)


def test_an_object_goes_through_default_or_is_refused_like_the_stdlib() -> None:
    document = {"when": object, "set": {1}}
    assert indented(document, default=str) == json.dumps(document, ensure_ascii=False,
                                                         indent=2, default=str)
    with pytest.raises(TypeError, match="not JSON serializable"):
        dumps(document)


def test_a_cycle_is_refused_like_the_stdlib() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(ValueError, match="Circular reference"):
        dumps(cycle)


PLAIN = [d for d in DOCUMENTS if d is not Colour.RED and not isinstance(d, Name)]


@pytest.mark.parametrize("document", [*PLAIN, 2**70, {2**70: [2**70]}],
                         ids=range(len(PLAIN) + 2))
def test_compact_json_reads_back_as_the_indented_text_does(document: Any) -> None:
    """`compact` (a cache's JSON, by orjson; what it refuses by the stdlib) holds the same
    values as the text people read."""
    text = compact(document)
    assert "\n" not in text.strip("\n").replace("\\n", "")
    assert json.loads(text) == json.loads(json.dumps(document, ensure_ascii=False))


def test_compact_json_writes_a_figure_that_is_not_finite_as_null() -> None:
    assert json.loads(compact({"x": [1.5, math.nan, math.inf]})) == {"x": [1.5, None, None]}
