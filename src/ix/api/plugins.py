"""The installed plugins (`ix plugins`): runtime, sensor, probe, scorer and reporter kinds
from other distributions (docs/plugins.md)."""

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ix.eval import plugins
from ix.eval.plugins import Plugin
from ix.eval.reporters import SUFFIXES
from ix.eval.scorers import SCORER_KINDS
from ix.eval.sensors import sensor_kinds
from ix.runtimes import available

if TYPE_CHECKING:
    from ix.api.schemas import PluginEntry, PluginsOutput

__all__ = ["InstalledPlugin", "list_plugins", "plugins_output"]


@dataclass(frozen=True)
class InstalledPlugin:
    """A plugin as `ix plugins` shows it. `shadowed`: a built-in kind has its name, and the
    built-in wins. `checked`: it was imported (`--check`), and `error` says why that failed."""

    plugin: Plugin
    shadowed: bool
    checked: bool = False
    error: str | None = None

    @property
    def loads(self) -> bool | None:
        """Whether it imports: None when it was not checked."""
        return (self.error is None) if self.checked else None

    def as_dict(self) -> "PluginEntry":
        p = self.plugin
        return {"group": p.kind, "name": p.name, "distribution": p.distribution,
                "version": p.version, "target": p.target, "shadowed": self.shadowed,
                "loads": self.loads, "error": self.error}


def list_plugins(check: bool = False) -> list[InstalledPlugin]:
    """Every installed plugin, runtimes first, then sensors, probes, scorers and reporters,
    each by name; with `check`, each is imported and a failure is reported (never raised)."""
    builtin: dict[str, set[str]] = {"runtime": set(available()), "sensor": set(sensor_kinds()),
                                    "probe": set(), "scorer": set(SCORER_KINDS),
                                    "reporter": set(SUFFIXES)}
    return [InstalledPlugin(p, p.name in builtin[p.kind], check,
                            plugins.check(p) if check else None)
            for p in plugins.installed()]


def plugins_output(found: list[InstalledPlugin]) -> "PluginsOutput":
    """`ix plugins --json`."""
    return {"plugins": [p.as_dict() for p in found]}
