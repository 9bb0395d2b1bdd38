"""A run's summary as a type, the file `eval` computes (DESIGN.md §4; docs/json.md).

These types document `summary.json` and are the source of `ix schema summary`. They are
TypedDicts: the code that builds a summary is annotated with them (the type checker holds it
to every key), pydantic validates one read back (`summary_problems`) and generates the JSON
Schema, byte for byte what the pydantic models they replaced generated (tests/cli/golden/).
Objects are closed (`additionalProperties: false`). The files a run writes beside it have
their types in the store: a trial line in `ix.store.trial_schema`, `spec.yaml` in
`ix.store.spec_schema` (which takes `SpecPlugin` from here: `ix.eval.plugins` describes it).

Versioning (docs/json.md): `SCHEMA_VERSION` is MAJOR.MINOR; MINOR grows when a field is
added, MAJOR when one is removed, renamed or changes type or meaning.
"""

import functools
from typing import Annotated, Any, Literal, NotRequired

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError, with_config
from typing_extensions import TypedDict  # pydantic needs this one on Python < 3.12

from ix.eval.models import Expectation
from ix.eval.schema_version import SCHEMA_VERSION as SCHEMA_VERSION  # its home; named here too

#: A credible interval [low, high]; null ends when there is nothing to estimate.
Interval = Annotated[list[float | None], Field(min_length=2, max_length=2)]


# --------------------------------------------------------------------------- summary

@with_config(ConfigDict(extra="forbid"))
class ClosedDict(TypedDict):
    """A JSON object with exactly these keys, as the plain dict a producer builds: the type
    checker holds the producer to it, and pydantic validates a file read back against it
    (`summary_adapter`) and generates its JSON Schema (`additionalProperties: false`).
    `NotRequired` keys are those a summary written by an earlier ix may lack."""


RunStatus = Literal["completed", "cancelled", "failed"]
#: trials: auto: why a case stopped
Stopped = Literal["settled", "max_trials", "cancelled"]
#: experiment.yaml `prior:`
Prior = Literal["uniform", "jeffreys"]
#: a cancelled run: what stopped it
StopCause = Literal["signal", "budget", "breaker"]


class ProbeResultOut(ClosedDict):
    probe_id: str
    expectation: Expectation
    score: Annotated[float | None, Field(description="activation rate over the valid trials")]
    score_ci: Interval | None
    correct: Annotated[bool | None, Field(description="the majority vote matches the expectation")]
    trials: Annotated[list[bool | None], Field(
        description="element t: trial t's verdict (true passed, false failed, null errored "
                    "or no verdict), when the subject ran at most 1,000 trials and trials "
                    "0..k-1 all ran; else empty (the trials are in trials.jsonl; n + errors "
                    "counts them). Empty before 2.5")]
    n: Annotated[int, Field(description="valid (not errored) trials")]
    passed: int
    errors: int
    stopped: NotRequired[Annotated[Stopped | None, Field(
        None, description="trials: auto only: why the case stopped")]]
    routes: NotRequired[Annotated[list["RouteOut"] | None, Field(
        None, description="activation sensor only: the valid trials each skill took first "
                          "(skill null: none), the most taken first; absent before 1.1")]]


class RouteOut(ClosedDict):
    skill: Annotated[str | None, Field(description="the first skill invoked; null: no skill")]
    trials: int


class RoutingRowOut(ClosedDict):
    expectation: Expectation
    cases: int
    trials: Annotated[int, Field(description="valid trials of the expectation's cases")]
    target: Annotated[int, Field(
        description="trials whose first skill invoked was the skill under test")]
    other: Annotated[dict[str, int], Field(description="other skill -> trials it took first")]
    none: Annotated[int, Field(description="trials that invoked no skill")]


class RoutingOut(ClosedDict):
    target: Annotated[str, Field(description="the skill under test")]
    expectations: list[RoutingRowOut]


class MetricsOut(ClosedDict):
    precision: Annotated[float | None, Field(
        description="TP/(TP+FP) over the majority votes; null (n/a) with no predicted "
                    "positive, never 0; precision_ci is then the prior's interval")]
    recall: Annotated[float | None, Field(
        description="TP/(TP+FN); null with no must_trigger case voted")]
    f1: Annotated[float | None, Field(
        description="2TP/(2TP+FP+FN); null with no TP, FP or FN (0 when the skill never "
                    "activated on a must case)")]
    tp: int
    fp: int
    fn: int
    tn: int
    precision_ci: Interval
    recall_ci: Interval
    f1_ci: Interval
    specificity: NotRequired[Annotated[float | None, Field(
        None, description="TN/(TN+FP) over the should_not cases' majority votes; null without "
                          "such cases; absent in summaries written before it")]]
    specificity_ci: NotRequired[Annotated[Interval | None, Field(
        None, description="from Beta(TN+1, FP+1)")]]
    pass_rate: NotRequired[Annotated[float | None, Field(
        None, description="the correct rate (TP+TN)/(TP+FP+FN+TN): the cases whose majority "
                          "vote is right, as the goal metric pass_rate counts them; null "
                          "without a voted case; absent in summaries written before it")]]
    pass_rate_ci: NotRequired[Annotated[Interval | None, Field(
        None, description="from Beta(TP+TN+1, FP+FN+1)")]]
    n_families: NotRequired[Annotated[int, Field(
        description="runs with perturbed cases only: the families of the cases with a "
                    "majority vote, the units of the intervals (hierarchical over families)")]]


class TrialRateOut(ClosedDict):
    rate: float | None
    n_trials: int
    n_cases: int
    se_naive: float | None
    se_clustered: float | None
    ci: Interval
    n_families: NotRequired[Annotated[int, Field(
        description="runs with perturbed cases (variants:, probe: paraphrase) only: the "
                    "families of n_cases, the independent units of se_clustered and ci")]]


