"""Errors a user can fix. Every layer raises them; the CLI prints them as one line, exit 2."""

import difflib
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args, get_origin

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError


class ConfigError(Exception):
    """Bad input or configuration: names the file and the field, and says what is allowed."""

    def __init__(self, message: str, *, file: Path | str | None = None, field: str | None = None):
        self.message = message
        self.file = str(file) if file is not None else None
        self.field = field
        super().__init__(self.render())

    def render(self) -> str:
        where = self.file or ""
        if self.field:
            where = f"{where}: {self.field}" if where else self.field
        return f"{where}: {self.message}" if where else self.message

    def at(self, file: Path | str | None = None, prefix: str | None = None) -> "ConfigError":
        """The same error located in `file` (unless it already names one), its field nested
        under `prefix`."""
        field = self.field
        if prefix:
            field = f"{prefix}.{field}" if field else prefix
        return ConfigError(self.message, file=self.file or file, field=field)


class ConfigErrors(ConfigError):
    """Several problems found at once (`ix validate` lists each). Raised, it reads as its first
    problem plus how many more, so a command that stops at bad input still prints one line."""

    def __init__(self, errors: Sequence[ConfigError]):
        if not errors:
            raise ValueError("ConfigErrors needs at least one error")
        self.errors = list(errors)
        first = self.errors[0]
        more = len(self.errors) - 1
        note = (f" (and {more} more problem{'s' if more > 1 else ''}: `ix validate` lists "
                "them all)") if more else ""
        super().__init__(first.message + note, file=first.file, field=first.field)

    def at(self, file: Path | str | None = None, prefix: str | None = None) -> "ConfigError":
        return ConfigErrors([e.at(file, prefix) for e in self.errors])


def flatten(errors: Iterable[ConfigError]) -> list[ConfigError]:
    """Each problem once, in order: a `ConfigErrors` opens into its problems."""
    out: list[ConfigError] = []
    seen: set[str] = set()
    for exc in errors:
        for one in exc.errors if isinstance(exc, ConfigErrors) else [exc]:
            if one.render() not in seen:
                seen.add(one.render())
                out.append(one)
    return out


def raise_all(errors: Sequence[ConfigError]) -> None:
    """Raise the problems found (one as itself, several as `ConfigErrors`); none: return."""
    found = flatten(errors)
    if len(found) == 1:
        raise found[0]
    if found:
        raise ConfigErrors(found)


def did_you_mean(word: object, choices: Iterable[str]) -> str:
    """`; did you mean 'xlsx'?` when a choice is close to `word` (difflib), else ''."""
    if not isinstance(word, str):
        return ""
    options = [str(c) for c in choices]
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    if not close:  # letter case only ("Activation"), or a close prefix
        close = [c for c in options if c.lower() == word.lower()][:1]
    return f"; did you mean {close[0]!r}?" if close else ""


class TrialError(Exception):
    """A trial failed in a way the runtime understands; `kind` groups failures in reports."""

    def __init__(self, kind: str, message: str):
        self.kind = kind
        self.message = message
        super().__init__(f"{kind}: {message}")


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
    exc: "ValidationError", model: "type[BaseModel]", *, file: Path | str | None = None,
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


def _field_key(model: "type[BaseModel]", loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
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


def _one_error(err: Any, model: "type[BaseModel]", *, file: Path | str | None,
               prefix: str | None) -> ConfigError:
    loc = tuple(err["loc"])
    field = field_path(loc)
    if prefix:
        field = f"{prefix}.{field}" if field else prefix
    if err["type"] == "extra_forbidden":
        owner = _model_at(model, loc[:-1])
        keys = ", ".join(owner.model_fields) if owner else "see the docs"
        hint = did_you_mean(loc[-1], owner.model_fields) if owner and loc else ""
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


def _model_at(model: "type[BaseModel]", loc: tuple[int | str, ...]) -> "type[BaseModel] | None":
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


def _literal_values(model: "type[BaseModel]", loc: tuple[int | str, ...]) -> list[str]:
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
