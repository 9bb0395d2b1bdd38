"""Load an experiment directory into an `Experiment`, with every rule of `001_…` and DESIGN.md §2.

Loading reads and never writes: a bad experiment fails here, before anything under
`results/` exists.
"""

import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import Any

from ix.domain.errors import ConfigError, did_you_mean, flatten, raise_all
from ix.domain.types import Subject
from ix.domain.workspace import Fixture, Workspace
from ix.eval.dialect import normalise
from ix.eval.models import SKILL_RUNTIMES, EvalCase, Experiment
from ix.eval.outcome_sensors import CASE_CHECK_KINDS, with_experiment
from ix.eval.sensors import build_sensor
from ix.fs.case_list import listed_cases
from ix.fs.case_tables import load_case_table
from ix.fs.fixtures import case_fixtures, template_fixtures
from ix.fs.frontmatter import read_frontmatter
from ix.fs.names import check_distinct, check_name, shown, skeleton
from ix.fs.resolve import EXPERIMENT_FILE
from ix.fs.yamlio import load_yaml_file
from ix.lab.config import Defaults, resolve_defaults
from ix.lab.context import Context, load_context
from ix.lab.history import turns_of
from ix.lab.schema import (
    CaseSpec,
    CasesSpec,
    ExperimentSpec,
    SkillFrontmatter,
    SubjectSpec,
    validate,
)
from ix.lab.subjects import RegisteredSubject, load_registry, subjects_path
from ix.lab.sweep import expand_sweep
from ix.lab.variants import expand_variants


@dataclass(frozen=True)
class LoadedExperiment:
    """An experiment together with where it lives on disk."""

    path: Path
    lab: Path
    experiment: Experiment
    spec: ExperimentSpec
    defaults: Defaults
    #: `context:`: the prefix and its lengths (the subjects are expanded already)
    context: Context | None = None

    @property
    def config_file(self) -> Path:
        return self.path / EXPERIMENT_FILE


def load_experiment(path: Path, lab: Path | None = None,
                    replace_subjects: Sequence[str] | None = None) -> LoadedExperiment:
    """Read `experiment.yaml` and `cases/*.md` from `path`; `ConfigError` on any problem.

    Every problem is looked for, not only the first: several are raised together as a
    `ConfigErrors` (other commands print the first and a count; `ix validate` uses
    `check_experiment` and lists each).

    `replace_subjects` (a battery's) replaces the experiment's subjects with registry names; the
    skill under test stays the activation target and is given to each of them, and a goal
    naming the old subjects is dropped.
    """
    problems = _Problems()
    loaded = _load(path, lab, replace_subjects, problems)
    problems.raise_found()
    assert loaded is not None  # no problem, so it loaded
    return loaded


def check_experiment(path: Path, lab: Path | None = None
                     ) -> tuple[LoadedExperiment | None, list[ConfigError]]:
    """Every problem of the experiment at `path`, and the experiment as far as it could be
    read (None when experiment.yaml itself does not validate), for planning to check more."""
    problems = _Problems()
    loaded = _load(path, lab, None, problems)
    return loaded, flatten(problems.found)