class TrialLevelOut(ClosedDict):
    must_trigger: TrialRateOut
    should_not_trigger: TrialRateOut
    correct: TrialRateOut


class ReliabilityOut(ClosedDict):
    icc: Annotated[float | None, Field(
        description="one-way ANOVA intraclass correlation of the trials within cases; null when "
                    "undefined")]
    design_effect: Annotated[float | None, Field(
        description="max(1, 1 + (trials_per_case - 1) * icc): floored at 1, since trials of a "
                    "case are independent at its rate (true ICC >= 0)")]
    trials_per_case: Annotated[float | None, Field(description="mean valid trials per case")]
    n_cases: int
    note: NotRequired[Annotated[str, Field(
        description="present when icc is negative: the estimate is kept, the design effect "
                    "floored at 1")]]


class ReliabilityGroupsOut(ClosedDict):
    must_trigger: ReliabilityOut
    should_not_trigger: ReliabilityOut
    correct: ReliabilityOut


class UnsettledCase(ClosedDict):
    probe_id: str
    expectation: Expectation
    passed: int
    n: int
    p_flip: Annotated[float, Field(
        description="posterior probability that the majority vote would flip with unlimited "
                    "further trials (> 0.2 here)")]


class InterpretationOut(ClosedDict):
    status: Annotated[str, Field(
        description="excellent, good, needs_work or poor (by F1); no_data when no case had a "
                    "valid trial or F1 is undefined (no TP, FP or FN)")]
    issues: list[str]
    suggestions: list[str]


class UsageOut(ClosedDict):
    tokens_input: int
    tokens_output: int
    cost_usd: float


class SensorCaseOut(ClosedDict):
    passed: int
    n: Annotated[int, Field(description="valid trials read by the sensor")]
    rate: float | None


class SensorRateOut(ClosedDict):
    """One sensor's results for one subject (issue 20): its pass rate over every case run."""

    primary: Annotated[bool, Field(
        description="the first sensor: its readings are the trials' `reading`, and decide "
                    "the cases and the metrics")]
    rate: Annotated[float | None, Field(
        description="passed / n: the share of valid trials whose reading passed; null "
                    "without one")]
    rate_ci: Annotated[Interval, Field(
        description="interval of the population pass rate with cases as clusters (the "
                    "hierarchical beta-binomial model of trial_level.ci, the experiment's "
                    "prior), one-sided on the rate's side where the equal-tailed one would "
                    "exclude it; summaries before issue 32: Beta on the pooled trials")]
    passed: int
    n: Annotated[int, Field(description="valid trials read by the sensor")]
    cases: Annotated[dict[str, SensorCaseOut], Field(
        description="case id -> its counts; cases without a valid trial are left out")]
    n_families: NotRequired[Annotated[int, Field(
        description="runs with perturbed cases only: the families of the cases read, the "
                    "clusters of rate_ci")]]


class RobustnessOut(ClosedDict):
    """Perturbed cases against the originals they were generated from (`probe:
    paraphrase`; `variants:` runs no original, so has none), on the rate of right trials."""

    metric: Literal["correct_rate"]
    original: Annotated[float | None, Field(description="mean rate of the originals")]
    perturbed: Annotated[float | None, Field(
        description="mean over originals of their perturbations' mean rate")]
    diff: Annotated[float | None, Field(description="perturbed − original")]
    diff_median: float | None
    diff_ci: Annotated[Interval, Field(
        description="t interval of the mean over originals (families as clusters); "
                    "contains diff")]
    p_worse: Annotated[float | None, Field(description="posterior P(diff < 0)")]
    p_value: Annotated[float | None, Field(description="two-sided t-test of no difference")]
    n_originals: Annotated[int, Field(description="originals with a valid trial and a "
                                                  "perturbation that has one")]
    n_perturbed: Annotated[int, Field(description="their perturbations with a valid trial")]
    n_families: Annotated[int, Field(description="the families of the originals (the units)")]


class SubjectBlock(ClosedDict):
    """One subject's results (the top level of the summary repeats the control's)."""

    name: str
    description: str
    probe_results: list[ProbeResultOut]
    metrics: MetricsOut
    trial_level: TrialLevelOut
    pass_at_k: Annotated[dict[str, float | None], Field(description="k (a string) -> pass@k")]
    pass_hat_k: Annotated[dict[str, float | None], Field(description="k (a string) -> pass^k")]
    pass_at_k_ci: NotRequired[Annotated[dict[str, Interval], Field(
        default_factory=dict, description="k -> interval of pass@k (case-level Bayesian "
                                          "bootstrap); absent in summaries written before it")]]
    pass_hat_k_ci: NotRequired[Annotated[dict[str, Interval], Field(
        default_factory=dict, description="k -> interval of pass^k, the same way")]]
    reliability: NotRequired[Annotated[ReliabilityGroupsOut | None, Field(
        None, description="between-case reliability of the trials; absent in summaries written "
                          "before it")]]
    unsettled: NotRequired[Annotated[list[UnsettledCase], Field(
        default_factory=list, description="cases whose majority vote is unsettled, the most "
                                          "uncertain first")]]
    interpretation: InterpretationOut
    errors: int
    trials: int
    usage: UsageOut
    routing: NotRequired[Annotated[RoutingOut | None, Field(
        None, description="activation sensor only: which skill took the prompts, per "
                          "expectation; absent before 1.1")]]
    sensors: NotRequired[Annotated[dict[str, SensorRateOut], Field(
        default_factory=dict, description="every sensor by the name of its readings (a "
                                          "second reading of one name: `name#2`), the "
                                          "first sensor first; absent before 1.5")]]
    robustness: NotRequired[Annotated[RobustnessOut | None, Field(
        None, description="runs whose originals ran beside cases generated from them "
                          "(probe: paraphrase) only")]]
    also_scored: NotRequired[Annotated[list["AlsoScored"], Field(
        default_factory=list, description="experiments with several `scorers:` only: the "
                                          "same trials as each scorer after the first "
                                          "(which decides) would decide them; absent "
                                          "before 2.5")]]


