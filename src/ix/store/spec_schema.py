"""The types of `runs/<run_id>/spec.yaml`, the record of how a run was made (DESIGN.md §4);
`ix.store.spec` reads and writes it. The engine and `ix import` write it; `--resume`, `ix
compare`, `ix report`, `ix ls`, `ix export` and the viewer read it. Closed like the summary,
so a key written but not declared here fails the test that validates a real run's spec.
"""

import functools
from typing import Any, Literal, NotRequired

from pydantic import TypeAdapter
from typing_extensions import TypedDict  # pydantic needs this one on Python < 3.12

from ix.eval.models import Seeding
from ix.eval.schemas import ClosedDict, SpecPlugin, StopCause, TrialsMode


class SpecSkill(ClosedDict):
    name: str
    path: str
    sha256: str | None
    description: str | None


class SpecSubject(ClosedDict):
    name: str
    description: NotRequired[str]
    profile: NotRequired[str | None]
    runtime: dict[str, Any]
    target_skill: NotRequired[str | None]
    skills: NotRequired[list[SpecSkill]]


class SpecGenerated(ClosedDict):
    """A case a `probe:` generated for the run (absent before 1.5)."""

    id: str
    by: str
    prompt: str


class SpecCases(ClosedDict):
    run: int
    skipped_acceptable: NotRequired[list[str]]
    sha256: NotRequired[str]
    generated: NotRequired[list[SpecGenerated]]


class SpecConfig(ClosedDict):
    """The experiment as it ran (`ix import`: its subjects and case count only)."""

    name: str
    description: NotRequired[str]
    sensor: NotRequired[dict[str, Any]]
    sensors: NotRequired[list[dict[str, Any]] | None]
    timeout_s: NotRequired[float]
    goal: NotRequired[dict[str, Any] | None]
    subjects: list[SpecSubject]
    cases: SpecCases
    load: NotRequired[dict[str, Any]]


class SpecVersions(ClosedDict):
    ix: str
    python: str
    platform: str
    executable: str
    host: str
    packages: dict[str, str]
    plugins: NotRequired[list[SpecPlugin]]


class SpecContinued(ClosedDict):
    """One `--resume` or `--retry-errors` of the run."""

    mode: str
    at: str
    command: list[str]
    executor: dict[str, Any]


class SpecBatch(ClosedDict):
    """One batch a `batch: true` runtime submitted (Message Batches / OpenAI Batch API): a
    later `--resume` collects its results instead of submitting its trials again."""

    id: str
    provider: str
    subject: str
    requests: int
    submitted_at: str


class SpecImport(ClosedDict):
    source: str
    format: str
    sha256: str


#: `import` is a Python keyword: the key is declared the functional way
_ImportKey = TypedDict("_ImportKey", {"import": NotRequired[SpecImport]})


SpecStatus = Literal["running", "completed", "cancelled", "failed"]


class RunSpec(ClosedDict, _ImportKey):
    """`spec.yaml`. `status` is `running` while a process executes the run; the keys from
    `stop_reason` on are written when it ends, `continued` by each resume, and `import`,
    `imported_from`, `format` and `origin` by `ix import` (which writes no `concurrency`,
    `overrides`, `git_commit`, `sources` or `executor`)."""

    run_id: str
    experiment: str
    experiment_dir: str
    lab: str
    status: SpecStatus
    started_at: str
    finished_at: str | None
    seed: int | None
    #: how its trial seeds were derived (DESIGN.md §2); absent: a run made before the key
    #: existed, whose seeds are `per-subject`
    seeding: NotRequired[Seeding]
    trials: int
    trials_mode: TrialsMode
    concurrency: NotRequired[int]
    overrides: NotRequired[dict[str, Any]]
    command: list[str]
    versions: SpecVersions
    git_commit: NotRequired[str | None]
    sources: NotRequired[dict[str, str]]
    config: SpecConfig
    executor: NotRequired[dict[str, Any]]
    continued: NotRequired[list[SpecContinued]]
    #: a longitudinal study's session: {index, of, every} (`sessions:`, docs/experiments.md)
    session: NotRequired[dict[str, Any]]
    batches: NotRequired[list[SpecBatch]]
    imported_from: NotRequired[str]
    format: NotRequired[str]
    origin: NotRequired[dict[str, Any] | None]
    stop_reason: NotRequired[str | None]
    stop_cause: NotRequired[StopCause | None]
    reason: NotRequired[str | None]
    observed: NotRequired[dict[str, list[str]]]
    trials_written: NotRequired[int]


@functools.cache
def spec_adapter() -> TypeAdapter[RunSpec]:
    """Validates a `spec.yaml` (the tests; readers take what ix wrote)."""
    return TypeAdapter(RunSpec)