def _load(path: Path, lab: Path | None, replace_subjects: Sequence[str] | None,
          problems: "_Problems") -> LoadedExperiment | None:
    path = path.resolve()
    lab = (lab or path.parent).resolve()
    file = path / EXPERIMENT_FILE
    spec: ExperimentSpec | None = None
    data: Any = None
    with problems.each():
        data = normalise(load_yaml_file(file))[0]  # the RFC's spelling (`ix.eval.dialect`)
        spec = validate(ExperimentSpec, data, file=file, what="experiment file")
    if spec is None:
        spec = _without_bad_keys(data, file, problems.found)
    defaults = None
    with problems.each():
        defaults = resolve_defaults(lab)
    if spec is None or defaults is None:
        with problems.each():  # the cases are checked all the same, from the suite as written
            _cases(_suite_of(data), path, file, problems, None, lab)
        return None
    if replace_subjects:
        spec = _replace_subjects(spec, replace_subjects, lab)
    if spec.skill and spec.subjects:
        problems.add(ConfigError(
            "'skill' and 'subjects' are mutually exclusive: use 'skill' for one skill under "
            "test, or list 'subjects'", file=file, field="skill"))
    if spec.runtime is not None:
        runtime, origin = dict(spec.runtime), (str(file), "runtime")
    else:
        runtime, origin = dict(defaults.runtime), (defaults.sources["runtime"], "runtime")
    subjects = _subjects(spec, path, lab, file, runtime, origin, problems)
    subjects_ok = len(subjects) == max(1, len(spec.subjects))  # none refused (else the goal
    if spec.sweep is not None and subjects_ok:
        with problems.each():
            subjects = [*expand_sweep(subjects[0], spec.sweep, file), *subjects[1:]]
    context: Context | None = None
    if spec.context is not None:
        with problems.each():
            context = load_context(spec.context, path, file)
        if context is None:
            subjects_ok = False
        else:
            subjects = context.expand(subjects)
    if len(subjects) > spec.max_subjects:
        problems.add(ConfigError(
            f"the sweep and context make {len(subjects)} subjects, more than max_subjects "
            f"({spec.max_subjects}): narrow them, or raise max_subjects if you mean it",
            file=file, field="sweep" if spec.sweep else "context"))
        subjects_ok = False
    cases: list[EvalCase] = []
    template: list[Fixture] | None = None
    if spec.workspace is not None:
        template = []
        if spec.workspace.template is not None:
            with problems.each():
                template = template_fixtures(path, lab, spec.workspace.template, file)
    with problems.each():
        cases = _cases(spec.cases, path, file, problems, template, lab)
    if subjects_ok:  # ... would name a subject that is only missing for another problem)
        with problems.each():
            _check_goal(spec, subjects, file)
        for exc in check_skill_names(spec, subjects, lab, file):
            problems.add(exc)
    if not subjects or not cases:
        return None
    primary = primary_sensor(spec)
    experiment = Experiment(
        name=spec.name,
        description=spec.description,
        subjects=tuple(subjects),
        sensor=primary["kind"],
        sensor_options={k: v for k, v in primary.items() if k != "kind"},
        trials=_trials(spec, defaults),
        adaptive=spec.trials == "auto",
        min_trials=spec.min_trials or min(DEFAULT_MIN_TRIALS, _trials(spec, defaults)),
        cases=tuple(cases),
        skill=spec.skill,
        runtime=runtime,
        seed=spec.seed,
        seeding=spec.seeding,
        concurrency=spec.concurrency if spec.concurrency is not None else defaults.concurrency,
        timeout_s=spec.timeout_s if spec.timeout_s is not None else defaults.timeout_s,
        goal=spec.goal.as_goal() if spec.goal else None,
        prior=spec.prior,
    )
    return LoadedExperiment(path=path, lab=lab, experiment=experiment, spec=spec,
                            defaults=defaults, context=context)


def primary_sensor(spec: ExperimentSpec) -> dict[str, Any]:
    """The sensor whose reading the metrics are made of: the first of `sensors:` when it is
    given, else `sensor:` — so both spellings load the same experiment."""
    return dict(spec.sensors[0]) if spec.sensors else dict(spec.sensor)


#: Keys the checks after the schema's depend on: when one is wrong, they are not made.
_NEEDED = frozenset({"name", "skill", "subjects", "sensor", "sensors", "runtime", "cases"})


def _without_bad_keys(data: Any, file: Path, reported: Sequence[ConfigError]
                      ) -> ExperimentSpec | None:
    """experiment.yaml read past its unknown keys and its bad optional ones (`trials`, `goal`,
    ...; already reported), so that the checks after the schema's (skills, subjects, runtimes,
    sensors) still run; None when a key those checks need is wrong."""
    if not isinstance(data, dict):
        return None
    bad = {re.split(r"[.\[]", e.field or "")[0] for e in flatten(reported)}
    if bad & _NEEDED or "" in bad:
        return None
    known = {k: v for k, v in data.items() if k in ExperimentSpec.model_fields and k not in bad}
    try:
        return validate(ExperimentSpec, known, file=file, what="experiment file")
    except ConfigError:
        return None


