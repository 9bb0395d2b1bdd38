"""`probe:` in experiment.yaml: cases generated before a run, recorded so the run reproduces.

```yaml
probe:
  kind: paraphrase        # built in (also generate, and agent: ix.engine.probe_agent); or a
                          # probe plugin's kind (docs/plugins.md)
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
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError

from ix.domain.errors import ConfigError, TrialError
from ix.domain.model import Model
from ix.domain.types import Subject
from ix.engine.plan import derived_seed
from ix.engine.probe_agent import AGENT, agent_cases, agent_digest, skill_under_test
from ix.engine.probe_asking import json_answer as _json_answer
from ix.engine.probe_asking import runtime_spec as _runtime_spec
from ix.eval.models import EvalCase
from ix.eval.plugins import build, find
from ix.eval.validation import from_validation_error
from ix.fs.appending import read_log
from ix.fs.files import write_json_atomic
from ix.fs.yamlio import read_text
from ix.lab.loader import LoadedExperiment
from ix.runtimes.registry import RuntimeContext, build_runtime
from ix.store.layout import ExperimentDir

__all__ = ["DRAFT", "GENERATE", "GENERATED_BY", "PARAPHRASE", "PROBES_DIR", "REVIEWS",
           "drafts", "with_probe"]

PARAPHRASE = "paraphrase"
#: `probe: {kind: generate, from: skill | docs: PATH, n: N, runtime: R}`: new must, should-not
#: and near-miss prompts, drafts until `ix cases review` accepts them (issue 38)
GENERATE = "generate"
#: A generated case's `metadata.status` until it is reviewed.
DRAFT = "draft"
#: The decisions of `ix cases review`, one JSON line each: {"id", "decision", "at"}.
REVIEWS = "reviews.jsonl"
PROBES_DIR = "probes"
#: The metadata key a generated case carries: the probe's kind (the run's spec.yaml lists
#: these cases with their prompts).
GENERATED_BY = "generated_by"
#: Between a case's id and its paraphrase's number: `must-001~p2`.
SEPARATOR = "~p"


class GenerateOptions(Model):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, populate_by_name=True)

    #: `skill`: from the experiment's skill (its SKILL.md)
    from_: Literal["skill"] | None = Field(None, alias="from")
    #: or from a document (a path relative to the experiment, inside the lab)
    docs: str | None = None
    #: prompts of each kind: must, should-not and near-miss
    n: int = Field(5, ge=1, le=50)
    runtime: str = Field(min_length=1)


class ParaphraseOptions(Model):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    n: int = Field(3, ge=1, le=20)
    runtime: str = Field(min_length=1)


def with_probe(loaded: LoadedExperiment, include_drafts: bool = False) -> LoadedExperiment:
    """`loaded` with the cases its `probe:` generates (recorded, or generated now and
    recorded); unchanged without a probe. A `generate` probe's cases are drafts: only those
    `ix cases review` accepted run (they are case files then), the rest with
    `include_drafts` (`ix run --include-drafts`), never the dropped."""
    probe = loaded.spec.probe
    if probe is None:
        return loaded
    kind = str(probe["kind"])
    options = {k: v for k, v in probe.items() if k != "kind"}
    cases = [c for c in loaded.experiment.cases if c.expectation != "acceptable"]
    keyed: dict[str, Any] = {
        "kind": kind, "options": options, "seed": loaded.experiment.seed,
        # a generate probe reads no case (its accepted drafts become case files)
        "cases": [] if kind == GENERATE else [[c.id, c.expectation, c.prompt] for c in cases]}
    if kind == AGENT:  # an edited persona asks again
        keyed["file_sha256"] = agent_digest(loaded, options)
    key = hashlib.sha256(json.dumps(keyed, sort_keys=True, default=str).encode()
                         ).hexdigest()[:16]
    record = ExperimentDir.at(loaded.path).results / PROBES_DIR / f"{kind}-{key}.json"
    if record.is_file():
        generated = [EvalCase.model_validate(c)
                     for c in json.loads(read_text(record))["cases"]]
    else:
        made = (_paraphrases(loaded, cases, options) if kind == PARAPHRASE
                else _generated(loaded, options) if kind == GENERATE
                else agent_cases(loaded, cases, options, skill_under_test(loaded))
                if kind == AGENT else _plugin(kind, options, loaded))
        generated = [c.model_copy(update={"metadata": {**c.metadata, GENERATED_BY: kind}})
                     for c in made]
        write_json_atomic(record, {"kind": kind, "options": options, "key": key,
                                   "cases": [c.model_dump(mode="json") for c in generated]},
                          shared=True)
    known = {c.id for c in loaded.experiment.cases}
    if kind == GENERATE:  # accepted ones are case files now; dropped ones never run
        decided = _decisions(loaded.path)
        generated = [c for c in generated if c.id not in known
                     and include_drafts and decided.get(c.id) != "drop"]
    clash = next((c.id for c in generated if c.id in known), None)
    if clash is not None:
        raise ConfigError(f"the probe generated case {clash!r}, which a case file has "
                          "already", file=loaded.config_file, field="probe")
    experiment = loaded.experiment.model_copy(
        update={"cases": (*loaded.experiment.cases, *generated)})
    return replace(loaded, experiment=experiment)


def _decisions(experiment: Path) -> dict[str, str]:
    """`ix cases review`'s last decision on each generated case: accept or drop."""
    path = ExperimentDir.at(experiment).results / PROBES_DIR / REVIEWS
    out: dict[str, str] = {}
    for item in read_log(path, _decision, "a review", None):
        out[item["id"]] = item["decision"]
    return out


