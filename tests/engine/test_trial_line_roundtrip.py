"""Every kind of line the engine writes to `trials.jsonl` reads back identically: by
`json.loads`, by the lab's decoder, and by the resume reader's byte parsers, which take each
of them on their fast path (they depend on the exact bytes the writer produces)."""

import asyncio
import json
from datetime import UTC, datetime

import pytest

from ix.domain.types import Reading, Subject
from ix.engine.pipeline import (
    OBSERVATION,
    READING,
    ScorerComponent,
    SensorFailure,
    TrialOutcome,
    _reading,
)
from ix.engine.plan import SubjectPlan, TrialKey
from ix.engine.run import _internal_error_record
from ix.eval.models import EvalCase, EvalObservation, ToolCall
from ix.matrix import Artifact, ComponentError, Construct
from ix.store import trial_scan
from ix.store.trial_lines import TrialRecord, decode_line, trial_line
from ix.store.trial_scan import _fast_fields, _json_fields, read_state
from ix.store.trials import TrialWriter

RUN = "20261126T204500123Z-ab12"
PLUGIN = "plugin-dict"  # the case whose observation a plugin runtime returned as a dict
START = datetime(2026, 11, 26, 20, 45, 0, 123456, tzinfo=UTC)


def _key(subject: str = "control", case: str = "must-1", trial: int = 0,
         attempt: int = 0) -> TrialKey:
    plan = SubjectPlan(Subject(name=subject), {"kind": "mock"}, None, (), "x")  # type: ignore[arg-type]
    return TrialKey(plan, EvalCase(id=case, prompt="p", expectation="must_trigger"), trial,
                    (1 << 63) - 1 - trial, attempt)


def _record(key: TrialKey, observation: object, readings: object,
            error: dict[str, str] | None = None, duration_ms: float = 12.3456789
            ) -> dict[str, object]:
    construct = Construct(key).append(Artifact(OBSERVATION, "trial", TrialOutcome(
        observation, error, START, duration_ms))).append(Artifact(READING, "sensor", readings))
    return asyncio.run(ScorerComponent(RUN, "bénch ✓").run(construct))


def _hit(passed: bool = True, details: str = "x invoked") -> Reading:
    return Reading(sensor_name="activation", passed=passed, score=float(passed), details=details)


def _records() -> list[dict[str, object]]:
    """One record of each kind the engine writes."""
    skill = (ToolCall(name="Skill", input={"skill": "x"}),)
    out = [
        # passed and failed, as the mock runtime and the activation sensor make them
        _record(_key(trial=0), EvalObservation(content="Using x.", tool_calls=skill),
                (_hit(),)),
        _record(_key(trial=1), EvalObservation(content="Answered directly."),
                (_hit(False, "x not invoked (invoked: ÿ, \"q\")"),)),
        # the runtime failed: no observation, no reading, an error
        _record(_key(trial=2, attempt=3), None, (),
                {"kind": "runtime_error", "message": 'boom "quoted" \\ ünï 😀\n\ttab'}),
        # the sensor could not judge
        _record(_key(trial=3), EvalObservation(content="?"),
                SensorFailure({"kind": "judge_unparseable", "message": "no verdict"})),
        # usage, capability fields, meta, floats that print long, non-ASCII everywhere
        _record(_key("sübject ✓", "cäse/1 😀", 4), EvalObservation(
            content="héllo\u2028world\x00", duration_ms=1234, tokens_input=123456789,
            tokens_output=42, cost_usd=0.1 + 0.2, exit_code=3, stdout="out", stderr="",
            status=200, headers={"x-h": "v"}, body="{}",
            meta={"model": "m-1", "turns": 2, "ratio": 1e-07, "big": 1e22, "none": None}),
            (Reading(sensor_name="exit_code", passed=False, score=0.0,
                     metrics={"exit_code": 3, "ms": 2.5e-05}, details="exit code 3"),),
            duration_ms=0.1 + 0.7),
        # several sensors: `readings` beside the first one's `reading`
        _record(_key(trial=5), EvalObservation(content="c", tool_calls=skill, duration_ms=7),
                (_hit(), Reading(sensor_name="latency", passed=True, score=None,
                                 metrics={"latency_ms": 7}, details="7 ms"))),
        # tool calls whose inputs are not flat, and an observation a plugin gave as a dict
        _record(_key(trial=6), EvalObservation(tool_calls=(ToolCall(name="Bash", input={
            "cmd": ["ls", "-l"], "opts": {"a": None, "b": (1, 2.5)}}), *skill)), (_hit(),)),
        _record(_key(case=PLUGIN, trial=7), {"content": "raw", "tokens_input": 5, "cost_usd": 0.25,
                                "tool_calls": []}, (_hit(False),)),
    ]
    # a trace's path, as the engine adds it after the scorer
    traced = _record(_key(trial=8), EvalObservation(content="t"), (_hit(),))
    traced["trace"] = "e/results/runs/R/traces/control/must-1-trial-8-attempt-0.jsonl.gz"
    out.append(traced)
    # a bug in a component: the internal error record
    crashed = Construct(_key(trial=9)).append(Artifact(OBSERVATION, "trial", TrialOutcome(
        None, None, START, 1.0)))
    out.append(_internal_error_record(crashed, RUN, "bénch ✓", ComponentError(
        "sensor", crashed, ValueError("bad ü"))))
    return out