class _Problems:
    """The problems found so far; loading goes on past each one, to report them all."""

    def __init__(self) -> None:
        self.found: list[ConfigError] = []

    def add(self, exc: ConfigError) -> None:
        self.found.append(exc)

    @contextmanager
    def each(self) -> Iterator[None]:
        """A `ConfigError` raised inside is recorded, and loading goes on after the block."""
        try:
            yield
        except ConfigError as exc:
            self.found.append(exc)

    def raise_found(self) -> None:
        raise_all(self.found)


def _suite_of(data: Any) -> CasesSpec:
    """`cases:` as written, when the rest of experiment.yaml does not validate."""
    try:
        return CasesSpec.model_validate(data.get("cases") or {})
    except (AttributeError, ValueError):  # not a mapping, or not valid (ValidationError)
        listed = isinstance(data, dict) and "files" in (data.get("cases") or {})  # no suite
        return CasesSpec.model_construct(files=[]) if listed else CasesSpec()


def lab_skills(lab: Path) -> list[str]:
    """The skills of the lab: each folder under `skills/` holding a SKILL.md, by name."""
    try:
        return sorted(p.name for p in (lab / "skills").iterdir() if (p / "SKILL.md").is_file())
    except OSError:
        return []


def check_skill_names(spec: ExperimentSpec, subjects: Sequence[Subject], lab: Path,
                      file: Path, kinds: Mapping[str, str] | None = None) -> list[ConfigError]:
    """The skill under test (`skill:`, an activation sensor's `skill:`) must exist, when a
    subject's runtime reads skills (`kinds`: the runtime kind of each subject by name, when the
    command line replaces them): a typo would make every trial fail or never activate.

    Runtimes that do not read skills (mock, random, command, http, human) take the name as a
    label. A plugin skill (`plugin:name`) is not looked for.
    """
    def kind_of(s: Subject) -> Any:
        return (kinds or {}).get(s.name) or (s.config.get("runtime") or {}).get("kind")

    if not any(kind_of(s) in SKILL_RUNTIMES for s in subjects):
        return []
    folders = lab_skills(lab)
    known = set(folders) | {str(k.get("name")) for s in subjects
                            for k in s.config.get("skills") or []}
    named: list[tuple[str, str]] = []
    if spec.skill is not None:
        named.append((spec.skill, "skill"))
    sensors = spec.sensors if spec.sensors else [spec.sensor]
    for i, sensor in enumerate(sensors):
        skill = sensor.get("skill")
        if sensor.get("kind") == "activation" and isinstance(skill, str) and skill:
            named.append((skill, f"sensors[{i}].skill" if spec.sensors else "sensor.skill"))
    return [missing_skill(name, lab, file, field, sorted(known))
            for name, field in named if ":" not in name and name not in known]


def skill_descriptions(lab: Path) -> dict[str, str]:
    """Each skill of the lab's `skills/` by name, with its description (one whose SKILL.md
    does not read is left out: loading reports it)."""
    out: dict[str, str] = {}
    for name in lab_skills(lab):
        with suppress(ConfigError):
            skill = resolve_skill(name, lab, lab, lab / "skills", "skills")
            out[skill["name"]] = skill["description"]
    return out


class MissingSkill(ConfigError):
    """A skill named by name that is not in the lab's skills/ (`ix new --allow-missing`)."""


def missing_skill(name: str, lab: Path, file: Path | str, field: str,
                  known: Sequence[str] | None = None) -> ConfigError:
    """`skill 'xlsxx' not found ...; did you mean 'xlsx'?`, with the skills there are."""
    known = lab_skills(lab) if known is None else known
    listing = f"skills: {', '.join(known)}" if known else "the lab has no skills/ folder yet"
    return MissingSkill(
        f"skill {name!r} not found: no {lab / 'skills' / name / 'SKILL.md'}"
        f"{did_you_mean(name, known)} ({listing}; a skill is a folder under the lab's "
        "skills/ with a SKILL.md, or a path to one)", file=file, field=field)


