"""The query index against hostile logs and a hostile cache folder (issue 14, items 3b, 8, 9).

- Lines that are JSON but not trial records (subject 3, probe_id null, trial "x", ...) are not
  rows of the index, by the same rule the resume reader applies: the two agree on a log of
  every shape of garbage.
- `<lab>/.ix/index` a symlink, and a per-user temporary index folder that someone else
  created first, are never written through or cleaned out.
- A damaged manifest (a folder, garbage, wrong shapes) is rebuilt, with a warning.
"""

import hashlib
import json
import math
import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest

from conftest import flat, ix_in_process, run_ix, write
from ix.engine.resume import read_state
from ix.query.index import FORMAT, open_index
from ix.query.views import connect

RUN, OTHER = "20260101T000000Z-aaaa", "20260101T000000Z-bbbb"
T0 = "2026-01-01T00:00:00.000Z"

# --------------------------------------------------------------------------- hostile lines


def good(run: str = RUN, trial: int = 0, **changes) -> dict:
    """A trial line in the engine's key order (so the resume reader's fast paths read it)."""
    record = {
        "run_id": run, "experiment": "exp", "subject": "s", "probe_id": "must-001",
        "trial": trial, "seed": 7, "attempt": 0, "expectation": "must_trigger",
        "started_at": T0, "duration_ms": 1.5,
        "observation": {"content": "x", "tool_calls": [], "duration_ms": 0,
                        "tokens_input": 10, "tokens_output": 2, "cost_usd": 0.25},
        "reading": {"sensor_name": "activation", "passed": True, "score": 1.0,
                    "metrics": {}, "details": ""},
        "error": None,
    }
    record.update(changes)
    return record


ODD = [None, True, False, 0, -1, -0.0, 1.5, 3.0, "x", "", "3", [], [1], {}, {"a": 1},
       2 ** 31 - 1, 2 ** 31, 2 ** 63 - 1, 2 ** 63, 2 ** 64, 10 ** 30, -(2 ** 63) - 1]
TOP = ["run_id", "subject", "probe_id", "trial", "attempt", "observation", "reading", "error",
       "experiment", "seed", "started_at", "duration_ms", "expectation"]
NESTED = {"observation": ["tokens_input", "tokens_output", "cost_usd", "duration_ms"],
          "reading": ["passed", "score", "sensor_name"], "error": ["kind", "message"]}


