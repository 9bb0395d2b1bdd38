"""YAML in and out, strictly: safe types only, and a key written twice is an error.

Untrusted input is bounded: a file larger than `MAX_TEXT_BYTES` is refused before it is
parsed, and so is a document whose aliases would expand it by more than `ALIAS_BUDGET` values
(a "billion laughs" bomb: a few hundred bytes that PyYAML shares by reference, but that any
walk of the data — validation, an error message, JSON — would blow up) or that refers to
itself (a recursive alias).
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ix._lazy import lazy
from ix.domain.errors import ConfigError

if TYPE_CHECKING:
    import yaml
else:
    yaml = lazy("yaml")  # PyYAML: imported when a first file is read or written

#: The largest text file ix reads (cases, experiment.yaml, ix.yaml, ...): a prompt of a
#: million tokens is about 4 MB.
MAX_TEXT_BYTES = 16 * (1 << 20)
#: How many more values aliases may add to a document than are written in it.
ALIAS_BUDGET = 100_000


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _where(root: yaml.Node, sizes: dict[int, int], refs: dict[int, int]) -> str | None:
    """The field the expansion happens under: from the root, through mappings, each time
    into the largest value, down to the first value that is shared (an alias's target)."""
    path: list[str] = []
    node = root
    while isinstance(node, yaml.MappingNode) and node.value:
        key, value = max(node.value, key=lambda pair: sizes.get(id(pair[1]), 0))
        if not isinstance(key, yaml.ScalarNode):
            break
        path.append(str(key.value))
        if refs.get(id(value), 0) > 1:
            break
        node = value
    return ".".join(path) or None


def _holder(root: yaml.Node, target: yaml.Node) -> str | None:
    """The top-level key whose value holds `target`."""
    if not isinstance(root, yaml.MappingNode):
        return None
    for key, value in root.value:
        seen: set[int] = set()
        stack = [value]
        while stack:
            n = stack.pop()
            if n is target:
                return str(key.value) if isinstance(key, yaml.ScalarNode) else None
            if id(n) not in seen:
                seen.add(id(n))
                stack.extend(_children(n))
    return None


def _check_aliases(root: yaml.Node) -> None:
    """Refuse a document that aliases expand past `ALIAS_BUDGET`, or that contains itself.

    One pass over the distinct nodes (each alias is the node it names, shared), counting the
    values each would expand to; iterative, so nesting depth does not matter.
    """
    sizes: dict[int, int] = {}
    refs: dict[int, int] = {}
    entered: set[int] = set()  # the nodes on the path from the root (a cycle returns to one)
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:
            entered.discard(id(node))
            sizes[id(node)] = 1 + sum(sizes[id(c)] for c in _children(node))
            continue
        if id(node) in sizes:
            continue
        entered.add(id(node))
        stack.append((node, True))
        for child in _children(node):
            refs[id(child)] = refs.get(id(child), 0) + 1
            if id(child) in entered:
                mark = child.start_mark
                raise ConfigError(
                    f"line {mark.line + 1}: a recursive alias: the value anchored here contains "
                    "itself",
                    field=_holder(root, child))
            if id(child) not in sizes:
                stack.append((child, False))
    added = sizes[id(root)] - len(sizes)
    if added > ALIAS_BUDGET:
        raise ConfigError(
            f"aliases would expand this document by {added:,} values (at most "
            f"{ALIAS_BUDGET:,}): a YAML alias bomb? Write the values out instead",
            field=_where(root, sizes, refs))


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    loader.flatten_mapping(node)
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)  # type: ignore[no-untyped-call]
        try:
            hash(key)
        except TypeError:
            raise ConfigError(
                f"line {key_node.start_mark.line + 1}: a mapping key must be a plain value"
            ) from None
        if key in seen:
            raise ConfigError(
                f"key {key!r} is written twice (lines {seen[key]} and "
                f"{key_node.start_mark.line + 1})",
                field=str(key),
            )
        seen[key] = key_node.start_mark.line + 1
    return loader.construct_mapping(node, deep=deep)


