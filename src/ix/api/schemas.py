"""Every `--json` output of `ix`, as types, and their JSON Schemas (`ix schema`).

`SCHEMAS` names each document: the two files ix writes (`trial`, `summary`) and the output of
each command. The types of the files live in `ix.eval.schemas`, those of the reports in
`ix.report.schemas`, the rest here. The outputs are TypedDicts (`ClosedDict`): the functions
of `ix.api` that build them return them, so the type checker holds each to its keys, and
pydantic's `TypeAdapter` generates the schemas from them. docs/json.md documents them and the
versioning rule.
"""

from dataclasses import dataclass
from typing import Annotated, Any, Literal, NotRequired

from pydantic import Field, TypeAdapter

from ix.eval.schemas import (
    SCHEMA_VERSION,
    ClosedDict,
    Expectation,
    GoalReach,
    Interval,
    JudgeAgreementOut,
    JudgeEstimate,
    Summary,
)
from ix.report.schemas import CompareOutput, LeaderboardOutput, ReportOutput
from ix.store.trial_schema import ToolCallOut, TrialLine

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

# --------------------------------------------------------------------------- run, validate


class DryRunSubject(ClosedDict):
    name: str
    runtime: str | None
    model: str | None
    trials: int
    estimated_input_tokens: Annotated[int | None, Field(
        description="null for runtimes that spend no tokens (mock, lexical, command, ...)")]
    estimated_cost_usd: Annotated[float | None, Field(
        description="null for runtimes that spend no tokens; 0 when the model's price is "
                    "unknown; at the batch rate for `batch: true`")]
    batch: NotRequired[Annotated[bool, Field(
        description="the runtime sends its trials as batches (`batch: true`), billed at half "
                    "the standard rate")]]
    standard_cost_usd: NotRequired[Annotated[float | None, Field(
        description="with `batch`: what the same trials would cost at the standard rate")]]


class DryRunPlan(ClosedDict):
    experiment: str
    path: str
    cases: int
    skipped_acceptable: int
    trials_per_case: Annotated[str, Field(description="a number, or 'auto, up to N'")]
    total_trials: int
    concurrency: int
    filters: list[str]
    subjects: list[DryRunSubject]
    grid: NotRequired[Annotated[str | None, Field(
        None, description="with `sweep:` or `context:`: how the subjects were expanded, in "
                          "words (e.g. '2 model × 2 temperature = 4 conditions + base'); "
                          "absent before 1.3")]]


class DesignWarningOut(ClosedDict):
    code: Literal["too-few-cases", "no-control", "one-trial-stochastic",
                  "even-trials-stochastic", "unbalanced", "duplicate-prompt", "unseen-cases",
                  "never-activates", "unchecked-judge", "rfc-spelling"]
    message: str
    field: str


class SuggestionOut(ClosedDict):
    """A control suggestion of `ix validate` (never an error, under --strict too)."""

    code: Literal["no-skill-baseline", "near-miss-cases", "unswept-control"]
    message: str
    field: str
    examples: Annotated[list[str], Field(
        description="lines to start from: YAML to add, or a case file and its prompt idea")]


class ValidatedSubject(ClosedDict):
    name: str
    runtime: str
    runtime_source: Annotated[str, Field(
        description="where the runtime kind was chosen: --runtime, 'experiment.yaml <field>', "
                    "ix.yaml, 'built-in default', ...")]
    skills: list[str]
    target_skill: str
    credentials_env: Annotated[list[str], Field(
        description="the variables the runtime's credentials come from (any one); empty: none "
                    "needed")]
    credentials_present: Annotated[bool, Field(
        description="one of them is set (true when none is needed)")]


class Validated(ClosedDict):
    """An experiment that loads and plans; under --strict a design warning makes it fail."""

    experiment: str
    path: str
    ok: bool
    cases: int
    skipped_acceptable: int
    subjects: list[ValidatedSubject]
    trials_per_case: int
    total_trials: int
    concurrency: int
    warnings: list[DesignWarningOut]
    suggestions: NotRequired[Annotated[list[SuggestionOut], Field(
        description="control suggestions (since 2.5)")]]
    error: NotRequired[Annotated[str | None, Field(
        None, description="--strict only: why it fails")]]


class NotValid(ClosedDict):
    """An experiment that does not load or plan: its first problem, and all of them."""

    experiment: str
    path: str
    ok: Literal[False]
    error: str
    errors: Annotated[list[str], Field(
        description="every problem found, each 'file: field: message'")]


# --------------------------------------------------------------------------- ls, plan, new

