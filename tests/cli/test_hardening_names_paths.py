"""Names and paths (issue 14, items 2, 3, 3b, 8c, 11, 15): the real `ix`, real symlinks and FIFOs.

A lab can come from someone else: its names and its `results/` folder are not trusted. A
subject's name never leads a write out of the lab; ix never writes through a symlink or into
a FIFO, a device or a folder under `results/` (it refuses, exit 2, before a run folder
exists); `ix cache clear` never deletes through a symlinked cache; and two different names
never share a trace or an artifact file.

The real `ix` process (`run_ix`) is kept where a process is the point: a FIFO that must not
block (a timeout of the process), a name given in argv, and one refusal (exit 2, one line on
stderr) of each command; the other refusals ask the same command tree in process.
"""

import gzip
import json
import os
import shutil
import time
import unicodedata
from pathlib import Path

import pytest

from conftest import case, flat, ix_in_process, mock_experiment, run_ix, tree_digest, write
from runtimes.fake_llm_servers import FAKE_KEY, FakeLLMServer, Reply, Request, text_reply

KEY_ENV = "IX_TEST_KEY"


def one_error_line(stderr: str) -> str:
    lines = flat(stderr).splitlines()  # each message unwrapped
    errors = [x for x in lines if x.startswith("ix: error:")]
    assert len(errors) == 1 and "Traceback" not in stderr, stderr
    return errors[0]


