"""`invoked` and `first_invoked` of the query index: the same answer as the Python reader
(`ix.store.trial_lines.invoked_skills`) on every shape of tool call, and an index written
before the columns existed is rebuilt, not read with them missing."""

import json
from pathlib import Path

from conftest import write
from ix.query.index import FORMAT, INDEX_DIR, MANIFEST
from ix.query.views import connect
from ix.store.trial_lines import invoked_skills
from ix.store.trials import TrialWriter

SKILL = {"name": "Skill", "input": {"skill": "pdf"}}
SHAPES = {
    "none": [],
    "one": [SKILL],
    "plugin": [{"name": "Skill", "input": {"skill": "docs:xlsx"}}],
    "order kept, each once": [{"name": "Skill", "input": {"skill": "xlsx"}},
                              {"name": "Bash", "input": {"command": "ls"}}, SKILL,
                              {"name": "Skill", "input": {"skill": "xlsx"}}],
    "other tools only": [{"name": "Read", "input": {"file_path": "pdf"}}],
    "skill not a string": [{"name": "Skill", "input": {"skill": 3}}, SKILL],
    "input not an object": [{"name": "Skill", "input": "pdf"}],
    "call not an object": [1, "Skill", None, SKILL],
    "no input": [{"name": "Skill"}],
    "tool_calls not a list": {"name": "Skill", "input": {"skill": "pdf"}},
}


def line(trial: int, calls: object) -> dict:
    return {"run_id": "r1", "experiment": "exp", "subject": "s", "probe_id": "must-001",
            "trial": trial, "attempt": 0, "expectation": "must_trigger",
            "started_at": "2026-11-20T12:00:00.000Z",
            "observation": {"content": "", "tool_calls": calls},
            "reading": {"sensor_name": "activation", "passed": False, "score": 0.0},
            "error": None}


def lab_with(lab: Path, records: list[dict]) -> Path:
    exp = lab / "exp"
    write(exp / "experiment.yaml", "name: exp\nskill: t\nruntime: mock\n")
    write(exp / "cases" / "must-001.md", "---\nexpectation: must_trigger\n---\nhi\n")
    with TrialWriter(exp / "results" / "trials.jsonl") as w:
        for r in records:
            w.write(r)
    return exp


def test_the_index_and_the_python_reader_name_the_same_skills(lab: Path):
    shapes = list(SHAPES.items())
    lab_with(lab, [line(i, calls) for i, (_, calls) in enumerate(shapes)])
    with connect(lab) as con:
        got = dict(con.execute("SELECT trial, (invoked, first_invoked) FROM trials").fetchall())
    for i, (name, calls) in enumerate(shapes):
        want = invoked_skills({"tool_calls": calls})
        assert got[i] == (want, want[0] if want else None), name
    assert invoked_skills({"tool_calls": SHAPES["order kept, each once"]}) == ["xlsx", "pdf"]
    assert invoked_skills(None) == [] and invoked_skills({"tool_calls": None}) == []


def test_an_index_of_an_older_format_is_rebuilt_with_the_new_columns(lab: Path):
    lab_with(lab, [line(0, [SKILL])])
    with connect(lab) as con:
        con.execute("SELECT 1").fetchall()
    path = lab / INDEX_DIR / MANIFEST
    manifest = json.loads(path.read_text())
    assert manifest["format"] == FORMAT >= 3
    # an index written before `invoked` existed: format 2, parts without the column
    part = lab / INDEX_DIR / manifest["sources"]["exp"]["parts"][0]
    import duckdb

    con = duckdb.connect()
    con.execute(f"COPY (SELECT * EXCLUDE (invoked, first_invoked) FROM read_parquet('{part}'))"
                f" TO '{part}.old' (FORMAT parquet)")
    con.close()
    Path(f"{part}.old").replace(part)
    path.write_text(json.dumps({**manifest, "format": 2}))
    with connect(lab) as con:
        assert con.execute("SELECT invoked, first_invoked FROM trials").fetchall() == [
            (["pdf"], "pdf")]
