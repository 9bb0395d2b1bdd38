"""Defaults below `experiment.yaml`: lab `ix.yaml` > user config > environment > built-in.

The command line sits above all of these and is applied by the caller (DESIGN.md §5).
"""

import logging
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ix.domain.errors import ConfigError
from ix.domain.secrets import holds_secret
from ix.fs.resolve import user_config_path
from ix.fs.yamlio import load_yaml_file
from ix.lab.schema import LabDefaults, validate

LAB_CONFIG = "ix.yaml"
BUILTIN_TRIALS = 5
BUILTIN_TIMEOUT_S = 120.0
BUILTIN_RUNTIME = "claude-code"


@dataclass(frozen=True)
class Defaults:
    """The resolved defaults and, for each, where it came from (for `spec.yaml` and errors)."""

    runtime: dict[str, Any]
    trials: int
    concurrency: int | None
    timeout_s: float
    sources: Mapping[str, str]


_log = logging.getLogger("ix.config")
_warned: set[str] = set()


def is_private(path: Path) -> bool:
    """Only its owner may read or write it (`chmod 600`)."""
    return not stat.S_IMODE(path.stat().st_mode) & 0o077


def _load(path: Path, *, user: bool = False) -> LabDefaults | None:
    """A lab's `ix.yaml`, or (`user`) the user config: a user config that holds a secret (a
    literal token in http `headers`, say) is read only if it is private; else it is ignored
    with a warning, as ssh ignores an unprotected key."""
    if not path.is_file():
        return None
    data = load_yaml_file(path)
    if user and not is_private(path) and holds_secret(data):
        if str(path) not in _warned:
            _warned.add(str(path))
            mode = stat.S_IMODE(path.stat().st_mode)
            _log.warning("%s: not read: it holds a secret and other users can read it "
                         "(mode %04o); make it private (chmod 600 %s), or read the secret "
                         "from the environment ({{ env.NAME }})", path, mode, path)
        return None
    return validate(LabDefaults, data, file=path)


def resolve_defaults(lab: Path, env: Mapping[str, str] | None = None) -> Defaults:
    env = os.environ if env is None else env
    layers: list[tuple[str, LabDefaults]] = []
    for path, user in ((lab / LAB_CONFIG, False), (user_config_path(env), True)):
        loaded = _load(path, user=user)
        if loaded is not None:
            layers.append((str(path), loaded))

    def pick(key: str, env_key: str | None, builtin: Any, parse: Any) -> tuple[Any, str]:
        for source, layer in layers:
            value = getattr(layer, key)
            if value is not None:
                return value, source
        if env_key and env.get(env_key, "").strip():
            return parse(env_key, env[env_key].strip()), f"${env_key}"
        return builtin, "built-in default"

    runtime, runtime_src = pick("runtime", "IX_DEFAULT_RUNTIME", {"kind": BUILTIN_RUNTIME},
                                lambda _k, v: {"kind": v})
    trials, trials_src = pick("trials", "IX_DEFAULT_TRIALS", BUILTIN_TRIALS, _positive_int)
    concurrency, conc_src = pick("concurrency", "IX_DEFAULT_CONCURRENCY", None, _positive_int)
    timeout_s, timeout_src = pick("timeout_s", None, BUILTIN_TIMEOUT_S, float)
    return Defaults(
        runtime=dict(runtime), trials=trials, concurrency=concurrency, timeout_s=timeout_s,
        sources={"runtime": runtime_src, "trials": trials_src, "concurrency": conc_src,
                 "timeout_s": timeout_src},
    )


def _positive_int(name: str, raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(f"must be a whole number >= 1, got {raw!r}", field=f"${name}")
    return value
