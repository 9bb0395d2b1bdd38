"""`ix optimize`: a skill's description improved on train cases, judged on held-out ones.

The session (`OptimizeDir`) is a folder of ordinary runs plus `optimize.json`, rewritten
after every step, so a killed session is continued by running the same command: a step whose
run completed is read back, a run left `running` or `cancelled` is resumed (its trials kept),
and a proposer's answer already logged is never asked for again (an LLM would answer
differently). Steps:

1. split the cases (`ix.eval.optimize.split_cases`), once, recorded;
2. round 0: the original description on the train cases;
3. each round: the proposer hears of the current best's wrong train cases and the
   descriptions tried; its candidates (checked by `ix.lab.skill_file.check_description`)
   run on the train cases under the experiment's subjects, trials and seeds, each subject
   that has the skill, one run per candidate under the subjects' own names (so each trial
   draws the seed the original's drew: a description that changes nothing scores exactly
   the same, and no candidate wins on noise alone); the best by train F1 goes on if it
   beats the current one;
4. the best candidate and the original on the holdout cases; the paired,
   case-level F1 comparison (`ix.stats.paired_f1`), judged by `ix.eval.optimize.judge`,
   recommends it only if, for every subject that has the skill, P(holdout F1 better)
   reaches the credibility, the exact paired test agrees (p ≤ 1 − credibility), the 95%
   interval ends above −tolerance, and at least `min_changed` held-out cases improved.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ix.domain.errors import ConfigError, Warn
from ix.domain.types import Subject
from ix.engine.cache import CacheMode, check_mode, with_cache
from ix.engine.plan import build_plan, derived_seed
from ix.engine.proposers import Answer, Proposer
from ix.engine.proxies import proxy_runtime
from ix.engine.resume import cases_digest, continuing, find_continuation
from ix.engine.run import Limits, OnTrial, RunResult, run_plan
from ix.eval.models import EvalCase
from ix.eval.optimize import (
    CREDIBILITY,
    MIN_CHANGED,
    TOLERANCE,
    Miss,
    ProposalRequest,
    body_summary,
    judge,
    misses,
    parse_answer,
    split_cases,
)
from ix.eval.schemas import SCHEMA_VERSION
from ix.eval.sensors import target_skill
from ix.fs.appending import append_line
from ix.fs.files import dumps, write_text_atomic
from ix.fs.frontmatter import split_frontmatter
from ix.fs.paths import check_tree
from ix.fs.yamlio import read_text
from ix.lab.loader import LoadedExperiment
from ix.lab.skill_file import check_description, with_description
from ix.stats.paired_f1 import PairedF1, paired_f1
from ix.store.cache import ObservationCache
from ix.store.layout import ExperimentDir, OptimizeDir, RunDir
from ix.store.lookup import latest_run
from ix.store.runs import iso
from ix.store.spec import read_spec
from ix.store.summaries import summary_as_written

__all__ = [
    "FINALISTS",
    "ORIGINAL",
    "SCHEMA_VERSION",
    "SESSION_ID",
    "Hooks",
    "Outcome",
    "Settings",
    "optimize",
    "read_session",
    "sessions",
]

#: Session ids: `opt-20261127-133318-e3d227` (UTC start, then random), sorted by start.
SESSION_PREFIX = "opt-"
SESSION_ID = re.compile(r"opt-[0-9]{8}-[0-9]{6}-[0-9a-f]{6}")
#: The candidate id of the description as it was.
ORIGINAL = "original"
#: A proposed candidate's id: `r2c1`, the first of round 2.
CANDIDATE_ID = re.compile(r"r[0-9]+c[0-9]+")
#: `--finalists`: with `--screen-with`, the candidates of a round the proxy ranks highest,
#: the only ones run on the real subjects' train cases.
FINALISTS = 2


@dataclass(frozen=True)
class Settings:
    """What the command line says (`ix optimize --help` explains each)."""

    skill: str | None = None
    rounds: int = 5
    candidates: int = 3
    holdout: float = 0.4
    seed: int | None = None          # the split's seed; None: the experiment's
    credibility: float = CREDIBILITY
    max_cost_usd: float | None = None
    tolerance: float = TOLERANCE     # the holdout interval must end above −tolerance
    min_changed: int = MIN_CHANGED   # held-out cases the gain must rest on
    #: `--screen-with`: the proxy (a runtime kind, or a subject of the experiment) that ranks
    #: each round's candidates; only the top `finalists` run on the real subjects' train cases
    screen_with: str | None = None
    finalists: int = FINALISTS

    def check(self) -> None:
        for name, value, low in (("--rounds", self.rounds, 1), ("--candidates",
                                                                self.candidates, 1),
                                 ("--min-changed", self.min_changed, 1),
                                 ("--finalists", self.finalists, 1)):
            if value < low:
                raise ConfigError(f"must be at least {low}, got {value}", field=name)
        if not 0.5 <= self.credibility < 1:
            raise ConfigError(f"must be in [0.5, 1), got {self.credibility}",
                              field="--credibility")
        if not 0 <= self.tolerance < 1:
            raise ConfigError(f"must be in [0, 1) (an F1 difference), got {self.tolerance}",
                              field="--tolerance")
        if self.max_cost_usd is not None and self.max_cost_usd <= 0:
            raise ConfigError(f"must be positive, got {self.max_cost_usd}", field="--max-cost")


@dataclass(frozen=True)
class Hooks:
    """Who hears of the session's progress: each run's plan and trials, each step, warnings."""

    on_plan: Callable[[Any], None] | None = None
    on_trial: OnTrial | None = None
    warn: Warn | None = None
    say: Callable[[str], None] | None = None


@dataclass(frozen=True)
class Outcome:
    folder: OptimizeDir
    state: dict[str, Any]
    #: The same arguments on the same files had completed a session already: that one.
    reused: bool = False
    #: The skill's SKILL.md as the lab names it (never a path read from `optimize.json`):
    #: the only file `--apply` may write.
    skill_file: Path | None = None

    @property
    def status(self) -> str:
        return str(self.state["status"])


class _Stopped(Exception):
    """The session stops before its end: a run did not complete (cancelled, failed), or the
    budget is spent."""

    def __init__(self, status: str, reason: str | None):
        super().__init__(status)
        self.status, self.reason = status, reason

    @classmethod
    def of(cls, result: RunResult) -> _Stopped:
        return cls(result.status, result.summary.get("stop_reason")
                   or result.summary.get("reason"))


def sessions(experiment: Path) -> list[OptimizeDir]:
    """The experiment's optimize sessions, oldest first (ids start with their UTC start)."""
    root = ExperimentDir.at(experiment).optimize
    if not root.is_dir():
        return []
    return [OptimizeDir(p) for p in sorted(root.iterdir())
            if p.is_dir() and OptimizeDir(p).state.is_file()]


