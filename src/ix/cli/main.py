"""`ix`: run experiments on stochastic subjects and read the evidence.

This module only assembles the command tree: each command is in its own module, imported
when the command runs (`ix.cli.lazy`), so `ix --help` costs typer and no more.
"""

import gc
import sys
from typing import Annotated, NoReturn

import typer

from ix._version import __version__
from ix.cli.lazy import Entry, lazy_group
from ix.cli.options import SETTINGS
from ix.domain.errors import IxError
from ix.fs.storage_faults import storage_error

#: Every command of `ix`, in the order `ix --help` lists them: its module (which has a
#: `register(app)`) and its line in the listing (the first sentence of its help).
COMMANDS: dict[str, Entry] = {
    "run": Entry("ix.cli.run",
        "Run experiments: every case x subject x trial, recorded, aggregated, summarised."),
    "pause": Entry("ix.cli.pause",
        "Pause a running run: no new trial starts, the trials in flight finish, the run stays"
        " open until `ix continue RUN`."),
    "continue": Entry("ix.cli.pause", "Continue a paused run: trials start again where it "
                                      "paused."),
    "validate": Entry("ix.cli.validate",
        "Load and check experiments without running anything: every problem of the lab at"
        " once, one `file: field: message` line each (exit 2 on any), and each subject's "
        "runtime and whether its credentials are set."),
    "sanity": Entry("ix.cli.sanity",
        "Check the pipeline end to end before paying for real trials: each experiment runs "
        "with a random subject, a perfect one and a perfectly wrong one (no model called), "
        "which must score chance, 100% and 0%."),
    "ls": Entry("ix.cli.ls", "List the lab's experiments: each one's verdict (or F1) and last "
                            "run."),
    "batch": Entry("ix.cli.batch",
        "Run a battery: each (experiment, seed) is one run in that experiment's results; "
        "the battery folder gets a snapshot and a combined report."),
    "compare": Entry("ix.cli.compare",
        "Compare runs of an experiment: metric deltas with intervals, flipped cases, a "
        "verdict."),
    "optimize": Entry("ix.cli.optimize",
        "Improve a skill's description with held-out evidence: propose, test on train cases,"
        " judge the best on held-out cases."),
    "calibrate": Entry("ix.cli.calibrate",
        "Calibrate a proxy subject: run a subject and its cheap stand-in on a seeded sample of"
        " cases and say whether the proxy is good enough to screen with."),
    "plan": Entry("ix.cli.power_plan",
        "Power analysis: how many cases and trials for a target interval width or "
        "difference, or, for an experiment with a goal, how many cases settle the goal."),
    "report": Entry("ix.cli.reports",
        "One run's report: summary table, leaderboard, score breakdown per case, failure "
        "analysis, cost, annotations, and with --baseline the regressions."),
    "leaderboard": Entry("ix.cli.reports",
        "Subjects ranked per experiment (its latest completed run), with intervals and "
        "the probability that each rank is right; over several experiments, a pooled "
        "board too."),
    "tag": Entry("ix.cli.reports", "Name a run: `ix tag RUN TAG`."),
    "annotate": Entry("ix.cli.reports",
        'Annotate a run or one of its cases: `ix annotate RUN [CASE] "text"`; shown by '
        "`ix report`, listed by `ix annotate RUN --list`."),
    "results": Entry("ix.cli.results",
        "List the lab's trials (the latest attempt of each), filtered, or aggregate them."),
    "query": Entry("ix.cli.results",
        "Run SQL (DuckDB) over the lab's trials; statements that would write are refused."),
    "new": Entry("ix.cli.scaffold",
        "Scaffold an experiment: experiment.yaml, cases/ with must / not / edge "
        "templates, and a README; refuses to overwrite."),
    "schema": Entry("ix.cli.schema",
        "Print JSON Schemas (draft 2020-12) generated from ix's pydantic models: the "
        "trial line, the summary, and each command's --json output."),
    "export": Entry("ix.cli.transfer",
        "Export a run: its trials as jsonl, json, csv or parquet, Inspect AI eval logs, "
        "a portable run folder or an MLflow tracking folder."),
    "import": Entry("ix.cli.transfer",
        "Import outside results as a new, completed run of an experiment in the lab."),
    "cases": Entry("ix.cli.cases",
        "An experiment's cases: `ix cases import` writes case files from a table (CSV, "
        "JSONL, JSON, Parquet, or skill-creator's eval set); `ix cases review` accepts or "
        "drops the cases a `generate` probe made."),
    "sync": Entry("ix.cli.sync",
        "Push the lab's results to object storage (s3://, gs://, az://, file://) or pull "
        "them back."),
    "view": Entry("ix.cli.view",
        "Browse the lab in a web browser: experiments and runs, a run's report with its "
        "charts, each case's trials and each trial's full trace, and two runs side by "
        "side."),
    "mcp": Entry("ix.cli.mcp",
        "Serve the lab to an MCP client over stdin/stdout: list, show, create, validate, "
        "plan, run (with progress, cancellable), summarise, compare and query "
        "experiments."),
    "subjects": Entry("ix.cli.subjects",
        "The subject registry: named subjects in $XDG_CONFIG_HOME/ix/subjects.yaml and "
        "the built-in profiles, usable by name under `subjects:` in experiment.yaml."),
    "cache": Entry("ix.cli.cache",
        "The lab's observation cache (<lab>/.ix/cache/observations/), which `ix run "
        "--cache` records to and replays from."),
    "plugins": Entry("ix.cli.plugins",
        "List the installed plugins: runtime, sensor, probe, scorer and reporter kinds that "
        "other distributions provide (entry points ix.runtimes, ix.sensors, ix.probes, "
        "ix.scorers, ix.reporters), with their distribution and version."),
    "judge": Entry("ix.cli.judges",
        "How far a run's judges (llm_judge) can be trusted: their agreement with people's "
        "labels, with intervals, and the pass rate corrected for their errors."),
    "label": Entry("ix.cli.judges",
        "Add people's labels of judged trials to an experiment's label set "
        "(results/labels.jsonl), which `ix judge check` reads."),
    "serve": Entry("ix.cli.serve",
        "Keep ix warm: a resident worker that runs each `ix` command in a forked child with"
        " the imports already done."),
    "ci": Entry("ix.cli.ci",
        "Scheduled runs and CI gates: `ix ci init` writes a GitHub Actions or GitLab CI "
        "workflow that runs the lab, gates on a baseline and keeps the HTML reports."),
}

