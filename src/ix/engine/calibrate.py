"""`ix calibrate`: run a subject and its proxy on a seeded sample of cases, and say how far the
proxy stands in for it (docs/subjects.md, "Proxy subjects").

A proxy (`proxy:` on a subject, or `--proxy`; its spellings: `ix.engine.proxies`) runs the
subject's own skills on the proxy's runtime. Every candidate — each subject of the experiment
(but a subject named as the proxy), or with `session` the original and each candidate of an
`ix optimize` session on the subject — runs beside its proxy twin (`<name>~proxy`), all in
one ordinary run of the experiment (its `results/`, as `ix run --smoke` leaves one; its
spec records the `ix calibrate` command), so every trial draws the common seed of its (case,
trial) (DESIGN.md §2): the subject and the proxy meet each case under the same random
numbers. `ix.eval.calibrate` computes the statistics.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ix.domain.errors import ConfigError, did_you_mean
from ix.domain.types import Subject
from ix.engine.optimize import Hooks, read_session
from ix.engine.plan import Overrides, build_plan
from ix.engine.proxies import proxy_runtime
from ix.engine.run import Limits, run_plan
from ix.eval.calibrate import MIN_KAPPA, MIN_KAPPA_LOW, agreement_of, ranking_of, verdict
from ix.eval.models import EvalCase
from ix.eval.numbers import LEVEL
from ix.eval.schemas import SCHEMA_VERSION
from ix.lab.context import ORIGIN
from ix.lab.loader import LoadedExperiment
from ix.store.layout import ExperimentDir

__all__ = ["PROXY_SUFFIX", "Settings", "calibrate", "sample_cases"]

#: A candidate's proxy twin in the calibration run: `<candidate>~proxy`.
PROXY_SUFFIX = "~proxy"


@dataclass(frozen=True)
class Settings:
    """What the command line says (`ix calibrate --help` explains each)."""

    subject: str | None = None
    proxy: str | dict[str, Any] | None = None
    n: int = 20
    seed: int | None = None          # the sample's seed; None: the experiment's
    session: str | None = None       # an `ix optimize` session: its candidates are ranked
    trials: int | None = None        # None: the experiment's

    def check(self) -> None:
        if self.n < 2:
            raise ConfigError(f"must be at least 2, got {self.n}", field="--n")
        if self.trials is not None and self.trials < 1:
            raise ConfigError(f"must be at least 1, got {self.trials}", field="--trials")


def sample_cases(cases: Sequence[EvalCase], n: int, seed: int) -> list[EvalCase]:
    """`n` of the cases that run (not `acceptable`), drawn without replacement by `seed`,
    in the experiment's order; all of them when there are no more than `n`."""
    pool = [c for c in cases if c.expectation != "acceptable"]
    if len(pool) <= n:
        return pool
    chosen = set(random.Random(f"ix-calibrate:{seed}").sample(range(len(pool)), n))
    return [c for i, c in enumerate(pool) if i in chosen]


def _twin(candidate: Subject, runtime: dict[str, Any], where: list[str]) -> Subject:
    """The candidate's skills on the proxy's runtime, as `<candidate>~proxy`; its target
    skill stays the candidate's (`origin`)."""
    config = {**candidate.config, "runtime": runtime,
              "runtime_origins": {k: where for k in runtime},
              "model": runtime.get("model"), "profile": None, "profile_source": None,
              ORIGIN: candidate.config.get(ORIGIN, candidate.name)}
    return candidate.model_copy(update={"name": candidate.name + PROXY_SUFFIX,
                                        "config": config})


def _session_candidates(loaded: LoadedExperiment, subject: Subject,
                        session: str) -> list[Subject]:
    """The original and every candidate description of an `ix optimize` session, each as
    `subject` with that description of the session's skill."""
    folder = ExperimentDir.at(loaded.path).session(session)
    if not folder.state.is_file():
        raise ConfigError(f"no optimize session {session!r} in {folder.path.parent}",
                          field="--session")
    state = read_session(folder)
    skill = state.get("skill")
    if not any(k.get("name") == skill for k in subject.config.get("skills") or []):
        raise ConfigError(f"subject {subject.name!r} has not the session's skill {skill!r}",
                          field="--session")
    described = [("original", str(state["original"]["description"]))]
    described += [(str(c["id"]), str(c["description"])) for r in state.get("rounds") or []
                  for c in r.get("candidates") or []]
    out = []
    for cid, text in described:
        skills = [dict(k, description=text) if k.get("name") == skill else k
                  for k in subject.config.get("skills") or []]
        out.append(subject.model_copy(update={
            "name": subject.name if cid == "original" else f"{subject.name}-{cid}",
            "config": {**subject.config, "skills": skills,
                       ORIGIN: subject.config.get(ORIGIN, subject.name)}}))
    return out


