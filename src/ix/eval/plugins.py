"""Plugins: runtime, sensor, probe, scorer and reporter kinds that other distributions provide
(DESIGN.md §9).

A distribution declares entry points in the groups `ix.runtimes`, `ix.sensors`, `ix.probes`,
`ix.scorers` and `ix.reporters`; a kind named in `experiment.yaml` that ix does not know is looked
up there (the built-in kinds always win). The entry point's object is called with the kind's options
as keyword arguments and returns the runtime (`invoke`), sensor (`sense`), probe (`generate`),
scorer (`verdict`, `ix.eval.scorers`) or reporter (`write`, `ix.api.reporters`); validating the
options is the plugin's job. Whatever goes wrong on the way (the import, the
call, an object without the method) is a `ConfigError` naming the distribution, its version and
the entry point, with the exception's message: exit 2, one line, no traceback.

Plugin code cannot stop ix either: a `SystemExit` (`sys.exit()` in it), a `GeneratorExit`, a
`CancelledError` no cancellation asked for, or any other `BaseException` it raises is its error
like any exception: at its import or its call, that `ConfigError`; in a runtime's `invoke` or
a sensor's `sense`, the trial's error of kind `plugin_error` (recorded, the run goes on); in a
probe's `generate`, a `ConfigError`. Only Ctrl-C (`KeyboardInterrupt`) and the cancellations
ix itself makes (a trial's timeout, a second Ctrl-C) go through, as they always do: a run that
a plugin stopped must not look like a run that succeeded.

Why here: `ix.eval.sensors` looks its unknown kinds up in this module, and `ix.eval` is below
`ix.runtimes` (which uses it too) in the layers of DESIGN.md §1; `ix.domain` stays pure, and
reading the installed distributions' metadata is I/O. Lazy: nothing is scanned or imported
until a kind ix does not know is asked for, or `ix plugins` lists them.
"""

import asyncio
import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as attribute
from typing import TYPE_CHECKING, Any, Literal, cast

from ix.domain.errors import ConfigError, TrialError, did_you_mean
from ix.domain.ports import Probe, Sensor
from ix.domain.types import Interaction, Reading
from ix.eval.live import KIND as LIVE_KIND
from ix.eval.live import live_item

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from ix.eval.schemas import SpecPlugin

PluginKind = Literal["runtime", "sensor", "probe", "scorer", "reporter"]

#: The entry-point group of each kind, and the method its object must have.
GROUPS: dict[PluginKind, str] = {"runtime": "ix.runtimes", "sensor": "ix.sensors",
                                 "probe": "ix.probes", "scorer": "ix.scorers",
                                 "reporter": "ix.reporters"}
METHODS: dict[PluginKind, str] = {"runtime": "invoke", "sensor": "sense", "probe": "generate",
                                  "scorer": "verdict", "reporter": "write"}


@dataclass(frozen=True)
class Plugin:
    """One installed entry point: its kind, name, target (`module:attr`) and distribution."""

    kind: PluginKind
    name: str
    target: str
    distribution: str | None
    version: str | None
    entry_point: "EntryPoint | None" = attribute(default=None, compare=False, repr=False)

    def describe(self) -> str:
        """`the runtime plugin 'echo' of ix-echo 1.0 (entry point ix.runtimes: echo =
        ix_echo:Echo)`: what every error about it starts with."""
        made_by = (" ".join(x for x in (self.distribution, self.version) if x)
                   or "an unknown distribution")
        return (f"the {self.kind} plugin {self.name!r} of {made_by} (entry point "
                f"{GROUPS[self.kind]}: {self.name} = {self.target})")

    def spec(self) -> "SpecPlugin":
        """Its line in `spec.yaml`'s `versions.plugins`."""
        return {"group": self.kind, "name": self.name, "distribution": self.distribution,
                "version": self.version}


def installed(kind: PluginKind | None = None) -> list[Plugin]:
    """Every installed plugin (of one kind), in the order of `GROUPS`, then by name."""
    kinds = [kind] if kind is not None else list(GROUPS)
    return [p for k in kinds for p in sorted(_scan(k), key=lambda p: (p.name, p.target))]


def names(kind: PluginKind) -> list[str]:
    """The names the installed plugins of `kind` provide (for did-you-mean messages)."""
    return sorted({p.name for p in _scan(kind)})


def find(kind: PluginKind, name: str, *, field: str) -> Plugin | None:
    """The installed plugin of that kind and name; None when none is. Two distributions
    providing the same name is a `ConfigError`: which one would run is not for ix to guess."""
    found = [p for p in _scan(kind) if p.name == name]
    if len(found) > 1:
        found.sort(key=lambda p: str(p.distribution))
        each = "; ".join(p.describe() for p in found)
        raise ConfigError(f"{len(found)} installed plugins provide the {kind} {name!r}: {each}; "
                          "uninstall all but one", field=field)
    return found[0] if found else None


def load(plugin: Plugin, *, field: str) -> Callable[..., Any]:
    """The entry point's object, imported once; a `ConfigError` if it cannot be."""
    loaded = _LOADED.get(plugin)
    if loaded is None:
        try:
            loaded = _LOADED[plugin] = _import(plugin)
        except _Unloadable as exc:
            raise ConfigError(f"{plugin.describe()} could not be loaded: {exc}",
                              field=field) from None
    return loaded