def victim(path: Path, size: int = 100_000) -> bytes:
    """A file of someone's with no final newline: what a trial writer would take for torn."""
    data = (b"precious notes " * (size // 15 + 1))[:size]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return data


# --------------------------------------------------------------------------- item 2


def test_a_traversal_subject_name_with_artifacts_writes_nothing_outside_the_lab(lab):
    exp = mock_experiment(lab, n_must=1, n_not=1, n_edge=0, trials=1)
    (exp / "experiment.yaml").write_text(
        "name: exp\nruntime: mock\nsubjects:\n  - name: '../../../../outside/pwned'\n"
        "  - name: b\n", encoding="utf-8")
    outside = lab.parent / "outside"
    outside.mkdir()
    r = ix_in_process("run", "--lab", str(lab), "--artifacts")
    assert r.code == 2
    line = one_error_line(r.stderr)
    assert "experiment.yaml: subjects[0].name:" in line and "path separators" in line
    assert list(outside.iterdir()) == []
    assert not (exp / "results").exists() and not (exp / "artifacts").exists()


def test_subject_names_are_kept_in_nfc_and_found_by_either_spelling(lab):
    nfc, nfd = "caf\u00e9", "cafe\u0301"
    exp = mock_experiment(lab, n_must=1, n_not=1, n_edge=0, trials=1)
    (exp / "experiment.yaml").write_text(
        f"name: exp\nruntime: mock\nsubjects:\n  - name: {nfd}\n  - name: tea\n",
        encoding="utf-8")
    r = run_ix("run", "--lab", str(lab), "--subject", nfc)  # real: the name comes in argv
    assert r.code == 0, r.output
    lines = [json.loads(x) for x in (exp / "results/trials.jsonl").read_text().splitlines()]
    assert {x["subject"] for x in lines} == {nfc}
    assert all(unicodedata.is_normalized("NFC", x["subject"]) for x in lines)


# --------------------------------------------------------------------------- items 3, 11


def run_folders(exp: Path) -> list[str]:
    runs = exp / "results" / "runs"
    return sorted(p.name for p in runs.iterdir()) if runs.is_dir() else []


def test_a_symlinked_trial_log_is_refused_and_its_target_kept_whole(lab, tmp_path):
    exp = mock_experiment(lab, n_must=1, n_not=1, n_edge=0, trials=2)
    target = tmp_path / "elsewhere" / "notes.txt"
    data = victim(target)
    (exp / "results").mkdir()
    (exp / "results/trials.jsonl").symlink_to(target)
    r = ix_in_process("run", "--lab", str(lab))
    assert r.code == 2
    line = one_error_line(r.stderr)
    assert "results/trials.jsonl: is a symbolic link" in line
    assert target.read_bytes() == data  # was emptied: "removed a torn last line"
    assert run_folders(exp) == []       # refused before a run folder was made
    assert not (exp / "results/summary-latest.json").exists()


def test_a_fifo_trial_log_is_refused_at_once_and_counts_nothing(lab):
    exp = mock_experiment(lab, n_must=1, n_not=1, n_edge=0, trials=2)
    (exp / "results").mkdir()
    os.mkfifo(exp / "results/trials.jsonl")
    started = time.monotonic()
    r = run_ix("run", "--lab", str(lab), timeout=60)  # real: a process that must not block
    assert r.code == 2 and time.monotonic() - started < 30
    assert "results/trials.jsonl: is a FIFO" in one_error_line(r.stderr)
    assert run_folders(exp) == []
    assert sorted(p.name for p in (exp / "results").iterdir()) == ["trials.jsonl"]


@pytest.mark.parametrize("command", [("report",), ("run", "--resume")])
def test_readers_refuse_a_fifo_trial_log_instead_of_blocking(lab, command):
    exp = mock_experiment(lab, n_must=1, n_not=1, n_edge=0, trials=1)
    r = ix_in_process("run", "--lab", str(lab), "--max-trials", "1")  # set-up, in process
    assert r.code == 130, r.output  # cancelled: a run to resume
    log = exp / "results/trials.jsonl"
    log.unlink()
    os.mkfifo(log)
    r = run_ix(*command, "--lab", str(lab), timeout=60)  # real: must not block
    assert r.code == 2
    assert "trials.jsonl: is a FIFO" in one_error_line(r.stderr)


def test_a_trial_log_that_is_a_folder_leaves_no_failed_run_behind(lab):
    exp = mock_experiment(lab, n_must=1, n_not=1, n_edge=0, trials=1)
    (exp / "results/trials.jsonl").mkdir(parents=True)
    r = ix_in_process("run", "--lab", str(lab))
    assert r.code == 2
    assert "results/trials.jsonl: is a folder" in one_error_line(r.stderr)
    assert run_folders(exp) == []
    assert sorted(p.name for p in (exp / "results").iterdir()) == ["trials.jsonl"]


@pytest.mark.parametrize("link", ["results", "results/runs", "results/summary-latest.json"])
def test_a_symlink_where_a_run_writes_is_refused_before_anything_is_written(lab, tmp_path,
                                                                            link):
    exp = mock_experiment(lab, n_must=1, n_not=1, n_edge=0, trials=1)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    data = victim(elsewhere / "summary.json", 1000)
    (exp / link).parent.mkdir(parents=True, exist_ok=True)
    (exp / link).symlink_to(elsewhere / "summary.json" if link.endswith(".json") else elsewhere)
    before = tree_digest(lab)
    r = ix_in_process("run", "--lab", str(lab))
    assert r.code == 2
    assert f"{link}: is a symbolic link" in one_error_line(r.stderr)
    assert sorted(p.name for p in elsewhere.iterdir()) == ["summary.json"]
    assert (elsewhere / "summary.json").read_bytes() == data
    assert tree_digest(lab) == before


def test_resuming_a_run_never_truncates_what_its_symlinked_lock_points_at(lab, tmp_path):
    exp = mock_experiment(lab, n_must=2, n_not=2, n_edge=0, trials=2)
    r = ix_in_process("run", "--lab", str(lab), "--max-trials", "2")  # set-up, in process
    assert r.code == 130, r.output  # cancelled: a run to resume
    (run,) = run_folders(exp)
    lock = exp / "results/runs" / run / "run.lock"
    target = tmp_path / "elsewhere" / "id_ed25519"
    data = victim(target, 400)
    lock.unlink()
    lock.symlink_to(target)
    r = ix_in_process("run", "--lab", str(lab), "--resume")
    assert r.code == 2
    assert "run.lock: is a symbolic link" in one_error_line(r.stderr)
    assert target.read_bytes() == data  # the lock used to open it and truncate it


def test_annotate_never_writes_into_a_symlinked_run_folder(lab, tmp_path):
    exp = mock_experiment(lab, n_must=1, n_not=1, n_edge=0, trials=1)
    assert ix_in_process("run", "--lab", str(lab)).code == 0  # set-up, in process
    (run,) = run_folders(exp)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (exp / "results/runs" / run).rename(elsewhere / run)
    (exp / "results/runs" / run).symlink_to(elsewhere / run, target_is_directory=True)
    r = run_ix("annotate", run, "a note", "--lab", str(lab))  # real: `ix annotate` exit 2
    assert r.code == 2 and "is a symbolic link" in one_error_line(r.stderr)
    assert not (elsewhere / run / "annotations.jsonl").exists()


def test_a_tag_naming_a_folder_outside_the_lab_is_refused(lab, tmp_path):
    exp = mock_experiment(lab, n_must=1, n_not=1, n_edge=0, trials=1)
    assert ix_in_process("run", "--lab", str(lab)).code == 0  # set-up, in process
    (run,) = run_folders(exp)
    elsewhere = tmp_path / "elsewhere" / run  # a run of another lab of the user's
    shutil.copytree(exp / "results/runs" / run, elsewhere)
    before = tree_digest(elsewhere)
    write(lab / "tags.yaml", f"""
        hostile:
          run: {run}
          experiment: exp
          folder: ../elsewhere/{run}
        """)
    r = ix_in_process("annotate", "hostile", "a note", "--lab", str(lab))
    assert r.code == 2
    assert "tags.yaml: hostile:" in one_error_line(r.stderr)
    assert "not inside the lab" in flat(r.stderr)
    assert tree_digest(elsewhere) == before


# --------------------------------------------------------------------------- item 3b


def test_cache_clear_never_deletes_through_a_symlinked_cache_folder(lab, tmp_path):
    mock_experiment(lab, n_must=1, n_not=1, n_edge=0, trials=1)
    elsewhere = tmp_path / "elsewhere"
    keep = elsewhere / "observations" / "ab" / "notes.txt"
    keep.parent.mkdir(parents=True)
    keep.write_text("mine", encoding="utf-8")
    (lab / ".ix").mkdir()
    (lab / ".ix/cache").symlink_to(elsewhere)
    for command in (("cache", "clear", "--yes"), ("cache", "stats"), ("run", "--cache")):
        r = ix_in_process(*command, "--lab", str(lab))
        assert r.code == 2, (command, r.output)
        assert ".ix/cache: is a symbolic link" in one_error_line(r.stderr)
        assert keep.read_text(encoding="utf-8") == "mine"
        assert sorted(p.name for p in elsewhere.rglob("*")) == ["ab", "notes.txt",
                                                                 "observations"]


def test_a_symlinked_cache_shard_is_refused_and_left_alone(lab, tmp_path):
    mock_experiment(lab, n_must=1, n_not=1, n_edge=0, trials=1)
    assert ix_in_process("run", "--lab", str(lab), "--cache").code == 0  # set-up, in process
    observations = lab / ".ix/cache/observations"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "notes.txt").write_text("mine", encoding="utf-8")
    (observations / "zz").symlink_to(elsewhere, target_is_directory=True)
    r = run_ix("cache", "clear", "--yes", "--lab", str(lab))  # real: `ix cache` exit 2
    assert r.code == 2 and "observations/zz: is a symbolic link" in one_error_line(r.stderr)
    assert (elsewhere / "notes.txt").read_text(encoding="utf-8") == "mine"


# --------------------------------------------------------------------------- item 8c


def by_model(request: Request) -> Reply:
    return text_reply(f"answered by {request.body.get('model')}")


def test_subjects_and_cases_whose_names_sanitise_alike_keep_their_own_traces(lab):
    """`a b` and `a_b` (subjects), `x y` and `x_y` (cases) shared `traces/a_b/x_y-…` files."""
    exp = lab / "llm"
    with FakeLLMServer("openai", router=by_model) as api:
        write(exp / "experiment.yaml", f"""
            name: llm
            sensor: {{kind: activation, skill: csv-summary}}
            trials: 1
            runtime:
              kind: openai
              base_url: {api.base_url}
              api_key_env: {KEY_ENV}
              backoff_s: 0
            subjects:
              - name: a b
                model: model-space
              - name: a_b
                model: model-underscore
            """)
        case(exp, "x y", "must_trigger", "Summarize sales.csv.")
        case(exp, "x_y", "should_not_trigger", "Write a haiku.")
        write(lab / "skills" / "csv-summary" / "SKILL.md",  # the skill under test must exist
              "---\nname: csv-summary\ndescription: Summarise a CSV file.\n---\nBody.\n")
        r = ix_in_process("run", "--lab", str(lab), "--json", env={KEY_ENV: FAKE_KEY})
        assert r.code == 0, r.output
    records = [json.loads(x) for x in (exp / "results/trials.jsonl").read_text().splitlines()]
    assert len(records) == 4
    assert len({t["trace"] for t in records}) == 4
    model = {"a b": "model-space", "a_b": "model-underscore"}
    for t in records:
        lines = gzip.decompress((exp / "results" / t["trace"]).read_bytes()).decode()
        assert f"answered by {model[t['subject']]}" in lines, t["trace"]
        assert t["probe_id"].replace(" ", "%20") in t["trace"]

    # the viewer's drill-down (ix.api) finds each trial's own transcript
    from ix.api.runs import run_info
    from ix.api.trials import read_trace, trial_record

    info = run_info(exp / "results/runs" / records[0]["run_id"])
    for subject in model:
        for case_id in ("x y", "x_y"):
            record = trial_record(info, subject, case_id, 0)
            assert record is not None
            trace = read_trace(info, record)
            assert trace is not None
            assert f"answered by {model[subject]}" in json.dumps(trace.lines)


def test_artifacts_of_subjects_and_cases_never_share_a_file(lab):
    """`a b` and `a_b`; and subject `a` with case `b-c` against subject `a-b` with case `c`,
    which were both `a-b-c-trial-0.json`."""
    exp = lab / "exp"
    write(exp / "experiment.yaml", """
        name: exp
        trials: 2
        runtime: {kind: mock, skill: target, default_rate: 0.5}
        sensor: {kind: activation, skill: target}
        subjects:
          - name: a
          - name: a-b
          - name: a b
          - name: a_b
        """)
    case(exp, "b-c", "must_trigger")
    case(exp, "c", "should_not_trigger")
    r = ix_in_process("run", "--lab", str(lab), "--artifacts")
    assert r.code == 0, r.output
    verdicts = sorted((exp / "artifacts/scorer.verdict").rglob("*.json"))
    assert len(verdicts) == 4 * 2 * 2
    seen = {(d["subject"], d["probe_id"], d["trial"])
            for d in (json.loads(p.read_text(encoding="utf-8"))["data"] for p in verdicts)}
    assert len(seen) == 16
    assert all(p.resolve().is_relative_to((exp / "artifacts").resolve()) for p in verdicts)
