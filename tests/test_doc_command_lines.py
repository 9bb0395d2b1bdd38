"""Every `ix …` command line in README.md and docs/*.md parses against the real command tree.

Lines come from fenced code blocks (shell blocks: the commands of `$ ix …` and `ix …` lines,
split at `&&`, `;` and pipes; blocks without a language: synopses such as `ix report [RUN]
[--format table|md]`) and from inline code spans that start with `ix `. Each must name
commands that exist, options that the command has (with their values), no more arguments than
it takes, and no bare word right after a flag (`ix run EXP --cache replay` reads `replay` as a
second experiment, not as the cache's mode). Placeholders (EXP, RUN, NAME, ...) are fine as
arguments. The parser is the CLI's own (`typer.main.get_command`, click's option parser).
"""

import itertools
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer

from ix.cli.main import app

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SHELLS = {"bash", "sh", "shell", "console", "zsh", "shell-session"}
FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*([\w+-]*)")
INLINE = re.compile(r"(?<!`)`(ix(?: [^`]*)?)`(?!`)")
ROOT = typer.main.get_command(app)


PLACEHOLDER = re.compile(r"[A-Z][A-Z0-9_]*|<[^>]+>")


@dataclass(frozen=True)
class DocLine:
    where: str            # file:line
    text: str             # as written
    synopsis: bool        # bracket notation ([--opt X], a|b), not a shell line
    inline: bool = False  # a code span in prose: `ix results --group-by` names an option


def _shell_commands(text: str) -> list[list[str]]:
    """The simple commands of a shell line that run `ix`, as argument lists (redirections and
    the commands around `&&`, `||`, `;`, `|` split off)."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    commands: list[list[str]] = [[]]
    skip = False
    for token in lexer:
        if skip:
            skip = False
        elif token in ("&&", "||", ";", "|", "&"):
            commands.append([])
        elif token in (">", ">>", "<", "2>", "&>"):
            skip = True  # the file redirected to
        else:
            commands[-1].append(token)
    return [c for c in commands if c and c[0] == "ix"]


def _synopsis_commands(text: str) -> list[list[str]]:
    """The `ix` commands of a synopsis: optional parts ([...]) are checked as if given,
    ellipses dropped, `a|b` in a command's place expanded to each, a redirection
    (`> file`) dropped with its file."""
    found = []
    for part in re.split(r"\s+(?:&&|\|\||;)\s+", text):
        try:
            tokens = shlex.split(part)
        except ValueError:
            tokens = part.split()
        words = []
        skip = False
        for token in tokens:
            if skip or token in (">", ">>", "<", "2>", "&>"):
                skip = not skip
                continue
            token = token.strip("[]")
            if token not in ("...", "…"):  # `RUN...`: a repeated argument
                token = token.removesuffix("...").removesuffix("…")
            if token:
                words.append(token)
        if words and words[0] == "ix":
            found.append(words)
    return found


def doc_lines() -> list[DocLine]:
    """Every command line of the docs, with where it is."""
    lines: list[DocLine] = []
    for path in DOCS:
        name = path.relative_to(REPO).as_posix()
        fence, lang, pending, start = "", "", "", 0
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            mark = FENCE.match(line)
            if mark and not fence:
                fence, lang = mark.group(1), mark.group(2).lower()
                continue
            if mark and fence and mark.group(1)[0] == fence[0] \
                    and len(mark.group(1)) >= len(fence) and not mark.group(2):
                fence = ""
                continue
            if not fence:
                lines += [DocLine(f"{name}:{number}", m.group(1), True, inline=True)
                          for m in INLINE.finditer(line)]
                continue
            if lang in SHELLS:
                if pending:  # a command continued: a trailing backslash, an open quote
                    pending += "\n" + line
                else:
                    command = line.strip()
                    if lang in ("console", "shell-session"):
                        if not command.startswith("$ "):
                            continue  # output
                        command = command[2:].strip()
                    if not re.match(r"ix(\s|$)", command):
                        continue
                    pending, start = command, number
                try:
                    shlex.split(pending, comments=True)
                except ValueError:
                    continue  # an open quote: the command goes on
                if pending.endswith("\\"):
                    pending = pending[:-1]
                    continue
                lines.append(DocLine(f"{name}:{start}", pending, False))
                pending = ""
            elif not lang and re.match(r"\s*ix(\s|$)", line):
                # a synopsis line: the command, then (after two spaces) what it does
                lines.append(DocLine(f"{name}:{number}",
                                     re.split(r"\s{2,}", line.strip())[0], True))
    return lines


def _is_flag(param: Any) -> bool:
    return bool(getattr(param, "is_flag", False) or getattr(param, "count", False))


def problems(words: list[str], synopsis: bool = False, inline: bool = False) -> list[str]:
    """What is wrong with one `ix` command line (its words, `ix` first); [] when it parses."""
    command: Any = ROOT
    path = ["ix"]
    rest = words[1:]
    while hasattr(command, "commands") and rest and not rest[0].startswith("-"):
        word = rest[0]
        if synopsis and word in ("...", "…"):
            return []  # `ix subjects ... --json`: any of its commands
        names = word.split("|") if synopsis else [word]
        missing = [n for n in names if n not in command.commands]
        if missing:
            return [f"{' '.join(path)} has no command {missing[0]!r} "
                    f"(it has: {', '.join(sorted(command.commands))})"]
        if len(names) > 1:  # `ix cache stats|clear ...`: each one
            return [p for n in names for p in problems([*path, n, *rest[1:]], synopsis, inline)]
        command = command.commands[word]
        path.append(word)
        rest = rest[1:]
    found = []
    options = {opt: p for p in command.params for opt in (*p.opts, *p.secondary_opts)}
    words = []
    for word in rest:  # `...` is a value where one is due (`--goal "..."`), else a repeat
        if word not in ("...", "…") or (words and words[-1] in options
                                        and not _is_flag(options[words[-1]])):
            words.append(word)
    rest = words
    if inline and rest and rest[-1] in options:
        rest = rest[:-1]  # prose names an option: `ix results --group-by`
    for word, after in itertools.pairwise(rest):
        # `ix tag --delete TAG` passes TAG as an argument; a literal word there was meant as
        # the flag's value (`--cache replay`)
        if word in options and _is_flag(options[word]) and not after.startswith("-") \
                and not PLACEHOLDER.fullmatch(after):
            found.append(f"{word} is a flag: {after!r} after it is read as an argument, not as "
                         f"a value of {word}")
    ctx = command.context_class(command, info_name=path[-1])
    try:
        _, extra, _ = command.make_parser(ctx).parse_args(list(rest))
    except Exception as exc:  # click's UsageError (typer carries its own copy of click)
        found.append(f"{' '.join(path)}: {getattr(exc, 'message', exc)}")
        return found
    if extra and not ctx.allow_extra_args:
        found.append(f"{' '.join(path)}: unexpected extra argument(s) {' '.join(extra)}")
    return found


def check(line: DocLine) -> list[str]:
    commands = (_synopsis_commands(line.text) if line.synopsis
                else _shell_commands(line.text))
    return [p for words in commands for p in problems(words, line.synopsis, line.inline)]


LINES = doc_lines()


def test_the_docs_have_command_lines_to_check():
    """The extraction finds the docs' commands (so the test below cannot pass on nothing)."""
    where = {line.where.split(":")[0] for line in LINES}
    assert len(LINES) > 150
    assert {"README.md", "docs/cache.md", "docs/cli.md", "docs/queries.md",
            "docs/running.md"} <= where
    texts = [line.text for line in LINES]
    assert any(t.startswith("ix query \"SELECT subject, difficulty") and "GROUP BY" in t
               for t in texts)  # a query written over several lines is read whole
    assert any(t.startswith("ix cache stats") for t in texts)


