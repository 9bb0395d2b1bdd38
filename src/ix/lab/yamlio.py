"""YAML in and out, strictly: safe types only, and a key written twice is an error."""

from pathlib import Path
from typing import Any

import yaml

from ix.domain.errors import ConfigError

_Base: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # type: ignore[assignment]


class _StrictLoader(_Base):  # type: ignore[misc,valid-type]
    """SafeLoader that refuses duplicate keys (PyYAML keeps the last one silently)."""


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


_StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping
)


def parse_yaml(text: str, *, file: Path | str) -> Any:
    """Parse YAML text; every failure is a `ConfigError` naming `file` (and the line)."""
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except ConfigError as exc:
        raise exc.at(file) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{where}invalid YAML: {problem}", file=file) from None
    except RecursionError:
        raise ConfigError("invalid YAML: nested too deeply", file=file) from None


def read_text(path: Path) -> str:
    """A text file as UTF-8; a binary or non-UTF-8 file is a `ConfigError`, not a traceback."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror or exc}", file=path) from None
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


def dump_yaml(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False)