def read_session(folder: OptimizeDir) -> dict[str, Any]:
    """A session's `optimize.json`; ConfigError naming the file when it cannot be read."""
    try:
        data: dict[str, Any] = json.loads(read_text(folder.state))
    except ValueError as exc:
        raise ConfigError(f"not a readable optimize session: {exc}", file=folder.state) from None
    if not isinstance(data, dict):
        raise ConfigError("not a readable optimize session (not a JSON object)",
                          file=folder.state)
    return data


def optimize(loaded: LoadedExperiment, proposer: Proposer, settings: Settings, *,
             hooks: Hooks = Hooks(), limits: Limits = Limits(),
             command: list[str] | None = None, cache: str | None = None) -> Outcome:
    """Run (or continue) the session these arguments describe; see the module's docstring.
    `cache` (a mode of `ix run --cache-mode`) puts every run behind the lab's observation
    cache: a description tried before, on the same case and seed, is not run again."""
    settings.check()
    mode = None if cache is None else check_mode(cache, field="--cache-mode")
    session = _Session(loaded, proposer, settings, hooks, limits, command, mode)
    if session.reused:
        return Outcome(session.folder, session.state, reused=True,
                       skill_file=session.skill_file)
    try:
        session.run()
    except _Stopped as stop:
        session.state["status"], session.state["reason"] = stop.status, stop.reason
        session.save()
    except ConfigError as exc:
        session.state["status"] = "failed"
        session.state["reason"] = str(exc)
        session.save()
        raise
    return Outcome(session.folder, session.state, skill_file=session.skill_file)


