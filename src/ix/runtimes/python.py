"""`python`: a runtime object handed to `ix.Experiment` in code (`ix.eval.live`).

Anything with `async invoke(subject, stimulus, *, seed, attempt)` returning an
`EvalObservation` (or a mapping of its fields). It gets each case's history with the stimulus,
as it likes; ix cannot see what it does with it, so a case history is passed, not refused.
"""

from typing import Any

from ix.domain.ports import ExperimentRuntime
from ix.eval.live import KIND, LiveOptions, live
from ix.runtimes.registry import RuntimeContext, RuntimeKind, register


def _build(options: LiveOptions, context: RuntimeContext) -> ExperimentRuntime:
    found: Any = live(options, "runtime")
    return found  # type: ignore[no-any-return]


register(RuntimeKind(KIND, LiveOptions, _build, default_concurrency=8,
                     summary="a runtime object given to ix.Experiment in Python",
                     history="sent"))
