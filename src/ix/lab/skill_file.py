"""A SKILL.md's description: the rules it must keep, and the file with another one.

`ix optimize` writes candidate descriptions into copies of a skill's SKILL.md and, with
`--apply`, into the skill itself. A candidate obeys the rules Claude Code's skill loader and
the Agent Skills specification set on the `description` field (`check_description`), and
the file keeps every other byte: only the `description` entry of the frontmatter is replaced
(`with_description`), so a reviewer's diff is one line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ix.domain.errors import ConfigError
from ix.fs.frontmatter import split_frontmatter

__all__ = ["DESCRIPTION_MAX", "check_description", "with_description"]

#: The Agent Skills specification's limit on `description` (characters).
DESCRIPTION_MAX = 1024

_TAG = re.compile(r"<[^>]*>")
_KEY = re.compile(r"description\s*:")


def check_description(text: str) -> str | None:
    """Why `text` cannot be a skill's description, or None if it can.

    The rules: not empty, at most `DESCRIPTION_MAX` characters, one line (the skill listing
    shows `- name: description` on one line), and no XML tags (the specification forbids
    them; they would also open a tag inside the `<system-reminder>` listing).
    """
    if not isinstance(text, str):
        return f"must be text, not {type(text).__name__}"
    if not text.strip():
        return "is empty"
    if text != text.strip():
        return "has leading or trailing white space"
    if len(text) > DESCRIPTION_MAX:
        return f"is {len(text)} characters long; the limit is {DESCRIPTION_MAX}"
    if "\n" in text or "\r" in text:
        return "spans several lines; a description is one line"
    if _TAG.search(text):
        return "contains an XML tag (<...>), which SKILL.md descriptions may not"
    return None


def with_description(text: str, description: str, *, file: Path | str) -> str:
    """`text` (a whole SKILL.md) with its frontmatter's `description` replaced, every other
    byte kept. The new value is written as a JSON string (valid YAML, any character safe).

    Raises ConfigError when the file has no frontmatter or no top-level `description` entry,
    or when the result would not parse back to the same frontmatter with the new description
    (an unusual layout ix will not edit by hand).
    """
    reason = check_description(description)
    if reason is not None:
        raise ConfigError(f"the description {reason}", file=file, field="description")
    meta, _ = split_frontmatter(text, file=file)
    if "description" not in meta:
        raise ConfigError("SKILL.md has no description in its frontmatter", file=file,
                          field="description")
    lines = text.splitlines(keepends=True)
    end = next(i for i in range(1, len(lines)) if lines[i].rstrip("\r\n").rstrip() == "---")
    start = next((i for i in range(1, end) if _KEY.match(lines[i])), None)
    if start is None:
        raise ConfigError("the description is not a top-level entry ix can replace", file=file,
                          field="description")
    stop = start + 1  # its continuation: indented lines (folded or block scalars), blanks
    while stop < end and (lines[stop][:1] in (" ", "\t") or not lines[stop].strip()):
        stop += 1
    newline = "\r\n" if lines[start].endswith("\r\n") else "\n"
    entry = f"description: {json.dumps(description, ensure_ascii=False)}{newline}"
    replaced = "".join(lines[:start]) + entry + "".join(lines[stop:])
    again, body = split_frontmatter(replaced, file=file)
    if again != {**meta, "description": description} or body != split_frontmatter(
            text, file=file)[1]:
        raise ConfigError("the frontmatter's layout is one ix cannot edit safely; change the "
                          "description by hand", file=file, field="description")
    return replaced