def hostile_lines(run: str) -> list[bytes]:
    """Garbage of every shape for `run`, among trial records: wrong types, nulls, negative,
    boolean, float, nested and huge values of every field a reader reads, missing fields,
    repeated keys, lines that are not objects, and lines no JSON reader reads."""
    lines: list[dict | str] = []
    n = 100  # each line its own trial number, unless the trial is what is odd

    def add(record: dict | str) -> None:
        nonlocal n
        lines.append(record)
        n += 1

    add(good(run, 0))
    add(good(run, 0, attempt=1, reading={"sensor_name": "a", "passed": False, "score": 0.0}))
    add(good(run, 1, observation=None, reading=None,
             error={"kind": "timeout", "message": "slow"}))
    add(good(run, 2, subject="t"))
    for key in TOP:
        for value in ODD:
            if key == "trial" and value == 2 ** 31 - 1:
                continue  # a valid trial number, whose slot a resume would allocate (2 GB)
            add(good(run, **({"trial": n} if key != "trial" else {}), **{key: value}))
        missing = good(run, n)
        del missing[key]
        add(missing)
    for parent, keys in NESTED.items():
        for key in keys:
            for value in [*ODD, "missing"]:
                record = good(run, n)
                if parent == "error":
                    record["error"], record["reading"] = {"kind": "timeout", "message": "m"}, None
                inner = dict(record[parent])
                if value == "missing":
                    del inner[key]
                else:
                    inner[key] = value
                record[parent] = inner
                add(record)
    prefix = f'{{"run_id": "{run}", "experiment": "exp", "subject": "s", "probe_id": "p", '
    raw = [
        prefix + '"trial": 900, "subject": 7}',                 # a key twice: the first counts
        prefix.replace('"subject": "s"', '"subject": 7') + '"trial": 901, "subject": "s"}',
        prefix + '"trial": 902, "reading": {"passed": "x", "passed": true}}',
        prefix + '"trial": 903, "observation": {"cost_usd": NaN}}',
        prefix + '"trial": 904, "observation": {"cost_usd": Infinity}}',
        prefix + '"trial": 905, "duration_ms": NaN}',
        prefix + '"trial": 906, "seed": ' + "9" * 5000 + "}",   # Python cannot read it
        prefix + '"trial": ' + "9" * 5000 + "}",
        prefix + '"trial": 907, "observation": {"tokens_input": ' + "9" * 400 + "}}",
        prefix + '"trial": 908, "x": ' + "[" * 5000 + "]" * 5000 + "}",  # nested too deep
        prefix + '"trial": 909, "x": ' + "[" * 100 + "]" * 100 + "}",
        prefix + '"trial": 910}'.replace('"p"', '"p\\u0000q"'),
        prefix + '"trial": -0}',
        prefix + '"trial": 1E2}',
        prefix + '"trial": 911, "attempt": 2147483647}',
        prefix + '"trial": 912} trailing',
        prefix + '"trial": 913}{"a": 1}',
        prefix + '"trial": 914, "x": "tab\tinside"}',
        prefix + '"trial": 915,}',                              # DuckDB takes trailing commas
        prefix + '"trial": 916, "x": [1, ]}',
        prefix + '"trial": 917, "x": "text,} and }{ in a string"}',
        prefix + '"trial": 918}   ',
        prefix + '"trial": 919} {"trial": 920}',
        # what a typed read cannot tell apart (ix.store.trial_lines.TYPED_COLUMNS)
        prefix + '"trial": 921, "observation": "{\\"tokens_input\\": 1}"}',
        prefix + '"trial": 922, "observation": [{"tokens_input": 1, "tokens_output": 1, '
                 '"cost_usd": 0}]}',
        prefix + '"trial": 923, "reading": [{"passed": true, "sensor_name": "a"}]}',
        prefix + '"trial": 924, "reading": {"passed": null}}',
        prefix + '"trial": 925, "reading": "{\\"passed\\": true}"}',
        prefix + '"trial": 926, "error": [{"kind": "x"}]}',
        prefix + '"trial": 927, "error": {"kind": "\\u0078", "message": 3}}',
        prefix.replace('"s"', '"s\\"q\\u00e9\\\\"') + '"trial": 928}',
        prefix + '"trial": 929, "observation": {"tokens_input": 1, "tokens_output": 2, '
                 '"cost_usd": 0, "tool_calls": [{"name": "Skill", "input": {"skill": "a\\u0062"}}, '
                 '5, {"name": "Skill", "input": {"skill": 3}}, {"name": "Sk\\u0069ll", '
                 '"input": {"skill": "c"}}, {"name": "Skill", "input": {"skill": "ab"}}]}}',
        prefix + '"trial": 930, "observation": {"tokens_input": 1, "tokens_output": 2, '
                 '"cost_usd": 0, "tool_calls": {"name": "Skill", "input": {"skill": "a"}}}}',
        prefix + '"trial": 931, "reading": {"sensor_name": "a", "passed": true, "score": NaN}}',
        *(prefix + f'"trial": {932 + i}, "observation": {{"tokens_input": 1, "tokens_output": 2, '
          f'"cost_usd": 0, "tool_calls": {calls}}}}}'
          for i, calls in enumerate([
              '"[{\\"name\\": \\"Skill\\", \\"input\\": {\\"skill\\": \\"a\\"}}]"',
              '[[{"name": "Skill", "input": {"skill": "a"}}]]', "null", "7", "[]",
              '[{"name": "Skill", "input": "{\\"skill\\": \\"a\\"}"}]',
              '[{"name": "Skill", "input": [{"skill": "a"}]}]',
              '[{"name": "Skill", "name": 3, "input": {"skill": "a", "skill": 4}}]',
              '[{"name": 3, "name": "Skill", "input": {"skill": 4, "skill": "a"}}]',
              '[{"name": ["Skill"], "input": {"skill": ["a"]}}, {"name": "Skill"}]'])),
        '[1, 2]', '"a string"', "5", "null", "true", "{}", '{"subject": 3}',
        '{"run_id": "' + run + '", "subject": 3, "probe_id": null, "trial": "x"}',
        "not json at all", "",
    ]
    lines += raw
    return [(r if isinstance(r, str) else json.dumps(r)).encode() + b"\n" for r in lines]


