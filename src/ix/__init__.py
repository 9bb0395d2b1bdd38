"""ix: experiments on stochastic subjects, with statistics that are right at small N.

`import ix` is cheap; `ix.Lab`, `ix.Experiment`, `ix.ResultSet`, ... import the API on first
use:

    lab = ix.Lab("my-lab")
    lab.results.query(subject="claude-sonnet", since="7d").activation_rate()
"""

from typing import TYPE_CHECKING, Any

from ix._version import __version__

_API = ("Experiment", "ExperimentRun", "Lab", "QueryResult", "Rate", "ResultSet",
        "query_results", "run_query")

if TYPE_CHECKING:
    from ix.api import (
        Experiment,
        ExperimentRun,
        Lab,
        QueryResult,
        Rate,
        ResultSet,
        query_results,
        run_query,
    )


def __getattr__(name: str) -> Any:
    if name in _API:
        import ix.api

        return getattr(ix.api, name)
    raise AttributeError(f"module 'ix' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])


__all__ = ["Experiment", "ExperimentRun", "Lab", "QueryResult", "Rate", "ResultSet",
           "__version__", "query_results", "run_query"]
