"""`ix`: run experiments on stochastic subjects and read the evidence."""

import os
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ix import api
from ix._version import __version__
from ix.cli import cache as cache_cli
from ix.cli import design as design_cli
from ix.cli import mcp as mcp_cli
from ix.cli import reports as reports_cli
from ix.cli import results as results_cli
from ix.cli import scaffold as scaffold_cli
from ix.cli import schema as schema_cli
from ix.cli import transfer as transfer_cli
from ix.cli import view as view_cli
from ix.cli.options import Lab
from ix.cli.output import err, fail, out, print_json, warn
from ix.cli.progress import RunProgress
from ix.domain.errors import ConfigError

app = typer.Typer(
    name="ix",
    help="Experiments on stochastic subjects (Claude Code skills, agents, LLM APIs, CLIs), "
         "with statistics that are right at small N.\n\n"
         "A lab is a folder of experiments; an experiment is experiment.yaml + cases/*.md. "
         "Every trial is appended to <experiment>/results/trials.jsonl.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

Json = Annotated[bool, typer.Option("--json", help="Print JSON on stdout instead of tables.")]
Experiments = Annotated[list[str] | None, typer.Argument(
    help="Experiment names in the lab, or paths. Default: the experiment the working "
         "directory is in, else every experiment of the lab.", show_default=False)]
Executor = Annotated[str, typer.Option(
    "--executor", help="Where trials run: local (this process, asyncio) or ray (as tasks on a "
                       "Ray cluster; pip install 'ix-lab[ray]'). Recording, resume and Ctrl-C "
                       "work the same.")]
Address = Annotated[str | None, typer.Option(
    "--address", help="With --executor ray: the cluster to join (HOST:PORT of its head, or "
                      "ray://HOST:PORT). Default: start a private local Ray.",
    show_default=False)]
Strict = Annotated[bool, typer.Option(
    "--strict", help="Treat design warnings (too few cases, no control, one trial on a "
                     "stochastic runtime, ...) as errors: exit 2, nothing run.")]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ix {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    pass


@app.command()
def run(
    experiments: Experiments = None,
    lab: Lab = None,
    trials: Annotated[str | None, typer.Option(
        "--trials", "-n", help="Trials per case, or 'auto' (each case runs until its "
                               "majority vote is settled; overrides experiment.yaml, ix.yaml "
                               "and $IX_DEFAULT_TRIALS).", show_default=False)] = None,
    seed: Annotated[int | None, typer.Option(
        "--seed", help="Base seed; trial seeds derive from it (default: the experiment's).",
        show_default=False)] = None,
    runtime: Annotated[str | None, typer.Option(
        "--runtime", help="Run every subject with this runtime kind (mock, random, lexical, "
                          "claude-code, anthropic, openai, command, http, human).",
        show_default=False)] = None,
    subject: Annotated[list[str] | None, typer.Option(
        "--subject", help="Run only this subject (repeatable).", show_default=False)] = None,
    concurrency: Annotated[int | None, typer.Option(
        "--concurrency", "-j", min=1, help="Trials in flight at once.",
        show_default=False)] = None,
    artifacts: Annotated[bool, typer.Option(
        "--artifacts", help="Also write one JSON file per artifact under "
                            "<experiment>/artifacts/<kind>/.")] = False,
    filters: Annotated[list[str] | None, typer.Option(
        "--filter", help="Only cases matching: an id glob (must-*), tag:X, difficulty:hard, "
                         "expectation:must_trigger; repeatable (AND), commas for OR, ! to "
                         "negate.", show_default=False)] = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Print the full plan (trials per subject, estimated tokens and "
                          "cost); run and write nothing.")] = False,
    resume: Annotated[bool, typer.Option(
        "--resume", help="Continue the latest run (or --run ID): run exactly the trials not "
                         "yet recorded, with the options it started with.")] = False,
    retry_failed: Annotated[bool, typer.Option(
        "--retry-failed", help="Re-run the errored trials of the latest run (or --run ID); "
                               "the new attempt supersedes the errored one.")] = False,
    run_id: Annotated[str | None, typer.Option(
        "--run", help="The run --resume / --retry-failed acts on.", show_default=False)] = None,
    max_trials: Annotated[int | None, typer.Option(
        "--max-trials", min=1, help="Stop scheduling after this many trials (resume later).",
        show_default=False)] = None,
    max_cost: Annotated[float | None, typer.Option(
        "--max-cost", min=0, help="Stop scheduling once this many USD were spent.",
        show_default=False)] = None,
    time_limit: Annotated[float | None, typer.Option(
        "--time-limit", min=0, help="Stop scheduling after this many seconds.",
        show_default=False)] = None,
    max_errors: Annotated[int, typer.Option(
        "--max-consecutive-errors", min=0, help="Circuit breaker: stop a subject after this "
                                                "many errored trials in a row (0: never).")] = 50,
    smoke: Annotated[bool, typer.Option(
        "--smoke", help="One trial of a few cases per subject: a quick check before a full "
                        "run.")] = False,
    cache: Annotated[bool, typer.Option(
        "--cache", help="Record observations in the lab's cache and replay them when the same "
                        "trial runs again (see --cache-mode).")] = False,
    cache_mode: Annotated[str, typer.Option(
        "--cache-mode", help="use: replay hits, record misses; refresh: run and overwrite; "
                             "replay: never call a subject (a miss is an errored trial).")
    ] = "use",
    progress_mode: Annotated[str, typer.Option(
        "--progress", help="auto (a live bar on a terminal), bar, json (one event per line on "
                           "stderr) or none.")] = "auto",
    executor: Executor = "local",
    address: Address = None,
    on_complete: Annotated[str | None, typer.Option(
        "--on-complete", help="Run this command (no shell) when the run ends, with the "
                              "summary's path as its last argument.", show_default=False)] = None,
    strict: Strict = False,
    json_out: Json = False,
) -> None:
    """Run experiments: every case x subject x trial, recorded, aggregated, summarised.

    Exit codes: 0 done (errored trials are reported, not a failure), 1 done but a goal was
    refuted or every trial of a subject errored, 2 bad input or configuration (also when
    every trial of a subject errored for it: a missing key, no skills, a program not found),
    130 cancelled (completed trials are kept).
    """
    overrides = api.Overrides(trials=_trial_count(trials), seed=seed, runtime=runtime,
                              concurrency=concurrency, subjects=tuple(subject or ()),
                              filters=tuple(filters or ()), smoke=smoke)
    if resume and retry_failed:
        raise ConfigError("choose one of --resume and --retry-failed", field="--resume")
    if run_id is not None and not (resume or retry_failed):
        raise ConfigError("--run names the run that --resume or --retry-failed continues",
                          field="--run")
    if dry_run:
        _print_dry_run(api.dry_run(lab, experiments or (), overrides), json_out)
        return
    limits = api.Limits(max_trials=max_trials, max_cost_usd=max_cost, time_limit_s=time_limit,
                        max_consecutive_errors=max_errors or None)
    mode: Literal["resume", "retry_failed"] | None = (
        "resume" if resume else "retry_failed" if retry_failed else None)
    if progress_mode not in ("auto", "bar", "json", "none"):
        raise ConfigError(f"unknown progress mode {progress_mode!r}; allowed: auto, bar, json, "
                          "none", field="--progress")
    with RunProgress(enabled=not json_out, mode=progress_mode) as progress:  # type: ignore[arg-type]
        results = api.run(lab, experiments or (), overrides, artifacts=artifacts,
                          command=["ix", *sys.argv[1:]], on_plan=progress.start,
                          on_trial=progress.trial, continue_mode=mode, run_id=run_id,
                          limits=limits, warn=warn,
                          cache=cache_mode if cache or cache_mode != "use" else None,
                          executor=executor, address=address, strict=strict,
                          on_design=design_cli.printer(strict))
    if on_complete:
        _notify(on_complete, results)
    if json_out:
        if len(results) == 1:  # the summary file's own text: no second encoding
            sys.stdout.write(results[0].summary_path.read_text(encoding="utf-8"))
        else:
            print_json([r.summary for r in results])
    else:
        from ix.report.console import summary_renderable

        for r in results:
            out.print(summary_renderable(r.summary))
            out.print(Text(f"trials: {r.plan.loaded.results_dir / 'trials.jsonl'}\n"
                           f"summary: {r.summary_path}", style="dim"), soft_wrap=True)
    for r in results:
        for name, why in (r.summary.get("circuit_breaker") or {}).items():
            err.print(f"[red]circuit breaker:[/] {name} {why}")
    failed = [r for r in results if r.status == "failed"]
    for r in failed:  # the answer where the eye lands: last, on stderr, even with --json
        err.print(f"[bold red]run {r.run_id} of {r.summary['experiment_name']} failed:[/] "
                  f"{escape(r.summary.get('reason') or 'see its summary')}", soft_wrap=True)
    if any(r.status == "cancelled" for r in results):
        why = next((r.summary.get("stop_reason") for r in results if r.status == "cancelled"),
                   None)
        err.print(f"[yellow]cancelled[/]{f' ({escape(why)})' if why else ''}: completed "
                  "trials are kept and the summary covers them; `ix run --resume` finishes "
                  "the run", soft_wrap=True)
        if not failed:
            raise typer.Exit(130)
    if failed:
        raise typer.Exit(api.failure_exit_code([r.summary for r in failed]))
    refuted = [r for r in results if (r.summary.get("goal") or {}).get("verdict") == "refuted"]
    for r in refuted:
        err.print(f"[bold red]goal refuted[/] in {r.summary['experiment_name']}: "
                  f"{r.summary['goal']['hypothesis']}")
    if refuted:
        raise typer.Exit(1)


def _print_dry_run(plans: list[dict[str, Any]], json_out: bool) -> None:
    if json_out:
        print_json(plans)
        return
    for p in plans:
        out.print(f"[bold]{p['experiment']}[/]: {p['cases']} cases × {p['trials_per_case']} "
                  f"trials = {p['total_trials']} trials, concurrency {p['concurrency']}"
                  + (f", filters {' AND '.join(p['filters'])}" if p["filters"] else ""))
        for sub in p["subjects"]:
            out.print(f"  {sub['name']}: {sub['trials']} trials on {sub['runtime']}"
                      + (f" ({sub['model']})" if sub["model"] else "")
                      + (f", ~{sub['estimated_input_tokens']:,} input tokens"
                         if sub["estimated_input_tokens"] is not None else "")
                      + (f", ~${sub['estimated_cost_usd']:.2f}"
                         if sub["estimated_cost_usd"] else ""))
    out.print("[dim]dry run: nothing executed, nothing written[/]")


def _notify(command: str, results: list[api.RunResult]) -> None:
    """`--on-complete`: the command with each summary's path; its failure is only reported."""
    import shlex
    import subprocess

    for r in results:
        argv = [*shlex.split(command), str(r.summary_path)]
        try:
            done = subprocess.run(argv, check=False, timeout=300,
                                  env={**os.environ, "IX_SUMMARY": str(r.summary_path),
                                       "IX_RUN_STATUS": r.status})
        except (OSError, subprocess.SubprocessError) as exc:
            warn(f"--on-complete {argv[0]!r} failed: {exc}")
            continue
        if done.returncode:
            warn(f"--on-complete {argv[0]!r} exited with {done.returncode}")


def _trial_count(raw: str | None) -> int | Literal["auto"] | None:
    if raw is None or raw == "auto":
        return raw  # type: ignore[return-value]
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(f"must be a whole number >= 1 or 'auto', got {raw!r}",
                          field="--trials")
    return value


@app.command()
def validate(
    experiments: Experiments = None,
    lab: Lab = None,
    trials: Annotated[str | None, typer.Option("--trials", "-n", help="As for ix run.",
                                               show_default=False)] = None,
    runtime: Annotated[str | None, typer.Option("--runtime", show_default=False)] = None,
    strict: Strict = False,
    json_out: Json = False,
) -> None:
    """Load and check experiments without running anything: every problem of the lab at
    once, one `file: field: message` line each (exit 2 on any), and each subject's runtime
    and whether its credentials are set.

    Design warnings (docs/experiments.md, "Design checks") are printed on stderr; with
    --strict they are errors.
    """
    lab_path, paths = api.resolve(lab, experiments or ())
    overrides = api.Overrides(trials=_trial_count(trials), runtime=runtime)
    reports: list[dict[str, Any]] = []
    for path in paths:
        plan, problems = api.check(path, lab_path, overrides)
        if plan is None:  # every problem of the experiment, each on its own line
            errors = [e.render() for e in problems]
            reports.append({"experiment": path.name, "path": str(path), "ok": False,
                            "error": errors[0], "errors": errors})
            continue
        exp = plan.loaded.experiment
        creds = {c["subject"]: c for c in api.subject_credentials(plan)}
        reports.append({
            "experiment": exp.name, "path": str(path), "ok": True,
            "cases": len(plan.cases), "skipped_acceptable": len(plan.skipped),
            "subjects": [{"name": s.subject.name, "runtime": s.runtime_spec["kind"],
                          "runtime_source": _runtime_source(plan, s.subject, runtime),
                          "skills": [k["name"] for k in s.subject.config["skills"]],
                          "target_skill": s.target_skill,
                          "credentials_env": creds[s.subject.name]["credentials_env"],
                          "credentials_present": creds[s.subject.name]["credentials_present"]}
                         for s in plan.subjects],
            "trials_per_case": plan.trials, "total_trials": plan.total,
            "concurrency": plan.concurrency,
            **design_cli.report(plan, strict),
        })
    if json_out:
        print_json(reports)
    else:
        _print_validated(reports, strict)
    if not all(r["ok"] for r in reports):
        raise typer.Exit(2)


def _print_validated(reports: list[dict[str, Any]], strict: bool) -> None:
    """✓ and each subject's runtime on stdout; every problem one line on stderr."""
    said: set[str] = set()  # a problem of ix.yaml is every experiment's: say it once
    for r in reports:
        if not r["ok"]:
            for line in r.get("errors") or [r["error"]]:
                if line not in said:
                    said.add(line)
                    fail(line)
            continue
        out.print(f"[green]✓[/] {escape(r['experiment'])}: {r['cases']} cases "
                  f"(+{r['skipped_acceptable']} acceptable, not run) × "
                  f"{r['trials_per_case']} trials × {len(r['subjects'])} subject(s) = "
                  f"{r['total_trials']} trials", soft_wrap=True)
        for s in r["subjects"]:
            env = s["credentials_env"]
            creds = ("no credentials needed" if not env else
                     f"{env[0]} is set" if s["credentials_present"] else
                     f"[red]{env[0]} is not set[/]")
            out.print(f"  {escape(s['name'])}: runtime {s['runtime']} "
                      f"({escape(s['runtime_source'])}), {creds}", soft_wrap=True)
            if env and not s["credentials_present"]:
                warn(f"{r['path']}/experiment.yaml: runtime: subject {s['name']!r} runs on "
                     f"{s['runtime']} ({s['runtime_source']}) and {env[0]} is not set, so "
                     "every trial would fail: set it, or choose `runtime: lexical` for an "
                     "offline baseline")
    for r in reports:
        design_cli.show(r, strict)


def _runtime_source(plan: Any, subject: Any, flag: str | None) -> str:
    """Where a subject's runtime kind was chosen: `--runtime`, a field of experiment.yaml,
    ix.yaml, the user config, $IX_DEFAULT_RUNTIME, a registry profile, or the built-in
    default."""
    if flag is not None:
        return "--runtime"
    file, field = (subject.config.get("runtime_origins") or {}).get("kind") or ["", ""]
    if file == str(plan.loaded.config_file):
        return f"experiment.yaml {field}"
    if file.startswith("built-in profile"):
        return f"built-in profile {field}"
    if file.startswith(("built-in", "$")) or not file:
        return file or "built-in default"
    try:
        shown = str(Path(file).relative_to(plan.loaded.lab))
    except ValueError:
        shown = file
    return f"{shown} {field}" if field and field != "runtime" else shown


@app.command("ls")
def list_(lab: Lab = None, json_out: Json = False) -> None:
    """List the lab's experiments with their cases and last run."""
    lab_path, infos = api.list_experiments(lab)
    if json_out:
        print_json({"lab": str(lab_path), "experiments": [
            {"name": i.name, "path": str(i.path), "cases": i.cases, "subjects": i.subjects,
             "last_run": i.last_run, "status": i.status, "f1": i.f1, "error": i.error}
            for i in infos]})
        return
    table = Table(title=f"lab {lab_path}", title_justify="left", show_edge=False)
    for col in ("experiment", "cases (must/not/edge)", "subjects", "last run", "status", "F1"):
        # the subjects list wraps at its commas; every other cell stays whole (ix.report.layout)
        table.add_column(col, overflow="fold" if col == "subjects" else "ellipsis")
    for i in infos:
        if i.error:
            table.add_row(i.path.name, Text(i.error, style="red"), "", i.last_run or "-",
                          i.status or "-", "")
            continue
        c = i.cases
        table.add_row(i.name, f"{c['must_trigger']}/{c['should_not_trigger']}/{c['acceptable']}",
                      ", ".join(i.subjects), i.last_run or "never", i.status or "-",
                      f"{i.f1:.3f}" if i.f1 is not None else "-")
    out.print(table)


@app.command()
def batch(
    battery: Annotated[Path, typer.Argument(
        help="The battery file: experiments (names or globs) × subjects × seeds.",
        show_default=False)],
    lab: Lab = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Validate and list the runs; run and write nothing.")] = False,
    executor: Executor = "local",
    address: Address = None,
    json_out: Json = False,
) -> None:
    """Run a battery: each (experiment, seed) is one run in that experiment's results; the
    battery folder gets a snapshot and a combined report."""
    from ix.api.battery import plan_battery, run_battery

    if not battery.is_file():
        raise ConfigError("no such battery file", file=battery)
    if dry_run:
        spec, _, plans = plan_battery(battery, lab)
        rows: list[dict[str, Any]] = [
            {"experiment": p.loaded.experiment.name, "seed": p.seed,
             "subjects": [sp.subject.name for sp in p.subjects], "trials": p.total}
            for p in plans]
        if json_out:
            print_json({"battery": spec.name, "runs": rows})
        else:
            for row in rows:
                out.print(f"{row['experiment']} seed {row['seed']}: {row['trials']} trials, "
                          f"subjects {', '.join(row['subjects'])}")
            out.print(f"[dim]{len(rows)} runs; dry run: nothing executed[/]")
        return
    with RunProgress(enabled=not json_out) as progress:
        result = run_battery(battery, lab, command=["ix", *sys.argv[1:]],
                             on_plan=progress.start, on_trial=progress.trial,
                             executor=executor, address=address)
    if json_out:
        print_json({"folder": str(result.folder), **result.report})
    else:
        out.print((result.folder / "report.md").read_text(encoding="utf-8"), markup=False,
                  highlight=False, soft_wrap=True)  # names in it are text, not rich markup
        out.print(f"[dim]battery folder: {result.folder}[/]", soft_wrap=True)
    from ix.api.battery import outcome_lines

    for line in outcome_lines(result.report):  # why it exits non-zero, even with --json
        err.print(line, markup=False, highlight=False, soft_wrap=True)
    if any(r.status == "cancelled" for r in result.runs):
        raise typer.Exit(130)
    failed = [r.summary for r in result.runs if r.status == "failed"]
    if failed:
        raise typer.Exit(api.failure_exit_code(failed))
    if any((r.summary.get("goal") or {}).get("verdict") == "refuted" for r in result.runs):
        raise typer.Exit(1)


@app.command()
def compare(
    runs: Annotated[list[str], typer.Argument(
        help="Run ids (or unique prefixes, or run folders); the first is the baseline.",
        show_default=False)],
    lab: Lab = None,
    json_out: Json = False,
) -> None:
    """Compare runs of an experiment: metric deltas with intervals, flipped cases, a verdict."""
    result = api.compare_runs(lab, runs)
    if json_out:
        print_json(result)
        return
    from ix.report.console import run_comparison_renderable

    out.print(run_comparison_renderable(result))


@app.command()
def plan(
    experiment: Annotated[str | None, typer.Argument(
        help="Take planning values (rates, variances, trials) from this experiment's latest "
             "run; before its first run, from its design (its cases and trials, rate 0.5).",
        show_default=False)] = None,
    lab: Lab = None,
    width: Annotated[float | None, typer.Option(
        "--width", help="Target full width of a rate's credible interval: how many units "
                        "(cases, or trials of one case) are needed.", show_default=False)] = None,
    mde: Annotated[float | None, typer.Option(
        "--mde", help="Minimum difference between two subjects to detect.",
        show_default=False)] = None,
    paired: Annotated[bool, typer.Option(
        "--paired", help="Both subjects run the same cases (Miller's paired design).")] = False,
    p: Annotated[float | None, typer.Option(
        "--p", "--p1", help="Planning rate (of the control); default 0.5, the worst case.",
        show_default=False)] = None,
    trials: Annotated[int | None, typer.Option(
        "--trials", "-n", help="Trials per case (paired design).", show_default=False)] = None,
    cases: Annotated[int | None, typer.Option(
        "--cases", help="Paired: report the detectable difference for this many cases.",
        show_default=False)] = None,
    sigma2_a: Annotated[float | None, typer.Option(
        "--sigma2-a", help="Paired: within-case trial variance of the control "
                           "(default p(1-p)).", show_default=False)] = None,
    sigma2_b: Annotated[float | None, typer.Option(
        "--sigma2-b", help="Paired: within-case trial variance of the variant "
                           "(default: the control's).", show_default=False)] = None,
    omega2: Annotated[float | None, typer.Option(
        "--omega2", help="Paired: variance across cases of the difference of true rates "
                         "(default 0: optimistic).", show_default=False)] = None,
    alpha: Annotated[float, typer.Option("--alpha", help="Two-sided significance.")] = 0.05,
    power: Annotated[float, typer.Option("--power", help="Power, 1 - beta.")] = 0.8,
    level: Annotated[float, typer.Option("--level", help="Credible level (--width).")] = 0.95,
    method: Annotated[str, typer.Option(
        "--method", help="Independent design: unpooled, pooled or cohen_h.")] = "unpooled",
    effect: Annotated[float | None, typer.Option(
        "--effect", help="EXPERIMENT's goal: the true effect (treatment - control on the "
                         "goal's metric) to plan for; default twice the goal's min_effect.",
        show_default=False)] = None,
    json_out: Json = False,
) -> None:
    """Power analysis: how many cases and trials for a target interval width or difference,
    or, for an experiment with a goal, how many cases settle the goal.

    Examples: `ix plan --width 0.2`; `ix plan --mde 0.1 --p1 0.7`;
    `ix plan --mde 0.1 --paired --trials 5`; `ix plan skill-activation --mde 0.1 --paired`;
    `ix plan skill-activation --effect 0.2` (the goal, simulated with ix's own rule).
    """
    from ix.api import planning

    try:
        result = planning.plan_power(lab, experiment, width=width, mde=mde, paired=paired, p=p,
                                     trials=trials, cases=cases, sigma2_a=sigma2_a,
                                     sigma2_b=sigma2_b, omega2=omega2, alpha=alpha,
                                     power=power, level=level, method=method, effect=effect)
    except ValueError as exc:  # a combination no check above foresaw: still one line
        raise ConfigError(str(exc), field="ix plan") from None
    answers = result["answers"]
    if json_out:
        print_json(result)
        return
    for a in answers:
        if a["question"] == "goal":
            if "note" in a:
                out.print(f"goal: {a['note']}")
                continue
            rule = f"{a['metric']} {a['direction']} beyond {a['min_effect']:g}"
            if a["cases"] is None:
                out.print(f"no run up to [bold]{a['simulated_cases']}[/] {a['unit']} settles "
                          f"the goal ({rule}) with probability {a['target']:g}: "
                          f"{a['p_settle']:.2f} at that size")
            else:
                out.print(f"[bold]{a['cases']}[/] {a['unit']} ({a['trials_per_case']} "
                          f"trial(s) each) settle the goal ({rule}) with probability "
                          f"[bold]{a['p_settle']:.2f}[/] (supported {a['p_supported']:.2f}, "
                          f"refuted {a['p_refuted']:.2f}; {a['simulations']} simulated runs "
                          f"judged by ix's own rule; the t approximation said "
                          f"{a['t_start'] if a['t_start'] is not None else 'n/a'})")
        elif a["question"] == "width":
            lo, hi = a["achieved_interval"]
            out.print(f"[bold]{a['n']}[/] units give an interval of width ≤ {width:g} "
                      f"(at the planning rate: [{lo:.3f}, {hi:.3f}])")
        elif a["question"] == "independent":
            out.print(f"[bold]{a['n_per_subject']}[/] cases per subject to detect a "
                      f"difference of {mde:g}")
        else:
            if "n_cases" in a:
                out.print(f"[bold]{a['n_cases']}[/] shared cases ({a['trials_per_case']} "
                          f"trial(s) each) to detect a difference of {a['mde']:g} in the "
                          f"{escape(a['metric'])}")
            if "mde_for_cases" in a:
                m = a["mde_for_cases"]
                out.print(f"with {m['cases']} shared cases ({a['trials_per_case']} trial(s) "
                          f"each) the smallest detectable difference in the "
                          f"{escape(a['metric'])} is [bold]{m['mde']:.3f}[/]")
        for assumption in a["assumptions"]:
            out.print(f"  [dim]assuming {assumption}[/]")
    source = result.get("from_run")
    if source is not None:
        out.print(f"[dim]planning values from {source['summary']}: p={source['p']:.3f}, "
                  f"sigma2_a={source['sigma2_a']:.4f}, sigma2_b={source['sigma2_b']:.4f}, "
                  f"omega2={source['omega2']:.4f}, {source['cases']} cases × "
                  f"{source['trials']} trials[/]")
    design = result.get("from_design")
    if design is not None:
        out.print(f"[dim]planning values from the design of {design['experiment']}: "
                  f"{design['cases']} cases × {design['trials']} trials[/]")
    for note in (source or design or {}).get("notes", []):
        out.print(f"[dim]  note: {note}[/]")


subjects_app = typer.Typer(
    name="subjects",
    help="The subject registry: named subjects in $XDG_CONFIG_HOME/ix/subjects.yaml and the "
         "built-in profiles, usable by name under `subjects:` in experiment.yaml.",
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(subjects_app, name="subjects")


def _source(subject: Any) -> str:
    return "built-in" if subject.builtin else str(subject.source)


@subjects_app.command("list")
def subjects_list(lab: Lab = None, json_out: Json = False) -> None:
    """List the registry: built-in profiles and your subjects (yours override built-ins)."""
    subjects = api.list_subjects()
    if json_out:
        print_json({"file": str(api.subjects_file()),
                    "subjects": [s.as_dict() for s in subjects]})
        return
    table = Table(title=f"subjects (yours: {api.subjects_file()})", title_justify="left",
                  show_edge=False)
    for col in ("name", "runtime", "model", "source"):
        table.add_column(col, no_wrap=True)
    table.add_column("description", overflow="fold", min_width=20)
    for s in subjects:
        options = {k: v for k, v in s.spec.runtime.items() if k != "kind"}
        runtime = s.kind + (" " + ", ".join(f"{k}={v}" for k, v in options.items())
                            if options else "")
        table.add_row(s.name, runtime, s.spec.model or "-", _source(s), s.spec.description)
    out.print(table)


@subjects_app.command("add")
def subjects_add(
    name: Annotated[str, typer.Argument(help="The subject's name (letters, digits, . _ -).",
                                        show_default=False)],
    runtime: Annotated[str, typer.Option(
        "--runtime", help="Runtime kind: anthropic, openai, claude-code, mock, ...",
        show_default=False)],
    model: Annotated[str | None, typer.Option("--model", help="The model (fills the "
                                              "runtime's model option).",
                                              show_default=False)] = None,
    description: Annotated[str | None, typer.Option("--description", show_default=False)] = None,
    option: Annotated[list[str] | None, typer.Option(
        "--option", help="A runtime option, key=value (the value is read as YAML); "
                         "repeatable.", show_default=False)] = None,
    api_key_env: Annotated[str | None, typer.Option(
        "--api-key-env", help="The NAME of the environment variable holding the API key "
                              "(never the key itself).", show_default=False)] = None,
    skill: Annotated[list[str] | None, typer.Option(
        "--skill", help="A skill the subject is given (name under the lab's skills/, or an "
                        "absolute path); repeatable.", show_default=False)] = None,
    lab: Lab = None,
    json_out: Json = False,
) -> None:
    """Add or replace a subject in $XDG_CONFIG_HOME/ix/subjects.yaml. Secrets are refused."""
    replaced = any(s.name == name and not s.builtin for s in api.list_subjects())
    added = api.add_subject(name, runtime, model=model, description=description,
                            options=option or (), api_key_env=api_key_env, skills=skill or ())
    if json_out:
        print_json({**added.as_dict(), "replaced": replaced})
        return
    verb = "replaced" if replaced else "added"
    out.print(f"{verb} subject [bold]{name}[/] ({added.kind}"
              f"{', model ' + added.spec.model if added.spec.model else ''}) in {added.source}",
              soft_wrap=True)


@subjects_app.command("test")
def subjects_test(
    name: Annotated[str, typer.Argument(help="A subject of `ix subjects list`.",
                                        show_default=False)],
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds to wait for the "
                                           "answer.")] = 60.0,
    lab: Lab = None,
    json_out: Json = False,
) -> None:
    """Send the subject one tiny case ("Reply with OK.") and show its answer and latency.

    Exit codes: 0 it answered, 1 the request failed, 2 bad input (an unknown subject, invalid
    options).
    """
    result = api.run_subject_test(name, timeout_s=timeout, lab=lab)
    if json_out:
        print_json(result.as_dict())
    else:
        model = f", model {result.model}" if result.model else ""
        if result.ok:
            out.print(f"[green]✓[/] {name} ({result.runtime}{model}): answered in "
                      f"{result.latency_ms:.0f} ms", soft_wrap=True)
            out.print(Text(f"  answer: {result.answer!r}"), soft_wrap=True)
            for call in result.tool_calls:
                out.print(Text(f"  tool call: {call['name']} {call.get('input', {})}"),
                          soft_wrap=True)
        else:
            error = result.error or {}
            out.print(Text(f"✗ {name} ({result.runtime}{model}): {error.get('kind')}: "
                           f"{error.get('message')} (after {result.latency_ms:.0f} ms)"),
                      soft_wrap=True)
        for note in result.notes:
            err.print(Text(f"note: {note}"), soft_wrap=True)
    if not result.ok:
        raise typer.Exit(1)


app.add_typer(cache_cli.app, name="cache")
reports_cli.register(app)
results_cli.register(app)
scaffold_cli.register(app)
schema_cli.register(app)
transfer_cli.register(app)
view_cli.register(app)
mcp_cli.register(app)


def main() -> None:
    """Entry point: user errors are one line on stderr and exit 2, never a traceback; so are
    storage faults (a full disk, a read-only folder) that no command caught itself."""
    from ix.lab.storage_faults import storage_error

    try:
        app()
    except ConfigError as exc:
        fail(exc.render())
        sys.exit(2)
    except KeyboardInterrupt:
        err.print("[yellow]cancelled[/]")
        sys.exit(130)
    except Exception as exc:
        fault = storage_error(exc)
        if fault is None:
            raise
        fail(fault.render())
        sys.exit(2)


__all__ = ["Path", "app", "main", "warn"]