def hostile_log(lab: Path) -> Path:
    write(lab / "exp" / "experiment.yaml", "name: exp\nskill: t\nruntime: mock\n")
    write(lab / "exp" / "cases" / "must-001.md", "---\nexpectation: must_trigger\n---\nhi\n")
    log = lab / "exp" / "results" / "trials.jsonl"
    log.parent.mkdir(parents=True)
    mixed = [x for pair in zip(hostile_lines(RUN), hostile_lines(OTHER), strict=True)
             for x in pair]
    log.write_bytes(b"".join(mixed))
    return log


def _index_view(lab: Path, run: str) -> tuple[dict, dict, int]:
    """What the index holds of `run`, in the resume reader's terms: the latest attempt and
    outcome of each trial, the usage of every attempt per subject, and the lines counted."""
    with connect(lab) as con:
        latest = con.execute(
            "SELECT subject, probe_id, trial, attempt, error IS NOT NULL, passed IS TRUE "
            "FROM trials WHERE run_id = ?", [run]).fetchall()
        usage = con.execute(
            "SELECT subject, sum(coalesce(tokens_input, 0)), sum(coalesce(tokens_output, 0)), "
            "sum(coalesce(cost, 0)) FROM trials_all WHERE run_id = ? GROUP BY subject",
            [run]).fetchall()
        [(lines,)] = con.execute("SELECT count(*) FROM trials_all WHERE run_id = ?",
                                 [run]).fetchall()
    outcomes = {(s, p, t): (min(a, 255), 3 if errored else 1 if passed else 2)
                for s, p, t, a, errored, passed in latest}
    return outcomes, {s: [i, o, c] for s, i, o, c in usage}, lines


def _resume_view(log: Path, run: str) -> tuple[dict, dict, int]:
    state = read_state(log, run)
    outcomes = {(s, p, t): (state.attempt(s, p, t), code) for s, p, t, code in state.outcomes()}
    return outcomes, state.usage, state.lines


@pytest.mark.parametrize("run", [RUN, OTHER])
def test_index_and_resume_reader_count_the_same_lines_of_a_hostile_log(lab, run):
    log = hostile_log(lab)
    index, resume = _index_view(lab, run), _resume_view(log, run)
    assert index[0] == resume[0]                      # the same trials, attempts, outcomes
    assert index[2] == resume[2]                      # the same lines counted
    assert index[1].keys() == resume[1].keys()        # the same usage per subject
    for subject, (tokens_in, tokens_out, cost) in index[1].items():
        assert [tokens_in, tokens_out] == resume[1][subject][:2]
        assert math.isclose(cost, resume[1][subject][2])
    # not vacuous: most lines are garbage, and the trials that are records are all there
    total = len(hostile_lines(run))
    assert 150 < index[2] < total - 150, (index[2], total)
    assert index[0][("s", "must-001", 0)] == (1, 2)   # the retry (attempt 1) counts
    assert index[0][("s", "must-001", 1)] == (0, 3)   # an errored trial
    assert ("3", "None", 0) not in index[0] and ("s", "p", 900) in index[0]
    assert ("s", "p", 917) in index[0] and ("s", "p", 915) not in index[0]