class LsGoal(ClosedDict):
    verdict: Annotated[Literal["supported", "refuted", "inconclusive"] | None, Field(
        description="null: no verdict (the compared subjects did not run)")]
    metric: str | None
    compare: Annotated[list[str] | None, Field(description="[control, treatment]")]
    diff: Annotated[float | None, Field(description="treatment - control, on `metric`")]
    diff_ci: Interval
    relative: NotRequired[Annotated[bool, Field(
        False, description="a goal on a quantity with `relative: true`: `diff` is treatment "
                           "/ control - 1")]]


class LsMetric(ClosedDict):
    metric: Literal["f1"]
    subject: Annotated[str | None, Field(description="the control (the first subject)")]
    value: float | None
    ci: Interval


class ListedExperiment(ClosedDict):
    name: str
    path: str
    cases: Annotated[dict[str, int], Field(
        description="must_trigger, should_not_trigger, acceptable (empty when it does not load)")]
    subjects: list[str]
    last_run: str | None
    status: str | None
    f1: Annotated[float | None, Field(description="the control's F1 in the last run (headline)")]
    error: str | None
    last_run_at: NotRequired[Annotated[str | None, Field(
        None, description="when the last run finished (ISO 8601, UTC), else when it started")]]
    goal: NotRequired[Annotated[LsGoal | None, Field(
        None, description="the last run's goal verdict; null without a goal or a summary")]]
    headline: NotRequired[Annotated[LsMetric | None, Field(
        None, description="the control's F1 with its interval in the last run's summary")]]


class LsOutput(ClosedDict):
    lab: str
    experiments: list[ListedExperiment]


class WidthAnswer(ClosedDict):
    question: Literal["width"]
    n: int
    achieved_interval: Interval
    assumptions: list[str]


class IndependentAnswer(ClosedDict):
    question: Literal["independent"]
    n_per_subject: int
    assumptions: list[str]


class MdeForCases(ClosedDict):
    cases: int
    mde: float


class PairedAnswer(ClosedDict):
    question: Literal["paired"]
    trials_per_case: int
    metric: Annotated[str, Field(description="what the difference is a difference of, in words")]
    n_cases: NotRequired[Annotated[int | None, Field(None)]]
    mde: NotRequired[Annotated[float | None, Field(None)]]
    mde_for_cases: NotRequired[Annotated[MdeForCases | None, Field(None)]]
    assumptions: list[str]


class GoalAnswer(ClosedDict):
    """How many cases settle the experiment's goal, simulated with ix's own rule (a `note`
    instead when there is nothing to plan: min_effect 0 and no --effect)."""

    question: Literal["goal"]
    cases: Annotated[int | None, Field(
        description="the metric's cases (`unit`) that settle the goal with probability >= target; "
                    "null: none up to `simulated_cases`")]
    assumptions: list[str]
    note: NotRequired[Annotated[str | None, Field(None)]]
    compare: NotRequired[Annotated[list[str] | None, Field(
        None, description="the goal's control and treatment, names whole: the pair sized")]]
    metric: NotRequired[Annotated[str | None, Field(None)]]
    direction: NotRequired[Annotated[str | None, Field(None)]]
    min_effect: NotRequired[Annotated[float | None, Field(None)]]
    credibility: NotRequired[Annotated[float | None, Field(None)]]
    effect: NotRequired[Annotated[float | None, Field(
        None, description="the true effect planned for, capped at the room the control "
                          "leaves")]]
    effect_asked: NotRequired[Annotated[float | None, Field(
        None, description="the effect asked for, when `effect` is capped; else null")]]
    trials_per_case: NotRequired[Annotated[int | None, Field(None)]]
    unit: NotRequired[Annotated[str | None, Field(None)]]
    target: NotRequired[Annotated[float | None, Field(None)]]
    criterion: NotRequired[Annotated[str | None, Field(
        None, description="what the size is for, as `ix validate` and a run's suggestion "
                          "name theirs")]]
    reachable: NotRequired[Annotated[GoalReach | None, Field(
        None, description="which verdicts the control leaves reachable, and why")]]
    p_settle: NotRequired[Annotated[float | None, Field(
        None, description="P(supported or refuted) at `cases`")]]
    p_supported: NotRequired[Annotated[float | None, Field(None)]]
    p_refuted: NotRequired[Annotated[float | None, Field(None)]]
    simulations: NotRequired[Annotated[int | None, Field(None)]]
    simulated_cases: NotRequired[Annotated[int | None, Field(None)]]
    t_start: NotRequired[Annotated[int | None, Field(
        None, description="the one-sided t approximation's size")]]


