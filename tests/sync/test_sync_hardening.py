"""`ix sync` under attack and by honest mistake (issue 31): a pull never replaces a log or
reads a folder that is not a sync prefix, a `file://` prefix is never read or written through
a link, a segment's duplicate lines count once, the batch journal stays home, and a URL with a
user name is refused.

The real `ix` (`run_ix`) keeps each contract of the command: a pull's exit 0 with its JSON,
one through a FIFO (which would block a reader: the process has a timeout), a push's exit 0,
the refusals of a folder that is not a prefix (pull and push, exit 2) and of a URL with a user
name (push and run, exit 2). The rest goes through `ix_in_process`."""

import json
import os
import time
from pathlib import Path

from conftest import flat, ix_in_process, mock_experiment, run_ix, tree_digest
from ix.store.remote import Remote
from ix.store.sync import push
from ix.store.sync_lines import segment_name
from sync_support import synthetic_trials, trial_ids

RUN_A = "20261126T100000Z-000aaa"
RUN_B = "20261126T110000Z-000bbb"


def _lab(root: Path, run: str | None = None, lines: int = 0) -> Path:
    mock_experiment(root, "exp", trials=2)
    if run:
        synthetic_trials(root / "exp" / "results" / "trials.jsonl", run, lines)
        (root / "exp" / "results" / "runs" / run).mkdir(parents=True)
        (root / "exp" / "results" / "runs" / run / "spec.yaml").write_text(f"run_id: {run}\n")
    return root


def _log(lab: Path) -> Path:
    return lab / "exp" / "results" / "trials.jsonl"


def _future(path: Path) -> None:
    later = time.time() + 3600  # newer than anything local: mtime must not decide
    os.utime(path, (later, later))


