"""What the pytest plugin sets for a session (`--ix-lab`, `--ix-rerun/--ix-no-rerun`) and
what the assertions tell it (one `Asserted` per assertion, for the "ix verdicts" section).

Outside pytest nothing is set: the lab is found as `ix` finds it and experiments are run.
"""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Asserted:
    """One assertion's outcome, as the terminal summary prints it: `word` is the goal's
    verdict (`SUPPORTED`, `REFUTED`, `INCONCLUSIVE`, `NO GOAL`) or, for a metric's
    threshold, `MET` / `NOT MET`; `text` the effect or the metric with its interval."""

    experiment: str
    word: str
    text: str
    run_id: str
    passed: bool

    def line(self) -> str:
        return f"{self.word:<12} {self.experiment}: {self.text} (run {self.run_id})"


@dataclass
class Session:
    #: `--ix-lab` (None: found from the working folder, as `ix` finds it).
    lab: str | Path | None = None
    #: `--ix-rerun` / `--ix-no-rerun` (None: run, the default outside pytest).
    rerun: bool | None = None
    #: Hears each assertion made (the plugin collects them per test).
    heard: Callable[[Asserted], None] | None = None


#: The one session; the plugin sets its fields at configure and clears them at unconfigure.
SESSION = Session()


def tell(asserted: Asserted) -> None:
    if SESSION.heard is not None:
        SESSION.heard(asserted)
