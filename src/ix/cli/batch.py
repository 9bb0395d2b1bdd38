"""`ix batch`: a battery of runs (experiments x subjects x seeds) and its combined report."""

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ix import api
from ix.api import sync as api_sync
from ix.api.battery import outcome_lines, plan_battery, resume_battery, run_battery
from ix.api.integrations import notify
from ix.cli.options import (
    Address,
    Executor,
    Json,
    Lab,
    Notify,
    NotifyEnv,
    OnComplete,
    recorded_command,
    trial_count,
)
from ix.cli.output import err, out, print_json, warn
from ix.cli.progress import RunProgress
from ix.domain.errors import ConfigError


def batch(
    battery: Annotated[Path | None, typer.Argument(
        help="The battery file: experiments (names or globs) × subjects × seeds. With "
             "--resume: the battery folder (default: the lab's latest).",
        show_default=False)] = None,
    experiments: Annotated[list[str] | None, typer.Option(
        "--experiments", metavar="GLOBS", help="Without a file (or over the file's): the "
                                               "experiments, names or globs (commas or "
                                               "repeated).", show_default=False)] = None,
    subjects: Annotated[list[str] | None, typer.Option(
        "--subjects", metavar="NAMES", help="Replace each experiment's subjects with these "
                                            "registry subjects (commas or repeated).",
        show_default=False)] = None,
    seeds: Annotated[str | None, typer.Option(
        "--seeds", metavar="N|LIST", help="How many seeds (3: seeds 0, 1, 2) or which "
                                          "(1,2,7).", show_default=False)] = None,
    trials: Annotated[str | None, typer.Option(
        "--trials", "-n", help="Trials per case, or 'auto'.", show_default=False)] = None,
    name: Annotated[str | None, typer.Option(
        "--name", help="The battery's name (without a file: batch).",
        show_default=False)] = None,
    resume: Annotated[bool, typer.Option(
        "--resume", help="Continue a battery: resume its unfinished runs, start those never "
                         "started, read back the completed ones.")] = False,
    lab: Lab = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Validate and list the runs; run and write nothing.")] = False,
    executor: Executor = "local",
    address: Address = None,
    on_complete: OnComplete = None,
    notify_url: Notify = None,
    notify_env: NotifyEnv = None,
    sync_url: Annotated[str | None, typer.Option(
        "--sync", metavar="URL", help="Then push each run to object storage (s3://, gs://, "
                                      "az://, file://), as `ix sync push` does; a failed "
                                      "push keeps the run and exits 2.",
        show_default=False)] = None,
    json_out: Json = False,
) -> None:
    """Run a battery: each (experiment, seed) is one run in that experiment's results; the
    battery folder gets a snapshot and a combined report. Flags given with a file replace
    the file's fields."""
    fields: dict[str, Any] = {
        "name": name, "experiments": _names(experiments), "subjects": _names(subjects),
        "seeds": seed_values(seeds), "trials": trial_count(trials)}
    if resume:
        _check_resume(battery, fields, dry_run)
    elif battery is not None and not battery.is_file():
        raise ConfigError("no such battery file", file=battery)
    elif battery is None and fields["experiments"] is None:
        raise ConfigError("give a battery file, or the experiments to run with --experiments "
                          "(or --resume to continue a battery)", field="BATTERY")
    if dry_run:
        spec, _, plans = plan_battery(battery, lab, fields=fields)
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
            out.print(f"[dim]{len(rows)} runs; dry run: nothing executed[/]", markup=True)
        return
    hook = notify.webhook(notify_url, notify_env)  # checked before anything runs
    notify.check_command(on_complete)
    if sync_url:
        api_sync.check_sync_url(sync_url)
    command = recorded_command(sys.argv)
    with RunProgress(enabled=not json_out) as progress:
        if resume:
            result = resume_battery(battery, lab, command=command, observer=progress,
                                    executor=executor, address=address)
        else:
            result = run_battery(battery, lab, command=command, fields=fields,
                                 observer=progress, executor=executor, address=address)
    if on_complete:
        notify.on_battery_complete(on_complete, result, warn=warn)
    if hook is not None:
        notify.notify_battery(hook, result, warn=warn)
    synced = not sync_url or api_sync.push_after_runs(
        sync_url, [r.run_dir for r in result.runs], warn=warn,
        note=lambda m: err.print(m, style="dim", markup=False, soft_wrap=True))
    if json_out:
        print_json({"folder": str(result.folder), **result.report})
    else:
        # Markdown, never wrapped (a line break would split a table's row)
        sys.stdout.write((result.folder / "report.md").read_text(encoding="utf-8") + "\n")
        sys.stdout.flush()
        out.print(f"[dim]battery folder: {result.folder}[/]", soft_wrap=True, markup=True)
    for line in outcome_lines(result.report):  # why it exits non-zero, even with --json
        err.print(line, markup=False, highlight=False, soft_wrap=True)
    if len(result.runs) < result.planned:
        err.print(f"{result.planned - len(result.runs)} of {result.planned} runs did not "
                  "start; `ix batch --resume` continues the battery", markup=False,
                  highlight=False, soft_wrap=True)
    if any(r.status == "cancelled" for r in result.runs):
        raise typer.Exit(130)
    failed = [r.summary for r in result.runs if r.status == "failed"]
    if failed:
        raise typer.Exit(api.failure_exit_code(failed))
    if any((goal := r.summary.get("goal")) and goal["verdict"] == "refuted"
           for r in result.runs):
        raise typer.Exit(1)
    if not synced:
        raise typer.Exit(2)


def _names(values: list[str] | None) -> list[str] | None:
    """`--experiments a,b --experiments c` as [a, b, c]; None when not given."""
    if values is None:
        return None
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


def seed_values(raw: str | None) -> int | list[int] | None:
    """`--seeds 3` (a count: seeds 0, 1, 2) or `--seeds 1,2,7` (those seeds), as a battery
    file's `seeds:` takes them."""
    if raw is None:
        return None
    try:
        if "," in raw:
            return [int(x) for x in raw.split(",") if x.strip()]
        return int(raw)
    except ValueError:
        raise ConfigError(f"must be a count (3) or a list of seeds (1,2,7), got {raw!r}",
                          field="--seeds") from None


def _check_resume(battery: Path | None, fields: dict[str, Any], dry_run: bool) -> None:
    """`--resume` continues a battery as its snapshot has it: nothing may change it."""
    given = [f"--{k}" for k, v in fields.items() if v is not None]
    if given or dry_run:
        raise ConfigError(f"--resume continues a battery as its snapshot has it; "
                          f"{', '.join(given or ['--dry-run'])} cannot be given with it",
                          field="--resume")
    if battery is not None and not battery.is_dir():
        raise ConfigError("with --resume, BATTERY is a battery folder (holding "
                          "battery.yaml)", file=battery, field="BATTERY")


def register(app: typer.Typer) -> None:
    """Add the command to the `ix` application."""
    app.command("batch")(batch)