class FromRun(ClosedDict):
    summary: str
    scope: NotRequired[Annotated[Literal["must", "not"] | None, Field(
        None, description="an activation experiment's values are of its must_trigger "
                          "(\"must\") or should_not_trigger (\"not\") cases alone; null: every "
                          "case")]]
    p: float
    sigma2_a: float
    sigma2_b: float
    omega2: float
    cases: int
    trials: int
    notes: list[str]


class FromDesign(ClosedDict):
    """Before an experiment's first run, `ix plan` plans from its design (since 1.2)."""

    experiment: str
    cases: int
    trials: int
    notes: list[str]
    scope: NotRequired[Annotated[Literal["must", "not"] | None, Field(
        None, description="an activation experiment's values are of its must_trigger "
                          "(\"must\") or should_not_trigger (\"not\") cases alone; null: every "
                          "case")]]


class PlanOutput(ClosedDict):
    answers: list[Annotated[WidthAnswer | IndependentAnswer | PairedAnswer | GoalAnswer,
                            Field(discriminator="question")]]
    from_run: NotRequired[Annotated[FromRun | None, Field(None)]]
    from_design: NotRequired[Annotated[FromDesign | None, Field(None)]]


class NewOutput(ClosedDict):
    name: str
    path: str
    files: list[str]


# --------------------------------------------------------------------------- results, query

class ResultRow(ClosedDict):
    """One trial of `ix results --json` (the columns of docs/queries.md)."""

    experiment: str
    run_id: str
    subject: str
    probe_id: str
    trial: int
    seed: int | None
    attempt: int
    expectation: Expectation
    passed: bool | None
    score: float | None
    correct: bool | None
    outcome: NotRequired[Annotated[Literal["right", "wrong"] | None, Field(
        None, description="the trial's outcome against its case's expectation (`correct` in "
                          "words); null for acceptable cases and errored trials")]]
    sensor: str | None
    error: str | None
    error_message: str | None
    tokens_input: int | None
    tokens_output: int | None
    tokens: int | None
    cost: float | None
    duration: float | None
    started_at: str | None
    invoked: Annotated[list[str], Field(
        description="the skills the trial invoked (Skill calls), each once, in order")]
    first_invoked: Annotated[str | None, Field(
        description="the first of them: the skill that took the prompt; null when none")]
    tags: list[str]
    difficulty: Literal["easy", "medium", "hard"] | None
    difficulty_level: int | None
    variant_of: NotRequired[Annotated[str | None, Field(
        None, description="the case file a `variants:` case was expanded from")]]
    paraphrase_of: NotRequired[Annotated[str | None, Field(
        None, description="the case a `probe: paraphrase` case rewords")]]
    family: NotRequired[Annotated[str | None, Field(
        None, description="the original at the root of those, else the case's own id")]]


