"""Inspect AI eval logs read for `ix import --format inspect`, without inspect-ai.

Lenient where Inspect is lenient (unknown keys are kept and ignored), strict where ix needs a
value: a missing task, an epoch below 1 or a score that is not a number, C/I/P/N or yes/no is
a `ConfigError` naming the file and the field. docs/export.md has the mapping.
"""

import json
import math
from pathlib import Path
from typing import Annotated, Any

from pydantic import ConfigDict, Field, ValidationError

from ix.domain.errors import ConfigError
from ix.domain.model import Model
from ix.eval.validation import from_validation_error
from ix.interchange.inspect_log import LOG_VERSION


class _Open(Model):
    model_config = ConfigDict(extra="allow")


class _Score(_Open):
    value: str | int | float | bool | list[Any] | dict[str, Any] | None = None
    explanation: str | None = None
    metadata: dict[str, Any] | None = None


#: A count or an amount Inspect recorded: from 0 and finite (a NaN would reach no trial line).
_Amount = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class _Usage(_Open):
    input_tokens: Annotated[int, Field(ge=0, lt=2**63)] | None = 0
    output_tokens: Annotated[int, Field(ge=0, lt=2**63)] | None = 0
    total_cost: _Amount | None = None


class _Sample(_Open):
    id: int | str
    epoch: int = Field(default=1, ge=1)
    input: str | list[Any] = ""
    target: str | list[str] = ""
    output: dict[str, Any] | None = None
    scores: dict[str, _Score] | None = None
    error: dict[str, Any] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    model_usage: dict[str, _Usage] = Field(default_factory=dict)
    started_at: str | None = None
    total_time: _Amount | None = None


class _EvalSpec(_Open):
    task: str = Field(min_length=1)
    model: str = ""
    created: str | None = None
    metadata: dict[str, Any] | None = None


class _EvalScore(_Open):
    name: str


class _Results(_Open):
    scores: list[_EvalScore] = Field(default_factory=list)


class _Log(_Open):
    version: int
    status: str
    eval: _EvalSpec
    results: _Results | None = None
    samples: list[_Sample] | None = None


def parse_log(path: Path, text: str) -> _Log:
    """A log file's content, checked; every problem is a `ConfigError` naming the field."""
    try:
        data = json.loads(text)
    except RecursionError:
        raise ConfigError("not a JSON Inspect log (nested too deeply to read)",
                          file=path) from None
    except ValueError as exc:
        raise ConfigError(f"not a JSON Inspect log ({str(exc)[:200]})", file=path) from None
    if not isinstance(data, dict) or "eval" not in data:
        raise ConfigError("not an Inspect eval log (no 'eval' header)", file=path)
    try:
        log = _Log.model_validate(data)
    except ValidationError as exc:
        raise from_validation_error(exc, _Log, file=path) from None
    if log.version > LOG_VERSION:
        raise ConfigError(f"log format version {log.version} is newer than the {LOG_VERSION} "
                          "ix reads", file=path, field="version")
    if not log.samples:
        raise ConfigError("the log holds no samples (header-only, or written without "
                          "samples)", file=path, field="samples")
    return log


def _to_float(value: Any) -> float | None:
    """Inspect's `value_to_float`: C=1, P=0.5, I=N=0, booleans and yes/no, numbers as is."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        number = float(value) if abs(value) < 1e300 else math.inf
        return number if math.isfinite(number) else None
    if isinstance(value, str):
        text = value.strip().lower()
        named = {"c": 1.0, "p": 0.5, "i": 0.0, "n": 0.0, "yes": 1.0, "true": 1.0,
                 "no": 0.0, "false": 0.0}
        if text in named:
            return named[text]
        try:
            number = float(text)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def _prompt(value: str | list[Any]) -> str:
    if isinstance(value, str):
        return value
    parts = []
    for message in value:
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                parts += [c.get("text", "") for c in content if isinstance(c, dict)]
    return "\n\n".join(p for p in parts if p)


def log_trials(path: Path, log: _Log) -> tuple[str, list[dict[str, Any]], dict[str, str]]:
    """(subject, trial records, prompt of each case) of a parsed log.

    The subject is the ix subject recorded in the log's metadata, else the log's model with
    each `/` made a `:` (`openai:gpt-4o`).
    Each sample epoch becomes a trial (trial = epoch - 1) judged by the log's first scorer.
    """
    raw_meta = (log.eval.metadata or {}).get("ix")
    ix_meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
    # a model's `/` (`openai/gpt-4o`) cannot be in a subject's name (it is a file-name part)
    subject = str(ix_meta.get("subject") or (log.eval.model or "inspect").replace("/", ":"))
    scorer = log.results.scores[0].name if log.results and log.results.scores else None
    records: list[dict[str, Any]] = []
    prompts: dict[str, str] = {}
    for i, s in enumerate(log.samples or []):
        field = f"samples[{i}]"
        case_id = str(s.id)
        prompts.setdefault(case_id, _prompt(s.input))
        raw = s.metadata.get("ix")
        meta: dict[str, Any] = raw if isinstance(raw, dict) else {}
        expectation = meta.get("expectation") or (s.target if s.target in (
            "must_trigger", "should_not_trigger", "acceptable") else "must_trigger")
        record: dict[str, Any] = {
            "subject": subject, "probe_id": case_id, "trial": s.epoch - 1,
            "seed": meta.get("seed") if isinstance(meta.get("seed"), int) else None,
            "attempt": meta.get("attempt") if isinstance(meta.get("attempt"), int) else 0,
            "expectation": expectation,
            "started_at": s.started_at or log.eval.created,
            "duration_ms": round((s.total_time or 0.0) * 1000, 3),
            "observation": None, "reading": None, "error": None,
        }
        if s.error is not None:
            record["error"] = {"kind": "inspect_error",
                               "message": str(s.error.get("message") or "sample error")}
            records.append(record)
            continue
        scores = s.scores or {}
        name = scorer if scorer in scores else next(iter(scores), None)
        if name is None:
            record["error"] = {"kind": "unscored", "message": "the sample has no score"}
            records.append(record)
            continue
        score = scores[name]
        reading = (score.metadata or {}).get("reading")
        if not (isinstance(reading, dict) and isinstance(reading.get("passed"), bool)):
            value = _to_float(score.value)
            if value is None:
                raise ConfigError(f"score value {score.value!r} is not a number, C/I/P/N, or "
                                  "yes/no", file=path, field=f"{field}.scores.{name}.value")
            right = value > 0.5
            reading = {"sensor_name": name,
                       "passed": not right if expectation == "should_not_trigger" else right,
                       "score": value, "metrics": {}, "details": score.explanation or ""}
        record["reading"] = reading
        record["observation"] = _observation(s)
        records.append(record)
    return subject, records, prompts


def _observation(s: _Sample) -> dict[str, Any]:
    output = s.output or {}
    choices = output.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    listed = message.get("tool_calls") if isinstance(message, dict) else None
    calls = [{"name": str(c.get("function")), "input": c.get("arguments") or {}}
             for c in (listed if isinstance(listed, list) else []) if isinstance(c, dict)]
    tokens_in = sum(u.input_tokens or 0 for u in s.model_usage.values())
    tokens_out = sum(u.output_tokens or 0 for u in s.model_usage.values())
    cost = sum(u.total_cost or 0.0 for u in s.model_usage.values())
    return {"content": str(output.get("completion") or ""), "tool_calls": calls,
            "duration_ms": round((s.total_time or 0.0) * 1000),
            "tokens_input": tokens_in, "tokens_output": tokens_out, "cost_usd": cost}
