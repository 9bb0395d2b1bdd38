"""The query layer over real files: the trials views, the Parquet index and its refreshes,
filters, aggregates (checked against numpy/scipy on the raw lines) and read-only SQL."""

import json
import os
import random
import stat
import tempfile
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from conftest import case, write
from ix.domain.errors import ConfigError
from ix.eval.models import DIFFICULTIES
from ix.query import index as index_module
from ix.query import index_folder
from ix.query.aggregate import aggregate
from ix.query.case_table import DIFFICULTY_LEVELS
from ix.query.index import INDEX_DIR, MANIFEST, open_index
from ix.query.views import (
    COLUMN_NAMES,
    TrialFilter,
    check_read_only,
    connect,
    cursor,
    refreshed_index,
    shared_views,
)
from ix.store.trials import TrialWriter, read_trials

T0 = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def record(run: str, subject: str, probe: str, trial: int, *, attempt: int = 0,
           passed: bool | None = True, score: float | None = None, error: str | None = None,
           started: datetime = T0, ms: float = 10.0, tokens: tuple[int, int] = (100, 20),
           cost: float = 0.001, experiment: str = "exp",
           expectation: str = "must_trigger") -> dict:
    """A trial line in the shape the engine writes (docs/results.md)."""
    errored = error is not None
    return {
        "run_id": run, "experiment": experiment, "subject": subject, "probe_id": probe,
        "trial": trial, "seed": 12345 + trial, "attempt": attempt, "expectation": expectation,
        "started_at": started.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "duration_ms": ms,
        "observation": None if errored else {
            "content": "x", "tool_calls": [], "duration_ms": 0, "tokens_input": tokens[0],
            "tokens_output": tokens[1], "cost_usd": cost},
        "reading": None if errored else {
            "sensor_name": "activation", "passed": passed,
            "score": (1.0 if passed else 0.0) if score is None else score,
            "metrics": {}, "details": ""},
        "error": {"kind": error, "message": f"{error} happened"} if errored else None,
    }


def experiment(lab: Path, name: str = "exp", cases: dict[str, str] | None = None) -> Path:
    d = lab / name
    write(d / "experiment.yaml", f"name: {name}\nskill: t\nruntime: mock\n")
    for cid, extra in (cases or {"must-001": ""}).items():
        case(d, cid, "must_trigger", extra=extra)
    return d


def append(exp: Path, records: list[dict]) -> Path:
    log = exp / "results" / "trials.jsonl"
    with TrialWriter(log) as w:
        for r in records:
            w.write(r)
    return log


def rows(lab: Path, sql: str) -> list[tuple]:
    with connect(lab) as con:
        return con.execute(sql).fetchall()


def manifest(lab: Path) -> dict:
    return json.loads((lab / INDEX_DIR / MANIFEST).read_text())


# --------------------------------------------------------------------------- the views

def test_trials_view_flattens_each_line_and_joins_the_case_files(lab):
    exp = experiment(lab, cases={"must-001": "tags: [csv, direct]\ndifficulty: hard\n",
                                 "must-002": ""})
    append(exp, [
        record("r1", "alpha", "must-001", 0, tokens=(300, 40), cost=0.25, ms=12.5),
        record("r1", "alpha", "must-002", 0, error="timeout", ms=120000.0),
        record("r1", "alpha", "gone-001", 0, passed=False, expectation="should_not_trigger"),
    ])
    with connect(lab) as con:
        cur = con.execute("SELECT * FROM trials ORDER BY probe_id")
        names = [d[0] for d in cur.description]
        got = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    assert names == list(COLUMN_NAMES)
    gone, first, second = got
    assert first == {
        "experiment": "exp", "run_id": "r1", "subject": "alpha", "probe_id": "must-001",
        "trial": 0, "seed": 12345, "attempt": 0, "expectation": "must_trigger",
        "passed": True, "score": 1.0, "correct": True, "outcome": "right",
        "sensor": "activation", "error": None,
        "error_message": None, "tokens_input": 300, "tokens_output": 40, "tokens": 340,
        "cost": 0.25, "duration": 12.5, "started_at": datetime(2026, 11, 20, 12, 0),
        "invoked": [], "first_invoked": None,
        "tags": ["csv", "direct"], "difficulty": "hard", "difficulty_level": 3,
        "variant_of": None, "paraphrase_of": None, "family": "must-001"}
    assert second["error"] == "timeout" and second["error_message"] == "timeout happened"
    assert second["passed"] is None and second["tokens"] is None and second["tags"] == []
    assert second["duration"] == 120000.0
    # a case whose file is gone keeps its trials, without tags or difficulty; its own family
    assert gone["correct"] is True and gone["tags"] == [] and gone["difficulty"] is None
    assert gone["outcome"] == "right" and second["outcome"] is None  # errored: no outcome
    assert gone["family"] == "gone-001" and gone["variant_of"] is None


