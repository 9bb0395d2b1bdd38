"""Pydantic's validation errors as ix's `ConfigError`s: the field as a path, what is allowed
(the model's keys, a `Literal`'s values), a did-you-mean, the value given unless it may be a
secret. Every layer that validates user input with a pydantic model (the loader, the subject
registry, sensor and runtime options, imported files) translates here; `ix.domain` stays free
of pydantic."""

import re
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ValidationError

from ix.domain.errors import ConfigError, ConfigErrors, did_you_mean

#: Fields whose value is never echoed in a message: it may be a key pasted in the wrong place
#: (`api_key_env: sk-...`), and messages end up in logs and CI output.
_SENSITIVE = re.compile(r"key|token|secret|passw|auth|credential|cookie", re.IGNORECASE)


def field_path(loc: tuple[int | str, ...]) -> str:
    """('subjects', 0, 'skills') -> 'subjects[0].skills'."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def from_validation_error(
    exc: ValidationError, model: type[BaseModel], *, file: Path | str | None = None,
    prefix: str | None = None,
) -> ConfigError:
    """The problems pydantic found, as a `ConfigError` naming the field and what is allowed
    (a `ConfigErrors` when there are several)."""
    errors: list[ConfigError] = []
    seen: set[tuple[int | str, ...]] = set()
    for err in exc.errors(include_url=False):
        key = _field_key(model, tuple(err["loc"]))
        if any(key[:len(k)] == k for k in seen):  # one value, several union branches
            continue
        if key:
            seen.add(key)
        errors.append(_one_error(err, model, file=file, prefix=prefix))
    return errors[0] if len(errors) == 1 else ConfigErrors(errors)


def _field_key(model: type[BaseModel], loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """`loc` cut after the first part that leads to no model (a union branch's tag follows)."""
    current: Any = model
    for i, part in enumerate(loc):
        if isinstance(part, int):
            continue
        fields = getattr(current, "model_fields", None)
        if not fields or part not in fields:
            return loc[:i + 1]
        current = _first_model(fields[part].annotation)
        if current is None:
            return loc[:i + 1]
    return loc


def _one_error(err: Any, model: type[BaseModel], *, file: Path | str | None,
               prefix: str | None) -> ConfigError:
    loc = tuple(err["loc"])
    field = field_path(loc)
    if prefix:
        field = f"{prefix}.{field}" if field else prefix
    if err["type"] == "extra_forbidden":
        owner = _model_at(model, loc[:-1])
        known = [f.alias or k for k, f in owner.model_fields.items()] if owner else []
        keys = ", ".join(known) if owner else "see the docs"
        hint = did_you_mean(loc[-1], known) if loc else ""
        return ConfigError(f"unknown key{hint} (allowed keys: {keys})", file=file, field=field)
    if err["type"] == "missing":
        values = _literal_values(model, loc)
        hint = f"; one of: {', '.join(values)}" if values else ""
        return ConfigError(f"required key is missing{hint}", file=file, field=field)
    msg = err["msg"]
    hint = did_you_mean(err.get("input"), _literal_values(model, loc)) \
        if err["type"] == "literal_error" else ""
    if err["type"] == "value_error":
        msg = msg.removeprefix("Value error, ")
    if err["type"] not in ("missing",) and "input" in err and not isinstance(err["input"], dict) \
            and not _SENSITIVE.search(str(loc[-1]) if loc else ""):
        shown = repr(err["input"])
        if len(shown) <= 60:
            msg = f"{msg} (got {shown})"
    return ConfigError(msg + hint, file=file, field=field)


def _model_at(model: type[BaseModel], loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The pydantic model class that owns the field at `loc` (through lists and optionals)."""
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        fields = getattr(current, "model_fields", None)
        if not fields or part not in fields:
            return None
        current = _first_model(fields[part].annotation)
        if current is None:
            return None
    return current if hasattr(current, "model_fields") else None


def _literal_values(model: type[BaseModel], loc: tuple[int | str, ...]) -> list[str]:
    """The allowed values of a `Literal` field at `loc`, if it is one."""
    owner = _model_at(model, loc[:-1])
    name = loc[-1] if loc else None
    if owner is None or not isinstance(name, str) or name not in owner.model_fields:
        return []
    annotation = owner.model_fields[name].annotation
    while get_origin(annotation) is not None and get_origin(annotation) is not Literal:
        args = [a for a in get_args(annotation) if a is not type(None)]
        if not args:
            return []
        annotation = args[0]
    return [str(v) for v in get_args(annotation)] if get_origin(annotation) is Literal else []


def _first_model(annotation: Any) -> Any:
    if isinstance(annotation, type) and hasattr(annotation, "model_fields"):
        return annotation
    for arg in get_args(annotation):
        found = _first_model(arg)
        if found is not None:
            return found
    return None


__all__ = ["field_path", "from_validation_error"]
