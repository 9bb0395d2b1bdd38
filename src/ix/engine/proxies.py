"""A subject's proxy (`proxy:`, `--proxy`; docs/subjects.md, "Proxy subjects"): how it is
spelt and the runtime it runs with. Planning only, none of the run machinery: `ix validate`
checks each `proxy:` here, `ix calibrate` (`ix.engine.calibrate`) runs it.

A proxy is spelt as one of:

- a name: a subject of the experiment (its runtime as resolved), else a registry subject
  (`claude-haiku`, one added with `ix subjects add`), else a runtime kind (`lexical`);
- a runtime mapping (`{kind: anthropic, model: claude-haiku-4-5}`; on the command line as
  YAML text).

The proxy runs the subject's own skills on that runtime: a kind (or mapping) of the
subject's own kind is merged over its runtime, as a subject's layers are (a smaller `model`
keeps the rest); another kind replaces it.
"""

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ix.domain.errors import ConfigError, did_you_mean
from ix.domain.types import Subject
from ix.fs.yamlio import parse_yaml
from ix.lab.loader import LoadedExperiment
from ix.lab.subjects import load_registry
from ix.runtimes.registry import available, validate_options

__all__ = ["check_proxies", "proxy_runtime"]


def _spelling(given: str | Mapping[str, Any]) -> str | dict[str, Any]:
    """`--proxy '{kind: lexical, threshold: 1}'` is a mapping; any other text a name."""
    if isinstance(given, str) and given.lstrip().startswith("{"):
        parsed = parse_yaml(given, file="--proxy")
        if not isinstance(parsed, dict) or not isinstance(parsed.get("kind"), str):
            raise ConfigError("a runtime mapping needs a 'kind', e.g. {kind: lexical}",
                              field="--proxy")
        return parsed
    return dict(given) if isinstance(given, Mapping) else given


def proxy_runtime(loaded: LoadedExperiment, subject: Subject, given: str | Mapping[str, Any],
                  *, file: Path | str | None, field: str) -> tuple[str, dict[str, Any], str | None]:
    """The proxy's label, its runtime for `subject`, and the subject of the experiment it
    names (None when it names none); a `ConfigError` at `file`/`field` when it is none of the
    spellings."""
    spelt = _spelling(given)
    own = dict(subject.config.get("runtime") or {})
    if isinstance(spelt, dict):
        label = str(spelt["kind"])
        return label, ({**own, **spelt} if spelt["kind"] == own.get("kind") else spelt), None
    named = {s.name: s for s in loaded.experiment.subjects}
    if spelt in named:
        if spelt == subject.name:
            raise ConfigError(f"{spelt!r} is the subject itself; name a cheaper stand-in",
                              file=file, field=field)
        return spelt, dict(named[spelt].config.get("runtime") or {}), spelt
    registry = load_registry()
    if spelt in registry:
        return spelt, registry[spelt].runtime_spec(), None
    kinds = available()
    if spelt in kinds:
        return spelt, ({**own} if own.get("kind") == spelt else {"kind": spelt}), None
    known = [*named, *registry, *kinds]
    raise ConfigError(
        f"unknown proxy {spelt!r}{did_you_mean(spelt, known)}: give a subject of the "
        f"experiment ({', '.join(named)}), a registry subject ({', '.join(registry)}), a "
        f"runtime kind ({', '.join(kinds)}) or a runtime mapping ({{kind: lexical}})",
        file=file, field=field)


def check_proxies(loaded: LoadedExperiment) -> list[ConfigError]:
    """Each subject's `proxy:` resolved and its runtime's options checked, a problem naming
    `subjects[i].proxy` in experiment.yaml (`ix validate`)."""
    problems = []
    subjects = {s.name: s for s in loaded.experiment.subjects}
    for i, spec in enumerate(loaded.spec.subjects):
        if spec.proxy is None or spec.name not in subjects:
            continue
        field = f"subjects[{i}].proxy"
        try:
            _, runtime, _ = proxy_runtime(loaded, subjects[spec.name], spec.proxy,
                                          file=loaded.config_file, field=field)
            validate_options(runtime)
        except ConfigError as exc:
            inner = (exc.field or "").removeprefix("runtime").lstrip(".")
            where = field if exc.field == field or not inner else f"{field}.{inner}"
            problems.append(ConfigError(exc.message, file=loaded.config_file, field=where))
    return problems
