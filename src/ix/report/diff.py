"""What changed in configuration between two runs: a structured diff of their `spec.yaml`.

Only what shapes the results is compared — the resolved `config`, the command-line
`overrides`, `seed`, `trials` (and their mode), `concurrency`, the `versions` of ix,
Python and the runtime packages, the lab's `git_commit`, and the model versions `observed`
— never run ids, times or status. Lists of named mappings (subjects, skills) are matched by
`name`, so reordering is not a change.
"""

from typing import Any

KEYS = ("config", "overrides", "seed", "trials", "trials_mode", "concurrency", "versions",
        "git_commit", "observed")

_MISSING = object()


def spec_changes(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """`[{path, change: added|removed|changed, before, after}]`, in a stable order."""
    out: list[dict[str, Any]] = []
    for key in KEYS:
        _diff(key, before.get(key, _MISSING), after.get(key, _MISSING), out)
    return out


def _named(items: Any) -> dict[str, Any] | None:
    """A list of mappings each with a distinct string `name`, keyed by it (else None)."""
    if not isinstance(items, list) or not items:
        return None
    names = [i.get("name") if isinstance(i, dict) else None for i in items]
    if not all(isinstance(n, str) for n in names) or len(set(names)) != len(names):
        return None
    return dict(zip(names, items, strict=True))  # type: ignore[arg-type]


def _diff(path: str, a: Any, b: Any, out: list[dict[str, Any]]) -> None:
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
