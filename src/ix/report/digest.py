"""What `ix report` needs of a run's trial lines, gathered in one pass: the score breakdown per
case, the failure analysis, the cost and the timeline (the sections `summary.json` does not
hold).

`ix run` feeds each line as it is recorded (`add`) and keeps the sections next to the run's
summary (`ix.api.reports.REPORT_FILE`), so reading a run never reads its trials again; an
older run, or one continued, is digested from its lines when it is reported
(`attempt` for every line, `stand` for the attempt that stands of each trial, `supersede`
for the others). The memory kept grows with cases × subjects and with the errored trials,
not with the trials (the timeline keeps 11 bytes a trial; `add` holds up to `BATCH` lines).
"""

import math
from array import array
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from ix.eval.numbers import num
from ix.eval.outcomes import NO_FACTS, OutcomeSums, facts_of, finite, outcomes_block, wrong
from ix.report import figures
from ix.store.trial_lines import invoked_skills

if TYPE_CHECKING:
    from ix.report.schemas import (
        BreakdownRow,
        Cost,
        Failures,
        Outcomes,
        ScoreStats,
        Timeline,
    )

#: How many example messages the failure analysis keeps per error kind.
EXAMPLES = 3
MESSAGE_CHARS = 300
BATCH = 64

Key = tuple[str, str, int]  # subject, probe_id, trial
STATUS_CODE = {status: code for code, status in enumerate(figures.STATUSES)}


def _number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