class AlsoScored(ClosedDict):
    """One more scorer's reading of a subject's trials (`scorers:` after the first)."""

    scorer: dict[str, Any]
    #: cases with a vote, and the correct ones among them
    cases: int
    correct: int
    precision: float | None
    recall: float | None
    f1: float | None


class PairedTable(ClosedDict):
    both: int
    control_only: int
    variant_only: int
    neither: int


class MetricComparison(ClosedDict):
    control: float | None
    variant: float | None
    diff: float | None
    diff_median: Annotated[float | None, Field(description="posterior median of variant − control")]
    diff_ci: Annotated[Interval, Field(
        description="credible interval; contains `diff` (one-sided on its side when the "
                    "equal-tailed one would not)")]
    p_variant_better: float | None
    p_value: Annotated[float | None, Field(
        description="two-sided test of no difference: exact McNemar (recall, pass_rate), the "
                    "case-level t-test (activation_rate), null for precision/F1")]
    p_value_holm: Annotated[float | None, Field(
        description="p_value, Holm-adjusted within `family` (the metrics: across variants; "
                    "a comparison's `sensors`: across variants x sensors)")]
    mcnemar_p: float | None
    mcnemar_p_holm: float | None
    role: Annotated[Literal["primary", "exploratory"], Field(
        description="primary: the goal's metric; exploratory: unadjusted for the number of "
                    "metrics read")]
    paired: bool
    n: Annotated[int, Field(
        description="cases (activation_rate, recall, pass_rate) or majority votes counted by "
                    "both subjects (precision, F1)")]
    n_families: NotRequired[Annotated[int, Field(
        description="runs with perturbed cases only: the families (cases generated from one "
                    "original) among the cases compared, the independent units")]]
    table: NotRequired[Annotated[PairedTable | None, Field(
        None, description="recall and pass_rate only")]]
    not_compared: NotRequired[Annotated[str, Field(
        description="why there is no comparison: the metric is undefined on a side "
                    "(precision with no predicted positive, F1 with no TP, FP or FN); then "
                    "diff, diff_ci and p_variant_better are null")]]
    family: NotRequired[Annotated[str, Field(
        description="the Holm family its *_holm values were adjusted within (STATS.md §10): "
                    "'sensors' (a comparison's `sensors`: every variant x sensor), "
                    "'variants:<metric>' (one metric across the variants), or 'unadjusted'; "
                    "absent in summaries written before it")]]


class Flip(ClosedDict):
    """A case whose majority vote changed between the control and the variant."""

    probe_id: str
    expectation: Expectation
    control_score: float | None
    variant_score: float | None
    now: Literal["correct", "wrong"]
    p_value: NotRequired[Annotated[float | None, Field(
        None, description="Fisher's exact test of the case's two counts (two-sided); absent "
                          "in summaries written before it")]]
    beyond_noise: NotRequired[Annotated[bool | None, Field(
        None, description="the change is beyond trial noise: p_value at most Tarone's "
                          "per-case level across the comparison's cases (family-wise error "
                          "<= 1 - level when no case differs); false: within noise; absent "
                          "in summaries written before it")]]
    family: NotRequired[Annotated[str, Field(
        description="'cases': the comparison's cases, the family of beyond_noise")]]


class SubjectComparison(ClosedDict):
    control: str
    variant: str
    metrics: Annotated[dict[str, MetricComparison], Field(
        description="activation_rate, recall, precision, f1, pass_rate (the correct rate: share "
                    "of majority votes that match the expectation; docs/results.md, Glossary)")]
    flips: Annotated[list[Flip], Field(
        description="every case whose majority vote changed; `beyond_noise` marks the changes "
                    "beyond trial noise")]
    factor: NotRequired[Annotated[Literal["subject", "sweep"], Field(
        description="the one factor the two sides differ in (DESIGN.md §7): another subject, "
                    "or a sweep cell of the first; absent in summaries written before it")]]
    at_length: NotRequired[Annotated[int | None, Field(
        None, description="with `context:`: the length both sides ran at (a comparison never "
                          "pairs two lengths; those are the context block's "
                          "versus_shortest)")]]
    sensors: NotRequired[Annotated[dict[str, MetricComparison], Field(
        default_factory=dict, description="each sensor's pass rate, variant − control: the "
                                          "mean over cases of the per-case rate difference "
                                          "(case-level t, as activation_rate), Holm across "
                                          "variants; always exploratory; absent before 1.5")]]


class GoalEffect(ClosedDict):
    metric: str
    control: float | None
    treatment: float | None
    diff: float | None
    diff_median: Annotated[float | None, Field(
        description="posterior median of treatment − control")]
    diff_ci: Interval
    paired: bool


class GoalReach(ClosedDict):
    """Which verdicts the data can still reach (STATS.md §10): none is out of reach unless
    the control sits at the bound the goal's direction moves towards (a decrease from 0, an
    increase from 1) or its interval leaves no room beyond min_effect; `why` says which."""

    verdicts: list[Literal["supported", "refuted"]]
    room: Annotated[float, Field(
        description="the effect the control's value leaves in the goal's direction (differ: "
                    "the larger of the two)")]
    why: Annotated[str | None, Field(
        description="what is out of reach and why; null when both verdicts are reachable")]