class AggregateRow(ClosedDict):
    """One group of `ix results --group-by ... --json` (or `--stats`: one row)."""

    experiment: NotRequired[Annotated[str | None, Field(None)]]
    run_id: NotRequired[Annotated[str | None, Field(None)]]
    subject: NotRequired[Annotated[str | None, Field(None)]]
    probe_id: NotRequired[Annotated[str | None, Field(None)]]
    tag: NotRequired[Annotated[str | None, Field(None)]]
    difficulty: NotRequired[Annotated[str | None, Field(None)]]
    expectation: NotRequired[Annotated[str | None, Field(None)]]
    first_invoked: NotRequired[Annotated[str | None, Field(
        None, description="--group-by invoked: the first skill the trials invoked; null: none")]]
    family: NotRequired[Annotated[str | None, Field(
        None, description="--group-by family: the original the cases were generated from")]]
    n: int
    errors: int
    valid: int
    passed: int
    cases: Annotated[int, Field(description="distinct cases (experiment, case id)")]
    families: NotRequired[Annotated[int, Field(
        description="distinct families (experiment, family): the clusters of the intervals "
                    "(= cases unless cases were generated from one original)")]]
    activation_rate: Annotated[float | None, Field(
        description="passed / valid: share of valid trials in which the skill fired, every "
                    "case pooled (see activation_rate_must / _not)")]
    activation_rate_lo: float | None
    activation_rate_hi: float | None
    valid_must: NotRequired[Annotated[int, Field(
        description="valid trials of must_trigger cases")]]
    passed_must: NotRequired[Annotated[int, Field(
        description="those in which the skill fired")]]
    activation_rate_must: NotRequired[Annotated[float | None, Field(
        None, description="passed_must / valid_must: the activation rate (must)")]]
    activation_rate_must_lo: NotRequired[Annotated[float | None, Field(None)]]
    activation_rate_must_hi: NotRequired[Annotated[float | None, Field(None)]]
    valid_not: NotRequired[Annotated[int, Field(
        description="valid trials of should_not_trigger cases")]]
    passed_not: NotRequired[Annotated[int, Field(
        description="those in which the skill fired")]]
    activation_rate_not: NotRequired[Annotated[float | None, Field(
        None, description="passed_not / valid_not: the activation rate (not)")]]
    activation_rate_not_lo: NotRequired[Annotated[float | None, Field(None)]]
    activation_rate_not_hi: NotRequired[Annotated[float | None, Field(None)]]
    votes: Annotated[int, Field(
        description="majority votes: run x subject x must/should-not case with a valid trial")]
    correct: Annotated[int, Field(description="votes that match the expectation")]
    correct_rate: Annotated[float | None, Field(description="correct / votes")]
    correct_rate_lo: float | None
    correct_rate_hi: float | None
    score_mean: float | None
    score_std: float | None
    score_p50: float | None
    score_p90: float | None
    score_p99: float | None
    duration_mean: float | None
    duration_std: float | None
    duration_p50: float | None
    duration_p90: float | None
    duration_p99: float | None
    tokens_mean: float | None
    tokens_std: float | None
    tokens_p50: float | None
    tokens_p90: float | None
    tokens_p99: float | None
    cost_mean: float | None
    cost_std: float | None
    cost_p50: float | None
    cost_p90: float | None
    cost_p99: float | None
    tokens_sum: int | None
    cost_sum: float | None
    score_difficulty_r: NotRequired[Annotated[float | None, Field(None)]]
    score_difficulty_lo: NotRequired[Annotated[float | None, Field(None)]]
    score_difficulty_hi: NotRequired[Annotated[float | None, Field(None)]]
    score_difficulty_n: NotRequired[Annotated[int | None, Field(None)]]
    score_difficulty_method: NotRequired[Annotated[Literal["pearson", "spearman"] | None,
                                                   Field(None)]]


# --------------------------------------------------------------------------- export, import

class ExportOutput(ClosedDict):
    run_id: str
    experiment: str
    format: str
    out: str
    files: list[str]
    trials: int


class ImportOutput(ClosedDict):
    run_id: str
    experiment: str
    experiment_dir: str
    created_experiment: bool
    format: str
    source: str
    trials: int
    subjects: list[str]
    cases: int
    unknown_cases: list[str]
    run_dir: str


class CasesImported(ClosedDict):
    """`ix cases import`: the case files written (with --dry-run: that would be)."""

    experiment: str
    experiment_dir: str
    folder: str
    source: str
    format: str
    cases: int
    written: list[str]
    overwritten: list[str]
    unmapped_columns: list[str]
    dry_run: bool


# --------------------------------------------------------------------------- tag, annotate

class Tagged(ClosedDict):
    tag: str
    run: str
    experiment: str
    moved_from: str | None
    unchanged: bool


class TagEntry(ClosedDict):
    tag: str
    run: str
    experiment: str
    folder: str
    tagged_at: str
    tagged_by: str


class TagDeleted(ClosedDict):
    tag: str
    run: str
    experiment: str
    deleted: Literal[True]


class AnnotationAdded(ClosedDict):
    run: str
    experiment: str
    at: str
    user: NotRequired[Annotated[str | None, Field(None)]]
    host: NotRequired[Annotated[str | None, Field(None)]]
    case: str | None
    text: str


class AnnotationLine(ClosedDict):
    at: str
    user: NotRequired[Annotated[str | None, Field(None)]]
    host: NotRequired[Annotated[str | None, Field(None)]]
    case: str | None
    text: str


class AnnotationList(ClosedDict):
    run: str
    experiment: str
    annotations: list[AnnotationLine]


# --------------------------------------------------------------------------- batch, cache

class BatteryRun(ClosedDict):
    experiment: str
    seed: int
    subjects: list[str]
    trials: int


class BatteryPlan(ClosedDict):
    battery: str
    runs: list[BatteryRun]


class BatteryRow(ClosedDict):
    experiment: str
    seed: int | None
    run_id: str
    status: str
    subject: str
    f1: Annotated[float | None, Field(description="null where undefined (no TP, FP or FN)")]
    f1_ci: Interval | None
    precision: Annotated[float | None, Field(
        description="null with no predicted positive (never 0)")]
    recall: float | None
    trials: int
    errors: int
    cost_usd: float
    goal: str | None


