"""`ix.store.trial_lines.standing`: "latest attempt wins", one rule, and every reader holds to it.

The query index chooses the standing lines in SQL (`ix.query.index_parts.write_superseded`),
the resume reader in bytes (`ix.engine.resume.read_state`), export and the run report through
`standing` itself. On a log with retries, an errored attempt then a passed one, a tie of
attempts, an attempt number that goes down, interleaved runs sharing trial keys, and lines
appended after the index was built (a second index part), all three choose the same lines.
"""

import json
from pathlib import Path

from conftest import write
from ix.engine.resume import read_state
from ix.query.views import connect
from ix.store.trial_lines import standing, supersedes, trial_key

RUN_A, RUN_B = "20260101T000000Z-000aaa", "20260101T000000Z-001bbb"
T0 = "2026-01-01T00:00:00.000Z"


def line(run: str, subject: str, case: str, trial: int, attempt: int, mark: int, *,
         passed: bool | None = True, error: str | None = None) -> dict:
    """A trial line in the engine's key order; `mark` (its seed) tells the lines apart."""
    return {
        "run_id": run, "experiment": "exp", "subject": subject, "probe_id": case,
        "trial": trial, "seed": mark, "attempt": attempt, "expectation": "must_trigger",
        "started_at": T0, "duration_ms": 1.0,
        "observation": None if error else {"content": "x", "tool_calls": [], "duration_ms": 0,
                                           "tokens_input": 1, "tokens_output": 1,
                                           "cost_usd": 0.5},
        "reading": None if error else {"sensor_name": "activation", "passed": passed,
                                       "score": 1.0, "metrics": {}, "details": ""},
        "error": {"kind": error, "message": "boom"} if error else None,
    }


def first_half() -> list[dict]:
    return [
        line(RUN_A, "s", "c1", 0, 0, 1, error="timeout"),  # errored, then passed
        line(RUN_B, "s", "c1", 0, 0, 2, passed=False),    # the same trial key, another run
        line(RUN_A, "s", "c1", 0, 1, 3),
        line(RUN_A, "s", "c2", 0, 0, 4, passed=False),    # a tie: the later line stands
        line(RUN_A, "s", "c2", 0, 0, 5),
        line(RUN_A, "s", "c3", 0, 2, 6),                  # a lower attempt later: 2 stands
        line(RUN_A, "s", "c3", 0, 1, 7, passed=False),
        line(RUN_A, "t", "c1", 0, 0, 8),                  # another subject: its own trial
        line(RUN_A, "s", "c1", 1, 0, 9, error="rate_limit"),  # another trial: errored stands
        line(RUN_B, "s", "c2", 0, 0, 10, error="timeout"),
    ]


def second_half() -> list[dict]:
    """Appended after the index was built: its lines sit in a later part."""
    return [
        line(RUN_B, "s", "c2", 0, 1, 11),                 # the retry, in a later part
        line(RUN_A, "s", "c2", 0, 0, 12, error="timeout"),  # a tie across parts: later wins
        line(RUN_A, "s", "c3", 0, 1, 13),                 # still lower than attempt 2
        line(RUN_B, "s", "c1", 0, 0, 14),                 # a tie across parts: later wins
    ]


def _log(lab: Path, lines: list[dict], mode: str = "w") -> Path:
    log = lab / "exp" / "results" / "trials.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open(mode, encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in lines)
    return log


def _index(lab: Path) -> dict:
    with connect(lab) as con:
        rows = con.execute("SELECT run_id, subject, probe_id, trial, seed FROM trials").fetchall()
    return {(r, s, p, t): seed for r, s, p, t, seed in rows}


def test_standing_keeps_the_latest_attempt_and_the_later_line_of_a_tie():
    chosen = standing(first_half())
    assert {key: r["seed"] for key, r in chosen.items()} == {
        (RUN_A, "s", "c1", 0): 3, (RUN_B, "s", "c1", 0): 2, (RUN_A, "s", "c2", 0): 5,
        (RUN_A, "s", "c3", 0): 6, (RUN_A, "t", "c1", 0): 8, (RUN_A, "s", "c1", 1): 9,
        (RUN_B, "s", "c2", 0): 10}
    # keys in the order of each trial's first line
    assert list(chosen) == list(dict.fromkeys(trial_key(r) for r in first_half()))


def test_standing_names_every_line_put_out_of_standing():
    out: list[int] = []
    standing(first_half(), lambda r: out.append(r["seed"]))
    assert sorted(out) == [1, 4, 7]  # errored then passed, the earlier of a tie, the lower


def test_supersedes_reads_missing_attempts_as_the_first():
    assert supersedes({"attempt": None}, {})
    assert supersedes({"attempt": 1}, {"attempt": 0})
    assert not supersedes({}, {"attempt": 1})


def test_the_index_sql_and_the_resume_reader_choose_the_lines_standing_chooses(lab):
    write(lab / "exp" / "experiment.yaml", "name: exp\nskill: t\nruntime: mock\n")
    write(lab / "exp" / "cases" / "c1.md", "---\nexpectation: must_trigger\n---\nhi\n")
    log = _log(lab, first_half())
    assert _index(lab) == {k: r["seed"] for k, r in standing(first_half()).items()}
    _log(lab, second_half(), "a")  # the index adds a part; the SQL ranks across parts
    every = first_half() + second_half()
    expected = standing(every)
    assert _index(lab) == {k: r["seed"] for k, r in expected.items()}
    assert {k: v["seed"] for k, v in expected.items()}[(RUN_A, "s", "c2", 0)] == 12
    for run in (RUN_A, RUN_B):
        state = read_state(log, run)
        got = {(run, s, p, t): (state.attempt(s, p, t), code)
               for s, p, t, code in state.outcomes()}
        assert got == {k: (r["attempt"], 3 if r["error"] else 1 if r["reading"]["passed"]
                           else 2)
                       for k, r in expected.items() if k[0] == run}
