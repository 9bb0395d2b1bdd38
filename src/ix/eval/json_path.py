"""JSON paths (`$.a.b[0]`) and JSON equality, for the sensors that read structured values
(`matcher`'s `json_path`, `tool_input`), and the short form of a value in a reading."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["JsonPath", "json_equal", "parse_json_path", "resolve_json_path", "short"]


def short(text: str, limit: int = 80) -> str:
    shown = repr(text) if not text.startswith(("{", "[", '"')) else text
    return shown if len(shown) <= limit else shown[:limit] + "…"


#: A parsed JSON path: keys (str) and list indices (int).
JsonPath = tuple[str | int, ...]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")
_INDEX = re.compile(r"\[(-?\d+)\]")
_QUOTED = re.compile(r"""\[(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)')\]""")


def parse_json_path(text: str) -> JsonPath:
    """`a.b[0].c`, `$.a`, `[1].x`, `a["odd key"]`: keys and indices; anything else is an error.

    A name is letters, digits, `_` and `-` (not first); other keys go in brackets and quotes.
    """
    src = text.strip()
    pos = 0
    if src.startswith("$"):
        pos = 1
        if pos == len(src):
            return ()
        if src[pos] == ".":
            pos += 1
    parts: list[str | int] = []
    expect_name = pos == 0 or src[pos - 1] == "."
    while pos < len(src):
        if expect_name:
            m = _NAME.match(src, pos)
            if m is None:
                if src[pos] == "[" and (pos == 0 or src[:pos] == "$"):
                    expect_name = False
                    continue
                raise ValueError(f"expected a key name at position {pos} of {text!r}")
            parts.append(m.group(0))
            pos = m.end()
            expect_name = False
            continue
        ch = src[pos]
        if ch == ".":
            pos += 1
            expect_name = True
            if pos == len(src):
                raise ValueError(f"{text!r} ends with '.'")
            continue
        m = _INDEX.match(src, pos)
        if m is not None:
            parts.append(int(m.group(1)))
            pos = m.end()
            continue
        m = _QUOTED.match(src, pos)
        if m is not None:
            raw = m.group(1) if m.group(1) is not None else m.group(2)
            parts.append(re.sub(r"\\(.)", r"\1", raw))
            pos = m.end()
            continue
        raise ValueError(f"unexpected {ch!r} at position {pos} of {text!r}; "
                         "write keys as a.b, indices as [0], other keys as [\"key\"]")
    if not parts:
        raise ValueError(f"{text!r} is not a path (e.g. a.b[0].c)")
    return tuple(parts)


def resolve_json_path(document: Any, path: JsonPath) -> Any:
    """The value at `path`; `LookupError` saying where the path stops."""
    current = document
    walked = "$"
    for part in path:
        if isinstance(part, int):
            if not isinstance(current, list):
                raise LookupError(f"{walked} is not a list")
            if not -len(current) <= part < len(current):
                raise LookupError(f"{walked} has no index {part} (length {len(current)})")
            current = current[part]
            walked += f"[{part}]"
        else:
            if not isinstance(current, dict):
                raise LookupError(f"{walked} is not an object")
            if part not in current:
                raise LookupError(f"{walked} has no key {part!r}")
            current = current[part]
            walked += f".{part}"
    return current


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values: `true` is not `1`, `1` is `1.0`, containers compare deeply."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b
