"""How `ix.api.run` runs (`RunOptions`) and who hears about it as it goes (`Observer`).

    class Printer(ix.api.Observer):
        def on_trial(self, record):
            print(record["subject"], record["probe_id"], record["trial"])

    ix.api.run(lab, ["skill-activation"], ix.api.Overrides(trials=3),
               options=ix.api.RunOptions(limits=ix.api.Limits(max_cost_usd=1.0)),
               observer=Printer())

`Overrides` (what runs: trials, seed, runtime, subjects, filters, ...) stay the third
argument, as in `validate` and `dry_run`; `RunOptions` say how and where it runs.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ix.api.design import DesignWarning
from ix.api.executors import check_executor
from ix.domain.errors import ConfigError
from ix.engine.cache import check_mode
from ix.engine.plan import Plan
from ix.engine.run import Limits

#: `RunOptions.continue_mode`: what continuing a run does (`ix run --resume/--retry-failed`).
CONTINUE_MODES = ("resume", "retry_failed")


@dataclass(frozen=True)
class RunOptions:
    """How a run runs; every field has the default of `ix run` without its flag.

    Invalid values raise `ConfigError` when the options are made (its `field` names the
    `ix run` flag, as every `ix.api` error does); a value of the wrong type, `TypeError`.
    """

    #: Also write one JSON file per artifact under <experiment>/artifacts/ (`--artifacts`).
    artifacts: bool = False
    #: The command line `spec.yaml` records (None: this process's `sys.argv`).
    command: Sequence[str] | None = None
    #: Continue a run instead of starting one: "resume" runs the trials not yet recorded,
    #: "retry_failed" re-runs the errored ones, with the overrides the run started with.
    continue_mode: Literal["resume", "retry_failed"] | None = None
    #: The run `continue_mode` continues (None: each experiment's latest).
    run_id: str | None = None
    #: When to stop scheduling (trials, cost, time, a stop event) and the circuit breaker.
    limits: Limits = field(default_factory=Limits)
    #: The lab's record/replay cache: "use", "refresh" or "replay" (None: no cache).
    cache: str | None = None
    #: Where trials run: "local" (this process) or "ray" (the cluster at `address`).
    executor: str = "local"
    address: str | None = None
    #: Refuse to run (`DesignError`) when a new run's design has warnings.
    strict: bool = False

    def __post_init__(self) -> None:
        for name in ("artifacts", "strict"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"RunOptions.{name} must be a bool, "
                                f"not {getattr(self, name)!r}")
        if not isinstance(self.limits, Limits):
            raise TypeError(f"RunOptions.limits must be an ix.api.Limits, not {self.limits!r}")
        if self.command is not None:
            if isinstance(self.command, str) or not all(isinstance(a, str)
                                                        for a in self.command):
                raise TypeError("RunOptions.command must be a list of strings (argv), "
                                f"not {self.command!r}")
            object.__setattr__(self, "command", list(self.command))
        if self.continue_mode is not None and self.continue_mode not in CONTINUE_MODES:
            raise ConfigError(f"unknown continue_mode {self.continue_mode!r}; allowed: "
                              f"{', '.join(CONTINUE_MODES)} (or None: a new run)",
                              field="--resume")
        if self.run_id is not None and self.continue_mode is None:
            raise ConfigError("--run names the run that --resume or --retry-failed continues "
                              "(set continue_mode)", field="--run")
        if self.cache is not None:
            check_mode(self.cache)
        check_executor(self.executor, self.address)


class Observer:
    """What a run tells as it goes. Subclass it and override what you want to hear; every
    method does nothing by default, except `on_design`, which says each warning through
    `on_warning`.

    Events come in order: `on_design` once per experiment starting a new run (all of them
    before anything runs), then for each experiment `on_plan` and an `on_trial` per completed
    trial; `on_warning` whenever something is skipped or repaired. `ix.api.arun` calls every
    method on its event loop's thread. A method that raises stops the run there (from
    `on_plan`: before its run starts).
    """

    def on_design(self, plan: Plan, warnings: list[DesignWarning]) -> None:
        """The design warnings of a new run's experiment (may be empty), before any runs."""
        for w in warnings:
            self.on_warning(f"{plan.loaded.config_file}: {w.field}: {w.message} [{w.code}]")

    def on_plan(self, plan: Plan) -> None:
        """An experiment's run is about to start (`plan.total` trials are planned)."""

    def on_trial(self, record: dict[str, Any]) -> None:
        """A trial was recorded: its line of `trials.jsonl`, as written."""

    def on_warning(self, message: str) -> None:
        """Something the command line prints as `ix: warning:` (a repaired torn line, ...)."""

    def on_step(self, message: str) -> None:
        """A step of a command made of several runs begins (`ix optimize`'s rounds)."""

    def on_pause(self, run_id: str, paused: bool) -> None:
        """The run was paused (`ix pause`, SIGTSTP: no new trial starts, the ones in flight
        finish) or continued (`ix continue`, SIGCONT)."""

    def on_batch(self, status: dict[str, Any]) -> None:
        """A `batch: true` subject's batch was submitted, answered more, or ended:
        `{subject, id, status: submitted | running | ended, requests, answered}`."""


def trial_listener(observer: Observer) -> "Callable[[dict[str, Any]], None] | None":
    """`observer.on_trial`, or None when it does nothing (the engine then makes no call per
    trial)."""
    if getattr(observer.on_trial, "__func__", None) is Observer.on_trial:
        return None
    return observer.on_trial
