"""Continuing a run: `--resume` runs exactly the trials not yet recorded, `--retry-failed`
re-runs the ones whose latest attempt errored.

The trial log is the truth: a run's records are read back from `trials.jsonl` (a torn last
line is skipped with a warning, so that trial runs again), the latest attempt of each
(subject, probe_id, trial) counts, and the tallies are rebuilt from them before the missing
trials run — so the final summary equals that of an uninterrupted run. A retried trial keeps
its trial seed and gets the next attempt number, which runtimes mix into their draws.

What is kept of a run is compact — two bytes per trial (outcome and attempt) in arrays per
(subject, case), and the usage per subject — so resuming a run of a million trials needs
a few megabytes, not the records themselves.
"""

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ix.domain.errors import ConfigError
from ix.lab.results import TRIALS_FILE
from ix.lab.runs import RUNS_DIR, read_spec

Mode = Literal["resume", "retry_failed"]
MISSING, PASSED, FAILED, ERRORED = 0, 1, 2, 3


@dataclass
class RunState:
    """The latest outcome and attempt of every trial a run recorded, and what it spent."""

    codes: dict[tuple[str, str], bytearray] = field(default_factory=dict)
    attempts: dict[tuple[str, str], bytearray] = field(default_factory=dict)
    usage: dict[str, list[float]] = field(default_factory=dict)  # tokens in, out, cost
    lines: int = 0

    def record(self, subject: str, probe_id: str, trial: int, attempt: int, code: int) -> None:
        pair = (subject, probe_id)
        codes = self.codes.setdefault(pair, bytearray())
        attempts = self.attempts.setdefault(pair, bytearray())
        if trial >= len(codes):
            grow = trial + 1 - len(codes)
            codes.extend(bytes(grow))
            attempts.extend(bytes(grow))
        attempt = min(attempt, 255)
        if codes[trial] == MISSING or attempt >= attempts[trial]:
            codes[trial], attempts[trial] = code, attempt

    def code(self, subject: str, probe_id: str, trial: int) -> int:
        codes = self.codes.get((subject, probe_id))
        return codes[trial] if codes is not None and trial < len(codes) else MISSING

    def attempt(self, subject: str, probe_id: str, trial: int) -> int:
        return self.attempts[(subject, probe_id)][trial]

    def outcomes(self) -> Iterator[tuple[str, str, int, int]]:
        for (subject, probe_id), codes in self.codes.items():
            for trial, code in enumerate(codes):
                if code != MISSING:
                    yield subject, probe_id, trial, code


@dataclass(frozen=True)
class Continuation:
    run_id: str
    mode: Mode
    spec: dict[str, Any]
    state: RunState

    @property
    def recorded(self) -> int:
        """Lines the run has in the log (every attempt)."""
        return self.state.lines

    def keeps(self, code: int) -> bool:
        """Whether a recorded outcome stands (is counted, and not run again)."""
        return code != MISSING if self.mode == "resume" else code in (PASSED, FAILED)

    def to_run(self, subject: str, probe_id: str, trial: int) -> int | None:
        """The attempt number to run this trial with, or None when it is not to run."""
        code = self.state.code(subject, probe_id, trial)
        if self.mode == "resume":
            return 0 if code == MISSING else None
        if code != ERRORED:
            return None
        return self.state.attempt(subject, probe_id, trial) + 1


def read_state(trials: Path, run_id: str,
               warn: Callable[[str], None] | None = None) -> RunState:
    """Stream the log once, keeping only what continuing the run needs."""
    state = RunState()
    if not trials.is_file():
        return state
    marker = f'"run_id": "{run_id}"'.encode()
    with trials.open("rb") as f:
        for number, raw in enumerate(f, start=1):
            if marker not in raw:  # another run's line (ix writes this key verbatim)
                if raw.strip() and not raw.endswith(b"\n") and warn is not None:
                    warn(f"{trials}: line {number}: skipped torn last line (a run stopped "
                         "mid-write)")
                continue
            fields = _fast_fields(raw, run_id) if raw.endswith(b"\n") else None
            if fields is None:
                fields = _json_fields(raw, run_id)
            if fields is None:
                if warn is not None:
                    torn = not raw.endswith(b"\n")
                    what = "torn last line (a run stopped mid-write)" if torn \
                        else "corrupt line"
                    warn(f"{trials}: line {number}: skipped {what}")
                continue
            if not fields:  # another run's line
                continue
            subject, probe_id, trial, attempt, code, tokens_in, tokens_out, cost = fields
            state.lines += 1
            state.record(subject, probe_id, trial, attempt, code)
            usage = state.usage.setdefault(subject, [0, 0, 0.0])
            usage[0] += tokens_in
            usage[1] += tokens_out
            usage[2] += cost
    return state


