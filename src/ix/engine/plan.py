"""A run's plan: which (subject, case, trial) triples run, with which seeds, runtimes and sensors.

Planning validates everything a run needs (runtime and sensor options included) and builds
nothing on disk, so `ix validate` and a bad `ix run` stop here with nothing written.
"""

import hashlib
import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Literal

from ix.domain.errors import ConfigError, ConfigErrors, raise_all
from ix.domain.ports import AsyncSensor, ExperimentRuntime, Sensor
from ix.domain.redaction import Redactor
from ix.domain.types import Subject
from ix.domain.verdicts import Scorer
from ix.engine.ensembles import bind_ensembles
from ix.engine.filters import apply_filters
from ix.engine.redactor import run_redactor
from ix.engine.schedule import LoadPlan, load_plan
from ix.eval.case_gates import CaseGate, parse_gate
from ix.eval.frontier import Curriculum, curriculum_options
from ix.eval.models import EvalCase, Seeding, Turn
from ix.eval.outcome_sensors import with_experiment
from ix.eval.outcomes import is_outcome_metric
from ix.eval.plugins import Plugin, in_use
from ix.eval.reporters import build_reporters
from ix.eval.scorers import build_scorers
from ix.eval.sensors import JUDGE_KINDS, build_sensor, target_skill
from ix.eval.sequential_goal import DEFAULT_LOOKS
from ix.fs.frontmatter import read_frontmatter
from ix.fs.names import normalise
from ix.lab.context import KEY as CONTEXT_KEY
from ix.lab.context import ORIGIN
from ix.lab.loader import DEFAULT_MAX_TRIALS, LoadedExperiment, check_skill_names
from ix.runtimes import RuntimeContext, build_runtime, default_concurrency, get_kind
from ix.runtimes.judge import build_judge, judges_of
from ix.runtimes.pairwise import PAIRWISE_JUDGE, AnsweredSensor, PairwiseJudge, plan_pairwise
from ix.runtimes.simulated_user import SimulatedUserRuntime


def trial_seed(seed: int, case_id: str, trial: int) -> int:
    """DESIGN.md §2: derived from the experiment, never random; fits in a signed 64-bit int.

    Common to every subject (common random numbers): a comparison of two subjects sees only
    what differs between them. A runtime that needs a stream of its own per subject derives
    it from this seed (`ix.runtimes._seeding.own_stream`)."""
    return derived_seed(f"{seed}:{case_id}:{trial}")


def trial_seeds(seed: int, case_id: str, trials: int) -> Iterator[int]:
    """`trial_seed` of trials 0 .. `trials` - 1 of one case, the common prefix hashed once
    (a third less a trial than hashing each whole)."""
    head = hashlib.sha256(f"{seed}:{case_id}:".encode())
    for trial in range(trials):
        h = head.copy()
        h.update(b"%d" % trial)
        yield _seed(h)


def per_subject_seed(seed: int, subject: str, case_id: str, trial: int) -> int:
    """The trial seed of runs made before common random numbers (`seeding: per-subject`):
    the subject's name hashed in, so each subject drew independently."""
    return derived_seed(f"{seed}:{subject}:{case_id}:{trial}")


def derived_seed(text: str) -> int:
    """A seed derived from `text`, which holds the experiment's seed: never random, as a
    trial's (`trial_seed`); for what else ix asks of a model (a pairwise judgement, a probe's
    question, a proposer's round)."""
    return _seed(hashlib.sha256(text.encode()))


def _seed(h: "hashlib._Hash") -> int:
    """A seed from a hash: its first 8 bytes, as a non-negative signed 64-bit int."""
    return int.from_bytes(h.digest()[:8], "big") >> 1