class BatteryVerdict(ClosedDict):
    experiment: str
    seed: int | None
    run_id: str
    status: str
    reason: Annotated[str | None, Field(description="why the run failed or was cancelled")]
    goal: Literal["supported", "refuted", "inconclusive"] | None
    verdict: Annotated[str | None, Field(
        description="the goal's verdict line (`REFUTED — goal: …`); null without a goal")]


class SeedValue(ClosedDict):
    seed: int | None
    value: float | None


class SeedSpread(ClosedDict):
    min: float | None
    max: float | None
    range: float | None
    sd: Annotated[float | None, Field(description="sample standard deviation of the seeds' values")]


class PooledSeeds(ClosedDict):
    """One experiment × subject over the battery's seeds (docs/running.md, "Batteries")."""

    experiment: str
    subject: str
    metric: str
    value: float | None
    ci: Interval
    level: float
    interval: Literal["case votes", "clustered by case"]
    method: str
    estimand: NotRequired[Annotated[str, Field(
        description="what `value` estimates: with case votes, the metric of one majority "
                    "vote per case over all seeds' trials, a different quantity from the "
                    "per-seed values (see seed_mean)")]]
    seed_mean: NotRequired[Annotated[float | None, Field(
        None, description="the mean of the seeds' own values (per_seed), each a K-trial "
                          "quantity; null when no seed has a value")]]
    cases: int
    seeds: int
    per_seed: list[SeedValue]
    spread: SeedSpread


class BatteryOutput(ClosedDict):
    folder: str
    battery: str
    runs: int
    completed: int
    verdicts: list[BatteryVerdict]
    pooled: list[PooledSeeds]
    rows: list[BatteryRow]


class JudgeCheckOutput(ClosedDict):
    experiment: str
    run_id: str
    labels: Annotated[int, Field(description="labels in the set (the latest of each)")]
    labels_file: str
    judges: list[JudgeAgreementOut]


class CalibrateProxy(ClosedDict):
    name: Annotated[str, Field(description="the proxy's name: a subject, registry subject or "
                                           "runtime kind, or the kind of a mapping")]
    as_given: Annotated[str, Field(description="as spelt (`proxy:` or --proxy); a mapping as "
                                               "JSON")]
    runtime: Annotated[dict[str, Any], Field(description="the runtime it ran with for the "
                                                         "subject")]


class CalibrateCase(ClosedDict):
    probe_id: str
    expectation: str
    subject_rate: float | None
    proxy_rate: float | None
    subject_verdict: Annotated[bool, Field(description="majority vote: rate above 1/2")]
    proxy_verdict: bool


class CalibrateAgreement(ClosedDict):
    """The proxy's case verdicts against the subject's, as a judge's against people's."""

    compared: Annotated[int, Field(description="cases with a valid trial of both")]
    agreed: int
    tp: int
    fn: int
    fp: int
    tn: int
    accuracy: JudgeEstimate
    sensitivity: Annotated[JudgeEstimate, Field(description="proxy passes among the "
                                                            "subject's passes")]
    specificity: Annotated[JudgeEstimate, Field(description="proxy fails among the "
                                                            "subject's fails")]
    kappa: JudgeEstimate
    rate_correlation: Annotated[JudgeEstimate | None, Field(
        description="Spearman's rho of the per-case rates; null below two cases")]
    cases: list[CalibrateCase]


class CalibrateCandidate(ClosedDict):
    name: str
    subject: Annotated[float | None, Field(description="mean right rate by the subject")]
    proxy: Annotated[float | None, Field(description="mean right rate by its proxy twin")]


class CalibrateRanking(ClosedDict):
    candidates: list[CalibrateCandidate]
    cases: int
    tau: Annotated[JudgeEstimate | None, Field(
        description="Kendall's tau-b of the two orders; null with `note`")]
    note: Annotated[str | None, Field(description='"not enough candidates: N" below 3')]


class CalibrateThresholds(ClosedDict):
    min_kappa: float
    min_kappa_low: float


class CalibrateCost(ClosedDict):
    subject: float
    proxy: float


class CalibrateTime(ClosedDict):
    subject: float | None
    proxy: float | None


