"""The JSON ix writes to disk, as pydantic models: a `trials.jsonl` line and a run's summary.

These models are the documentation of the files (DESIGN.md §3, §4; docs/json.md) and the
source of `ix schema trial` and `ix schema summary`. They describe what the engine writes,
and the tests validate real files against them, so a change to either side breaks a test.
Objects are closed (`additionalProperties: false`) except where the data is free-form by
design: an observation's `meta`, a reading's `metrics`.

Versioning (docs/json.md): `SCHEMA_VERSION` is MAJOR.MINOR; MINOR grows when a field is
added, MAJOR when one is removed, renamed or changes type or meaning.
"""

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = "1.1"

Expectation = Literal["must_trigger", "should_not_trigger", "acceptable"]
#: A credible interval [low, high]; null ends when there is nothing to estimate.
Interval = Annotated[list[float | None], Field(min_length=2, max_length=2)]


class Closed(BaseModel):
    """An object with exactly these keys (`additionalProperties: false`). Built on first use
    (`defer_build`): most commands import these models and never validate with them."""

    model_config = ConfigDict(extra="forbid", defer_build=True)


# --------------------------------------------------------------------------- trials.jsonl

#: A count ix writes (tokens, a trial seed): from 0, and small enough for a signed 64-bit
#: integer (the query layer's BIGINT); a trial seed is 8 bytes of a hash shifted right by one.
Count = Annotated[int, Field(ge=0, lt=2**63)]
#: A measured amount (milliseconds, dollars): from 0 and finite (JSON has no NaN or infinity).
Amount = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class ToolCallOut(Closed):
    name: str
    input: dict[str, Any] = Field(default_factory=dict)


class ObservationOut(Closed):
    """What the subject did (`EvalObservation`); the capability fields only where they
    apply (absent, never null)."""

    content: str = ""
    tool_calls: list[ToolCallOut] = Field(default_factory=list)
    duration_ms: Amount = 0
    tokens_input: Count = 0
    tokens_output: Count = 0
    cost_usd: Amount = 0.0
    exit_code: int | None = None
    stdout: str | None = None
    stderr: str | None = None
    status: int | None = None
    headers: dict[str, str] | None = None
    body: str | None = None
    meta: dict[str, Any] | None = Field(None, description="other facts the runtime reports")


class ReadingOut(Closed):
    """What one sensor measured on the trial."""

    sensor_name: str
    passed: bool
    score: Annotated[float, Field(allow_inf_nan=False)] | None = None
    metrics: dict[str, Any] = Field(default_factory=dict)
    details: str = ""


class TrialErrorOut(Closed):
    kind: str = Field(description="timeout, runtime_error, rate_limited, cache_miss, ...")
    message: str


class TrialLine(Closed):
    """One line of `<experiment>/results/trials.jsonl`: one attempt of one trial."""

    run_id: str
    experiment: str
    subject: str
    probe_id: str
    trial: Annotated[int, Field(ge=0)]
    seed: Count | None = Field(description="the derived trial seed (null for some imports)")
    attempt: Annotated[int, Field(ge=0)]
    expectation: Expectation
    started_at: str = Field(description="ISO-8601 UTC, milliseconds, Z")
    duration_ms: Amount
    observation: ObservationOut | None = Field(description="null when the trial errored")
    reading: ReadingOut | None = Field(description="the first sensor's reading; null when "
                                                   "the trial errored")
    error: TrialErrorOut | None
    readings: list[ReadingOut] | None = Field(None, description="every sensor's reading, "
                                                                "when there are several")
    trace: str | None = Field(None, description="the gzipped transcript, relative to the lab")


# --------------------------------------------------------------------------- summary

class ProbeResultOut(Closed):
    probe_id: str
    expectation: Expectation
    score: float | None = Field(description="activation rate over the valid trials")
    score_ci: Interval | None
    correct: bool | None = Field(description="the majority vote matches the expectation")
    trials: list[Any] = Field(description="always empty: the trials are in trials.jsonl")
    n: int = Field(description="valid (not errored) trials")
    passed: int
    errors: int
    stopped: Literal["settled", "max_trials", "cancelled"] | None = Field(
        None, description="trials: auto only: why the case stopped")
    routes: list["RouteOut"] | None = Field(
        None, description="activation sensor only: the valid trials each skill took first "
                          "(skill null: none), the most taken first; absent before 1.1")


class RouteOut(Closed):
    skill: str | None = Field(description="the first skill invoked; null: no skill")
    trials: int


class RoutingRowOut(Closed):
    expectation: Expectation
    cases: int
    trials: int = Field(description="valid trials of the expectation's cases")
    target: int = Field(description="trials whose first skill invoked was the skill under test")
    other: dict[str, int] = Field(description="other skill -> trials it took first")
    none: int = Field(description="trials that invoked no skill")