@dataclass(frozen=True)
class Overrides:
    """What the command line says; `None` leaves the experiment's own value."""

    trials: int | Literal["auto"] | None = None
    seed: int | None = None
    runtime: str | None = None
    concurrency: int | None = None
    subjects: tuple[str, ...] = ()
    filters: tuple[str, ...] = ()
    smoke: bool = False
    #: `--gate`: per-case gates besides the experiment's `gate:` (`ix.eval.case_gates`)
    gates: tuple[str, ...] = ()
    #: `--include-drafts`: a `generate` probe's cases not reviewed yet run too
    include_drafts: bool = False
    #: `--until-settled`: as `stop: goal` (`ix.eval.sequential_goal`)
    until_settled: bool = False

    def as_dict(self) -> dict[str, Any]:
        """For `spec.yaml`, so that `--resume` can rebuild exactly this plan."""
        return {"trials": self.trials, "seed": self.seed, "runtime": self.runtime,
                "concurrency": self.concurrency, "subjects": list(self.subjects),
                "filters": list(self.filters), "smoke": self.smoke,
                **({"gates": list(self.gates)} if self.gates else {}),
                **({"include_drafts": True} if self.include_drafts else {}),
                **({"until_settled": True} if self.until_settled else {})}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> "Overrides":
        data = data or {}
        return cls(trials=data.get("trials"), seed=data.get("seed"),
                   runtime=data.get("runtime"), concurrency=data.get("concurrency"),
                   subjects=tuple(data.get("subjects") or ()),
                   filters=tuple(data.get("filters") or ()), smoke=bool(data.get("smoke")),
                   gates=tuple(data.get("gates") or ()),
                   include_drafts=bool(data.get("include_drafts")),
                   until_settled=bool(data.get("until_settled")))


@dataclass(frozen=True)
class SubjectPlan:
    subject: Subject
    runtime_spec: dict[str, Any]
    runtime: ExperimentRuntime
    sensors: tuple[Sensor | AsyncSensor, ...]
    target_skill: str
    limit: int = 0   # the most trials of this subject in flight at once (0: no own limit)
    #: `context:`'s prefix at this subject's length: the turns before every case's own
    context: tuple[Turn, ...] = ()


@dataclass(frozen=True, slots=True)
class TrialKey:
    """One trial to run: the unit the engine schedules and the trial log records."""

    subject: SubjectPlan
    case: EvalCase
    trial: int
    seed: int
    attempt: int = 0


@dataclass(frozen=True)
class Plan:
    loaded: LoadedExperiment
    subjects: tuple[SubjectPlan, ...]
    cases: tuple[EvalCase, ...]
    skipped: tuple[EvalCase, ...]
    trials: int
    seed: int
    concurrency: int
    sources: dict[str, str] = field(default_factory=dict)
    adaptive: bool = False
    min_trials: int = 2
    credibility: float = 0.95
    overrides: Overrides = field(default_factory=lambda: Overrides())
    #: Every secret value the run knows of, taken out of all it records (`ix.engine.redactor`)
    redactor: Redactor = field(default_factory=Redactor, repr=False)
    #: The installed plugins its runtimes, sensors and probe come from (`spec.yaml` names them)
    plugins: tuple[Plugin, ...] = ()
    #: `load:`: the requests' schedule; the trials are its requests (`ix.engine.load_test`)
    load: LoadPlan | None = None
    #: how trial seeds are derived: `common` (every subject alike) or `per-subject` (runs
    #: made before common random numbers, continued or reproduced); spec.yaml records it
    seeding: Seeding = "common"
    #: `pairwise_judge`: compares each subject with the control (the first) after the trials
    pairwise: PairwiseJudge | None = None
    #: per-case gates: the experiment's `gate:`, then `--gate` (`ix.eval.case_gates`)
    gates: tuple[CaseGate, ...] = ()
    #: `scorers:` (`ix.eval.scorers`): the first decides each case's verdict; empty: the
    #: majority vote
    scorers: tuple[Scorer, ...] = ()
    #: `reporters:` (`ix.eval.reporters`): the outputs written when the run ends
    reporters: tuple[Any, ...] = ()
    #: `stop: goal` / `--until-settled`: the looks planned at the goal (0: every case runs)
    looks: int = 0
    #: `curriculum:`: cases in an adaptive order that finds the frontier (`ix.engine.curriculum`)
    curriculum: Curriculum | None = None

    def trial_seed(self, subject: str, case_id: str, trial: int) -> int:
        """The seed of one trial, by the plan's `seeding` rule (DESIGN.md §2)."""
        if self.seeding == "per-subject":
            return per_subject_seed(self.seed, subject, case_id, trial)
        return trial_seed(self.seed, case_id, trial)

    @property
    def total(self) -> int:
        """Trials planned: with `trials: auto`, the most that may run."""
        if self.load is not None:
            return len(self.subjects) * self.load.requests
        return len(self.subjects) * len(self.cases) * self.trials

    def each_trial(self, only: Callable[[str, str], Iterable[int]] | None = None
                   ) -> Iterator[TrialKey]:
        """Every trial, lazily: case by case, trial by trial, each subject in turn.

        `only(subject, case id)` names the trials of that pair to run (ascending, below
        `trials`): a resumed run then visits its few missing trials, not every planned one
        (a million of them take a second just to skip), in the same order.
        Under `load:`, each subject's requests in turn (a load run is never continued).
        """
        if self.load is not None:
            for sp in self.subjects:
                for trial, pick in enumerate(self.load.picks):
                    case = self.cases[pick]
                    yield TrialKey(sp, case, trial,
                                   self.trial_seed(sp.subject.name, case.id, trial))
            return
        common = self.seeding != "per-subject"
        for case in self.cases:
            if only is None:
                # common random numbers: one seed for every subject, derived once
                seeds = trial_seeds(self.seed, case.id, self.trials) if common \
                    else [None] * self.trials
                for trial, seed in enumerate(seeds):
                    for sp in self.subjects:
                        yield TrialKey(sp, case, trial, seed if seed is not None else
                                       self.trial_seed(sp.subject.name, case.id, trial))
                continue
            chosen = sorted((trial, i) for i, sp in enumerate(self.subjects)
                            for trial in only(sp.subject.name, case.id))
            for trial, i in chosen:
                sp = self.subjects[i]
                yield TrialKey(sp, case, trial,
                               self.trial_seed(sp.subject.name, case.id, trial))