def _replace_subjects(spec: ExperimentSpec, names: Sequence[str], lab: Path) -> ExperimentSpec:
    sensor = primary_sensor(spec)
    target = sensor.get("skill") or spec.skill
    if target is None and spec.subjects:
        target = spec.subjects[0].name
    skills = [target] if target and (lab / "skills" / target / "SKILL.md").is_file() else []
    if target and sensor.get("kind") == "activation":
        sensor.setdefault("skill", target)
    replaced = [SubjectSpec(name=n, profile=n, skills=list(skills)) for n in names]
    where = {"sensors": [sensor, *spec.sensors[1:]]} if spec.sensors else {"sensor": sensor}
    return spec.model_copy(update={"subjects": replaced, "skill": None, "goal": None,
                                   **where})


DEFAULT_MIN_TRIALS = 2
#: Odd, so that a case's majority vote has no ties: at an even K a tie (K/2 of K) counts as
#: not activated, and a true 0.5 case would vote yes only 37.7% of the time at K = 10.
DEFAULT_MAX_TRIALS = 9


def _trials(spec: ExperimentSpec, defaults: Defaults) -> int:
    """The fixed trial count, or with `trials: auto` the most any case may get."""
    if spec.trials == "auto":
        return spec.max_trials or max(DEFAULT_MAX_TRIALS, spec.min_trials or 0)
    return spec.trials if spec.trials is not None else defaults.trials


@dataclass(frozen=True)
class _Layer:
    """Runtime options written in one place (a registry profile, or the subject itself)."""

    runtime: dict[str, Any] | None
    config: dict[str, Any]
    model: str | None
    file: str
    where: str


class _Registry:
    """The subject registry, read only if an experiment names a registry subject."""

    def __init__(self) -> None:
        self._subjects: dict[str, RegisteredSubject] | None = None

    def get(self, name: str, file: Path, field: str) -> RegisteredSubject:
        if self._subjects is None:
            self._subjects = load_registry()
        if name not in self._subjects:
            raise ConfigError(
                f"unknown subject {name!r}: not a built-in profile nor in {subjects_path()} "
                f"(add it with `ix subjects add`){did_you_mean(name, self._subjects)} "
                f"(known: {', '.join(self._subjects)})",
                file=file, field=field)
        return self._subjects[name]


def _subjects(
    spec: ExperimentSpec, path: Path, lab: Path, file: Path, runtime: dict[str, Any],
    runtime_origin: tuple[str, str], problems: _Problems,
) -> list[Subject]:
    """The subjects, each checked on its own: a problem in one is recorded and the next is read."""
    if spec.subjects:
        specs = spec.subjects
    else:  # `skill:` shorthand, else the directory's name (001_…)
        name = spec.skill or check_name(
            path.name, what="subject name (the experiment folder's name, used when neither "
            "'skill' nor 'subjects' is given)", file=file, field="subjects")
        default_skills = [name] if (lab / "skills" / name / "SKILL.md").is_file() else []
        specs = [SubjectSpec(name=name, skills=default_skills)]
    registry = _Registry()
    # names are NFC already (the schema); twins in another form or look-alikes are refused
    with problems.each():
        check_distinct(((s.name, f"subjects[{i}].name") for i, s in enumerate(specs)),
                       what="subject", file=file)
    subjects = []
    for i, s in enumerate(specs):
        with problems.each():
            subjects.append(_subject(i, s, spec, path, lab, file, runtime, runtime_origin,
                                     registry, problems))
    return subjects