def test_json_lines_that_are_not_trials_are_no_rows_and_are_reported(lab):
    log = hostile_log(lab)
    warnings: list[str] = []
    with connect(lab, warnings.append) as con:
        [(n, subjects)] = con.execute(
            "SELECT count(*), list(DISTINCT subject ORDER BY subject) FROM trials_all "
            "WHERE run_id = ?", [RUN]).fetchall()
        [(phantoms,)] = con.execute(
            "SELECT count(*) FROM trials_all WHERE subject IS NULL OR probe_id IS NULL "
            "OR trial IS NULL OR trial < 0 OR run_id IS NULL").fetchall()
    assert phantoms == 0 and n > 150
    # strings are names ("" and "3" too); 3, true, [], {} and null are not
    assert subjects == sorted({"s", "t", 's"q\u00e9\\', *(v for v in ODD if isinstance(v, str))})
    lines = log.read_bytes().count(b"\n")
    [index] = open_index(lab).sources
    assert index.rows + index.skipped + 2 == lines  # 2 blank lines: no line at all
    assert any(f"skipped {index.skipped} " in w for w in warnings), warnings


def test_the_rule_in_python_and_in_sql_keep_the_same_records_with_the_same_values(lab):
    from ix.store.trial_lines import decode_line, trial_line

    log = hostile_log(lab)
    expected = sorted(tuple(t) for raw in log.read_bytes().splitlines()
                      if (t := trial_line(decode_line(raw))) is not None)
    with connect(lab) as con:
        got = con.execute(
            "SELECT run_id, subject, probe_id, trial, attempt, error IS NOT NULL, "
            "passed IS TRUE, coalesce(tokens_input, 0), coalesce(tokens_output, 0), "
            "coalesce(cost, 0.0) FROM trials_all").fetchall()
    assert sorted(got) == expected
    assert len(expected) > 300


def test_the_typed_read_gives_the_part_the_hardened_read_gives(lab, tmp_path):
    """A part is read typed, and only the lines that fail its cheap check (`suspect`) by the
    hardened rule: on a log of good lines and garbage of every shape, the same rows with the
    same values in the same order, and the same lines skipped, as reading every line by the
    hardened rule."""
    import duckdb

    from ix.query.index_parts import _parse, quote
    from ix.store.trial_lines import TYPED_COLUMNS, typed_select

    log = hostile_log(lab)
    with log.open("ab") as f:  # ix's own lines, some with a Skill call, as most of a log is
        for trial in range(1000, 1200):
            observation = good()["observation"] | {"tool_calls": [
                {"name": "Skill", "input": {"skill": f"k{trial % 3}"}}] * (trial % 3)}
            f.write(json.dumps(good(RUN, trial, observation=observation)).encode() + b"\n")
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    typed = _parse(con, log, "exp", 0, tmp_path / "typed.parquet")
    hardened = _parse(con, log, "exp", 0, tmp_path / "hardened.parquet", hardened=True)
    assert typed == hardened

    def rows(part: str) -> list[str]:
        got = con.execute(f"SELECT * FROM read_parquet('{tmp_path / part}')").fetchall()
        return [repr(row) for row in got]  # repr: a NaN score equals itself

    assert rows("typed.parquet") == rows("hardened.parquet")
    assert len(rows("typed.parquet")) == typed[0] > 500
    source = (f"read_json({quote(str(log))}, format = 'newline_delimited', "
              f"columns = {TYPED_COLUMNS}, ignore_errors = true) WITH ORDINALITY")
    [(suspects, lines, invoked)] = con.execute(
        "SELECT count(*) FILTER (suspect), count(*), count(*) FILTER (len(invoked) > 0) "
        f"FROM ({typed_select(source, quote('exp'), 0)})").fetchall()
    assert 0 < suspects < lines / 4 and invoked > 100  # not vacuous: both paths were taken