def build_plan(loaded: LoadedExperiment, overrides: Overrides = Overrides()) -> Plan:
    exp = loaded.experiment
    file = loaded.config_file
    subjects = _chosen(exp.subjects, overrides.subjects)
    plans = []
    problems: list[ConfigError] = []  # every subject is checked, then all problems raised
    for s in subjects:
        spec = dict(s.config["runtime"])
        origins = dict(s.config.get("runtime_origins", {}))
        if overrides.runtime is not None and overrides.runtime != spec.get("kind"):
            spec = {"kind": overrides.runtime}
            origins = {"kind": ["", "--runtime"]}
        # a condition (`<subject>[ctx=N]`, `<subject>[model=…]`) tests its subject's skill
        target = target_skill(exp.sensor_options, exp.skill, s.config.get(ORIGIN, s.name))
        try:
            runtime = build_runtime(spec, RuntimeContext(target_skill=target,
                                                         base_dir=loaded.path))
        except ConfigError as exc:
            problems.append(_located(exc, origins, file))
            continue
        try:
            sensors = _sensors(loaded, target)
        except ConfigError as exc:
            problems.append(exc.at(file))
            continue
        limit = s.config.get("concurrency") or default_concurrency(spec)
        expanded = s.config.get(CONTEXT_KEY)  # `<subject>[ctx=N]`: the prefix's first N
        prefix = (loaded.context.cut(expanded["length"])
                  if expanded and loaded.context is not None else ())
        plans.append(SubjectPlan(s, spec, runtime, sensors, target, limit, prefix))
    if overrides.runtime is not None and not problems:  # a skill-reading runtime now
        problems += check_skill_names(loaded.spec, exp.subjects, loaded.lab, file,
                                      {p.subject.name: p.runtime_spec["kind"] for p in plans})
    scorers: tuple[Scorer, ...] = ()
    reporters: tuple[Any, ...] = ()
    try:
        scorers = build_scorers(loaded.spec.scorers) if loaded.spec.scorers else ()
    except ConfigError as exc:
        problems.append(exc.at(file))
    try:
        reporters = build_reporters(loaded.spec.reporters)
    except ConfigError as exc:
        problems.append(exc.at(file))
    raise_all(problems)
    plans = bind_ensembles(plans, exp.cases, [s.name for s in exp.subjects])
    _judged_goal(exp.goal, plans, file)
    adaptive, min_trials = exp.adaptive, exp.min_trials
    if overrides.trials == "auto":
        adaptive = True
        trials = exp.trials if exp.adaptive else DEFAULT_MAX_TRIALS
        min_trials = min(exp.min_trials, trials)
    elif overrides.trials is not None:
        adaptive, trials = False, overrides.trials
    else:
        trials = exp.trials
    if trials < 1:
        raise ConfigError(f"must be at least 1, got {trials}", field="--trials")
    # a batched subject's trials all wait at once (in batches); the others keep their limit
    concurrency = overrides.concurrency or exp.concurrency or (
        sum(p.limit for p in plans) if any(p.runtime_spec.get("batch") is True for p in plans)
        else min(default_concurrency(p.runtime_spec) for p in plans))
    if concurrency < 1:
        raise ConfigError(f"must be at least 1, got {concurrency}", field="--concurrency")
    chosen = apply_filters(exp.cases, overrides.filters)
    run_cases = tuple(c for c in chosen if c.expectation != "acceptable")
    skipped = tuple(c for c in chosen if c.expectation == "acceptable")
    if not run_cases:
        if overrides.filters:
            raise ConfigError(f"no case to run matches {' AND '.join(overrides.filters)}",
                              field="--filter")
        raise ConfigError("every case is 'acceptable', so nothing would run; add "
                          "must_trigger or should_not_trigger cases", file=file, field="cases")
    _check_history(run_cases, plans, loaded, overridden=overrides.runtime is not None)
    plans, user = _simulated_user(loaded, run_cases, plans)
    if overrides.smoke:  # one trial of a few cases: the first of each expectation, then more
        firsts = [next(c for c in run_cases if c.expectation == e)
                  for e in ("must_trigger", "should_not_trigger")
                  if any(c.expectation == e for c in run_cases)]
        rest = [c for c in run_cases if c not in firsts]
        run_cases = tuple(firsts + rest[:max(0, 3 - len(firsts))])
        trials, adaptive = 1, False
    seed = overrides.seed if overrides.seed is not None else exp.seed
    load = None
    if loaded.spec.load is not None and not overrides.smoke:  # --smoke: a check, no load
        load = _load(loaded, loaded.spec.load.model_dump(), plans, overrides,
                     len(run_cases), seed)
        trials, adaptive = max(1, math.ceil(load.requests / len(run_cases))), False
        # the generator's max_in_flight is the only limit: a subject's own would close the loop
        plans = [replace(p, limit=0) for p in plans]
    sources = _sources(loaded, overrides)
    listed = loaded.spec.sensors
    pairwise = plan_pairwise([(s, f"sensors[{i}]") for i, s in enumerate(listed)] if listed
                             else [({"kind": exp.sensor, **exp.sensor_options}, "sensor")],
                             loaded.path, file, len(plans))
    return Plan(loaded=loaded, subjects=tuple(plans), cases=run_cases, skipped=skipped,
                trials=trials, seed=seed,
                concurrency=concurrency, sources=sources, adaptive=adaptive,
                min_trials=min_trials,
                credibility=float((exp.goal or {}).get("credibility", 0.95)),
                overrides=overrides,
                redactor=run_redactor(plans, loaded.lab, judges=[
                    *([pairwise] if pairwise else []), *([user] if user else [])]),
                plugins=_plugins(plans, loaded), load=load, seeding=exp.seeding,
                pairwise=pairwise, gates=_gates(loaded, overrides), scorers=scorers,
                reporters=reporters,
                looks=0 if overrides.smoke or load is not None else _looks(loaded, overrides,
                                                                           plans),
                curriculum=_curriculum(loaded, overrides, run_cases, trials, adaptive, load))


