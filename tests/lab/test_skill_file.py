"""A SKILL.md's description: its rules, and replacing it without touching another byte."""

import pytest

from ix.domain.errors import ConfigError
from ix.fs.frontmatter import split_frontmatter
from ix.lab.skill_file import DESCRIPTION_MAX, check_description, with_description


@pytest.mark.parametrize(("text", "reason"), [
    ("", "empty"), ("  ", "empty"), (" padded", "white space"),
    ("x" * (DESCRIPTION_MAX + 1), "1025 characters"), ("two\nlines", "several lines"),
    ("uses <b>tags</b>", "XML tag"),
])
def test_bad_descriptions_say_why(text: str, reason: str) -> None:
    assert reason in (check_description(text) or "")


def test_a_good_description_passes() -> None:
    assert check_description("Summarise CSV files: columns, types, gaps. Not for SQL.") is None
    assert check_description("x" * DESCRIPTION_MAX) is None


@pytest.mark.parametrize("frontmatter", [
    "name: s\ndescription: Old one.\nlicense: MIT\n",
    "name: s\ndescription: >\n  Folded\n  old one.\nallowed-tools: [Read]\n",
    "name: s\ndescription: |\n  Block\n\n  old.\nlicense: MIT\n",
    "description: 'Quoted: old.'\nname: s\n",
])
def test_only_the_description_changes(frontmatter: str) -> None:
    text = f"---\n{frontmatter}---\n\n# Body\n\nKept: as is.\n"
    new = with_description(text, 'New: "quoted" — and unicode.', file="SKILL.md")
    meta, body = split_frontmatter(new, file="SKILL.md")
    old_meta, old_body = split_frontmatter(text, file="SKILL.md")
    assert meta == {**old_meta, "description": 'New: "quoted" — and unicode.'}
    assert body == old_body
    kept = [line for line in text.splitlines() if not line.startswith(("description", "  "))
            and line.strip()]
    assert all(line in new.splitlines() for line in kept)


def test_crlf_files_keep_their_line_ends() -> None:
    text = "---\r\nname: s\r\ndescription: Old.\r\n---\r\nBody\r\n"
    assert with_description(text, "New.", file="x") == (
        '---\r\nname: s\r\ndescription: "New."\r\n---\r\nBody\r\n')


def test_refusals() -> None:
    with pytest.raises(ConfigError, match="no description"):
        with_description("---\nname: s\n---\nBody\n", "New.", file="x")
    with pytest.raises(ConfigError, match="XML tag"):
        with_description("---\nname: s\ndescription: Old.\n---\n", "<x>", file="x")
