"""`ix validate`: load and check experiments without running anything."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer
from rich.markup import escape

from ix import api
from ix.cli import design as design_cli
from ix.cli.options import Experiments, Json, Lab, Strict, trial_count
from ix.cli.output import fail, out, print_json, warn

if TYPE_CHECKING:  # the output types: `ix validate` stays clear of ix.api.schemas' import
    from ix.api.schemas import NotValid, Validated


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
    --strict they are errors. Control suggestions (a no-skill baseline, near-miss cases
    from sibling skills, an unswept control for a sweep) follow each experiment; never
    errors.
    """
    lab_path, paths = api.resolve(lab, experiments or ())
    overrides = api.Overrides(trials=trial_count(trials), runtime=runtime)
    reports: list[Validated | NotValid] = []
    for path in paths:
        plan, problems = api.check(path, lab_path, overrides)
        if plan is None:  # every problem of the experiment, each on its own line
            errors = [e.render() for e in problems]
            reports.append({"experiment": path.name, "path": str(path), "ok": False,
                            "error": errors[0], "errors": errors})
            continue
        exp = plan.loaded.experiment
        creds = {c["subject"]: c for c in api.subject_credentials(plan)}
        design = design_cli.report(plan, strict)
        validated: Validated = {
            "experiment": exp.name, "path": str(path), "ok": design["ok"],
            "cases": len(plan.cases), "skipped_acceptable": len(plan.skipped),
            "subjects": [{"name": s.subject.name, "runtime": s.runtime_spec["kind"],
                          "runtime_source": _runtime_source(plan, s.subject, runtime),
                          "skills": [k["name"] for k in s.subject.config["skills"]],
                          "target_skill": s.target_skill,
                          "credentials_env": creds[s.subject.name]["credentials_env"],
                          "credentials_present": creds[s.subject.name]["credentials_present"]}
                         for s in plan.subjects],
            "trials_per_case": plan.trials, "total_trials": plan.total,
            "concurrency": plan.concurrency, "warnings": design["warnings"],
            "suggestions": design_cli.suggestions(plan),
        }
        if "error" in design:
            validated["error"] = design["error"]
        reports.append(validated)
    if json_out:
        print_json(reports)
    else:
        _print_validated(reports, strict)
    if not all(r["ok"] for r in reports):
        raise typer.Exit(2)


def _print_validated(reports: "list[Validated | NotValid]", strict: bool) -> None:
    """✓ and each subject's runtime on stdout; every problem one line on stderr."""
    said: set[str] = set()  # a problem of ix.yaml is every experiment's: say it once
    for r in reports:
        if not r["ok"]:  # it did not load (every problem), or failed --strict (why)
            lines = (cast("NotValid", r)["errors"] if "errors" in r
                     else [cast("Validated", r).get("error") or ""])
            for line in lines:
                if line not in said:
                    said.add(line)
                    fail(line)
            continue
        out.print(f"[green]✓[/] {escape(r['experiment'])}: {r['cases']} cases "
                  f"(+{r['skipped_acceptable']} acceptable, not run) × "
                  f"{r['trials_per_case']} trials × {len(r['subjects'])} subject(s) = "
                  f"{r['total_trials']} trials", markup=True)
        groups: dict[str, list[str]] = {}  # one line per runtime: expansions share one
        for s in r["subjects"]:
            env = s["credentials_env"]
            creds = ("no credentials needed" if not env else
                     f"{env[0]} is set" if s["credentials_present"] else
                     f"[red]{env[0]} is not set[/]")
            groups.setdefault(f"runtime {s['runtime']} ({escape(s['runtime_source'])}), "
                              f"{creds}", []).append(escape(s["name"]))
            if env and not s["credentials_present"]:
                warn(f"{r['path']}/experiment.yaml: runtime: subject {s['name']!r} runs on "
                     f"{s['runtime']} ({s['runtime_source']}) and {env[0]} is not set, so "
                     "every trial would fail: set it, or choose `runtime: lexical` for an "
                     "offline baseline")
        for how, names in groups.items():
            out.print(f"  {names[0]}: {how}" if len(names) == 1 else
                      f"  {how}: {', '.join(names)}", markup=True)
        design_cli.show_suggestions(cast("Validated", r).get("suggestions") or [])
    for r in reports:
        if "errors" not in r:  # it loaded: its design was checked
            design_cli.show(cast("Validated", r), strict)


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




def register(app: typer.Typer) -> None:
    """Add the command to the `ix` application."""
    app.command("validate")(validate)