def _looks(loaded: LoadedExperiment, overrides: Overrides, plans: Sequence[SubjectPlan]) -> int:
    """`stop: goal` (or `--until-settled`): the looks planned at the goal, or 0. Exit 2
    naming the file and the field when there is no rate goal to look at."""
    if loaded.spec.stop != "goal" and not overrides.until_settled:
        return 0
    file, field = ((loaded.config_file, "stop") if loaded.spec.stop == "goal"
                   else (None, "--until-settled"))
    goal = loaded.experiment.goal
    if goal is None:
        raise ConfigError("stops the run once the goal is settled, but the experiment has no "
                          "`goal:`; add one (docs/cost.md)", file=file, field=field)
    if is_outcome_metric(str(goal["metric"])) or goal.get("at_most") is not None:
        raise ConfigError(f"needs a goal on a rate with min_effect; {goal['metric']!r} is "
                          "judged only once every case ran", file=file, field=field)
    names = [p.subject.name for p in plans]
    compare = goal.get("compare") or names[:2]
    if len(compare) != 2 or any(n not in names for n in compare):
        raise ConfigError(f"needs both of the goal's subjects ({', '.join(compare)}) in the "
                          "run", file=file, field=field)
    return DEFAULT_LOOKS


def _curriculum(loaded: LoadedExperiment, overrides: Overrides, cases: tuple[EvalCase, ...],
                trials: int, adaptive: bool, load: LoadPlan | None) -> Curriculum | None:
    """experiment.yaml's `curriculum:`, checked; not with `trials: auto`, `load:` or
    `stop: goal` (a curriculum chooses its own cases; rounds would choose them too)."""
    raw, file = loaded.spec.curriculum, loaded.config_file
    if raw in (None, False):
        return None
    if adaptive or load is not None:
        raise ConfigError("a curriculum chooses its own trials: leave out `trials: auto` "
                          "(and --trials auto) and `load:`", file=file, field="curriculum")
    if loaded.spec.stop == "goal" or overrides.until_settled:
        raise ConfigError("a curriculum chooses its own cases: leave out `stop: goal` (and "
                          "--until-settled)", file=file, field="curriculum")
    return curriculum_options(raw, cases, trials, file)