def _choose(loaded: LoadedExperiment, settings: Settings
            ) -> tuple[Subject, str | dict[str, Any], Path | str | None, str]:
    """The subject calibrated, and its proxy as spelt, with where it was spelt."""
    subjects = loaded.experiment.subjects
    proxies = {s.name: s.proxy for s in loaded.spec.subjects if s.proxy is not None}
    if settings.subject is not None:
        subject = next((s for s in subjects if s.name == settings.subject), None)
        if subject is None:
            names = [s.name for s in subjects]
            raise ConfigError(f"{settings.subject!r} is not a subject of the experiment"
                              f"{did_you_mean(settings.subject, names)}; its subjects: "
                              f"{', '.join(names)}", field="--subject")
    else:
        subject = next((s for s in subjects if s.name in proxies), subjects[0])
    if settings.proxy is not None:
        return subject, settings.proxy, None, "--proxy"
    if subject.name in proxies:
        i = next(i for i, s in enumerate(loaded.spec.subjects) if s.name == subject.name)
        return subject, proxies[subject.name], loaded.config_file, f"subjects[{i}].proxy"
    raise ConfigError(f"subject {subject.name!r} has no `proxy:`; give one with --proxy "
                      "(a subject, a registry subject, a runtime kind such as lexical, or a "
                      "mapping)", field="--proxy")


def calibrate(loaded: LoadedExperiment, settings: Settings, *, hooks: Hooks = Hooks(),
              limits: Limits = Limits(), command: list[str] | None = None) -> dict[str, Any]:
    """Run the subject, its proxy and the candidates' twins on the sample, and read the
    agreement (see the module's docstring); the output of `ix calibrate --json`."""
    settings.check()
    exp = loaded.experiment
    if loaded.spec.load is not None:
        raise ConfigError("ix calibrate reads case verdicts; an experiment with `load:` "
                          "measures a service under load", file=loaded.config_file,
                          field="load")
    if loaded.context is not None:
        raise ConfigError("ix calibrate runs the experiment's subjects as written; take "
                          "`context:` out (in a copy of the experiment)",
                          file=loaded.config_file, field="context")
    subject, given, file, field = _choose(loaded, settings)
    label, runtime, named = proxy_runtime(loaded, subject, given, file=file, field=field)
    where = [str(file or ""), field]
    if settings.session is not None:
        candidates = _session_candidates(loaded, subject, settings.session)
    else:
        candidates = [subject, *(s for s in exp.subjects
                                 if s.name not in (subject.name, named))]
    pairs: list[tuple[Subject, Subject]] = []
    for c in candidates:
        if c is subject or settings.session is not None:
            twin_runtime = runtime
        else:
            _, twin_runtime, _ = proxy_runtime(loaded, c, given, file=file, field=field)
        pairs.append((c, _twin(c, twin_runtime, where)))
    seed = exp.seed if settings.seed is None else settings.seed
    cases = sample_cases(exp.cases, settings.n, seed)
    if not cases:
        raise ConfigError("no case to calibrate on: every case is 'acceptable'",
                          file=loaded.config_file, field="cases")
    run_subjects = tuple(s for pair in pairs for s in pair)
    update: dict[str, Any] = {"subjects": run_subjects, "cases": tuple(cases), "goal": None}
    if settings.trials is not None:
        update.update(trials=settings.trials, adaptive=False,
                      min_trials=min(exp.min_trials, settings.trials))
    run_loaded = replace(loaded, experiment=exp.model_copy(update=update),
                         spec=loaded.spec.model_copy(update={"goal": None}))
    plan = build_plan(run_loaded, Overrides(seed=seed))  # the trials' seed: the sample's
    if hooks.on_plan is not None:
        hooks.on_plan(plan)
    result = run_plan(plan, command=command, on_trial=hooks.on_trial, limits=limits,
                      warn=hooks.warn)
    blocks = {b["name"]: b for b in result.summary["subjects"]}
    mine, theirs = blocks[subject.name], blocks[subject.name + PROXY_SUFFIX]
    agreement = agreement_of(mine, theirs, LEVEL)
    ranking = ranking_of([(c.name, blocks[c.name], blocks[t.name]) for c, t in pairs], LEVEL)
    good, line = verdict(subject.name, label, agreement, ranking)
    usage = {name: float((b.get("usage") or {}).get("cost_usd") or 0.0)
             for name, b in blocks.items()}
    return {
        "schema_version": SCHEMA_VERSION, "experiment": exp.name,
        "verdict": line, "good_enough": good, "status": result.status,
        "subject": subject.name,
        "proxy": {"name": label, "as_given": json.dumps(given) if not isinstance(given, str)
                  else given, "runtime": runtime},
        "run_id": result.run_id, "run_dir": str(result.run_dir),
        "seed": seed, "n": len(cases), "trials": plan.trials,
        "thresholds": {"min_kappa": MIN_KAPPA, "min_kappa_low": MIN_KAPPA_LOW},
        "cost_usd": {"subject": round(sum(usage[c.name] for c, _ in pairs), 6),
                     "proxy": round(sum(usage[t.name] for _, t in pairs), 6)},
        "duration_ms": {"subject": _duration(result.summary, subject.name),
                        "proxy": _duration(result.summary, subject.name + PROXY_SUFFIX)},
        "agreement": agreement, "ranking": ranking,
    }


def _duration(summary: Mapping[str, Any], name: str) -> float | None:
    """A subject's mean time per trial (the mean of its per-case means), from the summary's
    outcomes."""
    by = ((summary.get("outcomes") or {}).get("by_subject") or {}).get(name) or {}
    value = (by.get("duration_ms") or {}).get("value")
    return None if value is None else round(float(value), 3)
