"""`ix mcp`: the lab served to an MCP client such as Claude Code, over stdio (docs/mcp.md)."""

import sys

import typer

from ix.cli.options import Lab

INSTALL_HINT = "pip install 'ix-lab[mcp]'"


def mcp(lab: Lab = None) -> None:
    """Serve the lab to an MCP client over stdin/stdout: list, show, create, validate, plan,
    run (with progress, cancellable), summarise, compare and query experiments.

    Add it to Claude Code with `claude mcp add ix -- ix mcp --lab PATH`. stdout carries the
    protocol only; messages go to stderr. Needs the `mcp` extra (pip install
    'ix-lab[mcp]'). Exit codes: 0 the client closed the connection, 2 bad input (no lab, the
    extra missing).
    """
    try:
        import mcp.server.mcpserver  # noqa: F401
    except ImportError:
        # printed here, not raised: the error printer reads "[mcp]" as markup
        print(f"ix: error: ix mcp needs the MCP extra: {INSTALL_HINT}", file=sys.stderr,
              flush=True)
        raise typer.Exit(2) from None
    from ix.mcp.server import serve

    try:
        serve(lab)
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


def register(app: typer.Typer) -> None:
    """Add the command to the `ix` application."""
    app.command("mcp")(mcp)