def test_started_at_with_an_offset_is_stored_in_utc(lab):
    exp = experiment(lab)
    line = record("r1", "a", "must-001", 0)
    line["started_at"] = "2026-11-20T14:30:00.250+02:00"
    append(exp, [line])
    assert rows(lab, "SELECT started_at FROM trials") == [(datetime(2026, 11, 20, 12, 30, 0,
                                                                    250000),)]


def test_readers_share_the_views_of_an_unchanged_index_and_see_what_changed(lab, monkeypatch):
    """`shared_views`: one set of views per snapshot of the index in a process; an appended
    line is a new snapshot, read through new views. Cursors read in UTC, locked alike."""
    monkeypatch.setenv("TZ", "America/New_York")
    exp = experiment(lab)
    append(exp, [record("r1", "a", "must-001", 0)])
    first = shared_views(refreshed_index(lab))
    assert shared_views(refreshed_index(lab)) is first
    append(exp, [record("r1", "a", "must-001", 1)])
    again = shared_views(refreshed_index(lab))
    assert again is not first
    with cursor(again) as con:
        assert con.execute("SELECT count(*), current_setting('TimeZone') FROM trials"
                           ).fetchall() == [(2, "UTC")]
        with pytest.raises(Exception, match="disabled by configuration"):
            con.execute(f"SELECT * FROM read_text({str(exp / 'experiment.yaml')!r})")


def test_latest_attempt_stands_and_trials_all_keeps_the_superseded(lab):
    exp = experiment(lab)
    append(exp, [
        record("r1", "a", "must-001", 0, error="runtime_error"),
        record("r1", "a", "must-001", 1, passed=False),
        record("r1", "a", "must-001", 0, attempt=1, passed=True),
        record("r2", "a", "must-001", 0, passed=False),   # another run: its own trial
    ])
    assert rows(lab, "SELECT run_id, trial, attempt, passed FROM trials ORDER BY ALL") == [
        ("r1", 0, 1, True), ("r1", 1, 0, False), ("r2", 0, 0, False)]
    assert rows(lab, "SELECT count(*) FROM trials_all") == [(4,)]


def test_a_retry_appended_later_supersedes_across_index_parts(lab):
    exp = experiment(lab)
    append(exp, [record("r1", "a", "must-001", t, error="timeout") for t in range(3)])
    assert rows(lab, "SELECT count(*) FROM trials WHERE error IS NOT NULL") == [(3,)]
    append(exp, [record("r1", "a", "must-001", 1, attempt=1, passed=True)])
    assert rows(lab, "SELECT trial, attempt, error FROM trials ORDER BY trial") == [
        (0, 0, "timeout"), (1, 1, None), (2, 0, "timeout")]
    assert len(manifest(lab)["sources"]["exp"]["parts"]) == 2


def test_appended_lines_are_indexed_incrementally_with_the_same_result(lab):
    exp = experiment(lab)
    rng = random.Random(1)
    batches = [[record(f"r{b}", rng.choice("ab"), "must-001", t, passed=rng.random() < 0.5,
                       attempt=rng.choice([0, 0, 1]))
                for t in range(50)] for b in range(4)]
    for batch in batches:
        append(exp, batch)
        open_index(lab)
    entry = manifest(lab)["sources"]["exp"]
    assert len(entry["parts"]) == 4 and entry["rows"] == 200
    query = "SELECT * FROM trials ORDER BY run_id, subject, trial, attempt"
    incremental = rows(lab, query)
    # the same log indexed from scratch
    for p in (lab / INDEX_DIR).iterdir():
        p.unlink()
    assert rows(lab, query) == incremental
    assert len(manifest(lab)["sources"]["exp"]["parts"]) == 1