def _decision(item: Any) -> dict[str, Any]:
    if not isinstance(item, dict) or item.get("decision") not in ("accept", "drop") \
            or not isinstance(item.get("id"), str):
        raise ValueError("not a review decision")
    return item


def drafts(experiment: Path) -> list[EvalCase]:
    """The generated cases of the experiment's `generate` records not reviewed yet (and not
    case files already), oldest record first."""
    decided = _decisions(experiment)
    folder = ExperimentDir.at(experiment).results / PROBES_DIR
    out: list[EvalCase] = []
    for record in sorted(folder.glob(f"{GENERATE}-*.json")) if folder.is_dir() else []:
        for c in json.loads(read_text(record))["cases"]:
            case = EvalCase.model_validate(c)
            if case.id not in decided and all(x.id != case.id for x in out):
                out.append(case)
    return out


def _generated(loaded: LoadedExperiment, options: Mapping[str, Any]) -> list[EvalCase]:
    """Must, should-not and near-miss prompts for the skill (or from a document), asked of
    the probe's runtime once, seeded; each a draft (`metadata.status`)."""
    try:
        opts = GenerateOptions.model_validate(options)
    except ValidationError as exc:
        raise from_validation_error(exc, GenerateOptions, prefix="probe").at(
            loaded.config_file) from None
    if (opts.from_ is None) == (opts.docs is None):
        raise ConfigError("give one of `from: skill` and `docs: PATH`",
                          file=loaded.config_file, field="probe.from")
    source = _source(loaded, opts)
    runtime = build_runtime(_runtime_spec(opts.runtime, loaded), RuntimeContext())
    subject = Subject(name="generate", description="ix's case generator",
                      config={"skills": []})
    seed = derived_seed(f"{loaded.experiment.seed}:generate")
    ask = EvalCase(id="generate", prompt=_generate_request(source, opts.n),
                   expectation="should_not_trigger")
    try:
        obs = asyncio.run(runtime.invoke(subject, ask, seed=seed, attempt=0))
        made = _parse_generated(obs.content or obs.stdout or obs.body or "", opts.n)
    except (TrialError, ValueError) as exc:
        raise ConfigError(f"generating cases failed: {exc}", file=loaded.config_file,
                          field="probe") from None
    out = []
    for key, expectation, prefix, tags in (
            ("must", "must_trigger", "gen-must", ()),
            ("should_not", "should_not_trigger", "gen-not", ()),
            ("near_miss", "should_not_trigger", "gen-near", ("near-miss",))):
        for i, prompt in enumerate(made[key], 1):
            out.append(EvalCase(id=f"{prefix}-{i:03d}", prompt=prompt, expectation=expectation,
                                tags=("generated", *tags), metadata={"status": DRAFT}))
    return out


def _source(loaded: LoadedExperiment, opts: GenerateOptions) -> str:
    if opts.docs is not None:
        path = (loaded.path / opts.docs).resolve()
        if not path.is_file() or not path.is_relative_to(loaded.lab.resolve()):
            raise ConfigError(f"{opts.docs!r} is no file inside the lab",
                              file=loaded.config_file, field="probe.docs")
        return f"Documentation:\n{read_text(path)[:20_000]}"
    exp = loaded.experiment
    # the skill under test: the experiment's, else its sensor's, else the first subject's
    skill = exp.skill or exp.sensor_options.get("skill") or next(
        (_name(x) for s in exp.subjects for x in s.config.get("skills") or ()), None)
    path = loaded.lab / "skills" / str(skill) / "SKILL.md"
    if not skill or not path.is_file():
        raise ConfigError("`from: skill` needs the skill under test (`skill:`, the sensor's "
                          "`skill`, or a subject's), with its skills/<name>/SKILL.md",
                          file=loaded.config_file, field="probe.from")
    return f"The skill {skill!r}:\n{read_text(path)[:20_000]}"


def _name(skill: Any) -> str:
    return str(skill.get("name")) if isinstance(skill, Mapping) else str(skill)


def _generate_request(source: str, n: int) -> str:
    return (f"{source}\n\nWrite test prompts for whether an assistant uses this skill when, "
            f"and only when, it should: {n} requests that should make it use the skill "
            f"(must), {n} ordinary requests that should not (should_not), and {n} near misses "
            "that look related but should not use it (near_miss). Write them as different "
            "users would, with concrete details; do not answer them.\n\n"
            'Answer with JSON only, exactly: {"must": [...], "should_not": [...], '
            '"near_miss": [...]}')


def _parse_generated(text: str, n: int) -> dict[str, list[str]]:
    data = _json_answer(text)
    out = {}
    for key in ("must", "should_not", "near_miss"):
        items = data.get(key) if isinstance(data, dict) else None
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise ValueError(f'the answer must hold "{key}": [strings]')
        out[key] = list(dict.fromkeys(i.strip() for i in items if i.strip()))[:n]
    return out


def _request(prompt: str, n: int) -> str:
    return (f"Reword the request below {n} different ways, as different people would ask "
            "for the same thing. Keep its meaning, its intent and every name, file and "
            "number in it; vary the wording, the length and the tone. Do not answer it.\n\n"
            f"Request: {json.dumps(prompt, ensure_ascii=False)}\n\n"
            'Answer with JSON only, exactly: {"paraphrases": ["...", "..."]}')


def _parse(text: str, n: int, prompt: str) -> list[str]:
    data = _json_answer(text)
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
        seed = derived_seed(f"{loaded.experiment.seed}:paraphrase:{case.id}")
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
        raise ConfigError(f"unknown probe {kind!r}: `{PARAPHRASE}`, `{GENERATE}` and "
                          f"`{AGENT}` are built in; other kinds "
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
