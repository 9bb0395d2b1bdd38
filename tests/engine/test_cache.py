"""The observation cache: the on-disk store (`ix.store.cache`) and the record/replay runtime
wrapper (`ix.engine.cache`) around the real `mock` runtime."""

import asyncio
import dataclasses
import gzip
import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from conftest import mock_experiment, write
from ix.domain.errors import ConfigError, TrialError
from ix.domain.types import Subject
from ix.engine.cache import (
    CachingRuntime,
    check_mode,
    plan_subject_key,
    stimulus_of,
    subject_key,
    with_cache,
)
from ix.eval.models import EvalCase, EvalObservation
from ix.runtimes import RuntimeContext, build_runtime
from ix.store.cache import CACHE_DIR, ObservationCache, entry_key
from ix.store.layout import ExperimentDir

SUBJECT = Subject(name="s")
CASE = EvalCase(id="must-001", prompt="Use the skill, please.", expectation="must_trigger")
OTHER = EvalCase(id="must-002", prompt="Another prompt.", expectation="must_trigger")
KEY = "ab" + "0" * 62


class Counting:
    """A runtime that counts its calls, around another (optionally adding a trace)."""

    def __init__(self, inner: Any, trace: Any = None):
        self.inner = inner
        self.trace = trace
        self.calls = 0

    async def invoke(self, subject: Subject, stimulus: Any, *, seed: int = 0,
                     attempt: int = 0) -> Any:
        self.calls += 1
        obs = await self.inner.invoke(subject, stimulus, seed=seed, attempt=attempt)
        if self.trace is not None:
            obs = obs.model_copy(update={"trace": self.trace})
        return obs


class Fixed:
    """Answers with whatever it was given last, or raises it."""

    def __init__(self, answer: Any):
        self.answer = answer
        self.calls = 0

    async def invoke(self, subject: Subject, stimulus: Any, *, seed: int = 0,
                     attempt: int = 0) -> Any:
        self.calls += 1
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer


def mock(**options: Any) -> Counting:
    return Counting(build_runtime({"kind": "mock", "default_rate": 0.5, **options},
                                  RuntimeContext(target_skill="target")))


def call(rt: Any, case: EvalCase = CASE, seed: int = 7, attempt: int = 0) -> Any:
    return asyncio.run(rt.invoke(SUBJECT, case, seed=seed, attempt=attempt))


@pytest.fixture
def cache(tmp_path: Path) -> ObservationCache:
    return ObservationCache(tmp_path / "lab")


# --- the store -------------------------------------------------------------------------------

def test_round_trip_sharded_gzipped_and_key_order_kept(cache):
    value = {"observation": {"z": 1, "a": [1.5, "é"], "m": {"y": None, "b": True}}}
    assert cache.get(KEY) is None
    cache.put(KEY, value)
    path = cache.lab / CACHE_DIR / "ab" / f"{KEY}.json.gz"
    assert cache.path(KEY) == path and path.is_file()
    got = cache.get(KEY)
    assert got == value
    assert list(got["observation"]) == ["z", "a", "m"]  # not re-sorted
    assert KEY in cache and ("cd" + "0" * 62) not in cache
    cache.put(KEY, {"error": {"kind": "x", "message": "y"}})  # overwrites
    assert cache.get(KEY) == {"error": {"kind": "x", "message": "y"}}
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left


def test_entry_key_is_deterministic_and_covers_every_part():
    stim = {"id": "c", "prompt": "p", "expectation": "must_trigger"}
    key = entry_key("subj", stim, 1, 0)
    assert len(key) == 64 and key == entry_key("subj", dict(reversed(stim.items())), 1, 0)
    others = {entry_key("subj2", stim, 1, 0), entry_key("subj", {**stim, "prompt": "q"}, 1, 0),
              entry_key("subj", stim, 2, 0), entry_key("subj", stim, 1, 1)}
    assert key not in others and len(others) == 4


def test_torn_or_foreign_entries_are_ignored_never_returned(cache):
    cache.put(KEY, {"observation": {"content": "x" * 5000}})
    path = cache.path(KEY)
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])  # a write cut short
    assert cache.get(KEY) is None
    path.write_bytes(b"")
    assert cache.get(KEY) is None
    path.write_bytes(b"not gzip at all")
    assert cache.get(KEY) is None
    path.write_bytes(gzip.compress(b'{"format": 1, "key": "ab00'))  # torn JSON, whole gzip
    assert cache.get(KEY) is None
    other = "ab" + "1" * 62  # another key's entry under this name
    cache.put(other, {"observation": {}})
    path.write_bytes(cache.path(other).read_bytes())
    assert cache.get(KEY) is None
    path.write_bytes(gzip.compress(json.dumps({"format": 999, "key": KEY,
                                               "value": {}}).encode()))
    assert cache.get(KEY) is None
    cache.put(KEY, {"observation": {"content": "again"}})  # a torn entry is simply replaced
    assert cache.get(KEY) == {"observation": {"content": "again"}}


