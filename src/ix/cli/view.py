"""`ix view`: the local, read-only web viewer (docs/view.md)."""

import json
from typing import Annotated

import typer

from ix.api.lab import Lab as LabFolder
from ix.cli.options import Lab
from ix.cli.output import warn
from ix.domain.errors import ConfigError

INSTALL_HINT = "pip install 'ix-lab[view]'"


def view(
    lab: Lab = None,
    port: Annotated[int, typer.Option(
        "--port", "-p", help="Port to listen on; 0 picks a free one (the URL is printed).",
        min=0, max=65535)] = 8765,
    host: Annotated[str, typer.Option(
        "--host", help="Address to bind. Anything but a loopback address makes the viewer "
                       "reachable from other machines (it has no login): a warning says so.")
    ] = "127.0.0.1",
    json_out: Annotated[bool, typer.Option(
        "--json", help="Print {\"url\": ..., \"lab\": ...} as one JSON line when listening.")
    ] = False,
) -> None:
    """Browse the lab in a web browser: experiments and runs, a run's report with its charts,
    each case's trials and each trial's full trace, and two runs side by side. It only reads.

    Needs the `view` extra (pip install 'ix-lab[view]'). Exit codes: 0 stopped, 2 bad input
    (no lab, the extra missing, the port taken).
    """
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise ConfigError(f"ix view needs the web extra: {INSTALL_HINT}") from None
    from ix.view.server import serve  # uvicorn and starlette: the extra, checked above

    lab_path = LabFolder(lab).path

    def listening(url: str) -> None:
        if json_out:
            print(json.dumps({"url": url, "lab": str(lab_path)}), flush=True)
        else:
            print(f"ix view: serving lab {lab_path} at {url}  (read-only; Ctrl-C to stop)",
                  flush=True)

    try:
        serve(lab_path, host, port, listening, warn)
    except KeyboardInterrupt:  # Ctrl-C is how a server stops: not a cancelled command
        return
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}",
                          field="--port") from None


def register(app: typer.Typer) -> None:
    """Add the command to the `ix` application."""
    app.command("view")(view)
