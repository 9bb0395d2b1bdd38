"""`ix run`: every case x subject x trial, recorded, aggregated, summarised."""

import os
import sys
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.markup import escape

from ix import api
from ix.api import sync as api_sync
from ix.api.integrations import notify
from ix.cli.options import (
    Address,
    CacheModeOption,
    Executor,
    Experiments,
    Json,
    Lab,
    Notify,
    NotifyEnv,
    OnComplete,
    ProgressOption,
    Strict,
    recorded_command,
    trial_count,
)
from ix.cli.options import progress_mode as progress_mode_of
from ix.cli.output import diagnostic, err, out, print_json, warn
from ix.cli.progress import RunProgress
from ix.domain.errors import ConfigError
from ix.report.console import run_screen, summary_renderable, verdicts_text
from ix.report.gate_text import gate_lines
from ix.report.load_test import missed_objectives
from ix.report.screen_text import counted

if TYPE_CHECKING:
    from ix.api.schemas import DryRunPlan


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
    cache_mode: CacheModeOption = "use",
    progress_mode: ProgressOption = "auto",
    executor: Executor = "local",
    address: Address = None,
    on_complete: OnComplete = None,
    notify_url: Notify = None,
    notify_env: NotifyEnv = None,
    sync_url: Annotated[str | None, typer.Option(
        "--sync", metavar="URL", help="Then push the run to object storage (s3://, gs://, "
                                      "az://, file://), as `ix sync push` does; a failed "
                                      "push keeps the run and exits 2.",
        show_default=False)] = None,
    strict: Strict = False,
    include_drafts: Annotated[bool, typer.Option(
        "--include-drafts", help="Run the cases a `generate` probe made that are not "
                                 "reviewed yet (`ix cases review`), as they are.")] = False,
    until_settled: Annotated[bool, typer.Option(
        "--until-settled", help="Run the cases in rounds and stop once the goal is settled, "
                                "as `stop: goal` does (docs/cost.md).")] = False,
    gate: Annotated[list[str] | None, typer.Option(
        "--gate", metavar="GATE", help="A per-case gate besides the experiment's `gate:`: "
        "case:<recall|specificity|correct>.<lower|upper|value><op><threshold>[,holm], e.g. "
        "case:recall.lower>=0.8 (every must case's interval at or above 0.8); repeatable. "
        "A case below it exits 1 naming it.", show_default=False)] = None,
    detail: Annotated[bool, typer.Option(
        "--detail", help="Print every subject's case table, metrics and diagnostics and every "
                         "comparison table (what `ix report RUN` shows), not only the first "
                         "screen.")] = False,
    json_out: Json = False,
) -> None:
    """Run experiments: every case x subject x trial, recorded, aggregated, summarised.

    Exit codes: 0 done (errored trials are reported, not a failure), 1 done but a goal was
    refuted, a per-case gate or a `load:` SLA was missed or every trial of a subject
    errored, 2 bad input or configuration (also when every trial of a subject errored for
    it: a missing key, no skills, a program not found), 130 cancelled (completed trials are
    kept).
    """
    overrides = api.Overrides(trials=trial_count(trials), seed=seed, runtime=runtime,
                              concurrency=concurrency, subjects=tuple(subject or ()),
                              filters=tuple(filters or ()), smoke=smoke,
                              gates=tuple(gate or ()), include_drafts=include_drafts,
                              until_settled=until_settled)
    if resume and retry_failed:
        raise ConfigError("choose one of --resume and --retry-failed", field="--resume")
    if run_id is not None and not (resume or retry_failed):
        raise ConfigError("--run names the run that --resume or --retry-failed continues",
                          field="--run")
    if dry_run:
        _print_dry_run(api.dry_run(lab, experiments or (), overrides), json_out)
        return
    hook = notify.webhook(notify_url, notify_env)  # checked before anything runs
    notify.check_command(on_complete)
    if sync_url:
        api_sync.check_sync_url(sync_url)
    limits = api.Limits(max_trials=max_trials, max_cost_usd=max_cost, time_limit_s=time_limit,
                        max_consecutive_errors=max_errors or None)
    mode: Literal["resume", "retry_failed"] | None = (
        "resume" if resume else "retry_failed" if retry_failed else None)
    bars = progress_mode_of(progress_mode)
    options = api.RunOptions(artifacts=artifacts, command=recorded_command(sys.argv),
                             continue_mode=mode, run_id=run_id, limits=limits,
                             cache=cache_mode if cache or cache_mode != "use" else None,
                             executor=executor, address=address, strict=strict)
    with RunProgress(enabled=not json_out, mode=bars,
                     strict=strict) as progress:
        results = api.run(lab, experiments or (), overrides, options=options,
                          observer=progress)
    if on_complete:
        notify.on_runs_complete(on_complete, results, warn=warn)
    if hook is not None:
        notify.notify_runs(hook, results, warn=warn)
    synced = not sync_url or api_sync.push_after_runs(
        sync_url, [r.run_dir for r in results], warn=warn,
        note=lambda m: err.print(m, style="dim", markup=False, soft_wrap=True))
    if json_out:
        if len(results) == 1:  # the summary file's own text: no second encoding
            sys.stdout.write(results[0].summary_path.read_text(encoding="utf-8"))
        else:
            print_json([r.summary for r in results])
    else:
        for i, r in enumerate(results):
            log = r.trials_path
            files = ((f"results: {log.parent}{os.sep} ({log.name}, "
                      f"{r.summary_path.name})",) if r.summary_path.parent == log.parent
                     else (f"trials: {log}", f"summary: {r.summary_path}"))
            if i:
                out.print()
            out.print(summary_renderable(r.summary, files) if detail else
                      run_screen(r.summary, files, r.summary.get("outcomes")))
        if len(results) > 1:  # the answers together, last, where the eye lands
            out.print()
            out.print(verdicts_text([r.summary for r in results]))
    for r in results:
        for name, why in (r.summary.get("circuit_breaker") or {}).items():
            diagnostic("circuit breaker:", f"{name} {why}", "red")
    failed = [r for r in results if r.status == "failed"]
    for r in failed:  # the answer where the eye lands: last, on stderr, even with --json
        diagnostic(f"run {r.run_id} of {r.summary['experiment_name']} failed:",
                   r.summary.get("reason") or "see its summary", "bold red")
    if any(r.status == "cancelled" for r in results):
        stop = next((r.summary.get("stop_reason") for r in results if r.status == "cancelled"),
                    None)
        diagnostic("cancelled" if stop else "cancelled:",
                   f"{f'({stop}): ' if stop else ''}completed trials are kept and the summary "
                   "covers them; `ix run --resume` finishes the run", "yellow")
        if not failed:
            raise typer.Exit(130)
    if failed:
        raise typer.Exit(api.failure_exit_code([r.summary for r in failed]))
    refuted = [(r, goal) for r in results
               if (goal := r.summary.get("goal")) and goal["verdict"] == "refuted"]
    for r, goal in refuted:
        diagnostic("goal refuted", f"in {r.summary['experiment_name']}: {goal['hypothesis']}",
                   "bold red")
    missed = [(r, why) for r in results for why in missed_objectives(r.summary)]
    for r, why in missed:  # `load:`: a latency objective missed is a threshold failed
        diagnostic("SLA missed", f"in {r.summary['experiment_name']}: {why}", "bold red")
    below = [(r, line) for r in results for line in gate_lines(r.summary.get("gates") or [])]
    for r, line in below:  # a per-case gate: the cases below it, named
        diagnostic("gate failed", f"in {r.summary['experiment_name']}: {line}", "bold red")
    if refuted or missed or below:
        raise typer.Exit(1)
    if not synced:
        raise typer.Exit(2)