def _gates(loaded: LoadedExperiment, overrides: Overrides) -> tuple[CaseGate, ...]:
    """The experiment's `gate:` (exit 2 naming `gate[i]` and the file), then `--gate`."""
    own = []
    for i, text in enumerate(loaded.spec.gate):
        try:
            own.append(parse_gate(text, f"gate[{i}]"))
        except ConfigError as exc:
            raise exc.at(loaded.config_file) from None
    return (*own, *(parse_gate(text, "--gate") for text in overrides.gates))


def _simulated_user(loaded: LoadedExperiment, cases: Sequence[EvalCase],
                    plans: list[SubjectPlan]) -> tuple[list[SubjectPlan], Any]:
    """With cases that have a `user:`, every subject's runtime in conversation with the
    experiment's `simulated_user` (`ix.runtimes.simulated_user`), and that runtime (the
    redactor reads its key): (plans, None) without one."""
    spec = loaded.spec.simulated_user
    talking = [c.id for c in cases if c.user is not None]
    if not talking:
        return plans, None
    if spec is None:
        raise ConfigError(f"case {talking[0]!r} has a `user:`, so the experiment needs "
                          "`simulated_user:`, the runtime that plays it (docs/agents.md)",
                          file=loaded.config_file, field="simulated_user")
    try:
        user = build_runtime(spec, RuntimeContext())
    except ConfigError as exc:
        raise ConfigError(exc.message, file=loaded.config_file,
                          field=f"simulated_user.{exc.field}".rstrip(".")) from None
    side = SimpleNamespace(runtime_spec=spec, runtime=user)
    return [replace(p, runtime=SimulatedUserRuntime(p.runtime, user)) for p in plans], side


#: The runtime kinds `load:` drives: requests to a service or a program, timed by ix.
LOAD_KINDS = ("http", "grpc", "command")


def _load(loaded: LoadedExperiment, options: dict[str, Any], plans: Sequence[SubjectPlan],
          overrides: Overrides, cases: int, seed: int) -> LoadPlan:
    """`load:`'s schedule, once the run can take it: http, grpc and command subjects only; its
    trials are its requests (neither `trials` nor `--trials` may say otherwise)."""
    spec, file = loaded.spec, loaded.config_file
    others = [f"{p.subject.name!r} ({p.runtime_spec['kind']})" for p in plans
              if p.runtime_spec["kind"] not in LOAD_KINDS]
    if others:
        raise ConfigError(f"runs only http, grpc and command subjects, not "
                          f"{', '.join(others)}",
                          file=file, field="load")
    if overrides.trials is not None:
        raise ConfigError("an experiment with `load:` sends rps × (warmup_s + duration_s) "
                          "requests per subject, each a trial; leave --trials out",
                          field="--trials")
    if spec.trials is not None:
        raise ConfigError("with `load:` the trials are its requests (rps × (warmup_s + "
                          "duration_s) per subject); leave `trials` out", file=file,
                          field="trials")
    return load_plan(options, seed, cases)


