"""Continuing a run: `--resume` runs exactly the trials not yet recorded, `--retry-failed`
re-runs the ones whose latest attempt errored.

The trial log is the truth: a run's records are read back from `trials.jsonl` by the store's
fast reader (`ix.store.trial_scan.read_state`; a torn last line is skipped with a warning, so
that trial runs again), the latest attempt of each (subject, probe_id, trial) counts, and the
tallies are rebuilt from them before the missing trials run — so the final summary equals that
of an uninterrupted run. A retried trial keeps its trial seed and gets the next attempt
number, which runtimes mix into their draws. This module holds only the policy: which run
continues, whether it may, and which trials run again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from ix.domain.errors import ConfigError, Warn
from ix.engine.plan import Plan
from ix.eval.models import SEEDINGS, EvalCase, Seeding
from ix.store.layout import ExperimentDir
from ix.store.lookup import experiment_run, is_executed, latest_run, run_folders
from ix.store.spec import read_spec
from ix.store.trial_scan import ERRORED, FAILED, MISSING, PASSED, RunState, read_state

__all__ = ["ERRORED", "FAILED", "MISSING", "PASSED", "Continuation", "Mode", "RunState",
           "cases_digest", "check_continuable", "continuing", "current", "find_continuation",
           "per_case", "read_state", "recorded_seeding"]

Mode = Literal["resume", "retry_failed"]


@dataclass(frozen=True)
class Continuation:
    run_id: str
    mode: Mode
    spec: Mapping[str, Any]
    state: RunState

    @property
    def recorded(self) -> int:
        """Lines the run has in the log (every attempt)."""
        return self.state.lines

    def keeps(self, code: int) -> bool:
        """Whether a recorded outcome stands (is counted, and not run again)."""
        return code != MISSING if self.mode == "resume" else code in (PASSED, FAILED)

    def to_run(self, subject: str, probe_id: str, trial: int) -> int | None:
        """The attempt number to run this trial with, or None when it is not to run."""
        code = self.state.code(subject, probe_id, trial)
        if self.mode == "resume":
            return 0 if code == MISSING else None
        if code != ERRORED:
            return None
        return self.state.attempt(subject, probe_id, trial) + 1

    def pending(self, subject: str, probe_id: str, trials: int) -> list[int]:
        """The trials below `trials` that `to_run` would run, ascending — found with
        `bytearray.find`, so a run missing one trial of a million is not walked trial by trial."""
        codes = self.state.codes.get((subject, probe_id), bytearray())
        wanted = MISSING if self.mode == "resume" else ERRORED
        found = []
        at = codes.find(wanted, 0, trials)
        while at >= 0:
            found.append(at)
            at = codes.find(wanted, at + 1, trials)
        if self.mode == "resume":
            found.extend(range(len(codes), trials))
        return found


def per_case(spec: Mapping[str, Any]) -> int | None:
    """The trials per case a run's spec planned (the most, under `trials: auto`)."""
    trials = spec.get("trials")
    return trials if type(trials) is int and trials >= 1 else None


def find_continuation(results: Path, run_id: str | None, mode: Mode,
                      warn: Warn | None = None) -> Continuation:
    """The run to continue: `run_id`, else the experiment's latest run that ix executed
    (an imported run has no plan of its own to continue)."""
    if run_id is None:
        folders = run_folders(results)
        latest = latest_run(results, is_executed)
        if latest is None:
            raise ConfigError("this experiment has no run to continue"
                              + (" (only imported ones)" if folders else ""), field="--run")
        directory, run_id = latest, latest.name
    else:  # a unique prefix or suffix names a run, as everywhere
        directory = experiment_run(results, run_id, "--run")
        run_id = directory.name
    spec = read_spec(directory)
    if spec.get("imported_from"):
        raise ConfigError(f"run {run_id} was imported from {spec['imported_from']}; only a run "
                          "ix executed can be continued", field="--run")
    return Continuation(run_id=run_id, mode=mode, spec=spec,
                        state=read_state(ExperimentDir(results).trials, run_id, warn,
                                         per_case=per_case(spec)))


def cases_digest(cases: Sequence[EvalCase]) -> str:
    """The digest of a plan's cases that its run records (`config.cases.sha256` of the spec):
    a run continues only on the cases it started with. A case's history and its workspace's
    files count where it has them (a case without keeps the digest it had before)."""
    return hashlib.sha256("\n".join(f"{c.id}\t{c.expectation}\t{c.prompt}" + (
        "\t" + json.dumps([t.model_dump(mode="json") for t in c.history], sort_keys=True)
        if c.history else "") + (f"\tworkspace:{c.workspace.digest}" if c.workspace else "")
        + ("\tchecks:" + json.dumps(c.checks, sort_keys=True) if c.checks else "")
        + ("\tuser:" + c.user.model_dump_json() if c.user else "")
        for c in cases).encode()).hexdigest()


def check_continuable(plan: Plan, cont: Continuation) -> None:
    """Whether `plan` may continue the run `cont` found: only on the cases and the subjects
    it started with (else `ConfigError`, naming the flag). The one place that decides it."""
    config = cont.spec.get("config") or {}
    flag = f"--{cont.mode.replace('_', '-')}"
    if plan.load is not None or config.get("load"):
        raise ConfigError(f"run {cont.run_id} is a load test (`load:`): its requests were due "
                          "at times that have passed, so it cannot be continued; start a new "
                          "run", field=flag)
    then = config.get("cases", {}).get("sha256")
    if then and then != cases_digest(plan.cases):
        raise ConfigError(f"the cases changed since run {cont.run_id} started; a continued run "
                          "must run the same cases (start a new run instead)", field=flag)
    names_then = [s["name"] for s in config.get("subjects", [])]
    names_now = [sp.subject.name for sp in plan.subjects]
    if names_then and names_then != names_now:
        raise ConfigError(f"the subjects changed since run {cont.run_id} started "
                          f"({', '.join(names_then)} then, {', '.join(names_now)} now)",
                          field=flag)


def recorded_seeding(spec: Mapping[str, Any], run_id: str = "") -> Seeding:
    """How a run's trial seeds were derived: its spec's `seeding`; a run made before spec.yaml
    recorded it drew `per-subject` (DESIGN.md §2), and continues so."""
    value = spec.get("seeding", "per-subject")
    if value not in SEEDINGS:
        raise ConfigError(f"run {run_id or spec.get('run_id')} records seeding {value!r}, "
                          f"which this ix does not know (it knows {', '.join(SEEDINGS)})",
                          field="seeding")
    return value  # type: ignore[no-any-return]


def continuing(plan: Plan, cont: Continuation) -> Plan:
    """`plan`, checked to continue the run `cont` found (`check_continuable`) and set to
    derive its trial seeds as that run did: its remaining trials draw what they would have
    drawn had it never stopped, whatever the experiment says now."""
    check_continuable(plan, cont)
    return replace(plan, seeding=recorded_seeding(cont.spec, cont.run_id))


def current(continuation: Continuation, directory: Path, results: Path) -> Continuation:
    """The continuation as the log stands now that this process holds the run's lock.

    When the run's spec changed since it was read, or says `running` (a process was executing
    the run, and may have written lines until it died), the log is read again: with the lock
    held nobody else writes this run's lines, so nothing is run twice."""
    spec = read_spec(directory)
    if spec == continuation.spec and spec.get("status") != "running":
        return continuation
    return replace(continuation, spec=spec,
                   state=read_state(ExperimentDir(results).trials, continuation.run_id,
                                    per_case=per_case(spec)))
