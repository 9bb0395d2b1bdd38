"""Runtime kinds by name: each kind declares its options model and how to build it.

Options are validated when a run is planned (and by `ix validate`), so a typo in
`experiment.yaml` fails before any trial starts, with the field named. A kind ix does not know
is looked up among the installed plugins (`ix.eval.plugins`), which validate their own options.
"""

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from ix.domain.errors import ConfigError, did_you_mean
from ix.domain.model import Model
from ix.domain.ports import ExperimentRuntime
from ix.eval import plugins
from ix.eval.validation import from_validation_error
from ix.runtimes.batches import BATCH_CONCURRENCY


@dataclass(frozen=True)
class RuntimeContext:
    """What a runtime may need to know of the experiment: whose activation the sensor checks,
    and its folder (a relative path in the options, a `.proto`, is relative to it; None: to
    the working directory)."""

    target_skill: str | None = None
    base_dir: Path | None = None


@dataclass(frozen=True)
class RuntimeKind:
    name: str
    options: type[BaseModel]
    build: Callable[[Any, RuntimeContext], ExperimentRuntime]
    default_concurrency: int
    summary: str
    #: Whether a trial sends the prompt to a model that bills tokens: `ix run --dry-run`
    #: estimates input tokens and cost only for these (not for mock, lexical, command, ...).
    spends_tokens: bool = False
    #: What a trial does with a case's `history` (DESIGN.md §7): "sent" with the prompt,
    #: "template" (sent where the runtime's templates use `history`: its `reads_history`),
    #: "unused" (the answer never depends on the text: mock, random), or "refused" — the
    #: runtime would drop it, so a plan whose cases have one is refused (exit 2).
    history: Literal["sent", "template", "unused", "refused"] = "refused"


_KINDS: dict[str, RuntimeKind] = {}


def register(kind: RuntimeKind) -> RuntimeKind:
    _KINDS[kind.name] = kind
    return kind


def available() -> list[str]:
    _load_builtins()
    return sorted(_KINDS)


def get_kind(name: str) -> RuntimeKind:
    if name not in _KINDS and name.replace("-", "_") in BUILTIN_MODULES:
        importlib.import_module(f"ix.runtimes.{name.replace('-', '_')}")  # that kind only
    if name not in _KINDS:
        _load_builtins()
    if name in _KINDS:
        return _KINDS[name]
    kind = _plugin_kind(name)  # built-ins win (docs/plugins.md)
    if kind is not None:
        return kind
    allowed = sorted({*available(), *plugins.names("runtime")})
    raise ConfigError(f"unknown runtime {name!r}{did_you_mean(name, allowed)} (allowed: "
                      f"{', '.join(allowed)})", field="runtime")


def default_concurrency(spec: Mapping[str, Any]) -> int:
    """How many of a subject's trials may be in flight when neither the subject nor the run
    says: its kind's default, or for `batch: true` every trial (they wait in batches)."""
    if spec.get("batch") is True:
        return BATCH_CONCURRENCY
    return get_kind(str(spec.get("kind"))).default_concurrency


def validate_options(spec: Mapping[str, Any]) -> tuple[RuntimeKind, BaseModel]:
    """Check a runtime spec (`{kind: ..., <options>}`) and return its kind and parsed options."""
    kind = get_kind(str(spec.get("kind")))
    raw = {k: v for k, v in spec.items() if k != "kind"}
    try:
        return kind, kind.options.model_validate(raw)
    except ValidationError as exc:
        raise from_validation_error(exc, kind.options, prefix="runtime") from None


def build_runtime(spec: Mapping[str, Any], context: RuntimeContext) -> ExperimentRuntime:
    kind, options = validate_options(spec)
    return kind.build(options, context)


class PluginOptions(Model):
    """A plugin runtime's options: anything, passed on as keyword arguments; the plugin's
    object validates them when it is called (`ix.eval.plugins.build`)."""

    model_config = ConfigDict(extra="allow", frozen=True)


_HISTORY = ("sent", "template", "unused", "refused")


def _plugin_kind(name: str) -> RuntimeKind | None:
    """The kind an installed plugin provides under `name` (None: no plugin does), made anew
    each time (the scan and the import are cached). Its object may declare `history`
    (default "refused") and `default_concurrency` (default 4)."""
    field = "runtime.kind"
    plugin = plugins.find("runtime", name, field=field)
    if plugin is None:
        return None
    factory = plugins.load(plugin, field=field)
    history: Any = getattr(factory, "history", "refused")
    if history not in _HISTORY:
        raise ConfigError(f"{plugin.describe()} declares history={history!r}; allowed: "
                          f"{', '.join(_HISTORY)}", field=field)
    concurrency = getattr(factory, "default_concurrency", 4)
    if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
        raise ConfigError(f"{plugin.describe()} declares default_concurrency={concurrency!r}; "
                          "it must be a whole number >= 1", field=field)

    def build(options: PluginOptions, _: RuntimeContext) -> ExperimentRuntime:
        runtime: ExperimentRuntime = plugins.build(plugin, options.model_extra or {},
                                                   field=field)
        return runtime

    doc = (getattr(factory, "__doc__", None) or "").strip().splitlines()
    return RuntimeKind(name=name, options=PluginOptions, build=build,
                       default_concurrency=concurrency, history=history,
                       summary=doc[0] if doc else f"plugin of {plugin.distribution}")


_builtins_loaded = False

#: Modules under `ix.runtimes` that register a kind (one per line: add yours), each named
#: after its kind ("-" spelled "_"), so that asking for one kind imports only its module.
BUILTIN_MODULES = (
    "agent_cli",
    "anthropic",
    "claude_code",
    "command",
    "ensemble",
    "gemini",
    "grpc",
    "http",
    "human",
    "lexical",
    "mock",
    "openai",
    "python",
    "random",
    "scripted",
)


def _load_builtins() -> None:
    """Import the built-in kinds once, lazily, so importing the registry stays cheap."""
    global _builtins_loaded
    if not _builtins_loaded:
        _builtins_loaded = True
        for module in BUILTIN_MODULES:
            importlib.import_module(f"ix.runtimes.{module}")
