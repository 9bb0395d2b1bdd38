"""What a run records of where it ran (spec.yaml's `versions` and `git_commit`): found while
the experiment loads (`ix.store.runs.look_ahead`), never stale."""

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import yaml

from conftest import mock_experiment  # type: ignore[attr-defined]
from ix import api
from ix.store import runs, spec

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]


def test_the_package_versions_are_the_installed_ones():
    """Each package a runtime uses is recorded with the version `importlib.metadata` gives
    (which parses the whole metadata file, as ix no longer does), and one not installed is
    left out."""
    versions = spec.environment()
    expected = {}
    for name in spec._PACKAGES:
        try:
            expected[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    assert versions["packages"] == expected and "numpy" in expected
    assert spec._version("no-such-package-ix-test") is None
    assert versions["executable"] == sys.executable and "plugins" not in versions


def _git(lab: Path, *args: str) -> str:
    return subprocess.run([*GIT, "-C", str(lab), *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def _recorded(result) -> dict:
    return yaml.safe_load((result.run_dir / "spec.yaml").read_text(encoding="utf-8"))


def test_each_run_records_the_commit_as_it_is_when_the_run_starts(tmp_path):
    """Two runs in one process: the first records HEAD, the second — after a case file
    changed — HEAD `+dirty`: what was looked up ahead for the first is not reused."""
    lab = tmp_path / "lab"
    mock_experiment(lab, trials=1)
    _git(lab, "init", "-q")
    _git(lab, "add", ".")
    _git(lab, "commit", "-q", "-m", "x")
    head = _git(lab, "rev-parse", "HEAD")
    [first] = api.run(lab)
    assert _recorded(first)["git_commit"] == head
    assert _recorded(first)["versions"] == {**spec.environment()}
    (lab / "exp" / "cases" / "must-001.md").write_text(
        "---\nexpectation: must_trigger\n---\nchanged\n", encoding="utf-8")
    [second] = api.run(lab)
    assert _recorded(second)["git_commit"] == f"{head}+dirty"
    assert runs._ahead == {}
    # what runs wrote (results/, artifacts/) is no source: committed sources are clean
    _git(lab, "add", "exp/cases")
    _git(lab, "commit", "-q", "-m", "y")
    (lab / "exp" / "artifacts").mkdir()
    (lab / "exp" / "artifacts" / "x.txt").write_text("x", encoding="utf-8")
    assert "exp/results/" in _git(lab, "status", "--porcelain")
    [third] = api.run(lab)
    assert _recorded(third)["git_commit"] == _git(lab, "rev-parse", "HEAD")


def test_the_runs_own_folder_never_makes_its_commit_dirty(tmp_path):
    """The commit found as late as a run's own folder exists (a loaded machine's
    look-ahead) is still clean: that folder is no source."""
    lab = tmp_path / "lab"
    exp = mock_experiment(lab, trials=1)
    _git(lab, "init", "-q")
    _git(lab, "add", ".")
    _git(lab, "commit", "-q", "-m", "x")
    (exp / "results" / "runs" / ".run-x.tmp").mkdir(parents=True)
    (exp / "results" / "runs" / ".run-x.tmp" / "run.lock").write_text("", encoding="utf-8")
    assert runs.git_commit(exp) == _git(lab, "rev-parse", "HEAD")


def test_what_no_run_took_is_forgotten(tmp_path):
    """A look-ahead no run took (a run refused before it started) is dropped, so the next
    run finds the commit again."""
    lab = tmp_path / "lab"
    exp = mock_experiment(lab, trials=1)
    _git(lab, "init", "-q")
    _git(lab, "add", ".")
    _git(lab, "commit", "-q", "-m", "x")
    mine = runs.look_ahead(exp)
    other = runs.look_ahead(lab / "elsewhere")  # another caller's, still to be taken
    runs.forget_ahead([mine])
    assert runs._ahead == {lab / "elsewhere": other}
    runs.forget_ahead([other])
    (exp / "cases" / "not-001.md").unlink()
    versions, commit = runs.provenance(exp, [{"name": "p"}])  # type: ignore[list-item]
    assert commit == _git(lab, "rev-parse", "HEAD") + "+dirty"
    assert versions["plugins"] == [{"name": "p"}]
