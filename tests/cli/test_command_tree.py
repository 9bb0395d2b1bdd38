"""`ix --help` and `ix --version` start in a blink: the command tree is assembled from names
and summaries, and a command's module (with ix.api, pydantic, rich, ...) is imported only
when that command runs or its own help is asked for."""

import importlib
import json
import os
import shutil
import subprocess
import sys

import pytest
import typer
from typer.core import TyperGroup

from conftest import EXAMPLE_LAB, offline_example, run_ix
from ix._version import __version__
from ix.cli.main import COMMANDS, app

HEAVY = ("pydantic", "yaml", "rich", "numpy", "scipy", "duckdb", "httpx", "jinja2",
         "ix.api", "ix.engine", "ix.report")

#: Run the console script's entry point in a fresh interpreter and report what it imported.
PROBE = """
import json, sys
sys.argv = ["ix", *sys.argv[1:]]
from ix.cli import main
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def imported_by(*args: str) -> tuple[str, set[str]]:
    env = {"COLUMNS": "80", "PATH": "/usr/bin:/bin"}
    if "PYTHONPATH" in os.environ:  # a checkout's own source, when the tests run on one
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True,
                          text=True, timeout=60, env=env)
    *said, modules = proc.stderr.strip().splitlines()
    return proc.stdout + "\n".join(said), set(json.loads(modules))


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize("args", [("--version",), ("--help",), ()])
def test_version_and_help_import_no_heavy_module(args: tuple[str, ...]):
    output, modules = imported_by(*args)  # no arguments: the help, on stderr
    assert output.startswith("ix " if args == ("--version",) else "Usage: ix ")
    assert heavy(modules) == []


def test_version_answers_before_typer_is_imported():
    stdout, modules = imported_by("--version")
    assert stdout == f"ix {__version__}\n"
    assert "typer" not in modules


def test_a_commands_help_imports_that_command_only():
    stdout, modules = imported_by("ls", "--help")
    assert "Usage: ix ls" in stdout
    assert "ix.cli.ls" in modules
    assert not {"ix.cli.run", "ix.cli.results", "ix.cli.reports"} & modules


def test_validate_imports_no_numbers_library_and_not_the_run_loop(tmp_path):
    """The design check's Beta quantiles are plain Python, and validating loads only the
    runtime kinds the lab names: `ix validate` stays well under half a second. A goal with
    a min_effect is sized by the function `ix plan` uses (its t start, issue 32), which
    needs numpy and scipy: only then are they loaded."""
    lab = tmp_path / "lab"
    shutil.copytree(EXAMPLE_LAB, lab, ignore=offline_example(".ix"))
    output, modules = imported_by("validate", "skill-activation", "--lab", str(lab))
    assert "✓ skill-activation" in output
    assert not {m.split(".")[0] for m in modules} & {"numpy", "scipy", "duckdb", "httpx"}
    output, modules = imported_by("validate", "--lab", str(lab))
    assert "✓ coexistence" in output and " ".join(output.split()).count(
        "by the one-sided t approximation") == 3
    assert not {m.split(".")[0] for m in modules} & {"duckdb", "httpx"}
    assert "ix.runtimes.lexical" in modules
    assert not {"ix.runtimes.anthropic", "ix.runtimes.claude_code", "ix.api.query",
                "ix.api.results"} & modules
    # load and plan checks only: not the run loop, the executors, the resume reader or the
    # importer (ix.api.loading, not ix.api.experiments)
    assert not {"ix.api.experiments", "ix.engine.run", "ix.api.executors", "ix.engine.resume",
                "ix.interchange.importing"} & modules
    # asyncio only for the runtime that sleeps in it (the context example's mock subjects)
    assert "ix.runtimes.mock" in modules or "asyncio" not in modules


@pytest.mark.parametrize("args", [("--version",), ("--version", "ls"), ("-h",)])
def test_the_real_command_agrees(args: tuple[str, ...]):
    result = run_ix(*args)
    assert result.code == 0, result.output
    if args[0] == "--version":  # the fast path and the root's eager option say the same
        assert result.stdout == f"ix {__version__}\n"
    else:
        assert "Commands:" in result.stdout and "subjects" in result.stdout


def test_each_summary_is_the_first_sentence_of_its_commands_help():
    """The listing of `ix --help` comes from COMMANDS, not from the commands: keep them equal."""
    root = typer.main.get_command(app)
    for name, entry in COMMANDS.items():
        assert root.commands[name].get_short_help_str(10_000) == entry.summary, name


def test_every_command_module_registers_exactly_its_commands():
    by_module: dict[str, set[str]] = {}
    for name, entry in COMMANDS.items():
        by_module.setdefault(entry.module, set()).add(name)
    for module, names in by_module.items():
        holder = typer.Typer()
        importlib.import_module(module).register(holder)
        built = typer.main.get_command(holder)
        found = set(built.commands) if isinstance(built, TyperGroup) else {built.name}
        assert found == names, module


def test_the_tree_lists_every_command_in_order_and_finds_each():
    root = typer.main.get_command(app)
    ctx = root.context_class(root, info_name="ix")
    assert root.list_commands(ctx) == list(COMMANDS)
    assert all(root.get_command(ctx, name) is not None for name in COMMANDS)
    assert root.get_command(ctx, "nosuch") is None


def test_every_command_prints_plain_help():
    """A command built apart from the root keeps the root's plain help (no rich panels)."""
    root = typer.main.get_command(app)
    for name in COMMANDS:
        command = root.commands[name]
        assert command.rich_markup_mode is None, name
        for sub in getattr(command, "commands", {}).values():
            assert sub.rich_markup_mode is None, f"{name} {sub.name}"