def build(plugin: Plugin, options: Mapping[str, Any], *, field: str) -> Any:
    """Call the plugin's object with `options` as keyword arguments; the object it returns
    must have the kind's method (`invoke`, `sense`, `generate`). What is returned calls that
    method so that the plugin cannot stop ix (see the module); every other attribute is the
    plugin object's own."""
    factory = load(plugin, field=field)
    try:
        made = factory(**options)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        raise ConfigError(f"{plugin.describe()} rejected its options: {reason(exc)}",
                          field=field) from None
    method = METHODS[plugin.kind]
    if not callable(getattr(made, method, None)):
        raise ConfigError(f"{plugin.describe()} returned a {type(made).__name__}, which has no "
                          f"{method}() method", field=field)
    if plugin.kind == "runtime":
        return _Runtime(plugin, made)
    if plugin.kind in ("probe", "scorer", "reporter"):
        return _Probe(plugin, made, field, method)
    return made


def in_use(kind: PluginKind, name: str) -> Plugin | None:
    """The plugin this process loaded for `name`, if any (what a run's `spec.yaml` records);
    never scans: a name that was not looked up is not a plugin in use."""
    return next((p for p in _LOADED if p.kind == kind and p.name == name), None)


def check(plugin: Plugin) -> str | None:
    """Why the plugin cannot be loaded (`ix plugins --check`), in a line; None when it loads.
    Not recorded as loaded: a plugin checked is not a plugin in use."""
    try:
        _import(plugin)
    except _Unloadable as exc:
        return str(exc)
    return None


def load_sensor(kind: str, options: Mapping[str, Any], *, field: str) -> Sensor | None:
    """A sensor plugin built with `options`; None when no plugin provides `kind`. One without a
    `name` is named after its kind (the engine names a sensor's failure with it)."""
    plugin = find("sensor", kind, field=f"{field}.kind")
    if plugin is None:
        return None
    sensor = build(plugin, options, field=f"{field}.kind")
    name = getattr(sensor, "name", None)
    return _Sensor(plugin, sensor, name if isinstance(name, str) else kind)


def load_probe(kind: str, options: Mapping[str, Any] | None = None, *,
               field: str = "probe") -> Probe:
    """A probe plugin built with `options` (code-first experiments); `ConfigError` when no
    installed plugin provides `kind`."""
    plugin = find("probe", kind, field=f"{field}.kind")
    if plugin is None:
        known = names("probe")
        raise ConfigError(f"unknown probe {kind!r}{did_you_mean(kind, known)} (installed probe "
                          f"plugins: {', '.join(known) or 'none'})", field=f"{field}.kind")
    probe: Probe = build(plugin, options or {}, field=f"{field}.kind")
    return probe


def listed_kind(kind: PluginKind, spec: Mapping[str, Any], builtin: Sequence[str], *,
                field: str) -> tuple[str, dict[str, Any], Any]:
    """A `{kind, ...options}` item of `scorers:` or `reporters:` (`field`: `scorers[0]`):
    its kind, its options, and the object that is not ix's own — a plugin's, built with the
    options, or one given to `ix.Experiment` in code (`ix.eval.live`) — or None for a
    built-in kind. An unknown kind is a `ConfigError` naming `field`'s `kind`."""
    name = spec.get("kind")
    if not isinstance(name, str):
        raise ConfigError(f"needs a 'kind' (a string), e.g. {{kind: {builtin[0]}}}",
                          field=field)
    options = {k: v for k, v in spec.items() if k != "kind"}
    if name == LIVE_KIND:  # an object given to ix.Experiment in code
        return name, options, live_item(options, kind, field, METHODS[kind])
    if name in builtin:
        return name, options, None
    plugin = find(kind, name, field=f"{field}.kind")
    if plugin is None:
        known = [*builtin, *names(kind)]
        raise ConfigError(f"unknown {kind} {name!r}{did_you_mean(name, known)}; built-in: "
                          f"{', '.join(builtin)} (or a plugin of the group {GROUPS[kind]})",
                          field=f"{field}.kind")
    return name, options, build(plugin, options, field=f"{field}.kind")


def reason(exc: BaseException) -> str:
    """An exception as one line: its class and message (a plugin's pydantic error is several
    lines; a `ConfigError` of its own is its message). One that is no `Exception` (a
    `SystemExit`) says that a plugin must not raise it."""
    if isinstance(exc, ConfigError):
        return " ".join(exc.render().split())
    text = " ".join(str(exc).split())
    said = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    if not isinstance(exc, Exception):
        said += " (a plugin must raise an exception, not stop ix)"
    return said


def refresh() -> None:
    """Forget what was scanned and loaded (tests, and a process that installs plugins)."""
    _scan.cache_clear()
    _LOADED.clear()


