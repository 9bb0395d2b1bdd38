"""Secrets in what the user wrote: API keys and tokens are never stored in a lab or a
registry, only the name of the environment variable that holds one (`api_key_env`).

`check_no_secrets` refuses a secret-named key with a literal value, or a value that looks like a
key or a token, anywhere in a mapping; `holds_secret` asks the same without raising (the user
config, `lab/config.py`); `redact_secrets` blanks them in records ix writes (a run's
`spec.yaml`). Pure, beside `redaction` (the values a run redacts): the lab's config, the
subject registry, the engine and the API all ask it.
"""

import re
from pathlib import Path
from typing import Any

from ix.domain.errors import ConfigError
from ix.domain.redaction import looks_like_secret

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TEMPLATE = re.compile(r"\{\{.*?\}\}", re.DOTALL)
_ENV_TEMPLATE = re.compile(r"\{\{\s*env\.[A-Za-z_][A-Za-z0-9_]*\s*\}\}")
_SECRET_WORDS = ("apikey", "secret", "password", "passwd", "authorization", "credential",
                 "privatekey", "bearer", "cookie")


def is_secret_key(key: str) -> bool:
    """`api_key`, `apiKey`, `token`, `client_secret`, `Authorization`, ... (not `api_key_env`,
    not `max_tokens`)."""
    words = [w for w in re.split(r"[_\-\s.]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", key).lower())
             if w]
    if not words or words[-1] == "env":  # the *name* of an environment variable
        return False
    joined = "".join(words)
    return (any(w in joined for w in _SECRET_WORDS) or words[-1] == "token"
            or joined == "key" or joined.endswith(("accesskey", "accesskeyid")))


def check_no_secrets(data: Any, *, file: Path | str | None = None, field: str = "") -> None:
    """Refuse secret-named keys and secret-looking values anywhere in `data`."""
    if isinstance(data, dict):
        for key, value in data.items():
            where = f"{field}.{key}" if field else str(key)
            if isinstance(key, str) and is_secret_key(key) and not reads_env_template(value):
                raise ConfigError(
                    "looks like a secret; ix never stores API keys or tokens. Put the key in "
                    "an environment variable and give its name instead (api_key_env: NAME; "
                    "in http headers, '{{ env.NAME }}')", file=file, field=where)
            if isinstance(key, str) and key.lower().endswith("_env") and isinstance(value, str) \
                    and not _ENV_NAME.match(value):
                raise ConfigError(f"must be the name of an environment variable (like "
                                  f"OPENAI_API_KEY), not {_shown(value)}", file=file,
                                  field=where)
            check_no_secrets(value, file=file, field=where)
    elif isinstance(data, list):
        for i, value in enumerate(data):
            check_no_secrets(value, file=file, field=f"{field}[{i}]")
    elif isinstance(data, str) and looks_like_secret(data):
        raise ConfigError("this value looks like an API key or token; ix never stores "
                          "secrets. Put it in an environment variable and give the "
                          "variable's name (api_key_env)", file=file, field=field)


def holds_secret(data: Any) -> bool:
    """Whether `check_no_secrets` would refuse `data`: a secret-named key with a literal value,
    or a value that looks like a key or a token."""
    try:
        check_no_secrets(data)
    except ConfigError:
        return True
    return False


REDACTED = "[REDACTED]"


def redact_secrets(data: Any) -> Any:
    """`data` with what `check_no_secrets` would refuse replaced by `[REDACTED]`: for records
    written into a lab (a run's `spec.yaml`) of options that may come from the user config."""
    if isinstance(data, dict):
        return {k: REDACTED if isinstance(k, str) and is_secret_key(k) and isinstance(v, str)
                and not reads_env_template(v) else redact_secrets(v)
                for k, v in data.items()}
    if isinstance(data, list):
        return [redact_secrets(v) for v in data]
    if isinstance(data, str) and looks_like_secret(data):
        return REDACTED
    return data


def reads_env_template(value: Any) -> bool:
    """`Authorization: "Bearer {{ env.TOKEN }}"`: the secret is read from the environment when
    the request is made (http headers), and only the template is stored."""
    if not isinstance(value, str) or not _ENV_TEMPLATE.search(value):
        return False
    return not looks_like_secret(_TEMPLATE.sub("", value))


def _shown(value: str) -> str:
    """A value in an error message, cut short: it may be a secret."""
    return repr(value[:4] + "…") if len(value) > 8 else repr(value)


__all__ = [
    "REDACTED",
    "check_no_secrets",
    "holds_secret",
    "is_secret_key",
    "looks_like_secret",
    "reads_env_template",
    "redact_secrets",
]