class RoutingOut(Closed):
    target: str = Field(description="the skill under test")
    expectations: list[RoutingRowOut]


class MetricsOut(Closed):
    precision: float
    recall: float
    f1: float
    tp: int
    fp: int
    fn: int
    tn: int
    precision_ci: Interval
    recall_ci: Interval
    f1_ci: Interval
    specificity: float | None = Field(
        None, description="TN/(TN+FP) over the should_not cases' majority votes; null without "
                          "such cases; absent in summaries written before it")
    specificity_ci: Interval | None = Field(None, description="from Beta(TN+1, FP+1)")


class TrialRateOut(Closed):
    rate: float | None
    n_trials: int
    n_cases: int
    se_naive: float | None
    se_clustered: float | None
    ci: Interval


class TrialLevelOut(Closed):
    must_trigger: TrialRateOut
    should_not_trigger: TrialRateOut
    correct: TrialRateOut


class ReliabilityOut(Closed):
    icc: float | None = Field(description="one-way ANOVA intraclass correlation of the trials "
                                          "within cases; null when undefined")
    design_effect: float | None = Field(description="1 + (trials_per_case - 1) * icc")
    trials_per_case: float | None = Field(description="mean valid trials per case")
    n_cases: int


class ReliabilityGroupsOut(Closed):
    must_trigger: ReliabilityOut
    should_not_trigger: ReliabilityOut
    correct: ReliabilityOut


class UnsettledCase(Closed):
    probe_id: str
    expectation: Expectation
    passed: int
    n: int
    p_flip: float = Field(description="posterior probability that the majority vote would "
                                      "flip with unlimited further trials (> 0.2 here)")


class InterpretationOut(Closed):
    status: str = Field(description="excellent, good, needs_work or poor (by F1); no_data "
                                    "when no case had a valid trial")
    issues: list[str]
    suggestions: list[str]


class UsageOut(Closed):
    tokens_input: int
    tokens_output: int
    cost_usd: float


class SubjectBlock(Closed):
    """One subject's results (the top level of the summary repeats the control's)."""

    name: str
    description: str
    probe_results: list[ProbeResultOut]
    metrics: MetricsOut
    trial_level: TrialLevelOut
    pass_at_k: dict[str, float | None] = Field(description="k (a string) -> pass@k")
    pass_hat_k: dict[str, float | None] = Field(description="k (a string) -> pass^k")
    pass_at_k_ci: dict[str, Interval] = Field(
        default_factory=dict, description="k -> interval of pass@k (case-level Bayesian "
                                          "bootstrap); absent in summaries written before it")
    pass_hat_k_ci: dict[str, Interval] = Field(
        default_factory=dict, description="k -> interval of pass^k, the same way")
    reliability: ReliabilityGroupsOut | None = Field(
        None, description="between-case reliability of the trials; absent in summaries "
                          "written before it")
    unsettled: list[UnsettledCase] = Field(
        default_factory=list, description="cases whose majority vote is unsettled, the most "
                                          "uncertain first")
    interpretation: InterpretationOut
    errors: int
    trials: int
    usage: UsageOut
    routing: RoutingOut | None = Field(
        None, description="activation sensor only: which skill took the prompts, per "
                          "expectation; absent before 1.1")


class PairedTable(Closed):
    both: int
    control_only: int
    variant_only: int
    neither: int


class MetricComparison(Closed):
    control: float | None
    variant: float | None
    diff: float | None
    diff_median: float | None = Field(description="posterior median of variant − control")
    diff_ci: Interval = Field(description="credible interval; contains `diff` (one-sided on "
                                          "its side when the equal-tailed one would not)")
    p_variant_better: float | None
    p_value: float | None = Field(description="two-sided test of no difference: exact McNemar "
                                              "(recall, pass_rate), the case-level t-test "
                                              "(activation_rate), null for precision/F1")
    p_value_holm: float | None = Field(description="p_value, Holm-adjusted across variants")
    mcnemar_p: float | None
    mcnemar_p_holm: float | None
    role: Literal["primary", "exploratory"] = Field(
        description="primary: the goal's metric; exploratory: unadjusted for the number of "
                    "metrics read")
    paired: bool
    n: int = Field(description="cases (activation_rate, recall, pass_rate) or majority votes "
                               "counted by both subjects (precision, F1)")
    table: PairedTable | None = Field(None, description="recall and pass_rate only")


class Flip(Closed):
    probe_id: str
    expectation: Expectation
    control_score: float | None
    variant_score: float | None
    now: Literal["correct", "wrong"]


class SubjectComparison(Closed):
    control: str
    variant: str
    metrics: dict[str, MetricComparison] = Field(
        description="activation_rate, recall, precision, f1, pass_rate (the correct rate: "
                    "share of majority votes that match the expectation; docs/results.md, "
                    "Glossary)")
    flips: list[Flip]


