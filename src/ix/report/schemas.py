"""The JSON of `ix report --format json`, `ix compare --json` and `ix leaderboard --json`, as
TypedDicts (docs/json.md; `ix schema report|compare|leaderboard`).

They are the return types of `ix.report.run_report`, `ix.report.runs` and
`ix.report.leaderboard` (the type checker holds those to every key); pydantic generates their
JSON Schemas, and the tests validate real outputs against those.
"""

from typing import Annotated, Any, Literal, NotRequired

from pydantic import Field

from ix.eval.schemas import (
    ClosedDict,
    ContextOut,
    Expectation,
    FrontierOut,
    GoalOut,
    Interval,
    JudgeOut,
    LoadOut,
    Outcomes,
    PairwiseOut,
    ReliabilityGroupsOut,
    SensorRateOut,
    SubjectComparison,
    UnsettledCase,
)

# --------------------------------------------------------------------------- ix compare


class RunMetricChange(ClosedDict):
    before: float | None
    after: float | None
    diff: float | None
    diff_median: Annotated[float | None, Field(description="posterior median of after − before")]
    diff_ci: Annotated[Interval, Field(
        description="contains `diff` (one-sided on its side when the equal-tailed interval would "
                    "not)")]
    p_better: float | None
    p_value: Annotated[float | None, Field(
        description="two-sided test of no change: exact McNemar (recall, pass_rate), case-level "
                    "t-test (activation_rate), null for precision/F1")]
    paired: bool
    not_compared: NotRequired[Annotated[str, Field(
        description="why there is no comparison: the metric is undefined in a run (precision "
                    "with no predicted positive, F1 with no TP, FP or FN); diff, diff_ci and "
                    "p_better are then null")]]


class RunFlip(ClosedDict):
    probe_id: str
    expectation: Expectation
    control_score: Annotated[float | None, Field(description="the baseline run's score")]
    variant_score: Annotated[float | None, Field(description="this run's score")]
    now: Literal["correct", "wrong"]
    p_value: NotRequired[Annotated[float | None, Field(
        None, description="Fisher's exact test of the case's two counts (two-sided)")]]
    beyond_noise: NotRequired[Annotated[bool | None, Field(
        None, description="beyond trial noise (Tarone's rule across the shared cases); "
                          "false: within noise")]]
    family: NotRequired[Annotated[str, Field(description="'cases': the shared cases")]]


class RunSensorRate(ClosedDict):
    """One run's pass rate of a sensor over the cases both runs share."""

    rate: Annotated[float | None, Field(
        description="passed / n: the share of the valid trials whose reading passed; null "
                    "without one")]
    rate_ci: Annotated[Interval, Field(
        description="the population pass rate's interval with the shared cases as clusters "
                    "(hierarchical, the run's prior; one-sided on the rate's side where the "
                    "equal-tailed one would exclude it): the summary's `rate_ci` when the runs "
                    "share every case")]
    passed: int
    n: Annotated[int, Field(description="valid trials of the shared cases read by the sensor")]


class RunSensorChange(RunMetricChange):
    """One sensor's pass rate in the baseline and in this run, and after − before (issue 20):
    `before`, `after` and `diff` are case-level, as activation_rate's — the means over the
    cases of each run's per-case rate and of the per-case difference (`ix.stats.case_level`),
    never trial t against trial t; `p_value` is the case-level t-test, unadjusted."""

    primary: Annotated[bool, Field(
        description="this run's first sensor: its readings decide the trials")]
    n: Annotated[int, Field(description="shared cases with a valid trial in both runs")]
    rate_before: Annotated[RunSensorRate, Field(description="the baseline's pass rate")]
    rate_after: Annotated[RunSensorRate, Field(description="this run's pass rate")]