def test_stats_and_clear(cache):
    assert cache.stats() == {"path": str(cache.root), "entries": 0, "bytes": 0, "shards": 0}
    assert cache.clear() == 0
    keys = ["ab" + "1" * 62, "ab" + "2" * 62, "cd" + "3" * 62]
    for k in keys:
        cache.put(k, {"observation": {"content": k}})
    (cache.root / "cd" / ".leftover.tmp").write_bytes(b"12345")  # a crashed write's leftover
    stats = cache.stats()
    assert stats["entries"] == 3 and stats["shards"] == 2
    assert stats["bytes"] == sum(p.stat().st_size for p in cache.root.rglob("*")
                                 if p.is_file())
    assert cache.clear() == 3
    assert cache.stats()["entries"] == 0 and cache.stats()["bytes"] == 0
    assert all(cache.get(k) is None for k in keys)
    cache.put(keys[0], {"observation": {}})  # usable again after clearing
    assert cache.stats()["entries"] == 1


def test_put_refuses_what_json_cannot_hold_and_writes_nothing(cache):
    with pytest.raises(ValueError):
        cache.put(KEY, {"observation": {"cost_usd": math.nan}})
    with pytest.raises(TypeError):
        cache.put(KEY, {"observation": {"when": datetime.now(UTC)}})
    assert cache.get(KEY) is None and cache.stats()["bytes"] == 0
    with pytest.raises(ValueError, match="not a cache key"):
        cache.put("../../etc/passwd", {})


# --- the caching runtime ---------------------------------------------------------------------

def test_a_hit_does_not_call_the_subject_and_returns_the_same_observation(cache):
    inner = mock(latency_ms=3)
    rt = CachingRuntime(inner, cache, "subject-a", "use")
    first = call(rt)
    assert inner.calls == 1 and rt.counts() == {"hits": 0, "misses": 1, "recorded": 1,
                                                "unrecorded": 0}
    again = call(rt)
    assert inner.calls == 1 and rt.hits == 1
    assert isinstance(again, EvalObservation)
    assert again == first and again.duration_ms == first.duration_ms == 3
    # a fresh wrapper (a later run) over the same lab hits too
    later = CachingRuntime(mock(latency_ms=3), cache, "subject-a", "use")
    assert call(later) == first and later.inner.calls == 0


def test_each_part_of_the_key_misses_on_its_own(cache):
    inner = mock()
    rt = CachingRuntime(inner, cache, "subject-a")
    call(rt)
    call(rt, seed=8)
    call(rt, attempt=1)
    call(rt, case=OTHER)
    call(rt, case=CASE.model_copy(update={"metadata": {"x": 1}}))
    call(CachingRuntime(inner, cache, "subject-b"))
    assert inner.calls == 6 and cache.stats()["entries"] == 6


def test_replay_never_calls_the_subject(cache):
    inner = mock()
    with pytest.raises(TrialError) as miss:
        call(CachingRuntime(inner, cache, "k", "replay"))
    assert miss.value.kind == "cache_miss" and "must-001" in miss.value.message
    assert inner.calls == 0 and cache.stats()["entries"] == 0  # a miss is not recorded
    recorded = call(CachingRuntime(inner, cache, "k", "use"))
    replay = CachingRuntime(inner, cache, "k", "replay")
    assert call(replay) == recorded and inner.calls == 1 and replay.hits == 1


def test_errors_are_recorded_and_replayed_as_errors(cache):
    inner = mock(error_rates={"must-001": 1.0})
    rt = CachingRuntime(inner, cache, "k")
    with pytest.raises(TrialError) as first:
        call(rt)
    for mode in ("use", "replay"):
        with pytest.raises(TrialError) as again:
            call(CachingRuntime(inner, cache, "k", mode))  # type: ignore[arg-type]
        assert (again.value.kind, again.value.message) == (first.value.kind,
                                                           first.value.message)
        assert again.value.kind == "runtime_error"
    assert inner.calls == 1
    assert cache.get(rt.key(CASE, 7, 0)) == {"error": {"kind": "runtime_error", "message":
                                                       first.value.message}}


def test_errors_of_this_machine_and_bugs_are_not_recorded(cache):
    for exc in (TrialError("missing_api_key", "set OPENAI_API_KEY"), RuntimeError("a bug")):
        inner = Fixed(exc)
        rt = CachingRuntime(inner, cache, "k")
        for _ in range(2):
            with pytest.raises(type(exc)):
                call(rt)
        assert inner.calls == 2
    assert cache.stats()["entries"] == 0


