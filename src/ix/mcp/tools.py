"""The tools that read and plan: plain methods of one lab, each calling `ix.api`.

A method's signature is its tool's input schema and its docstring the tool's description
(what Claude Code reads to choose a tool), so both are written for that reader. Bad input
raises `ConfigError`; the server turns it into an error result naming the argument.
"""

import math
from collections.abc import Iterable
from dataclasses import asdict, is_dataclass
from datetime import date, datetime
from itertools import islice
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from ix import api
from ix.api import design, power_plan, reports
from ix.api import runs as run_folders
from ix.api.integrations import scaffold
from ix.api.results import rates_of
from ix.api.runs import RunEntry
from ix.mcp.inputs import (
    TRIALS_HELP,
    CaseInput,
    ExperimentName,
    Filters,
    RunRef,
    Text,
    Trials,
    Values,
)

ConfigError = api.ConfigError
MAX_ROWS = 10_000


def jsonable(value: Any) -> Any:
    """Plain JSON data: paths and datetimes as strings, NaN and infinities as null."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if is_dataclass(value) and not isinstance(value, type):
        return jsonable(asdict(value))
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str | int | bool) or value is None:
        return value
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


class LabTools:
    """The read and plan tools of one lab (`ix mcp --lab LAB`)."""

    def __init__(self, lab: Path):
        self.lab = lab

    # -- helpers -------------------------------------------------------------------------

    def experiment_dir(self, name: str, field: str = "experiment") -> Path:
        """The folder of the lab's experiment `name`; never one outside the lab."""
        if name in (".", ".."):
            raise ConfigError("give an experiment's folder name, not a path", field=field)
        try:
            _, paths = api.resolve(self.lab, [name], cwd=self.lab)
        except ConfigError as exc:
            raise ConfigError(exc.message, file=exc.file, field=field) from None
        if paths[0].parent != self.lab:
            raise ConfigError(f"{name!r} is not an experiment of lab {self.lab}", field=field)
        return paths[0]

    def _runs_of(self, path: Path) -> list[RunEntry]:
        for folder, infos in run_folders.list_runs(self.lab).items():
            if folder.name == path.name:
                return infos
        return []

    def _run(self, ref: str, field: str = "run") -> RunEntry:
        try:
            return run_folders.lab_run(self.lab, ref)
        except ConfigError as exc:
            raise ConfigError(exc.message, file=exc.file, field=field) from None

    # -- tools ---------------------------------------------------------------------------

    def list_experiments(self) -> dict[str, Any]:
        """The lab's experiments: name, cases per expectation, subjects, last run with its
        status and time, and its answer: the goal's verdict with the difference and its
        interval (`goal`), else the control's F1 with its interval (`headline`). An
        experiment that does not load shows its error."""
        lab, infos = api.list_experiments(self.lab)
        return jsonable({"lab": lab, "experiments": [
            {"name": i.name, "folder": i.path.name, "cases": i.cases, "subjects": i.subjects,
             "last_run": i.last_run, "status": i.status, "last_run_at": i.last_run_at,
             "goal": i.goal, "headline": i.headline, "f1": i.f1, "error": i.error}
            for i in infos]})

    def show_experiment(
        self, experiment: ExperimentName,
        runs: Annotated[int, Field(ge=0, le=100, description="How many recent runs to list.")]
        = 5,
    ) -> dict[str, Any]:
        """One experiment in full: its experiment.yaml as written, the resolved settings
        (runtime, sensor, trials, seed, goal), its subjects and their skills, every case with
        its expectation and prompt, and its recent runs (newest first)."""
        path = self.experiment_dir(experiment)
        loaded = api.load(path, self.lab)
        exp = loaded.experiment
        subjects = []
        for s in exp.subjects:
            config = {k: v for k, v in s.config.items() if k != "skills"}
            subjects.append({"name": s.name, "description": s.description,
                             "skills": [k["name"] for k in s.config.get("skills", [])],
                             **config})
        recent = self._runs_of(path)[:runs]
        return jsonable({
            "name": exp.name, "folder": path.name, "path": path,
            "description": exp.description, "skill": exp.skill,
            "config": loaded.config_file.read_text(encoding="utf-8"),
            "runtime": exp.runtime, "sensor": {"kind": exp.sensor, **exp.sensor_options},
            "trials": "auto" if exp.adaptive else exp.trials, "seed": exp.seed,
            "concurrency": exp.concurrency, "timeout_s": exp.timeout_s, "goal": exp.goal,
            "subjects": subjects,
            "cases": [{"id": c.id, "expectation": c.expectation, "prompt": c.prompt,
                       "rationale": c.rationale, "tags": list(c.tags),
                       "difficulty": c.difficulty, "metadata": c.metadata} for c in exp.cases],
            "runs": [{"run_id": r.run_id, "status": r.status, "started_at": r.started_at,
                      "finished_at": r.finished_at, "seed": r.seed,
                      "trials_per_case": r.trials_per_case, "has_summary": r.has_summary}
                     for r in recent],
        })

    def validate_experiment(
        self,
        experiments: Annotated[list[ExperimentName], Field(
            description="The experiments to check; empty: every experiment of the lab.")]
        = [],  # noqa: B006 - read only, and the schema shows the default
        trials: Annotated[Trials | None, Field(description=TRIALS_HELP)] = None,
        runtime: Annotated[Text | None, Field(
            description="Check as if every subject ran with this runtime kind.")] = None,
        subjects: Annotated[list[Text], Field(description="Only these subjects.")] = [],  # noqa: B006
        filters: Filters = [],  # noqa: B006
        strict: Annotated[bool, Field(description=(
            "Count design warnings as errors (ok: false)."))] = False,
    ) -> dict[str, Any]:
        """Load and plan experiments without running anything: per experiment whether it is
        valid (else the error, naming the file and the field), the cases that would run,
        acceptable cases skipped, trials per case, each subject's runtime and model, the total
        trials, estimated input tokens and cost, and the design warnings (too few cases for
        the goal, no control, one trial on a stochastic runtime, unbalanced or duplicate
        cases, ...), each with a code, the field and what to do."""
        overrides = api.Overrides(trials=trials, runtime=runtime, subjects=tuple(subjects),
                                  filters=tuple(filters))
        if experiments:
            paths = [self.experiment_dir(name, "experiments") for name in experiments]
        else:
            _, paths = api.resolve(self.lab, [], cwd=self.lab)
        found = [self.check(path, overrides, strict) for path in paths]
        return jsonable({"ok": all(r["ok"] for r in found), "experiments": found})

    def check(self, path: Path, overrides: api.Overrides = api.Overrides(),
              strict: bool = False) -> dict[str, Any]:
        """One experiment's validation report (`validate_experiment`)."""
        try:
            plan = api.validate(self.lab, [str(path)], overrides)[0]
            report = {"ok": True, **api.dry_run(self.lab, [str(path)], overrides)[0]}
        except ConfigError as exc:
            lab, _ = api.resolve(self.lab, [str(path)], cwd=self.lab)
            errors = [e.render() for e in api.check(path, lab, overrides)[1]] or [exc.render()]
            return {"experiment": path.name, "ok": False, "error": errors[0],
                    "errors": errors}
        warnings = [w.model_dump() for w in design.design_warnings(plan)]
        report["warnings"] = warnings
        if strict and warnings:
            report["ok"] = False
            report["error"] = f"{len(warnings)} design warning(s), refused under strict"
        return report

    def create_experiment(
        self,
        name: Annotated[str, Field(
            min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
            description="The experiment's name and its folder in the lab.")],
        skill: Annotated[Text | None, Field(description=(
            "The skill under test, the activation sensor's target (a name under the lab's "
            "skills/)."))] = None,
        subjects: Annotated[list[Text], Field(description=(
            "Subjects to compare, the control first: names of the subject registry "
            "(claude-sonnet, ...) become profiles, other names inline subjects to edit."))]
        = [],  # noqa: B006
        goal: Annotated[Text | None, Field(description=(
            "The hypothesis. With two or more subjects it becomes a goal comparing the first "
            "two (metric f1, direction differ, min_effect 0.1: edit experiment.yaml to "
            "change them), else the description."))] = None,
        runtime: Annotated[Text | None, Field(description=(
            "The runtime kind: claude-code (the default), anthropic, openai, lexical "
            "(offline), mock (deterministic), command, http."))] = None,
        cases: Annotated[list[CaseInput] | None, Field(description=(
            "The cases; default: one must / not / edge template each, to replace."))] = None,
        allow_missing: Annotated[bool, Field(description=(
            "Create it even if `skill` is not in the lab's skills/ yet (refused otherwise); "
            "validation reports it missing until it is added."))] = False,
    ) -> dict[str, Any]:
        """Create an experiment: <lab>/<name>/experiment.yaml (commented), cases/*.md (the
        cases given, or templates) and a README that walks through Goal -> Design -> Run ->
        Analysis, as `ix new` does. Refuses an existing name (nothing is ever overwritten)
        and writes nothing on bad input. Returns the files and the validation report (see
        validate_experiment); per-subject skills, runtime options, the goal's metric and
        direction, trials and seed are set by editing experiment.yaml afterwards."""
        folder = scaffold.create_experiment(
            self.lab, name, skill=skill, subjects=subjects, goal=goal, runtime=runtime,
            allow_missing=allow_missing,
            cases=None if cases is None else [c.model_dump(exclude_none=True,
                                                           exclude_defaults=True)
                                              for c in cases])
        files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
        return jsonable({"experiment": name, "path": folder, "files": files,
                         "validation": self.check(folder)})

    def plan_power(
        self,
        experiment: Annotated[ExperimentName | None, Field(description=(
            "Take the planning values (rate, variances, cases, trials) from this experiment's "
            "latest run, or from its design before its first run."))] = None,
        width: Annotated[float | None, Field(gt=0, lt=1, description=(
            "Target full width of a rate's 95% credible interval: how many units (cases, or "
            "trials of one case) are needed."))] = None,
        mde: Annotated[float | None, Field(gt=0, lt=1, description=(
            "Minimum difference between two subjects to detect."))] = None,
        paired: Annotated[bool, Field(description=(
            "Both subjects run the same cases (the usual ix design; Miller's formula)."))]
        = False,
        p: Annotated[float | None, Field(ge=0, le=1, description=(
            "Planning rate of the control; default 0.5 (the worst case)."))] = None,
        trials: Annotated[int | None, Field(ge=1, description="Paired: trials per case.")]
        = None,
        cases: Annotated[int | None, Field(ge=2, description=(
            "Paired: report the detectable difference for this many cases."))] = None,
        sigma2_a: Annotated[float | None, Field(ge=0, description=(
            "Paired: within-case trial variance of the control (default p(1-p))."))] = None,
        sigma2_b: Annotated[float | None, Field(ge=0, description=(
            "Paired: within-case trial variance of the variant (default: the control's)."))]
        = None,
        omega2: Annotated[float | None, Field(ge=0, description=(
            "Paired: variance across cases of the difference of true rates (default 0)."))]
        = None,
        alpha: Annotated[float, Field(gt=0, lt=1)] = 0.05,
        power: Annotated[float, Field(gt=0, lt=1)] = 0.8,
        level: Annotated[float, Field(gt=0, lt=1, description="Credible level for width.")]
        = 0.95,
        method: Literal["unpooled", "pooled", "cohen_h"] = "unpooled",
        effect: Annotated[float | None, Field(gt=-1, lt=1, description=(
            "With `experiment`: the true effect on its goal's metric (treatment - control) "
            "to plan the goal for; default twice the goal's min_effect."))] = None,
    ) -> dict[str, Any]:
        """Power analysis, as `ix plan` computes it: how many cases (or trials) for a target
        interval width (`width`) or to detect a difference between two subjects (`mde`,
        `paired` when they share cases), or, with `experiment` alone, what its current design
        can detect and, if it has a goal, how many cases settle the goal (sized for its own
        rule and checked by simulating it: `p_settle`). Every answer lists its assumptions;
        say them when you report the number."""
        path = str(self.experiment_dir(experiment)) if experiment is not None else None
        return jsonable(power_plan.plan_power(
            self.lab, path, width=width, mde=mde, paired=paired, p=p, trials=trials,
            cases=cases, sigma2_a=sigma2_a, sigma2_b=sigma2_b, omega2=omega2, alpha=alpha,
            power=power, level=level, method=method, effect=effect))

    def get_summary(
        self,
        run: Annotated[RunRef | None, Field(description=(
            "The run (id, unique prefix, or tag); default: the latest completed run of "
            "`experiment`, else the lab's latest run."))] = None,
        experiment: Annotated[ExperimentName | None, Field(description=(
            "With no `run`: whose latest completed run (else its latest with a summary, said "
            "in `note`)."))] = None,
        report: Annotated[bool, Field(description=(
            "Also return the full report: leaderboard with rank probabilities, per-case "
            "breakdown, failure analysis, cost, annotations."))] = False,
    ) -> dict[str, Any]:
        """The summary of a run: per subject each case's activation rate (`score`) with its
        credible interval, precision / recall / F1 with intervals, errors, the comparisons of
        each variant with the control (`pass_rate` there is the correct rate), the goal's
        verdict, and `run_status` (completed, cancelled, failed)."""
        notes: list[str] = []
        if run is not None:
            info = self._run(run)
        else:  # as `ix report EXPERIMENT` and `ix report` at the lab's root choose
            try:
                folder = (reports.latest_of(self.experiment_dir(experiment), completed=True,
                                            note=notes.append) if experiment is not None
                          else reports.report_run(self.lab, None, cwd=self.lab,
                                                  note=notes.append))
            except ConfigError as exc:
                raise ConfigError(exc.message, field="experiment") from None
            info = run_folders.run_info(folder)
        summary = reports.read_summary(info.folder)
        # the summary's own status: spec.yaml is rewritten just after the summary is saved
        status = summary.get("run_status") or info.status
        out: dict[str, Any] = {"run_id": info.run_id, "experiment": info.experiment,
                               "status": status, "folder": info.folder, "summary": summary}
        if notes:
            out["note"] = "; ".join(notes)
        if report:
            out["report"] = reports.report(self.lab, str(info.folder))
        return jsonable(out)

    def compare_runs(
        self,
        runs: Annotated[list[RunRef], Field(min_length=2, description=(
            "Two or more runs of one experiment; each later one is compared with the first."))],
    ) -> dict[str, Any]:
        """Runs side by side, subject by subject: per metric the value before and after, the
        difference with its 95% interval and P(better), the cases that flipped, a verdict
        naming the metrics that credibly moved, and what changed in configuration."""
        folders = [str(self._run(ref, f"runs[{i}]").folder) for i, ref in enumerate(runs)]
        return jsonable(api.compare_runs(self.lab, folders))

    def query_results(
        self,
        experiment: Values = None,
        subject: Values = None,
        case: Annotated[Text | list[Text] | None, Field(
            description="Case id globs (must-*).")] = None,
        tag: Values = None,
        difficulty: Values = None,
        run: Annotated[Text | list[Text] | None, Field(
            description="Run ids or unique prefixes.")] = None,
        since: Annotated[Text | None, Field(description=(
            "An ISO date or datetime (UTC), or a duration back from now: 7d, 12h, 30m."))]
        = None,
        until: Annotated[Text | None, Field(description="As `since`.")] = None,
        passed: Annotated[bool | None, Field(description=(
            "By the reading: true: trials whose sensor passed (the activation sensor's: the "
            "skill was invoked); false: trials that ran and did not pass."))] = None,
        correct: Annotated[bool | None, Field(description=(
            "By the outcome: true: trials whose reading matches the case's expectation "
            "(right); false: those against it (wrong)."))] = None,
        errors: Annotated[bool | None, Field(description=(
            "true: errored trials only; false: without them."))] = None,
        all_attempts: Annotated[bool, Field(description=(
            "Every attempt of retried trials, not only the latest."))] = False,
        all_runs: Annotated[bool, Field(description=(
            "Pool every run. Default (as `ix results`): the latest completed run of each "
            "experiment, unless `run` names runs. Imported copies of trials already in the "
            "lab are never counted twice."))] = False,
        group_by: Annotated[list[Literal["subject", "case", "tag", "difficulty", "run",
                                         "experiment", "expectation", "invoked"]],
                            Field(description=(
            "Aggregate instead of listing: per group n, errors, cases, the activation rate "
            "(share of valid trials in which the skill fired) and the correct rate (share "
            "of majority votes that match the expectation), each with its 95% interval "
            "(cases as clusters), and mean/std/percentiles of score, duration, tokens and "
            "cost. `invoked` groups by the first skill a trial invoked (the one that took "
            "the prompt; null: none)."))]
        = [],  # noqa: B006
        limit: Annotated[int, Field(ge=0, le=MAX_ROWS, description="Most rows returned.")]
        = 100,
        sql: Annotated[Text | None, Field(description=(
            "Instead of the filters: one read-only SQL SELECT (DuckDB) over the views "
            "trials, trials_all and cases."))] = None,
    ) -> dict[str, Any]:
        """The lab's trials as rows (one per trial, latest attempt, oldest first: experiment,
        run_id, subject, probe_id, trial, expectation, passed (the reading), score, correct
        and outcome (right / wrong against the expectation), error, tokens, cost, duration,
        started_at, tags, difficulty), filtered; or aggregated with `group_by`; or any
        read-only SQL with `sql`. Also returns the total, the activation rate of the must
        cases (`activation_rate_must`), of the not cases (`_not`) and pooled
        (`activation_rate`), and the correct rate, with their intervals, and `scope` (which
        runs were read)."""
        warnings: list[str] = []
        filters: dict[str, Any] = {
            "experiment": experiment, "subject": subject, "case": case, "tag": tag,
            "difficulty": difficulty, "run": run, "since": since, "until": until,
            "passed": passed, "correct": correct, "errors": errors}
        if sql is not None:
            given = [k for k, v in filters.items() if v is not None]
            given += [name for name, on in (("group_by", group_by),
                                             ("all_attempts", all_attempts),
                                             ("all_runs", all_runs)) if on]
            if given:
                raise ConfigError("give either `sql` or filters / group_by, not both "
                                  f"(got {', '.join(given)})", field="sql")
            result = api.run_query(self.lab, sql, warnings.append)
            rows = _take(result, limit)
            return jsonable({"columns": result.columns, "rows": rows[:limit],
                             "truncated": len(rows) > limit, "warnings": warnings})
        found = api.query_results(self.lab, **filters, all_attempts=all_attempts,
                                  all_runs=all_runs, limit=None if group_by else limit,
                                  warn=warnings.append)
        scope = found.scope.describe() if found.scope else None
        if group_by:
            groups = found.group_by(*group_by)
            return jsonable({"groups": groups[:limit], "truncated": len(groups) > limit,
                             "scope": scope, "warnings": warnings})
        with found.snapshot():  # the rows and their count from one reading of the index
            rows = found.rows()
            total = found.total()
        # the rates are of every matching trial, not of the `limit` rows returned
        every = api.query_results(self.lab, **filters, all_attempts=all_attempts,
                                  all_runs=all_runs, warn=warnings.append) if total else None
        rates: dict[str, Any] = {"activation_rate": None, "activation_rate_must": None,
                                 "activation_rate_not": None, "correct_rate": None}
        if every:
            rates = {k: r.as_dict() for k, r in rates_of(every.stats()).items()}
        return jsonable({"rows": rows, "total": total, "truncated": total > len(rows),
                         **rates,
                         "scope": scope, "warnings": list(dict.fromkeys(warnings))})


def _take(rows: Iterable[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """At most `limit` + 1 rows (the one past the limit says there were more); the query's
    connection is closed at once, not when the iterator is collected."""
    iterator = iter(rows)
    try:
        return list(islice(iterator, limit + 1))
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:
            close()