def _subject(i: int, s: SubjectSpec, spec: ExperimentSpec, path: Path, lab: Path, file: Path,
             runtime: dict[str, Any], runtime_origin: tuple[str, str], registry: "_Registry",
             problems: _Problems) -> Subject:
    where = f"subjects[{i}]" if spec.subjects else "skill"
    layers: list[_Layer] = []
    description = s.description
    skill_refs = [(ref, path, file, f"{where}.skills[{j}]") for j, ref in enumerate(s.skills)]
    profile = None
    if s.profile is not None:
        bare = s.model_fields_set <= {"name", "profile"} and s.name == s.profile
        profile = registry.get(s.profile, file, where if bare else f"{where}.profile")
        source = "built-in profile" if profile.builtin else profile.source
        layers.append(_Layer(dict(profile.spec.runtime), profile.spec.config,
                             profile.spec.model, source, profile.name))
        if "description" not in s.model_fields_set:
            description = profile.spec.description
        if "skills" not in s.model_fields_set and not profile.builtin:
            registry_file = Path(profile.source)
            skill_refs = [(ref, registry_file.parent, registry_file,
                           f"{profile.name}.skills[{j}]")
                          for j, ref in enumerate(profile.spec.skills)]
    layers.append(_Layer(s.runtime, s.config, s.model, str(file), where))
    skills = []  # a skill not found is recorded, and the subject kept for the checks after
    for ref, base, origin, field in skill_refs:
        with problems.each():
            skills.append(resolve_skill(ref, base, lab, origin, field))
    merged, origins = _subject_runtime(runtime, runtime_origin, layers)
    if s.ensemble is not None:  # its runtime: the members' answers combined
        merged = {"kind": "ensemble", **s.ensemble}
        origins = {k: [str(file), f"{where}.ensemble" + (f".{k}" if k != "kind" else "")]
                   for k in merged}
    return Subject(
        name=s.name,
        description=description,
        config={
            "runtime": merged,
            "runtime_origins": origins,
            "model": merged.get("model") if any(x.model for x in layers) else None,
            "skills": skills,
            "profile": profile.name if profile else None,
            "profile_source": profile.source if profile else None,
            "concurrency": s.concurrency,
        },
    )