class GoalSuggestion(ClosedDict):
    """How many cases (`unit`) would settle an inconclusive goal if the true effect were
    `effect` (twice min_effect, capped at the room the control leaves; `method` says what
    was assumed, `criterion` in a line), and the probability that a run of that size settles
    it (`p_settle` = supported + refuted), from `simulations` seeded runs judged by ix's own
    rule."""

    cases: int | None
    current_cases: int
    trials_per_case: int
    method: str
    p_settle: NotRequired[Annotated[float | None, Field(None)]]
    p_supported: NotRequired[Annotated[float | None, Field(None)]]
    p_refuted: NotRequired[Annotated[float | None, Field(None)]]
    simulations: NotRequired[Annotated[int, Field(0)]]
    unit: NotRequired[Annotated[str | None, Field(None)]]
    effect: NotRequired[Annotated[float | None, Field(None)]]
    effect_asked: NotRequired[Annotated[float | None, Field(
        None, description="the effect asked for (twice min_effect) when `effect` is capped "
                          "at the room the control leaves; null when not capped")]]
    criterion: NotRequired[Annotated[str | None, Field(
        None, description="what the size is for, as `ix validate` and `ix plan` name theirs")]]


class GoalOut(ClosedDict):
    """The goal of experiment.yaml and its verdict (null verdict: its subjects did not run)."""

    hypothesis: str
    metric: str
    compare: list[str]
    direction: Literal["increase", "decrease", "differ"]
    min_effect: float
    at_most: NotRequired[Annotated[float | None, Field(
        None, description="a quantity's goal only: the effect must stay within it")]]
    relative: NotRequired[Annotated[bool, Field(
        False, description="a quantity's goal only: the effect is treatment / control - 1")]]
    credibility: float
    verdict: Literal["supported", "refuted", "inconclusive"] | None
    p_supported: NotRequired[Annotated[float | None, Field(None)]]
    p_refuted: NotRequired[Annotated[float | None, Field(None)]]
    rule: NotRequired[Annotated[str | None, Field(None)]]
    effect: NotRequired[Annotated[GoalEffect | None, Field(None)]]
    suggestion: NotRequired[Annotated[GoalSuggestion | None, Field(None)]]
    reachable: NotRequired[Annotated[GoalReach | None, Field(None)]]
    note: NotRequired[Annotated[str | None, Field(None)]]


class StatisticsOut(ClosedDict):
    level: float
    #: experiment.yaml `prior:`: the Beta prior of every rate interval
    prior: NotRequired[Annotated[Prior, Field("uniform")]]
    methods: dict[str, str]


class TrialsMode(ClosedDict):
    mode: Literal["fixed", "auto"]
    min_trials: NotRequired[Annotated[int | None, Field(None)]]
    max_trials: NotRequired[Annotated[int | None, Field(None)]]
    credibility: NotRequired[Annotated[float | None, Field(None)]]


class ErrorKindOut(ClosedDict):
    kind: str
    count: int
    subjects: Annotated[dict[str, int], Field(
        description="errored trials of this kind per subject")]
    example: Annotated[str, Field(
        description="one message of this kind (the first 300 characters)")]
    configuration: Annotated[bool, Field(
        description="the lab's configuration or the machine's setup is the cause (a missing "
                    "key, no skills, a program not found)")]
    hint: Annotated[str | None, Field(description="what to do about it, when ix knows")]


class FailedSubjectOut(ClosedDict):
    subject: str
    trials: int
    kind: Annotated[str, Field(description="the most common error kind of its trials")]
    count: Annotated[int, Field(description="trials that errored with `kind`")]
    example: str
    configuration: bool
    hint: str | None


class OutcomeEstimate(ClosedDict):
    """A mean (or a ratio) with its interval at the report's level; nulls where undefined."""

    value: float | None
    ci: list[float | None]
    n_cases: int
    method: str


class OutcomeComparison(ClosedDict):
    """A subject against the control on one quantity, paired by case."""

    subject: str
    control: str
    metric: str
    difference: OutcomeEstimate
    ratio: OutcomeEstimate
    p_lower: Annotated[float | None, Field(description="P(the subject's mean is lower)")]
    p: Annotated[float | None, Field(description="two-sided, of the paired difference")]
    p_holm: Annotated[float | None, Field(
        description="`p` adjusted by Holm across the subjects compared with the control on "
                    "this quantity (the family of the rates' comparisons)")]


class PairwiseEstimate(ClosedDict):
    """An estimate with its interval at the block's level; nulls where undefined."""

    value: float | None
    ci: list[float | None]
    n: Annotated[int, Field(description="cases (a win share) or judgements (a bias)")]
    method: str


class PairwiseVariant(ClosedDict):
    """One variant against the control, judged blind pair by pair (STATS.md §14)."""

    variant: str
    control: str
    cases: Annotated[int, Field(description="cases with a judgement that stands")]
    judgements: Annotated[int, Field(description="judgements with a winner (or a tie)")]
    wins: int
    losses: int
    ties: int
    errors: Annotated[int, Field(description="judgements the judge could not make")]
    win_share: Annotated[PairwiseEstimate, Field(
        description="the mean over cases of the variant's share of wins (ties ½), a case-level "
                    "t interval")]
    p_better: Annotated[float | None, Field(description="P(the mean win share > ½)")]
    position_bias: Annotated[PairwiseEstimate | None, Field(
        description="the share of judgements the answer shown first won, − ½; null unless "
                    "both orders were shown")]


class PairwiseOut(ClosedDict):
    """The pairwise judge's verdicts: each variant against the control (docs/judges.md)."""

    level: float
    judge: Annotated[str, Field(description="the rubric's name")]
    swap: Annotated[bool, Field(description="each pair was judged in both orders")]
    control: str
    variants: list[PairwiseVariant]


