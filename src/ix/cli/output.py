"""Where the command writes: results to stdout, progress and problems to stderr."""

import json
import os
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
    """A warning on stderr; the message is text (a `[view]` in it is not markup), any secret
    of the environment in it `[REDACTED]`."""
    err.print(f"[yellow]ix: warning:[/] {escape(_redact(message))}", markup=True,
              highlight=False)


def fail(message: str) -> None:
    """The one line of an error on stderr; the message is text, never markup, any secret of
    the environment in it `[REDACTED]`."""
    err.print(f"[bold red]ix: error:[/] {escape(_redact(message))}", markup=True,
              highlight=False, soft_wrap=True)


def _redact(message: str) -> str:
    from ix.domain.redaction import Redactor, environment_secrets

    return Redactor(environment_secrets(os.environ)).text(message)