def test_every_kind_of_trial_line_reads_back_identically(tmp_path, monkeypatch):
    records = _records()
    log = tmp_path / "trials.jsonl"
    with TrialWriter(log) as writer:
        for record in records:
            writer.write(record)
    lines = log.read_bytes().splitlines(keepends=True)
    assert len(lines) == len(records)
    for raw, record in zip(lines, records, strict=True):
        # the line is its type: every required key, no other, in the type's order
        assert TrialRecord.__required_keys__ <= record.keys()
        assert list(record) == [k for k in TrialRecord.__annotations__ if k in record]
        # the record's JSON, compact (the fast reader reads this spacing and the stdlib's of
        # older logs: tests/store/test_trial_scan.py), its text as UTF-8
        assert raw.startswith(b'{"run_id":"') and b"\\u00e9" not in raw
        assert json.loads(raw) == record
        assert decode_line(raw) == record
        assert trial_line(record) is not None
        fast = _fast_fields(raw, RUN)
        # the byte parser reads every line of ix's own observation types itself; a dict a
        # plugin runtime returned may be read by the full decoder instead
        if record["probe_id"] != PLUGIN:
            assert fast is not None, raw
        assert fast in (None, _json_fields(raw, RUN))

    alone = []  # lines the block reader gives up on and reads one by one
    real_line = trial_scan._Scan._line
    monkeypatch.setattr(trial_scan._Scan, "_line",
                        lambda self, raw, number: (alone.append(number),
                                                   real_line(self, raw, number))[1])
    state = read_state(log, RUN)
    assert alone == [i + 1 for i, r in enumerate(records) if r["probe_id"] == PLUGIN]
    assert state.lines == len(records)
    expected = {}
    usage: dict[str, list[float]] = {}
    for record in records:
        line = trial_line(record)
        assert line is not None
        code = (trial_scan.ERRORED if line.errored else trial_scan.PASSED if line.passed
                else trial_scan.FAILED)
        expected[(line.subject, line.probe_id, line.trial)] = (line.attempt, code)
        spent = usage.setdefault(line.subject, [0, 0, 0.0])
        spent[0] += line.tokens_input
        spent[1] += line.tokens_output
        spent[2] += line.cost_usd
    got = {(s, p, t): (state.attempt(s, p, t), code) for s, p, t, code in state.outcomes()}
    assert got == expected
    assert state.usage == usage


@pytest.mark.parametrize("reading", [
    Reading(sensor_name="a", passed=True, score=1.0, details="d"),
    Reading(sensor_name="a", passed=False),
    Reading(sensor_name="a", passed=False, score=0, metrics={"m": (1, 2)}),
    Reading(sensor_name="a", passed=True, score=0.25, metrics={"x": None}),
    Reading.model_construct(sensor_name="a", passed=True, score=1, details="built"),
])
def test_the_reading_is_its_pydantic_dump(reading):
    """The scorer's hand-built reading is pydantic's dump, to the byte."""
    assert json.dumps(_reading(reading)) == json.dumps(reading.model_dump(mode="json"))
