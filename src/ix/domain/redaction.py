"""Known secret values, replaced by `[REDACTED]` in everything ix records, serves or prints.

A subject may echo what it was given: a key in a 200 answer, a header in a response header,
the environment in a program's output, a judge quoting its prompt. So a run builds one
`Redactor` from every secret value it knows (the engine collects them) and passes each
observation, reading and error through it before anything is written. Values shorter than
`MIN_SECRET` characters are ignored: they would redact ordinary words.

Pure: the environment is given as a mapping, never read here.
"""

import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel
from pydantic_core import to_json

REDACTED = "[REDACTED]"
#: Values shorter than this are never redacted (an 8-character floor keeps `true`, `en_US`,
#: `/bin/sh` and the like readable).
MIN_SECRET = 8
#: Names (of environment variables, of headers, of options) whose values are secrets: an
#: API key, a token, a password, `Authorization`, a cookie.
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|AUTH|CREDENTIAL|COOKIE", re.IGNORECASE)
#: Values that are secrets whatever they are called.
SECRET_VALUES = (
    re.compile(r"^sk-[A-Za-z0-9_\-]{8,}$"),             # OpenAI, Anthropic (sk-ant-...)
    re.compile(r"^(ghp|gho|ghs|ghu|ghr|github_pat)_[A-Za-z0-9_]{16,}$"),  # GitHub
    re.compile(r"^xox[abprs]-[A-Za-z0-9-]{8,}$"),        # Slack
    re.compile(r"^AKIA[0-9A-Z]{16}$"),                   # AWS access key id
    re.compile(r"^AIza[0-9A-Za-z_\-]{30,}$"),            # Google API key
    re.compile(r"^(Bearer|Basic)\s+\S{8,}$", re.IGNORECASE),
)


def looks_like_secret(value: str) -> bool:
    """An API key or a token by its shape (`sk-…`, `ghp_…`, `Bearer …`, …)."""
    return any(p.match(value.strip()) for p in SECRET_VALUES)


def environment_secrets(environ: Mapping[str, str]) -> list[str]:
    """The values of `environ` that are secrets: named like one (`SECRET_NAME`), or shaped
    like one (`looks_like_secret`)."""
    return [v for k, v in environ.items()
            if len(v) >= MIN_SECRET and (SECRET_NAME.search(k) or looks_like_secret(v))]


def parts(value: str) -> list[str]:
    """A secret value and the words of it long enough to be secrets themselves: a server may
    echo the token of `Bearer <token>` without its scheme."""
    return [value, *value.split()]


class Redactor:
    """Replaces known secret values (longest first, so a secret holding another is replaced
    whole; and their URL-encoded forms) by `[REDACTED]`.

    `text` and `tree` return the very object they were given when it holds no secret. `tree`
    first looks for the secrets in one JSON serialisation of its argument (pydantic-core's,
    a few microseconds) and walks it only on a hit, so the common case copies nothing.
    """

    __slots__ = ("_escaped", "_pattern", "values")

    def __init__(self, values: Iterable[str | None] = ()):
        kept = {v for v in values if isinstance(v, str) and len(v.strip()) >= MIN_SECRET}
        kept |= {q for v in kept if (q := quote(v, safe="")) != v}
        self.values: tuple[str, ...] = tuple(sorted(kept, key=lambda v: (-len(v), v)))
        self._pattern = (re.compile("|".join(map(re.escape, self.values)))
                         if self.values else None)
        # each value as it reads inside a JSON string; None: a value JSON escapes (a quote,
        # a backslash, a control character), for which only the walk is sure
        plain = all(not _JSON_ESCAPED.search(v) for v in self.values)
        self._escaped = tuple(v.encode() for v in self.values) if plain else None

    def __bool__(self) -> bool:
        return bool(self.values)

    def __repr__(self) -> str:  # never the values themselves
        return f"Redactor({len(self.values)} values)"

    def __or__(self, other: "Redactor") -> "Redactor":
        return Redactor((*self.values, *other.values))

    def hides(self, text: str) -> bool:
        """Whether `text` holds a known secret."""
        return any(v in text for v in self.values)

    def text(self, text: str) -> str:
        """`text` with every known secret replaced by `[REDACTED]`."""
        if self._pattern is None or not self.hides(text):
            return text
        return self._pattern.sub(REDACTED, text)

    def tree(self, data: Any) -> Any:
        """`data` (strings, mappings — keys too —, lists, tuples, pydantic models, nested)
        with every string redacted; other values are kept as they are."""
        if self._pattern is None:
            return data
        if self._escaped is not None:
            try:
                blob = to_json(data.__dict__ if isinstance(data, BaseModel) else data,
                               fallback=str)
            except (ValueError, TypeError, RecursionError):
                blob = None
            if blob is not None and not any(v in blob for v in self._escaped):
                return data
        return self._tree(data)

    def _tree(self, data: Any) -> Any:
        kind = type(data)
        if kind is str:
            return self.text(data)
        if kind in _ATOMS:
            return data
        if isinstance(data, dict):
            out, changed = {}, False
            for key, value in data.items():
                new_key, new_value = self._tree(key), self._tree(value)
                changed = changed or new_key is not key or new_value is not value
                out[new_key] = new_value
            return out if changed else data
        if isinstance(data, list | tuple):
            items = [self._tree(v) for v in data]
            if all(a is b for a, b in zip(items, data, strict=True)):
                return data
            return items if isinstance(data, list) else tuple(items)
        if isinstance(data, BaseModel):
            update: dict[str, Any] = {}
            fields = {**data.__dict__, **(data.__pydantic_extra__ or {})}
            for name, value in fields.items():
                new = self._tree(value)
                if new is not value:
                    update[name] = new
            return data.model_copy(update=update) if update else data
        if isinstance(data, str):  # a subclass of str
            return self.text(data)
        return data


_ATOMS = frozenset({int, float, bool, type(None), bytes})
_JSON_ESCAPED = re.compile(r'["\\\x00-\x1f\x7f]')


__all__ = ["MIN_SECRET", "REDACTED", "SECRET_NAME", "SECRET_VALUES", "Redactor",
           "environment_secrets", "looks_like_secret", "parts"]