def test_the_trace_survives_a_replay(cache):
    trace = [{"type": "system", "tools": ["Skill"]},
             {"type": "assistant", "content": [{"text": "hi", "n": 1.25}]}, "a raw line"]
    inner = mock()
    inner.trace = trace
    first = call(CachingRuntime(inner, cache, "k"))
    assert first.trace == trace
    replayed = call(CachingRuntime(inner, cache, "k", "replay"))
    assert replayed.trace == trace and replayed == first
    assert "trace" not in replayed.model_dump()  # still excluded from trials.jsonl
    # a trace value JSON lacks is kept as the run writes it: as text
    when = datetime(2024, 1, 2, tzinfo=UTC)
    inner.trace = [{"at": when}]
    call(CachingRuntime(inner, cache, "k"), seed=99)
    assert call(CachingRuntime(inner, cache, "k", "replay"), seed=99).trace == \
        [{"at": str(when)}]


def test_refresh_calls_the_subject_and_overwrites(cache):
    old = EvalObservation(content="old", duration_ms=5)
    new = EvalObservation(content="new", duration_ms=6, meta={"model": "m", "turns": 2})
    call(CachingRuntime(Fixed(old), cache, "k"))
    inner = Fixed(new)
    assert call(CachingRuntime(inner, cache, "k", "use")) == old and inner.calls == 0
    assert call(CachingRuntime(inner, cache, "k", "refresh")) == new and inner.calls == 1
    assert call(CachingRuntime(inner, cache, "k", "refresh")) == new and inner.calls == 2
    assert call(CachingRuntime(Fixed(old), cache, "k", "replay")) == new


def test_answers_that_cannot_be_recorded_pass_through(cache, tmp_path):
    for answer in ({"not": "an observation"}, EvalObservation(cost_usd=math.nan)):
        inner = Fixed(answer)
        rt = CachingRuntime(inner, cache, "k")
        assert call(rt) is answer and call(rt) is answer
        assert inner.calls == 2 and rt.unrecorded == 2 and rt.recorded == 0
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("x")
    rt = CachingRuntime(Fixed(EvalObservation()), ObservationCache(blocked), "k")
    assert call(rt) == EvalObservation() and rt.unrecorded == 1  # the disk refused: no error


def test_modes_are_checked():
    assert check_mode("replay") == "replay"
    with pytest.raises(ConfigError, match="allowed: use, refresh, replay"):
        check_mode("sometimes")
    with pytest.raises(ConfigError):
        CachingRuntime(Fixed(None), ObservationCache(Path("x")), "k", "nope")  # type: ignore


def test_stimulus_of_a_case_is_all_it_could_send():
    assert stimulus_of(CASE) == {"id": "must-001", "prompt": "Use the skill, please.",
                                 "expectation": "must_trigger", "rationale": "", "tags": [],
                                 "difficulty": None, "metadata": {}}
    assert stimulus_of({"a": 1}) == {"a": 1} and stimulus_of("p") == {"value": "p"}


def test_subject_key_covers_the_runtime_and_the_skills(tmp_path):
    skill = write(tmp_path / "skills" / "a" / "SKILL.md", "---\nname: a\n---\nbody\n")
    skills = [{"name": "a", "description": "does A", "path": str(skill)}]
    spec = {"kind": "mock", "default_rate": 0.5, "skill": "a"}
    key = subject_key(spec, skills)
    assert key == subject_key(dict(reversed(spec.items())), skills)
    variants = {
        subject_key({**spec, "default_rate": 0.6}, skills),
        subject_key(spec, [{**skills[0], "description": "does B"}]),
        subject_key(spec, [{**skills[0], "name": "b"}]),
        subject_key(spec, []),
        subject_key(spec, skills, target_skill="a"),
        subject_key(spec, skills, description="another"),
    }
    assert key not in variants and len(variants) == 6
    skill.write_text("---\nname: a\n---\nbody, edited\n")
    assert subject_key(spec, skills) != key


# --- a whole run through the engine ----------------------------------------------------------

def _lines(path: Path) -> list[dict[str, Any]]:
    drop = ("run_id", "started_at", "duration_ms")
    return [{k: v for k, v in json.loads(line).items() if k not in drop}
            for line in path.read_text().splitlines()]


