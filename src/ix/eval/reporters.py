"""Reporters: what experiment.yaml's `reporters:` names, checked when a run is planned.

Each reporter writes one output at the end of a run, into the run's folder
(`results/runs/<run_id>/`), named after its format: `console` → `report.txt` (the table of `ix
report`), `md` → `report.md`, `html` → `report.html`, `json` → `report.data.json` (`report.json` is
the run's own, what `ix report` reads), `junit` → `report.junit.xml`, `github` → `report.github.md`
(`ix.api.reporters` writes them with the renderers of `ix report --format`, at
`ix.store.layout.RunDir.output(suffix)`). A kind ix does not know is looked up in the entry-point
group `ix.reporters` (`ix.eval.plugins`): its object is called with the options and returns an
object with `write(report, folder)`, given the report's data (what `ix report --json` prints) and
the run folder.

Checked here, below the engine, so that `ix validate` refuses a bad reporter before a run
(exit 2, naming `reporters[i].kind`), as it does a bad sensor.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ix.domain.errors import ConfigError, did_you_mean, raise_all
from ix.eval import plugins

__all__ = ["SUFFIXES", "BuiltinReporter", "build_reporters"]

#: Each built-in reporter: the suffix of the file it writes in the run folder, `report.<it>`.
SUFFIXES: dict[str, str] = {"console": "txt", "md": "md", "html": "html", "json": "data.json",
                            "junit": "junit.xml", "github": "github.md"}
#: The options of each built-in reporter (besides `kind`).
_OPTIONS: dict[str, tuple[str, ...]] = {"junit": ("per_case",)}


@dataclass(frozen=True)
class BuiltinReporter:
    """A reporter of ix's own: its kind, the file it writes and its options."""

    kind: str
    options: Mapping[str, Any]

    @property
    def suffix(self) -> str:
        return SUFFIXES[self.kind]


def build_reporters(specs: Sequence[Mapping[str, Any]] | None) -> tuple[Any, ...]:
    """Every reporter of `reporters:`, checked: a `BuiltinReporter`, or a plugin's object
    (with `write`); a `ConfigError` naming `reporters[i]`'s key otherwise."""
    out: list[Any] = []
    problems: list[ConfigError] = []
    for i, spec in enumerate(specs or ()):
        try:
            _build(i, spec, out)
        except ConfigError as exc:
            problems.append(exc)
    raise_all(problems)
    return tuple(out)


def _build(i: int, spec: Mapping[str, Any], out: list[Any]) -> None:
    """The reporter `reporters[i]`, checked, appended to `out`."""
    field = f"reporters[{i}]"
    kind, options, outside = plugins.listed_kind("reporter", spec, list(SUFFIXES),
                                                 field=field)
    if outside is not None:
        out.append(outside)
        return
    allowed = _OPTIONS.get(kind, ())
    for key, value in options.items():
        if key not in allowed:
            takes = f"takes {', '.join(allowed)}" if allowed else "takes no option"
            raise ConfigError(f"unknown key {key!r}{did_you_mean(key, allowed)}: the "
                              f"{kind} reporter {takes}", field=f"{field}.{key}")
        if key == "per_case" and not isinstance(value, bool):
            raise ConfigError(f"must be true or false, got {value!r}",
                              field=f"{field}.{key}")
    if any(isinstance(r, BuiltinReporter) and r.kind == kind for r in out):
        raise ConfigError(f"the {kind} reporter is named twice (it writes one file, "
                          f"report.{SUFFIXES[kind]})", field=f"{field}.kind")
    out.append(BuiltinReporter(kind, options))
