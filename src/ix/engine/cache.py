"""Record/replay: a runtime wrapper that answers from the lab's observation cache (`--cache`).

`CachingRuntime` sits between the engine and a subject's runtime. Each trial is looked up by
(subject key, stimulus, trial seed, attempt) in the lab's `ObservationCache`; the subject key
holds the subject's name where trial seeds are common to all subjects (`subject_key`):

- `use` (`--cache`): a hit is answered from the cache, the subject is not called; a miss calls
  the subject and records what came back;
- `refresh` (`--cache refresh`): the subject is always called, and its answer overwrites the
  entry;
- `replay` (`--cache replay`): a hit is answered from the cache; a miss is the trial error
  `cache_miss`, and the subject is never called.

What is recorded is the observation (its `trace` included, so a replayed run keeps its
transcripts) or the `TrialError` the runtime raised, which replays as the same error. The
recorded `duration_ms` of an observation is kept. Other exceptions (bugs, timeouts,
cancellation) are not recorded, nor are errors a user fixes outside the subject
(`UNCACHED_ERRORS`, e.g. a missing API key). What is recorded has passed through the run's
`Redactor` first: no known secret is ever written into the cache.
"""

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from pydantic import BaseModel, ValidationError

from ix.domain.errors import ConfigError, TrialError
from ix.domain.ports import ExperimentRuntime
from ix.domain.redaction import Redactor
from ix.domain.types import Subject
from ix.eval.models import EvalObservation, Seeding
from ix.runtimes.judge import LLMJudgeSensor
from ix.store.cache import ObservationCache, entry_key

if TYPE_CHECKING:
    from ix.engine.plan import SubjectPlan

CacheMode = Literal["use", "refresh", "replay"]
MODES: tuple[str, ...] = get_args(CacheMode)

#: Error kinds never recorded: they say something about this machine, not about the subject.
UNCACHED_ERRORS = frozenset({"cache_miss", "missing_api_key"})


def check_mode(mode: str, field: str = "--cache") -> CacheMode:
    """`mode` if it is one of `MODES`, else a `ConfigError` naming `field`."""
    if mode not in MODES:
        raise ConfigError(f"unknown cache mode {mode!r}; allowed: {', '.join(MODES)}",
                          field=field)
    return mode  # type: ignore[return-value]


def subject_key(runtime_spec: Mapping[str, Any], skills: Sequence[Mapping[str, Any]], *,
                target_skill: str | None = None, description: str = "",
                name: str | None = None) -> str:
    """The hash of everything that shapes a subject's answers.

    The resolved runtime spec (kind, model, options), each skill's name, description and the
    sha256 of its SKILL.md (read from the skill's `path`, unless the mapping carries a
    `sha256`), the skill the runtime is told to target (the `mock` runtime names it in its
    tool call) and the subject's description (templates of `command`/`http` may use it).
    Files a skill ships beside SKILL.md (scripts, references) are not part of the key.

    `name`, the subject's: given when trial seeds are common to every subject (DESIGN.md
    §2), as two subjects alike in all the rest still answer apart (a model's own sampling, a
    runtime that reads the name). Under `seeding: per-subject` the seed tells them apart,
    and the key stays what it was before common seeds existed.
    """
    doc = {
        "runtime": dict(runtime_spec),
        "skills": [{"name": s.get("name"), "description": s.get("description"),
                    "sha256": s.get("sha256") or _file_sha256(s.get("path"))} for s in skills],
        "target_skill": target_skill,
        "description": description,
    }
    if name is not None:
        doc["name"] = name
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def plan_subject_key(sp: "SubjectPlan", seeding: Seeding = "common") -> str:
    """`subject_key` of one subject of a plan whose trial seeds follow `seeding`."""
    return subject_key(sp.runtime_spec, sp.subject.config.get("skills") or (),
                       target_skill=sp.target_skill, description=sp.subject.description,
                       name=sp.subject.name if seeding == "common" else None)


def with_cache(sp: "SubjectPlan", cache: ObservationCache, mode: CacheMode,
               redactor: Redactor | None = None, *,
               seeding: Seeding = "common") -> "SubjectPlan":
    """The same subject plan, its runtime and its judges' answering from `cache` (what it
    records redacted by `redactor`: the run's); `seeding`: the plan's, which decides the
    subject's key."""
    wrapped = CachingRuntime(sp.runtime, cache, plan_subject_key(sp, seeding), mode, redactor)

    def judged(judge: LLMJudgeSensor) -> CachingRuntime:
        # a judge's answers are kept as a subject's: by its runtime and name, the rendered
        # rubric, the trial's seed and the repeat (issue 36: repeats are seeded and cached)
        key = subject_key(judge.runtime_spec, (), name=judge.judge.name)
        return CachingRuntime(judge.runtime, cache, key, mode, redactor)

    sensors = tuple(s.with_runtimes(judged) if isinstance(s, LLMJudgeSensor) else s
                    for s in sp.sensors)
    return dataclasses.replace(sp, runtime=wrapped, sensors=sensors)


