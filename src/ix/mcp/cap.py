"""The most trials one `run_experiment` call may start, so that a model driving `ix mcp`
cannot start a run that goes on until someone kills the server (docs/mcp.md).

The limit comes from whoever starts the server (`ix mcp --max-trials N`, else
`$IX_MCP_MAX_TRIALS`, else 10,000), never from the lab's files, which the model may edit.
"""

import os
from collections.abc import Mapping
from typing import Any

from ix import api

#: Trials one call may start when neither the flag nor the environment says otherwise.
DEFAULT_MAX_TRIALS = 10_000
MAX_TRIALS_ENV = "IX_MCP_MAX_TRIALS"


def max_trials(flag: int | None = None, env: Mapping[str, str] | None = None) -> int:
    """The limit: `--max-trials` > `$IX_MCP_MAX_TRIALS` > `DEFAULT_MAX_TRIALS`."""
    if flag is not None:
        if flag < 1:
            raise api.ConfigError(f"must be a whole number >= 1, got {flag}",
                                  field="--max-trials")
        return flag
    raw = (os.environ if env is None else env).get(MAX_TRIALS_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_TRIALS
    try:
        value = int(raw.replace("_", ""))
    except ValueError:
        value = 0
    if value < 1:
        raise api.ConfigError(f"must be a whole number >= 1, got {raw!r}",
                              field=f"${MAX_TRIALS_ENV}")
    return value


def check(plan: Any, budget: int | None, limit: int) -> None:
    """Refuse a plan (`ix.api` builds it) that would start more than `limit` trials, or plan
    more per case (a run's summary grows with its trials per case, whatever `budget` stops it
    at): the error says the count, the limit and the ways out. (Trials in flight never
    outnumber the trials to run: the engine sees to that.)"""
    per_case = f"{'up to ' if plan.adaptive else ''}{plan.trials:,}"
    cases, subjects = len(plan.cases), len(plan.subjects)
    planned = plan.total if budget is None else min(plan.total, budget)
    raise_it = (f"restart the server with a higher limit: ix mcp --max-trials N (or "
                f"{MAX_TRIALS_ENV}=N)")
    if plan.trials > limit:
        raise api.ConfigError(
            f"{per_case} trials per case is more than this server allows in one call "
            f"({limit:,}), whatever budget.max_trials says; ask for fewer, or {raise_it}",
            field="trials")
    if planned > limit:
        raise api.ConfigError(
            f"this call would start {planned:,} trials ({per_case} per case x {cases:,} "
            f"case{'s' * (cases != 1)} x {subjects:,} subject{'s' * (subjects != 1)}), more "
            f"than this server allows in one call ({limit:,}); ask for fewer (trials, "
            f"filters, subjects), or give budget.max_trials (at most {limit:,}; `ix run "
            f"--resume` continues the run later), or {raise_it}", field="trials")
