"""`probe:` in experiment.yaml: cases generated before a run, recorded so the run reproduces.

```yaml
probe:
  kind: paraphrase        # built in; or a probe plugin's kind (docs/plugins.md)
  n: 3                    # rewordings of each must / not case, added beside it
  runtime: claude-sonnet-api   # who rewords: a subject profile or a runtime kind
```

`paraphrase` asks the runtime, once per case, for `n` rewordings that keep the request's
meaning (seeded from the experiment's seed and the case id); each becomes a case `<id>~p1` …
`<id>~pN` with the case's expectation, tags and history, and `metadata.paraphrase_of`; every
generated case has `metadata.generated_by` (the probe's kind), and each run's `spec.yaml`
lists them with their prompts (`config.cases.generated`). A plugin probe is called with its
options and its `generate()` yields cases (mappings with `prompt`, or `EvalCase`s), added to
the suite's.

What a probe generated is written to `<experiment>/results/probes/<kind>-<key>.json` (the
key digests the probe's options, the seed and the cases it read) before anything runs, and
read back from there whenever the same probe meets the same cases again: a resumed run, a
rerun, a colleague's checkout with the file. So a run never depends on a model answering
the same way twice, and the generated prompts can be read (and reviewed) beside the results.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, ValidationError

from ix.domain.errors import ConfigError, TrialError
from ix.domain.model import Model
from ix.domain.types import Subject
from ix.eval.models import EvalCase
from ix.eval.plugins import build, find
from ix.eval.validation import from_validation_error
from ix.fs.files import write_json_atomic
from ix.fs.yamlio import read_text
from ix.lab.loader import LoadedExperiment
from ix.lab.subjects import load_registry
from ix.runtimes.registry import RuntimeContext, available, build_runtime
from ix.store.layout import ExperimentDir

__all__ = ["GENERATED_BY", "PARAPHRASE", "PROBES_DIR", "with_probe"]

PARAPHRASE = "paraphrase"
PROBES_DIR = "probes"
#: The metadata key a generated case carries: the probe's kind (the run's spec.yaml lists
#: these cases with their prompts).
GENERATED_BY = "generated_by"
#: Between a case's id and its paraphrase's number: `must-001~p2`.
SEPARATOR = "~p"


class ParaphraseOptions(Model):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    n: int = Field(3, ge=1, le=20)
    runtime: str = Field(min_length=1)


def with_probe(loaded: LoadedExperiment) -> LoadedExperiment:
    """`loaded` with the cases its `probe:` generates (recorded, or generated now and
    recorded); unchanged without a probe."""
    probe = loaded.spec.probe
    if probe is None:
        return loaded
    kind = str(probe["kind"])
    options = {k: v for k, v in probe.items() if k != "kind"}
    cases = [c for c in loaded.experiment.cases if c.expectation != "acceptable"]
    key = hashlib.sha256(json.dumps(
        {"kind": kind, "options": options, "seed": loaded.experiment.seed,
         "cases": [[c.id, c.expectation, c.prompt] for c in cases]},
        sort_keys=True, default=str).encode()).hexdigest()[:16]
    record = ExperimentDir.at(loaded.path).results / PROBES_DIR / f"{kind}-{key}.json"
    if record.is_file():
        generated = [EvalCase.model_validate(c)
                     for c in json.loads(read_text(record))["cases"]]
    else:
        generated = [c.model_copy(update={"metadata": {**c.metadata, GENERATED_BY: kind}})
                     for c in (_paraphrases(loaded, cases, options) if kind == PARAPHRASE
                               else _plugin(kind, options, loaded))]
        write_json_atomic(record, {"kind": kind, "options": options, "key": key,
                                   "cases": [c.model_dump(mode="json") for c in generated]},
                          shared=True)
    known = {c.id for c in loaded.experiment.cases}
    clash = next((c.id for c in generated if c.id in known), None)
    if clash is not None:
        raise ConfigError(f"the probe generated case {clash!r}, which a case file has "
                          "already", file=loaded.config_file, field="probe")
    experiment = loaded.experiment.model_copy(
        update={"cases": (*loaded.experiment.cases, *generated)})
    return replace(loaded, experiment=experiment)


def _runtime_spec(name: str, loaded: LoadedExperiment) -> dict[str, Any]:
    registry = load_registry()
    if name in registry:
        return registry[name].runtime_spec()
    if name in available():
        own = loaded.experiment.runtime
        return dict(own) if own.get("kind") == name else {"kind": name}
    raise ConfigError(f"unknown runtime {name!r}: give a subject profile "
                      f"({', '.join(registry)}) or a runtime kind ({', '.join(available())})",
                      file=loaded.config_file, field="probe.runtime")


def _request(prompt: str, n: int) -> str:
    return (f"Reword the request below {n} different ways, as different people would ask "
            "for the same thing. Keep its meaning, its intent and every name, file and "
            "number in it; vary the wording, the length and the tone. Do not answer it.\n\n"
            f"Request: {json.dumps(prompt, ensure_ascii=False)}\n\n"
            'Answer with JSON only, exactly: {"paraphrases": ["...", "..."]}')


def _parse(text: str, n: int, prompt: str) -> list[str]:
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.strip("`").removeprefix("json").strip()
    try:
        data = json.loads(stripped)
    except ValueError:
        raise ValueError(f"the answer is not the JSON asked for: {stripped[:80]!r}") from None
    items = data.get("paraphrases") if isinstance(data, dict) else None
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise ValueError('the answer must be {"paraphrases": [strings]}')
    kept = list(dict.fromkeys(i.strip() for i in items if i.strip() and i.strip() != prompt))
    if len(kept) < n:
        raise ValueError(f"asked for {n} different rewordings, got {len(kept)}")
    return kept[:n]


def _paraphrases(loaded: LoadedExperiment, cases: Sequence[EvalCase],
                 options: Mapping[str, Any]) -> list[EvalCase]:
    try:
        opts = ParaphraseOptions.model_validate(options)
    except ValidationError as exc:
        raise from_validation_error(exc, ParaphraseOptions, prefix="probe").at(
            loaded.config_file) from None
    runtime = build_runtime(_runtime_spec(opts.runtime, loaded), RuntimeContext())
    subject = Subject(name="paraphrase", description="ix's paraphrase probe",
                      config={"skills": []})

    async def one(case: EvalCase) -> list[EvalCase]:
        seed = int.from_bytes(hashlib.sha256(
            f"{loaded.experiment.seed}:paraphrase:{case.id}".encode()).digest()[:8], "big") >> 1
        stimulus = EvalCase(id=f"paraphrase-{case.id}", prompt=_request(case.prompt, opts.n),
                            expectation="should_not_trigger")
        try:
            obs = await runtime.invoke(subject, stimulus, seed=seed, attempt=0)
            texts = _parse(obs.content or obs.stdout or obs.body or "", opts.n, case.prompt)
        except (TrialError, ValueError) as exc:
            raise ConfigError(f"paraphrasing case {case.id!r} failed: {exc}",
                              file=loaded.config_file, field="probe") from None
        return [case.model_copy(update={
            "id": f"{case.id}{SEPARATOR}{i}", "prompt": text,
            "metadata": {**case.metadata, "paraphrase_of": case.id}})
            for i, text in enumerate(texts, 1)]

    async def every() -> list[list[EvalCase]]:
        return list(await asyncio.gather(*(one(c) for c in cases)))

    return [c for group in asyncio.run(every()) for c in group]


def _plugin(kind: str, options: Mapping[str, Any], loaded: LoadedExperiment) -> list[EvalCase]:
    plugin = find("probe", kind, field="probe.kind")
    if plugin is None:
        raise ConfigError(f"unknown probe {kind!r}: `{PARAPHRASE}` is built in; other kinds "
                          "come from plugins (ix plugins lists them)", file=loaded.config_file,
                          field="probe.kind")
    try:  # a plugin's error (a `SystemExit` too) names the experiment file
        probe = build(plugin, options, field="probe")
        made = probe.generate()
    except ConfigError as exc:
        raise exc.at(loaded.config_file) from None
    out = []
    for i, item in enumerate(made):
        try:
            out.append(item if isinstance(item, EvalCase) else EvalCase.model_validate(
                {**dict(item), "id": dict(item).get("id", f"{kind}-{i + 1:03d}")}))
        except (ValidationError, TypeError, ValueError) as exc:
            raise ConfigError(f"probe {kind!r} generated a case ix cannot read: {exc}",
                              file=loaded.config_file, field="probe") from None
    return out


def recorded(path: Path) -> list[Path]:
    """The probe records of an experiment folder (for listings)."""
    folder = ExperimentDir.at(path).results / PROBES_DIR
    return sorted(folder.glob("*.json")) if folder.is_dir() else []