def stimulus_of(stimulus: Any) -> dict[str, Any]:
    """What of a stimulus goes into the key: a case's every field (id, prompt, expectation,
    its history, and what templates may render: rationale, tags, difficulty, metadata), and
    its workspace's files (`Workspace.digest`)."""
    if isinstance(stimulus, BaseModel):
        dumped: dict[str, Any] = stimulus.model_dump(mode="json")
        if dumped.get("history") == []:  # a case without one keys as before history existed
            del dumped["history"]
        dumped.pop("checks", None)  # how an answer is graded, not what was asked
        if dumped.get("user") is None:  # a case without one keys as before simulated users
            dumped.pop("user", None)
        if "workspace" in dumped:  # its files' paths and contents, not where they came from
            workspace = getattr(stimulus, "workspace", None)
            if workspace is None:  # a case without one keys as before workspaces existed
                del dumped["workspace"]
            else:
                dumped["workspace"] = workspace.digest
        return dumped
    if isinstance(stimulus, Mapping):
        return dict(stimulus)
    return {"value": stimulus}


class CachingRuntime:
    """An `ExperimentRuntime` that records to and replays from an `ObservationCache`.

    Counters: `hits` (answered from the cache), `misses` (not in the cache), `recorded`
    (entries written), `unrecorded` (answers that could not be written: not an
    `EvalObservation`, not JSON, or the disk refused).
    """

    def __init__(self, inner: ExperimentRuntime, cache: ObservationCache, subject_key: str,
                 mode: CacheMode = "use", redactor: Redactor | None = None):
        self.inner = inner
        self.cache = cache
        self.subject_key = subject_key
        self.mode = check_mode(mode, field="mode")
        self.redactor = redactor or Redactor()
        self.hits = 0
        self.misses = 0
        self.recorded = 0
        self.unrecorded = 0

    def key(self, stimulus: Any, seed: int, attempt: int) -> str:
        return entry_key(self.subject_key, stimulus_of(stimulus), seed, attempt)

    async def invoke(
        self, subject: Subject, stimulus: Any, *, seed: int = 0, attempt: int = 0
    ) -> Any:
        if getattr(stimulus, "workspace", None) is not None:
            # what a subject made in its workspace is not recorded: replaying its answer
            # alone would show the sensors an untouched workspace (docs/outcomes.md)
            if self.mode == "replay":
                raise TrialError("cache_miss", "--cache replay: a case with a workspace is "
                                 "never replayed (the files a subject makes are not cached)")
            self.misses += 1
            return await self.inner.invoke(subject, stimulus, seed=seed, attempt=attempt)
        key = self.key(stimulus, seed, attempt)
        if self.mode != "refresh":
            entry = self.cache.get(key)
            replayed = _replay(entry) if entry is not None else None
            if replayed is not None:
                self.hits += 1
                return replayed.answer()
            self.misses += 1
            if self.mode == "replay":
                case = getattr(stimulus, "id", None)
                raise TrialError("cache_miss", "--cache replay: no recorded observation for "
                                 f"case {case!r}, seed {seed}, attempt {attempt} "
                                 "(the subject is never called in replay mode)")
        else:
            self.misses += 1
        try:
            observation = await self.inner.invoke(subject, stimulus, seed=seed,
                                                   attempt=attempt)
        except TrialError as exc:
            if exc.kind not in UNCACHED_ERRORS:
                self._record(key, {"error": {"kind": exc.kind,
                                             "message": self.redactor.text(exc.message)}})
            raise
        if isinstance(observation, EvalObservation):
            self._record_observation(key, observation)
        else:
            self.unrecorded += 1
        return observation

    def _record_observation(self, key: str, observation: EvalObservation) -> None:
        observation = self.redactor.tree(observation)
        value: dict[str, Any] = {"observation": observation.model_dump(mode="json")}
        if observation.trace is not None:
            try:
                # as the run writes traces (`default=str`), so a replay writes the same bytes
                value["trace"] = self.redactor.tree(json.loads(json.dumps(
                    observation.trace, default=str, allow_nan=False)))
            except (TypeError, ValueError):
                self.unrecorded += 1
                return
        self._record(key, value)

    def _record(self, key: str, value: dict[str, Any]) -> None:
        try:
            self.cache.put(key, value)
        except (OSError, TypeError, ValueError):  # a cache that cannot write costs a call
            self.unrecorded += 1
            return
        self.recorded += 1

    def counts(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses, "recorded": self.recorded,
                "unrecorded": self.unrecorded}

    def __getattr__(self, name: str) -> Any:  # anything else a runtime offers: the inner's
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)


@dataclasses.dataclass(frozen=True)
class _Replayed:
    observation: EvalObservation | None = None
    error: TrialError | None = None

    def answer(self) -> EvalObservation:
        if self.error is not None:
            raise self.error
        assert self.observation is not None
        return self.observation


def _replay(entry: dict[str, Any]) -> _Replayed | None:
    """A stored entry as what the runtime gave; None when it is not one (an older shape)."""
    error = entry.get("error")
    if isinstance(error, dict):
        kind, message = error.get("kind"), error.get("message")
        if isinstance(kind, str) and isinstance(message, str):
            return _Replayed(error=TrialError(kind, message))
        return None
    observation = entry.get("observation")
    if not isinstance(observation, dict):
        return None
    try:
        return _Replayed(observation=EvalObservation.model_validate(
            {**observation, "trace": entry.get("trace")}))
    except ValidationError:
        return None


def _file_sha256(path: Any) -> str | None:
    if not path:
        return None
    try:
        return hashlib.sha256(Path(str(path)).read_bytes()).hexdigest()
    except OSError:
        return None


__all__ = ["MODES", "UNCACHED_ERRORS", "CacheMode", "CachingRuntime", "ObservationCache",
           "check_mode", "plan_subject_key", "stimulus_of", "subject_key",
           "with_cache"]
