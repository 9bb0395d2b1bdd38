"""The atom of a construct: one immutable fact, stamped with who made it and when."""

import itertools
import os
import time
from datetime import UTC, datetime
from typing import Any, cast

# A random per-process prefix and a counter: unique like a uuid4, at a tenth of the cost on the
# per-trial hot path (a uuid4 reads the OS's random source each time).
_PREFIX = os.urandom(8).hex()
_counter = itertools.count()


def _reseed() -> None:
    """A forked child inherits prefix and counter; without a new prefix it would repeat ids."""
    global _PREFIX, _counter
    _PREFIX = os.urandom(8).hex()
    _counter = itertools.count()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reseed)


def _now() -> datetime:
    return datetime.now(UTC)


_set = object.__setattr__
_clock = time.time


class Artifact:
    """A fact of one `kind` made by `producer`; frozen so a ledger can share it without copying.

    `id` (unique: a random per-process prefix and a counter) and `created_at` (now, UTC) default,
    so artifacts can be traced and ordered after they leave the process (e.g. through a sink).
    Both are taken when the artifact is made (a counter step and a clock read) and spelled
    (the id's text, the datetime) only when first read: most artifacts never leave the
    process, and their stamps were a third of a trial's bookkeeping. Compares, hashes and
    prints as the frozen dataclass of these five fields it used to be.
    """

    __slots__ = ("_at", "_id", "_prefix", "data", "kind", "producer")
    __match_args__ = ("kind", "producer", "data", "id", "created_at")

    kind: str
    producer: str
    data: Any
    _prefix: str | None  # set while `_id` is the counter's number, not yet the id's text
    _id: int | str
    _at: float | datetime

    def __init__(self, kind: str, producer: str, data: Any, id: str | None = None,
                 created_at: datetime | None = None) -> None:
        _set(self, "kind", kind)
        _set(self, "producer", producer)
        _set(self, "data", data)
        if id is None:
            _set(self, "_prefix", _PREFIX)
            _set(self, "_id", next(_counter))
        else:
            _set(self, "_prefix", None)
            _set(self, "_id", id)
        _set(self, "_at", _clock() if created_at is None else created_at)

    @property
    def id(self) -> str:
        got = self._id
        if self._prefix is None:
            return cast(str, got)  # as given
        text = f"{self._prefix}{got:08x}"
        _set(self, "_prefix", None)
        _set(self, "_id", text)
        return text

    @property
    def created_at(self) -> datetime:
        got = self._at
        if isinstance(got, float):  # the clock read at creation: `datetime.now(UTC)` of then
            got = datetime.fromtimestamp(got, UTC)
            _set(self, "_at", got)
        return got

    def _fields(self) -> tuple[Any, ...]:
        return (self.kind, self.producer, self.data, self.id, self.created_at)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")  # frozen

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")  # frozen

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() == other._fields()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._fields())

    def __reduce__(self) -> tuple[type["Artifact"], tuple[Any, ...]]:  # copy and pickle
        return (type(self), self._fields())

    def __repr__(self) -> str:
        return (f"{type(self).__qualname__}(kind={self.kind!r}, producer={self.producer!r}, "
                f"data={self.data!r}, id={self.id!r}, created_at={self.created_at!r})")
