"""`ix tag`, `ix annotate` and the lab's audit log, through the real command: once for each
contract (exit 0 and its output, exit 2 with one line, concurrent processes, warnings on
stderr); the rest of the logic, and the set-up, through the same command in process."""

import getpass
import json
import platform
import shutil
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from conftest import ix_in_process, mock_experiment, run_ix, tree_digest, write


def run_id(lab: Path, *args: str) -> str:
    """A run to tag or annotate (set-up, in process); its id."""
    r = ix_in_process("run", "--lab", str(lab), "--json", *args)
    assert r.code == 0, r.output
    return json.loads(r.stdout)["run_id"]


def ix_ok(lab: Path, *args: str, command=ix_in_process) -> str:
    """Exit 0, and the stdout: in process, or with `command=run_ix` the real command."""
    r = command(*args, "--lab", str(lab))
    assert r.code == 0, r.output
    return r.stdout


def refused(lab: Path, *args: str, message: str, command=ix_in_process) -> None:
    """Exit 2 with one line naming the problem, and the lab byte-for-byte unchanged (in
    process, or with `command=run_ix` the real command)."""
    before = tree_digest(lab)
    r = command(*args, "--lab", str(lab))
    assert r.code == 2, r.output
    assert message in r.stderr and "Traceback" not in r.output, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert tree_digest(lab) == before


def audit(lab: Path) -> list[dict]:
    return [json.loads(line) for line in (lab / "audit.jsonl").read_text().splitlines()]


def run_in_process(lab: Path, *args: str) -> str:
    """`run_id` for set-up: the same `ix run`, in the test process."""
    r = ix_in_process("run", "--lab", str(lab), "--json", *args)
    assert r.code == 0, r.output
    return json.loads(r.stdout)["run_id"]


@pytest.fixture(scope="module")
def _two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str, str]:
    """Two runs of one experiment, made once (set-up, in process), kept as a pristine copy."""
    root = tmp_path_factory.mktemp("two-runs")
    lab, pristine = root / "lab", root / "pristine"
    lab.mkdir()
    mock_experiment(lab, rates={"must-001": 0.8}, trials=2)
    first, second = run_in_process(lab), run_in_process(lab, "--seed", "1")
    shutil.copytree(lab, pristine, symlinks=True)
    return lab, pristine, first, second


@pytest.fixture
def two_runs(_two_runs: tuple[Path, Path, str, str]) -> tuple[Path, str, str]:
    """A lab with two runs: the module's, restored at its own path (spec.yaml records it)
    from the pristine copy, so each test changes only its own."""
    lab, pristine, first, second = _two_runs
    shutil.rmtree(lab)
    shutil.copytree(pristine, lab, symlinks=True)
    return lab, first, second


def test_a_tag_names_one_run_and_moves_only_with_force(two_runs):
    lab, first, second = two_runs
    assert f"tagged run {first}" in ix_ok(lab, "tag", first, "baseline", command=run_ix)
    tags = yaml.safe_load((lab / "tags.yaml").read_text())
    assert tags["baseline"]["run"] == first and tags["baseline"]["experiment"] == "exp"
    assert tags["baseline"]["folder"] == f"exp/results/runs/{first}"
    refused(lab, "tag", second, "baseline", message="already names run", command=run_ix)
    assert "already names" in ix_ok(lab, "tag", first, "baseline")   # same run: a no-op
    moved = json.loads(ix_ok(lab, "tag", second, "baseline", "--force", "--json"))
    assert moved == {"tag": "baseline", "run": second, "experiment": "exp",
                     "moved_from": first, "unchanged": False}
    ix_ok(lab, "tag", first[:-1], "old")            # a unique prefix names a run
    ix_ok(lab, "tag", "baseline", "also-baseline")  # so does another tag
    listed = json.loads(ix_ok(lab, "tag", "--list", "--json"))
    assert [(t["tag"], t["run"]) for t in listed] == [
        ("also-baseline", second), ("baseline", second), ("old", first)]
    assert "baseline" in ix_ok(lab, "tag")
    ix_ok(lab, "tag", "--delete", "old")
    assert "old" not in yaml.safe_load((lab / "tags.yaml").read_text())
    refused(lab, "tag", "--delete", "old", message="no tag 'old'")
    report = json.loads(ix_ok(lab, "report", second, "--json"))
    assert report["run"]["tags"] == ["also-baseline", "baseline"]
    actions = [(e["action"], e["details"].get("tag")) for e in audit(lab)]
    assert actions[2:] == [("tag", "baseline"), ("tag", "baseline"), ("tag", "old"),
                           ("tag", "also-baseline"), ("untag", "old")]
    assert audit(lab)[3]["details"]["moved_from"] == first