class CalibrateOutput(ClosedDict):
    """`ix calibrate --json` (docs/subjects.md, "Proxy subjects")."""

    schema_version: str
    experiment: str
    verdict: Annotated[str, Field(description="the answer in one line")]
    good_enough: Annotated[bool | None, Field(
        description="good enough to screen; null when the subject's verdicts are all one "
                    "class")]
    status: Literal["completed", "cancelled", "failed"]
    subject: str
    proxy: CalibrateProxy
    run_id: str
    run_dir: str
    seed: int
    n: Annotated[int, Field(description="cases sampled")]
    trials: int
    thresholds: CalibrateThresholds
    cost_usd: Annotated[CalibrateCost, Field(description="the candidates' and their twins' "
                                                         "cost in the run")]
    duration_ms: Annotated[CalibrateTime, Field(description="the subject's and the proxy's mean "
                                                          "time per trial")]
    agreement: CalibrateAgreement
    ranking: CalibrateRanking


class LabelsImported(ClosedDict):
    experiment: str
    added: int
    labels_file: str


class CacheStatsOutput(ClosedDict):
    lab: str
    path: str
    entries: int
    bytes: int
    shards: int


class CacheClearOutput(ClosedDict):
    lab: str
    path: str
    removed: int


# --------------------------------------------------------------------------- subjects, view

class RegistrySubject(ClosedDict):
    name: str
    source: str
    description: str
    runtime: dict[str, Any]
    model: str | None
    skills: list[str]
    config: dict[str, Any]


class SubjectsListOutput(ClosedDict):
    file: str
    subjects: list[RegistrySubject]


class SubjectAdded(RegistrySubject):
    replaced: bool


class SubjectTestOutput(ClosedDict):
    name: str
    runtime: str
    model: str | None
    ok: bool
    latency_ms: float
    answer: str | None
    tool_calls: list[ToolCallOut]
    error: dict[str, str] | None
    notes: list[str]


class ViewOutput(ClosedDict):
    url: str
    lab: str


# --------------------------------------------------------------------------- plugins

class PluginEntry(ClosedDict):
    """An installed plugin. `shadowed`: a built-in kind of that name wins; `loads` and `error`
    are set by `--check` (null without it)."""

    group: Literal["runtime", "sensor", "probe", "scorer", "reporter"]
    name: str
    distribution: str | None
    version: str | None
    target: str
    shadowed: bool
    loads: bool | None
    error: str | None


class PluginsOutput(ClosedDict):
    plugins: list[PluginEntry]


# --------------------------------------------------------------------------- optimize

class OptimizeMetrics(ClosedDict):
    f1: float | None
    f1_ci: Interval | None
    precision: float | None
    recall: float | None
    tp: int
    fp: int
    fn: int
    tn: int


class OptimizeSubjectScore(OptimizeMetrics):
    subject: str


class OptimizeMiss(ClosedDict):
    id: str
    prompt: str
    expectation: Expectation
    activation_rate: float
    took: str | None


class OptimizeScore(ClosedDict):
    f1: float
    subjects: list[OptimizeSubjectScore]
    misses: list[OptimizeMiss]


class OptimizeOriginal(ClosedDict):
    id: Literal["original"]
    description: str
    train: OptimizeScore | None
    run_id: NotRequired[str]


class OptimizeProxyScore(ClosedDict):
    f1: float
    subjects: list[OptimizeSubjectScore]
    run_id: str


class OptimizeCandidate(ClosedDict):
    id: str
    description: str
    round: int
    file: str
    train: Annotated[OptimizeScore | None, Field(
        description="the real subjects' train scores; null for a candidate screened out by "
                    "the proxy (--screen-with), which never ran on them")]
    proxy: NotRequired[Annotated[OptimizeProxyScore, Field(
        description="with --screen-with: the proxy's train F1, which ranked the candidate")]]


class OptimizeRankEntry(ClosedDict):
    id: str
    proxy_f1: float


class OptimizeRoundScreen(ClosedDict):
    """A round screened with a proxy (`ix optimize --screen-with`)."""

    ranking: Annotated[list[OptimizeRankEntry], Field(
        description="the round's candidates by the proxy's train F1, best first")]
    finalists: Annotated[list[str], Field(
        description="the candidates run on the real subjects (the top --finalists)")]
    real_trials: Annotated[int, Field(description="the finalists' trials on the real subjects")]
    proxy_trials: Annotated[int, Field(description="every candidate's trials on the proxy")]
    saved_trials: Annotated[int, Field(
        description="real trials not spent: what the screened-out candidates would have run")]


