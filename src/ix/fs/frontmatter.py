"""Markdown files with YAML frontmatter (`---` ... `---`, then the body): cases and SKILL.md."""

from pathlib import Path
from typing import Any

from ix.domain.errors import ConfigError
from ix.fs.yamlio import parse_yaml, read_text


def split_frontmatter(text: str, *, file: Path | str) -> tuple[dict[str, Any], str]:
    """(frontmatter mapping, body). A file with no frontmatter block has an empty mapping."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n").rstrip() != "---":
        return {}, text
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r\n").rstrip() == "---":
            meta = parse_yaml("".join(lines[1:i]), file=file)
            if meta is None:
                meta = {}
            if not isinstance(meta, dict):
                raise ConfigError("frontmatter must be a mapping of keys to values", file=file)
            return meta, "".join(lines[i + 1 :])
    raise ConfigError("frontmatter starts with '---' but has no closing '---' line", file=file)


def read_frontmatter(path: Path) -> tuple[dict[str, Any], str]:
    return split_frontmatter(read_text(path), file=path)
