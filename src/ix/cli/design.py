"""Design warnings on the command line: `ix validate` and `ix run` (`--strict` makes them errors).

Each is a message on stderr, `ix: warning: <experiment.yaml>: <field>: <message> [<code>]`
(`ix: error:` under --strict), wrapped to the width as every `ix:` message is; a run of
several experiments says one line per experiment, its codes and `ix validate` (`say`).
"""

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict, cast

from ix.api import Plan
from ix.api.design import DesignWarning, design_suggestions, design_warnings
from ix.cli.output import fail, out, warn
from ix.report.tables import hanging

if TYPE_CHECKING:  # the output types (ix.api.schemas): not imported by `ix validate` itself
    from ix.api.schemas import DesignWarningOut, SuggestionOut, Validated

#: Suggestions are wrapped to this width at most (words whole: a value is never cut).
WIDTH = 80


class DesignReport(TypedDict):
    """An experiment's design warnings in `ix validate --json`; under --strict with a
    warning, the experiment fails (`ok` false, and why)."""

    ok: bool
    warnings: "list[DesignWarningOut]"
    error: NotRequired[str]


def _line(file: Any, w: DesignWarning) -> str:
    return f"{file}: {w.field}: {w.message} [{w.code}]"


def report(plan: Plan, strict: bool) -> DesignReport:
    """The design warnings of one experiment in `ix validate --json`; under --strict a
    warning makes the experiment fail (`ok: false`, with an `error`)."""
    found = design_warnings(plan)
    out: DesignReport = {"ok": not (strict and found),
                         "warnings": [cast("DesignWarningOut", w.model_dump()) for w in found]}
    if strict and found:
        out["error"] = (f"{plan.loaded.config_file}: design: {len(found)} design check(s) "
                        "failed under --strict")
    return out


def show(report: "Validated", strict: bool) -> None:
    """Print one experiment's design warnings (from `report`) on stderr."""
    file = f"{report['path']}/experiment.yaml"
    for raw in report["warnings"]:
        _say(_line(file, DesignWarning(**raw)), strict)


def say(found: Sequence[tuple[Plan, list[DesignWarning]]], strict: bool) -> None:
    """The design warnings of the experiments a run is about to run, before anything runs:
    each in full for one experiment and under --strict (errors are said whole); for several,
    a line per experiment naming its warnings' codes and `ix validate`, which says each in
    full — a lab's run keeps its answers, not its warnings, where the eye lands."""
    if strict or len(found) == 1:
        for plan, warnings in found:
            for w in warnings:
                _say(_line(plan.loaded.config_file, w), strict)
        return
    for plan, warnings in found:
        if warnings:
            codes = " ".join(f"[{w.code}]" for w in warnings)
            count = f"{len(warnings)} design warning{'s' * (len(warnings) > 1)}"
            warn(f"{plan.loaded.config_file}: {count} {codes}: "
                 f"`ix validate {plan.loaded.path.name}` says each")


def _say(line: str, strict: bool) -> None:
    """One warning (an error under --strict), wrapped as `ix.cli.output.warn`/`fail` say it."""
    (fail if strict else warn)(line)


def suggestions(plan: Plan) -> "list[SuggestionOut]":
    """The control suggestions of one experiment in `ix validate --json`."""
    return [cast("SuggestionOut", {**s.model_dump(), "examples": list(s.examples)})
            for s in design_suggestions(plan)]


def show_suggestions(found: "list[SuggestionOut]") -> None:
    """Each suggestion on stdout under its experiment, within 80 columns: the message
    wrapped at words (a name or path longer than a line stands whole on its own), then its
    examples, YAML as it is and prompt ideas wrapped under their file."""
    width = max(40, min(out.size.width, WIDTH))
    for s in found:
        text = f"suggestion: {s['field']}: {s['message']} [{s['code']}]"
        _wrapped(f"  {text}", width)
        for line in s["examples"]:
            if line.startswith("cases/"):
                _wrapped(f"      - {line}", width)
            else:
                out.print(f"      {line}", markup=False, highlight=False, soft_wrap=True)


def _wrapped(text: str, width: int) -> None:
    for line in hanging(text, width):
        out.print(line, markup=False, highlight=False, soft_wrap=True)