class RunSubjectComparison(ClosedDict):
    run: str
    subject: str
    cases: Annotated[int, Field(description="cases the two runs share")]
    metrics: dict[str, RunMetricChange]
    flips: list[RunFlip]
    verdict: str
    sensors: NotRequired[Annotated[dict[str, RunSensorChange], Field(
        default_factory=dict, description="every sensor of the summaries (their `sensors` "
                                          "blocks), the baseline's order: each run's pass "
                                          "rate and the case-level difference; absent "
                                          "before 1.5")]]


class RunSubjectMismatch(ClosedDict):
    run: str
    subject: str
    error: str


class SpecChange(ClosedDict):
    path: str
    change: Literal["added", "removed", "changed"]
    before: Any
    after: Any


class SkillChange(ClosedDict):
    skill: str
    subjects: list[str | None]
    sha256_before: str | None
    sha256_after: str | None
    description_before: Annotated[str | None, Field(description="null: the run did not record it")]
    description_after: str | None
    description_changed: Annotated[bool | None, Field(
        description="null when a description is unknown")]
    description_diff: Annotated[list[dict[str, str]], Field(
        description="the words that changed, in order: {removed, added}")]


class ConfigChanges(ClosedDict):
    run: str
    changes: list[SpecChange]
    skills: Annotated[list[SkillChange], Field(
        description="skills whose SKILL.md changed, with the description before and after")]


class RunComparisons(ClosedDict):
    """Every later run against the first (the baseline), subject by subject."""

    baseline: str
    experiment: str
    comparisons: list[RunSubjectComparison | RunSubjectMismatch]


class CompareOutput(RunComparisons):
    """`ix compare RUN_A RUN_B ... --json`."""

    config_changes: list[ConfigChanges]
    sensor: NotRequired[Annotated[str | None, Field(
        None, description="the baseline's first sensor kind (not `activation`: "
                          "activation_rate reads \"pass rate (must)\"); absent before 1.5")]]


# --------------------------------------------------------------------------- leaderboards

class LeaderboardRow(ClosedDict):
    rank: int
    subject: str
    run: NotRequired[Annotated[str | None, Field(
        None, description="per experiment: the run ranked")]]
    experiments: NotRequired[Annotated[str | None, Field(
        None, description="overall: experiments pooled, k/n")]]
    value: float | None
    ci: Interval
    n: int
    p_rank: float | None
    p_above_next: float | None
    rank_ci: list[int]
    p_best: float | None


class SweepAtLength(ClosedDict):
    """A sweep condition at one context length, among the conditions at that length."""

    length: int
    subject: Annotated[str, Field(description="the condition at this length, `…[ctx=<n>]`")]
    value: float | None
    ci: Interval
    p_best: Annotated[float | None, Field(description="P(the best condition at this length)")]


class SweepRow(ClosedDict):
    subject: str
    values: dict[str, Any]
    without: str | None
    value: float | None
    ci: Interval
    p_best: Annotated[float | None, Field(description="P(this condition is the best of the "
                                                       "sweep's), on the report's metric")]
    by_length: NotRequired[Annotated[list[SweepAtLength], Field(
        default_factory=list, description="with `context:` too: the condition at every "
                                          "length, each judged among the conditions at that "
                                          "length")]]


class SweepBest(ClosedDict):
    subject: str
    p_best: float | None


class SweepReport(ClosedDict):
    """A report's sweep table: every condition on the report's metric, with P(best)."""

    subject: str
    metric: str
    keys: dict[str, list[Any]]
    ablate: list[str]
    at_length: Annotated[int | None, Field(
        description="with `context:` too: the context length the conditions are read at")]
    rows: list[SweepRow]
    best: SweepBest | None


class Leaderboard(ClosedDict):
    metric: str
    level: float
    method: str
    rows: list[LeaderboardRow]
    note: NotRequired[Annotated[str | None, Field(
        None, description="why there are no rows (one subject)")]]


class ExperimentBoard(Leaderboard):
    experiment: str


class LeaderboardOutput(ClosedDict):
    """`ix leaderboard --json`."""

    lab: str
    boards: list[ExperimentBoard]
    overall: Leaderboard | None
    notes: list[str]


# --------------------------------------------------------------------------- ix report

