"""Inspect AI eval logs (the `.json` log format, version 2), written without inspect-ai.

One log is one subject of one ix run: the experiment is the task, the cases are the samples,
the trials are the epochs (epoch = trial + 1). Each scored sample has one score, `correct`:
1.0 when the trial's outcome matched the case's expectation (the sensor passed on a
`must_trigger` case, did not on a `should_not_trigger` one), else 0.0; the epochs of a sample
reduce by their mean, and `accuracy` and `stderr` are computed exactly as Inspect computes
them over the reduced samples. An errored trial is a sample with an `error` and no score.
Everything is derived from the run, never from the clock or a random draw, so exporting the
same run twice gives the same bytes. `ix.interchange.inspect_read` reads logs back for `ix import`;
docs/export.md has the full mapping.
"""

import contextlib
import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from ix.eval.models import EvalCase
from ix.interchange.export import json_text

SCORER = "correct"
LOG_VERSION = 2
STATUS = {"completed": "success", "cancelled": "cancelled", "failed": "error",
          "running": "started"}
_BASE57 = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def stable_id(*parts: str) -> str:
    """A 22-character base57 id (the shape of Inspect's ids) derived from `parts`."""
    n = int.from_bytes(hashlib.sha256("\x1f".join(parts).encode()).digest()[:16], "big")
    out = []
    for _ in range(22):
        n, r = divmod(n, 57)
        out.append(_BASE57[r])
    return "".join(out)


def model_name(subject_spec: Mapping[str, Any] | None) -> str:
    """Inspect's `provider/model`: the runtime kind and the subject's model, else the kind."""
    runtime = dict((subject_spec or {}).get("runtime") or {})
    kind, model = runtime.get("kind"), runtime.get("model")
    if isinstance(model, str) and model:
        return model if "/" in model or not kind else f"{kind}/{model}"
    return str(kind or "unknown")


