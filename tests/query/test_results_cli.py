"""`ix results` and `ix query` end to end over labs that runs wrote: the figures in process; the
real command for each contract (the trial table and its note on stderr, `ix query --json`,
`--help`, exit 2 with one line for bad input and for bad SQL on a lab never indexed).

Every number is recomputed here from the raw trial lines (and the case files), never taken
from the query layer itself.
"""

import csv
import io
import json
import shutil
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from conftest import Result, case, ix_in_process, run_ix, tree_digest, write
from ix.store.trials import read_trials

CASES = {  # id: (expectation, frontmatter extra)
    "must-001": ("must_trigger", "tags: [csv, direct]\ndifficulty: easy\n"),
    "must-002": ("must_trigger", "tags: [csv]\ndifficulty: hard\n"),
    "not-001": ("should_not_trigger", "tags: [near-miss]\ndifficulty: medium\n"),
    "edge-001": ("acceptable", ""),
}


def two_subjects(lab: Path, name: str = "exp", trials: int = 6) -> Path:
    d = lab / name
    write(d / "experiment.yaml", f"""
        name: {name}
        trials: {trials}
        sensor: {{kind: activation, skill: target}}
        runtime:
          kind: mock
          skill: target
          activation_rates: {{must-001: 0.9, must-002: 0.4, not-001: 0.2}}
          error_rates: {{must-002: 0.3}}
        subjects:
          - name: alpha
          - name: beta
    """)
    for cid, (expectation, extra) in CASES.items():
        case(d, cid, expectation, extra=extra)
    return d


def ix_ok(*args: str, runner: Callable[..., Result] = ix_in_process) -> str:
    """The command's stdout, after checking it succeeded: in process (set-up, and figures
    under test), or `runner=run_ix` for the real command."""
    r = runner(*args)
    assert r.code == 0, r.output
    assert "Traceback" not in r.output
    return r.stdout


def run(lab: Path, *args: str, runner: Callable[..., Result] = ix_in_process) -> str:
    return json.loads(ix_ok("run", "--lab", str(lab), "--json", *args,
                            runner=runner))["run_id"]


def latest(lab: Path) -> list[dict]:
    """The latest attempt of each (run, subject, case, trial) of every log in the lab."""
    best: dict = {}
    for log in sorted(lab.glob("*/results/trials.jsonl")):
        for r in read_trials(log):
            key = (log, r["run_id"], r["subject"], r["probe_id"], r["trial"])
            if key not in best or r["attempt"] >= best[key]["attempt"]:
                best[key] = r
    return list(best.values())


def results(lab: Path, *args: str) -> list[dict]:
    return json.loads(ix_ok("results", "--lab", str(lab), "--json", *args))


def key(r: dict) -> tuple:
    return r["run_id"], r["subject"], r["probe_id"], r["trial"]


@pytest.fixture(scope="module")
def _ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """One run of two subjects, made once (set-up, in process), kept as a pristine copy."""
    root = tmp_path_factory.mktemp("ran")
    lab, pristine = root / "lab", root / "pristine"
    lab.mkdir()
    two_subjects(lab)
    run(lab)
    shutil.copytree(lab, pristine, symlinks=True)
    return lab, pristine


@pytest.fixture
def ran(_ran: tuple[Path, Path]) -> Path:
    """A lab with one run and no index yet: the module's, restored at its own path
    (spec.yaml records it) from the pristine copy, so each test changes only its own."""
    lab, pristine = _ran
    shutil.rmtree(lab)
    shutil.copytree(pristine, lab, symlinks=True)
    return lab


def test_results_lists_every_trial_of_a_real_run_with_its_case_data(ran):
    raw = latest(ran)
    got = results(ran)
    assert sorted(map(key, got)) == sorted(map(key, raw))
    by_key = {key(r): r for r in raw}
    for row in got:
        r = by_key[key(row)]
        assert row["seed"] == r["seed"] and row["expectation"] == r["expectation"]
        assert row["passed"] == (r["reading"] or {}).get("passed")
        assert row["error"] == (r["error"] or {}).get("kind")
        assert row["started_at"] == r["started_at"]
        extra = CASES[row["probe_id"]][1]
        assert row["difficulty"] == (extra.split("difficulty: ")[1].strip() if extra else None)
    assert any(row["error"] for row in got), "the mock should have errored some trials"


