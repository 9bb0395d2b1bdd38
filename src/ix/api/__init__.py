"""The programmatic API that the command line (and later the viewer and MCP server) share.

Every function takes plain arguments and returns plain data or frozen models; none prints.
Bad input raises `ix.domain.errors.ConfigError` before anything is written; every error a user
can fix is an `IxError` (the tree is drawn in `ix.domain.errors`).

The names below load their module on first use, so a command pays only for the part of the
API it calls (`ix validate` never imports the query index or the results API).
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ix.api.design import DesignError, DesignWarning, design_warnings
    from ix.api.experiment import Experiment, ExperimentRun
    from ix.api.experiments import arun, dry_run, failure_exit_code, run
    from ix.api.lab import Lab
    from ix.api.listing import ExperimentInfo, list_experiments
    from ix.api.loading import check, load, plan, resolve, subject_credentials, validate
    from ix.api.options import Observer, RunOptions
    from ix.api.query import QueryResult, run_query
    from ix.api.reports import compare_runs
    from ix.api.results import Rate, ResultSet, query_results
    from ix.api.subjects import (
        SubjectTest,
        add_subject,
        get_subject,
        list_subjects,
        run_subject_test,
        subjects_file,
    )
    from ix.domain.errors import ConfigError, IxError, NotFound, RunBusy, StorageError
    from ix.engine.plan import Overrides, Plan
    from ix.engine.run import Limits, RunResult

#: Each public name and the module that defines it.
_WHERE = {
    "DesignError": "ix.api.design",
    "DesignWarning": "ix.api.design",
    "design_warnings": "ix.api.design",
    "ExperimentInfo": "ix.api.listing",
    "arun": "ix.api.experiments",
    "check": "ix.api.loading",
    "compare_runs": "ix.api.reports",
    "dry_run": "ix.api.experiments",
    "failure_exit_code": "ix.api.experiments",
    "list_experiments": "ix.api.listing",
    "load": "ix.api.loading",
    "plan": "ix.api.loading",
    "resolve": "ix.api.loading",
    "run": "ix.api.experiments",
    "subject_credentials": "ix.api.loading",
    "validate": "ix.api.loading",
    "Lab": "ix.api.lab",
    "Experiment": "ix.api.experiment",
    "ExperimentRun": "ix.api.experiment",
    "Observer": "ix.api.options",
    "RunOptions": "ix.api.options",
    "QueryResult": "ix.api.query",
    "run_query": "ix.api.query",
    "Rate": "ix.api.results",
    "ResultSet": "ix.api.results",
    "query_results": "ix.api.results",
    "SubjectTest": "ix.api.subjects",
    "add_subject": "ix.api.subjects",
    "get_subject": "ix.api.subjects",
    "list_subjects": "ix.api.subjects",
    "run_subject_test": "ix.api.subjects",
    "subjects_file": "ix.api.subjects",
    "ConfigError": "ix.domain.errors",
    "IxError": "ix.domain.errors",
    "NotFound": "ix.domain.errors",
    "RunBusy": "ix.domain.errors",
    "StorageError": "ix.domain.errors",
    "Overrides": "ix.engine.plan",
    "Plan": "ix.engine.plan",
    "Limits": "ix.engine.run",
    "RunResult": "ix.engine.run",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:  # a submodule: `api.design`, ...
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])


__all__ = [
    "ConfigError",
    "DesignError",
    "DesignWarning",
    "Experiment",
    "ExperimentInfo",
    "ExperimentRun",
    "IxError",
    "Lab",
    "Limits",
    "NotFound",
    "Observer",
    "Overrides",
    "Plan",
    "QueryResult",
    "Rate",
    "ResultSet",
    "RunBusy",
    "RunOptions",
    "RunResult",
    "StorageError",
    "SubjectTest",
    "add_subject",
    "arun",
    "check",
    "compare_runs",
    "design_warnings",
    "dry_run",
    "failure_exit_code",
    "get_subject",
    "list_experiments",
    "list_subjects",
    "load",
    "plan",
    "query_results",
    "resolve",
    "run",
    "run_query",
    "run_subject_test",
    "subject_credentials",
    "subjects_file",
    "validate",
]
