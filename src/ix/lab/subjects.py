"""The subject registry: named subjects in the user's `subjects.yaml`, and built-in profiles.

`$XDG_CONFIG_HOME/ix/subjects.yaml` (default `~/.config/ix/subjects.yaml`) maps a name to
`{description, runtime, model, skills, config}`; an experiment lists such a name under
`subjects:` instead of writing the subject out. A user entry overrides the built-in profile of
the same name. API keys are never stored: only the name of the environment variable that
holds one (`api_key_env`); a key or a value that looks like a secret is refused on load and
on add.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ix.domain.errors import ConfigError
from ix.domain.secrets import check_no_secrets
from ix.eval.validation import from_validation_error
from ix.fs.files import write_text_atomic
from ix.fs.names import name_problem
from ix.fs.resolve import user_config_path
from ix.fs.yamlio import dump_yaml, load_yaml_file
from ix.lab.schema import ProfileSpec

SUBJECTS_FILE = "subjects.yaml"
BUILTIN = "built-in"

#: Bumped whenever a built-in profile changes, so a run's record says which set it used.
BUILTIN_PROFILES_VERSION = 1

BUILTIN_PROFILES: Mapping[str, Mapping[str, Any]] = {
    "claude-sonnet": {
        "description": "Claude Code CLI, Sonnet",
        "runtime": {"kind": "claude-code"}, "model": "sonnet",
    },
    "claude-opus": {
        "description": "Claude Code CLI, Opus",
        "runtime": {"kind": "claude-code"}, "model": "opus",
    },
    "claude-haiku": {
        "description": "Claude Code CLI, Haiku",
        "runtime": {"kind": "claude-code"}, "model": "haiku",
    },
    "claude-sonnet-api": {
        "description": "Anthropic Messages API, Sonnet 4.5 ($ANTHROPIC_API_KEY)",
        "runtime": {"kind": "anthropic"}, "model": "claude-sonnet-4-5",
    },
    "gpt-4o": {
        "description": "OpenAI Chat Completions API, GPT-4o ($OPENAI_API_KEY)",
        "runtime": {"kind": "openai"}, "model": "gpt-4o",
    },
    "random": {
        "description": "baseline: the target skill with p=0.5, whatever the prompt",
        "runtime": {"kind": "random"},
    },
    "mock": {
        "description": "deterministic stand-in: the target skill with p=0.5",
        "runtime": {"kind": "mock", "default_rate": 0.5},
    },
}

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class RegisteredSubject:
    """One subject of the registry, and where it is defined (`built-in` or the file)."""

    name: str
    spec: ProfileSpec
    source: str

    @property
    def builtin(self) -> bool:
        return self.source == BUILTIN

    @property
    def kind(self) -> str:
        return str(self.spec.runtime["kind"])

    def runtime_spec(self) -> dict[str, Any]:
        """The runtime it runs with on its own: its runtime, then `config`, then `model`."""
        spec = {**self.spec.runtime, **self.spec.config}
        if self.spec.model is not None:
            spec["model"] = self.spec.model
        return spec



def subjects_path(env: Mapping[str, str] | None = None) -> Path:
    """`$XDG_CONFIG_HOME/ix/subjects.yaml`, beside the user config."""
    return user_config_path(env).parent / SUBJECTS_FILE


def builtin_profiles() -> dict[str, RegisteredSubject]:
    return {name: RegisteredSubject(name, ProfileSpec.model_validate(dict(data)), BUILTIN)
            for name, data in BUILTIN_PROFILES.items()}


def load_registry(path: Path | None = None) -> dict[str, RegisteredSubject]:
    """Built-in profiles, overridden by the user's entries of the same name; sorted by name."""
    path = subjects_path() if path is None else path
    merged = builtin_profiles()
    merged.update(read_user_subjects(path))
    return dict(sorted(merged.items()))


def read_user_subjects(path: Path) -> dict[str, RegisteredSubject]:
    """The entries of one `subjects.yaml` (none if it does not exist), each checked."""
    if not path.is_file():
        return {}
    data = load_yaml_file(path)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError("the subjects file must map subject names to subjects, e.g. "
                          "'my-gpt: {runtime: openai, model: gpt-4o}'", file=path)
    return {name: RegisteredSubject(name, check_entry(name, entry, file=path), str(path))
            for name, entry in data.items()}


def check_name(name: Any, *, file: Path | str | None = None, field: str = "name") -> str:
    """A registry name: ASCII letters, digits, `.`, `_`, `-`, and a name by every rule of
    `ix.fs.names` (so no `..`), since experiments use it as a subject's name."""
    if not isinstance(name, str) or not _NAME.match(name) or name_problem(name) is not None:
        raise ConfigError(f"invalid subject name {name!r}: letters, digits, '.', '_' and '-', "
                          "starting with a letter or digit, without '..'", file=file,
                          field=field)
    return name


def check_entry(name: Any, entry: Any, *, file: Path | str | None = None) -> ProfileSpec:
    """One registry entry, strictly: its shape, and no secret anywhere in it."""
    check_name(name, file=file, field=str(name))
    if not isinstance(entry, dict):
        raise ConfigError("a subject is a mapping with at least 'runtime', e.g. "
                          "{runtime: openai, model: gpt-4o}", file=file, field=name)
    check_no_secrets(entry, file=file, field=name)
    unknown = [k for k in entry if k not in ProfileSpec.model_fields]
    if unknown:  # before "missing": a misspelt `runtime` is the likelier story
        raise ConfigError(f"unknown key; allowed keys: {', '.join(ProfileSpec.model_fields)}",
                          file=file, field=f"{name}.{unknown[0]}")

    try:
        return ProfileSpec.model_validate(entry)
    except ValidationError as exc:
        raise from_validation_error(exc, ProfileSpec, file=file, prefix=name) from None


def add_subject(name: str, entry: Mapping[str, Any], path: Path | None = None) -> RegisteredSubject:
    """Write (or replace) one entry of `subjects.yaml`, atomically; the others are kept."""
    path = subjects_path() if path is None else path
    check_name(name, field="NAME")
    clean = {k: v for k, v in entry.items() if v not in (None, "", [], {})}
    spec = check_entry(name, clean)
    existing: dict[str, Any] = {}
    if path.is_file():
        read_user_subjects(path)  # refuse to rewrite a file that is itself invalid
        loaded = load_yaml_file(path)
        existing = dict(loaded) if isinstance(loaded, dict) else {}
    existing[name] = spec.model_dump(exclude_defaults=True)
    header = ("# ix subject registry: `ix subjects list|add|test`, docs/subjects.md.\n"
              "# API keys never go here: name the environment variable (api_key_env).\n")
    write_text_atomic(path, header + dump_yaml(existing))
    return RegisteredSubject(name, spec, str(path))


__all__ = [
    "BUILTIN",
    "BUILTIN_PROFILES",
    "BUILTIN_PROFILES_VERSION",
    "SUBJECTS_FILE",
    "RegisteredSubject",
    "add_subject",
    "builtin_profiles",
    "check_entry",
    "load_registry",
    "read_user_subjects",
    "subjects_path",
]
