"""The RFC's own experiment.yaml spelling, read as ix's (docs/experiments.md, "The RFC's
spelling").

The RFC (`shared/seeds/000_…`, "Running an experiment") writes

    probes:
      - file: "cases/must-activate/eval-framework-question.md"
        expectation: "must_trigger"
    sensors:
      - type: "activation"
        target_skill: "build-eval"
    scorers:
      - type: "passfail"
    reporters:
      - type: "console"

which ix reads as `cases: {files: [{file, expectation}]}`, `sensors: [{kind: activation,
skill: build-eval}]`, `scorers: [{kind: majority}]` (a trial's pass/fail, aggregated by
the majority vote: ix's default) and `reporters: [{kind: console}]`. `normalise` rewrites the
mapping before it is validated, so every check of ix's own fields applies; `notes` says what
was rewritten, each as (field, ix's spelling), and `ix validate` and `ix run` print each as a
design warning (`rfc-spelling`). Pure: no file is read here.
"""

from collections.abc import Mapping
from typing import Any

__all__ = ["CODE", "normalise", "notes"]

#: The design warning's code (`ix.eval.design`).
CODE = "rfc-spelling"
#: The RFC's scorer kinds, in ix's words.
_SCORERS = {"passfail": "majority", "pass_fail": "majority"}
#: The lists whose items name their kind as `type:`.
_KINDED = ("sensors", "scorers", "reporters")


def normalise(data: Any) -> tuple[Any, list[tuple[str, str]]]:
    """`data` (experiment.yaml as parsed) in ix's spelling, and what was rewritten. Anything
    that is not the RFC's spelling is left as it is, for the schema to judge."""
    if not isinstance(data, Mapping):
        return data, []
    out = dict(data)
    said: list[tuple[str, str]] = []
    probes = out.get("probes")
    if isinstance(probes, list) and all(isinstance(p, Mapping) and "file" in p for p in probes):
        cases = out.get("cases")
        if cases is None or (isinstance(cases, Mapping) and "files" not in cases):
            out["cases"] = {**(cases or {}), "files": [dict(p) for p in probes]}
            del out["probes"]
            said.append(("probes", "cases: {files: [{file: ..., expectation: ...}]}"))
    for key in _KINDED:
        items = out.get(key)
        if not isinstance(items, list):
            continue
        rewritten = [_item(key, item) for item in items]
        for i, (item, changed) in enumerate(rewritten):
            if changed:
                said.append((f"{key}[{i}]", _spelling(item)))
        out[key] = [item for item, _ in rewritten]
    return out, said


def notes(data: Any) -> list[tuple[str, str]]:
    """What `normalise` would rewrite in `data`: (field, ix's spelling) each."""
    return normalise(data)[1]


def _item(key: str, item: Any) -> tuple[Any, bool]:
    """One item of `sensors:`/`scorers:`/`reporters:` in ix's spelling, and whether it
    changed: `type` is `kind`, a sensor's `target_skill` its `skill`, `passfail` the
    majority scorer."""
    if not isinstance(item, Mapping) or "type" not in item or "kind" in item:
        return item, False
    out: dict[str, Any] = {"kind": item["type"], **{k: v for k, v in item.items()
                                                     if k != "type"}}
    if key == "sensors" and "target_skill" in out and "skill" not in out:
        out["skill"] = out.pop("target_skill")
    if key == "scorers" and isinstance(out["kind"], str):
        out["kind"] = _SCORERS.get(out["kind"], out["kind"])
    return out, True


def _spelling(item: Mapping[str, Any]) -> str:
    """An item as ix writes it: `{kind: activation, skill: build-eval}`."""
    return "{" + ", ".join(f"{k}: {v}" for k, v in item.items()) + "}"
