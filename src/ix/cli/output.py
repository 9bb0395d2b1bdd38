"""Where the command writes: results to stdout, progress and problems to stderr."""

import json
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape

out = Console(highlight=False, soft_wrap=False)
err = Console(stderr=True, highlight=False)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def warn(message: str) -> None:
    """A warning on stderr; the message is text (a `[view]` in it is not markup)."""
    err.print(f"[yellow]ix: warning:[/] {escape(message)}", markup=True, highlight=False)


def fail(message: str) -> None:
    """The one line of an error on stderr; the message is text, never markup."""
    err.print(f"[bold red]ix: error:[/] {escape(message)}", markup=True, highlight=False,
              soft_wrap=True)