def test_filters_select_what_the_raw_lines_say(ran):
    raw = latest(ran)
    run_id = raw[0]["run_id"]
    tags = {"must-001": {"csv", "direct"}, "must-002": {"csv"}, "not-001": {"near-miss"}}

    def expect(pred) -> list[tuple]:
        return sorted(key(r) for r in raw if pred(r))

    def got(*args: str) -> list[tuple]:
        return sorted(map(key, results(ran, *args)))

    assert got("--subject", "beta") == expect(lambda r: r["subject"] == "beta")
    assert got("--case", "must-*", "--subject", "alpha") == expect(
        lambda r: r["probe_id"].startswith("must-") and r["subject"] == "alpha")
    assert got("--tag", "direct", "--tag", "near-miss") == expect(
        lambda r: tags.get(r["probe_id"], set()) & {"direct", "near-miss"})
    assert got("--difficulty", "hard") == expect(lambda r: r["probe_id"] == "must-002")
    assert got("--run", run_id[:17]) == expect(lambda r: True)
    assert got("--experiment", "exp", "--passed") == expect(
        lambda r: not r["error"] and r["reading"]["passed"])
    assert got("--failed") == expect(lambda r: not r["error"] and not r["reading"]["passed"])
    assert got("--errors") == expect(lambda r: r["error"])
    assert got("--no-errors") == expect(lambda r: not r["error"])
    assert got("--since", "1h") == expect(lambda r: True)
    assert got("--until", "2000-01-01") == []
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).date().isoformat()
    assert got("--since", tomorrow) == []
    today = datetime.now(UTC).date().isoformat()
    assert got("--since", today, "--until", today) == expect(lambda r: True)


def test_a_retried_trial_counts_once_and_all_attempts_shows_both(ran):
    before = len(results(ran))
    ix_ok("run", "--lab", str(ran), "--retry-failed", "--json")
    lines = [r for log in ran.glob("*/results/trials.jsonl") for r in read_trials(log)]
    retried = [r for r in lines if r["attempt"] == 1]
    assert retried
    assert len(results(ran)) == before
    assert len(results(ran, "--all-attempts")) == len(lines) == before + len(retried)
    fresh = {key(r): r for r in results(ran)}
    for r in retried:
        assert fresh[key(r)]["attempt"] == 1
        assert fresh[key(r)]["error"] == (r["error"] or {}).get("kind")


def test_new_results_are_seen_without_a_manual_rebuild(ran):
    first = results(ran)
    second_run = run(ran)
    both = results(ran, "--all-runs")
    assert len(both) == 2 * len(first)
    assert {r["run_id"] for r in both} - {r["run_id"] for r in first} == {second_run}
    assert {r["run_id"] for r in results(ran)} == {second_run}  # the latest run, by default
    assert (ran / ".ix" / "index" / "manifest.json").is_file()


def test_group_by_subject_and_case_matches_the_raw_lines(ran):
    raw = latest(ran)
    got = results(ran, "--group-by", "subject", "--group-by", "case")
    groups: dict = {}
    for r in raw:
        groups.setdefault((r["subject"], r["probe_id"]), []).append(r)
    assert [(g["subject"], g["probe_id"]) for g in got] == sorted(groups)
    for g in got:
        trials = groups[(g["subject"], g["probe_id"])]
        valid = [r for r in trials if not r["error"]]
        passed = sum(r["reading"]["passed"] for r in valid)
        assert (g["n"], g["errors"], g["valid"], g["passed"]) == (
            len(trials), len(trials) - len(valid), len(valid), passed)
        if valid:
            n = len(valid)  # equal-tailed, one-sided at 0 and n passes (STATS.md §1)
            q = [0.0, 0.95] if passed == 0 else [0.05, 1.0] if passed == n else [0.025, 0.975]
            lo, hi = sps.beta.ppf(q, passed + 1, n - passed + 1)
            assert g["activation_rate"] == pytest.approx(passed / len(valid))
            assert [g["activation_rate_lo"], g["activation_rate_hi"]] == pytest.approx([lo, hi])
        durations = np.array([r["duration_ms"] for r in trials])
        assert g["duration_mean"] == pytest.approx(durations.mean())
        assert g["duration_p90"] == pytest.approx(np.percentile(durations, 90))


def test_aggregate_csv_and_json_agree_and_the_table_shows_intervals(ran):
    got = results(ran, "--group-by", "difficulty", "--correlation")
    text = ix_ok("results", "--lab", str(ran), "--group-by", "difficulty", "--correlation",
                 "--format", "csv")
    parsed = list(csv.DictReader(io.StringIO(text)))
    assert [r["difficulty"] for r in parsed] == [g["difficulty"] or "" for g in got]
    for row, g in zip(parsed, got, strict=True):
        assert int(row["n"]) == g["n"]
        assert (float(row["activation_rate"]) if row["activation_rate"] else None) == \
            pytest.approx(g["activation_rate"])
    table = ix_ok("results", "--lab", str(ran), "--group-by", "difficulty")
    assert "activation rate (must)" in " ".join(table.split()) and "pass rate" not in table
    hard = next(g for g in got if g["difficulty"] == "hard")  # must-002 alone
    assert (f"{hard['activation_rate_must']:.2f} [{hard['activation_rate_must_lo']:.2f}, "
            f"{hard['activation_rate_must_hi']:.2f}]") in table