class RunInfo(ClosedDict):
    run_id: str
    experiment: str
    status: str | None
    reason: NotRequired[Annotated[str | None, Field(
        None, description="why a failed run failed (what to do), or why a cancelled one stopped")]]
    started_at: str | None
    finished_at: str | None
    seed: int | None
    trials_per_case: int | None
    git_commit: str | None
    tags: list[str]
    description: str | None
    sensor: str | None
    prior: NotRequired[Annotated[str | None, Field(
        None, description="the Beta prior of the intervals: uniform or jeffreys")]]
    scorer: NotRequired[Annotated[str | None, Field(
        None, description="the scorer that decided the cases' verdicts, in words "
                          "(`majority`, `any`, `threshold at 0.7`); absent before 2.5")]]
    folder: str


class CaseCell(ClosedDict):
    score: float | None
    score_ci: Interval | None
    passed: int
    n: int
    errors: int
    correct: bool | None


class CaseRow(ClosedDict):
    probe_id: str
    expectation: Expectation
    by_subject: dict[str, CaseCell]


class SubjectMetrics(ClosedDict):
    precision: float | None
    precision_ci: Interval | None
    recall: float | None
    recall_ci: Interval | None
    f1: float | None
    f1_ci: Interval | None
    tp: int | None
    fp: int | None
    fn: int | None
    tn: int | None
    errors: int
    trials: int | None
    status: str | None
    specificity: NotRequired[Annotated[float | None, Field(
        None, description="TN/(TN+FP); null without should_not cases or in older summaries")]]
    specificity_ci: NotRequired[Annotated[Interval | None, Field(None)]]
    reliability: NotRequired[Annotated[ReliabilityGroupsOut | None, Field(
        None, description="between-case ICC and design effect; null in older summaries")]]
    unsettled: NotRequired[Annotated[list[UnsettledCase] | None, Field(
        None, description="cases whose majority vote could flip; null in older summaries")]]


class SummaryTable(ClosedDict):
    subjects: list[str]
    cases: list[CaseRow]
    metrics: dict[str, SubjectMetrics]


class ScoreStats(ClosedDict):
    n: int
    mean: float | None
    sd: float | None
    min: float | None
    max: float | None
    metrics: dict[str, float | None]


class BreakdownRow(ClosedDict):
    probe_id: str
    expectation: str
    by_subject: dict[str, ScoreStats]


class ErrorExample(ClosedDict):
    subject: str
    probe_id: str
    trial: int
    message: str


class ErrorGroup(ClosedDict):
    kind: str
    count: int
    subjects: dict[str, int]
    cases: list[str]
    examples: list[ErrorExample]
    superseded: int


class SubjectFailures(ClosedDict):
    trials: int
    failed: int


class WrongExample(ClosedDict):
    subject: str
    trial: int
    answer: str
    details: str
    invoked: Annotated[list[str], Field(description="the skills the trial invoked, in order")]


class FailingCase(ClosedDict):
    probe_id: str
    expectation: str
    trials: int
    errored: int
    wrong: int
    by_subject: dict[str, SubjectFailures]
    prompt: Annotated[str | None, Field(
        description="the case's prompt as its file reads now; null when the file is gone")]
    examples: Annotated[list[WrongExample], Field(
        description="one wrong trial of every subject that answered the case wrongly")]
    failed: int
    fail_rate: float | None


class RouteOut(ClosedDict):
    skill: Annotated[str | None, Field(description="the first skill invoked; null: none")]
    trials: int


class RoutingRow(ClosedDict):
    expectation: str
    cases: int
    trials: int
    target: int
    other: dict[str, int]
    none: int


class AstrayCase(ClosedDict):
    probe_id: str
    expectation: str
    n: int
    routes: list[RouteOut]
    taken_by: Annotated[str, Field(description="\"pdf 4/9, none 2/9\"")]