def test_a_log_read_on_every_thread_keeps_each_record_at_its_line(tmp_path):
    """The typed read fills its table on every thread and numbers a record by its row's
    place (`rowid`): on a log several read blocks long, with blank lines, junk and long
    answers scattered through it, every row's `line` is the one `WITH ORDINALITY` gives
    (the hardened read, on one thread), and the answers are the rows of those lines."""
    import random

    import duckdb

    from ix.query.index_parts import READ_BLOCK, _parse

    rnd = random.Random(5)
    log = tmp_path / "trials.jsonl"
    with log.open("wb") as f:
        for trial in range(3 * READ_BLOCK // 400):
            kind = rnd.random()
            if kind < 0.01:
                f.write(b"\n")
            elif kind < 0.02:
                f.write(b'{"run_id": 7, "not": "a trial"}\n')
            else:
                answer = "y" * rnd.choice([10, 300, 5000])
                f.write(json.dumps(good(RUN, trial, observation=good()["observation"]
                                        | {"content": answer})).encode() + b"\n")
    assert log.stat().st_size > 2.5 * READ_BLOCK  # more blocks than threads
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    typed = _parse(con, log, "exp", 0, tmp_path / "typed.parquet", longest=5400)
    hardened = _parse(con, log, "exp", 0, tmp_path / "hardened.parquet", hardened=True)
    assert typed == hardened and typed[1] > 30
    read = "SELECT line, trial FROM read_parquet('{}')"
    got = con.execute(read.format(tmp_path / "typed.parquet")).fetchall()
    assert got == con.execute(read.format(tmp_path / "hardened.parquet")).fetchall()
    assert len({line - trial for line, trial in got}) > 30  # blank lines shift the numbering


def test_a_line_longer_than_a_read_block_is_read_whole(tmp_path):
    """DuckDB reads a log in blocks (`READ_BLOCK`) while numpy measures its lines: a line
    longer than a block sends the log to a second read sized to it, and every record,
    the long one too, is in the part at its line."""
    import duckdb

    from ix.query.index_parts import READ_BLOCK, file_state, write_part

    log = tmp_path / "trials.jsonl"
    long = good()["observation"] | {"content": "y" * (READ_BLOCK + 100)}
    log.write_bytes(b"".join(json.dumps(record).encode() + b"\n" for record in (
        good(RUN, 0), good(RUN, 1, observation=long), good(RUN, 2))))
    state = file_state(log)
    con = duckdb.connect()
    assert write_part(con, tmp_path, "exp", 0, log, 0, state["size"], state,
                      tmp_path / "part.parquet") == (3, 0)
    assert con.execute(f"SELECT line, trial FROM read_parquet('{tmp_path / 'part.parquet'}')"
                       ).fetchall() == [(1, 0), (2, 1), (3, 2)]


# --------------------------------------------------------------------------- the folder (3b)

def _lab_with_a_run(lab: Path) -> str:
    """Set-up, in this process (`ix_in_process`): a lab with a run, its index, and what
    `ix results --format json` says of it."""
    write(lab / "exp" / "experiment.yaml",
          "name: exp\nskill: t\ntrials: 3\nruntime: {kind: mock, default_rate: 0.5}\n")
    write(lab / "exp" / "cases" / "must-001.md", "---\nexpectation: must_trigger\n---\nhi\n")
    r = ix_in_process("run", "--lab", str(lab))
    assert r.code == 0, r.output
    r = ix_in_process("results", "--lab", str(lab), "--format", "json")
    assert r.code == 0, r.output
    return r.stdout


def _victims(folder: Path) -> dict[Path, bytes]:
    """Files an attacker wants deleted or overwritten: old enough for any clean-up."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {folder / "id_ed25519": b"private key\n", folder / "notes.txt": b"notes\n",
             folder / "manifest.json": b'{"format": 2, "sources": {}}\n'}
    for path, data in files.items():
        path.write_bytes(data)
        os.utime(path, (1, 1))  # 1970: older than any grace period
    return files


@pytest.mark.parametrize("link", [".ix/index", ".ix"])
def test_a_symlinked_index_folder_is_refused_and_nothing_outside_is_touched(lab, tmp_path,
                                                                             link):
    _lab_with_a_run(lab)
    shutil.rmtree(lab / ".ix")
    outside = tmp_path / "home" / ".ssh"
    victims = _victims(outside)
    target = outside if link == ".ix/index" else outside.parent
    if link == ".ix":
        (outside.parent / "index").symlink_to(outside)
    else:
        (lab / ".ix").mkdir()
    (lab / link).symlink_to(target)
    for args in (["results"], ["query", "SELECT count(*) FROM trials"],
                 ["results", "--group-by", "subject"]):
        # `ix results` and `ix query` refuse it in the real command; the rest in process
        ix = ix_in_process if "--group-by" in args else run_ix
        r = ix(*args, "--lab", str(lab))
        assert r.code == 2, r.output
        lines = flat(r.stderr).splitlines()
        assert len(lines) == 1 and lines[0].startswith("ix: error: "), r.stderr
        assert "symbolic link" in lines[0] and "Traceback" not in r.output
    assert sorted(outside.iterdir()) == sorted(victims)
    assert all(p.read_bytes() == data for p, data in victims.items())
    assert (lab / link).is_symlink()


def test_a_symlink_inside_the_index_folder_is_removed_never_followed(lab, tmp_path):
    _lab_with_a_run(lab)
    index = lab / ".ix" / "index"
    victims = _victims(tmp_path / "outside")
    for victim in victims:
        link = index / f"exp-{victim.name.replace('.', '_')}.parquet"
        link.symlink_to(victim)
        os.utime(link, (1, 1), follow_symlinks=False)
    (index / "exp-000000000000.parquet").symlink_to(tmp_path / "outside")  # a folder, too
    r = ix_in_process("results", "--lab", str(lab), "--format", "json")
    assert r.code == 0, r.output
    manifest = json.loads((index / "manifest.json").read_text())
    assert len(manifest["sources"]["exp"]["parts"]) == 1
    manifest["sources"]["exp"]["parts"] = ["exp-id_ed25519.parquet"]  # a forged manifest
    (index / "manifest.json").write_text(json.dumps(manifest))
    r = ix_in_process("query", "--lab", str(lab), "SELECT count(*) AS n FROM trials", "--json")
    assert r.code == 0 and json.loads(r.stdout) == [{"n": 3}], r.output
    assert all(p.read_bytes() == data for p, data in victims.items())
    assert (tmp_path / "outside").is_dir()


def test_a_temporary_index_folder_someone_else_made_first_is_never_used(lab, tmp_path,
                                                                         monkeypatch):
    """A read-only lab keeps its index in the user's private temporary folder. Another user
    who made that folder first — under the name ix used to use, or the one it uses now, as a
    symlink or a folder they can write — gets nothing deleted and serves no forged rows."""
    from ix.query import index_folder

    _lab_with_a_run(lab)
    shutil.rmtree(lab / ".ix")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.setattr(index_folder.os, "access", lambda *a, **k: False)  # a read-only lab
    uid = os.getuid()
    digest = hashlib.sha256(str(lab.resolve()).encode()).hexdigest()[:16]
    attacker = tmp_path / "attacker"
    victims = _victims(attacker)
    (tmp / f"ix-index-{uid}-{digest}").symlink_to(attacker)  # the name ix used to use
    (tmp / f"ix-{uid}").symlink_to(attacker)                  # the name ix uses now
    warnings: list[str] = []
    with connect(lab, warnings.append) as con:
        assert con.execute("SELECT count(*) FROM trials").fetchall() == [(3,)]
    assert any("symbolic link" in w and "does not use it" in w for w in warnings), warnings
    assert sorted(attacker.iterdir()) == sorted(victims)
    assert all(p.read_bytes() == data for p, data in victims.items())
    (tmp / f"ix-{uid}").unlink()
    (tmp / f"ix-{uid}").mkdir(mode=0o777)
    os.chmod(tmp / f"ix-{uid}", 0o777)  # a folder anyone could have written into
    with connect(lab, warnings.append) as con:
        assert con.execute("SELECT count(*) FROM trials").fetchall() == [(3,)]
    assert any("others may write into it" in w for w in warnings), warnings
    assert list((tmp / f"ix-{uid}").iterdir()) == []
    monkeypatch.setattr(index_folder.os, "getuid", lambda: uid + 4242)  # made by another user
    (tmp / f"ix-{uid + 4242}").mkdir(mode=0o700)
    with connect(lab, warnings.append) as con:
        assert con.execute("SELECT count(*) FROM trials").fetchall() == [(3,)]
    assert any("belongs to another user" in w for w in warnings), warnings
    assert list((tmp / f"ix-{uid + 4242}").iterdir()) == []


def test_the_private_temporary_folder_is_made_owner_only_and_reused(lab, tmp_path,
                                                                     monkeypatch):
    from ix.query import index_folder

    _lab_with_a_run(lab)
    shutil.rmtree(lab / ".ix")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(index_folder.os, "access", lambda *a, **k: False)
    first = open_index(lab).root
    base = tmp_path / f"ix-{os.getuid()}"
    assert first.parent == base and stat.S_IMODE(base.stat().st_mode) == 0o700
    assert not base.is_symlink() and (first / "manifest.json").is_file()
    assert open_index(lab).root == first


# --------------------------------------------------------------------------- damage (9)

DAMAGE = {
    "a folder": None,
    "garbage": b"\x00\xffnot json at all",
    "empty": b"",
    "a list": b"[1, 2, 3]",
    "sources a list": b'{"format": %d, "sources": []}' % FORMAT,
    "format a string": b'{"format": "2", "sources": {}}',
    "an entry of the wrong shape": b'{"format": %d, "sources": {"exp": {"parts": "x"}}}'
    % FORMAT,
    "nested deep": b'{"format": %d, "sources": ' % FORMAT + b"[" * 100000 + b"]" * 100000
    + b"}",
}


def _manifest_damaged(index: Path, kind: str) -> None:
    path = index / "manifest.json"
    if kind == "a folder":
        path.unlink()
        (path / "inner").mkdir(parents=True)
        (path / "inner" / "file").write_text("x")
    elif kind == "a file name that climbs out":
        data = json.loads(path.read_text())
        data["sources"]["exp"]["parts"] = ["../../../outside.parquet"]
        path.write_text(json.dumps(data))
    elif kind == "a symlink":  # to a manifest elsewhere, naming files ix would read
        forged = index.parent.parent.parent / "forged.json"
        forged.write_text(path.read_text())
        path.unlink()
        path.symlink_to(forged)
    elif kind == "a FIFO":  # reading it would block forever
        path.unlink()
        os.mkfifo(path)
    elif kind == "a state of the wrong type":
        data = json.loads(path.read_text())
        data["sources"]["exp"]["state"]["size"] = "big"
        path.write_text(json.dumps(data))
    else:
        path.write_bytes(DAMAGE[kind])


@pytest.mark.parametrize("kind", [*DAMAGE, "a file name that climbs out",
                                  "a state of the wrong type", "a symlink", "a FIFO"])
def test_a_damaged_manifest_is_rebuilt_with_a_warning_never_a_traceback(lab, kind):
    expected = _lab_with_a_run(lab)
    index = lab / ".ix" / "index"
    _manifest_damaged(index, kind)
    # a FIFO, which would block a reader for good, in a subprocess that can be timed out:
    # `ix results` and `ix query` exit 0 on a damaged index in the real command too
    ix = run_ix if kind == "a FIFO" else ix_in_process
    r = ix("results", "--lab", str(lab), "--format", "json")
    assert r.code == 0, r.output
    assert "Traceback" not in r.stderr
    assert json.loads(r.stdout) == json.loads(expected)
    if kind not in ("empty",):  # an empty file says nothing; the rest is reported
        assert "manifest" in flat(r.stderr) and "rebuilt" in flat(r.stderr), r.stderr
    assert (index / "manifest.json").is_file() and not (index / "manifest.json").is_symlink()
    json.loads((index / "manifest.json").read_text())
    forged = lab.parent / "forged.json"
    assert not forged.exists() or json.loads(forged.read_text())["format"] == FORMAT  # untouched
    r = ix("query", "--lab", str(lab), "SELECT count(*) AS n FROM trials", "--json")
    assert r.code == 0 and r.stderr == "" and json.loads(r.stdout) == [{"n": 3}], r.output


def test_a_damaged_part_is_rebuilt(lab):
    expected = _lab_with_a_run(lab)
    index = lab / ".ix" / "index"
    [part] = json.loads((index / "manifest.json").read_text())["sources"]["exp"]["parts"]
    (index / part).write_bytes(b"PAR1 truncated")
    r = ix_in_process("results", "--lab", str(lab), "--format", "json")
    assert r.code == 0 and "Traceback" not in r.stderr, r.output
    assert json.loads(r.stdout) == json.loads(expected)