class _Session:
    def __init__(self, loaded: LoadedExperiment, proposer: Proposer, settings: Settings,
                 hooks: Hooks, limits: Limits, command: list[str] | None,
                 cache: CacheMode | None):
        self.loaded, self.proposer, self.settings = loaded, proposer, settings
        self.hooks, self.limits, self.command, self.cache = hooks, limits, command, cache
        exp = loaded.experiment
        if loaded.context is not None or loaded.spec.sweep is not None:
            raise ConfigError("ix optimize runs the experiment's subjects as written; take "
                              "`context:` and `sweep:` out (in a copy of the experiment)",
                              file=loaded.config_file, field="context" if loaded.context
                              else "sweep")
        if exp.sensor != "activation":
            raise ConfigError(f"ix optimize improves activation F1; the sensor is "
                              f"{exp.sensor!r}", file=loaded.config_file, field="sensor")
        self.skill = settings.skill or target_skill(exp.sensor_options, exp.skill,
                                                    exp.subjects[0].name)
        names = [s.name for s in exp.subjects]
        self.carriers = [s for s in exp.subjects
                         if any(k.get("name") == self.skill for k in s.config.get("skills")
                                or []) and s.name != settings.screen_with]
        if not self.carriers and settings.screen_with in names:
            raise ConfigError(f"the proxy {settings.screen_with!r} is the only subject with the "
                              f"skill {self.skill!r}; the real subject must have it too",
                              file=loaded.config_file, field="--screen-with")
        if not self.carriers:
            raise ConfigError(
                f"no subject of the experiment has the skill {self.skill!r}; its subjects: "
                f"{', '.join(names)}",
                file=loaded.config_file, field="--skill" if settings.skill else "subjects")
        self.proxies, self.screen = _proxies(loaded, self.carriers, settings.screen_with)
        entry = next(k for k in self.carriers[0].config["skills"] if k["name"] == self.skill)
        self.skill_file = Path(entry["path"])
        self.skill_text = read_text(self.skill_file)
        self.description = str(entry["description"])
        _, body = split_frontmatter(self.skill_text, file=self.skill_file)
        self.body = body
        self.cases = {c.id: c for c in exp.cases}
        seed = exp.seed if settings.seed is None else settings.seed
        self.split = split_cases(exp.cases, settings.holdout, seed)
        key = _key(exp.name, self.skill, self.skill_text, [s.name for s in self.carriers],
                   proposer.name, settings, seed, cases_digest(exp.cases))
        found = next((s for s in reversed(sessions(loaded.path))
                      if _key_of(s) == key), None)
        self.reused = False
        if found is not None:
            self.folder, self.state = found, read_session(found)
            self._check_own(key)
            if self.state.get("status") == "completed":
                self.reused = True
                self._say(f"session {found.session_id} already ran these arguments on these "
                          "files; showing it (another --seed starts a new one)")
                return
            self.state["status"] = "running"
            self.state["reason"] = None
            self._say(f"continuing optimize session {found.session_id}")
        else:
            stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
            # not a run id's shape (`20261127T133318Z-…`): pasted into `ix report`, a
            # session id would name no run
            self.folder = ExperimentDir.at(loaded.path).session(
                f"{SESSION_PREFIX}{stamp}-{secrets.token_hex(3)}")
            self.state = self._new_state(key, seed)
        self.save()

    # --- the state ----------------------------------------------------------------------

    def _new_state(self, key: str, seed: int) -> dict[str, Any]:
        s = self.settings
        return {
            "schema_version": SCHEMA_VERSION, "id": self.folder.session_id, "key": key,
            "folder": str(self.folder.path),
            "experiment": self.loaded.experiment.name, "experiment_dir": str(self.loaded.path),
            "skill": self.skill, "skill_file": str(self.skill_file),
            "skill_sha256": hashlib.sha256(self.skill_text.encode()).hexdigest(),
            "subjects": [c.name for c in self.carriers],
            "proposer": {"name": self.proposer.name, "kind": self.proposer.kind,
                         **({"note": note} if (note := getattr(self.proposer, "note", None))
                            else {})},
            "settings": {"rounds": s.rounds, "candidates": s.candidates,
                         "holdout": s.holdout, "seed": seed, "credibility": s.credibility,
                         "tolerance": s.tolerance, "min_changed": s.min_changed,
                         "max_cost_usd": s.max_cost_usd,
                         "trials": self.loaded.experiment.trials},
            "split": self.split.as_dict(),
            "status": "running", "reason": None, "stopped_early": None,
            "started_at": iso(datetime.now(UTC)), "finished_at": None,
            "command": self.command,
            "original": {"id": ORIGINAL, "description": self.description, "train": None},
            "rounds": [], "best": ORIGINAL, "holdout": None, "recommended": False,
            "recommended_file": None, "cost_usd": 0.0, "applied": None,
            **({} if self.screen is None else {"screening": {
                **self.screen, "finalists": s.finalists, "real_trials": 0,
                "proxy_trials": 0, "saved_trials": 0}}),
        }

    def _check_own(self, key: str) -> None:
        """Refuse a found session that does not record what the lab says (ix wrote no such
        file: it was made or edited by hand, or came with the lab from elsewhere), then
        take its paths from the lab, never from the file."""
        expected = {"key": key, "id": self.folder.session_id,
                    "experiment": self.loaded.experiment.name, "skill": self.skill,
                    "skill_sha256": hashlib.sha256(self.skill_text.encode()).hexdigest(),
                    "subjects": [c.name for c in self.carriers]}
        for name, value in expected.items():
            if self.state.get(name) != value:
                raise ConfigError(
                    f"this session records {name} {self.state.get(name)!r} where the lab says "
                    f"{value!r}: ix did not write it for these files; remove "
                    f"{self.folder.path} to run afresh", file=self.folder.state, field=name)
        ids = [str(c.get("id")) for r in self.state.get("rounds") or ()
               for c in r.get("candidates") or ()]
        for cid in ids:
            if not CANDIDATE_ID.fullmatch(cid):
                raise ConfigError(f"candidate id {cid!r} is not one ix gives (r1c1, ...); "
                                  f"remove {self.folder.path} to run afresh",
                                  file=self.folder.state, field="rounds")
        if self.state.get("best") not in (ORIGINAL, *ids):
            raise ConfigError(f"best {self.state.get('best')!r} is none of the session's "
                              f"candidates; remove {self.folder.path} to run afresh",
                              file=self.folder.state, field="best")
        self.state.update(folder=str(self.folder.path), experiment_dir=str(self.loaded.path),
                          skill_file=str(self.skill_file))

    def save(self) -> None:
        self._write(self.folder.state, dumps(self.state))

    def _write(self, path: Path, text: str) -> None:
        """A file of the session, written whole and never through a symlinked folder."""
        check_tree(self.loaded.path, path.parent)
        write_text_atomic(path, text, shared=True)

    def _say(self, text: str) -> None:
        if self.hooks.say is not None:
            self.hooks.say(text)

    # --- the steps ----------------------------------------------------------------------

    def run(self) -> None:
        st = self.state
        train = [self.cases[i] for i in self.split.train]
        if st["original"]["train"] is None:
            self._say(f"round 0: the original description on {len(train)} train cases")
            summary = self._evaluate(self.folder.round(0) / ORIGINAL, list(self.carriers),
                                     train)
            st["original"]["train"] = self._score(summary)
            st["original"]["run_id"] = summary["run_id"]
            self._tally(real=_trials(summary))
            self.save()
        while len(st["rounds"]) < self.settings.rounds and st["stopped_early"] is None:
            self._round(len(st["rounds"]) + 1, train)
        if st["holdout"] is None:
            self._holdout()
        st["status"] = "completed"
        st["finished_at"] = iso(datetime.now(UTC))
        self.save()

    def _candidate(self, cid: str) -> dict[str, Any]:
        if cid == ORIGINAL:
            return dict(self.state["original"])
        return next(c for r in self.state["rounds"] for c in r["candidates"] if c["id"] == cid)

    def _round(self, number: int, train: list[EvalCase]) -> None:
        st = self.state
        best = self._candidate(st["best"])
        if not best["train"]["misses"]:
            st["stopped_early"] = f"before round {number}: every train case is right"
            self.save()
            return
        tried = [(ORIGINAL, st["original"])] + [(c["id"], c) for r in st["rounds"]
                                                for c in r["candidates"]]
        request = ProposalRequest(
            skill=self.skill, description=best["description"],
            body_summary=body_summary(self.body),
            misses=tuple(Miss(**m) for m in best["train"]["misses"]),
            tried=tuple(sorted(((c["description"], _f1(c)) for _, c in tried),
                               key=lambda t: -t[1])),
            count=self.settings.candidates, round=number,
            other_skills=tuple(sorted({k["name"] for s in self.carriers
                                       for k in s.config.get("skills") or []
                                       if k["name"] != self.skill})))
        answer = self._answer(request)
        seen = {c["description"] for _, c in tried}
        accepted: list[str] = []
        rejected: list[dict[str, str]] = []
        try:
            texts = parse_answer(answer.answer)
        except ValueError as exc:
            texts, rejected = [], [{"text": answer.answer, "reason": str(exc)}]
        for text in texts:
            reason = check_description(text)
            if reason is None and (text in seen or text in accepted):
                reason = "was tried already"
            if reason is None and len(accepted) >= self.settings.candidates:
                reason = f"more than the {self.settings.candidates} asked for"
            if reason is not None:
                rejected.append({"text": text, "reason": reason})
            else:
                accepted.append(text)
        record: dict[str, Any] = {"round": number, "candidates": [], "rejected": rejected,
                                  "best": None, "improved": False, "run_ids": {}}
        if answer.rationale:
            record["rationale"] = answer.rationale
        if not accepted:
            st["rounds"].append(record)
            st["stopped_early"] = f"after round {number}: the proposer gave no new valid " \
                                  "description"
            self.save()
            return
        candidates: list[dict[str, Any]] = []
        for i, text in enumerate(accepted, 1):
            cid = f"r{number}c{i}"
            path = self.folder.candidate(cid, self.skill)
            self._write(path, with_description(self.skill_text, text, file=self.skill_file))
            candidates.append({"id": cid, "description": text, "round": number,
                               "file": str(path), "train": None})
        record["run_ids"] = {}
        finalists = candidates if self.screen is None else self._screen(record, candidates,
                                                                        train)
        real = 0
        for c in finalists:  # one run each: the subjects' own names, so their own seeds
            self._say(f"round {number}: {c['id']} on {len(train)} train cases")
            summary = self._evaluate(self.folder.round(number) / c["id"],
                                     self._with(c["description"], Path(c["file"])), train)
            c["train"] = self._score(summary)
            record["run_ids"][c["id"]] = summary["run_id"]
            real += _trials(summary)
        if "screen" in record:
            record["screen"]["real_trials"] = real
            self._tally(real=real, proxy=record["screen"]["proxy_trials"],
                        saved=record["screen"]["saved_trials"])
        record["candidates"] = candidates
        top = max(finalists, key=lambda c: c["train"]["f1"])  # ties: the first proposed
        record["best"] = top["id"]
        if top["train"]["f1"] > best["train"]["f1"]:
            st["best"], record["improved"] = top["id"], True
        st["rounds"].append(record)
        self.save()

    def _screen(self, record: dict[str, Any], candidates: list[dict[str, Any]],
                train: list[EvalCase]) -> list[dict[str, Any]]:
        """Every candidate of the round on the train cases with the proxy; the top
        `--finalists` by proxy F1 (ties: the first proposed) are returned, in the order
        proposed, to run on the real subjects. The others' real trials are saved."""
        assert self.screen is not None
        number = record["round"]
        trials: dict[str, int] = {}
        for c in candidates:
            self._say(f"round {number}: {c['id']} on {len(train)} train cases, "
                      f"screened with {self.screen['name']}")
            summary = self._evaluate(self.folder.screen(number) / c["id"],
                                     self._with(c["description"], Path(c["file"]),
                                                self.proxies), train)
            per = [{"subject": b["name"], **_metrics(b)} for b in summary["subjects"]]
            c["proxy"] = {"f1": round(sum(p["f1"] for p in per) / len(per), 6),
                          "subjects": per, "run_id": summary["run_id"]}
            trials[c["id"]] = _trials(summary)
        ranked = sorted(candidates, key=lambda c: -c["proxy"]["f1"])  # stable
        chosen = {c["id"] for c in ranked[: self.settings.finalists]}
        record["screen"] = {
            "ranking": [{"id": c["id"], "proxy_f1": c["proxy"]["f1"]} for c in ranked],
            "finalists": [c["id"] for c in candidates if c["id"] in chosen],
            "proxy_trials": sum(trials.values()), "real_trials": 0,
            "saved_trials": sum(n for cid, n in trials.items() if cid not in chosen)}
        return [c for c in candidates if c["id"] in chosen]

    def _tally(self, *, real: int = 0, proxy: int = 0, saved: int = 0) -> None:
        """Add to the session's count of real and proxy trials and of real trials saved."""
        screening = self.state.get("screening")
        if screening is not None:
            screening["real_trials"] += real
            screening["proxy_trials"] += proxy
            screening["saved_trials"] += saved

    def _answer(self, request: ProposalRequest) -> Answer:
        """The proposer's answer for this round: from the log if it was asked already."""
        log = self.folder.proposer_log
        if log.is_file():
            for line in read_text(log).splitlines():
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue  # a line torn by a crash: ask again
                if entry.get("round") == request.round:
                    return Answer(entry["request"], entry["answer"], entry.get("cost_usd", 0.0),
                                  rationale=str(entry.get("rationale") or ""))
        self._check_budget()
        self._say(f"round {request.round}: asking the {self.proposer.name} proposer")
        seed = derived_seed(f"{self.state['key']}:propose:{request.round}")
        answer = self.proposer.propose(request, seed=seed)
        append_line(log, json.dumps({
            "round": request.round, "proposer": self.proposer.name, "at": iso(datetime.now(UTC)),
            "request": answer.request, "answer": answer.answer, "cost_usd": answer.cost_usd,
            "tokens_input": answer.tokens_input, "tokens_output": answer.tokens_output,
            **({"rationale": answer.rationale} if answer.rationale else {})},
            ensure_ascii=False))
        self.state["cost_usd"] = round(self.state["cost_usd"] + answer.cost_usd, 6)
        return answer

    def _holdout(self) -> None:
        st = self.state
        holdout = [self.cases[i] for i in self.split.holdout]
        if st["best"] == ORIGINAL:
            st["holdout"] = {"run_id": None, "verdict": "no candidate",
                             "credibility": self.settings.credibility,
                             "tolerance": self.settings.tolerance,
                             "min_changed": self.settings.min_changed,
                             "why": "no candidate beat the original description's train F1; "
                                    "nothing to judge on the holdout cases",
                             "subjects": [], "prob_better": None, "p_value": None}
            self.save()
            return
        best = self._candidate(st["best"])
        # the candidate's file made again from its description, where ix puts it: never a
        # path (or a link) that optimize.json or the session's folder could name instead
        text = with_description(self.skill_text, best["description"], file=self.skill_file)
        path = self.folder.candidate(best["id"], self.skill)
        self._write(path, text)
        self._say(f"holdout: the original and {best['id']} on {len(holdout)} held-out cases")
        original = self._evaluate(self.folder.holdout / ORIGINAL, list(self.carriers), holdout)
        candidate = self._evaluate(self.folder.holdout / best["id"],
                                   self._with(best["description"], path), holdout)
        self._tally(real=_trials(original) + _trials(candidate))
        theirs = {b["name"]: b for b in candidate["subjects"]}
        per_subject: list[dict[str, Any]] = []
        results: dict[str, PairedF1] = {}
        for block in original["subjects"]:
            other = theirs[block["name"]]
            must, not_ = _tables(block["probe_results"], other["probe_results"])
            result = results[block["name"]] = paired_f1(must, not_, level=0.95)
            per_subject.append({
                "subject": block["name"],
                "original": _metrics(block), "candidate": _metrics(other),
                "difference": result.difference, "difference_ci": [result.lo, result.hi],
                "difference_sided": result.sided, "median": result.median,
                "prob_better": result.prob_b_better, "mc_error": result.mc_error,
                "p_value": result.p_value, "improved": result.improved,
                "worsened": result.worsened,
                "pairs": {"must": list(must), "not": list(not_)}})
        s = self.settings
        verdict = judge(results, credibility=s.credibility, tolerance=s.tolerance,
                        min_changed=s.min_changed)
        for entry in per_subject:
            entry["failed"] = verdict.failed[entry["subject"]]
        recommended = verdict.recommended
        st["holdout"] = {
            "run_id": original["run_id"], "candidate_run_id": candidate["run_id"],
            "candidate": best["id"], "subjects": per_subject,
            "prob_better": min(float(p["prob_better"]) for p in per_subject),
            "p_value": max(float(p["p_value"]) for p in per_subject),
            "credibility": s.credibility, "tolerance": s.tolerance,
            "min_changed": s.min_changed,
            "verdict": "recommended" if recommended else "not recommended",
            "why": verdict.why}
        st["recommended"] = recommended
        if recommended:
            self._write(self.folder.recommended, text)
            st["recommended_file"] = str(self.folder.recommended)
        self.save()

    # --- runs ---------------------------------------------------------------------------

    def _with(self, description: str, path: Path,
              subjects: Sequence[Subject] | None = None) -> list[Subject]:
        """The subjects that have the skill (or `subjects`: their proxies), with
        `description` (in the SKILL.md at `path`): under their own names, so that their
        trials draw the seeds the original's drew."""
        out = []
        for s in self.carriers if subjects is None else subjects:
            skills = [dict(k, description=description, path=str(path))
                      if k["name"] == self.skill else k for k in s.config["skills"]]
            out.append(s.model_copy(update={"config": {**s.config, "skills": skills}}))
        return out

    def _check_budget(self) -> None:
        limit, spent = self.settings.max_cost_usd, self.state["cost_usd"]
        if limit is not None and spent >= limit:
            raise _Stopped("cancelled", f"--max-cost {limit:g} USD reached (spent {spent:.4f})")

    def _evaluate(self, folder: Path, subjects: list[Subject],
                  cases: Sequence[EvalCase]) -> dict[str, Any]:
        """The summary of `subjects` on `cases`, run in `folder` — read back if that run
        completed, resumed if it did not."""
        results = ExperimentDir.at(folder).results
        latest = latest_run(results) if results.is_dir() else None
        if latest is not None:
            spec = read_spec(latest)
            done = RunDir(latest).summary
            if spec.get("status") == "completed" and done.is_file():
                return summary_as_written(done)
        exp = self.loaded.experiment.model_copy(update={
            "subjects": tuple(subjects), "cases": tuple(cases), "goal": None})
        loaded = replace(self.loaded, path=folder, experiment=exp,
                         spec=self.loaded.spec.model_copy(update={"goal": None}))
        plan = build_plan(loaded)
        cont = None
        if latest is not None:
            cont = find_continuation(results, latest.name, "resume", self.hooks.warn)
            plan = continuing(plan, cont)  # its seeds as the run drew them
        if self.cache is not None:
            store = ObservationCache(self.loaded.lab)
            plan = replace(plan, subjects=tuple(
                with_cache(sp, store, self.cache, plan.redactor, seeding=plan.seeding)
                for sp in plan.subjects))
        self._check_budget()
        if self.hooks.on_plan is not None:
            self.hooks.on_plan(plan)
        limits = self.limits
        if self.settings.max_cost_usd is not None:
            left = max(0.0, self.settings.max_cost_usd - self.state["cost_usd"])
            limits = replace(limits, max_cost_usd=left)
        result = run_plan(plan, command=self.command, on_trial=self.hooks.on_trial,
                          continuation=cont, limits=limits, warn=self.hooks.warn)
        cost = float((result.summary.get("usage") or {}).get("cost_usd") or 0.0)
        self.state["cost_usd"] = round(self.state["cost_usd"] + cost, 6)
        if result.status != "completed":
            raise _Stopped.of(result)
        return dict(result.summary)

    def _score(self, summary: Mapping[str, Any]) -> dict[str, Any]:
        """Train F1 of one description: per subject that has the skill, and their mean (what
        chooses); the wrong cases, from the first subject (what the proposer hears)."""
        blocks = summary["subjects"]
        per = [{"subject": b["name"], **_metrics(b)} for b in blocks]
        wrong = misses(blocks[0]["probe_results"], self.cases, self.split.train)
        return {"f1": round(sum(p["f1"] for p in per) / len(per), 6), "subjects": per,
                "misses": [m.as_dict() for m in wrong]}