class SubjectRouting(ClosedDict):
    subject: str
    target: Annotated[str, Field(description="the skill under test")]
    expectations: list[RoutingRow]
    cases: Annotated[list[AstrayCase], Field(
        description="the cases whose trials went elsewhere than expected")]


class Failures(ClosedDict):
    errored_trials: int
    errors: list[ErrorGroup]
    cases: list[FailingCase]


class CostBucket(ClosedDict):
    attempts: int
    tokens_input: int
    tokens_output: int
    cost_usd: float | None


class Cost(ClosedDict):
    by_subject: dict[str, CostBucket]
    by_case: dict[str, CostBucket]
    total: CostBucket
    note: str


class Annotation(ClosedDict):
    at: str
    user: NotRequired[Annotated[str | None, Field(None)]]
    host: NotRequired[Annotated[str | None, Field(None)]]
    case: str | None
    text: str


class Regression(ClosedDict):
    subject: str
    metric: str
    before: float | None
    after: float | None
    diff: float | None
    diff_ci: Interval
    p_better: float | None
    p_worse: Annotated[float, Field(description="one-sided p-value of 'the run is worse'")]
    p_worse_holm: Annotated[float, Field(
        description="p_worse, Holm-adjusted across subjects x metrics")]
    paired: bool


class Baseline(ClosedDict):
    tag: str
    run: str
    comparison: RunComparisons
    regressions: list[Regression]
    regressed: bool
    rule: str


class RateFigure(ClosedDict):
    rate: float | None
    ci: Interval | None
    n_trials: int | None
    n_cases: int | None


class DifficultyRow(ClosedDict):
    level: Literal["easy", "medium", "hard"]
    k: int
    n: int
    rate: float | None
    ci: Interval | None


class DifficultyFigure(ClosedDict):
    levels: list[str]
    cases: dict[str, int]
    unrated: int
    by_subject: dict[str, list[DifficultyRow]]
    method: str


class PercentileRow(ClosedDict):
    q: Annotated[float, Field(description="the quantile: 0.1, 0.5, 0.9")]
    value: Annotated[float | None, Field(description="nearest-rank percentile of the scores")]
    ci: Annotated[Interval, Field(description="order-statistic interval (distribution-free)")]
    coverage: Annotated[float | None, Field(description="its exact coverage, >= the level")]


class ScopePercentiles(ClosedDict):
    scope: Annotated[str, Field(description="must, not, acceptable (cases by expectation)")]
    n: int
    percentiles: list[PercentileRow]


class ScorePercentiles(ClosedDict):
    level: float
    by_subject: dict[str, list[ScopePercentiles]]
    method: str


class CorrelationCell(ClosedDict):
    r: Annotated[float | None, Field(description="Spearman's r; null when a side is constant")]
    ci: Annotated[Interval | None, Field(description="Fisher-z interval; null below 4 cases")]
    n: Annotated[int, Field(description="cases paired")]
    missing: Annotated[int, Field(description="cases left out: they lack the property")]


class PropertyCorrelation(ClosedDict):
    property: Annotated[str, Field(description="as given to --by")]
    by_subject: dict[str, CorrelationCell]


class Correlations(ClosedDict):
    level: float
    properties: list[PropertyCorrelation]
    method: str


class TimelineMark(ClosedDict):
    t: Annotated[float | None, Field(description="ms since the run's first start")]
    d: Annotated[float | None, Field(description="duration in ms")]
    status: Literal["ok", "wrong", "error"]
    probe_id: str
    trial: int
    attempt: int
    error: str | None


class TimelineBin(ClosedDict):
    ok: int
    wrong: int
    error: int


class TimelineLane(ClosedDict):
    subject: str
    trials: int
    errors: int
    marks: NotRequired[Annotated[list[TimelineMark] | None, Field(None, description="mode trials")]]
    bins: NotRequired[Annotated[list[TimelineBin] | None, Field(None, description="mode bins")]]


class Timeline(ClosedDict):
    start: str
    span_ms: float | None
    attempts: int
    errors: int
    mode: Literal["trials", "bins"]
    bin_ms: float | None
    lanes: list[TimelineLane]


