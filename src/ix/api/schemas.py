"""Every `--json` output of `ix`, as JSON Schemas generated from pydantic models (`ix schema`).

`SCHEMAS` names each document: the two files ix writes (`trial`, `summary`) and the output of
each command. The types of the files live in `ix.eval.schemas` (the summary's are the
TypedDicts its producers are annotated with), those of the reports in `ix.report.schemas`,
the rest here. docs/json.md documents them and the versioning rule.
"""

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from ix.eval.schemas import (
    SCHEMA_VERSION,
    Closed,
    Expectation,
    Interval,
    Summary,
    ToolCallOut,
    TrialLine,
)
from ix.report.schemas import CompareOutput, LeaderboardOutput, ReportOutput

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

# --------------------------------------------------------------------------- run, validate


class DryRunSubject(Closed):
    name: str
    runtime: str | None
    model: str | None
    trials: int
    estimated_input_tokens: int | None = Field(
        description="null for runtimes that spend no tokens (mock, lexical, command, ...)")
    estimated_cost_usd: float | None = Field(
        description="null for runtimes that spend no tokens; 0 when the model's price is "
                    "unknown")


class DryRunPlan(Closed):
    experiment: str
    path: str
    cases: int
    skipped_acceptable: int
    trials_per_case: str = Field(description="a number, or 'auto, up to N'")
    total_trials: int
    concurrency: int
    filters: list[str]
    subjects: list[DryRunSubject]


class DesignWarningOut(Closed):
    code: Literal["too-few-cases", "no-control", "one-trial-stochastic", "unbalanced",
                  "duplicate-prompt", "unseen-cases"]
    message: str
    field: str


class ValidatedSubject(Closed):
    name: str
    runtime: str
    runtime_source: str = Field(description="where the runtime kind was chosen: --runtime, "
                                            "'experiment.yaml <field>', ix.yaml, "
                                            "'built-in default', ...")
    skills: list[str]
    target_skill: str
    credentials_env: list[str] = Field(description="the variables the runtime's credentials "
                                                   "come from (any one); empty: none needed")
    credentials_present: bool = Field(description="one of them is set (true when none is "
                                                  "needed)")


class Validated(Closed):
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
    error: str | None = Field(None, description="--strict only: why it fails")


class NotValid(Closed):
    """An experiment that does not load or plan: its first problem, and all of them."""

    experiment: str
    path: str
    ok: Literal[False]
    error: str
    errors: list[str] = Field(description="every problem found, each 'file: field: message'")


# --------------------------------------------------------------------------- ls, plan, new

class ListedExperiment(Closed):
    name: str
    path: str
    cases: dict[str, int] = Field(description="must_trigger, should_not_trigger, acceptable "
                                              "(empty when it does not load)")
    subjects: list[str]
    last_run: str | None
    status: str | None
    f1: float | None
    error: str | None


class LsOutput(Closed):
    lab: str
    experiments: list[ListedExperiment]


class WidthAnswer(Closed):
    question: Literal["width"]
    n: int
    achieved_interval: Interval
    assumptions: list[str]


class IndependentAnswer(Closed):
    question: Literal["independent"]
    n_per_subject: int
    assumptions: list[str]


class MdeForCases(Closed):
    cases: int
    mde: float


class PairedAnswer(Closed):
    question: Literal["paired"]
    trials_per_case: int
    metric: str = Field(description="what the difference is a difference of, in words")
    n_cases: int | None = None
    mde: float | None = None
    mde_for_cases: MdeForCases | None = None
    assumptions: list[str]


class GoalAnswer(Closed):
    """How many cases settle the experiment's goal, simulated with ix's own rule (a `note`
    instead when there is nothing to plan: min_effect 0 and no --effect)."""

    question: Literal["goal"]
    cases: int | None = Field(description="the metric's cases (`unit`) that settle the goal "
                                          "with probability >= target; null: none up to "
                                          "`simulated_cases`")
    assumptions: list[str]
    note: str | None = None
    metric: str | None = None
    direction: str | None = None
    min_effect: float | None = None
    credibility: float | None = None
    effect: float | None = Field(None, description="the true effect planned for")
    trials_per_case: int | None = None
    unit: str | None = None
    target: float | None = None
    p_settle: float | None = Field(None, description="P(supported or refuted) at `cases`")
    p_supported: float | None = None
    p_refuted: float | None = None
    simulations: int | None = None
    simulated_cases: int | None = None
    t_start: int | None = Field(None, description="the one-sided t approximation's size")


class FromRun(Closed):
    summary: str
    p: float
    sigma2_a: float
    sigma2_b: float
    omega2: float
    cases: int
    trials: int
    notes: list[str]


class PlanOutput(Closed):
    answers: list[Annotated[WidthAnswer | IndependentAnswer | PairedAnswer | GoalAnswer,
                            Field(discriminator="question")]]
    from_run: FromRun | None = None


class NewOutput(Closed):
    name: str
    path: str
    files: list[str]


# --------------------------------------------------------------------------- results, query

