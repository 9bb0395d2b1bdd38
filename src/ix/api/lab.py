"""`ix.Lab`: a lab for programs and notebooks — run experiments, query and compare results.

    import ix
    lab = ix.Lab("examples/lab")
    lab.run("skill-activation", trials=5)
    rs = lab.results.query(subject="csv-summary", since="7d")
    rs.activation_rate(), rs.group_by("case"), rs.to_dataframe(), rs.export("parquet", "t.parquet")

Each method calls the same `ix.api` function as the matching `ix` command.
"""

import warnings
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from ix.api.battery import BatteryResult, resume_battery, run_battery
from ix.api.experiments import run
from ix.api.options import Observer, RunOptions
from ix.api.query import QueryResult, run_query
from ix.api.reports import compare_runs
from ix.api.results import Results
from ix.domain.errors import Warn
from ix.engine.plan import Overrides
from ix.engine.run import RunResult
from ix.fs.resolve import find_lab
from ix.lab.loader import load_experiment
from ix.store.lab_storage import LabStorage

if TYPE_CHECKING:
    from ix.report.schemas import CompareOutput


def _python_warning(message: str) -> None:
    """Skipped torn lines and unreadable case files, as Python warnings (once per place)."""
    warnings.warn(message, UserWarning, stacklevel=3)


class _Warnings(Observer):
    """A run's warnings (and design warnings, one line each) to the lab's `warn`."""

    def __init__(self, warn: Warn):
        self._warn = warn

    def on_warning(self, message: str) -> None:
        self._warn(message)


def _listed(value: str | Sequence[str] | None) -> list[str] | None:
    return [value] if isinstance(value, str) else None if value is None else list(value)


class Lab:
    """A lab folder: `path` (a path or a name, as `--lab` takes it; None: around the cwd).

    `warn` receives what the command line prints as warnings (skipped torn lines, unreadable
    case files); by default they are Python warnings.
    """

    def __init__(self, path: str | Path | None = None, *, warn: Warn | None = None):
        self.path: Path = find_lab(path)
        self._warn = warn or _python_warning

    def __repr__(self) -> str:
        return f"Lab({str(self.path)!r})"

    @property
    def results(self) -> Results:
        """`lab.results.query(subject=..., since=..., ...)`: see `ix.api.results.query_results`."""
        return Results(self.path, self._warn)

    def storage(self, subject: str = "subject") -> LabStorage:
        """The seed's `Storage` over this lab: verdicts from outside ix (`ix.domain.Verdict`),
        appended to an experiment as one run of `subject`, which every command then reads
        (`ix.store.lab_storage`). Use it in a `with` block, or call `save_summary` for each
        experiment: a run not saved is left `cancelled`, its lines kept."""
        return LabStorage(self.path, lambda folder: load_experiment(folder, self.path).experiment,
                          subject=subject)

    @overload
    def run(self, experiment: str, **overrides: Any) -> "RunResult": ...
    @overload
    def run(self, experiment: Sequence[str] | None = None,
            **overrides: Any) -> "list[RunResult]": ...
    def run(self, experiment: str | Sequence[str] | None = None,
            **overrides: Any) -> "RunResult | list[RunResult]":
        """Run one experiment (its result) or several (None: all of the lab; a list of results).

        `overrides` are those of `ix run`: trials, seed, runtime, concurrency, subjects,
        filters, smoke.
        """
        allowed = [f.name for f in fields(Overrides)]
        unknown = sorted(set(overrides) - set(allowed))
        if unknown:
            raise TypeError(f"unknown override(s) {', '.join(unknown)}; allowed: "
                            f"{', '.join(allowed)}")
        for key in ("subjects", "filters"):
            if isinstance(overrides.get(key), str):
                overrides[key] = (overrides[key],)
            elif key in overrides:
                overrides[key] = tuple(overrides[key])
        names = [experiment] if isinstance(experiment, str) else list(experiment or ())
        results = run(self.path, names, Overrides(**overrides),
                      options=RunOptions(command=["ix.Lab.run", *names]),
                      observer=_Warnings(self._warn))
        return results[0] if isinstance(experiment, str) else results

    def batch(self, battery: str | Path | None = None, *,
              experiments: str | Sequence[str] | None = None,
              subjects: str | Sequence[str] | None = None,
              seeds: int | Sequence[int] | None = None,
              trials: int | str | None = None, name: str | None = None) -> "BatteryResult":
        """Run a battery, as `ix batch` does: a battery file (a path, or one relative to the
        lab), or its fields alone (`experiments` names or globs, `subjects`, `seeds`: a count
        or a list, `trials`, `name`), or a file with fields that replace its own. The
        battery folder gets its snapshot (`file: null` without a file) and combined report.
        """
        path = None if battery is None else Path(battery).expanduser()
        if path is not None and not path.is_file() and not path.is_absolute() \
                and (self.path / path).is_file():
            path = self.path / path
        fields = {"experiments": _listed(experiments), "subjects": _listed(subjects),
                  "seeds": seeds if seeds is None or isinstance(seeds, int) else list(seeds),
                  "trials": trials, "name": name}
        given = [f"{k}={v!r}" for k, v in fields.items() if v is not None]
        return run_battery(path, self.path, fields=fields,
                           command=["ix.Lab.batch", *([str(battery)] if battery else []),
                                    *given])

    def resume_batch(self, folder: str | Path | None = None) -> "BatteryResult":
        """Continue a battery (its folder; None: the lab's latest), as `ix batch --resume`."""
        return resume_battery(None if folder is None else Path(folder), self.path,
                              command=["ix.Lab.resume_batch", *([str(folder)] if folder
                                                                else [])])

    def query(self, sql: str) -> QueryResult:
        """Read-only SQL over the views `trials`, `trials_all` and `cases` (docs/queries.md)."""
        return run_query(self.path, sql, self._warn)

    def compare(self, run_a: str, run_b: str, *more: str) -> "CompareOutput":
        """Runs of an experiment side by side, each later one against the first."""
        return compare_runs(self.path, [run_a, run_b, *more])
