"""The trial log's fast reader (`ix.store.trial_scan`) reads back every line the writer can
produce exactly as a full JSON decode reads it — in the spacing of today's encoder and in the
stdlib's `", "` / `": "` spacing of logs written by older ix versions, alone or mixed."""

import asyncio
import json
import math
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ix.domain.types import Reading, Subject
from ix.engine.pipeline import OBSERVATION, READING, ScorerComponent, SensorFailure, TrialOutcome
from ix.engine.plan import SubjectPlan, TrialKey
from ix.eval.models import EvalCase, EvalObservation, ToolCall
from ix.matrix import Artifact, Construct
from ix.store import trial_scan
from ix.store.trial_lines import trial_line
from ix.store.trials import TrialWriter

RUN = "20261127T000000000Z-p17a"
START = datetime(2026, 11, 27, 0, 0, 0, 250000, tzinfo=UTC)

text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
names = st.one_of(st.sampled_from(["control", "treatment", "sübject ✓", 'q"uote', "b\\s"]),
                  text.filter(bool))
counts = st.integers(0, 10**12)
costs = st.one_of(st.just(0.0), st.floats(0, 1e6, allow_nan=False, allow_infinity=False))
metric = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                   st.floats(allow_nan=False, allow_infinity=False), text)
observations = st.one_of(st.none(), st.builds(
    EvalObservation, content=text,
    tool_calls=st.lists(st.builds(ToolCall, name=st.sampled_from(["Skill", "Bash"]),
                                  input=st.dictionaries(text, metric, max_size=2)),
                        max_size=2).map(tuple),
    duration_ms=st.integers(0, 10**7), tokens_input=counts, tokens_output=counts,
    cost_usd=costs, exit_code=st.none() | st.integers(-1, 255), stdout=st.none() | text,
    meta=st.none() | st.dictionaries(text, metric, max_size=3)))
readings = st.builds(Reading, sensor_name=st.sampled_from(["activation", "latency"]) | text,
                     passed=st.booleans(), score=st.none() | st.floats(0, 1),
                     metrics=st.dictionaries(text, metric, max_size=2), details=text)
sensed = st.one_of(st.lists(readings, max_size=3).map(tuple),
                   st.builds(lambda kind, message: SensorFailure({"kind": kind,
                                                                  "message": message}),
                             text, text))
errors = st.none() | st.fixed_dictionaries({"kind": st.sampled_from(["runtime_error",
                                                                     "timeout"]) | text,
                                            "message": text | st.just("x" * 3000)})


@st.composite
def records(draw: st.DrawFn) -> dict[str, object]:
    """A trial line as the engine's scorer builds it, with a trace's path now and then."""
    plan = SubjectPlan(Subject(name=draw(names)), {"kind": "mock"}, None, (), "x")  # type: ignore[arg-type]
    case = EvalCase(id=draw(names), prompt="p", expectation="must_trigger")
    key = TrialKey(plan, case, draw(st.integers(0, 40)), draw(st.integers(0, 2**63 - 1)),
                   draw(st.integers(0, 300)))
    error = draw(errors)
    observation = None if error else draw(observations)
    construct = Construct(key).append(Artifact(OBSERVATION, "trial", TrialOutcome(
        observation, error, START, draw(st.floats(0, 1e7))))).append(
        Artifact(READING, "sensor", () if error or observation is None else draw(sensed)))
    record = asyncio.run(ScorerComponent(RUN, draw(names)).run(construct))
    if draw(st.booleans()):
        record["trace"] = f"e/results/runs/{RUN}/traces/{draw(text)}.jsonl.gz"
    return record