def test_correlation_of_score_with_difficulty_matches_scipy(ran):
    raw = [r for r in latest(ran) if not r["error"]]
    levels = {"must-001": 1, "not-001": 2, "must-002": 3}
    pairs = np.array([(r["reading"]["score"], levels[r["probe_id"]]) for r in raw
                      if r["probe_id"] in levels], float)
    (row,) = results(ran, "--stats", "--correlation")
    assert row["score_difficulty_n"] == len(pairs)
    assert row["score_difficulty_r"] == pytest.approx(sps.pearsonr(*pairs.T).statistic)
    (spear,) = results(ran, "--stats", "--correlation", "--correlation-method", "spearman")
    assert spear["score_difficulty_r"] == pytest.approx(sps.spearmanr(*pairs.T).statistic)


def test_trial_listing_formats(ran):
    raw = latest(ran)
    table = run_ix("results", "--lab", str(ran), "--limit", "3")  # the real command
    assert table.code == 0 and f"3 of {len(raw)} trial(s) shown" in table.stderr
    text = ix_ok("results", "--lab", str(ran), "--format", "csv", "--subject", "alpha")
    parsed = list(csv.DictReader(io.StringIO(text)))
    assert len(parsed) == sum(r["subject"] == "alpha" for r in raw)
    assert json.loads(parsed[0]["tags"]) in (["csv", "direct"], ["csv"], ["near-miss"], [])
    assert len(results(ran, "--limit", "5")) == 5


def _right(r: dict) -> bool | None:
    """The trial's outcome from its raw line: its reading against the case's expectation."""
    if r["error"] or r["expectation"] == "acceptable":
        return None
    return r["reading"]["passed"] == (r["expectation"] == "must_trigger")


def test_outcome_is_right_or_wrong_against_the_expectation_and_filters_by_it(ran):
    """A should-not case where the skill fired is *wrong* (not "passed"): `outcome` in JSON,
    `--right/--wrong` select by it, `--passed/--failed` still select by the reading."""
    raw = latest(ran)
    by_key = {key(r): r for r in raw}
    for row in results(ran):
        right = _right(by_key[key(row)])
        assert row["outcome"] == {True: "right", False: "wrong", None: None}[right]
    expect = {v: sorted(key(r) for r in raw if _right(r) is v) for v in (True, False)}
    assert sorted(map(key, results(ran, "--right"))) == expect[True]
    assert sorted(map(key, results(ran, "--wrong"))) == expect[False]
    fired_wrongly = [k for k in expect[False] if k[2] == "not-001"]
    assert fired_wrongly, "the mock should fire on not-001 now and then"
    assert set(fired_wrongly) <= set(map(key, results(ran, "--passed")))


def test_the_trial_table_says_invoked_and_right_or_wrong_never_passed(ran):
    r = ix_in_process("results", "--lab", str(ran), "--case", "not-001", "--limit", "0",
                      env={"COLUMNS": "200"})
    assert r.code == 0, r.output
    header = r.stdout.splitlines()[0].split()
    assert "outcome" in header and "reading" in header and "result" not in header
    rows = [line for line in r.stdout.splitlines() if "not-001" in line]
    assert rows and all(("right" in line) != ("wrong" in line) or "error" in line
                        for line in rows)
    assert any("not invoked" in line and "right" in line for line in rows)
    assert any(" invoked" in line and "not invoked" not in line and "wrong" in line
               for line in rows)
    assert "passed" not in r.stdout and "failed" not in r.stdout


def test_query_runs_read_only_sql_over_the_views(ran):
    raw = latest(ran)
    sql = ("SELECT subject, count(*) AS n, count(*) FILTER (WHERE passed) AS passed "
           "FROM trials GROUP BY subject ORDER BY subject")
    rows = json.loads(ix_ok("query", sql, "--lab", str(ran), "--json", runner=run_ix))
    assert rows == [{"subject": s, "n": sum(r["subject"] == s for r in raw),
                     "passed": sum(r["subject"] == s and not r["error"]
                                   and r["reading"]["passed"] for r in raw)}
                    for s in ("alpha", "beta")]
    text = ix_ok("query", sql, "--lab", str(ran), "--format", "csv")
    assert text.splitlines()[0] == "subject,n,passed"
    table = ix_ok("query", "SELECT probe_id, tags FROM cases ORDER BY probe_id", "--lab",
                  str(ran))
    assert "csv, direct" in table