def test_a_pull_never_replaces_a_log_or_copies_what_a_push_does_not_write(tmp_path):
    shared = tmp_path / "shared"
    push(_lab(tmp_path / "a", RUN_A, 6), Remote(shared.as_uri()))
    lab = _lab(tmp_path / "b", RUN_B, 12)
    before = _log(lab).read_bytes()
    planted = {  # objects no push writes, newer than the lab's files
        "exp/results/trials.jsonl": _log(tmp_path / "a").read_bytes(),
        f"exp/results/runs/{RUN_B}/batches.jsonl": b'{"batch": "planted"}\n',
        f"exp/results/runs/{RUN_B}/annotations.jsonl": b'{"text": "planted"}\n',
        "exp/results/optimize/s1/optimize.json": b'{"skill_file": "/etc/passwd"}\n',
        "exp/results/summary-latest.json": b"{}\n",
        "audit.jsonl": b'{"planted": true}\n',
        "tags.yaml": b"planted: {}\n",
    }
    for rel, data in planted.items():
        (shared / rel).parent.mkdir(parents=True, exist_ok=True)
        (shared / rel).write_bytes(data)
        _future(shared / rel)
    r = run_ix("sync", "pull", shared.as_uri(), "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    after = _log(lab).read_bytes()
    assert after.startswith(before)  # the lab's 12 lines, byte for byte, then A's 6
    assert sorted(trial_ids(_log(lab))) == sorted(_ids_of(before)
                                                  + trial_ids(_log(tmp_path / "a")))
    for rel in planted:
        assert not (lab / rel).exists() or (lab / rel).read_bytes() != planted[rel], rel
    assert not (lab / "exp" / "results" / "optimize").exists()
    data = json.loads(r.stdout)
    assert data["trials"] == 6 and data["ignored"] == len(planted)
    assert data["runs_added"] == [RUN_A]
    assert "ignored" in flat(r.stderr)  # said, once


def _ids_of(log_bytes: bytes) -> list[tuple[str, str, str, int, int]]:
    out = []
    for raw in log_bytes.splitlines():
        x = json.loads(raw)
        out.append((x["run_id"], x["subject"], x["probe_id"], x["trial"], x["attempt"]))
    return out


def test_a_folder_that_is_not_a_sync_prefix_is_refused_before_anything_is_written(tmp_path):
    other, lab = _lab(tmp_path / "other", RUN_A, 6), _lab(tmp_path / "lab", RUN_B, 12)
    mine, theirs = tree_digest(lab), tree_digest(other)
    r = run_ix("sync", "pull", other.as_uri(), "--lab", str(lab))
    assert r.code == 2, r.output
    assert "not an ix sync prefix" in flat(r.stderr) and "Traceback" not in r.output
    assert tree_digest(lab) == mine  # the lab's 12 lines, untouched
    r = run_ix("sync", "push", other.as_uri(), "--lab", str(lab))
    assert r.code == 2, r.output
    assert "ix-sync.json" in flat(r.stderr) and "nothing was written" in flat(r.stderr)
    assert tree_digest(other) == theirs  # nothing written into the other lab
    r = ix_in_process("sync", "pull", (tmp_path / "nowhere").as_uri(), "--lab", str(lab))
    assert r.code == 2 and "holds nothing" in flat(r.stderr), r.output
    assert not (tmp_path / "nowhere").exists()


def test_a_file_prefix_is_never_read_through_a_link_or_a_special_file(tmp_path):
    shared = tmp_path / "shared"
    push(_lab(tmp_path / "a", RUN_A, 4), Remote(shared.as_uri()))
    secret = tmp_path / "victim" / "id_rsa"
    secret.parent.mkdir()
    secret.write_text("PRIVATE KEY of the victim\n")
    run = shared / "exp" / "results" / "runs" / RUN_A
    (run / "report.md").symlink_to(secret)  # a file: the link is refused
    (shared / "exp" / "results" / "runs" / RUN_B).symlink_to(secret.parent,
                                                             target_is_directory=True)
    os.mkfifo(run / "pipe.json")  # would block a reader forever
    lab = _lab(tmp_path / "b")
    # a subprocess: a FIFO read would block for good, and a process can be timed out
    r = run_ix("sync", "pull", shared.as_uri(), "--lab", str(lab), timeout=60)
    assert r.code == 0, r.output
    assert "symbolic link" in flat(r.stderr) and "FIFO" in flat(r.stderr)
    pulled = lab / "exp" / "results" / "runs"
    assert (pulled / RUN_A / "spec.yaml").is_file()  # the rest came
    assert not (pulled / RUN_A / "report.md").exists()
    assert not (pulled / RUN_B).exists() and not (pulled / RUN_A / "pipe.json").exists()
    assert not [p for p in lab.rglob("*") if p.is_file() and b"PRIVATE KEY" in p.read_bytes()]


def test_a_push_writes_nothing_through_a_link_in_the_prefix(tmp_path):
    shared = tmp_path / "shared"
    push(_lab(tmp_path / "first"), Remote(shared.as_uri()))  # an ix sync prefix
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "spec.yaml").write_text("the victim's own spec.yaml\n")
    (elsewhere / "summary.json").write_text('{"victim": true}\n')
    runs = shared / "exp" / "results" / "runs"
    runs.mkdir(parents=True)
    (runs / RUN_A).symlink_to(elsewhere, target_is_directory=True)
    (shared / "exp" / "results" / "trials").mkdir(parents=True)
    (shared / "exp" / "results" / "trials" / RUN_A).symlink_to(elsewhere,
                                                               target_is_directory=True)
    lab = _lab(tmp_path / "lab", RUN_A, 5)
    (lab / "exp" / "results" / "runs" / RUN_A / "summary.json").write_text("{}\n")
    theirs = tree_digest(elsewhere)
    r = run_ix("sync", "push", shared.as_uri(), "--lab", str(lab))
    assert r.code == 0, r.output
    assert "symbolic link" in flat(r.stderr)
    assert tree_digest(elsewhere) == theirs and sorted(os.listdir(elsewhere)) == [
        "spec.yaml", "summary.json"]
    assert (runs / RUN_A).is_symlink()  # left as it was, not written through


