"""`ix cases import`: a table of cases written as an experiment's case files."""

import sys
from typing import Annotated

import typer

from ix.api.cases import decide_draft, draft_cases, import_cases
from ix.cli.options import SETTINGS, Lab
from ix.cli.options import JsonText as Json
from ix.cli.output import fail, out, print_json
from ix.domain.errors import ConfigError, ConfigErrors

app = typer.Typer(
    name="cases",
    help="An experiment's cases: `ix cases import` writes case files from a table (CSV, "
         "JSONL, JSON, Parquet, or skill-creator's eval set); `ix cases review` accepts or "
         "drops the cases a `generate` probe made.",
    **SETTINGS,
)


@app.command("import")
def import_(
    file: Annotated[str, typer.Argument(
        help="The table: .csv, .tsv, .jsonl, .json or .parquet; skill-creator's trigger eval "
             "set (a JSON list of {query, should_trigger}) and evals.json read as they are.",
        show_default=False)],
    experiment: Annotated[str, typer.Option(
        "--experiment", "-e", help="The experiment whose case folder the cases go to.",
        show_default=False)],
    map_: Annotated[str | None, typer.Option(
        "--map", help="field=column pairs, comma-separated: prompt=query,expectation="
                      "should_trigger[true=must_trigger,false=should_not_trigger],id=name. "
                      "Fields: prompt, expectation, id, rationale, tags, difficulty, "
                      "metadata.KEY; a field left out comes from a column of its name.",
        show_default=False)] = None,
    force: Annotated[bool, typer.Option(
        "--force", help="Overwrite case files that exist already.")] = False,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Check every row and say what would be written; write nothing.")]
        = False,
    lab: Lab = None,
    json_out: Json = False,
) -> None:
    """Write each row of a table as a case file (<id>.md: frontmatter, then the prompt).

    Every row is checked first; a bad row (an empty prompt, an expectation the map does not
    give, an invalid or repeated id) is named by file, row and column, and nothing is
    written (exit 2). An existing case file is overwritten only with --force.
    """
    try:
        done = import_cases(file, experiment, lab=lab, map=map_, force=force, dry_run=dry_run)
    except ConfigErrors as exc:
        for one in exc.errors:
            fail(one.render())
        raise typer.Exit(2) from None
    if json_out:
        print_json(done.as_dict())
        return
    verb = "would write" if done.dry_run else "wrote"
    out.print(f"{verb} {len(done.written)} case(s) to {done.folder}/ from {done.source.name} "
              f"({done.format})" + (f", {len(done.overwritten)} overwritten"
                                    if done.overwritten else ""), soft_wrap=True)
    if done.unmapped:
        out.print(f"columns left out: {', '.join(done.unmapped)} (map one with --map "
                  "metadata.KEY=COLUMN to keep it)", soft_wrap=True)


@app.command("review")
def review(
    experiment: Annotated[str, typer.Argument(
        help="The experiment whose generated draft cases to review.", show_default=False)],
    accept_all: Annotated[bool, typer.Option(
        "--accept-all", help="Accept every draft without asking.")] = False,
    drop_all: Annotated[bool, typer.Option(
        "--drop-all", help="Drop every draft without asking.")] = False,
    lab: Lab = None,
) -> None:
    """Accept or drop the cases a `generate` probe made: each draft is shown (its id,
    expectation and prompt) and one line answers it: y (accept: it becomes a case file),
    n (drop: it never runs), s (skip for now), q (stop). Over a pipe too
    (`printf 'y\\nn\\n' | ix cases review EXP`); each answer is kept at once.
    """
    if accept_all and drop_all:
        raise ConfigError("choose one of --accept-all and --drop-all", field="--drop-all")
    path, waiting = draft_cases(experiment, lab=lab)
    if not waiting:
        out.print(f"no draft case waits for review in {path.name}")
        return
    counts = {"accept": 0, "drop": 0}
    for i, case in enumerate(waiting, 1):
        decision = "accept" if accept_all else "drop" if drop_all else None
        if decision is None:
            out.print(f"[{i}/{len(waiting)}] {case.id} ({case.expectation}"
                      + (f", {', '.join(case.tags)}" if case.tags else "") + f"):\n"
                      f"  {case.prompt}", soft_wrap=True, markup=False)
            out.print("keep it? y / n (drop) / s (skip) / q (quit): ", end="")
            answer = sys.stdin.readline()
            word = answer.strip().lower()[:1]
            if not answer or word == "q":
                out.print()
                break
            decision = {"y": "accept", "n": "drop"}.get(word)
            if decision is None:
                continue
        written = decide_draft(path, case, decision)
        counts[decision] += 1
        if written is not None and (accept_all or drop_all):
            out.print(f"accepted {case.id}: {written}", soft_wrap=True)
    left = len(draft_cases(experiment, lab=lab)[1])
    out.print(f"accepted {counts['accept']}, dropped {counts['drop']}; {left} draft(s) "
              "still wait", soft_wrap=True)


def register(app_: typer.Typer) -> None:
    """Add the group to the `ix` application."""
    app_.add_typer(app, name="cases")
