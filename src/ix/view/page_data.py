"""What the viewer's pages read, all through `ix.api`: runs looked up by id (never joined into
a path), the report of a run (cached until its files change), and trials aggregated and paged
by DuckDB (the query layer), so no page holds more than one page of trials.

Every id that comes from a URL is checked here; anything that does not name a thing of this
lab raises `NotFound`.
"""

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ix.api import IxError, NotFound
from ix.api.annotations import list_tags
from ix.api.experiments import compare_runs, list_experiments, load
from ix.api.optimize import SESSION_ID, list_sessions
from ix.api.query import QueryResult, run_query
from ix.api.reports import read_summary, report
from ix.api.results import CaseTrials, case_trials, query_results
from ix.api.runs import RunEntry, fingerprint, lab_run, list_runs
from ix.api.trials import (
    Trace,
    TrialOutput,
    output_bytes,
    read_trace,
    routing_of,
    trial_lines,
    trial_outputs,
    trial_record,
)

#: Trials per page of a case's trials.
PAGE_SIZE = 50
#: Cases per page of a run's case table.
CASES_PAGE = 200
#: Reports kept in memory (the latest ones asked for).
REPORTS_KEPT = 8
#: The case page's filter: a trial's outcome against its case's expectation (DESIGN.md §8).
OUTCOMES = ("all", "right", "wrong", "errors")


def sql_text(value: str) -> str:
    """A DuckDB string literal."""
    return "'" + value.replace("'", "''") + "'"


def check_text(value: str | None, what: str) -> str:
    """A subject or case id from a query string: non-empty, printable, not too long."""
    if not value or len(value) > 500 or any(ord(ch) < 32 for ch in value):
        raise NotFound(f"no such {what}")
    return value


@dataclass(frozen=True)
class ReportResult:
    data: Mapping[str, Any] | None
    note: str | None             # why there is no report (a running run has no summary yet)