def test_a_log_bigger_than_a_chunk_is_indexed_in_parts_with_the_same_result(lab,
                                                                            monkeypatch):
    """The rows of a part are held in memory while it is written, so a big log is indexed a
    chunk at a time (`CHUNK_BYTES`): the same trials, retries superseding across the cuts,
    the same lines skipped, as one part of it all."""
    exp = experiment(lab)
    rng = random.Random(2)
    log = append(exp, [record("r1", rng.choice("ab"), "must-001", t % 40,
                              passed=rng.random() < 0.5, attempt=t // 40) for t in range(120)])
    with log.open("ab") as f:
        f.write(b'{"run_id": "r1", "torn\n')  # a line no reader takes, mid-log
    append(exp, [record("r1", "a", "must-001", t, attempt=3, passed=True) for t in range(5)])
    query = "SELECT * FROM trials ORDER BY run_id, subject, trial, attempt"
    whole = rows(lab, query)
    assert rows(lab, "SELECT count(*) FROM trials_all") == [(125,)]
    skipped = manifest(lab)["sources"]["exp"]["skipped"]
    assert len(manifest(lab)["sources"]["exp"]["parts"]) == 1 and skipped == 1
    for p in (lab / INDEX_DIR).iterdir():
        p.unlink()
    monkeypatch.setattr(index_module, "CHUNK_BYTES", log.stat().st_size // 7)
    assert rows(lab, query) == whole
    entry = manifest(lab)["sources"]["exp"]
    assert 7 <= len(entry["parts"]) <= 8 and entry["skipped"] == skipped
    assert rows(lab, "SELECT count(*) FROM trials_all") == [(125,)]


def test_many_appends_are_merged_into_few_parts(lab):
    exp = experiment(lab)
    for t in range(index_module.MAX_PARTS + 3):
        append(exp, [record("r1", "a", "must-001", t)])
        open_index(lab)
    assert len(manifest(lab)["sources"]["exp"]["parts"]) <= index_module.MAX_PARTS
    assert rows(lab, "SELECT count(*), min(trial), max(trial) FROM trials") == [
        (index_module.MAX_PARTS + 3, 0, index_module.MAX_PARTS + 2)]


def test_a_rewritten_log_is_indexed_afresh(lab):
    exp = experiment(lab)
    log = append(exp, [record("r1", "a", "must-001", t, passed=True) for t in range(5)])
    assert rows(lab, "SELECT count(*) FROM trials") == [(5,)]
    lines = log.read_bytes().splitlines(keepends=True)
    flipped = lines[0].replace(b'"passed":true', b'"passed":false')  # (as the writer spaces it)
    log.write_bytes(flipped + b"".join(lines[1:]) + json.dumps(
        record("r1", "a", "must-001", 9)).encode() + b"\n")  # same inode, longer, new prefix
    assert rows(lab, "SELECT count(*), count_if(NOT passed) FROM trials") == [(6, 1)]
    log.write_bytes(b"".join(lines[:2]))  # shorter
    assert rows(lab, "SELECT count(*) FROM trials") == [(2,)]


def test_torn_last_line_is_skipped_then_indexed_once_complete(lab):
    exp = experiment(lab)
    log = append(exp, [record("r1", "a", "must-001", t) for t in range(3)])
    whole = json.dumps(record("r1", "a", "must-001", 3)).encode()
    with log.open("ab") as f:
        f.write(whole[:40])  # a writer died, or is still writing
    warnings: list[str] = []
    with connect(lab, warnings.append) as con:
        assert con.execute("SELECT count(*) FROM trials").fetchall() == [(3,)]
    assert any("torn last line" in w for w in warnings)
    with log.open("ab") as f:
        f.write(whole[40:] + b"\n")
    assert rows(lab, "SELECT list(trial ORDER BY trial) FROM trials") == [([0, 1, 2, 3],)]
    assert manifest(lab)["sources"]["exp"]["skipped"] == 0


def test_a_complete_last_line_without_its_newline_counts_once(lab):
    exp = experiment(lab)
    log = append(exp, [record("r1", "a", "must-001", 0)])
    with log.open("ab") as f:
        f.write(json.dumps(record("r1", "a", "must-001", 1)).encode())  # no newline
    assert rows(lab, "SELECT count(*) FROM trials") == [(2,)]
    append(exp, [record("r1", "a", "must-001", 2)])  # the writer adds the missing newline
    assert rows(lab, "SELECT list(trial ORDER BY trial) FROM trials") == [([0, 1, 2],)]


def test_corrupt_lines_are_skipped_as_read_trials_skips_them(lab):
    exp = experiment(lab)
    log = append(exp, [record("r1", "a", "must-001", t) for t in range(4)])
    data = log.read_bytes().splitlines(keepends=True)
    junk = [b"not json\n", b"[1, 2]\n", b'{"a": \xff}\n', b"\n", b'"text"\n']
    log.write_bytes(data[0] + junk[0] + data[1] + junk[1] + junk[2] + data[2] + junk[3]
                    + junk[4] + data[3])
    warnings: list[str] = []
    kept = list(read_trials(log, warnings.append))
    mine: list[str] = []
    with connect(lab, mine.append) as con:
        trials = con.execute("SELECT trial FROM trials ORDER BY trial").fetchall()
    assert [t for (t,) in trials] == [r["trial"] for r in kept] == [0, 1, 2, 3]
    assert mine == [f"{log}: skipped {len(warnings)} torn or corrupt line(s)"]


def test_a_changed_case_file_updates_tags_without_reindexing_the_log(lab):
    exp = experiment(lab, cases={"must-001": "tags: [old]\n"})
    append(exp, [record("r1", "a", "must-001", 0)])
    assert rows(lab, "SELECT tags, difficulty FROM trials") == [(["old"], None)]
    parts = manifest(lab)["sources"]["exp"]["parts"]
    case(exp, "must-001", "must_trigger", extra="tags: [new, more]\ndifficulty: easy\n")
    assert rows(lab, "SELECT tags, difficulty FROM trials") == [(["new", "more"], "easy")]
    assert manifest(lab)["sources"]["exp"]["parts"] == parts


def test_a_broken_case_file_is_reported_and_its_trials_stay(lab):
    exp = experiment(lab, cases={"must-001": "tags: [x]\n"})
    append(exp, [record("r1", "a", "must-001", 0)])
    (exp / "cases" / "must-001.md").write_text("---\ntags: [unclosed\n---\nbody\n")
    warnings: list[str] = []
    with connect(lab, warnings.append) as con:
        assert con.execute("SELECT tags FROM trials").fetchall() == [([],)]
    assert any("must-001.md" in w for w in warnings)


def test_experiments_are_told_apart_and_a_removed_log_leaves_the_index(lab):
    one, two = experiment(lab, "one"), experiment(lab, "two")
    append(one, [record("r1", "a", "must-001", 0, experiment="one")])
    append(two, [record("r2", "a", "must-001", 0, experiment="two")] * 2)
    assert rows(lab, "SELECT experiment, count(*) FROM trials GROUP BY ALL ORDER BY ALL") == [
        ("one", 1), ("two", 1)]   # the duplicate line is one trial
    (two / "results" / "trials.jsonl").unlink()
    assert rows(lab, "SELECT DISTINCT experiment FROM trials") == [("one",)]
    assert sorted(manifest(lab)["sources"]) == ["one"]


def test_an_unwritable_lab_is_indexed_in_a_temporary_folder(lab, tmp_path, monkeypatch):
    exp = experiment(lab)
    append(exp, [record("r1", "a", "must-001", 0)])
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.setattr(index_folder.os, "access", lambda *a, **k: False)
    index = open_index(lab)
    assert not (lab / ".ix").exists()
    private = tmp_path / "tmp" / f"ix-{os.getuid()}"  # the user's own folder, 0700
    assert index.root.parent == private and (index.root / MANIFEST).is_file()
    assert stat.S_IMODE(private.stat().st_mode) == 0o700
    assert rows(lab, "SELECT count(*) FROM trials") == [(1,)]


def test_readers_never_see_a_half_written_index(lab):
    """Readers query while a writer appends and refreshes: every read succeeds, and counts
    only grow (refreshes are serialised and each manifest is replaced whole)."""
    exp = experiment(lab)
    append(exp, [record("r0", "a", "must-001", 0)])
    open_index(lab)
    stop = threading.Event()
    seen: list[list[int]] = [[], []]
    failures: list[BaseException] = []

    def reader(out: list[int]) -> None:
        try:
            while not stop.is_set():
                out.extend(c for (c,) in rows(lab, "SELECT count(*) FROM trials_all"))
        except BaseException as exc:  # reported below
            failures.append(exc)

    threads = [threading.Thread(target=reader, args=(s,)) for s in seen]
    for t in threads:
        t.start()
    for b in range(1, 15):
        append(exp, [record(f"r{b}", "a", "must-001", t) for t in range(20)])
    stop.set()
    for t in threads:
        t.join()
    assert not failures
    for counts in seen:
        assert counts and counts == sorted(counts) and counts[-1] <= 1 + 14 * 20
    assert rows(lab, "SELECT count(*) FROM trials_all") == [(1 + 14 * 20,)]


# --------------------------------------------------------------------------- filters

def test_filters_combine_with_and_and_their_values_with_or(lab):
    exp = experiment(lab, cases={"must-001": "tags: [csv]\ndifficulty: easy\n",
                                 "must-002": "tags: [sql, csv]\ndifficulty: hard\n",
                                 "not-001": "difficulty: hard\n"})
    lines = []
    for i, (subject, probe) in enumerate([("a", "must-001"), ("b", "must-002"),
                                          ("c", "not-001"), ("a", "must-002")]):
        lines.append(record("r1", subject, probe, 0, passed=i % 2 == 0,
                            started=T0 + timedelta(hours=i)))
    lines.append(record("r2", "a", "must-001", 1, error="timeout", started=T0 + timedelta(days=2)))
    append(exp, lines)

    def ids(**kw) -> list[tuple]:
        f = TrialFilter(**kw)
        return rows(lab, f"SELECT subject, probe_id, run_id FROM {f.view} WHERE {f.where()} "
                         "ORDER BY started_at")

    assert len(ids()) == 5
    assert ids(subjects=("a", "c")) == [("a", "must-001", "r1"), ("c", "not-001", "r1"),
                                       ("a", "must-002", "r1"), ("a", "must-001", "r2")]
    assert ids(cases=("must-*",), subjects=("a",)) == [
        ("a", "must-001", "r1"), ("a", "must-002", "r1"), ("a", "must-001", "r2")]
    assert ids(tags=("sql",)) == [("b", "must-002", "r1"), ("a", "must-002", "r1")]
    assert ids(tags=("csv",), difficulties=("easy",)) == [("a", "must-001", "r1"),
                                                         ("a", "must-001", "r2")]
    assert ids(runs=("r2",)) == [("a", "must-001", "r2")]
    assert ids(since=datetime(2026, 11, 20, 13), until=datetime(2026, 11, 20, 15)) == [
        ("b", "must-002", "r1"), ("c", "not-001", "r1")]
    assert ids(passed=True) == [("a", "must-001", "r1"), ("c", "not-001", "r1")]
    assert ids(passed=False) == [("b", "must-002", "r1"), ("a", "must-002", "r1")]
    assert ids(errors=True) == [("a", "must-001", "r2")]
    assert len(ids(errors=False)) == 4
    assert ids(subjects=("it's",)) == []  # quotes are quoted, not SQL


# --------------------------------------------------------------------------- aggregates

def _random_lab(lab: Path, n: int = 900) -> list[dict]:
    cases = {"c-1": "tags: [x, y]\ndifficulty: easy\n", "c-2": "tags: [y]\ndifficulty: medium\n",
             "c-3": "difficulty: hard\n", "c-4": ""}
    exp = experiment(lab, cases=cases)
    rng = random.Random(7)
    lines = []
    for i in range(n):
        probe = rng.choice(list(cases))
        if rng.random() < 0.05:
            lines.append(record("r1", rng.choice("ab"), probe, i, error="timeout",
                                ms=rng.uniform(1, 500)))
            continue
        score = rng.random() ** (1 + list(cases).index(probe))
        lines.append(record("r1", rng.choice("ab"), probe, i, passed=score > 0.5, score=score,
                            ms=rng.expovariate(1 / 50), tokens=(rng.randint(1, 900),
                                                                rng.randint(0, 99)),
                            cost=rng.random() / 100))
    append(exp, lines)
    return lines


def _expected(lines: list[dict], key) -> dict:
    groups: dict = {}
    for r in lines:
        for k in key(r):
            groups.setdefault(k, []).append(r)
    return groups


def test_aggregates_match_numpy_and_scipy_on_the_raw_lines(lab):
    lines = _random_lab(lab)
    with connect(lab) as con:
        got = aggregate(con, "trials", ["subject", "case"], correlation="pearson")
    expected = _expected(lines, lambda r: [(r["subject"], r["probe_id"])])
    assert [(g["subject"], g["probe_id"]) for g in got] == sorted(expected)
    for g in got:
        group = expected[(g["subject"], g["probe_id"])]
        valid = [r for r in group if r["error"] is None]
        passed = sum(r["reading"]["passed"] for r in valid)
        assert (g["n"], g["errors"], g["valid"], g["passed"]) == (
            len(group), len(group) - len(valid), len(valid), passed)
        assert g["activation_rate"] == pytest.approx(passed / len(valid))
        # one case per group: its trials are draws of its own rate, the Beta interval
        lo, hi = sps.beta.ppf([0.025, 0.975], passed + 1, len(valid) - passed + 1)
        assert (g["activation_rate_lo"], g["activation_rate_hi"]) == pytest.approx(
            (lo, hi), rel=1e-9)
        columns = {
            "score": [r["reading"]["score"] for r in valid],
            "duration": [r["duration_ms"] for r in group],
            "tokens": [sum((r["observation"]["tokens_input"],
                            r["observation"]["tokens_output"])) for r in valid],
            "cost": [r["observation"]["cost_usd"] for r in valid]}
        for name, values in columns.items():
            x = np.asarray(values, float)
            assert g[f"{name}_mean"] == pytest.approx(x.mean(), rel=1e-9)
            assert g[f"{name}_std"] == pytest.approx(x.std(ddof=1), rel=1e-9)
            p50, p90, p99 = np.percentile(x, [50, 90, 99])
            assert (g[f"{name}_p50"], g[f"{name}_p90"], g[f"{name}_p99"]) == pytest.approx(
                (p50, p90, p99), rel=1e-9)
        assert g["tokens_sum"] == sum(columns["tokens"])
        assert g["cost_sum"] == pytest.approx(sum(columns["cost"]), rel=1e-9)
        # one case per group: difficulty is constant, so no correlation
        assert g["score_difficulty_r"] is None


def test_the_difficulty_ordinals_follow_the_case_models_difficulties():
    """The query layer spells the ordinals out (it reads case files without the models)."""
    assert tuple(DIFFICULTY_LEVELS) == DIFFICULTIES
    assert list(DIFFICULTY_LEVELS.values()) == [1, 2, 3]


def test_correlation_of_score_with_difficulty_matches_scipy(lab):
    lines = _random_lab(lab)
    levels = {"c-1": 1, "c-2": 2, "c-3": 3}
    with connect(lab) as con:
        pearson = aggregate(con, "trials", ["subject"], correlation="pearson")
        spearman = aggregate(con, "trials", [], correlation="spearman")[0]
    for g in pearson:
        pairs = [(r["reading"]["score"], levels[r["probe_id"]]) for r in lines
                 if r["subject"] == g["subject"] and r["error"] is None
                 and r["probe_id"] in levels]
        x, y = np.asarray(pairs, float).T
        assert g["score_difficulty_n"] == len(pairs)
        result = sps.pearsonr(x, y)
        assert g["score_difficulty_r"] == pytest.approx(result.statistic, rel=1e-9)
        ci = result.confidence_interval(0.95)
        assert (g["score_difficulty_lo"], g["score_difficulty_hi"]) == pytest.approx(
            (ci.low, ci.high), rel=1e-6)
        assert g["score_difficulty_r"] < 0  # harder cases score lower in this lab
    pairs = [(r["reading"]["score"], levels[r["probe_id"]]) for r in lines
             if r["error"] is None and r["probe_id"] in levels]
    x, y = np.asarray(pairs, float).T
    assert spearman["score_difficulty_r"] == pytest.approx(sps.spearmanr(x, y).statistic,
                                                           rel=1e-9)


def test_a_trial_counts_once_in_each_of_its_tags(lab):
    lines = _random_lab(lab)
    tags = {"c-1": ["x", "y"], "c-2": ["y"], "c-3": [], "c-4": []}
    with connect(lab) as con:
        got = {g["tag"]: g for g in aggregate(con, "trials", ["tag"])}
    expected = _expected(lines, lambda r: tags[r["probe_id"]] or [None])
    assert sorted(got, key=str) == sorted(expected, key=str)
    for tag, group in expected.items():
        valid = [r for r in group if r["error"] is None]
        assert (got[tag]["n"], got[tag]["passed"]) == (
            len(group), sum(r["reading"]["passed"] for r in valid))


def test_aggregate_of_nothing_is_one_row_of_zeros_and_nulls(lab):
    experiment(lab)
    with connect(lab) as con:
        (row,) = aggregate(con, "trials", [])
        assert aggregate(con, "trials", ["subject"]) == []
    assert (row["n"], row["valid"], row["activation_rate"], row["activation_rate_lo"],
            row["votes"], row["correct_rate"], row["correct_rate_lo"], row["score_mean"],
            row["cost_sum"]) == (0, 0, None, None, 0, None, None, None, None)


def test_grouping_by_an_unknown_name_is_refused(lab):
    experiment(lab)
    with connect(lab) as con, pytest.raises(ConfigError, match="allowed: experiment, run"):
        aggregate(con, "trials", ["colour"])


# --------------------------------------------------------------------------- families
def perturbed_experiment(lab: Path) -> Path:
    """A case file with `variants:` (it runs as v~1, v~2), a plain case and a paraphrase of
    it recorded by `probe: paraphrase` (results/probes/*.json, as `ix.engine.probes` writes)."""
    d = experiment(lab, cases={
        "v": "tags: [variant, csv]\ndifficulty: hard\nvariants:\n  file: [a.csv, b.tsv]\n",
        "plain": "tags: [direct]\n"})
    probes = d / "results" / "probes"
    probes.mkdir(parents=True)
    (probes / "paraphrase-abc.json").write_text(json.dumps({
        "kind": "paraphrase", "options": {"n": 1}, "key": "abc",
        "cases": [{"id": "plain~p1", "prompt": "reworded", "expectation": "must_trigger",
                   "tags": ["direct", "paraphrase"], "difficulty": "easy",
                   "metadata": {"paraphrase_of": "plain"}}]}))
    append(d, [record("r1", "a", probe, t, passed=(t + i) % 3 != 0)
               for i, probe in enumerate(("v~1", "v~2", "plain", "plain~p1"))
               for t in range(4)])
    return d


def test_generated_cases_keep_their_files_tags_difficulty_and_family(lab):
    perturbed_experiment(lab)
    got = {r[0]: r[1:] for r in rows(lab, "SELECT probe_id, tags, difficulty, variant_of, "
                                          "paraphrase_of, family FROM cases")}
    assert got == {
        "v~1": (["variant", "csv"], "hard", "v", None, "v"),
        "v~2": (["variant", "csv"], "hard", "v", None, "v"),
        "plain": (["direct"], None, None, None, "plain"),
        "plain~p1": (["direct", "paraphrase"], "easy", None, "plain", "plain")}
    # the file's own id never runs: no row for "v"
    assert rows(lab, "SELECT DISTINCT probe_id FROM trials WHERE list_contains(tags, "
                     "'variant') ORDER BY probe_id") == [("v~1",), ("v~2",)]


def test_a_filter_on_a_tag_finds_the_variant_cases(lab):
    perturbed_experiment(lab)
    with connect(lab) as con:
        (row,) = aggregate(con, f"(SELECT * FROM trials WHERE "
                                f"{TrialFilter(tags=('variant',)).where()})", [])
    assert (row["n"], row["cases"], row["families"]) == (8, 2, 1)


def test_a_family_is_one_cluster_of_the_aggregate_intervals(lab):
    from ix.stats.clustered import hierarchical_interval

    perturbed_experiment(lab)
    lines = [r for r in read_trials(lab / "exp" / "results" / "trials.jsonl")]
    family = {"v~1": "v", "v~2": "v", "plain": "plain", "plain~p1": "plain"}
    counts = {f: [0, 0] for f in ("plain", "v")}
    for r in lines:
        counts[family[r["probe_id"]]][0] += r["reading"]["passed"]
        counts[family[r["probe_id"]]][1] += 1
    k = np.array([counts[f][0] for f in ("plain", "v")])
    n = np.array([counts[f][1] for f in ("plain", "v")])
    with connect(lab) as con:
        (row,) = aggregate(con, "trials", [])
        by_family = {g["family"]: g for g in aggregate(con, "trials", ["family"])}
    assert (row["cases"], row["families"]) == (4, 2)
    lo, hi = hierarchical_interval(k, n, level=0.95, estimate=k.sum() / n.sum())
    assert (row["activation_rate_lo"], row["activation_rate_hi"]) == pytest.approx((lo, hi))
    assert set(by_family) == {"v", "plain"} and by_family["v"]["cases"] == 2
    # one family: its trials are pooled (Beta of the family's counts)
    lo, hi = sps.beta.ppf([0.025, 0.975], k[1] + 1, n[1] - k[1] + 1)
    assert (by_family["v"]["activation_rate_lo"], by_family["v"]["activation_rate_hi"]) == (
        pytest.approx((lo, hi), rel=1e-9))


# --------------------------------------------------------------------------- user SQL

@pytest.mark.parametrize("sql", [
    "COPY trials TO 'out.csv'", "CREATE TABLE t AS SELECT 1", "ATTACH 'x.db'",
    "INSTALL httpfs", "SET threads = 1", "EXPORT DATABASE 'd'", "PRAGMA version",
    "SELECT 1; SELECT 2", "CALL pragma_version()", "DROP VIEW trials",
])
def test_statements_that_are_not_a_single_select_are_refused(sql):
    with pytest.raises(ConfigError) as info:
        check_read_only(sql)
    assert "\n" not in info.value.render()


def test_select_and_explain_are_allowed():
    check_read_only("WITH x AS (SELECT 1) SELECT * FROM x")
    check_read_only("EXPLAIN SELECT * FROM trials")


def test_replaced_parts_are_deleted_only_after_a_grace_period(lab, monkeypatch):
    exp = experiment(lab)
    log = append(exp, [record("r1", "a", "must-001", t) for t in range(3)])
    open_index(lab)
    [old] = manifest(lab)["sources"]["exp"]["parts"]
    log.write_bytes(log.read_bytes().splitlines(keepends=True)[0])  # rewritten: rebuilt
    open_index(lab)
    assert old not in manifest(lab)["sources"]["exp"]["parts"]
    assert (lab / INDEX_DIR / old).is_file()  # a reader of the old manifest may still read it
    monkeypatch.setattr(index_module, "GRACE_S", 0)
    append(exp, [record("r1", "a", "must-001", 7)])
    open_index(lab)
    assert not (lab / INDEX_DIR / old).exists()
    assert rows(lab, "SELECT list(trial ORDER BY trial) FROM trials") == [([0, 7],)]


@pytest.mark.parametrize("zone", ["UTC", "America/New_York"])
def test_a_utc_start_read_without_a_time_zone_is_the_time_zone_reads(zone):
    """`STARTED_AT` reads a start ending in `Z` (ix's own) by the plain cast, five times
    cheaper: the same instant as read with its time zone, whatever the session's zone, and
    NULL alike where that is NULL."""
    import duckdb

    from ix.store.trial_lines import STARTED_AT

    texts = ["2026-11-26T01:00:00.265Z", "2026-11-26T01:00:00.123456789Z",
             "2026-11-26T24:00:00Z", "-2026-11-26T01:00:00Z", "26-11-26T01:00:00Z",
             "2026-11-26T01:00:00+01:00Z", "2026-11-26T01:00:00 Z", "2026-11-26Z",
             "2026-11-26T01:00:00-05Z", "2026-11-26T01:00:00z", "2026-02-30T01:00:00Z",
             "2026-11-26T01:00:00 UTCZ", "infinityZ", "epochZ", "Z", "",
             "2026-11-26T14:30:00.250+02:00"]
    con = duckdb.connect()
    con.execute(f"SET TimeZone = '{zone}'")
    con.execute("CREATE TABLE t (started_at VARCHAR)")
    con.executemany("INSERT INTO t VALUES (?)", [[x] for x in texts])
    got = con.execute(f"SELECT started_at, {STARTED_AT}, try_cast(started_at AS TIMESTAMPTZ) "
                      "AT TIME ZONE 'UTC' FROM t").fetchall()
    assert [(text, fast) for text, fast, _ in got] == [(text, zoned) for text, _, zoned in got]
    assert sum(fast is not None for _, fast, _ in got) >= 6