def _usd(x: float | None) -> str:
    """A cost as dollars, with the digits a small one needs (never `$0.00` for $0.004)."""
    if x is None:
        return "n/a"
    return f"${x:.2f}" if x >= 0.995 else f"${x:.4f}" if x >= 0.0001 else f"${x:.2g}"


def _arithmetic(p: "DryRunPlan") -> str:
    """The plan's total with every factor: `12 cases × 10 subjects × 9 trials = 1080 trials`
    (`up to` with `trials: auto`); subjects of different trial counts, or a `load:` run's
    requests, as the sum of each subject's trials."""
    subjects, total = p["subjects"], p["total_trials"]
    upto = "up to " if p["trials_per_case"].startswith("auto") else ""
    per_case = int(p["trials_per_case"].rsplit(" ", 1)[-1])
    cases, who = counted(p["cases"], "case"), counted(len(subjects), "subject")
    counts = {s["trials"] for s in subjects}
    if len(counts) == 1 and p["cases"] * len(subjects) * per_case == total:
        return (f"{cases} × {who} × {upto}{counted(per_case, 'trial')} = {upto}"
                f"{counted(total, 'trial')}")
    if len(counts) == 1:  # `load:`: each subject's trials are its requests
        return f"{who} × {counted(counts.pop(), 'trial')} = {total} trials ({cases})"
    each = " + ".join(str(s["trials"]) for s in subjects)
    return f"{each} = {upto}{total} trials ({cases}, {who})"


def _print_dry_run(plans: "list[DryRunPlan]", json_out: bool) -> None:
    if json_out:
        print_json(plans)
        return
    for p in plans:
        out.print(f"[bold]{escape(p['experiment'])}[/]: {_arithmetic(p)}", markup=True)
        out.print(f"  concurrency {p['concurrency']}"
                  + (f", filters {escape(' AND '.join(p['filters']))}" if p["filters"] else ""),
                  markup=False)
        if p.get("grid"):
            out.print(f"  {p['grid']}")
        for sub in p["subjects"]:
            out.print(f"  {sub['name']}: {sub['trials']} trials on {sub['runtime']}"
                      + (f" ({sub['model']})" if sub["model"] else "")
                      + (f", ~{sub['estimated_input_tokens']:,} input tokens"
                         if sub["estimated_input_tokens"] is not None else "")
                      + (f", ~{_usd(sub['estimated_cost_usd'])}"
                         if sub["estimated_cost_usd"] else "")
                      + (f" at the batch rate (standard ~{_usd(sub['standard_cost_usd'])})"
                         if sub.get("batch") and sub.get("standard_cost_usd") else
                         ", in batches" if sub.get("batch") else ""))
    out.print("[dim]dry run: nothing executed, nothing written[/]", markup=True)


def register(app: typer.Typer) -> None:
    """Add the command to the `ix` application."""
    app.command("run")(run)