class Lookup:
    """The lab's data for the pages; one per app. Thread-safe (pages run in a thread pool)."""

    def __init__(self, lab: Path, warn: Callable[[str], None] | None = None):
        self.lab = lab
        self._warn = warn
        self._reports: OrderedDict[tuple[Any, ...], ReportResult] = OrderedDict()
        self._memo: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._lock = threading.Lock()
        self._building: dict[tuple[Any, ...], threading.Lock] = {}

    # --------------------------------------------------------------------------- runs

    def run(self, ref: str) -> RunEntry:
        try:
            return lab_run(self.lab, ref)
        except IxError as exc:
            raise NotFound(exc.message) from None

    def experiments(self) -> list[dict[str, Any]]:
        """Each experiment with its runs (newest first) and each run's trial counts."""
        _, infos = list_experiments(self.lab)
        runs = list_runs(self.lab)
        counts = self.run_counts()
        tags: dict[str, list[str]] = {}
        try:
            for t in list_tags(self.lab):
                tags.setdefault(t["run"], []).append(t["tag"])
        except IxError:
            pass
        out = []
        for info in infos:
            out.append({"info": info, "runs": [
                {"run": r, "counts": counts.get(r.run_id), "tags": tags.get(r.run_id, [])}
                for r in runs.get(info.path, [])], "sessions": self._sessions(info.path)})
        return out

    # --------------------------------------------------------------------------- optimize

    def _sessions(self, experiment: Path) -> list[dict[str, Any]]:
        """The experiment's optimize sessions, newest first; none (and a warning) when one
        of their files cannot be read."""
        try:
            return list_sessions(self.lab, [str(experiment)])
        except (IxError, OSError, ValueError) as exc:
            if self._warn is not None:
                self._warn(f"optimize sessions of {experiment.name}: {exc}")
            return []

    def session(self, session_id: str) -> dict[str, Any]:
        """The optimize session with exactly this id (`SESSION_ID`), in any experiment."""
        if not SESSION_ID.fullmatch(session_id):
            raise NotFound("no such optimize session")
        _, infos = list_experiments(self.lab)
        for info in infos:
            for state in self._sessions(info.path):
                if state.get("id") == session_id:
                    return state
        raise NotFound(f"no optimize session {session_id} in this lab")

    def run_counts(self, *run_ids: str) -> dict[str, dict[str, Any]]:
        """Run id -> trials, errors, valid, passed, judged (valid trials of must/should-not
        cases) and correct (those whose outcome matched the expectation) — the latest attempt
        of each trial — for the given runs (none: every run of the lab)."""
        where = (f"WHERE run_id IN ({', '.join(sql_text(r) for r in run_ids)}) "
                 if run_ids else "")
        sql = ("SELECT run_id, count(*) AS trials, count(error) AS errors, count(passed) AS "
               "valid, count(*) FILTER (WHERE passed) AS passed, count(correct) AS judged, "
               "count(*) FILTER (WHERE correct) AS correct, min(started_at) AS first, "
               f"max(started_at) AS last FROM trials {where}GROUP BY run_id")
        # the viewer's own SQL: not checked and bound as a user's is (`run_query`)
        return {row["run_id"]: row for row in QueryResult(self.lab, sql, self._warn).rows()}

    def prepare(self) -> None:
        """Build ahead what the first pages need: the lab's query index and its views, then
        the report of each experiment's latest finished run (newest first, at most
        `REPORTS_KEPT`). Run in a background thread at startup; a page that asks meanwhile
        waits for the same build. numpy and scipy load only for a report that computes (a
        run without a current report.json), as in `ix report`."""
        self.run_counts()
        latest = [next((r for r in runs if r.has_summary), None)
                  for runs in list_runs(self.lab).values()]
        chosen = sorted((r for r in latest if r is not None), key=lambda r: r.run_id,
                        reverse=True)[:REPORTS_KEPT]
        for run in chosen:
            self.report(run)

    def memo(self, run: RunEntry, what: str, make: Callable[[], Any]) -> Any:
        """`make()` for the run, kept until its files change (`fingerprint`): what a run's
        page shows of a finished run (its counts, its report rendered) is made once."""
        key = (what, *fingerprint(run))
        with self._lock:
            if key in self._memo:
                self._memo.move_to_end(key)
                return self._memo[key]
        value = make()
        with self._lock:
            self._memo[key] = value
            while len(self._memo) > 4 * REPORTS_KEPT:
                self._memo.popitem(last=False)
        return value

    # --------------------------------------------------------------------------- reports

    def report(self, run: RunEntry) -> ReportResult:
        """`ix report`'s data for the run, built once per version of its files."""
        key = fingerprint(run)
        with self._lock:
            cached = self._reports.get(key)
            if cached is not None:
                self._reports.move_to_end(key)
                return cached
            building = self._building.setdefault(key, threading.Lock())
        with building:  # one build per key, however many requests wait for it
            with self._lock:
                cached = self._reports.get(key)
            if cached is not None:
                return cached
            try:
                result = ReportResult(report(self.lab, run.run_id, warn=self._warn), None)
            except IxError as exc:
                result = ReportResult(None, exc.message)
            with self._lock:
                self._reports[key] = result
                while len(self._reports) > REPORTS_KEPT:
                    self._reports.popitem(last=False)
                self._building.pop(key, None)
            return result

    # --------------------------------------------------------------------------- trials

    def case_table(self, run: RunEntry) -> list[Mapping[str, Any]]:
        """Per case and subject of the run: n, errors, activation rate with its interval."""
        try:
            rows = query_results(self.lab, run=run.run_id,
                                 warn=self._warn).group_by("case", "subject")
        except IxError:  # no trial of this run yet
            return []
        return sorted(rows, key=lambda r: (str(r["probe_id"]), str(r["subject"])))

    def case(self, run: RunEntry, case: str, subject: str | None, outcome: str,
             all_attempts: bool, page: int) -> CaseTrials:
        """The case's aggregate per subject (every attempt that stands), the skills that took
        its trials, and one page of its trials (by subject, trial, attempt, each with its
        routing: `_with_routing`) with how many there are, from one snapshot of the index
        (`case_trials`); nothing when the run has no trial of it."""
        try:
            found = case_trials(self.lab, run, case, subject=subject,
                                correct={"right": True, "wrong": False}.get(outcome),
                                errors=True if outcome == "errors" else None,
                                all_attempts=all_attempts, limit=PAGE_SIZE,
                                offset=max(0, page - 1) * PAGE_SIZE, warn=self._warn)
        except IxError:
            return CaseTrials([], [], [], 0)
        return replace(found, rows=self._with_routing(run, found.rows))

    @staticmethod
    def case_routes(rows: list[Any]) -> dict[str, str]:
        """Per subject, which skill took the case's valid trials (the first skill each
        invoked; `rows` are the case's aggregates by subject and invoked), the most taken
        first: "pdf 4/9, none 2/9", as `ix report` says it."""
        routes: dict[str, list[dict[str, Any]]] = {}
        for r in rows:
            if r["valid"]:
                routes.setdefault(str(r["subject"]), []).append(
                    {"skill": r["first_invoked"], "trials": int(r["valid"])})
        out = {}
        for subject, found in routes.items():
            found.sort(key=lambda x: (-x["trials"], x["skill"] is None, x["skill"] or ""))
            n = sum(x["trials"] for x in found)
            out[subject] = ", ".join(f"{x['skill'] or 'none'} {x['trials']}/{n}" for x in found)
        return out

    def _with_routing(self, run: RunEntry, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The page's trials, each with the routing decision its runtime recorded (`routing`,
        None when it recorded none: only the lexical runtime does)."""
        keys = {(r["subject"], r["probe_id"], int(r["trial"]), int(r["attempt"] or 0)): r
                for r in rows}
        lines = trial_lines(run, keys)
        for key, row in keys.items():
            record = lines.get(key)
            row["routing"] = routing_of(record) if record is not None else None
        return rows

    def case_file(self, run: RunEntry, case: str) -> dict[str, Any] | None:
        """The case as its file reads now (prompt, expectation, tags), if it still exists."""
        try:
            loaded = load(run.experiment_dir, self.lab)
        except IxError:
            return None
        for c in loaded.experiment.cases:
            if c.id == case:
                return c.model_dump()
        return None

    def trial(self, run: RunEntry, subject: str, case: str, trial: int,
              attempt: int | None) -> dict[str, Any]:
        record = trial_record(run, subject, case, trial, attempt)
        if record is None:
            raise NotFound("no such trial in this run")
        return record

    def attempts(self, run: RunEntry, subject: str, case: str, trial: int) -> list[int]:
        """The attempts recorded for one trial, oldest first."""
        sql = (f"SELECT attempt FROM trials_all WHERE run_id = {sql_text(run.run_id)} AND "
               f"subject = {sql_text(subject)} AND probe_id = {sql_text(case)} AND "
               f"trial = {int(trial)} ORDER BY attempt")
        return [int(r["attempt"] or 0) for r in run_query(self.lab, sql, self._warn).rows()]

    def trace(self, run: RunEntry, record: dict[str, Any]) -> Trace | None:
        """The trial's transcript; `NotFound` when its path leads outside the run's folder."""
        try:
            return read_trace(run, record)
        except IxError as exc:
            raise NotFound(exc.message) from None

    def outputs(self, run: RunEntry, record: dict[str, Any]) -> list[TrialOutput]:
        """The files the trial's subject made, as the run kept them (DESIGN.md §10)."""
        return trial_outputs(run, record)

    def output(self, run: RunEntry, record: dict[str, Any], path: str) -> bytes:
        """One output's bytes, for a download; `NotFound` when the trial kept no such file
        or the run's copy is not what its line says."""
        try:
            data = output_bytes(run, record, path)
        except IxError as exc:
            raise NotFound(exc.message) from None
        assert data is not None
        return data

    # --------------------------------------------------------------------------- compare

    def compare(self, a: RunEntry, b: RunEntry) -> tuple[Mapping[str, Any], str | None]:
        """`ix compare A B` (None and the reason when the runs cannot be compared)."""
        try:
            return compare_runs(self.lab, [a.run_id, b.run_id]), None
        except IxError as exc:
            return {}, exc.message

    def sensor(self, run: RunEntry) -> str | None:
        """The kind of the run's first sensor (which words its rates: DESIGN.md §8): its
        spec's, else its summary's (an imported run's spec names none); None: unknown."""
        if run.sensor is not None:
            return run.sensor
        summary = self.summary(run) if run.has_summary else None
        found = (summary or {}).get("sensor")
        return found if isinstance(found, str) else None

    def summary(self, run: RunEntry) -> Mapping[str, Any] | None:
        try:
            return read_summary(run.folder)
        except IxError:
            return None


__all__ = ["CASES_PAGE", "OUTCOMES", "PAGE_SIZE", "SESSION_ID", "Lookup", "NotFound",
           "ReportResult", "check_text", "sql_text"]
