"""The atom of a construct: one immutable fact, stamped with who made it and when."""

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from uuid import uuid4


def _new_id() -> str:
    return uuid4().hex


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class Artifact:
    """A fact of one `kind` made by `producer`; frozen so a ledger can share it without copying.

    `id` and `created_at` default to a fresh uuid4 hex and the current UTC time, so artifacts can
    be traced and ordered after they leave the process (e.g. through a sink).
    """

    kind: str
    producer: str
    data: Any
    id: str = field(default_factory=_new_id)
    created_at: datetime = field(default_factory=_now)