def test_results_and_query_are_listed_in_help():
    out = ix_ok("--help", runner=run_ix)
    assert "results" in out and "query" in out
    assert "--group-by" in ix_ok("results", "--help")


BAD = [
    (["query", "SELEC * FROM trials"], "syntax error"),
    (["query", "SELECT nope FROM trials"], "nope"),
    (["query", "SELECT * FROM nowhere"], "nowhere"),
    (["query", "COPY trials TO 'stolen.csv'"], "only read-only queries"),
    (["query", "CREATE TABLE t AS SELECT 1"], "only read-only queries"),
    (["query", "SELECT 1; SELECT 2"], "exactly one SQL statement"),
    (["query", "SELECT 'x'::INTEGER FROM trials"], "Conversion Error"),
    (["query", "  "], "give an SQL query"),
    (["query", "SELECT 1", "--format", "xml"], "unknown format"),
    (["results", "--run", "19990101T000000Z-ffffff"], "no run '19990101T000000Z-ffffff'"),
    (["results", "--experiment", "nope"], "no trials of an experiment 'nope'"),
    (["results", "--since", "last tuesday"], "--since"),
    (["results", "--until", "2026-13-45"], "--until"),
    (["results", "--since", "2026-01-02", "--until", "2026-01-01"], "is not before"),
    (["results", "--difficulty", "brutal"], "allowed: easy, medium, hard"),
    (["results", "--group-by", "colour"], "cannot group by 'colour'"),
    (["results", "--correlation", "--correlation-method", "kendall"], "pearson, spearman"),
    (["results", "--json", "--format", "csv"], "--json asks for JSON"),
]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory) -> Path:
    """One lab for every bad-input case: a run, and its index up to date."""
    lab = tmp_path_factory.mktemp("bad") / "lab"
    two_subjects(lab)
    run(lab)
    # builds the index (`ix query` opens the same index as `ix results`)
    ix_ok("query", "SELECT count(*) FROM trials", "--lab", str(lab))
    return lab


@pytest.mark.parametrize(("args", "message"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input_exits_2_with_one_line_and_changes_nothing(indexed, args, message):
    before = tree_digest(indexed)
    # the real command once for the exit-2 contract (one line, no traceback, nothing written),
    # the other refusals in process (`ix query`'s real exit 2 is the never-indexed lab's)
    command = run_ix if args == ["results", "--run", "19990101T000000Z-ffffff"] else ix_in_process
    r = command(*args, "--lab", str(indexed), cwd=indexed)
    assert r.code == 2, r.output
    assert "Traceback" not in r.output and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ix: error:"), r.stderr
    assert message in r.stderr
    assert tree_digest(indexed) == before


def test_bad_sql_on_a_never_indexed_lab_writes_nothing(lab):
    two_subjects(lab)
    run(lab)
    before = tree_digest(lab)
    r = run_ix("query", "SELECT missing FROM trials", "--lab", str(lab))
    assert r.code == 2 and "missing" in r.stderr
    assert tree_digest(lab) == before and not (lab / ".ix").exists()


def test_results_tag_finds_the_variant_cases_a_case_file_expands_into(lab: Path):
    """Issue 32 item 9: `variants:` cases keep their file's tags and difficulty in the index
    (before, `ix results --tag variant` found none of them)."""
    d = lab / "exp"
    write(d / "experiment.yaml", """
        name: exp
        trials: 2
        sensor: {kind: activation, skill: target}
        runtime: {kind: mock, skill: target, activation_rates: {must-001: 0.5}}
    """)
    case(d, "must-001", "must_trigger")
    case(d, "must-002", "must_trigger", "Can you {{ verb }} this?",
         extra="tags: [variant]\ndifficulty: hard\nvariants:\n  verb: [summarise, profile]\n")
    run(lab)
    got = results(lab, "--tag", "variant")
    assert sorted({r["probe_id"] for r in got}) == ["must-002~1", "must-002~2"]
    assert len(got) == 4
    assert {(r["difficulty"], r["variant_of"], r["family"]) for r in got} == {
        ("hard", "must-002", "must-002")}
    (row,) = results(lab, "--stats")
    assert (row["cases"], row["families"]) == (3, 2)  # the two variants are one unit
