"""A copied experiment folder (its `results/` included) holds the same runs as the original:
each trial is its run, subject, case and trial (DESIGN.md §3), so the index counts it once,
and says which folder is the copy (issue 33)."""

import json
import shutil

from conftest import run_ix
from ix.query.index import open_index
from query.test_query import append, experiment, record, rows


def test_a_copy_counts_once_and_the_original_is_kept(lab):
    exp = experiment(lab)
    append(exp, [record("r1", "alpha", "must-001", t) for t in range(3)])
    shutil.copytree(exp, lab / "a-copy")  # sorts first: kept is the one named as the run's
    [copy] = open_index(lab).copies()
    assert (copy.source.name, copy.kept, copy.runs) == ("a-copy", "exp", ("r1",))
    assert rows(lab, "SELECT count(*), min(experiment) FROM trials") == [(3, "exp")]
    assert rows(lab, "SELECT count(*) FROM trials_all") == [(3,)]
    # a run only the copy holds is its own
    append(lab / "a-copy", [record("r2", "alpha", "must-001", 0)])
    assert rows(lab, "SELECT run_id, count(*) FROM trials GROUP BY 1 ORDER BY 1") == [
        ("r1", 3), ("r2", 1)]


def test_copies_that_went_on_apart_count_each_trial_once_at_its_latest_attempt(lab):
    exp = experiment(lab)
    append(exp, [record("r1", "alpha", "must-001", t, passed=False) for t in range(2)])
    shutil.copytree(exp, lab / "z-copy")
    # the original retried trial 0; the copy resumed the run with trial 2
    append(exp, [record("r1", "alpha", "must-001", 0, attempt=1, passed=True)])
    append(lab / "z-copy", [record("r1", "alpha", "must-001", 2)])
    got = rows(lab, "SELECT trial, attempt, passed FROM trials ORDER BY trial")
    assert got == [(0, 1, True), (1, 0, False), (2, 0, True)]
    assert rows(lab, "SELECT count(*) FROM trials_all") == [(4,)]


def test_ix_results_and_query_count_a_copied_folder_once_and_name_it(lab):
    exp = experiment(lab)
    append(exp, [record("r1", "alpha", "must-001", t) for t in range(4)])
    shutil.copytree(exp, lab / "exp-copy")
    r = run_ix("results", "--lab", str(lab), "--json", "--all-runs")
    assert r.code == 0, r.output
    assert len(json.loads(r.stdout)) == 4
    [note] = [x for x in r.stderr.splitlines() if "copied" in x]
    assert "exp-copy/results/trials.jsonl: run r1 also recorded in exp/" in note
    assert "counted once" in note
    q = run_ix("query", "--lab", str(lab), "--json", "SELECT count(*) AS n FROM trials")
    assert q.code == 0, q.output
    assert json.loads(q.stdout)[0]["n"] == 4 and "exp-copy" in q.stderr
