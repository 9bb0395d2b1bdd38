"""`ix ci init`: write a CI workflow that runs the lab and gates on a baseline
(docs/scheduling.md)."""

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from ix.api.integrations import ci as api_ci
from ix.api.integrations import comment as api_comment
from ix.cli.options import SETTINGS, Lab
from ix.cli.options import JsonText as Json
from ix.cli.output import err, out, print_json
from ix.domain.errors import ConfigError

app = typer.Typer(
    name="ci",
    help="Scheduled runs and CI gates: `ix ci init` writes a GitHub Actions or GitLab CI "
         "workflow that runs the lab, gates on a baseline and keeps the HTML reports.",
    **SETTINGS,
)


@app.command("init")
def init(
    experiments: Annotated[list[str] | None, typer.Argument(
        help="Experiments of the lab to run and gate (names or paths). Default: every "
             "experiment of the lab.", show_default=False)] = None,
    lab: Lab = None,
    github: Annotated[bool, typer.Option(
        "--github", help="GitHub Actions: .github/workflows/ix.yml (the default).")] = False,
    gitlab: Annotated[bool, typer.Option("--gitlab", help="GitLab CI: .gitlab-ci.yml.")]
        = False,
    battery: Annotated[Path | None, typer.Option(
        "--battery", help="Run this battery file (`ix batch`) instead of `ix run`; it must "
                          "be inside the repository.", show_default=False)] = None,
    schedule: Annotated[str | None, typer.Option(
        "--schedule", help="When to run, a 5-field cron expression in UTC (minute hour "
                           "day-of-month month day-of-week). Default: every `sessions.every` "
                           "of a longitudinal study, else daily at 03:17.",
        show_default=False)] = None,
    baseline: Annotated[str, typer.Option(
        "--baseline", help="The tag of each experiment's baseline run; {experiment} is "
                           "replaced by the experiment's folder name.")]
        = api_ci.DEFAULT_BASELINE,
    python: Annotated[str, typer.Option("--python", help="The Python version to run on.")]
        = api_ci.DEFAULT_PYTHON,
    install: Annotated[str | None, typer.Option(
        "--install", help="What to pip install instead of ix-lab with the extras of the "
                          "lab's runtimes (e.g. '.[anthropic]' for this checkout).",
        show_default=False)] = None,
    extra: Annotated[list[str] | None, typer.Option(
        "--extra", help="Another ix-lab extra to install (repeatable).",
        show_default=False)] = None,
    secret: Annotated[list[str] | None, typer.Option(
        "--secret", help="The NAME of another secret the run needs, passed from the "
                         "platform's secrets (repeatable); never its value.",
        show_default=False)] = None,
    timeout: Annotated[int, typer.Option("--timeout", help="The job's time limit in "
                                         "minutes.")] = 60,
    out_file: Annotated[Path | None, typer.Option(
        "--out", "-o", help="Write here instead of the platform's file at the repository "
                            "root; - prints it.", show_default=False)] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")]
        = False,
    pr_comment: Annotated[bool, typer.Option(
        "--pr-comment", help="Also post the reports as one comment on the pull request "
                             "(GitHub) or merge request (GitLab), updated on each run "
                             "(`ix ci comment`).")] = False,
    json_out: Json = False,
) -> None:
    """Write a CI workflow that installs ix, runs the lab (or a battery) on a schedule, on
    pull requests and by hand, fails when an experiment regressed against its baseline tag
    (`ix report --baseline`), writes each experiment's first screen to the job's summary
    (`ix report --format github`) and keeps the reports as an artifact; with --pr-comment,
    posts them as one comment on the pull or merge request.

    Paths in it are relative to the root of the git checkout holding the lab. Exit codes: 0
    written, 2 bad input (an invalid cron line, a lab that does not load, a folder name a CI
    shell or GitHub would read as code, an existing file without --force).
    """
    if github and gitlab:
        raise ConfigError("choose one platform: --github or --gitlab", field="--gitlab")
    workflow = api_ci.plan_workflow(
        lab, platform="gitlab" if gitlab else "github", battery=battery,
        experiments=experiments or (), schedule=schedule, baseline=baseline, python=python,
        install=install, extras=extra or (), secrets=secret or (), timeout_minutes=timeout,
        out=out_file, pr_comment=pr_comment)
    if workflow.path is None:
        typer.echo(workflow.text, nl=False)
        return
    api_ci.write_workflow(workflow, force=force)
    if json_out:
        print_json(workflow.as_dict())
        return
    where = "GitHub Actions" if workflow.platform == "github" else "GitLab CI"
    out.print(Text(f"wrote {workflow.path} ({where})"), soft_wrap=True)
    out.print(Text(f"  runs: {workflow.command}"), soft_wrap=True)
    out.print(Text(f"  when: cron {workflow.schedule} (UTC), on pull requests, by hand"),
              soft_wrap=True)
    for gate in workflow.gates:
        state = "tagged" if gate.tagged else "not tagged yet"
        out.print(Text(f"  gate: {gate.experiment} against {gate.tag} ({state})"),
                  soft_wrap=True)
    for note in workflow.notes:
        err.print(Text(f"next: {note}"), soft_wrap=True)


@app.command("comment")
def comment(
    files: Annotated[list[Path], typer.Argument(
        help="Markdown files to post, one per experiment (`ix report --format github "
             "--out FILE`), joined in order.", show_default=False)],
    github: Annotated[bool, typer.Option(
        "--github", help="Post on the GitHub pull request (the default, unless GITLAB_CI "
                         "is set).")] = False,
    gitlab: Annotated[bool, typer.Option(
        "--gitlab", help="Post a note on the GitLab merge request.")] = False,
    pr: Annotated[int | None, typer.Option(
        "--pr", help="The pull (or merge) request's number, instead of the one the job runs "
                     "for.", show_default=False)] = None,
    json_out: Json = False,
) -> None:
    """Post the reports as ONE comment on the pull request (GitHub: GITHUB_TOKEN) or merge
    request (GitLab: IX_GITLAB_TOKEN) the CI job runs for, or update the comment ix posted
    before (found by its hidden marker), so a review holds one up-to-date report.

    Exit codes: 0 posted or updated, 2 a variable missing, a file unreadable, or the API
    refused (the message says why; never the token).
    """
    if github and gitlab:
        raise ConfigError("choose one platform: --github or --gitlab", field="--gitlab")
    texts = []
    for path in files:
        try:
            texts.append(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read it: {getattr(exc, 'strerror', None) or exc}",
                              file=path, field="FILE") from None
    where = api_comment.target(os.environ, "gitlab" if gitlab else "github" if github else None,
                               pr)
    done = api_comment.post(api_comment.comment_body(texts), where)
    if json_out:
        print_json(done)
        return
    out.print(Text(f"{done['action']} the ix comment on {done['where']}"
                   + (f": {done['url']}" if done.get("url") else "")), soft_wrap=True)


def register(app_: typer.Typer) -> None:
    """Add the group to the `ix` application."""
    app_.add_typer(app, name="ci")
