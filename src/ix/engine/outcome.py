"""How a run ended, in words a user can act on (DESIGN.md §8 "A run's status").

A run is `failed` (with `reason`) when every trial of one of its subjects errored: the most
common error kind, one example message and what to do. It is `cancelled` (with
`stop_reason` and `stop_cause`: signal, budget or breaker) when it stopped before every
planned trial ran. The errored trials of any run are grouped by kind (`errors_by_kind`) for
the block printed under its table.
"""

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ix.eval.schemas import ErrorKindOut, FailedSubjectOut, StopCause
from ix.runtimes.credentials import credentials

#: Error kinds whose cause is the lab's configuration or the machine's setup, not the
#: subject: a run that failed of one of these exits 2 (bad input or configuration).
CONFIGURATION_KINDS = frozenset({
    "missing_api_key", "no_skills", "unknown_skill", "bad_skills", "command_not_found",
    "cwd_not_found", "permission_denied", "template_error", "bad_url", "invalid_header",
    "judge_template", "cache_miss", "not_applicable", "unknown_method",
})

#: Longest example message kept per kind (the full messages are in trials.jsonl).
EXAMPLE_CHARS = 300


@dataclass
class ErrorLog:
    """The errored trials of a run, per subject and kind: a count and the first message."""

    counts: dict[str, Counter[str]] = field(default_factory=dict)
    examples: dict[str, str] = field(default_factory=dict)   # kind -> first message
    # (subject, kind) -> that subject's first message: a failed subject is explained by its own
    subject_examples: dict[tuple[str, str], str] = field(default_factory=dict)

    def add(self, subject: str, kind: str, message: str) -> None:
        self.counts.setdefault(subject, Counter())[kind] += 1
        self.examples.setdefault(kind, message[:EXAMPLE_CHARS])
        self.subject_examples.setdefault((subject, kind), message[:EXAMPLE_CHARS])


def stop_cause(stop_reason: str | None) -> StopCause | None:
    """`signal`, `budget` or `breaker` for the sentence `stop_reason` (None: not stopped)."""
    if stop_reason is None:
        return None
    if stop_reason.startswith("circuit breaker"):
        return "breaker"
    if stop_reason.startswith(("--max-trials", "--max-cost", "--time-limit")):
        return "budget"
    return "signal"


def breaker_reason(broken: Mapping[str, str]) -> str:
    """The `stop_reason` of a run whose circuit breaker stopped one or more subjects."""
    return "circuit breaker: " + "; ".join(f"{name} {why}" for name, why in broken.items())


def errors_by_kind(log: ErrorLog, runtimes: Mapping[str, Mapping[str, Any]]
                   ) -> list[ErrorKindOut]:
    """Each error kind of the run, most frequent first: `kind`, `count`, `subjects` (count
    per subject), `example` (one message), `configuration` (the lab's setup is the cause) and
    `hint` (what to do, or None)."""
    total: Counter[str] = Counter()
    for per_kind in log.counts.values():
        total.update(per_kind)
    out: list[ErrorKindOut] = []
    for kind, count in sorted(total.items(), key=lambda kv: (-kv[1], kv[0])):
        subjects = {s: c[kind] for s, c in log.counts.items() if c.get(kind)}
        spec = next((runtimes[s] for s in subjects if s in runtimes), {})
        example = log.examples.get(kind, "")
        out.append({"kind": kind, "count": count, "subjects": subjects, "example": example,
                    "configuration": kind in CONFIGURATION_KINDS,
                    "hint": hint(kind, example, spec)})
    return out


