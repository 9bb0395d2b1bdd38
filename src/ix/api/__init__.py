"""The programmatic API that the command line (and later the viewer and MCP server) share.

Every function takes plain arguments and returns plain data or frozen models; none prints.
Bad input raises `ix.domain.errors.ConfigError` before anything is written; every error a user
can fix is an `IxError` (the tree is drawn in `ix.domain.errors`).
"""

from ix.api.design import DesignError, DesignWarning, design_warnings
from ix.api.experiments import (
    ExperimentInfo,
    arun,
    check,
    compare_runs,
    dry_run,
    failure_exit_code,
    list_experiments,
    load,
    plan,
    resolve,
    run,
    subject_credentials,
    validate,
)
from ix.api.lab import Lab
from ix.api.options import Observer, RunOptions
from ix.api.query import QueryResult, run_query
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
from ix.engine.plan import Overrides
from ix.engine.run import Limits, RunResult

__all__ = [
    "ConfigError",
    "DesignError",
    "DesignWarning",
    "ExperimentInfo",
    "IxError",
    "Lab",
    "Limits",
    "NotFound",
    "Observer",
    "Overrides",
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