app = typer.Typer(
    name="ix",
    help="Experiments on stochastic subjects (Claude Code skills, agents, LLM APIs, CLIs), "
         "with statistics that are right at small N.\n\n"
         "A lab is a folder of experiments; an experiment is experiment.yaml + cases/*.md. "
         "Every trial is appended to <experiment>/results/trials.jsonl.",
    cls=lazy_group(COMMANDS),
    add_completion=False,
    pretty_exceptions_enable=False,
    **SETTINGS,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ix {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    if not gc.isenabled():  # the console script's start-up (`ix.cli.main`): the command's
        gc.freeze()  # module is imported by now (`ix.cli.lazy`); what start-up made is kept
        gc.enable()  # out of every later collection, which runs as usual from here


def main() -> None:
    """Run `ix`: user errors are one line on stderr and exit 2, never a traceback; so are
    storage faults (a full disk, a read-only folder) that no command caught itself."""
    try:
        app()
    except IxError as exc:
        _fail(exc.render(), 2)
    except KeyboardInterrupt:
        _fail(None, 130)
    except Exception as exc:
        fault = storage_error(exc)
        if fault is None:
            raise
        _fail(fault.render(), 2)


def _fail(message: str | None, code: int) -> NoReturn:
    """Print the error (None: "cancelled") and exit with `code`."""
    from ix.cli.output import err, fail  # rich: imported only when there is an error to print

    if message is None:
        err.print("[yellow]cancelled[/]")
    else:
        fail(message)
    sys.exit(code)


__all__ = ["COMMANDS", "app", "main"]