def failed_subjects(trials: Mapping[str, tuple[int, int]], log: ErrorLog,
                    runtimes: Mapping[str, Mapping[str, Any]]) -> list[FailedSubjectOut]:
    """The subjects every trial of which errored (`trials`: subject -> (trials, errored)),
    each with its most common error kind, one example and what to do."""
    out: list[FailedSubjectOut] = []
    for subject, (ran, errored) in trials.items():
        if ran == 0 or errored < ran:
            continue
        kinds = log.counts.get(subject) or Counter()
        kind, _ = (kinds.most_common(1) or [("unknown", 0)])[0]
        example = log.subject_examples.get((subject, kind), log.examples.get(kind, ""))
        out.append({"subject": subject, "trials": ran, "kind": kind, "count": kinds[kind],
                    "example": example, "configuration": kind in CONFIGURATION_KINDS,
                    "hint": hint(kind, example, runtimes.get(subject, {}))})
    return out


def failure_reason(failed: Sequence[Mapping[str, Any]]) -> str:
    """One sentence per way the subjects failed: which errored, the error kind, an example
    and what to do (subjects that failed alike share a sentence); a sentence is one line,
    so an example's line breaks become spaces."""
    groups: dict[tuple[str, str, str | None], list[Mapping[str, Any]]] = {}
    for f in failed:
        groups.setdefault((f["kind"], f["example"], f["hint"]), []).append(f)
    parts = []
    for (kind, example, what), members in groups.items():
        counts = ", ".join(f"all {f['trials']}" if f["count"] == f["trials"]
                           else f"{f['count']} of {f['trials']}" for f in members)
        names = ", ".join(f["subject"] for f in members)
        who = f"subject {names}" if len(members) == 1 else f"subjects {names}"
        text = (f'every trial of {who} errored ({counts}: {kind}), '
                f'e.g. "{" ".join(example.split())}"')
        parts.append(text + (f" — {what}" if what else ""))
    return "; ".join(parts)


def is_configuration(failed: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the failure is the lab's configuration (exit 2) rather than the subject's
    (exit 1): every failed subject's most common error is a configuration kind."""
    return bool(failed) and all(f["configuration"] for f in failed)


_ENV_NAME = re.compile(r"\b(?:variable |set )([A-Z][A-Z0-9_]*)\b")


def hint(kind: str, example: str, runtime: Mapping[str, Any]) -> str | None:
    """What to do about an error kind, in a line; None when there is nothing specific."""
    if kind == "missing_api_key":
        found = _ENV_NAME.search(example)
        env = found.group(1) if found else (credentials(runtime).env or ("the API key",))[0]
        return (f"{env} is not set — set it, or choose `runtime: lexical` for an offline "
                "baseline")
    if kind in ("no_skills", "unknown_skill", "bad_skills"):
        return ("the subject has no usable skills — check `skill:` / `skills:` against the "
                "lab's skills/ folder (`ix validate` names the missing ones)")
    if kind == "not_applicable":
        return ("the first sensor has no verdict on this runtime's trials (e.g. `turns` where "
                "the runtime reports no turns) — put another sensor first under `sensors:`")
    if kind == "command_not_found":
        return ("the program in the runtime's `argv` is not installed or not on PATH — "
                "install it or give its full path")
    if kind in ("cwd_not_found", "permission_denied"):
        return "fix the runtime's `cwd` / the program's permissions"
    if kind in ("template_error", "judge_template"):
        return "fix the template named in the message"
    if kind in ("bad_url", "invalid_header"):
        return "fix the http runtime's `url` / `headers` (grpc: its `metadata`)"
    if kind == "unknown_method":
        return "the grpc server does not offer the runtime's `method` — check it and `target`"
    if kind == "plugin_error":
        return ("the plugin named in the message stopped (`sys.exit()`) instead of raising an "
                "exception — fix it, or report it to its distribution")
    if kind == "cache_miss":
        return "run once with `--cache` (mode use) to record the observations, then replay"
    if kind == "timeout":
        return ("no answer within the experiment's `timeout_s`; raise it if the subject is "
                "slow, then `ix run --retry-failed`")
    if kind in ("server_error", "overloaded", "rate_limited", "connection_error",
                "http_timeout", "deadline_exceeded", "unreachable"):
        return ("the subject's service did not answer; check it is up, then "
                "`ix run --retry-failed`")
    return None