class SubjectInterpretation(ClosedDict):
    subject: str
    status: str | None
    issues: list[str]
    suggestions: list[str]


class Answer(ClosedDict):
    """The run's answer in sentences (`ix.report.answer`), the same in every format."""

    verdict: Annotated[list[str], Field(
        description="the goal's verdict line first, then its effect, evidence and what would "
                    "settle it; [] without a goal")]
    comparisons: Annotated[list[str], Field(
        description="one sentence per variant against the control")]
    interpretation: list[SubjectInterpretation]
    robustness: NotRequired[Annotated[list[str], Field(
        description="one sentence per subject whose originals ran beside rewordings of them "
                    "(probe: paraphrase): reworded against original, the answer first")]]


class ScreenSubject(ClosedDict):
    """One subject's line of the first screen."""

    name: str
    role: Annotated[Literal["control", "treatment"] | None, Field(
        description="the goal's compare pair, else the first subject as the control")]
    value: Annotated[float | None, Field(description="the judged metric (`screen.metric`)")]
    ci: Interval | None
    n: Annotated[int, Field(description="what the metric counts, in `unit`")]
    unit: Literal["cases", "must cases", "invoked cases"]
    status: str
    errors: int


class ScreenComparison(ClosedDict):
    """A variant against its control on the judged metric (case-level, paired)."""

    variant: str
    control: str
    value: float | None
    control_value: float | None
    diff: float | None
    diff_ci: Interval | None
    p_better: float | None
    p_holm: float | None
    not_compared: str | None
    flipped: Annotated[list[str], Field(description="cases whose vote flipped beyond noise")]
    changed_within_noise: int


class ScreenInteraction(ClosedDict):
    versus: str
    diff: float | None
    diff_ci: Interval | None
    p_declines_faster: float | None
    p_holm: float | None


class ScreenLengthRow(ClosedDict):
    """A subject by context length: the metric at each length, its trend per doubling."""

    subject: str
    values: Annotated[dict[str, float | None], Field(description="by length (as text)")]
    trend: float | None
    trend_ci: Interval | None
    p_declines: float | None
    n_cases: int | None
    interaction: ScreenInteraction | None


class ScreenSweepRow(ClosedDict):
    subject: str
    value: float | None
    ci: Interval | None
    p_best: float | None


class ScreenAnswer(ClosedDict):
    """The comparison that answers the question: `comparisons` (each variant against the
    control), `context` (by length, with the trend) or `sweep` (the grid with P(best))."""

    kind: Literal["comparisons", "context", "sweep"]
    metric: str
    metric_label: str
    rows: list[ScreenComparison] | list[ScreenLengthRow] | list[ScreenSweepRow]
    trend_metric: NotRequired[str]
    unit: NotRequired[str]
    prefix: NotRequired[str | None]
    lengths: NotRequired[list[int]]
    subject: NotRequired[str]
    grid: NotRequired[Annotated[str, Field(description="the sweep's grid in words")]]
    best: NotRequired[dict[str, Any] | None]


class ScreenCell(ClosedDict):
    hits: Annotated[int | None, Field(
        description="trials whose reading was positive (invoked, or the sensor passed)")]
    n: int | None
    score: float | None
    right: Annotated[bool | None, Field(description="the case's majority vote is right")]
    errors: int


class ScreenCase(ClosedDict):
    probe_id: str
    expectation: Expectation
    wrong_in: Annotated[int, Field(description="subjects in which the case's vote is wrong")]
    errored_in: int
    of: int
    unsettled: bool
    flipped: bool
    cells: dict[str, ScreenCell | None]