class OptimizeScreening(ClosedDict):
    """`ix optimize --screen-with`: the proxy and the session's real calls spent and saved."""

    name: Annotated[str, Field(description="--screen-with as given")]
    kind: Literal["runtime", "subject"]
    runtime: Annotated[str, Field(description="the proxy's runtime kind")]
    finalists: int
    real_trials: Annotated[int, Field(
        description="trials on the real subjects: the original's train run, the finalists' "
                    "and the holdout's")]
    proxy_trials: int
    saved_trials: Annotated[int, Field(
        description="real trials an unscreened session would have spent more")]


class OptimizeRejected(ClosedDict):
    text: str
    reason: str


class OptimizeRound(ClosedDict):
    round: int
    candidates: list[OptimizeCandidate]
    rejected: list[OptimizeRejected]
    best: str | None
    improved: bool
    run_ids: dict[str, str]
    screen: NotRequired[OptimizeRoundScreen]
    rationale: NotRequired[Annotated[str, Field(
        description="why the proposer proposed what it did, when it says (the keywords "
                    "baseline does); absent in sessions written before it")]]


class OptimizeHoldoutSubject(ClosedDict):
    subject: str
    original: OptimizeMetrics
    candidate: OptimizeMetrics
    difference: float
    difference_ci: Interval
    difference_sided: Literal["two", "lower", "upper"]
    median: float
    prob_better: float
    mc_error: float
    pairs: dict[str, list[int]]
    p_value: NotRequired[Annotated[float, Field(
        description="exact one-sided p of the paired test: were each changed case as likely "
                    "to have gone the other way, the chance of a difference this large "
                    "(docs/optimize.md); absent in sessions written before it")]]
    improved: NotRequired[Annotated[int, Field(
        description="held-out cases the candidate gets right and the original wrong")]]
    worsened: NotRequired[Annotated[int, Field(
        description="held-out cases the original gets right and the candidate wrong")]]
    failed: NotRequired[Annotated[list[str], Field(
        description="the conditions of a recommendation this subject missed, in words "
                    "(empty: it met them all)")]]


class OptimizeHoldout(ClosedDict):
    run_id: str | None
    verdict: Literal["recommended", "not recommended", "no candidate"]
    why: str
    subjects: list[OptimizeHoldoutSubject]
    prob_better: float | None
    credibility: float
    p_value: NotRequired[Annotated[float | None, Field(
        None, description="the largest exact paired p over the subjects; absent in "
                          "sessions written before it")]]
    tolerance: NotRequired[Annotated[float, Field(
        description="the 95% interval had to end above −tolerance; absent in sessions "
                    "written before it")]]
    min_changed: NotRequired[Annotated[int, Field(
        description="held-out cases the gain had to rest on; absent in sessions written "
                    "before it")]]
    candidate: NotRequired[str]
    candidate_run_id: NotRequired[str]


class OptimizeSettings(ClosedDict):
    rounds: int
    candidates: int
    holdout: float
    seed: int
    credibility: float
    max_cost_usd: float | None
    trials: int
    tolerance: NotRequired[Annotated[float, Field(
        description="--tolerance; absent in sessions written before it")]]
    min_changed: NotRequired[Annotated[int, Field(
        description="--min-changed; absent in sessions written before it")]]


class OptimizeSplit(ClosedDict):
    seed: int
    fraction: float
    train: list[str]
    holdout: list[str]


class OptimizeApplied(ClosedDict):
    at: str
    file: str
    backup: str


class OptimizeSession(ClosedDict):
    """`<experiment>/results/optimize/<id>/optimize.json`, and `ix optimize --json`."""

    schema_version: str
    id: str
    key: str
    folder: str
    experiment: str
    experiment_dir: str
    skill: str
    skill_file: str
    skill_sha256: str
    subjects: list[str]
    proposer: dict[str, str]
    settings: OptimizeSettings
    split: OptimizeSplit
    status: Literal["running", "completed", "cancelled", "failed"]
    reason: str | None
    stopped_early: str | None
    started_at: str
    finished_at: str | None
    command: list[str] | None
    original: OptimizeOriginal
    rounds: list[OptimizeRound]
    best: str
    holdout: OptimizeHoldout | None
    recommended: bool
    recommended_file: str | None
    cost_usd: float
    applied: OptimizeApplied | None
    screening: NotRequired[OptimizeScreening]


# --------------------------------------------------------------------------- sanity


class CheckOut(ClosedDict):
    experiment: str
    subject: Annotated[str, Field(description="random, perfect or wrong; empty for a skip "
                                              "of the whole experiment")]
    status: Literal["pass", "fail", "skip"]
    found: Annotated[str, Field(description="what the run gave, in words")]
    next: Annotated[str, Field(description="what to do (fail, skip); empty on a pass")]