class Outcomes(ClosedDict):
    """Tokens, time and cost per trial (STATS.md §13): each subject's mean of case means with
    a case-clustered interval, each other subject against the control (paired difference and
    ratio), and cost per success."""

    level: float
    metrics: list[str]
    by_subject: dict[str, dict[str, OutcomeEstimate]]
    comparisons: list[OutcomeComparison]
    cost_per_success: dict[str, OutcomeEstimate]
    cost_per_success_ratio: dict[str, OutcomeEstimate]
    note: str


class JudgeEstimate(ClosedDict):
    value: float | None
    ci: list[float | None]
    n: int
    method: str


class JudgedRate(ClosedDict):
    passed: int
    judged: int
    value: float | None


class CorrectedRateOut(ClosedDict):
    value: float | None
    ci: list[float | None]
    n: int
    method: str
    p_uninformative: Annotated[float | None, Field(
        description="the posterior probability that TPR + TNR <= 1 (the judge says nothing)")]
    uninformative: bool


class JudgeAgreementOut(ClosedDict):
    """One labelled judge (a pass/fail entry, `dimension` null) or one of its dimensions."""

    sensor: str
    dimension: str | None
    labelled: Annotated[int, Field(description="readings a label spoke of")]
    ties: NotRequired[Annotated[int, Field(0, description="targets whose labellers tied")]]
    accuracy: NotRequired[JudgeEstimate]
    tpr: NotRequired[JudgeEstimate]
    tnr: NotRequired[JudgeEstimate]
    kappa: NotRequired[JudgeEstimate]
    judged_rate: NotRequired[JudgedRate]
    corrected_rate: NotRequired[CorrectedRateOut]
    weighted_kappa: NotRequired[JudgeEstimate | None]
    spearman: NotRequired[JudgeEstimate | None]


class JudgeNoiseOut(ClosedDict):
    """Variance components of a judge's repeated judgements of the same outputs."""

    within_var: Annotated[float | None, Field(description="the judge's variance on one "
                                                          "output")]
    between_var: Annotated[float | None, Field(description="the outputs' variance")]
    icc: Annotated[JudgeEstimate, Field(description="ICC(1): the share of one judgement's "
                                                    "variance that is the output's")]
    icc_mean: Annotated[JudgeEstimate, Field(description="ICC(1,k): the reliability of the "
                                                         "mean of the repeats")]
    repeats: float | None


class JudgeRepeatsOut(ClosedDict):
    outputs: Annotated[int, Field(description="outputs judged more than once")]
    unsettled: Annotated[int, Field(description="outputs whose verdict changed between "
                                                "repeats")]
    score: JudgeNoiseOut
    dimensions: dict[str, JudgeNoiseOut]


class PanelAlphaOut(ClosedDict):
    verdicts: Annotated[JudgeEstimate, Field(description="nominal Krippendorff's alpha")]
    scores: Annotated[JudgeEstimate, Field(description="interval Krippendorff's alpha")]


class JudgeOut(ClosedDict):
    """One judge of a run: what it is, and how far it can be trusted (docs/judges.md)."""

    name: str
    kind: Annotated[str, Field(description="llm_judge or panel")]
    rubric: str
    model: str | None
    runtime: str
    repeats: int
    dimensions: list[str]
    scale: list[float]
    pass_threshold: float
    min_kappa: float
    members: Annotated[list[str], Field(description="a panel's judges")]
    combine: str | None
    status: Annotated[Literal["checked", "disagrees", "unchecked", "human"], Field(
        description="checked: labelled, kappa >= min_kappa; disagrees: below it; unchecked: "
                    "no label; human: a person judges (its readings are labels)")]
    labelled: int
    agreement: JudgeAgreementOut | None
    scores: list[JudgeAgreementOut]
    noise: Annotated[JudgeRepeatsOut | None, Field(description="repeats >= 2 only")]
    alpha: Annotated[PanelAlphaOut | None, Field(
        description="a panel's members' agreement, or that of the judges of its rubric "
                    "outside a panel")]


class GateCaseOut(ClosedDict):
    probe_id: str
    value: Annotated[float | None, Field(description="the case's rate on the gate's metric; "
                                                     "null: no valid trial")]
    ci: Interval | None
    p: NotRequired[Annotated[float | None, Field(
        None, description="Holm only: the adjusted posterior probability of the wrong side")]]


class GateOut(ClosedDict):
    """One per-case gate for one subject (`ix.eval.case_gates`, docs/running.md)."""

    gate: Annotated[str, Field(description="as written: case:recall.lower>=0.8[,holm]")]
    label: Annotated[str, Field(description="per case, unadjusted | Holm across the cases")]
    subject: str
    cases: Annotated[int, Field(description="the cases the gate's metric reads")]
    passed: bool
    failed: Annotated[list[GateCaseOut], Field(description="the cases that did not clear it")]


class FrontierCell(ClosedDict):
    difficulty: float
    right: int
    valid: int


class FrontierSubject(ClosedDict):
    estimate: Annotated[float | None, Field(
        description="posterior median of the difficulty where P(right) crosses 0.5")]
    ci: Annotated[Interval | None, Field(description="equal-tailed credible interval")]
    trials: Annotated[int, Field(description="valid trials it rests on")]
    open_below: Annotated[bool | None, Field(
        description="the interval reaches the grid's lower end: maybe easier than tried")]
    open_above: Annotated[bool | None, Field(
        description="the interval reaches the grid's upper end: maybe harder than tried")]
    mle: Annotated[float | None, Field(
        description="maximum-likelihood -b0/b1 (logistic regression); null under separation")]
    by_difficulty: list[FrontierCell]
    stopped: Annotated[Literal["settled", "max_trials", "exhausted"] | None, Field(
        description="why the subject's curriculum stopped; null when the run was stopped")]


