"""`ix sanity`: the end-to-end check to run before paying for real trials."""

import textwrap
from typing import Annotated

import typer

from ix.api import sanity as sanity_api
from ix.cli.options import Experiments, JsonText, Lab
from ix.cli.output import out, print_json

MARK = {"pass": "PASS", "fail": "FAIL", "skip": "SKIP"}


def sanity(
    experiments: Experiments = None,
    lab: Lab = None,
    keep: Annotated[bool, typer.Option(
        "--keep", help="Keep the throwaway folder of the runs (it is kept anyway when a "
                       "check fails) and print its path.")] = False,
    json_out: JsonText = False,
) -> None:
    """Check the pipeline end to end before paying for real trials: each experiment runs
    with a random subject, a perfect one and a perfectly wrong one (no model called), which
    must score chance, 100% and 0%.

    One line per check, PASS, FAIL or SKIP, and what to do next; exit 1 when a check
    fails, 2 on bad input. The runs go to a throwaway folder, never into the lab's
    results/ (docs/running.md, "ix sanity").
    """
    report = sanity_api.sanity(lab, experiments or (), keep=keep)
    if json_out:
        print_json(sanity_api.as_json(report))
    else:
        _print(report)
    if not report.ok:
        raise typer.Exit(1)


def _print(report: sanity_api.SanityReport) -> None:
    """The verdict first, then one line per check (its advice indented under it)."""
    checks = report.checks
    counts = {s: sum(c.status == s for c in checks) for s in MARK}
    trials = sum(e.trials for e in report.experiments)
    verdict = "FAIL" if counts["fail"] else "PASS"
    width = max(40, min(out.width, 100))
    out.print(_wrap(f"Sanity {verdict}: {counts['pass']} passed, {counts['fail']} "
                    f"failed, {counts['skip']} skipped; {trials:,} trials in "
                    f"{report.seconds:.1f} s", width, ""))
    for c in checks:
        who = f"{c.experiment}: {c.subject}" if c.subject else c.experiment
        out.print(_wrap(f"{MARK[c.status]} {who}: {c.found}", width, "     "))
        if c.next and c.status != "pass":
            out.print(_wrap(f"→ {c.next}", width, "       ", first="     "))
    if report.kept is not None:
        out.print(_wrap(f"The runs are kept in {report.kept}, a lab of their own; see "
                        "their trials with", width, ""))
        out.print(f"  ix results --all-runs --lab {report.kept}")


def _wrap(text: str, width: int, indent: str, first: str = "") -> str:
    """`text` in lines of `width`, never breaking a word (a path or an id stays whole)."""
    return "\n".join(textwrap.wrap(text, width, initial_indent=first, subsequent_indent=indent,
                                   break_long_words=False, break_on_hyphens=False))


def register(app: typer.Typer) -> None:
    """Add the command to the `ix` application."""
    app.command("sanity")(sanity)
