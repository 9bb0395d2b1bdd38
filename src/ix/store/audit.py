"""The lab's audit log, `<lab>/audit.jsonl`: who ran, tagged, annotated, imported what, when.

Append-only: one JSON object per line, `{"at", "user", "host", "ix", "action", "details"}`,
`at` in ISO-8601 UTC. Each line is written with one `write` on a file opened for appending,
under an exclusive lock, so concurrent commands never interleave lines; nothing in ix ever
rewrites or truncates the file. It lives beside the experiments, not under `.ix/` (a cache
area that may be deleted), because it is a record, not something ix can rebuild.
"""

import getpass
import json
import logging
import os
import platform
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ix._version import __version__
from ix.fs.appending import append_line

AUDIT_FILE = "audit.jsonl"

_log = logging.getLogger("ix.audit")


def audit_path(lab: Path) -> Path:
    return lab / AUDIT_FILE


def identity() -> dict[str, str]:
    """Who is acting: the login name and the host (what tags and annotations record too)."""
    try:
        user = getpass.getuser()
    except (OSError, KeyError, ImportError):
        user = os.environ.get("USER") or os.environ.get("USERNAME") or "unknown"
    return {"user": user, "host": platform.node() or "unknown"}


def now_utc() -> str:
    """ISO-8601 UTC with milliseconds, `Z`-suffixed: the `at` of every line."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def entry(action: str, **details: Any) -> dict[str, Any]:
    """The line `record` would append (without writing it)."""
    return {"at": now_utc(), **identity(), "ix": _ix_version(), "action": action,
            "details": details}


def _ix_version() -> str:
    return __version__


def record(lab: Path, action: str, **details: Any) -> dict[str, Any] | None:
    """Append one action to the lab's audit log; returns the line written.

    Actions ix records: `run`, `batch`, `tag`, `untag`, `annotate` (and `import`). `details`
    must be JSON-serialisable (other values are written as strings). A log that cannot be
    written (a read-only lab) does not undo the action: it is reported as a warning on the
    `ix.audit` logger and None is returned.
    """
    line = entry(action, **details)
    text = json.dumps(line, ensure_ascii=False, default=str, allow_nan=False) + "\n"
    path = audit_path(lab)
    try:
        append_line(path, text)  # whole or not at all: a full disk leaves the log as it was
    except OSError as exc:
        _log.warning("could not append to the audit log %s: %s", path, exc)
        return None
    return line


def read_audit(lab: Path) -> Iterator[dict[str, Any]]:
    """Every well-formed line of the audit log, oldest first (a torn line is skipped)."""
    path = audit_path(lab)
    if not path.is_file():
        return
    with path.open("rb") as f:
        for raw in f:
            try:
                item = json.loads(raw)
            except (ValueError, RecursionError):  # not JSON or UTF-8, 5,000 digits, deep
                continue
            if isinstance(item, dict):
                yield item
