"""`import ix`: the Python API (`ix.Lab`, `ResultSet`) over labs that real runs wrote."""

import csv
import json
import subprocess
import sys
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import duckdb
import numpy as np
import pytest
from scipy import stats as sps

import ix
from conftest import mock_experiment, write
from ix.api.results import query_results
from ix.api.timespec import parse_moment
from ix.domain.errors import ConfigError
from ix.stats.clustered import hierarchical_interval
from ix.store.trials import read_trials

RATES = {"must-001": 0.9, "must-002": 0.5, "must-003": 0.2, "not-001": 0.1}


@pytest.fixture
def lab_dir(lab: Path) -> Path:
    mock_experiment(lab, "exp", rates=RATES, trials=8,
                    runtime_extra="error_rates: {must-002: 0.25}")
    return lab


def lines(lab: Path) -> list[dict]:
    return list(read_trials(lab / "exp" / "results" / "trials.jsonl"))


def test_import_ix_is_cheap_and_exposes_the_api():
    code = ("import sys, ix\n"
            "print(ix.__version__, 'duckdb' in sys.modules, 'ix.api' in sys.modules)\n"
            "print(ix.Lab.__module__, ix.ResultSet.__module__, 'Lab' in dir(ix))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == [ix.__version__, "False", "False", "ix.api.lab", "ix.api.results", "True"]
    with pytest.raises(AttributeError):
        _ = ix.NotAThing  # type: ignore[attr-defined]


def test_lab_run_then_query_gives_the_numbers_of_the_raw_lines(lab_dir):
    lab = ix.Lab(lab_dir)
    result = lab.run("exp", seed=3)
    assert result.status == "completed"
    raw = lines(lab_dir)
    assert {r["run_id"] for r in raw} == {result.run_id}

    rs = lab.results.query(experiment="exp", case="must-*")
    must = [r for r in raw if r["probe_id"].startswith("must-")]
    valid = [r for r in must if not r["error"]]
    passed = sum(r["reading"]["passed"] for r in valid)
    assert len(rs) == len(must) == len(rs.rows()) == len(list(rs))
    rate = rs.activation_rate()
    # three cases: the trials cluster within them, so the interval is the hierarchical
    # model's (cases as clusters), wider than the Beta interval of pooled trials
    per_case = [(sum(r["reading"]["passed"] for r in valid if r["probe_id"] == c),
                 sum(r["probe_id"] == c for r in valid)) for c in ("must-001", "must-002",
                                                                   "must-003")]
    lo, hi = hierarchical_interval([k for k, _ in per_case], [n for _, n in per_case],
                                   estimate=passed / len(valid))
    naive = sps.beta.ppf([0.025, 0.975], passed + 1, len(valid) - passed + 1)
    assert (rate.passed, rate.valid, rate.errors) == (passed, len(valid), len(must) - len(valid))
    assert rate.estimate == pytest.approx(passed / len(valid))
    assert (rate.lo, rate.hi) == pytest.approx((lo, hi))
    assert rate.hi - rate.lo > naive[1] - naive[0]
    assert rs.pass_rate() == rate  # the deprecated alias
    assert rs.mean("duration") == pytest.approx(np.mean([r["duration_ms"] for r in must]))
    assert rs.mean("passed") == pytest.approx(passed / len(valid))
    stats = rs.stats()
    assert stats["n"] == len(must) and stats["activation_rate"] == rate.estimate
    assert stats["score_p50"] == pytest.approx(np.percentile(
        [r["reading"]["score"] for r in valid], 50))
    per_case = {g["probe_id"]: g for g in rs.group_by("case")}
    for cid in ("must-001", "must-002", "must-003"):
        assert per_case[cid]["n"] == sum(r["probe_id"] == cid for r in raw)
    with pytest.raises(ConfigError, match="no numeric column 'subject'"):
        rs.mean("subject")
    with rs.snapshot():  # one held connection: a count, then an aggregate, then rows
        assert rs.total() == len(must)
        assert rs.mean("duration") == pytest.approx(np.mean([r["duration_ms"] for r in must]))
        assert rs.pass_rate() == rate
        assert len(rs.rows()) == len(must)


def test_query_filters_are_checked(lab_dir):
    lab = ix.Lab(lab_dir)
    lab.run("exp")
    with pytest.raises(ConfigError, match="--run"):
        lab.results.query(run="nope")
    with pytest.raises(ConfigError, match="--since"):
        lab.results.query(since="soon")
    with pytest.raises(ConfigError, match="--difficulty"):
        lab.results.query(difficulty="trivial")
    with pytest.raises(ConfigError, match="--limit"):
        lab.results.query(limit=-1)
    assert len(lab.results.query(since=timedelta(hours=1), limit=3)) == 3
    assert len(lab.results.query(until=date(2000, 1, 1))) == 0
    assert len(lab.results.query(subject=["target", "other"])) == len(lines(lab_dir))


def test_exports_round_trip_with_their_types(lab_dir, tmp_path):
    lab = ix.Lab(lab_dir)
    run_id = lab.run("exp").run_id
    rs = lab.results.query(run=run_id)
    n = len(lines(lab_dir))
    for fmt in ("csv", "json", "jsonl", "parquet"):
        assert rs.export(fmt, tmp_path / f"t.{fmt}") == tmp_path / f"t.{fmt}"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    with (tmp_path / "t.csv").open(newline="") as f:
        table = list(csv.DictReader(f))
    array = json.loads((tmp_path / "t.json").read_text())
    per_line = [json.loads(x) for x in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert len(table) == len(array) == len(per_line) == n
    assert array == per_line
    assert table[0]["started_at"] == array[0]["started_at"]
    assert array[0]["started_at"].endswith("Z") and isinstance(array[0]["tags"], list)
    described = duckdb.sql(f"DESCRIBE SELECT * FROM '{tmp_path / 't.parquet'}'").fetchall()
    types = {column: kind for column, kind, *_ in described}
    assert types["started_at"] == "TIMESTAMP" and types["passed"] == "BOOLEAN"
    assert types["trial"] == "INTEGER" and types["tags"] == "VARCHAR[]"
    count = duckdb.sql(f"SELECT count(*) FROM '{tmp_path / 't.parquet'}'").fetchall()
    assert count == [(n,)]
    with pytest.raises(ConfigError, match="unknown format 'xlsx'"):
        rs.export("xlsx", tmp_path / "t.xlsx")
    with pytest.raises(ConfigError, match="does not exist"):
        rs.export("csv", tmp_path / "missing" / "t.csv")


def test_to_dataframe_uses_pandas_and_says_what_to_install_without_it(lab_dir, monkeypatch):
    pytest.importorskip("pandas")
    lab = ix.Lab(lab_dir)
    lab.run("exp")
    frame = lab.results.query().to_dataframe()
    assert len(frame) == len(lines(lab_dir)) and "difficulty" in frame.columns
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(ImportError, match="pandas or polars"):
        lab.results.query().to_dataframe()


def test_lab_query_reads_and_refuses_to_write(lab_dir):
    lab = ix.Lab(lab_dir)
    lab.run("exp")
    rows = lab.query("SELECT probe_id, count(*) AS n FROM trials GROUP BY ALL ORDER BY ALL")
    assert rows.columns == ["probe_id", "n"]
    assert rows.rows()[0] == {"probe_id": "must-001", "n": 8}
    with pytest.raises(ConfigError, match="only read-only"):
        lab.query(f"COPY trials TO '{lab_dir / 'x.csv'}'")
    assert not (lab_dir / "x.csv").exists()


def test_lab_compare_and_batch_call_the_same_functions_as_the_commands(lab_dir):
    lab = ix.Lab(lab_dir)
    a = lab.run("exp", seed=1).run_id
    b = lab.run("exp", seed=2, trials=4).run_id
    compared = lab.compare(a, b)
    assert compared["baseline"] == a and compared["comparisons"][0]["run"] == b
    write(lab_dir / "nightly.yaml", "name: nightly\nexperiments: [exp]\nseeds: 2\ntrials: 2\n")
    battery = lab.batch("nightly.yaml")
    assert len(battery.runs) == 2 and battery.folder.is_dir()
    # seeds × trials × cases (the acceptable case is not run)
    assert len(lab.results.query(run=[r.run_id for r in battery.runs])) == 2 * 2 * 6
    assert len(lab.run(None, trials=1)) == 1
    with pytest.raises(TypeError, match="unknown override"):
        lab.run("exp", trails=3)


def test_query_results_takes_a_lab_path_as_the_cli_does(lab_dir):
    ix.Lab(lab_dir).run("exp")
    assert query_results(str(lab_dir), subject="target").total() == len(lines(lab_dir))
    with pytest.raises(ConfigError, match="--lab"):
        query_results(lab_dir / "nowhere")


NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(("value", "end", "expected"), [
    ("7d", False, datetime(2026, 11, 13, 12, 0)),
    ("12h", False, datetime(2026, 11, 20, 0, 0)),
    ("30m", False, datetime(2026, 11, 20, 11, 30)),
    ("2w", False, datetime(2026, 11, 6, 12, 0)),
    ("2026-11-01", False, datetime(2026, 11, 1)),
    ("2026-11-01", True, datetime(2026, 11, 2)),
    ("2026-11-01T10:15", True, datetime(2026, 11, 1, 10, 15)),
    ("2026-11-01T10:15:00Z", False, datetime(2026, 11, 1, 10, 15)),
    ("2026-11-01T10:15:00+02:00", False, datetime(2026, 11, 1, 8, 15)),
    (timedelta(days=1), False, datetime(2026, 11, 19, 12, 0)),
    (date(2026, 1, 1), True, datetime(2026, 1, 2)),
])
def test_moments_are_naive_utc(value, end, expected):
    assert parse_moment(value, field="--since", now=NOW, end=end) == expected


@pytest.mark.parametrize("value", ["yesterday", "7 days", "2026-02-30", "-3d", "", "12y"])
def test_malformed_moments_are_config_errors(value):
    with pytest.raises(ConfigError, match="is not a date, a datetime or a duration"):
        parse_moment(value, field="--since", now=NOW)