@pytest.mark.parametrize("line", LINES, ids=[line.where for line in LINES])
def test_every_command_line_in_the_docs_parses(line: DocLine):
    assert check(line) == [], f"{line.where}: {line.text}"


@pytest.mark.parametrize("text, synopsis, wrong", [
    ("ix run my-experiment --cache replay", False, "is a flag"),
    ("ix run EXP --no-such-flag", False, "No such option"),
    ("ix nosuch RUN", False, "has no command 'nosuch'"),
    ("ix cache stats extra", False, "unexpected extra argument"),
    ("ix run --trials", False, "requires an argument"),
    ("ix subjects list|add|frob NAME", True, "has no command 'frob'"),
    ("ix report [RUN] [--fromat md]", True, "No such option"),
    ("ix tag RUN baseline && ix report --baselin baseline", False, "No such option"),
    ("ix ls --no-such > out.txt", True, "No such option"),
])
def test_the_check_rejects_what_the_cli_would(text: str, synopsis: bool, wrong: str):
    found = check(DocLine("x.md:1", text, synopsis))
    assert found and wrong in " ".join(found), found


@pytest.mark.parametrize("text, synopsis", [
    ("ix run my-experiment --cache --cache-mode replay", False),
    ("ix run EXP --trials N --seed 3 --subject a --subject b", False),
    ("ix results --case 'must-*' --format csv > t.csv", False),
    ("ix cache stats|clear [--lab LAB] [--json]", True),
    ("ix annotate RUN [CASE] \"text\"", True),
    ("ix subjects ... --json", True),
    ("ix ls > /full/disk/file", True),
    ("ix --version", False),
])
def test_the_check_accepts_command_lines_with_placeholders(text: str, synopsis: bool):
    assert check(DocLine("x.md:1", text, synopsis)) == []