class FrontierOut(ClosedDict):
    by: str
    stop_width: float
    max_trials: int
    level: float
    difficulties: list[float]
    pad: float
    subjects: dict[str, FrontierSubject]
    method: str


class Summary(ClosedDict):
    """`summary-latest.json`, `summary-<UTC>.json`, `runs/<run_id>/summary.json`, and what
    `ix run --json` prints: the `001_…` shape for the control, every subject under
    `subjects`, the comparisons and the goal's verdict."""

    schema_version: NotRequired[Annotated[str | None, Field(
        None, description="of this schema; absent in summaries written before it")]]
    experiment_name: str
    run_id: str
    run_status: RunStatus
    subject: Annotated[str, Field(description="the control (first subject)")]
    probe_results: list[ProbeResultOut]
    metrics: MetricsOut
    interpretation: InterpretationOut
    trial_level: TrialLevelOut
    pass_at_k: dict[str, float | None]
    pass_hat_k: dict[str, float | None]
    pass_at_k_ci: NotRequired[Annotated[dict[str, Interval], Field(default_factory=dict)]]
    pass_hat_k_ci: NotRequired[Annotated[dict[str, Interval], Field(default_factory=dict)]]
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
    stop_reason: NotRequired[Annotated[str | None, Field(
        None, description="cancelled: why it stopped early, in words")]]
    stop_cause: NotRequired[Annotated[StopCause | None, Field(
        None, description="cancelled only: a signal (Ctrl-C, a request), a budget "
                          "(--max-trials, --max-cost, --time-limit) or the circuit breaker; "
                          "absent before 1.1")]]
    reason: NotRequired[Annotated[str | None, Field(
        None, description="failed only: why, and what to do; absent before 1.1")]]
    failed_subjects: NotRequired[Annotated[list["FailedSubjectOut"], Field(
        default_factory=list, description="the subjects every trial of which errored (the run "
                                          "is then failed); absent before 1.1")]]
    errors_by_kind: NotRequired[Annotated[list["ErrorKindOut"], Field(
        default_factory=list, description="the errored trials by error kind, most frequent "
                                          "first; absent before 1.1")]]
    circuit_breaker: NotRequired[Annotated[dict[str, str] | None, Field(None)]]
    imported_from: NotRequired[Annotated[str | None, Field(None, description="ix import only")]]
    format: NotRequired[Annotated[str | None, Field(None, description="ix import only")]]
    scorer: NotRequired[Annotated[dict[str, Any], Field(
        description="the scorer that decided each case's verdict (`scorers:`' first, as "
                    "written: `{kind: majority}` when none is named; docs/experiments.md, "
                    "\"Scorers\"); absent before 2.5 and in imported runs")]]
    context: NotRequired[Annotated["ContextOut", Field(
        description="experiments with `context:` only: each subject's metrics by conversation "
                    "length, against the shortest, and the trend; absent before 1.3")]]
    sweep: NotRequired[Annotated["SweepOut", Field(
        description="experiments with `sweep:` only: the grid of conditions the first "
                    "subject expanded into; absent before 1.3")]]
    load: NotRequired[Annotated["LoadOut", Field(
        description="experiments with `load:` only: each subject under the open-loop "
                    "generator — rates, latency percentiles with distribution-free "
                    "intervals, error rate, schedule error, SLA verdicts; absent before 1.5")]]
    outcomes: NotRequired[Annotated[Outcomes | None, Field(
        None, description="tokens, time, cost, scores and a judge's dimensions per trial: "
                          "each subject's mean of case means, each against the control "
                          "(docs/outcomes.md); absent before 2.2 and when no trial stood")]]
    gates: NotRequired[Annotated[list[GateOut], Field(
        description="per-case gates (`gate:`, `--gate`) only: each gate for each subject and "
                    "the cases below it; absent before 2.4")]]
    judges: NotRequired[Annotated[list[JudgeOut], Field(
        description="experiments with a judge only: each judge's agreement with people's "
                    "labels, its noise over repeats, a panel's agreement (docs/judges.md); "
                    "absent before 2.3")]]
    looks: NotRequired[Annotated["LooksOut", Field(
        description="`stop: goal` / `ix run --until-settled` only: each look at the goal "
                    "after a round of cases, the rule, where the run stopped and the calls "
                    "saved (docs/cost.md); absent before 2.5")]]
    frontier: NotRequired[Annotated[FrontierOut, Field(
        description="`curriculum:` runs only: per subject, the difficulty at which its share "
                    "of right trials crosses 50%, with interval (docs/running.md); absent "
                    "before 2.5")]]
    pairwise: NotRequired[Annotated[PairwiseOut | None, Field(
        None, description="experiments with a `pairwise_judge` only: each variant's win share "
                          "against the control by a blind judge, with P(better) and the "
                          "judge's position bias (docs/judges.md); absent before 2.3")]]


class ContextLength(ClosedDict):
    """One subject at one length: its expanded subject and its metrics with intervals."""

    length: int
    subject: Annotated[str, Field(description="the expanded subject, `<subject>[ctx=<length>]`")]
    activation_rate: Annotated[float | None, Field(
        description="share of trials on must_trigger cases that activated")]
    activation_rate_ci: Interval
    recall: float | None
    recall_ci: Interval
    precision: float | None
    precision_ci: Interval
    f1: float | None
    f1_ci: Interval
    correct_rate: Annotated[float | None, Field(
        description="share of trials whose outcome matches the case's expectation")]
    correct_rate_ci: Interval


