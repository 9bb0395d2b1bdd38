"""`ix subjects list|add|test`: the subject registry."""

from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from ix import api
from ix.api.subjects import added_entry, registry_listing
from ix.cli.options import SETTINGS, Json, Lab
from ix.cli.output import err, out, print_json

app = typer.Typer(
    name="subjects",
    help="The subject registry: named subjects in $XDG_CONFIG_HOME/ix/subjects.yaml and the "
         "built-in profiles, usable by name under `subjects:` in experiment.yaml.",
    **SETTINGS,
)


def _source(subject: Any) -> str:
    return "built-in" if subject.builtin else str(subject.source)


@app.command("list")
def subjects_list(lab: Lab = None, json_out: Json = False) -> None:
    """List the registry: built-in profiles and your subjects (yours override built-ins)."""
    subjects = api.list_subjects()
    if json_out:
        print_json(registry_listing(subjects))
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


@app.command("add")
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
        print_json(added_entry(added, replaced))
        return
    verb = "replaced" if replaced else "added"
    out.print(f"{verb} subject [bold]{name}[/] ({added.kind}"
              f"{', model ' + added.spec.model if added.spec.model else ''}) in {added.source}",
              soft_wrap=True, markup=True)


@app.command("test")
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
                      f"{result.latency_ms:.0f} ms", soft_wrap=True, markup=True)
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




def register(app_: typer.Typer) -> None:
    """Add the group to the `ix` application."""
    app_.add_typer(app, name="subjects")