def _proxies(loaded: LoadedExperiment, carriers: Sequence[Subject],
             proxy: str | None) -> tuple[list[Subject], dict[str, Any] | None]:
    """`--screen-with`: each real subject as the proxy runs it — the subject's skills (so each
    candidate's description) under its own name (so its trial seeds), the proxy's runtime
    (spelt as `proxy:` is, `ix.engine.proxies`: a subject of the experiment, a registry
    subject, a runtime kind, a runtime mapping) — and what the session records of the proxy.
    No proxy: ([], None)."""
    if proxy is None:
        return [], None
    out: list[Subject] = []
    spec: dict[str, Any] = {}
    named: str | None = None
    for s in carriers:
        _, spec, named = proxy_runtime(loaded, s, proxy, file=loaded.config_file,
                                       field="--screen-with")
        config: dict[str, Any] = {**s.config, "runtime": spec, "model": spec.get("model"),
                                  "runtime_origins": {"kind": ["", "--screen-with"]}}
        config.pop("concurrency", None)
        out.append(s.model_copy(update={"config": config}))
    kind = "subject" if named is not None else "runtime"
    return out, {"name": proxy, "kind": kind, "runtime": str(spec.get("kind"))}


def _trials(summary: Mapping[str, Any]) -> int:
    """The trials a run's summary counts: the calls its subjects got."""
    return sum(int(p.get("n", 0)) for b in summary.get("subjects") or ()
               for p in b.get("probe_results") or ())