class TrialDigest:
    """The report's trial sections of one run, built line by line (see the module)."""

    def __init__(self, *, outcomes: bool = True) -> None:
        self._exact = True
        self.superseded: dict[str, int] = {}
        # [attempts, tokens_input, tokens_output, cost_usd] by (subject, case): one bucket a
        # line, summed by subject, by case and in total when the cost is asked for
        self._usage: dict[tuple[str, str], list[Any]] = {}
        self._pending: dict[Key, dict[str, Any]] = {}  # errored attempts a retry may replace
        self._scores: dict[str, dict[str, array[float]]] = {}
        # the trials that stand without error, by subject: the outcomes section's case means
        # (None: not kept, `ix run`'s summary has the section)
        self._outcomes: dict[str, OutcomeSums] | None = {} if outcomes else None
        self._extra: dict[tuple[str, str], dict[str, list[float]]] = {}
        self._rows: dict[str, dict[str, Any]] = {}
        self._kinds: dict[str, dict[str, Any]] = {}
        self._points: list[figures.TrialPoint] | None = []  # None past TIMELINE_TRIALS
        self._starts: array[float] = array("d")
        self._status: array[int] = array("b")
        self._lane: array[int] = array("I")
        self._lanes: dict[str, int] = {}
        self._end = -math.inf
        self._batch: list[Mapping[str, Any]] = []

    @property
    def exact(self) -> bool:
        """False once a line superseded one that had stood without error (the live `add`
        keeps no record of those): the digest is then not the report's, and not kept."""
        self._drain()
        return self._exact

    # ------------------------------------------------------------------------- feeding

    def add(self, t: Mapping[str, Any]) -> None:
        """One line as `ix run` records it, in the log's order (see `_add`). Taken in batches
        of `BATCH`: a run's trials interleave the engine's steps with the digest's, and one
        loop over a batch keeps the digest's code in the processor's caches (about 0.3-0.5 s
        of 7.8 at 100k mock trials; benchmarks/README.md, "Batches")."""
        batch = self._batch
        batch.append(t)
        if len(batch) >= BATCH:
            self._drain()

    def _drain(self) -> None:
        """The lines `add` holds, digested (before anything is read of the digest)."""
        batch, one = self._batch, self._add
        self._batch = []  # (a line that raises is never digested twice)
        for t in batch:
            one(t)

    def _add(self, t: Mapping[str, Any]) -> None:
        """`add` of one line: the engine's own record, whose keys are there with the engine's
        types, so each is read once and without the checks a line read back from a log needs
        (`attempt`, `stand`)."""
        subject, case, trial = t["subject"], t["probe_id"], t["trial"]
        error, reading, expectation = t["error"], t["reading"], t["expectation"]
        bad = wrong(expectation, bool(reading and reading.get("passed")))
        self._attempt(subject, case, t["observation"], t, 2 if error else 1 if bad else 0,
                      figures.start_ms(t), t["duration_ms"])
        key = (subject, case, trial)
        number = t["attempt"]
        old = self._pending.get(key)
        if old is not None:
            if number < int(old.get("attempt") or 0):
                self.supersede(t)
                return
            self.supersede(old)
            del self._pending[key]
        elif number > 0:
            self._exact = False
        if error:
            self._pending[key] = kept(t)
        else:  # (what `kept` would keep of it is read only for a wrong answer)
            self._stand(subject, case, trial, expectation, None, reading, t, bad)

    def close(self) -> None:
        """The errored attempts no retry replaced stand (after the last `add`)."""
        self._drain()
        for line in self._pending.values():
            self.stand(line)
        self._pending.clear()

    def attempt(self, t: Mapping[str, Any]) -> None:
        """Every attempt: its cost, and its point on the timeline."""
        self._attempt(str(t.get("subject")), str(t.get("probe_id")), t.get("observation"), t,
                      STATUS_CODE[figures.outcome(t)], figures.start_ms(t),
                      figures.duration_ms(t))

    def _attempt(self, subject: str, case: str, obs: Mapping[str, Any] | None,
                 t: Mapping[str, Any], status: int, start: float | None,
                 duration: float) -> None:
        """`attempt` of the line `t` of `subject` and `case`, its `status` (a code of
        `figures.STATUSES`), `start` (ms since the epoch; None: not on the timeline) and
        `duration` already read."""
        bucket = self._usage.get((subject, case))
        if bucket is None:
            bucket = self._usage[subject, case] = [0, 0, 0, 0.0]
        bucket[0] += 1
        if obs:
            bucket[1] += int(obs.get("tokens_input") or 0)
            bucket[2] += int(obs.get("tokens_output") or 0)
            bucket[3] += float(obs.get("cost_usd") or 0.0)
        if start is None:  # no point on the timeline
            return
        if self._points is not None:
            error = t.get("error")
            self._points.append(figures.TrialPoint(
                subject, case, int(t.get("trial") or 0), int(t.get("attempt") or 0), start,
                duration, figures.STATUSES[status],
                str(error.get("kind")) if isinstance(error, dict) else None))
            if len(self._points) > figures.TIMELINE_TRIALS:
                self._points = None
        self._starts.append(start)
        self._status.append(status)
        lane = self._lanes.get(subject)
        if lane is None:
            lane = self._lanes[subject] = len(self._lanes)
        self._lane.append(lane)
        if start + duration > self._end:
            self._end = start + duration

    def supersede(self, line: Mapping[str, Any]) -> None:
        """An attempt a later one of its trial put out of standing."""
        error = line.get("error")
        if error:
            kind = str(error.get("kind"))
            self.superseded[kind] = self.superseded.get(kind, 0) + 1

    def stand(self, line: Mapping[str, Any]) -> None:
        """The attempt that stands of its trial (its line, or `kept` of it)."""
        self._stand(str(line.get("subject")), str(line.get("probe_id")),
                    int(line.get("trial") or 0), str(line.get("expectation")),
                    line.get("error"), line.get("reading"), line)

    def _stand(self, subject: str, case: str, trial: int, expectation: str, error: Any,
               reading: Any, line: Mapping[str, Any], bad: bool | None = None) -> None:
        """`stand` of `line`, its fields already read (`bad`: whether its reading goes
        against the expectation, when known)."""
        row = self._rows.get(case)
        if row is None:  # (made here, not as setdefault's default: this runs once a trial)
            self._scores[case] = {}
            row = self._rows[case] = {"probe_id": case, "expectation": expectation,
                                      "trials": 0, "errored": 0, "wrong": 0,
                                      "by_subject": {}, "examples": {}}
        mine = row["by_subject"].get(subject)
        if mine is None:
            mine = row["by_subject"][subject] = {"trials": 0, "failed": 0}
        row["trials"] += 1
        mine["trials"] += 1
        if error:
            row["errored"] += 1
            mine["failed"] += 1
            kind = str(error.get("kind") or "unknown")
            group = self._kinds.setdefault(kind, {"kind": kind, "count": 0, "subjects": {},
                                                  "cases": set(), "messages": {}})
            group["count"] += 1
            group["subjects"][subject] = group["subjects"].get(subject, 0) + 1
            group["cases"].add(case)
            message = str(error.get("message") or "")[:MESSAGE_CHARS]
            first = group["messages"].get(message)
            if first is None or (subject, case, trial) < first[0]:
                group["messages"][message] = ((subject, case, trial), {
                    "subject": subject, "probe_id": case, "trial": trial, "message": message})
            return
        if self._outcomes is not None:
            self._outcome(subject, case, line, reading, expectation, bad)
        if not reading:
            return
        score = reading.get("score")
        if math.isfinite(score) if type(score) is float else _number(score):
            scores = self._scores[case].get(subject)
            if scores is None:
                scores = self._scores[case][subject] = array("d")
            scores.append(float(score))
        metrics = reading.get("metrics")
        if metrics:
            for k, v in metrics.items():
                if _number(v):
                    self._extra.setdefault((case, subject), {}).setdefault(k, []).append(
                        float(v))
        if bad if bad is not None else wrong(expectation, bool(reading.get("passed"))):
            row["wrong"] += 1
            mine["failed"] += 1
            shown = row["examples"].get(subject)
            # its first wrong trial that invoked a skill (a wrong route says more than
            # silence), else its first: a later trial can only win by invoking where the
            # shown one did not
            if shown is not None and trial > shown[0][1] and not shown[0][0]:
                return
            invoked = line["invoked"] if "invoked" in line else \
                invoked_skills(line.get("observation") or {})
            rank = (not invoked, trial)
            if shown is None or rank < shown[0]:
                answer = line.get("answer", "") if "observation" not in line else \
                    _answer(line.get("observation") or {})
                row["examples"][subject] = (rank, {
                    "subject": subject, "trial": trial, "answer": answer,
                    "details": str(reading.get("details") or "")[:MESSAGE_CHARS],
                    "invoked": invoked or []})

    def _outcome(self, subject: str, case: str, line: Mapping[str, Any], reading: Any,
                 expectation: str, bad: bool | None) -> None:
        """Count a trial that stands without error into its case's outcome sums: its usage,
        duration, tool calls, turns and reading's score (from its observation, or from `kept`
        of a line read back), and whether it was right."""
        by_subject = cast("dict[str, OutcomeSums]", self._outcomes)  # (kept: see `_stand`)
        sums = by_subject.get(subject)
        if sums is None:
            sums = by_subject[subject] = OutcomeSums()
        facts = (facts_of(line["observation"], line.get("duration_ms"))
                 if "observation" in line else line.get("facts") or NO_FACTS)
        sums.measure(case, facts, finite(reading.get("score")) if reading else None,
                     bool(reading) and not (bad if bad is not None else wrong(
                         expectation, bool(reading.get("passed")))))

    # ------------------------------------------------------------------------- sections

    def outcomes(self, subjects: list[str], level: float = 0.95) -> "Outcomes | None":
        """`ix.eval.outcomes.outcomes_block` of the trials digested (cost per success counts
        every attempt's cost); None when no trial stood without error, or the digest keeps
        no outcomes."""
        self._drain()
        if not self._outcomes:
            return None
        for subject, sums in self._outcomes.items():
            sums.spent = {case: float(bucket[3]) for (s, case), bucket in self._usage.items()
                          if s == subject}
        return outcomes_block(subjects, self._outcomes, level)

    def cost(self) -> "Cost":
        self._drain()

        def usage(b: list[Any]) -> dict[str, Any]:
            return {"attempts": b[0], "tokens_input": b[1], "tokens_output": b[2],
                    "cost_usd": num(b[3])}

        total: list[Any] = [0, 0, 0, 0.0]
        by_subject: dict[str, list[Any]] = {}
        by_case: dict[str, list[Any]] = {}
        for (subject, case), bucket in self._usage.items():
            for sums in (total, by_subject.setdefault(subject, [0, 0, 0, 0.0]),
                         by_case.setdefault(case, [0, 0, 0, 0.0])):
                for i, x in enumerate(bucket):
                    sums[i] += x
        return cast("Cost", {"by_subject": {k: usage(v) for k, v in by_subject.items()},
                             "by_case": {k: usage(v) for k, v in by_case.items()},
                             "total": usage(total),
                             "note": "every attempt counts, retried ones included"})

    def breakdown(self, order: list[str]) -> "list[BreakdownRow]":
        """Per case and subject: the readings' scores (n, mean, sd, min, max) and the mean of
        each numeric metric the sensor reported (an LLM judge's dimensions, an exit code...);
        cases in `order`, then the others by id."""
        self._drain()
        rank = {case: i for i, case in enumerate(order)}
        out: list[BreakdownRow] = []
        for case in sorted(self._rows, key=lambda c: (rank.get(c, len(rank)), c)):
            by_subject: dict[str, ScoreStats] = {}
            for subject, values in sorted(self._scores[case].items()):
                n, mean, sd = _moments(values)
                by_subject[subject] = {
                    "n": n, "mean": num(mean), "sd": num(sd) if n > 1 else None,
                    "min": num(min(values)), "max": num(max(values)),
                    "metrics": {k: num(sum(v) / len(v))
                                for k, v in sorted(self._extra.get((case, subject),
                                                                   {}).items())}}
            out.append({"probe_id": case, "expectation": self._rows[case]["expectation"],
                        "by_subject": by_subject})
        return out

    def failures(self, prompts: Mapping[str, str] | None = None) -> "Failures":
        """Errored trials grouped by error kind (with example messages), and the cases that
        fail most: a trial fails when it errored or its outcome contradicts the case's
        expectation. Each failing case carries its prompt (`prompts`: case id -> text) and one
        wrong trial of every subject that answered it wrongly, with the skills invoked."""
        self._drain()
        errors = []
        for group in sorted(self._kinds.values(), key=lambda g: (-g["count"], g["kind"])):
            examples = [e for _, e in sorted(group["messages"].values(),
                                             key=lambda m: m[0])[:EXAMPLES]]
            errors.append({"kind": group["kind"], "count": group["count"],
                           "subjects": dict(sorted(group["subjects"].items())),
                           "cases": sorted(group["cases"]), "examples": examples,
                           "superseded": self.superseded.get(group["kind"], 0)})
        for kind, count in sorted(self.superseded.items()):
            if kind not in self._kinds:
                errors.append({"kind": kind, "count": 0, "subjects": {}, "cases": [],
                               "examples": [], "superseded": count})
        failing = []
        for row in self._rows.values():
            failed = row["errored"] + row["wrong"]
            if failed:
                failing.append({
                    "probe_id": row["probe_id"], "expectation": row["expectation"],
                    "trials": row["trials"], "errored": row["errored"], "wrong": row["wrong"],
                    "prompt": (prompts or {}).get(row["probe_id"]),
                    "by_subject": dict(sorted(row["by_subject"].items())),
                    "examples": [e for _, (_, e) in sorted(row["examples"].items())],
                    "failed": failed, "fail_rate": num(failed / row["trials"])})
        failing.sort(key=lambda r: (-r["fail_rate"], -r["failed"], r["probe_id"]))
        # groups and rows are filled by key above: the checker takes their type from here
        return cast("Failures", {"errored_trials": sum(g["count"] for g in self._kinds.values()),
                                 "errors": errors, "cases": failing})

    def timeline(self, subjects: list[str]) -> "Timeline | None":
        """`figures.timeline` of every attempt (binned from 11 bytes a trial once there are
        more than `figures.TIMELINE_TRIALS`)."""
        self._drain()
        if self._points is not None:
            return figures.timeline(self._points, subjects)
        return figures.binned(self._starts, self._end, self._status, self._lane,
                              list(self._lanes), subjects)