@functools.cache
def _strict_loader() -> type[yaml.SafeLoader]:
    """The loader class, made at the first parse (PyYAML is imported then)."""
    base: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class _StrictLoader(base):  # type: ignore[misc,valid-type]
        """SafeLoader that refuses duplicate keys (PyYAML keeps the last one silently), alias
        bombs and recursive aliases."""

        def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
            """PyYAML's constructors raise plain Python errors on some values (`!!int` with
            nothing, `2001-02-31` read as a date): a `ConfigError` at the value's line instead."""
            try:
                return super().construct_object(node, deep=deep)
            except (ValueError, TypeError, IndexError, OverflowError, KeyError) as exc:
                mark = node.start_mark
                what = (f"cannot read {node.value!r} as {node.tag.rsplit(':', 1)[-1]}"
                        if isinstance(node, yaml.ScalarNode) else "cannot read this value")
                raise ConfigError(f"line {mark.line + 1}, column {mark.column + 1}: invalid YAML: "
                                  f"{what}: {exc or type(exc).__name__}") from None

        #: Whether the text may hold an alias (`*name`): only then is the node graph checked.
        may_alias = True

        def get_single_data(self) -> Any:
            node = self.get_single_node()
            if node is None:
                return None
            if self.may_alias:
                _check_aliases(node)
            return self.construct_document(node)

    _StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                                  _construct_mapping)
    return _StrictLoader


def parse_yaml(text: str, *, file: Path | str) -> Any:
    """Parse YAML text; every failure is a `ConfigError` naming `file` (and the line)."""
    loader: Any = _strict_loader()(text)
    loader.may_alias = "*" in text
    try:
        return loader.get_single_data()
    except ConfigError as exc:
        raise exc.at(file) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        line = text.splitlines()[mark.line] if mark and mark.line < len(text.splitlines()) else ""
        if "']'" in problem and re.search(r"[\w-]\[[^\]\s]*=", line):
            # `compare: [base[ctx=0], ...]`: a bracket in a name starts a list in YAML
            problem += ('; a name with brackets inside [ ] must be quoted, e.g. '
                        '["base[ctx=0]", "base[ctx=128]"]')
        raise ConfigError(f"{where}invalid YAML: {problem}", file=file) from None
    except RecursionError:
        raise ConfigError("invalid YAML: nested too deeply", file=file) from None
    finally:
        loader.dispose()


def read_text(path: Path, max_bytes: int = MAX_TEXT_BYTES) -> str:
    """A text file as UTF-8; a binary, non-UTF-8 or huge file is a `ConfigError`, not a
    traceback (and a huge one is never read whole)."""
    try:
        with path.open("rb") as f:
            # a regular file's size bounds the read: asking for `max_bytes` would allocate
            # them (16 MiB, a third of reading a case file); one that grew meanwhile is read on
            size = os.fstat(f.fileno()).st_size
            data = f.read(min(size, max_bytes) + 1)
            if len(data) > size:
                data += f.read(max_bytes + 1 - len(data))
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror or exc}", file=path) from None
    if len(data) > max_bytes:
        raise ConfigError(f"too large: more than {max_bytes >> 20} MiB; ix reads text files "
                          "up to that size", file=path)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"not UTF-8 text (byte {exc.start}); save the file as UTF-8", file=path
        ) from None
    if "\x00" in text:
        raise ConfigError("binary file (contains NUL bytes); expected UTF-8 text", file=path)
    return text


def load_yaml_file(path: Path) -> Any:
    return parse_yaml(read_text(path), file=path)


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = '"' if "\x85" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


@functools.cache
def _dumper() -> type[yaml.SafeDumper]:
    """The dumper class, made at the first write (PyYAML is imported then)."""

    class _Dumper(yaml.SafeDumper):
        """SafeDumper that writes a string holding NEL (U+0085) double-quoted, where it is
        escaped: PyYAML writes it raw in other styles and reads it back as a line break."""

    _Dumper.add_representer(str, _represent_str)
    return _Dumper


def dump_yaml(data: Any) -> str:
    """YAML that `parse_yaml` reads back equal (tests/lab/test_fuzz_loaders.py)."""
    return yaml.dump(data, Dumper=_dumper(), sort_keys=False, allow_unicode=True,
                     default_flow_style=False)
