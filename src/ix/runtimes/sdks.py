"""The model SDKs the API runtimes (`anthropic`, `openai`, `gemini`) need: checked when a
runtime is built, imported by a run. Light (importlib and ix.domain): `ix run` imports this
whatever its runtimes are, and the runtimes' own modules only for the kinds it uses."""

import importlib.util

from ix.domain.errors import ConfigError

#: The SDK of each API runtime built in this process, in order (`required_sdks`).
_required: dict[str, None] = {}


def require_sdk(module: str, extra: str) -> None:
    """Fail the build (a configuration error) when the SDK is not installed. Importing it
    (1-2 s for `anthropic`) is left to a run, which starts it in the background as it opens
    (`required_sdks`), so that the first trial does not stall the event loop for that long;
    `ix validate` and `ix plan`, which build runtimes too, never import it."""
    if importlib.util.find_spec(module) is None:
        raise ConfigError(f"the {extra!r} runtime needs the {module} package: "
                          f"pip install 'ix-lab[{extra}]'", field="runtime.kind")
    _required[module] = None


def required_sdks() -> tuple[str, ...]:
    """The SDKs of the API runtimes built so far in this process: a run's subjects', and
    those inside its judges, simulated users and probes, which no plan lists."""
    return tuple(_required)