class ContextVersus(ClosedDict):
    """A length against the subject's shortest: the case-level paired comparison."""

    length: int
    subject: str
    metric: Literal["activation_rate"]
    diff: Annotated[float | None, Field(description="this length − the shortest")]
    diff_ci: Interval
    p_lower: Annotated[float | None, Field(
        description="P(lower than at the shortest length), unadjusted")]
    p_value: NotRequired[Annotated[float | None, Field(
        None, description="two-sided case-level t-test of no difference")]]
    p_value_holm: NotRequired[Annotated[float | None, Field(
        None, description="p_value, Holm-adjusted across the subject's longer lengths "
                          "(`family`); a length declines when it is < 1 - level and diff < 0")]]
    family: NotRequired[Annotated[str, Field(
        description="'context:<subject>': the subject's lengths against its shortest; absent "
                    "in summaries written before it")]]


class ContextTrend(ClosedDict):
    """The mean per-case slope of the activation rate against log2(1 + length)."""

    metric: Literal["activation_rate"]
    x: Literal["log2(1 + length)"]
    slope: Annotated[float | None, Field(
        description="change of the rate per doubling of (1 + length)")]
    slope_ci: Interval
    p_decline: Annotated[float | None, Field(description="P(slope < 0)")]
    n_cases: Annotated[int, Field(description="must_trigger cases with trials at every length")]
    n_families: NotRequired[Annotated[int, Field(
        description="runs with perturbed cases only: the families of n_cases (the units)")]]


class ContextInteraction(ClosedDict):
    """A subject's trend against the control's: the mean over cases of the difference of
    their per-case slopes (both ran the same cases at the same lengths)."""

    versus: Annotated[str, Field(description="the control subject (the experiment's first)")]
    metric: Literal["activation_rate"]
    x: Literal["log2(1 + length)"]
    diff: Annotated[float | None, Field(
        description="this subject's slope − the control's, per doubling of (1 + length)")]
    diff_ci: Interval
    p_lower: Annotated[float | None, Field(
        description="P(diff < 0): it declines faster than the control")]
    p_value: Annotated[float | None, Field(description="two-sided t-test of no interaction")]
    p_value_holm: Annotated[float | None, Field(
        description="p_value, Holm-adjusted across the run's interactions (`family`)")]
    family: Annotated[str, Field(description="'interaction': every subject's against the "
                                             "control")]
    n_cases: Annotated[int, Field(
        description="must_trigger cases with trials at every length in both subjects")]
    n_families: NotRequired[Annotated[int, Field(
        description="runs with perturbed cases only: the families of n_cases (the units)")]]


class ContextSubject(ClosedDict):
    subject: Annotated[str, Field(description="the subject as the experiment names it")]
    lengths: list[ContextLength]
    versus_shortest: list[ContextVersus]
    trend: Annotated[ContextTrend | None, Field(
        description="null with one length or no must_trigger case")]
    interaction: NotRequired[Annotated[ContextInteraction | None, Field(
        None, description="its trend against the control's (null for the control itself, with "
                          "one length, or without a case to compare); absent in summaries "
                          "written before it")]]


class ContextOut(ClosedDict):
    """The summary's `context` block (DESIGN.md §7)."""

    prefix: str
    unit: Literal["turns", "tool_calls", "tokens"]
    lengths: list[int]
    level: float
    subjects: list[ContextSubject]


class SweepCondition(ClosedDict):
    subject: Annotated[str, Field(description="the condition, `<subject>[key=value,…,-skill]`; "
                                              "the control under the subject's own name")]
    values: Annotated[dict[str, Any], Field(description="the swept keys it sets (none: the "
                                                         "subject's own)")]
    without: Annotated[str | None, Field(description="the skill left out (`ablate: skills`)")]


class LookOut(ClosedDict):
    """One look at the goal under `stop: goal` (`ix.eval.sequential_goal`)."""

    look: Annotated[int, Field(description="1 for the first round's")]
    cases: Annotated[int, Field(description="cases run so far")]
    trials: Annotated[int, Field(description="trials so far, every subject's (the calls)")]
    diff: Annotated[float | None, Field(description="the goal metric's treatment - control")]
    diff_ci: Annotated[list[float] | None, Field(description="its interval at the "
                                                             "statistics' level")]
    p_supported: float | None
    p_refuted: float | None
    decision: Annotated[Literal["supported", "refuted", "continue", "inconclusive"], Field(
        description="supported or refuted stops the run; inconclusive only at the last look")]


class LooksOut(ClosedDict):
    """The summary's `looks` block (`stop: goal`, STATS.md §15)."""

    rule: Annotated[Literal["pocock"], Field(description="the sequential rule")]
    rule_text: Annotated[str, Field(description="the rule in words, with its numbers")]
    planned_looks: Annotated[int, Field(description="rounds planned (one look after each)")]
    credibility: Annotated[float, Field(description="the credibility each look judges the "
                                                    "goal at (the goal's verdict's too)")]
    goal_credibility: Annotated[float, Field(description="experiment.yaml's, overall")]
    looks: list[LookOut]
    stopped: Annotated[str, Field(description="where the run stopped and why, one line")]
    calls: Annotated[int, Field(description="trials run, every subject's")]
    planned_calls: Annotated[int, Field(description="trials of the fixed design: every "
                                                    "case, every planned trial")]
    calls_saved: Annotated[int, Field(description="planned_calls - calls (not below 0)")]


class SweepOut(ClosedDict):
    """The summary's `sweep` block (DESIGN.md §7): the grid; each condition's metrics are
    its subject block's."""

    subject: Annotated[str, Field(description="the subject swept (the experiment's first)")]
    keys: Annotated[dict[str, list[Any]], Field(description="each swept key's values")]
    ablate: Annotated[list[str], Field(description="the skills left out in turn; [] without "
                                                   "`ablate: skills`")]
    conditions: list[SweepCondition]


LoadVerdict = Literal["met", "missed", "inconclusive"]