def _subject_runtime(base: dict[str, Any], base_origin: tuple[str, str],
                     layers: list[_Layer]) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The experiment's runtime, overridden by each layer's `runtime`, `config` and `model`.

    A layer whose runtime names another kind replaces what came before it; with the same kind
    (or none) its options are merged over. Also where each option came from (`{option: [file,
    field]}`), so that a bad option is reported at the place the user wrote it.
    """
    merged = dict(base)
    origins = {k: [base_origin[0], f"{base_origin[1]}.{k}"] for k in merged}
    origins["kind"] = list(base_origin)
    for layer in layers:
        own = dict(layer.runtime or {})
        if own.get("kind", merged["kind"]) != merged["kind"]:
            merged, origins = {}, {}
        for key, value in own.items():
            merged[key] = value
            origins[key] = [layer.file,
                            f"{layer.where}.runtime" + ("" if key == "kind" else f".{key}")]
        for key, value in layer.config.items():
            merged[key] = value
            origins[key] = [layer.file, f"{layer.where}.config.{key}"]
        if layer.model is not None:
            merged["model"] = layer.model
            origins["model"] = [layer.file, f"{layer.where}.model"]
    return merged, origins


def resolve_skill(ref: str, path: Path, lab: Path, file: Path, field: str) -> dict[str, str]:
    """A skill by name (under the lab's `skills/`) or by path (a skill folder or its SKILL.md).

    A relative path is taken from `path` (the experiment's folder, or the registry file's).
    """
    looks_like_path = "/" in ref or "\\" in ref or ref.endswith(".md") or ref.startswith(".")
    candidates = []
    if looks_like_path:
        p = Path(ref).expanduser()
        p = p if p.is_absolute() else path / p
        candidates.append(p if p.name == "SKILL.md" else p / "SKILL.md")
    else:
        candidates.append(lab / "skills" / ref / "SKILL.md")
    for skill_file in candidates:
        if skill_file.is_file():
            meta, _ = read_frontmatter(skill_file)
            parsed = validate(SkillFrontmatter, meta, file=skill_file, what="frontmatter")
            return {"name": parsed.name, "description": parsed.description,
                    "path": str(skill_file.resolve())}
    if not looks_like_path:
        raise missing_skill(ref, lab, file, field)
    looked = ", ".join(str(c) for c in candidates)
    raise ConfigError(f"skill {ref!r} not found (looked for {looked})", file=file, field=field)


def _cases(spec: CasesSpec, path: Path, file: Path, problems: _Problems,
           template: list[Fixture] | None = None, lab: Path | None = None) -> list[EvalCase]:
    """Every case of the suite; a bad case file is recorded and the next one read. A file that
    is not a `.md` (a `.txt` case, say) is reported, not silently left out. `template`: the
    experiment's `workspace:` files (None: it names no workspace). With `from:`, each row of
    the table is a case (`ix.fs.case_tables`), instead of the suite's or, with `suite:`, too."""
    rows = [] if spec.from_ is None else load_case_table(
        path / spec.from_, spec.map, file=file, where="cases", inside=lab or path.parent).cases
    entries: list[tuple[Path, Any]] = [(Path(f"{r.path} {r.where}"), (r.meta, r.prompt))
                                       for r in rows]
    if spec.files is not None:
        entries += listed_cases(path, [(f.file, f.expectation) for f in spec.files], file=file)
    suite, others = path, list[Path]()
    if (not rows and spec.files is None) or "suite" in spec.model_fields_set:
        suite, files, others = _suite(spec.suite, path, file, problems)
        entries = [(f, None) for f in files] + entries
    cases: list[EvalCase] = []
    origin: dict[str, Path] = {}
    looks: dict[str, tuple[str, Path]] = {}
    at = len(problems.found)  # the stray files' problems go first, once known
    for case_file, read in entries:
        with problems.each():
            cases += _case(case_file, origin, looks, template, path, read)
    fixtures = {f.source for c in cases if c.workspace is not None for f in c.workspace.files}
    problems.found[at:at] = [ConfigError(
        f"not a case file: a case is a .md file, so {p.name} would be left out; rename "
        f"it to {p.stem}.md, or move it out of {suite.name}/", file=p, field="extension")
        for p in others if str(p.resolve()) not in fixtures]  # (not a case's `files:`)
    return cases


def _suite(suite_path: str, path: Path, file: Path, problems: _Problems
           ) -> tuple[Path, list[Path], list[Path]]:
    """The suite folder, its case files and its other files."""
    try:
        suite = (path / suite_path).resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop: RuntimeError before Python 3.13
        raise ConfigError(f"cannot resolve {suite_path!r}: {exc}", file=file,
                          field="cases.suite") from None
    if not suite.is_relative_to(path):
        raise ConfigError("must be a folder inside the experiment", file=file,
                          field="cases.suite")
    if not suite.is_dir():
        raise ConfigError(f"cases folder {suite} does not exist; put one case per .md file "
                          "there", file=file, field="cases.suite")
    try:
        listed = sorted(suite.iterdir(), key=attrgetter("name"))  # Paths compare slowly
    except OSError as exc:
        raise ConfigError(f"cannot list {suite}: {exc.strerror or exc}", file=file,
                          field="cases.suite") from None
    entries = [p for p in listed if p.suffix == ".md" and not p.is_dir()]
    others = [p for p in listed
              if p.suffix != ".md" and not p.name.startswith(".") and not p.is_dir()]
    if not entries:
        also = (f" ({', '.join(p.name for p in others[:3])}: a case is a .md file)"
                if others else "")
        raise ConfigError(f"no cases: {suite} holds no .md files{also}", file=file,
                          field="cases.suite")
    files = []
    for p in entries:
        if not p.is_file():  # never opened: a FIFO would block, a loop cannot be read
            why = ("a symlink that leads nowhere (broken, or a loop)" if p.is_symlink()
                   else "not a regular file")
            problems.add(ConfigError(f"{why}; a case is a .md text file", file=p))
        else:
            files.append(p)
    return suite, files, others


def _case(case_file: Path, origin: dict[str, Path],
          looks: dict[str, tuple[str, Path]],
          template: list[Fixture] | None = None, experiment: Path | None = None,
          read: tuple[dict[str, Any], str] | None = None) -> list[EvalCase]:
    """The case a file holds (or `read`: a table row's frontmatter and prompt), or with
    `variants:` the cases it expands into; with a workspace when the experiment names one or
    the case brings files."""
    meta, body = read or read_frontmatter(case_file)
    if not meta:
        raise ConfigError("no frontmatter: a case starts with '---', then at least "
                          "'expectation: must_trigger|should_not_trigger|acceptable', "
                          "then '---' and the prompt", file=case_file, field="expectation")
    c = validate(CaseSpec, meta, file=case_file, what="frontmatter")
    # the file's name when no `id` is given; the same rules as any name, in NFC
    case_id = c.id if c.id is not None else check_name(case_file.stem, what="case id",
                                                       file=case_file, field="id")
    if case_id in origin:
        raise ConfigError(f"duplicate case id {case_id!r} (also in {origin[case_id].name})",
                          file=case_file, field="id")
    other = looks.get(skeleton(case_id))
    if other is not None:
        raise ConfigError(
            f"case id {shown(case_id)} looks like {shown(other[0])} (in {other[1].name}): "
            "ids that differ only in letter case, look-alike letters (Cyrillic or Greek "
            "for Latin) or Unicode compatibility forms cannot be told apart; rename one",
            file=case_file, field="id")
    origin[case_id] = case_file
    looks[skeleton(case_id)] = (case_id, case_file)
    prompt = body.strip()
    if not prompt:
        raise ConfigError("the prompt (the body after the frontmatter) is empty",
                          file=case_file, field="body")
    own = case_fixtures(case_file, case_id, c.files)
    checks = case_checks(c.checks, case_file, experiment or case_file.parent.parent)
    workspace = Workspace(files=(*(template or ()), *own)) if template is not None or own else None
    case = EvalCase(id=case_id, prompt=prompt, expectation=c.expectation,
                    history=turns_of(c.history, case_file), rationale=c.rationale,
                    tags=tuple(c.tags), difficulty=c.difficulty, metadata=c.metadata,
                    workspace=workspace, checks=checks, user=c.user)
    if c.variants is None:
        return [case]
    expanded = expand_variants(case, c.variants, case_file)
    for variant in expanded:  # `must-001~2` may not be another file's id too
        if variant.id in origin:
            raise ConfigError(f"variant {variant.id!r} has the id of a case in "
                              f"{origin[variant.id].name}", file=case_file, field="variants")
        origin[variant.id] = case_file
    return expanded


def case_checks(given: list[dict[str, Any]], case_file: Path,
                experiment: Path) -> tuple[dict[str, Any], ...]:
    """A case's `checks:`, each a sensor of `CASE_CHECK_KINDS` built once here to find its
    mistakes (naming the file and `checks[i]`); `{{ experiment }}` in a check's command is
    the experiment's folder (as in experiment.yaml)."""
    out = []
    for i, spec in enumerate(given):
        kind = spec.get("kind")
        if kind not in CASE_CHECK_KINDS:
            raise ConfigError(f"kind {kind!r}: a case's checks are "
                              f"{', '.join(CASE_CHECK_KINDS)}", file=case_file,
                              field=f"checks[{i}].kind")
        options = with_experiment(kind, {k: v for k, v in spec.items() if k != "kind"},
                                  experiment)
        try:
            build_sensor(kind, options, target_skill="", field=f"checks[{i}]")
        except ConfigError as exc:
            raise exc.at(file=case_file) from None
        out.append({"kind": kind, **options})
    return tuple(out)


def _check_goal(spec: ExperimentSpec, subjects: list[Subject], file: Path) -> None:
    """A goal compares two subjects of the experiment: control first, then treatment."""
    if spec.goal is None:
        return
    names = [s.name for s in subjects]
    compare = spec.goal.compare
    for i, name in enumerate(compare):
        if name not in names:
            raise ConfigError(f"{name!r} is not a subject; subjects: {', '.join(names)}",
                              file=file, field=f"goal.compare[{i}]")
    if compare and len(compare) != 2:
        raise ConfigError(f"needs exactly two subject names, control then treatment; got "
                          f"{len(compare)}", file=file, field="goal.compare")
    if len(subjects) < 2:
        raise ConfigError("a goal compares two subjects (control, treatment), but the "
                          f"experiment has one ({names[0]}); list at least two under "
                          "'subjects'", file=file, field="goal.compare")
    if compare and compare[0] == compare[1]:
        raise ConfigError("compares a subject with itself; name two different subjects",
                          file=file, field="goal.compare")
