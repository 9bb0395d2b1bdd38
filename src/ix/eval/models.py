"""Eval vocabulary (`002_…`): what is asked, what came back, and what it added up to.

Stimulus types (`EvalCase`, `EvalObservation`) and result types (`Verdict`, `ProbeResult`,
`ExperimentResults`) live together so that one file is the whole schema; the first two are
defined in `ix.domain.verdicts`, beside the rule that makes one from the other. The extra
fields that DESIGN.md adds (case `tags`/`difficulty`/`metadata`, observation `cost_usd`,
experiment `runtime`/`seed`/...) all have defaults, so every `002_…` construction still works.
"""

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from ix.domain.model import Model
from ix.domain.types import Subject
from ix.domain.verdicts import ProbeResult as ProbeResult  # the seed's import path too
from ix.domain.verdicts import Verdict as Verdict
from ix.domain.workspace import Workspace

Expectation = Literal["must_trigger", "should_not_trigger", "acceptable"]
EXPECTATIONS: tuple[str, ...] = ("must_trigger", "should_not_trigger", "acceptable")
Difficulty = Literal["easy", "medium", "hard"]
DIFFICULTIES: tuple[str, ...] = ("easy", "medium", "hard")
#: How trial seeds are derived (DESIGN.md §2): `common` to every subject (common random
#: numbers), or `per-subject`, the rule of runs made before it, to reproduce them.
Seeding = Literal["common", "per-subject"]
SEEDINGS: tuple[str, ...] = ("common", "per-subject")
#: Runtimes whose subjects choose a skill by reading the skills' descriptions and only activate
#: one they were given (the others fake the call: mock, random; or decide without them:
#: command, http, human, python).
SKILL_RUNTIMES = frozenset({"lexical", "claude-code", "anthropic", "openai"})

_frozen = ConfigDict(frozen=True)


class ToolCall(Model):
    """A tool invocation observed in an agent's response."""

    model_config = _frozen

    name: str
    input: dict[str, Any] = Field(default_factory=dict)


class HistoryToolCall(Model):
    """A tool call the assistant made earlier in a case's conversation, with its result."""

    model_config = _frozen

    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    result: str = ""


class Turn(Model):
    """One turn of the conversation before a case's prompt (DESIGN.md §7): the user's text,
    or the assistant's text and the tool calls it made."""

    model_config = _frozen

    role: Literal["user", "assistant"]
    content: str = ""
    tool_calls: tuple[HistoryToolCall, ...] = ()


class SimulatedUser(Model):
    """A case's `user:` (DESIGN.md §11): the experiment's `simulated_user` plays this person
    after the prompt, turn by turn, until it says `stop_when`, gives up, or `max_turns`."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    persona: str = ""
    goal: Annotated[str, Field(min_length=1)]
    #: the most replies of the subject (the prompt's included)
    max_turns: Annotated[int, Field(ge=1, le=100)] = 5
    #: what the user says, alone, when the goal is reached
    stop_when: Annotated[str, Field(min_length=1)] = "[DONE]"


class EvalCase(Model):
    """One case: the prompt sent verbatim and the behaviour expected of the subject, after
    the conversation in `history` (none: the prompt opens it)."""

    model_config = _frozen

    id: str
    prompt: str
    expectation: Expectation
    history: tuple[Turn, ...] = ()
    rationale: str = ""
    tags: tuple[str, ...] = ()
    difficulty: Difficulty | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    #: the files each trial of the case starts with, in a folder of its own (DESIGN.md §10);
    #: None: the subject gets no workspace
    workspace: Workspace | None = None
    #: the case's own checks (`checks:`: sensor specs the `case_checks` sensor runs)
    checks: tuple[dict[str, Any], ...] = ()
    #: a simulated user who goes on after the prompt (None: the prompt alone)
    user: SimulatedUser | None = None


class EvalObservation(Model):
    """What the subject did in response to a case's prompt.

    Every runtime fills `duration_ms`, `tokens_input`, `tokens_output` and `cost_usd` (0 where
    they do not apply). Capability runtimes add their own: `command` sets `exit_code`,
    `stdout`, `stderr`; `http` sets `status`, `headers`, `body`. `meta` holds other facts a
    runtime reports (model, turns, the skills it saw, denied calls). Fields left at `None` are
    not written to `trials.jsonl`. `trace` is the raw transcript: never written into
    `trials.jsonl`, but kept compressed beside the run.
    """

    model_config = _frozen

    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    duration_ms: int = 0
    tokens_input: int = 0
    tokens_output: int = 0
    cost_usd: float = 0.0
    exit_code: int | None = None
    stdout: str | None = None
    stderr: str | None = None
    status: int | None = None
    headers: dict[str, str] | None = None
    body: str | None = None
    meta: dict[str, Any] | None = None
    trace: Any = Field(default=None, exclude=True, repr=False)


class Experiment(Model):
    """An experiment as loaded from `experiment.yaml` + `cases/*.md`, fully resolved.

    `runtime` is the experiment-level runtime as a mapping with a `kind`; each subject's own
    resolved runtime sits in its `config["runtime"]`. `sensor` is the sensor kind and
    `sensor_options` its options (DESIGN.md §2). With `trials: auto`, `adaptive` is set,
    `trials` is the most a case may get (`max_trials`) and `min_trials` the fewest.
    """

    model_config = _frozen

    name: str
    description: str = ""
    subjects: tuple[Subject, ...] = ()
    sensor: str = "activation"
    trials: int = 5
    cases: tuple[EvalCase, ...] = ()
    skill: str | None = None
    sensor_options: dict[str, Any] = Field(default_factory=dict)
    runtime: dict[str, Any] = Field(default_factory=lambda: {"kind": "claude-code"})
    seed: int = 0
    seeding: Seeding = "common"
    concurrency: int | None = None
    timeout_s: float = 120.0
    goal: dict[str, Any] | None = None
    adaptive: bool = False      # trials: auto — `trials` is then the maximum per case
    min_trials: int = 2
    prior: str = "uniform"      # the Beta prior of every rate interval: uniform or jeffreys


class ExperimentResults(Model):
    """Everything one subject's run added up to; metrics and interpretation are flat fields."""

    model_config = _frozen

    experiment_name: str
    probe_results: tuple[ProbeResult, ...] = ()
    #: None when undefined (an empty denominator: `ix.eval.scoring.compute_metrics`)
    precision: float | None = 0.0
    recall: float | None = 0.0
    f1: float | None = 0.0
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0
    status: str = "pending"
    issues: tuple[str, ...] = ()
    suggestions: tuple[str, ...] = ()