class SanityOutput(ClosedDict):
    ok: Annotated[bool, Field(description="no check failed (exit 0; else 1)")]
    passed: int
    failed: int
    skipped: int
    seconds: float
    trials: int
    lab: str
    kept: Annotated[str | None, Field(description="the throwaway folder of the runs, kept "
                                                   "when a check failed or with --keep")]
    checks: list[CheckOut]


# --------------------------------------------------------------------------- the registry

@dataclass(frozen=True)
class SchemaEntry:
    """One schema document: what it describes, and the type it is generated from."""

    name: str
    describes: str
    type: Any


SCHEMAS: dict[str, SchemaEntry] = {e.name: e for e in (
    SchemaEntry("trial", "a line of <experiment>/results/trials.jsonl", TrialLine),
    SchemaEntry("summary", "summary-latest.json, runs/<run_id>/summary.json", Summary),
    SchemaEntry("run", "ix run --json: the summary, or a list for several experiments",
                Summary | list[Summary]),
    SchemaEntry("run-dry-run", "ix run --dry-run --json", list[DryRunPlan]),
    SchemaEntry("validate", "ix validate --json", list[Validated | NotValid]),
    SchemaEntry("sanity", "ix sanity --json", SanityOutput),
    SchemaEntry("ls", "ix ls --json", LsOutput),
    SchemaEntry("plan", "ix plan --json", PlanOutput),
    SchemaEntry("new", "ix new --json", NewOutput),
    SchemaEntry("compare", "ix compare --json", CompareOutput),
    SchemaEntry("report", "ix report --format json", ReportOutput),
    SchemaEntry("leaderboard", "ix leaderboard --json", LeaderboardOutput),
    SchemaEntry("results", "ix results --json: trials, or with --group-by/--stats aggregates",
                list[ResultRow] | list[AggregateRow]),
    SchemaEntry("query", "ix query --json: one object per row, the columns of the SELECT",
                list[dict[str, Any]]),
    SchemaEntry("export", "ix export --json", ExportOutput),
    SchemaEntry("import", "ix import --json", ImportOutput),
    SchemaEntry("cases-import", "ix cases import --json", CasesImported),
    SchemaEntry("tag", "ix tag --json: RUN TAG, --list, or --delete",
                Tagged | list[TagEntry] | TagDeleted),
    SchemaEntry("annotate", "ix annotate --json: a new note, or --list",
                AnnotationAdded | AnnotationList),
    SchemaEntry("batch", "ix batch --json (and --dry-run --json)", BatteryOutput | BatteryPlan),
    SchemaEntry("cache-stats", "ix cache stats --json", CacheStatsOutput),
    SchemaEntry("cache-clear", "ix cache clear --json", CacheClearOutput),
    SchemaEntry("subjects-list", "ix subjects list --json", SubjectsListOutput),
    SchemaEntry("subjects-add", "ix subjects add --json", SubjectAdded),
    SchemaEntry("subjects-test", "ix subjects test --json", SubjectTestOutput),
    SchemaEntry("view", "ix view --json: the line printed once listening", ViewOutput),
    SchemaEntry("optimize", "ix optimize --json, and results/optimize/<id>/optimize.json",
                OptimizeSession),
    SchemaEntry("plugins", "ix plugins --json", PluginsOutput),
    SchemaEntry("judge-check", "ix judge check --json", JudgeCheckOutput),
    SchemaEntry("label-import", "ix label --import FILE --json", LabelsImported),
    SchemaEntry("calibrate", "ix calibrate --json", CalibrateOutput),
)}


def schema_names() -> list[str]:
    return list(SCHEMAS)


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of `name`; `KeyError` for an unknown name."""
    entry = SCHEMAS[name]
    body = TypeAdapter(entry.type).json_schema(ref_template="#/$defs/{model}")
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        "$id": f"urn:ix:schema:{name}:{SCHEMA_VERSION.split('.')[0]}",
        **body,
        "title": f"ix {name}",
        "description": entry.describes,
        "schema_version": SCHEMA_VERSION,
    }


def all_schemas() -> dict[str, Any]:
    """Every schema, by name, with the version they share."""
    return {"schema_version": SCHEMA_VERSION,
            "schemas": {name: json_schema(name) for name in SCHEMAS}}


__all__ = ["SCHEMAS", "SCHEMA_VERSION", "all_schemas", "json_schema", "schema_names"]