def test_a_cached_run_reproduces_the_run_without_calling_the_subject(lab):
    from ix.engine.plan import build_plan
    from ix.engine.run import run_plan
    from ix.lab.loader import load_experiment

    d = mock_experiment(lab, rates={"must-001": 0.5, "not-001": 0.3}, trials=4,
                        runtime_extra="default_rate: 0.4\nerror_rates: {must-002: 0.5}\n"
                                      "latency_ms: 1")
    cache = ObservationCache(lab)
    counters: list[Counting] = []

    def cached_run(mode: str) -> list[dict[str, Any]]:
        plan = build_plan(load_experiment(d, lab))
        subjects = []
        for sp in plan.subjects:
            counting = Counting(sp.runtime)
            counters.append(counting)
            subjects.append(with_cache(dataclasses.replace(sp, runtime=counting), cache,
                                       mode))  # type: ignore[arg-type]
        plan = dataclasses.replace(plan, subjects=tuple(subjects))
        trials = ExperimentDir.at(plan.loaded.path).trials
        before = len(trials.read_text().splitlines()) if trials.exists() else 0
        result = run_plan(plan, command=["test"])
        assert result.status == "completed"
        # trials complete concurrently: the log's order is completion order, not the plan's
        return sorted(_lines(trials)[before:],
                      key=lambda r: (r["subject"], r["probe_id"], r["trial"], r["attempt"]))

    first = cached_run("use")
    n = len(first)
    assert n == 6 * 4 and counters[-1].calls == n
    assert any(r["error"] for r in first) and any(r["observation"] for r in first)
    assert cache.stats()["entries"] == n
    assert cached_run("use") == first and counters[-1].calls == 0
    assert cached_run("replay") == first and counters[-1].calls == 0
    assert cached_run("refresh") == first and counters[-1].calls == n
    sp = build_plan(load_experiment(d, lab)).subjects[0]
    assert plan_subject_key(sp) == subject_key(sp.runtime_spec, [], target_skill="target",
                                               description=sp.subject.description,
                                               name=sp.subject.name)


def test_under_common_seeds_the_key_tells_subjects_apart_by_name_alone(lab):
    """Two subjects alike but for their names now share every trial seed (DESIGN.md §2):
    each must replay its own answers, never the other's (a model samples each apart)."""
    from ix.engine.plan import build_plan
    from ix.engine.run import run_plan
    from ix.lab.loader import load_experiment

    d = lab / "twins"
    twin = "{kind: mock, default_rate: 0.5}"
    write(d / "experiment.yaml", "name: twins\ntrials: 3\nsensor: {kind: activation, skill: a}\n"
          f"subjects:\n  - name: one\n    runtime: {twin}\n  - name: two\n    runtime: {twin}\n")
    write(d / "cases" / "must-001.md", "---\nexpectation: must_trigger\n---\nDo it.\n")
    write(d / "cases" / "not-001.md", "---\nexpectation: should_not_trigger\n---\nDon't.\n")
    cache = ObservationCache(lab)
    calls = iter(range(10**6))

    class Fresh:  # a new answer at every call, as a sampled model gives
        async def invoke(self, subject: Any, stimulus: Any, *, seed: int = 0,
                         attempt: int = 0) -> EvalObservation:
            return EvalObservation(content=f"answer {next(calls)}")

    def answers(mode: str) -> dict[tuple[str, str, int], str]:
        plan = build_plan(load_experiment(d, lab))
        assert plan.seeding == "common"
        plan = dataclasses.replace(plan, subjects=tuple(
            with_cache(dataclasses.replace(sp, runtime=Fresh()), cache, mode,
                       seeding=plan.seeding) for sp in plan.subjects))  # type: ignore[arg-type]
        trials = ExperimentDir.at(d).trials
        before = len(trials.read_text().splitlines()) if trials.exists() else 0
        assert run_plan(plan, command=["test"]).status == "completed"
        return {(r["subject"], r["probe_id"], r["trial"]): r["observation"]["content"]
                for r in map(json.loads, trials.read_text().splitlines()[before:])}

    first = answers("use")
    assert len(set(first.values())) == len(first) == 2 * 2 * 3  # every trial called once
    lines = [json.loads(line) for line in ExperimentDir.at(d).trials.read_text().splitlines()]
    seeds = {(r["probe_id"], r["trial"], r["seed"]) for r in lines}
    assert len(seeds) == len(lines) // 2  # the twins drew the same seeds
    assert cache.stats()["entries"] == len(first)
    assert answers("replay") == first
    sp = build_plan(load_experiment(d, lab)).subjects
    assert plan_subject_key(sp[0]) != plan_subject_key(sp[1])
    # per subject, the seeds differ and the key stays what it was before common seeds
    assert plan_subject_key(sp[0], "per-subject") == plan_subject_key(sp[1], "per-subject") \
        == subject_key(sp[0].runtime_spec, [], target_skill="a")
