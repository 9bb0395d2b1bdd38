"""`ix new NAME`: scaffold an experiment (from flags, or by asking on a terminal)."""

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from ix.api.integrations.scaffold import create_experiment
from ix.cli.output import out, print_json

if TYPE_CHECKING:
    from ix.api.schemas import NewOutput

Lab = Annotated[str | None, typer.Option(
    "--lab", help="The lab: a path, or a name searched from the project root. Default: the "
                  "lab around the working directory, else the working directory.",
    show_default=False)]


def new(
    name: Annotated[str, typer.Argument(
        help="The experiment's folder name (letters, digits, '.', '_', '-').",
        metavar="NAME", show_default=False)],
    lab: Lab = None,
    skill: Annotated[str | None, typer.Option(
        "--skill", help="The skill under test (a folder under the lab's skills/): the "
                        "activation sensor's target. A skill not there is refused unless "
                        "--allow-missing.", show_default=False)] = None,
    subjects: Annotated[list[str] | None, typer.Option(
        "--subjects", "--subject", help="Subjects to compare, control first: a,b or "
                                        "repeated. Registry names (ix subjects list) become "
                                        "profiles.", show_default=False)] = None,
    goal: Annotated[str | None, typer.Option(
        "--goal", help="The hypothesis. With two subjects it becomes a goal: comparing them "
                       "(F1, differ, min_effect 0.1); else the description.",
        show_default=False)] = None,
    runtime: Annotated[str | None, typer.Option(
        "--runtime", help="Runtime kind: lexical (offline), mock, claude-code, anthropic, "
                          "openai, ... Default: the lab's ix.yaml, else claude-code.",
        show_default=False)] = None,
    template: Annotated[str, typer.Option(
        "--template", help="A benchmark recipe (docs/recipes.md). activation: does the "
                           "skill fire when it should? coexistence: does another skill "
                           "beside it take its prompts? context: does it still fire after a "
                           "long session? outcome: does it help the agent do the job, and at "
                           "what cost? sweep: which setting or neighbour changes it most? "
                           "optimize: can its description improve, on held-out cases? All "
                           "but activation need --skill.",
        show_default=True)] = "activation",
    allow_missing: Annotated[bool, typer.Option(
        "--allow-missing", help="Create the experiment even if the --skill is not in the "
                                "lab's skills/ yet (you will add it; `ix validate` reports it "
                                "missing until then).")] = False,
    no_input: Annotated[bool, typer.Option(
        "--no-input", help="Never ask; use the flags as given (asking happens only on a "
                           "terminal, for flags left out).")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
) -> None:
    """Scaffold an experiment: experiment.yaml, cases/ with must / not / edge templates, and a
    README; refuses to overwrite. `ix validate NAME` passes right after.

    Example: `ix new csv-vs-sheets --skill csv-summary --subjects a-only,a-plus-b
    --goal "Adding spreadsheet-insights lowers csv-summary's recall" --runtime lexical`;
    `ix new csv-help --template outcome --skill csv-summary` for an outcome experiment;
    `--template coexistence` (context, sweep, optimize) for the other benchmark recipes.
    """
    if not no_input and not json_out and sys.stdin.isatty() and template == "activation":
        skill, subjects, goal, runtime = _ask(skill, subjects, goal, runtime)
    path = create_experiment(lab, name, skill=skill, subjects=subjects or (), goal=goal,
                             runtime=runtime, allow_missing=allow_missing, template=template)
    files = sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file())
    if json_out:
        answer: NewOutput = {"name": name, "path": str(path), "files": files}
        print_json(answer)
        return
    out.print(f"created experiment [bold]{name}[/] in {path}", soft_wrap=True, markup=True)
    for f in files:
        out.print(f"  {f}", markup=False)
    out.print(f"next: write the cases (replace the templates), then `ix validate {name}` and "
              f"`ix run {name} --smoke`; the README has the steps", soft_wrap=True)


def _ask(skill: str | None, subjects: list[str] | None, goal: str | None,
         runtime: str | None) -> tuple[str | None, list[str] | None, str | None, str | None]:
    """Prompt for what the flags left out; an empty answer leaves it out."""
    if skill is None:
        skill = typer.prompt("Skill under test (a folder under skills/; empty: none)",
                             default="", show_default=False).strip() or None
    if not subjects:
        answer = typer.prompt("Subjects to compare, control first, comma-separated (empty: "
                              "one subject)", default="", show_default=False)
        subjects = [answer] if answer.strip() else None
    if goal is None:
        goal = typer.prompt("Hypothesis (empty: none)", default="",
                            show_default=False).strip() or None
    if runtime is None:
        runtime = typer.prompt("Runtime (lexical, mock, claude-code, ...; empty: the lab's "
                               "default)", default="", show_default=False).strip() or None
    return skill, subjects, goal, runtime


def register(app: typer.Typer) -> None:
    """Add the command to the `ix` application."""
    app.command("new")(new)
