"""What changed in configuration between two runs: a structured diff of their `spec.yaml`.

Only what shapes the results is compared — the resolved `config`, the command-line
`overrides`, `seed` and `seeding` (a run made before spec.yaml said is `per-subject`),
`trials` (and their mode), `concurrency`, the `versions` of ix,
Python and the runtime packages, the lab's `git_commit`, and the model versions `observed`
— never run ids, times or status. Lists of named mappings (subjects, skills) are matched by
`name`, so reordering is not a change.
"""

import difflib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ix.report.schemas import SkillChange, SpecChange

KEYS = ("config", "overrides", "seed", "seeding", "trials", "trials_mode", "concurrency",
        "versions", "git_commit", "observed")

_MISSING = object()


def spec_changes(before: dict[str, Any], after: dict[str, Any]) -> "list[SpecChange]":
    """`[{path, change: added|removed|changed, before, after}]`, in a stable order."""
    out: list[SpecChange] = []
    for key in KEYS:
        _diff(key, _value(before, key), _value(after, key), out)
    return out


def _value(spec: dict[str, Any], key: str) -> Any:
    """`spec[key]`; a run ix executed before spec.yaml recorded its `seeding` drew its trial
    seeds per subject (DESIGN.md §2), so it says `per-subject`."""
    if key == "seeding" and key not in spec and spec.get("seed") is not None:
        return "per-subject"
    return spec.get(key, _MISSING)


def _named(items: Any) -> dict[str, Any] | None:
    """A list of mappings each with a distinct string `name`, keyed by it (else None)."""
    if not isinstance(items, list) or not items:
        return None
    names = [i.get("name") if isinstance(i, dict) else None for i in items]
    if not all(isinstance(n, str) for n in names) or len(set(names)) != len(names):
        return None
    return dict(zip(names, items, strict=True))  # type: ignore[arg-type]


def _diff(path: str, a: Any, b: Any, out: "list[SpecChange]") -> None:
    if a is _MISSING and b is _MISSING:
        return
    if a is _MISSING or b is _MISSING:
        out.append({"path": path, "change": "added" if a is _MISSING else "removed",
                    "before": None if a is _MISSING else a,
                    "after": None if b is _MISSING else b})
        return
    if a == b:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in [*a, *(k for k in b if k not in a)]:
            _diff(f"{path}.{key}", a.get(key, _MISSING), b.get(key, _MISSING), out)
        return
    named_a, named_b = _named(a), _named(b)
    if named_a is not None and named_b is not None:
        for name in [*named_a, *(n for n in named_b if n not in named_a)]:
            _diff(f"{path}[{name}]", named_a.get(name, _MISSING), named_b.get(name, _MISSING),
                  out)
        return
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _diff(f"{path}[{i}]", x, y, out)
        return
    out.append({"path": path, "change": "changed", "before": a, "after": b})


def _skills(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each skill of a run's subjects by name: what it recorded, and which subjects had it."""
    out: dict[str, dict[str, Any]] = {}
    for subject in (spec.get("config") or {}).get("subjects") or []:
        for skill in subject.get("skills") or []:
            if not isinstance(skill, dict) or not isinstance(skill.get("name"), str):
                continue
            entry = out.setdefault(skill["name"], {**skill, "subjects": []})
            entry["subjects"].append(subject.get("name"))
    return out


def skill_changes(before: dict[str, Any], after: dict[str, Any]) -> "list[SkillChange]":
    """The skills whose SKILL.md changed between two runs (by sha256 or description): `{skill,
    subjects, sha256_before, sha256_after, description_before, description_after,
    description_changed}`. A description is None when the run did not record it (runs made
    before ix recorded it)."""
    a, b = _skills(before), _skills(after)
    out: list[SkillChange] = []
    for name in [n for n in a if n in b]:
        x, y = a[name], b[name]
        if x.get("sha256") == y.get("sha256") and x.get("description") == y.get("description"):
            continue
        da, db = x.get("description"), y.get("description")
        out.append({"skill": name, "subjects": y["subjects"],
                    "sha256_before": x.get("sha256"), "sha256_after": y.get("sha256"),
                    "description_before": da, "description_after": db,
                    "description_changed": None if da is None or db is None else da != db,
                    "description_diff": word_diff(da, db) if da and db else []})
    return out


def word_diff(before: str, after: str) -> list[dict[str, str]]:
    """The words that changed, in order: `[{removed, added}]` (either may be empty)."""
    a, b = before.split(), after.split()
    return [{"removed": " ".join(a[i1:i2]), "added": " ".join(b[j1:j2])}
            for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b,
                                                              autojunk=False).get_opcodes()
            if op != "equal"]