class ResultRow(Closed):
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
    sensor: str | None
    error: str | None
    error_message: str | None
    tokens_input: int | None
    tokens_output: int | None
    tokens: int | None
    cost: float | None
    duration: float | None
    started_at: str | None
    invoked: list[str] = Field(description="the skills the trial invoked (Skill calls), each "
                                           "once, in order")
    first_invoked: str | None = Field(description="the first of them: the skill that took "
                                                  "the prompt; null when none")
    tags: list[str]
    difficulty: Literal["easy", "medium", "hard"] | None
    difficulty_level: int | None


class AggregateRow(Closed):
    """One group of `ix results --group-by ... --json` (or `--stats`: one row)."""

    experiment: str | None = None
    run_id: str | None = None
    subject: str | None = None
    probe_id: str | None = None
    tag: str | None = None
    difficulty: str | None = None
    expectation: str | None = None
    first_invoked: str | None = Field(None, description="--group-by invoked: the first skill "
                                                        "the trials invoked; null: none")
    n: int
    errors: int
    valid: int
    passed: int
    cases: int = Field(description="distinct cases (experiment, case id): the clusters")
    activation_rate: float | None = Field(
        description="passed / valid: share of valid trials in which the skill fired")
    activation_rate_lo: float | None
    activation_rate_hi: float | None
    votes: int = Field(description="majority votes: run x subject x must/should-not case "
                                   "with a valid trial")
    correct: int = Field(description="votes that match the expectation")
    correct_rate: float | None = Field(description="correct / votes")
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
    score_difficulty_r: float | None = None
    score_difficulty_lo: float | None = None
    score_difficulty_hi: float | None = None
    score_difficulty_n: int | None = None
    score_difficulty_method: Literal["pearson", "spearman"] | None = None


# --------------------------------------------------------------------------- export, import

class ExportOutput(Closed):
    run_id: str
    experiment: str
    format: str
    out: str
    files: list[str]
    trials: int


class ImportOutput(Closed):
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


# --------------------------------------------------------------------------- tag, annotate

class Tagged(Closed):
    tag: str
    run: str
    experiment: str
    moved_from: str | None
    unchanged: bool


class TagEntry(Closed):
    tag: str
    run: str
    experiment: str
    folder: str
    tagged_at: str
    tagged_by: str


class TagDeleted(Closed):
    tag: str
    run: str
    experiment: str
    deleted: Literal[True]


class AnnotationAdded(Closed):
    run: str
    experiment: str
    at: str
    user: str | None = None
    host: str | None = None
    case: str | None
    text: str


class AnnotationLine(Closed):
    at: str
    user: str | None = None
    host: str | None = None
    case: str | None
    text: str


class AnnotationList(Closed):
    run: str
    experiment: str
    annotations: list[AnnotationLine]


# --------------------------------------------------------------------------- batch, cache

class BatteryRun(Closed):
    experiment: str
    seed: int
    subjects: list[str]
    trials: int


class BatteryPlan(Closed):
    battery: str
    runs: list[BatteryRun]


class BatteryRow(Closed):
    experiment: str
    seed: int | None
    run_id: str
    status: str
    subject: str
    f1: float
    f1_ci: Interval | None
    precision: float
    recall: float
    trials: int
    errors: int
    cost_usd: float
    goal: str | None


class BatteryVerdict(Closed):
    experiment: str
    seed: int | None
    run_id: str
    status: str
    reason: str | None = Field(description="why the run failed or was cancelled")
    goal: Literal["supported", "refuted", "inconclusive"] | None
    verdict: str | None = Field(description="the goal's verdict line (`REFUTED — goal: …`); "
                                            "null without a goal")


class SeedValue(Closed):
    seed: int | None
    value: float | None


class SeedSpread(Closed):
    min: float | None
    max: float | None
    range: float | None
    sd: float | None = Field(description="sample standard deviation of the seeds' values")


class PooledSeeds(Closed):
    """One experiment × subject over the battery's seeds (docs/running.md, "Batteries")."""

    experiment: str
    subject: str
    metric: str
    value: float | None
    ci: Interval
    level: float
    interval: Literal["case votes", "clustered by case"]
    method: str
    cases: int
    seeds: int
    per_seed: list[SeedValue]
    spread: SeedSpread


class BatteryOutput(Closed):
    folder: str
    battery: str
    runs: int
    completed: int
    verdicts: list[BatteryVerdict]
    pooled: list[PooledSeeds]
    rows: list[BatteryRow]


class CacheStatsOutput(Closed):
    lab: str
    path: str
    entries: int
    bytes: int
    shards: int


class CacheClearOutput(Closed):
    lab: str
    path: str
    removed: int


# --------------------------------------------------------------------------- subjects, view

class RegistrySubject(Closed):
    name: str
    source: str
    description: str
    runtime: dict[str, Any]
    model: str | None
    skills: list[str]
    config: dict[str, Any]


class SubjectsListOutput(Closed):
    file: str
    subjects: list[RegistrySubject]


class SubjectAdded(RegistrySubject):
    replaced: bool


class SubjectTestOutput(Closed):
    name: str
    runtime: str
    model: str | None
    ok: bool
    latency_ms: float
    answer: str | None
    tool_calls: list[ToolCallOut]
    error: dict[str, str] | None
    notes: list[str]


class ViewOutput(Closed):
    url: str
    lab: str


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
