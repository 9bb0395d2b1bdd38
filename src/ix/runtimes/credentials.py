"""Where a runtime's credentials come from, and whether they are set now.

`ix validate` says it per subject before a run spends anything; a failed run's hint names the
variable. Only the presence of a variable is looked at; its value is never read into a
message. Never raises: a spec of an unknown kind (an old summary's, say) needs nothing.
"""

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: Any of these lets the Claude Code CLI authenticate (a key, a token, or a cloud provider).
CLAUDE_CODE_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_USE_BEDROCK",
                   "CLAUDE_CODE_USE_VERTEX")
#: The variable an API runtime reads its key from unless `api_key_env` names another.
DEFAULT_KEY_ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY",
                   "gemini": "GEMINI_API_KEY"}


@dataclass(frozen=True)
class Credentials:
    """`env`: the variables the runtime's credentials come from (any one suffices; empty for
    a runtime that needs none); `present`: one of them is set (True when none is needed)."""

    kind: str
    env: tuple[str, ...]
    present: bool


def credentials(spec: Mapping[str, Any], env: Mapping[str, str] | None = None
                ) -> Credentials:
    """The credentials of the runtime `spec` (`{kind: ..., <options>}`)."""
    env = os.environ if env is None else env
    kind = str(spec.get("kind") or "")
    own: Mapping[str, Any] = {}
    if kind == "claude-code":
        names: tuple[str, ...] = CLAUDE_CODE_ENV
        given = spec.get("env")
        own = given if isinstance(given, Mapping) else {}  # Bedrock, Vertex
    elif kind in DEFAULT_KEY_ENV:
        # Bedrock and Vertex: the cloud's own credential chain (files, roles, ADC) unless
        # `api_key_env` names a variable, so nothing to look for (`ix.runtimes.providers`)
        cloud = kind == "anthropic" and spec.get("provider") in ("bedrock", "vertex")
        name = spec.get("api_key_env", None if cloud else DEFAULT_KEY_ENV[kind])
        names = (name,) if isinstance(name, str) and name else ()  # null: a local server
        if kind == "gemini" and "api_key_env" not in spec:
            names += ("GOOGLE_API_KEY",)  # the SDK's other name (`ix.runtimes.gemini`)
    else:
        names = ()
    present = not names or any(str(env.get(n, "")).strip() or str(own.get(n, "")).strip()
                               for n in names)
    return Credentials(kind, names, present)
