"""`ix mcp`: the lab served to an MCP client such as Claude Code, over stdio (docs/mcp.md)."""

from typing import Annotated

import typer

from ix.cli.options import Lab
from ix.domain.errors import ConfigError

INSTALL_HINT = "pip install 'ix-lab[mcp]'"


def mcp(
    lab: Lab = None,
    max_trials: Annotated[int | None, typer.Option(
        "--max-trials", min=1, show_default=False,
        help="The most trials one run_experiment call may start (trials x cases x "
             "subjects); more is refused. Default: $IX_MCP_MAX_TRIALS, else 10000.")] = None,
) -> None:
    """Serve the lab to an MCP client over stdin/stdout: list, show, create, validate, plan,
    run (with progress, cancellable), summarise, compare and query experiments.

    Add it to Claude Code with `claude mcp add ix -- ix mcp --lab PATH`. stdout carries the
    protocol only; messages go to stderr. Needs the `mcp` extra (pip install
    'ix-lab[mcp]'). Exit codes: 0 the client closed the connection, 2 bad input (no lab, the
    extra missing, a bad limit), 130 ended by SIGTERM or Ctrl-C (a run going on is recorded
    cancelled, its trials kept).
    """
    try:
        import mcp.server.mcpserver  # noqa: F401
    except ImportError:
        raise ConfigError(f"ix mcp needs the MCP extra: {INSTALL_HINT}") from None
    from ix.mcp.server import serve

    try:
        code = serve(lab, max_trials)
    except KeyboardInterrupt:  # before the server listens for signals
        raise typer.Exit(130) from None
    if code:
        raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    """Add the command to the `ix` application."""
    app.command("mcp")(mcp)
