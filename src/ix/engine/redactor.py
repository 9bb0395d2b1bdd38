"""A run's redactor: every secret value the run knows of, collected once when it is planned.

The secret values are:
- environment values named like a secret (`KEY`, `TOKEN`, `SECRET`, `PASSW`, `AUTH`,
  `CREDENTIAL`, `COOKIE`) or shaped like one (`sk-…`, `ghp_…`, `Bearer …`);
- the key each runtime reads — `api_key_env` (its default included) of every subject's
  runtime and of every judge's — and any other `<secret>_env` option;
- in each runtime's options (from `experiment.yaml`, `ix.yaml`, the user's `config.yaml` or
  a registry profile), and in those files themselves: a literal value under a secret-named key
  (`Authorization: "Bearer …"`, `token: …`) and each word of it, any value shaped like a key,
  and the environment variables read (`{{ env.NAME }}`) by an http header, a grpc metadata
  value, or under a secret-named key.
"""

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ix.domain.errors import ConfigError
from ix.domain.redaction import SECRET_NAME, Redactor, environment_secrets, looks_like_secret, parts
from ix.domain.secrets import is_secret_key
from ix.fs.resolve import user_config_path
from ix.fs.yamlio import load_yaml_file
from ix.lab.config import LAB_CONFIG
from ix.lab.subjects import subjects_path

if TYPE_CHECKING:
    from ix.engine.plan import SubjectPlan

_TEMPLATE = re.compile(r"\{\{.*?\}\}", re.DOTALL)
_ENV_USE = re.compile(r"\benv\.([A-Za-z_][A-Za-z0-9_]*)|\benv\[\s*['\"]([^'\"]+)['\"]\s*\]")
#: Options whose keys are names of headers (grpc: metadata) or environment variables
#: (`SECRET_NAME` applies).
_NAMED = frozenset({"headers", "metadata", "env"})


def run_redactor(subjects: Sequence["SubjectPlan"], lab: Path,
                 environ: Mapping[str, str] | None = None,
                 judges: Sequence[object] = ()) -> Redactor:
    """The redactor of a run of `subjects` in `lab` (see the module's docstring); `judges`:
    the run's judges that are no subject's sensor (the pairwise judge)."""
    environ = os.environ if environ is None else environ
    values: list[str | None] = list(environment_secrets(environ))
    for sp in subjects:
        values += spec_secrets(sp.runtime_spec, environ)
        values += runtime_secrets(sp.runtime, environ)
    for sensor in [*(s for sp in subjects for s in sp.sensors), *judges]:
        # a judge calls a runtime of its own
        values += spec_secrets(getattr(sensor, "runtime_spec", None), environ)
        values += runtime_secrets(getattr(sensor, "runtime", None), environ)
    for path in (lab / LAB_CONFIG, user_config_path(environ), subjects_path(environ)):
        values += spec_secrets(_read(path), environ)
    return Redactor(values)


def runtime_secrets(runtime: Any, environ: Mapping[str, str]) -> list[str | None]:
    """The key a built runtime reads: its options' `api_key_env`, defaults included."""
    options = getattr(runtime, "options", None)
    name = getattr(options, "api_key_env", None)
    return [environ.get(name)] if isinstance(name, str) else []


def spec_secrets(data: Any, environ: Mapping[str, str]) -> list[str | None]:
    """The secret values runtime options (or a config file) hold or read."""
    found: list[str | None] = []

    def walk(value: Any, secret: bool, named: bool) -> None:
        if isinstance(value, Mapping):
            for key, item in value.items():
                if not isinstance(key, str):
                    walk(item, secret, False)
                    continue
                if key.endswith("_env") and is_secret_key(key[:-4]):  # api_key_env
                    for name in item if isinstance(item, list) else [item]:
                        if isinstance(name, str):
                            found.append(environ.get(name))
                    continue
                key_secret = (SECRET_NAME.search(key) is not None if named
                              else is_secret_key(key))
                if key in ("headers", "metadata") and isinstance(item, Mapping):  # one that
                    found.extend(_env_reads(item.values(), environ))  # reads env: secret
                walk(item, secret or key_secret, key in _NAMED)
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item, secret, False)
        elif isinstance(value, str):
            if looks_like_secret(value):
                found.extend(parts(value.strip()))
            if secret:
                literal = _TEMPLATE.sub(" ", value).strip()
                if literal:
                    found.extend(parts(literal))
                found.extend(_env_reads([value], environ))

    walk(data, False, False)
    return found


def _env_reads(templates: Iterable[Any], environ: Mapping[str, str]) -> list[str | None]:
    """The values of the environment variables that `templates` read (`{{ env.NAME }}`)."""
    return [environ.get(a or b) for t in templates if isinstance(t, str)
            for a, b in _ENV_USE.findall(t)]


def _read(path: Path) -> Any:
    """A config file's data, or None: missing, unreadable or invalid (its own loader reports
    that)."""
    try:
        return load_yaml_file(path) if path.is_file() else None
    except (ConfigError, OSError, ValueError):
        return None


__all__ = ["run_redactor", "runtime_secrets", "spec_secrets"]