def _key_of(folder: OptimizeDir) -> str | None:
    """A session's key, or None when its file is unreadable (it is then never continued)."""
    try:
        return str(read_session(folder).get("key"))
    except ConfigError:
        return None


def _f1(candidate: Mapping[str, Any]) -> float:
    """A description's train F1: the real subjects', else (screened out) the proxy's."""
    score = candidate.get("train") or candidate.get("proxy") or {}
    return float(score.get("f1") or 0.0)


def _metrics(block: Mapping[str, Any]) -> dict[str, Any]:
    m = block["metrics"]
    return {"f1": m["f1"], "f1_ci": m.get("f1_ci"), "precision": m["precision"],
            "recall": m["recall"], "tp": m["tp"], "fp": m["fp"], "fn": m["fn"], "tn": m["tn"]}


def _fired(probe: Mapping[str, Any]) -> bool | None:
    """A case's majority vote: fired (activation rate above ½), or None without a valid trial."""
    valid = int(probe.get("n", 0)) - int(probe.get("errors", 0))
    return None if valid <= 0 else float(probe.get("score") or 0.0) > 0.5


def _tables(original: Sequence[Mapping[str, Any]], candidate: Sequence[Mapping[str, Any]]
            ) -> tuple[tuple[int, int, int, int], tuple[int, int, int, int]]:
    """(both fired, original only, candidate only, neither) over must cases and over not
    cases; a case without a vote from both is left out."""
    votes = {p["probe_id"]: (p["expectation"], _fired(p)) for p in original}
    cells = {"must_trigger": [0, 0, 0, 0], "should_not_trigger": [0, 0, 0, 0]}
    for p in candidate:
        expectation, a = votes.get(p["probe_id"], (None, None))
        b = _fired(p)
        if a is None or b is None or expectation not in cells:
            continue
        cells[expectation][0 if a and b else 1 if a else 2 if b else 3] += 1
    must, not_ = cells["must_trigger"], cells["should_not_trigger"]
    return (must[0], must[1], must[2], must[3]), (not_[0], not_[1], not_[2], not_[3])


def _key(experiment: str, skill: str, text: str, subjects: list[str], proposer: str,
         settings: Settings, seed: int, cases: str) -> str:
    """What makes two invocations the same session (the same command on the same files)."""
    data = {"experiment": experiment, "skill": skill,
            "skill_sha256": hashlib.sha256(text.encode()).hexdigest(), "subjects": subjects,
            "proposer": proposer, "rounds": settings.rounds, "candidates": settings.candidates,
            "holdout": settings.holdout, "seed": seed, "credibility": settings.credibility,
            "tolerance": settings.tolerance, "min_changed": settings.min_changed,
            "cases": cases}
    if settings.screen_with is not None:  # a screened session is another session
        data.update(screen_with=settings.screen_with, finalists=settings.finalists)
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]