def _check_history(cases: Sequence[EvalCase], plans: Sequence[SubjectPlan],
                   loaded: LoadedExperiment, *, overridden: bool) -> None:
    """Refuse to run cases with a `history` (or `context:`'s prefix) on a runtime that would
    drop it: the answers would be to the prompt alone, reported as answers to the
    conversation."""
    talked = [c.id for c in cases if c.history]
    shown = ", ".join(talked[:3]) + (f" and {len(talked) - 3} more" if len(talked) > 3 else "")
    problems = []
    for p in plans:
        if not (talked or p.context):
            continue
        prefix = "the context's prefix comes before every case"
        kind = p.runtime_spec["kind"]
        policy = get_kind(kind).history
        if policy == "refused":
            some = f"{len(talked)} case(s) have one ({shown})" if talked else prefix
            exc = ConfigError(
                f"subject {p.subject.name!r}: the {kind} runtime does not send a case's "
                f"history yet, and {some}; run them on an anthropic or openai subject, or "
                "take the history out", field="runtime.kind")
        elif policy == "template" and not getattr(p.runtime, "reads_history", False):
            some = f"{len(talked)} case(s) have a history ({shown})" if talked else prefix
            exc = ConfigError(
                f"subject {p.subject.name!r}: {some} and no template of the {kind} runtime "
                "uses it: add `{{ history }}` (the turns as JSON) where the program or service "
                "should get them, or take the history out", field="runtime.kind")
        else:
            continue
        origins = ({"kind": ["", "--runtime"]} if overridden
                   else dict(p.subject.config.get("runtime_origins", {})))
        problems.append(_located(exc, origins, loaded.config_file))
    raise_all(problems)


def _located(exc: ConfigError, origins: dict[str, list[str]], file: Any) -> ConfigError:
    """Move a runtime option error (`runtime.<option>...`) to where that option was written."""
    if isinstance(exc, ConfigErrors):
        return ConfigErrors([_located(e, origins, file) for e in exc.errors])
    match = re.fullmatch(r"runtime\.([^.\[]+)(.*)", exc.field or "")
    option, rest = (match.group(1), match.group(2)) if match else ("kind", "")
    where = origins.get(option)
    if where is None and match and origins.get("kind"):  # a required option not written
        kind_source, kind_field = origins["kind"]
        where, rest = [kind_source, kind_field], f".{option}{rest}"
    where = where or origins.get("kind")
    if not where:
        return exc.at(file)
    source, field = where
    if not source or source.startswith(("$", "built-in")):
        hint = f" (from {source})" if source else ""
        return ConfigError(exc.message + hint, field=field + rest)
    return ConfigError(exc.message, file=source, field=field + rest)


def _chosen(subjects: Sequence[Subject], names: Sequence[str]) -> list[Subject]:
    if not names:
        return list(subjects)
    by_name = {s.name: s for s in subjects}
    names = [normalise(n) for n in names]  # names are kept in NFC (`ix.fs.names`)
    missing = [n for n in names if n not in by_name]
    if missing:
        raise ConfigError(f"no subject {missing[0]!r}; subjects: {', '.join(by_name)}",
                          field="--subject")
    return [by_name[n] for n in dict.fromkeys(names)]


def _judged_goal(goal: dict[str, Any] | None, plans: Sequence[SubjectPlan], file: Path) -> None:
    """A goal on `<judge>.<dimension>` names a dimension of one of the experiment's judges."""
    metric = str((goal or {}).get("metric") or "")
    if "." not in metric or not plans:
        return
    judges = {s.name: s.rubric.dimensions for s in judges_of(plans[0].sensors)}
    name, _, dimension = metric.rpartition(".")
    if dimension not in judges.get(name, ()):
        known = [f"{j}.{d}" for j, dims in judges.items() for d in dims]
        raise ConfigError(f"no judge's dimension {metric!r}; "
                          + (f"the judges grade {', '.join(known)}" if known
                             else "the experiment has no llm_judge sensor"),
                          file=file, field="goal.metric")