def test_a_tag_works_wherever_a_run_is_named(two_runs):
    lab, first, second = two_runs
    ix_ok(lab, "tag", first, "before")
    ix_ok(lab, "tag", second, "after")
    assert json.loads(ix_ok(lab, "report", "after", "--json"))["run"]["run_id"] == second
    compared = json.loads(ix_ok(lab, "compare", "before", "after", "--json"))
    assert compared["baseline"] == first and compared["comparisons"][0]["run"] == second
    board = json.loads(ix_ok(lab, "leaderboard", "--run", "before", "--json"))
    # one subject: no board to rank, and the note names the tagged run
    assert board["boards"] == [] and any(f"ix report {first}" in n for n in board["notes"])
    ix_ok(lab, "annotate", "before", "a note")
    assert json.loads(ix_ok(lab, "annotate", "before", "--list", "--json"))["run"] == first


@pytest.mark.parametrize(("args", "message"), [
    (["tag", "RUN", "1st"], "invalid tag name '1st'"),
    (["tag", "RUN", "a/b"], "invalid tag name"),
    (["tag", "RUN", "-x"], "No such option"),
    (["tag", "nosuchrun", "good"], "no run or tag 'nosuchrun'"),
    (["tag", "RUN"], "usage: ix tag RUN TAG"),
    (["tag", "RUN", "a", "b"], "usage: ix tag RUN TAG"),
    (["tag", "--delete", "a", "b"], "exactly one tag"),
    (["tag", "--delete", "missing"], "no tag 'missing'"),
    (["annotate", "RUN"], "usage: ix annotate"),
    (["annotate", "RUN", "   "], "the annotation is empty"),
    (["annotate", "RUN", "no-such-case", "text"], "has no case 'no-such-case'"),
    (["annotate", "nosuchrun", "text"], "no run or tag 'nosuchrun'"),
])
def test_bad_tag_and_annotation_input_changes_nothing(two_runs, args, message):
    lab, first, _ = two_runs
    args = [first if a == "RUN" else a for a in args]
    before = tree_digest(lab)
    # in process: the real exit 2 is `refused(..., command=run_ix)` above
    r = ix_in_process(*args, "--lab", str(lab))
    assert r.code == 2, r.output
    assert message in r.stderr and "Traceback" not in r.output
    assert tree_digest(lab) == before


def test_a_malformed_tags_file_or_a_vanished_run_is_named(two_runs):
    lab, first, _ = two_runs
    ix_ok(lab, "tag", first, "baseline")
    tags = lab / "tags.yaml"
    good = tags.read_text()
    tags.write_text("baseline: [not, a, mapping]\n")
    refused(lab, "report", "baseline", message=f"{tags}: baseline")
    refused(lab, "tag", first, "other", message=str(tags))
    tags.write_text("baseline: {run: 1\n")
    refused(lab, "tag", "--list", message="invalid YAML")
    tags.write_text(good)
    folder = lab / "exp" / "results" / "runs" / first
    folder.rename(folder.with_name("gone"))
    refused(lab, "report", "baseline", message=f"names run {first}, which is no longer")


def test_annotations_are_kept_with_the_run_listed_and_reported(two_runs):
    lab, first, _ = two_runs
    ix_ok(lab, "annotate", first, "the prompt of must-002 changed mid-run")
    ix_ok(lab, "annotate", first, "must-001", "flaky | check the description")
    listed = json.loads(ix_ok(lab, "annotate", first, "--list", "--json"))
    notes = listed["annotations"]
    assert [(n["case"], n["text"]) for n in notes] == [
        (None, "the prompt of must-002 changed mid-run"),
        ("must-001", "flaky | check the description")]
    assert all(n["user"] == getpass.getuser() and n["host"] == platform.node() for n in notes)
    stored = (lab / "exp" / "results" / "runs" / first / "annotations.jsonl").read_text()
    assert len(stored.splitlines()) == 2
    report = json.loads(ix_ok(lab, "report", first, "--json"))
    assert [n["text"] for n in report["annotations"]] == [n["text"] for n in notes]
    md = ix_ok(lab, "report", first, "--format", "md")
    assert "## Annotations" in md and "[must-001]: flaky \\| check the description" in md
    assert "flaky | check the description" in ix_ok(lab, "report", first)
    details = [e["details"] for e in audit(lab) if e["action"] == "annotate"]
    assert [(d["run"], d["case"]) for d in details] == [(first, None), (first, "must-001")]


