"""Objects handed to `ix.Experiment` in code: a runtime, sensor, scorer or reporter no YAML
file can name.

`experiment.yaml` records such an object as `{kind: python, object: "module:Qualname"}`
(its class, for the reader); the object itself is found while `using(objects)` is active —
around the run `ix.Experiment.run()` starts — and nowhere else: `ix run` on that folder
says the experiment needs the program that made it, instead of running something else.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from pydantic import ConfigDict, Field

from ix.domain.errors import ConfigError
from ix.domain.model import Model

__all__ = ["KIND", "LiveOptions", "live", "live_item", "object_ref", "using"]

#: The kind that names a live object, for runtimes and sensors alike.
KIND = "python"

_LIVE: ContextVar[Mapping[str, Any] | None] = ContextVar("ix_live_objects", default=None)


class LiveOptions(Model):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    object: str = Field(min_length=1)


def object_ref(obj: Any, taken: Mapping[str, Any] | None = None) -> str:
    """`module:Qualname` of `obj`'s class, with `#2`, `#3`, ... when another object of `taken`
    has that name already."""
    taken = taken or {}
    target = type(obj)
    base = f"{getattr(target, '__module__', '?')}:{getattr(target, '__qualname__', '?')}"
    ref, n = base, 1
    while ref in taken and taken[ref] is not obj:
        n += 1
        ref = f"{base}#{n}"
    return ref


@contextmanager
def using(objects: Mapping[str, Any]) -> Iterator[None]:
    """Make `objects` (by their `object_ref`) findable by `live` in this context."""
    token = _LIVE.set({**(_LIVE.get() or {}), **objects})
    try:
        yield
    finally:
        _LIVE.reset(token)


def live(options: LiveOptions, what: str) -> Any:
    """The object `options` names, or a `ConfigError` saying where it has to come from."""
    found = (_LIVE.get() or {}).get(options.object)
    if found is None:
        raise ConfigError(
            f"this {what} is the Python object {options.object}, which exists only in the "
            "program that built the experiment with ix.Experiment; run it from there (or "
            f"give the experiment a {what} kind ix knows)", field=f"{what}.kind")
    return found


def live_item(options: Mapping[str, Any], what: str, field: str, method: str) -> Any:
    """The object a list item names (`scorers[i]`, `reporters[i]`: `{kind: python, object:
    ref}`), which must have `method`; a `ConfigError` naming `field` otherwise."""
    ref = options.get("object")
    if not isinstance(ref, str) or not ref or set(options) != {"object"}:
        raise ConfigError(f"a {what} of kind {KIND} takes one option, `object` (its "
                          "reference)", field=f"{field}.object")
    try:
        found = live(LiveOptions(object=ref), what)
    except ConfigError as exc:
        raise ConfigError(exc.message, field=f"{field}.kind") from None
    if not callable(getattr(found, method, None)):
        raise ConfigError(f"a {what} object has `{method}()`; {ref} has none",
                          field=f"{field}.object")
    return found