def _moments(values: "array[float]") -> tuple[int, float, float]:
    """n, mean and sample standard deviation (ddof 1; nan below 2) of a case's few scores:
    `ix.stats.describe`'s, in plain Python (numpy's call costs more than the sums at this
    size, and a run has a breakdown row per case and subject)."""
    n = len(values)
    if not n:
        return 0, math.nan, math.nan
    mean = math.fsum(values) / n
    if n < 2:
        return n, mean, math.nan
    return n, mean, math.sqrt(math.fsum((x - mean) ** 2 for x in values) / (n - 1))


def kept(t: Mapping[str, Any]) -> dict[str, Any]:
    """What the report needs of a line, not its observation (contents can be large)."""
    obs = t.get("observation") or {}
    line = {k: t.get(k) for k in ("subject", "probe_id", "trial", "attempt", "expectation",
                                  "error", "reading")}
    line["invoked"] = invoked_skills(obs)
    if not t.get("error"):  # what the outcomes section reads of a trial that stands
        line["facts"] = facts_of(obs, t.get("duration_ms"))
    if wrong(str(t.get("expectation")), bool((t.get("reading") or {}).get("passed"))) \
            and not t.get("error"):  # a wrong answer: keep its start, as an example
        line["answer"] = _answer(obs)
    return line


def _answer(observation: Mapping[str, Any]) -> str:
    """The start of a wrong answer, shown as the case's example."""
    return str(observation.get("content") or "")[:MESSAGE_CHARS]