Fields = tuple[str, str, int, int, int, int, int, float]

# ix writes trial lines with one encoder and a fixed key order (engine/pipeline.py), so the
# few fields a resume needs can be read without decoding the whole line; any line that does
# not look exactly like that (escapes in names, another writer) is decoded in full instead.
_HEAD = re.compile(rb'\{"run_id": "([^"\\]*)", "experiment": "(?:[^"\\]|\\.)*", '
                   rb'"subject": "([^"\\]*)", "probe_id": "([^"\\]*)", "trial": (\d+), '
                   rb'"seed": \d+, "attempt": (\d+), ')
_USAGE = re.compile(rb'"duration_ms": -?\d+, "tokens_input": (\d+), "tokens_output": (\d+), '
                    rb'"cost_usd": (-?[0-9.eE+-]+)')
_DECODER = json.JSONDecoder()


def _fast_fields(raw: bytes, run_id: str) -> Fields | tuple[()] | None:
    head = _HEAD.match(raw)
    if head is None:
        return None
    if head.group(1).decode() != run_id:
        return ()
    at = raw.rfind(b', "reading": ')
    if at < 0:
        return None
    text = raw[at + 13:].decode("utf-8", "replace")
    try:
        reading, end = _DECODER.raw_decode(text)
    except ValueError:
        return None
    rest = text[end:]
    if not rest.startswith(', "error": '):
        return None
    errored = not rest.startswith(', "error": null')
    code = ERRORED if errored else PASSED if (reading or {}).get("passed") else FAILED
    usage = _USAGE.search(raw, 0, at)
    tokens_in, tokens_out, cost = ((int(usage.group(1)), int(usage.group(2)),
                                    float(usage.group(3))) if usage else (0, 0, 0.0))
    return (head.group(2).decode(), head.group(3).decode(), int(head.group(4)),
            int(head.group(5)), code, tokens_in, tokens_out, cost)


def _json_fields(raw: bytes, run_id: str) -> Fields | tuple[()] | None:
    try:
        r = json.loads(raw)
        subject, probe_id = str(r["subject"]), str(r["probe_id"])
        trial, attempt = int(r["trial"]), int(r.get("attempt", 0))
    except (ValueError, KeyError, TypeError):
        return None
    if r.get("run_id") != run_id:
        return ()
    reading = r.get("reading") or {}
    code = ERRORED if r.get("error") else PASSED if reading.get("passed") else FAILED
    observation = r.get("observation") or {}
    return (subject, probe_id, trial, attempt, code, int(observation.get("tokens_input", 0)),
            int(observation.get("tokens_output", 0)), float(observation.get("cost_usd", 0.0)))


def find_continuation(results: Path, run_id: str | None, mode: Mode,
                      warn: Callable[[str], None] | None = None) -> Continuation:
    """The run to continue: `run_id`, else the experiment's latest run."""
    runs = results / RUNS_DIR
    if run_id is None:
        ids = sorted(p.name for p in runs.iterdir() if p.is_dir()) if runs.is_dir() else []
        if not ids:
            raise ConfigError("this experiment has no run to continue", field="--run")
        run_id = ids[-1]
    directory = runs / run_id
    if not (directory / "spec.yaml").is_file():
        known = ", ".join(sorted(p.name for p in runs.iterdir())[-5:]) if runs.is_dir() else ""
        raise ConfigError(f"no run {run_id!r} in {results}" + (f" (latest: {known})"
                                                                if known else ""),
                          field="--run")
    spec = read_spec(directory)
    if (spec.get("trials_mode") or {}).get("mode") == "auto":
        raise ConfigError("a run with trials: auto cannot be resumed yet; start a new run",
                          field="--resume")
    return Continuation(run_id=run_id, mode=mode, spec=spec,
                        state=read_state(results / TRIALS_FILE, run_id, warn))
