"""A run's `reporters:` (experiment.yaml, or `ix.Experiment(reporter=...)`): the outputs
written into the run's folder when it ends (docs/reports.md, "Reporters").

The built-in ones write the file of `ix report --format <kind>` (`ix.report.outputs`), named
after it (`ix.eval.reporters.SUFFIXES`); a plugin's `write(report, folder)` gets the same
report data and the run folder. They run after the run is recorded: a reporter that fails
is a warning, and the run, its summary and the other reporters' files stand.
"""

from collections.abc import Callable
from pathlib import Path

from ix.api.reports import report, write_report
from ix.domain.errors import ConfigError, IxError
from ix.engine.plan import Plan
from ix.engine.run import RunResult
from ix.eval.reporters import BuiltinReporter
from ix.report.outputs import report_text
from ix.store.layout import RunDir

__all__ = ["write_reports"]


def write_reports(plan: Plan, result: RunResult,
                  warn: Callable[[str], None] | None = None) -> list[Path]:
    """Each of the plan's reporters' outputs for the run `result` recorded; the files
    written, in the reporters' order. `warn` hears a reporter that failed."""
    if not plan.reporters:
        return []
    folder = Path(result.run_dir)
    data = report(plan.loaded.lab, str(folder), warn=warn)
    written: list[Path] = []
    for reporter in plan.reporters:
        try:
            if isinstance(reporter, BuiltinReporter):
                text = report_text("table" if reporter.kind == "console" else reporter.kind,
                                   data, per_case=bool(reporter.options.get("per_case")))
                target = RunDir(folder).output(reporter.suffix)
                write_report(target, text, field="reporters")
                written.append(target)
            else:
                made = reporter.write(data, folder)
                if isinstance(made, str | Path):
                    written.append(Path(made))
        except (ConfigError, IxError) as exc:
            if warn is not None:
                warn(f"a reporter failed (the run is recorded): {exc}")
    return written