def _utc(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def correct(record: Mapping[str, Any]) -> bool | None:
    """Whether a trial's outcome matched its case's expectation; None when it errored."""
    reading = record.get("reading")
    if record.get("error") or not isinstance(reading, Mapping):
        return None
    passed = bool(reading.get("passed"))
    return not passed if record.get("expectation") == "should_not_trigger" else passed


def _usage(observation: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not observation:
        return None
    tokens_in = int(observation.get("tokens_input") or 0)
    tokens_out = int(observation.get("tokens_output") or 0)
    return {"input_tokens": tokens_in, "output_tokens": tokens_out,
            "total_tokens": tokens_in + tokens_out,
            "total_cost": float(observation.get("cost_usd") or 0.0)}


def _add_usage(total: dict[str, Any], usage: Mapping[str, Any]) -> None:
    for key in ("input_tokens", "output_tokens", "total_tokens"):
        total[key] = total.get(key, 0) + usage[key]
    total["total_cost"] = round(total.get("total_cost", 0.0) + usage["total_cost"], 9)


def _answer(observation: Mapping[str, Any]) -> str:
    for key in ("content", "stdout", "body"):
        value = observation.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def _sample(record: Mapping[str, Any], case: EvalCase | None, model: str,
            run_id: str, subject: str) -> dict[str, Any]:
    case_id, trial = str(record["probe_id"]), int(record["trial"])
    prompt = case.prompt if case is not None else ""
    observation = record.get("observation") if isinstance(record.get("observation"),
                                                          Mapping) else None
    started = _utc(record.get("started_at"))
    duration = record.get("duration_ms")  # a hand-edited line may hold "x", NaN or 1e400
    duration_s = (float(duration) / 1000 if isinstance(duration, int | float)
                  and math.isfinite(duration) else 0.0)
    messages: list[dict[str, Any]] = [{"content": prompt, "source": "input", "role": "user"}]
    output: dict[str, Any] = {"model": model, "choices": [], "completion": ""}
    if observation is not None:
        answer = _answer(observation)
        assistant: dict[str, Any] = {"content": answer, "source": "generate",
                                     "role": "assistant", "model": model}
        calls = [{"id": f"call_{i}", "function": str(c.get("name")),
                  "arguments": dict(c.get("input") or {}), "type": "function"}
                 for i, c in enumerate(observation.get("tool_calls") or [])
                 if isinstance(c, Mapping)]
        if calls:
            assistant["tool_calls"] = calls
        messages.append(assistant)
        output = {"model": model, "choices": [{"message": assistant, "stop_reason": "stop"}],
                  "completion": answer}
    usage = _usage(observation)
    meta = {key: record.get(key) for key in ("run_id", "subject", "trial", "seed", "attempt",
                                             "expectation")}
    if case is not None:
        meta.update(tags=list(case.tags), difficulty=case.difficulty)
    sample: dict[str, Any] = {
        "id": case_id, "epoch": trial + 1, "input": prompt,
        "target": str(record.get("expectation") or ""),
        "messages": messages, "output": output,
    }
    right = correct(record)
    if right is not None:
        reading = record["reading"]
        sample["scores"] = {SCORER: {
            "value": 1.0 if right else 0.0,
            "explanation": str(reading.get("details") or ""),
            "metadata": {"passed": bool(reading.get("passed")), "reading": reading},
            "history": []}}
    sample.update({"metadata": {"ix": meta}, "store": {}, "events": [],
                   "model_usage": {model: usage} if usage else {}, "role_usage": {}})
    if started is not None:
        sample["started_at"] = _iso(started)
        with contextlib.suppress(OverflowError):  # a duration of centuries: no end time
            sample["completed_at"] = _iso(started + timedelta(seconds=duration_s))
    sample.update({"total_time": round(duration_s, 3), "working_time": round(duration_s, 3),
                   "uuid": stable_id(run_id, subject, case_id, str(trial))})
    error = record.get("error")
    if error:
        message = (f"{error.get('kind')}: {error.get('message')}"
                   if isinstance(error, Mapping) else str(error))
        sample["error"] = {"message": message, "traceback": "", "traceback_ansi": ""}
    elif right is None:
        sample["error"] = {"message": "no reading: the trial has no sensor verdict",
                           "traceback": "", "traceback_ansi": ""}
    sample["attachments"] = {}
    return sample


def _stderr(values: Sequence[float]) -> float:
    """Inspect's `stderr()`: sample standard deviation (ddof=1) over sqrt(n); 0 below n=2."""
    n = len(values)
    if n < 2:
        return 0.0
    mean = sum(values) / n
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) / math.sqrt(n)


def eval_log(*, run_id: str, experiment: str, subject: str, spec: Mapping[str, Any],
             records: Sequence[Mapping[str, Any]], cases: Mapping[str, EvalCase],
             case_order: Sequence[str], block: Mapping[str, Any] | None = None,
             ix_version: str = "") -> dict[str, Any]:
    """The Inspect eval log of one subject of a run, as JSON data (field order matters:
    Inspect's header-only reader stops at `samples`).

    `records` are the subject's trial lines, one per (case, trial) (the latest attempt);
    `case_order` the run's cases in order; `block` the subject's block of the run's summary;
    `ix_version` goes into the log's `packages`.
    """
    config: Mapping[str, Any] = (spec["config"] if isinstance(spec.get("config"), Mapping)
                                 else {})
    subject_spec = next((s for s in config.get("subjects") or []
                         if isinstance(s, Mapping) and s.get("name") == subject), None)
    model = model_name(subject_spec)
    trials = int(spec.get("trials") or 1)
    ids = list(dict.fromkeys([*case_order, *(str(r["probe_id"]) for r in records)]))
    position = {case_id: i for i, case_id in enumerate(ids)}
    ordered = sorted(records, key=lambda r: (int(r["trial"]), position[str(r["probe_id"])]))
    samples = [_sample(r, cases.get(str(r["probe_id"])), model, run_id, subject)
               for r in ordered]
    epochs = max([trials, *(int(r["trial"]) + 1 for r in records)])
    per_case: dict[str, list[float]] = {}
    for s in samples:
        if "scores" in s:
            per_case.setdefault(str(s["id"]), []).append(s["scores"][SCORER]["value"])
    reduced: list[dict[str, Any]] = [
        {"value": sum(v) / len(v), "history": [], "sample_id": case_id}
        for case_id in ids if (v := per_case.get(case_id))]
    values = [float(r["value"]) for r in reduced]
    created = _utc(spec.get("started_at"))
    finished = _utc(spec.get("finished_at"))
    status = STATUS.get(str(spec.get("status")), "error")
    total_usage: dict[str, Any] = {}
    for s in samples:
        for usage in s["model_usage"].values():
            _add_usage(total_usage, usage)
    runtime = dict((subject_spec or {}).get("runtime") or {})
    metrics: dict[str, Any] = {
        "accuracy": {"name": "accuracy", "value": sum(values) / len(values) if values else 0.0,
                     "params": {}},
        "stderr": {"name": "stderr", "value": _stderr(values), "params": {}},
    }
    ix_meta = {"run_id": run_id, "experiment": experiment, "subject": subject,
               "run_status": spec.get("status"), "seed": spec.get("seed"),
               "trials_per_case": trials,
               # what `ix import` needs to rebuild the experiment as it was
               "subjects": [str(s["name"]) for s in config.get("subjects") or []
                            if isinstance(s, Mapping) and s.get("name")],
               "goal": config.get("goal") if isinstance(config.get("goal"), Mapping) else None}
    log: dict[str, Any] = {
        "version": LOG_VERSION,
        "status": status,
        "eval": {
            "eval_id": stable_id("eval", run_id, subject),
            "run_id": stable_id("run", run_id),
            "created": _iso(created) or "1970-01-01T00:00:00+00:00",
            "task": experiment,
            "task_id": stable_id("task", experiment),
            "task_version": 0,
            "task_attribs": {}, "task_args": {}, "task_args_passed": {},
            "dataset": {"name": experiment, "samples": len(ids), "sample_ids": ids,
                        "shuffled": False},
            "model": model,
            "model_generate_config": {},
            "model_args": {},
            "config": {"epochs": epochs, "epochs_reducer": ["mean"]},
            "packages": {"ix-lab": ix_version} if ix_version else {},
            "metadata": {"ix": ix_meta},
            "scorers": [{"name": SCORER, "options": {},
                         "metrics": [{"name": "inspect_ai/accuracy", "options": {}},
                                     {"name": "inspect_ai/stderr", "options": {}}],
                         "metadata": {}}],
        },
        "plan": {"name": "plan",
                 "steps": [{"solver": f"ix/{runtime.get('kind') or 'unknown'}",
                            "params": runtime, "params_passed": {}}],
                 "config": {}},
        "results": {
            "total_samples": len(ids) * epochs,
            "completed_samples": sum(1 for s in samples if "scores" in s),
            "scores": [{"name": SCORER, "scorer": SCORER, "reducer": "mean",
                        "scored_samples": len(reduced),
                        "unscored_samples": len(ids) - len(reduced),
                        "params": {}, "metrics": metrics}],
            "headline": {"scorer": SCORER, "score": SCORER, "metric": "accuracy",
                         "reducer": "mean"},
            "metadata": {"ix": _ix_results(block)},
        },
        "stats": {"started_at": _iso(created) or "", "completed_at": _iso(finished) or "",
                  "model_usage": {model: total_usage} if total_usage else {},
                  "role_usage": {}},
    }
    if status == "error":
        why = spec.get("stop_reason") or "see its spec.yaml"
        log["error"] = {"message": f"the ix run failed: {why}", "traceback": "",
                        "traceback_ansi": ""}
    log.update({"invalidated": False, "tags": [], "metadata": {"ix": ix_meta},
                "samples": samples,
                "reductions": [{"scorer": SCORER, "reducer": "mean", "samples": reduced}]})
    return log


def _ix_results(block: Mapping[str, Any] | None) -> dict[str, Any]:
    """ix's own numbers for the subject (from the run's summary), beside Inspect's."""
    if not block:
        return {}
    return {"metrics": block.get("metrics"), "trial_level": block.get("trial_level"),
            "errors": block.get("errors"), "interpretation": block.get("interpretation")}


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.-]+", "-", text).strip("-") or "x"


def log_file_name(log: Mapping[str, Any], subject: str) -> str:
    """Inspect's `{created}_{task}_{model}_{id}.json` pattern, the subject in the model's
    place (its name is unique within a run)."""
    spec = log["eval"]
    created = spec["created"][:19].replace(":", "-") + "+00-00"
    return f"{created}_{_slug(spec['task'])}_{_slug(subject)}_{spec['eval_id']}.json"


def dumps_log(log: Mapping[str, Any]) -> str:
    """The log as JSON (a NaN or infinity from a hand-edited trial line as null)."""
    return json_text(log)
