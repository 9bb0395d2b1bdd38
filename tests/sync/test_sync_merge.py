"""How `ix.store.sync` merges, in process, through a `file://` prefix: logs by identity,
other files only where missing (a difference is a conflict), damaged segments ignored and
rewritten, nothing local ever lost."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from conftest import mock_experiment
from ix.store.annotations import add_annotation, make_annotation
from ix.store.remote import Remote
from ix.store.sync import pull, push
from ix.store.sync_lines import SEGMENT_LINES, segments
from ix.store.tags import Tag, read_tags, set_tag
from sync_support import synthetic_trials, trial_ids

RUN_A = "20261126T100000Z-000aaa"
RUN_B = "20261126T110000Z-000bbb"


def _lab(root: Path, run: str | None = None, lines: int = 0) -> Path:
    mock_experiment(root, "exp")
    if run:
        synthetic_trials(root / "exp" / "results" / "trials.jsonl", run, lines)
        (root / "exp" / "results" / "runs" / run).mkdir(parents=True)
        (root / "exp" / "results" / "runs" / run / "spec.yaml").write_text(f"run_id: {run}\n")
    return root


def _log(lab: Path) -> Path:
    return lab / "exp" / "results" / "trials.jsonl"


def test_segments_are_cut_the_same_way_from_any_starting_line():
    lines = [f"{n}\n".encode() for n in range(2 * SEGMENT_LINES + 5)]
    whole = list(segments(lines))
    assert [s.count(b"\n") for s in whole] == [SEGMENT_LINES, SEGMENT_LINES, 5]
    assert list(segments(lines[SEGMENT_LINES:])) == whole[1:]  # a re-run after segment 1


def test_a_pull_appends_only_missing_trials_and_keeps_every_local_line(tmp_path):
    remote = Remote((tmp_path / "remote").as_uri())
    a, b = _lab(tmp_path / "a", RUN_A, 30), _lab(tmp_path / "b", RUN_B, 20)
    synthetic_trials(_log(b), RUN_A, 10)  # b holds a third of a's run already
    push(a, remote)
    before = _log(b).read_bytes()
    counts = pull(b, remote)
    assert (counts.trials, counts.trials_skipped) == (20, 10)
    assert _log(b).read_bytes().startswith(before)
    ids = trial_ids(_log(b))
    assert len(ids) == len(set(ids)) == 50


def test_a_damaged_segment_is_ignored_by_a_pull_and_rewritten_by_the_next_push(tmp_path):
    root = tmp_path / "remote"
    remote = Remote(root.as_uri())
    a, c = _lab(tmp_path / "a", RUN_A, 40), _lab(tmp_path / "c")
    push(a, remote)
    segment = next((root / "exp" / "results" / "trials" / RUN_A).iterdir())
    whole = segment.read_bytes()
    segment.write_bytes(whole[: len(whole) // 2])  # a copy cut short, under its final name
    warnings: list[str] = []
    counts = pull(c, remote, warn=warnings.append)
    assert counts.damaged == 1 and counts.trials == 0 and "damaged" in warnings[0]
    assert not _log(c).exists() or trial_ids(_log(c)) == []
    counts = push(a, remote, warn=warnings.append)
    assert counts.trials == 40 and segment.read_bytes() == whole
    assert pull(c, remote).trials == 40


def test_files_differing_on_both_sides_are_conflicts_each_side_keeps_its_own(tmp_path):
    remote = Remote((tmp_path / "remote").as_uri())
    a, b = _lab(tmp_path / "a", RUN_A, 5), _lab(tmp_path / "b")
    push(a, remote)
    pull(b, remote)
    rel = f"exp/results/runs/{RUN_A}/spec.yaml"
    (b / rel).write_text("edited in b\n")
    old = time.time() - 3600
    os.utime(tmp_path / "remote" / rel, (old, old))  # b's copy newer: no matter
    counts = push(b, remote)
    assert counts.conflicts == [rel] and counts.kept == 1 and counts.objects == 0
    assert (tmp_path / "remote" / rel).read_text() == f"run_id: {RUN_A}\n"
    os.utime(b / rel, (old - 60, old - 60))  # the remote's newer now: no matter either
    counts = pull(b, remote)
    assert counts.conflicts == [rel] and (b / rel).read_text() == "edited in b\n"
    (b / rel).unlink()  # what the message says to do to take the remote's copy
    assert pull(b, remote).objects == 1 and (b / rel).read_text() == f"run_id: {RUN_A}\n"


def test_annotations_audit_lines_and_tags_merge_from_two_labs(tmp_path):
    remote = Remote((tmp_path / "remote").as_uri())
    a, b = _lab(tmp_path / "a", RUN_A, 5), _lab(tmp_path / "b", RUN_A, 5)
    run = a / "exp" / "results" / "runs" / RUN_A
    add_annotation(run, make_annotation("from a"))
    add_annotation(b / "exp" / "results" / "runs" / RUN_A, make_annotation("from b"))
    set_tag(a, Tag("shared", RUN_A, "exp", "", "2026-11-26T10:00:00.000Z", "a"))
    set_tag(b, Tag("shared", RUN_B, "exp", "", "2026-11-26T12:00:00.000Z", "b"))  # newer
    set_tag(b, Tag("only-b", RUN_A, "exp", "", "2026-11-26T12:00:00.000Z", "b"))
    push(a, remote)
    push(b, remote)
    pull(a, remote)
    notes = [json.loads(x)["text"] for x in (run / "annotations.jsonl").read_text().splitlines()]
    assert sorted(notes) == ["from a", "from b"]
    tags = read_tags(a)
    assert tags["shared"].run_id == RUN_B and "only-b" in tags
    pull(a, remote)  # again: nothing doubles
    assert len((run / "annotations.jsonl").read_text().splitlines()) == 2


def test_remote_names_that_would_leave_the_lab_are_skipped(tmp_path):
    root = tmp_path / "remote"
    push(_lab(tmp_path / "empty"), Remote(root.as_uri()))  # an ix sync prefix
    (root / ".hidden" / "results").mkdir(parents=True)
    (root / ".hidden" / "results" / "x.json").write_text("{}")
    (root / "exp" / "results" / "runs" / "r1").mkdir(parents=True)
    (root / "exp" / "results" / "runs" / "r1" / ".tmp").write_text("x")
    lab = _lab(tmp_path / "lab")
    pull(lab, Remote(root.as_uri()))
    assert not (lab / ".hidden").exists()
    assert not (lab / "exp" / "results" / "runs" / "r1" / ".tmp").exists()


def test_importing_ix_sync_does_not_import_fsspec():
    code = ("import sys, ix.cli.sync, ix.api.sync, ix.store.sync; "
            "print('fsspec' in sys.modules, 's3fs' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "False False"