def _stdlib(record: dict[str, object]) -> bytes:
    """The line as ix wrote it with the stdlib's encoder (older logs)."""
    return (json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n").encode()


def _reference(lines: list[bytes]) -> tuple[dict, dict, int]:
    """What a resume must know, by decoding every line in full."""
    latest: dict = {}
    usage: dict[str, list[float]] = {}
    count = 0
    for raw in lines:
        line = trial_line(json.loads(raw))
        assert line is not None and line.run_id == RUN
        count += 1
        code = (trial_scan.ERRORED if line.errored else trial_scan.PASSED if line.passed
                else trial_scan.FAILED)
        key = (line.subject, line.probe_id, line.trial)
        if key not in latest or min(line.attempt, 255) >= latest[key][0]:
            latest[key] = (min(line.attempt, 255), code)
        spent = usage.setdefault(line.subject, [0, 0, 0.0])
        spent[0] += line.tokens_input
        spent[1] += line.tokens_output
        spent[2] += line.cost_usd
    return latest, usage, count


def _read(log: Path, block: int) -> tuple[dict, dict, int]:
    warned: list[str] = []
    state = trial_scan.read_state(log, RUN, warned.append, block=block)
    assert warned == []
    got = {(s, p, t): (state.attempt(s, p, t), code) for s, p, t, code in state.outcomes()}
    return got, state.usage, state.lines


def _same(got: tuple[dict, dict, int], expected: tuple[dict, dict, int]) -> None:
    assert got[0] == expected[0]
    assert got[2] == expected[2]
    assert got[1].keys() == expected[1].keys()
    for subject, (tokens_in, tokens_out, cost) in expected[1].items():
        assert got[1][subject][:2] == [tokens_in, tokens_out]
        assert math.isclose(got[1][subject][2], cost, rel_tol=1e-12, abs_tol=1e-12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.data_too_large])
@given(batch=st.lists(records(), min_size=1, max_size=12),
       spacing=st.lists(st.booleans(), min_size=12, max_size=12),
       block=st.sampled_from([64, 1 << 12, 1 << 22]))
def test_every_line_the_writer_can_produce_reads_back_as_a_full_decode(tmp_path_factory, batch,
                                                                       spacing, block):
    """The writer's lines, and the same records as the stdlib wrote them, mixed in one log,
    read back by the fast reader (block by block, and line by line) as decoded in full."""
    log = tmp_path_factory.mktemp("scan") / "trials.jsonl"
    new = []
    with TrialWriter(log) as writer:
        for record, old in zip(batch, spacing, strict=False):
            if old:
                with log.open("ab") as f:  # what an older ix wrote before this one continued
                    f.write(_stdlib(record))
            else:
                writer.write(record)
                new.append(record)
    lines = log.read_bytes().splitlines(keepends=True)
    for raw, record in zip(lines, batch, strict=True):
        assert json.loads(raw) == record  # the same JSON values, whichever encoder wrote it
        fast = trial_scan._fast_fields(raw, RUN)
        assert fast in (None, trial_scan._json_fields(raw, RUN))
    _same(_read(log, block), _reference(lines))


def test_both_spacings_are_read_on_the_fast_path(tmp_path, monkeypatch):
    """Lines of ix's own shape, in either spacing, are read by the block reader itself (none
    falls back to a full decode), and count as a full decode counts them."""
    skill = (ToolCall(name="Skill", input={"skill": "x"}),)
    batch = []
    for trial in range(6):
        plan = SubjectPlan(Subject(name="sübject"), {"kind": "mock"}, None, (), "x")  # type: ignore[arg-type]
        key = TrialKey(plan, EvalCase(id="cäse", prompt="p", expectation="must_trigger"),
                       trial, 7, trial % 2)
        observation = EvalObservation(content="c", tool_calls=skill, duration_ms=3,
                                      tokens_input=trial, tokens_output=2, cost_usd=0.25 * trial)
        error = {"kind": "runtime_error", "message": "boom"} if trial == 5 else None
        construct = Construct(key).append(Artifact(OBSERVATION, "trial", TrialOutcome(
            None if error else observation, error, START, 1.5))).append(Artifact(
                READING, "sensor", () if error else (Reading(sensor_name="activation",
                                                             passed=trial % 3 == 0),)))
        batch.append(asyncio.run(ScorerComponent(RUN, "bench").run(construct)))
    log = tmp_path / "trials.jsonl"
    with log.open("wb") as f:
        for i, record in enumerate(batch):
            f.write(_stdlib(record) if i % 2 else
                    (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
                    .encode())
    alone: list[int] = []
    real = trial_scan._Scan._line
    monkeypatch.setattr(trial_scan._Scan, "_line", lambda self, raw, number: (
        alone.append(number), real(self, raw, number))[1])
    lines = log.read_bytes().splitlines(keepends=True)
    _same(_read(log, 1 << 22), _reference(lines))
    assert alone == []
    for raw in lines:
        assert trial_scan._fast_fields(raw, RUN) == trial_scan._json_fields(raw, RUN)