def test_the_audit_log_records_runs_batteries_tags_and_annotations_append_only(lab):
    mock_experiment(lab, trials=1)
    rid = run_id(lab)
    first_lines = (lab / "audit.jsonl").read_bytes()
    write(lab / "nightly.yaml", "name: nightly\nexperiments: [exp]\nseeds: 2\n")
    assert ix_in_process("batch", str(lab / "nightly.yaml"), "--lab", str(lab)).code == 0
    ix_ok(lab, "tag", rid, "v1")
    ix_ok(lab, "annotate", rid, "checked")
    ix_ok(lab, "tag", "--delete", "v1")
    ix_in_process("report", rid, "--lab", str(lab))  # reading is not recorded
    after = (lab / "audit.jsonl").read_bytes()
    assert after.startswith(first_lines)            # nothing rewritten, only appended
    entries = audit(lab)
    assert [e["action"] for e in entries] == ["run", "batch", "tag", "annotate", "untag"]
    for e in entries:
        moment = datetime.fromisoformat(e["at"].replace("Z", "+00:00"))
        assert e["at"].endswith("Z") and moment.tzinfo == UTC
        assert abs((datetime.now(UTC) - moment).total_seconds()) < 600
        assert e["user"] == getpass.getuser() and e["host"] == platform.node()
    run, batch = entries[0]["details"], entries[1]["details"]
    assert run["experiment"] == "exp" and run["run_id"] == rid and run["status"] == "completed"
    assert run["trials"] == 6 and run["command"][:2] == ["ix", "run"]
    assert batch["battery"] == "nightly" and len(batch["runs"]) == 2
    assert {r["seed"] for r in batch["runs"]} == {0, 1}
    assert entries[2]["details"] == {"tag": "v1", "run": rid, "experiment": "exp",
                                     "moved_from": None}


def test_concurrent_tags_and_annotations_are_all_kept(lab):
    mock_experiment(lab, trials=1)
    rid = run_in_process(lab)  # set-up: the concurrency under test is of the tag commands
    jobs = [("tag", rid, f"t{i}") for i in range(6)] + \
           [("annotate", rid, f"note {i}") for i in range(6)]
    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(lambda args: run_ix(*args, "--lab", str(lab)), jobs))
    assert all(r.code == 0 for r in results), [r.output for r in results if r.code]
    tags = yaml.safe_load((lab / "tags.yaml").read_text())
    assert set(tags) == {f"t{i}" for i in range(6)}
    notes = (lab / "exp" / "results" / "runs" / rid / "annotations.jsonl").read_text()
    assert sorted(json.loads(line)["text"] for line in notes.splitlines()) == [
        f"note {i}" for i in range(6)]
    assert sorted(e["action"] for e in audit(lab)) == ["annotate"] * 6 + ["run"] + ["tag"] * 6


def test_unreadable_annotation_lines_are_skipped_with_a_warning_naming_them(two_runs):
    lab, first, _ = two_runs
    ix_ok(lab, "annotate", first, "kept")
    path = lab / "exp" / "results" / "runs" / first / "annotations.jsonl"
    good = path.read_text()
    path.write_text(good + '{"text": "torn')              # a crash mid-write: no newline
    assert [n["text"] for n in json.loads(ix_ok(lab, "report", first, "--json"))
            ["annotations"]] == ["kept"]
    ix_ok(lab, "annotate", first, "after the tear")         # starts on a fresh line
    texts = json.loads(ix_ok(lab, "annotate", first, "--list", "--json"))["annotations"]
    assert [n["text"] for n in texts] == ["kept", "after the tear"]
    assert f"{path}: line 2: skipped" in ix_in_process("annotate", first, "--list", "--lab",
                                                       str(lab)).stderr
    path.write_text("not json\n" + good)
    r = run_ix("report", first, "--lab", str(lab), "--json")  # the real command's stderr
    assert r.code == 0 and f"{path}: line 1: skipped" in r.stderr
    assert [n["text"] for n in json.loads(r.stdout)["annotations"]] == ["kept"]