def _sensors(loaded: LoadedExperiment, target: str) -> tuple[Sensor | AsyncSensor, ...]:
    exp = loaded.experiment
    specs = loaded.spec.sensors
    if not specs:
        specs = [{"kind": exp.sensor, **exp.sensor_options}]
    # the pairwise judge reads no trial (`ix.engine.pairwise`); with it alone, `answered`
    sensors = tuple(
        _sensor(loaded, s["kind"], {k: v for k, v in s.items() if k != "kind"}, target,
                f"sensors[{i}]" if loaded.spec.sensors else "sensor")
        for i, s in enumerate(specs) if s["kind"] != PAIRWISE_JUDGE
    )
    return sensors or (AnsweredSensor(),)


def _sensor(loaded: LoadedExperiment, kind: str, options: dict[str, Any], target: str,
            field: str) -> Sensor | AsyncSensor:
    options = with_experiment(kind, options, loaded.path)
    if kind not in JUDGE_KINDS:
        return build_sensor(kind, options, target_skill=target, field=field)
    # the judge's rubric is a file of the experiment, read here (the lab layer) and handed
    # to the sensor, which lives with the runtimes because it calls one
    agent = options.get("agent")
    if not isinstance(agent, str) or not agent:
        raise ConfigError("needs 'agent': the path of the rubric file, relative to the "
                          "experiment", field=f"{field}.agent")
    path = (loaded.path / agent).resolve()
    if not path.is_file():
        raise ConfigError(f"rubric file {path} not found", field=f"{field}.agent")
    meta, body = read_frontmatter(path)
    return build_judge(kind, options, meta, body, path, field, loaded.spec.judge or {})


def _plugins(plans: Sequence[SubjectPlan], loaded: LoadedExperiment) -> tuple[Plugin, ...]:
    """The plugins the plan uses: those its runtime, sensor and probe kinds were loaded from
    (a probe's cases read back from its record used none)."""
    sensors = [s["kind"] for s in loaded.spec.sensors or ()] or [loaded.experiment.sensor]
    used = [in_use("runtime", p.runtime_spec["kind"]) for p in plans]
    used += [in_use("sensor", kind) for kind in sensors]
    if loaded.spec.probe is not None:
        used.append(in_use("probe", str(loaded.spec.probe["kind"])))
    used += [in_use("scorer", str(s["kind"])) for s in loaded.spec.scorers or ()]
    used += [in_use("reporter", str(s["kind"])) for s in loaded.spec.reporters or ()]
    return tuple(dict.fromkeys(p for p in used if p is not None))


def _sources(loaded: LoadedExperiment, overrides: Overrides) -> dict[str, str]:
    """Where each setting of the run came from (`spec.yaml`'s `sources`): a flag,
    `experiment.yaml` (or the subject's file, for a subject's own runtime), else the
    default's layer (`ix.yaml`, the user config, `$IX_…`, built-in)."""
    spec, sources = loaded.spec, dict(loaded.defaults.sources)
    if overrides.trials is not None:
        sources["trials"] = "--trials"
    elif spec.trials is not None:
        sources["trials"] = "experiment.yaml"
    if overrides.runtime is not None:
        sources["runtime"] = "--runtime"
    else:
        chosen = _chosen(loaded.experiment.subjects, overrides.subjects)
        kinds = [s.config.get("runtime_origins", {}).get("kind") for s in chosen]
        where = kinds[0][0] if kinds and kinds[0] else None
        if spec.runtime is not None or where == str(loaded.config_file):
            sources["runtime"] = "experiment.yaml"
        elif where:
            sources["runtime"] = where
    if overrides.concurrency is not None:
        sources["concurrency"] = "--concurrency"
    elif spec.concurrency is not None:
        sources["concurrency"] = "experiment.yaml"
    if spec.timeout_s is not None:
        sources["timeout_s"] = "experiment.yaml"
    return sources