def test_a_segment_holding_a_trial_twice_is_appended_once(tmp_path):
    shared = tmp_path / "shared"
    push(_lab(tmp_path / "empty"), Remote(shared.as_uri()))
    synthetic_trials(tmp_path / "six.jsonl", RUN_A, 6)
    lines = (tmp_path / "six.jsonl").read_bytes()
    data = lines + lines  # the same six trial lines twice, in one segment
    folder = shared / "exp" / "results" / "trials" / RUN_A
    folder.mkdir(parents=True)
    (folder / segment_name(data)).write_bytes(data)
    lab = _lab(tmp_path / "lab")
    r = ix_in_process("sync", "pull", shared.as_uri(), "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    ids = trial_ids(_log(lab))
    assert len(ids) == len(set(ids)) == 6
    assert json.loads(r.stdout)["trials_skipped"] == 6


def test_the_batch_journal_stays_in_its_lab(tmp_path):
    lab = _lab(tmp_path / "lab", RUN_A, 3)
    journal = lab / "exp" / "results" / "runs" / RUN_A / "batches.jsonl"
    journal.write_text('{"event": "submitting", "requests": []}\n')
    shared = tmp_path / "shared"
    r = ix_in_process("sync", "push", shared.as_uri(), "--lab", str(lab))
    assert r.code == 0, r.output
    assert not list(shared.rglob("batches.jsonl"))
    assert (shared / "exp" / "results" / "runs" / RUN_A / "spec.yaml").is_file()


def test_a_pull_lists_the_experiments_and_runs_it_added(tmp_path):
    shared = tmp_path / "shared"
    a = _lab(tmp_path / "a", RUN_A, 4)
    mock_experiment(a, "extra", trials=2)
    push(a, Remote(shared.as_uri()))
    lab = _lab(tmp_path / "b", RUN_B, 4)
    r = ix_in_process("sync", "pull", shared.as_uri(), "--lab", str(lab))
    assert r.code == 0, r.output
    assert "added experiment(s) extra" in r.stdout and "read them before you run them" in r.stdout
    assert f"added run(s) {RUN_A}" in r.stdout
    assert (lab / "extra" / "experiment.yaml").is_file()


def test_a_url_holding_a_user_name_is_refused_and_never_echoed_or_recorded(tmp_path):
    lab = _lab(tmp_path / "lab")
    user = "AKIAIXSYNCUSERNAME01"
    urls = (f"s3://{user}@bucket/team", f"gs://{user}@bucket/team",
            f"http://{user}:pw@example.invalid/x")
    for url in urls:
        ix = run_ix if url == urls[0] else ix_in_process  # the first through the real command
        r = ix("sync", "push", url, "--lab", str(lab))
        assert r.code == 2 and "holds a" in flat(r.stderr), (url, r.output)
        r = ix("run", "exp", "--lab", str(lab), "--sync", url)
        assert r.code == 2 and "holds a" in flat(r.stderr), (url, r.output)
        assert user not in r.output and "Traceback" not in r.output
    assert not (lab / "exp" / "results").exists()  # no spec.yaml recorded the URL


def test_a_linked_experiment_folder_in_the_prefix_is_refused_and_the_rest_pushed(tmp_path):
    shared, elsewhere = tmp_path / "shared", tmp_path / "elsewhere"
    push(_lab(tmp_path / "first"), Remote(shared.as_uri()))
    elsewhere.mkdir()
    (shared / "exp").rename(tmp_path / "old-exp")
    (shared / "exp").symlink_to(elsewhere, target_is_directory=True)
    lab = _lab(tmp_path / "lab", RUN_A, 3)
    mock_experiment(lab, "other", trials=2)
    r = ix_in_process("sync", "push", shared.as_uri(), "--lab", str(lab))
    assert r.code == 0, r.output
    assert "exp: is a symbolic link" in flat(r.stderr)
    assert list(elsewhere.iterdir()) == []
    assert (shared / "other" / "experiment.yaml").is_file()
