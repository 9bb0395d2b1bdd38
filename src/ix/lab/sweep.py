"""`sweep:` (DESIGN.md §7): the first subject expanded into a grid of conditions.

Every combination of the swept values (`model: [a, b]`, `temperature: [0, 1]`) is one
subject, named `<subject>[model=b,temperature=1]`; with `ablate: skills` each combination
also runs without each of the subject's skills in turn (`<subject>[-data-cleaning]`,
`<subject>[model=b,-data-cleaning]`). The subject as written comes first, under its own
name: the control. A key is a subject key (`model`, `concurrency`) or else an option of the
subject's runtime (`temperature`, `max_tokens`, …; `a.b` for a key inside a mapping option,
`context_decay.half_life`), checked by the runtime when the run is planned; `skills` is
swept with `ablate`.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, cast

from ix.domain.errors import ConfigError
from ix.domain.types import ORIGIN, Subject, dotted_value

__all__ = ["KEY", "SUBJECT_KEYS", "expand_sweep", "grid_words"]

#: The subject config key that holds a condition's subject, values and ablated skill.
KEY: Final = "sweep"
#: Keys of a subject that a sweep sets on the subject itself (the rest are runtime options).
SUBJECT_KEYS = ("model", "concurrency")
#: Keys a sweep cannot set, with what to do instead.
_NOT_SWEPT = {"skills": "leave skills out in turn with `ablate: skills`",
              "name": "a condition's name is made from its values",
              "profile": "list another subject instead", "runtime": "sweep its options",
              "config": "sweep its keys one by one", "description": "it changes nothing run"}


def grid_words(keys: Mapping[str, Sequence[Any]], ablated: int) -> str:
    """The grid in words: `2 model × 2 temperature × (all skills, or 3 left out)`."""
    factors = [f"{len(v)} {k}" for k, v in keys.items()]
    if ablated:
        factors.append(f"(all skills, or {ablated} left out)")
    return " × ".join(factors)


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def condition_name(subject: str, values: Mapping[str, Any], without: str | None) -> str:
    parts = [f"{k}={_shown(v)}" for k, v in values.items()]
    if without is not None:
        parts.append(f"-{without}")
    return f"{subject}[{','.join(parts)}]"


def _set(mapping: dict[str, Any], dotted: str, value: Any) -> None:
    """Set `a.b.c` in `mapping`, making (or copying) the mappings on the way."""
    *path, last = dotted.split(".")
    for part in path:
        inner = mapping.get(part)
        mapping[part] = inner = dict(inner) if isinstance(inner, Mapping) else {}
        mapping = inner
    mapping[last] = value


def _apply(base: Subject, values: Mapping[str, Any], without: str | None,
           file: Path) -> Subject:
    config = copy.deepcopy(base.config)
    runtime = dict(config.get("runtime") or {})
    origins = dict(config.get("runtime_origins") or {})
    for key, value in values.items():
        if key == "model":
            config["model"] = value
        elif key in SUBJECT_KEYS:
            cast("dict[str, Any]", config)[key] = value  # one of SubjectConfig's keys
            continue
        _set(runtime, key, value)  # a runtime option; `a.b` one inside a mapping option
        top = key.split(".")[0]
        origins[top] = [str(file), f"sweep.{top}"]
    config["runtime"], config["runtime_origins"] = runtime, origins
    if without is not None:
        config["skills"] = [s for s in config.get("skills", []) if s["name"] != without]
    config[KEY] = {"of": base.name, "values": dict(values), "without": without}
    config[ORIGIN] = base.name
    return Subject(name=condition_name(base.name, values, without),
                   description=base.description, config=config)


def expand_sweep(base: Subject, sweep: Mapping[str, Any], file: Path) -> list[Subject]:
    """`base` (the control, unchanged) and its conditions, in grid order: the values'
    product, each without each skill in turn when `ablate: skills`."""
    keys = [k for k in sweep if k != "ablate"]
    for key in keys:
        if key in _NOT_SWEPT:
            raise ConfigError(f"{key!r} cannot be swept: {_NOT_SWEPT[key]}", file=file,
                              field=f"sweep.{key}")
    ablated: list[str | None] = [None]
    if sweep.get("ablate") == "skills":
        skills = [s["name"] for s in base.config.get("skills", [])]
        if not skills:
            raise ConfigError(f"ablate: skills, but subject {base.name!r} has no skills to leave "
                              "out", file=file, field="sweep.ablate")
        ablated += skills
    current = {**base.config.get("runtime", {}), **{k: base.config.get(k) for k in SUBJECT_KEYS}}

    def own(key: str, value: Any) -> bool:
        have = dotted_value(current, key)
        return have == value and type(have) is type(value)

    out = [base]
    for combo in itertools.product(*(sweep[k] for k in keys)):
        values = dict(zip(keys, combo, strict=True))
        if all(own(k, v) for k, v in values.items()):
            values = {}  # the subject's own values: named as the subject
        for without in ablated:
            if values or without is not None:  # else the subject as written, already first
                out.append(_apply(base, values, without, file))
    return out