class QuantileOut(ClosedDict):
    """A latency percentile: the nearest-rank value and its distribution-free interval."""

    value: Annotated[float | None, Field(description="the nearest-rank percentile X_(⌈nq⌉), "
                                                     "ms; null without answers")]
    ci: Annotated[Interval, Field(
        description="[X_(l), X_(u)]: order statistics whose ranks come from the exact "
                    "Binomial(n, q); a null end: too few requests to bound that side")]
    coverage: Annotated[float | None, Field(
        description="the interval's exact coverage P(l ≤ B ≤ u − 1), at least the level")]


class LoadLatencyOut(ClosedDict):
    n: Annotated[int, Field(description="answered measured requests (errored ones have no "
                                        "latency)")]
    p50: QuantileOut
    p95: QuantileOut
    p99: QuantileOut


class LoadRequestsOut(ClosedDict):
    """The measured requests (those scheduled after the warm-up) by what became of them."""

    planned: Annotated[int, Field(description="scheduled in the measured window")]
    sent: int
    completed: Annotated[int, Field(description="answered without an error")]
    errored: int
    dropped: Annotated[int, Field(
        description="never sent: no slot under max_in_flight freed before the window ended")]
    waited: Annotated[int, Field(
        description="sent late because max_in_flight requests were in flight at their time")]
    warmup: Annotated[int, Field(description="warm-up requests sent (recorded, not counted)")]


class ScheduleErrorOut(ClosedDict):
    """How late the generator sent the measured requests: send time − scheduled time."""

    p50_ms: float | None
    p99_ms: float | None
    max_ms: float | None


class SlaOut(ClosedDict):
    """One `latency` sensor read as a service-level objective over the measured requests."""

    sensor: Annotated[str, Field(description="`sensor` or `sensors[i]` of experiment.yaml")]
    max_ms: float
    percentile: Annotated[float | None, Field(
        description="the sensor's `percentile`: p% of requests within max_ms; null: every one")]
    objective: Annotated[str, Field(description="in words, e.g. `p99 ≤ 200 ms`")]
    within: Annotated[int, Field(description="requests answered without error within max_ms")]
    n: Annotated[int, Field(description="measured requests that finished (errored ones "
                                        "count as not within)")]
    rate: float | None
    rate_ci: Annotated[Interval, Field(description="Beta posterior of within / n")]
    quantile: Annotated[QuantileOut | None, Field(
        description="the percentile over the n requests, an errored one as slower than any "
                    "answer; null without `percentile`")]
    verdict: Annotated[LoadVerdict | None, Field(description="null: no measured request finished")]
    reason: str


class LoadSubjectOut(ClosedDict):
    subject: str
    window_s: Annotated[float, Field(description="the measured window: duration_s, or less "
                                                 "when the run stopped early")]
    offered_rps: float
    sent_rps: Annotated[float | None, Field(description="sent / window_s")]
    achieved_rps: Annotated[float | None, Field(description="completed / window_s")]
    requests: LoadRequestsOut
    latency_ms: LoadLatencyOut
    error_rate: Annotated[float | None, Field(description="errored / (completed + errored)")]
    error_rate_ci: Interval
    schedule_error: ScheduleErrorOut
    sla: list[SlaOut]
    verdict: Annotated[LoadVerdict | None, Field(
        description="missed if any objective is missed, else inconclusive if any is, else "
                    "met; null without a latency sensor")]


class LoadOut(ClosedDict):
    """The summary's `load` block (docs/running.md, "SLA under load")."""

    rps: float
    duration_s: float
    warmup_s: float
    arrivals: Literal["uniform", "poisson"]
    order: Literal["cycle", "random"]
    max_in_flight: int
    level: float
    method: str
    subjects: list[LoadSubjectOut]


class SummaryRun(TypedDict):
    """What a run's summary says about the run itself, beside its results (the keys
    `build_summary` adds after `statistics`, in this order)."""

    sensor: str
    seed: int | None
    trials_per_case: int
    trials_mode: TrialsMode
    started_at: str | None
    finished_at: str | None
    skipped_cases: list[str]
    imported_from: NotRequired[str]
    format: NotRequired[str]
    #: which scorer decided the cases' verdicts (`scorers:`' first; docs/experiments.md,
    #: "Scorers"): `{kind: majority}` when none is named
    scorer: NotRequired[dict[str, Any]]


# --------------------------------------------------------------------------- plugins

class SpecPlugin(ClosedDict):
    """A plugin the run used (docs/plugins.md): its kind, name and distribution."""

    group: Literal["runtime", "sensor", "probe", "scorer", "reporter"]
    name: str
    distribution: str | None
    version: str | None


@functools.cache
def summary_adapter() -> TypeAdapter[Summary]:
    """Validates a summary read back (built on first use: a few milliseconds)."""
    return TypeAdapter(Summary)


def summary_problems(data: object) -> list[str]:
    """Why `data` is not a summary, in words (empty: it is one): the keys it lacks, then
    each value of the wrong type, as `field: message`. Keys the schema does not know are
    not a problem: a summary written by a newer ix (a MINOR version later) may add some."""
    try:
        summary_adapter().validate_python(data)
    except ValidationError as exc:
        errors = [e for e in exc.errors() if e["type"] != "extra_forbidden"]
    else:
        return []
    missing = [_where(e["loc"]) for e in errors if e["type"] == "missing"]
    wrong = [f"{_where(e['loc'])}: {e['msg']}" if e["loc"] else e["msg"]
             for e in errors if e["type"] != "missing"]
    return ([f"missing {', '.join(missing)}"] if missing else []) + wrong


def _where(loc: tuple[int | str, ...]) -> str:
    """`subjects[0].metrics`, from pydantic's ('subjects', 0, 'metrics')."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}" if out else str(part)
    return out