class GoalEffect(Closed):
    metric: str
    control: float | None
    treatment: float | None
    diff: float | None
    diff_median: float | None = Field(description="posterior median of treatment − control")
    diff_ci: Interval
    paired: bool


class GoalSuggestion(Closed):
    """How many cases (`unit`) would settle an inconclusive goal if the true effect were
    `effect` (twice min_effect; `method` says what was assumed), and the probability that a
    run of that size settles it (`p_settle` = supported + refuted), from `simulations` seeded
    runs judged by ix's own rule."""

    cases: int | None
    current_cases: int
    trials_per_case: int
    method: str
    p_settle: float | None = None
    p_supported: float | None = None
    p_refuted: float | None = None
    simulations: int = 0
    unit: str | None = None
    effect: float | None = None


class GoalOut(Closed):
    """The goal of experiment.yaml and its verdict (null verdict: its subjects did not run)."""

    hypothesis: str
    metric: str
    compare: list[str]
    direction: Literal["increase", "decrease", "differ"]
    min_effect: float
    credibility: float
    verdict: Literal["supported", "refuted", "inconclusive"] | None
    p_supported: float | None = None
    p_refuted: float | None = None
    rule: str | None = None
    effect: GoalEffect | None = None
    suggestion: GoalSuggestion | None = None
    note: str | None = None


class StatisticsOut(Closed):
    level: float
    #: experiment.yaml `prior:`: the Beta prior of every rate interval
    prior: Literal["uniform", "jeffreys"] = "uniform"
    methods: dict[str, str]


class TrialsMode(Closed):
    mode: Literal["fixed", "auto"]
    min_trials: int | None = None
    max_trials: int | None = None
    credibility: float | None = None


class ErrorKindOut(Closed):
    kind: str
    count: int
    subjects: dict[str, int] = Field(description="errored trials of this kind per subject")
    example: str = Field(description="one message of this kind (the first 300 characters)")
    configuration: bool = Field(description="the lab's configuration or the machine's setup "
                                            "is the cause (a missing key, no skills, a "
                                            "program not found)")
    hint: str | None = Field(description="what to do about it, when ix knows")


class FailedSubjectOut(Closed):
    subject: str
    trials: int
    kind: str = Field(description="the most common error kind of its trials")
    count: int = Field(description="trials that errored with `kind`")
    example: str
    configuration: bool
    hint: str | None


class Summary(Closed):
    """`summary-latest.json`, `summary-<UTC>.json`, `runs/<run_id>/summary.json`, and what
    `ix run --json` prints: the `001_…` shape for the control, every subject under
    `subjects`, the comparisons and the goal's verdict."""

    schema_version: str | None = Field(None, description="of this schema; absent in "
                                                         "summaries written before it")
    experiment_name: str
    run_id: str
    run_status: Literal["completed", "cancelled", "failed"]
    subject: str = Field(description="the control (first subject)")
    probe_results: list[ProbeResultOut]
    metrics: MetricsOut
    interpretation: InterpretationOut
    trial_level: TrialLevelOut
    pass_at_k: dict[str, float | None]
    pass_hat_k: dict[str, float | None]
    pass_at_k_ci: dict[str, Interval] = Field(default_factory=dict)
    pass_hat_k_ci: dict[str, Interval] = Field(default_factory=dict)
    errors: int
    usage: UsageOut
    subjects: list[SubjectBlock]
    comparisons: list[SubjectComparison]
    goal: GoalOut | None
    statistics: StatisticsOut
    sensor: str
    seed: int | None
    trials_per_case: int
    trials_mode: TrialsMode
    started_at: str | None
    finished_at: str | None
    skipped_cases: list[str]
    stop_reason: str | None = Field(None, description="cancelled: why it stopped early, in "
                                                      "words")
    stop_cause: Literal["signal", "budget", "breaker"] | None = Field(
        None, description="cancelled only: a signal (Ctrl-C, a request), a budget "
                          "(--max-trials, --max-cost, --time-limit) or the circuit breaker; "
                          "absent before 1.1")
    reason: str | None = Field(None, description="failed only: why, and what to do; absent "
                                                 "before 1.1")
    failed_subjects: list["FailedSubjectOut"] = Field(
        default_factory=list, description="the subjects every trial of which errored (the "
                                          "run is then failed); absent before 1.1")
    errors_by_kind: list["ErrorKindOut"] = Field(
        default_factory=list, description="the errored trials by error kind, most frequent "
                                          "first; absent before 1.1")
    circuit_breaker: dict[str, str] | None = None
    imported_from: str | None = Field(None, description="ix import only")
    format: str | None = Field(None, description="ix import only")