def _its_own(exc: BaseException) -> bool:
    """Whether a `BaseException` that is no `Exception` came from plugin code rather than
    through it: Ctrl-C never does; a `CancelledError` does unless its task is being cancelled
    (a timeout, a second Ctrl-C); a `GeneratorExit` does unless it was thrown in where the
    plugin's coroutine was awaited (the coroutine closed from outside)."""
    if isinstance(exc, KeyboardInterrupt):
        return False
    if isinstance(exc, asyncio.CancelledError):
        try:
            task = asyncio.current_task()
        except RuntimeError:  # no event loop: nothing can be cancelling it
            return True
        return task is None or not task.cancelling()
    if isinstance(exc, GeneratorExit):
        return exc.__traceback__ is None or exc.__traceback__.tb_next is not None
    return True


class _Guarded:
    """A plugin's object behind the method ix calls: what that method raises that is no
    `Exception` but the plugin's own becomes an error naming the plugin (`_stopped`); every
    other attribute is the object's own (`batcher`, `options`, `aclose`, ...)."""

    def __init__(self, plugin: Plugin, inner: Any):
        self._plugin = plugin
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        if name in ("_plugin", "_inner"):  # not set yet (a copy being made)
            raise AttributeError(name)
        return getattr(self._inner, name)

    def _stopped(self, exc: BaseException, method: str) -> Exception:
        """The trial error for what `method` raised. (Each method catches in a `try` of its
        own frame, not through a context manager: `_its_own` reads the traceback's depth,
        which a context manager's frame would change.)"""
        return TrialError("plugin_error", f"{self._plugin.describe()}: {method}() raised "
                                          f"{reason(exc)}")


class _Runtime(_Guarded):
    """A runtime plugin's object: a `SystemExit` from its `invoke` fails the trial."""

    async def invoke(self, subject: Any, stimulus: Any, **kwargs: Any) -> Any:
        try:
            return await self._inner.invoke(subject, stimulus, **kwargs)
        except Exception:
            raise
        except BaseException as exc:
            if not _its_own(exc):
                raise
            raise self._stopped(exc, "invoke") from None


class _Sensor(_Guarded):
    """A sensor plugin's object, named (a plugin sensor without a `name` is named after its
    kind): a `SystemExit` from its `sense` makes the trial an errored one."""

    def __init__(self, plugin: Plugin, inner: Any, name: str):
        super().__init__(plugin, inner)
        self.name = name

    def sense(self, interaction: Interaction) -> list[Reading]:
        try:
            got = self._inner.sense(interaction)  # a list, or an awaitable
        except Exception:
            raise
        except BaseException as exc:
            if not _its_own(exc):
                raise
            raise self._stopped(exc, "sense") from None
        if inspect.isawaitable(got):  # a sensor that waits on a model: await it guarded too
            waiting: Any = self._awaited(got)
            return cast(list[Reading], waiting)
        return cast(list[Reading], got)

    async def _awaited(self, got: Any) -> list[Reading]:
        try:
            readings: list[Reading] = await got
        except Exception:
            raise
        except BaseException as exc:
            if not _its_own(exc):
                raise
            raise self._stopped(exc, "sense") from None
        return readings


class _Probe(_Guarded):
    """A probe, scorer or reporter plugin's object: whatever its method (`generate`,
    `verdict`, `write`) raises is a `ConfigError` naming the plugin."""

    def __init__(self, plugin: Plugin, inner: Any, field: str, method: str = "generate"):
        super().__init__(plugin, inner)
        self._field = field
        self._method = method

    def _call(self, *args: Any, **kwargs: Any) -> Any:
        try:
            got = getattr(self._inner, self._method)(*args, **kwargs)
            return list(got) if self._method == "generate" else got
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            raise ConfigError(f"{self._plugin.describe()}: {self._method}() raised "
                              f"{reason(exc)}", field=self._field) from None

    def generate(self, *args: Any, **kwargs: Any) -> list[Any]:
        return cast(list[Any], self._call(*args, **kwargs))

    def verdict(self, case: Any) -> bool:
        return bool(self._call(case))

    def write(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(*args, **kwargs)


class _Unloadable(Exception):
    """Why an entry point's object cannot be had, in a line."""


def _import(plugin: Plugin) -> Callable[..., Any]:
    if plugin.entry_point is None:
        raise _Unloadable("it has no entry point")
    try:
        loaded = plugin.entry_point.load()
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        raise _Unloadable(reason(exc)) from None
    if not callable(loaded):
        raise _Unloadable(f"it is a {type(loaded).__name__}, not something to call with the "
                          "options")
    return loaded


_LOADED: dict[Plugin, Callable[..., Any]] = {}


@functools.cache
def _scan(kind: PluginKind) -> tuple[Plugin, ...]:
    """The entry points of one group, read once per process."""
    from importlib.metadata import entry_points  # I/O, and not free to import: only here

    found = []
    for ep in entry_points(group=GROUPS[kind]):
        dist = ep.dist
        found.append(Plugin(kind, ep.name, ep.value, dist.name if dist else None,
                            dist.version if dist else None, ep))
    return tuple(found)


__all__ = ["GROUPS", "Plugin", "PluginKind", "build", "check", "find", "in_use", "installed",
           "listed_kind", "load", "load_probe", "load_sensor", "names", "refresh"]