class Screen(ClosedDict):
    """The first screen (`ix.report.screen`): what `ix run` prints and every format of
    `ix report` leads with, built from the summary alone."""

    experiment: str
    run_id: str
    status: str | None
    reason: str | None
    cases: int
    trials_per_case: int | str | None
    metric: str
    metric_label: str
    verdict: Annotated[list[str], Field(description="the goal's lines (`answer.verdict`)")]
    headline: Annotated[dict[str, Any] | None, Field(
        description="without a goal: the first subject's judged metric with its interval")]
    subjects: list[ScreenSubject]
    answer: ScreenAnswer | None
    errors: int
    skipped_cases: int
    level: float
    case_columns: Annotated[list[str], Field(
        description="the subjects shown side by side in `cases_that_matter`")]
    cases_that_matter: Annotated[list[ScreenCase], Field(
        description="wrong, without a score, unsettled or flipped somewhere; worst first, "
                    "at most 10")]
    cases_that_matter_total: int
    conditions: int
    gates: NotRequired[Annotated[list[str], Field(
        description="beside the verdict: each per-case gate missed, its cases named "
                    "(`ix.eval.case_gates`); absent when every gate held or none was set")]]
    judge: NotRequired[Annotated[list[str], Field(
        description="beside the verdict: whether the judge it rests on was checked against "
                    "people's labels, and its noise (docs/judges.md); absent before 2.3")]]


class ReportOutput(ClosedDict):
    """`ix report --format json`: one run (docs/reports.md has what each section means)."""

    screen: Annotated[Screen, Field(description="the first screen, as `ix run` prints it")]
    run: RunInfo
    metric: str
    answer: Answer
    summary: SummaryTable
    leaderboard: Annotated[Leaderboard, Field(
        description="no rows (and a note) with a single subject: nothing to rank")]
    breakdown: list[BreakdownRow]
    failures: Failures
    routing: Annotated[list[SubjectRouting], Field(
        description="which skill took the prompts, per subject with an activation sensor")]
    cost: Cost
    annotations: list[Annotation]
    baseline: Baseline | None
    goal: GoalOut | None
    comparisons: list[SubjectComparison]
    rates: dict[str, dict[str, RateFigure]]
    difficulty: DifficultyFigure | None
    timeline: Timeline | None
    frontier: NotRequired[Annotated[FrontierOut, Field(
        description="the summary's `frontier` block: `curriculum:` runs only "
                    "(docs/running.md); absent before 2.5")]]
    percentiles: NotRequired[Annotated[ScorePercentiles | None, Field(
        None, description="p10/p50/p90 of the per-case scores with order-statistic intervals, "
                          "per subject and scope (docs/reports.md); absent before 2.5")]]
    correlations: NotRequired[Annotated[Correlations | None, Field(
        None, description="`ix report --by PROPERTY` only: Spearman's r of each case's right "
                          "share with the property, with interval (docs/reports.md)")]]
    context: NotRequired[Annotated[ContextOut | None, Field(
        None, description="the summary's `context` block: experiments with `context:` only; "
                          "absent before 1.3")]]
    sweep: NotRequired[Annotated[SweepReport | None, Field(
        None, description="experiments with `sweep:` only: every condition on the report's "
                          "metric with P(best); absent before 1.3")]]
    load: NotRequired[Annotated[LoadOut | None, Field(
        None, description="the summary's `load` block: experiments with `load:` only; "
                          "absent before 1.5")]]
    sensors: NotRequired[Annotated[dict[str, dict[str, SensorRateOut]], Field(
        default_factory=dict, description="subject -> every sensor's pass rate (the "
                                          "summary's `sensors` blocks); absent before 1.5")]]
    outcomes: NotRequired[Annotated[Outcomes | None, Field(
        None, description="tokens, time and cost per trial with intervals, and against the "
                          "control (docs/outcomes.md); absent when no trial stood")]]
    pairwise: NotRequired[Annotated[PairwiseOut | None, Field(
        None, description="the summary's `pairwise` block: experiments with a "
                          "`pairwise_judge` only (docs/judges.md); absent before 2.3")]]
    judges: NotRequired[Annotated[list[JudgeOut], Field(
        description="the summary's `judges`, checked against the experiment's labels as "
                    "they are now (docs/judges.md); absent without a judge")]]
