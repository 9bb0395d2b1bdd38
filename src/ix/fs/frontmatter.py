"""Markdown files with YAML frontmatter (`---` ... `---`, then the body): cases and SKILL.md."""

import copy
from datetime import date
from pathlib import Path
from typing import Any

from ix.domain.errors import ConfigError
from ix.fs.yamlio import parse_yaml, read_text

#: Frontmatter blocks already parsed in this process, by their text: `ix run` reads its case
#: files when it loads and again when it keeps the report's sections, and YAML parsing is
#: most of a read (~0.1 ms a case). Bounded; cleared when full.
_PARSED: dict[str, dict[str, Any]] = {}
_PARSED_MAX = 4096
_IMMUTABLE = (str, int, float, bool, type(None), date)


def split_frontmatter(text: str, *, file: Path | str) -> tuple[dict[str, Any], str]:
    """(frontmatter mapping, body). A file with no frontmatter block has an empty mapping."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n").rstrip() != "---":
        return {}, text
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r\n").rstrip() == "---":
            block = "".join(lines[1:i])
            meta = _PARSED.get(block)
            if meta is None:
                meta = parse_yaml(block, file=file)
                if meta is None:
                    meta = {}
                if not isinstance(meta, dict):
                    raise ConfigError("frontmatter must be a mapping of keys to values",
                                      file=file)
                if len(_PARSED) >= _PARSED_MAX:
                    _PARSED.clear()
                _PARSED[block] = meta
            return _fresh(meta), "".join(lines[i + 1 :])
    raise ConfigError("frontmatter starts with '---' but has no closing '---' line", file=file)


def read_frontmatter(path: Path) -> tuple[dict[str, Any], str]:
    return split_frontmatter(read_text(path), file=path)


def _fresh(value: Any) -> Any:
    """A copy of parsed YAML that a caller may change without changing the kept parse: its
    dicts and lists copied, its scalars shared (they cannot change)."""
    if type(value) is dict:
        return {k: _fresh(v) for k, v in value.items()}
    if type(value) is list:
        return [_fresh(v) for v in value]
    if isinstance(value, _IMMUTABLE):
        return value
    return copy.deepcopy(value)
