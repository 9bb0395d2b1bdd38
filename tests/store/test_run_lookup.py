"""Run lookup in one place (`ix.store.runs`): the runs of an experiment oldest first, the
latest (the last started), a run named by an id or a unique prefix or suffix, and the errors
when none or several answer — the messages `ix report`, `ix run --continue` and the viewer
print."""

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ix.domain.errors import ConfigError, NotFound
from ix.store.lookup import RunNotFound, experiment_run, find_run, latest_run, run_folders
from ix.store.runs import new_run_id

T = datetime(2026, 11, 26, 8, 0, 0, tzinfo=UTC)


def _run(results: Path, run_id: str, spec: bool = True) -> Path:
    folder = results / "runs" / run_id
    folder.mkdir(parents=True)
    if spec:
        (folder / "spec.yaml").write_text(f"run_id: {run_id}\n", encoding="utf-8")
    return folder


def _runs_started_in_one_second(results: Path) -> list[str]:
    """Three runs started 1, 500 and 999 ms into one second, made newest first."""
    ids = [new_run_id(T + timedelta(milliseconds=ms)) for ms in (999, 500, 1)]
    for run_id in ids:
        _run(results, run_id)
    return ids[::-1]


def test_runs_are_listed_oldest_first_and_the_latest_is_the_last_started(tmp_path: Path):
    results = tmp_path / "exp" / "results"
    assert run_folders(results) == [] and latest_run(results) is None
    started = _runs_started_in_one_second(results)
    (results / "runs" / "stray.txt").write_text("not a run", encoding="utf-8")
    assert [p.name for p in run_folders(results)] == started
    assert latest_run(results) == results / "runs" / started[-1]
    assert latest_run(results, lambda p: p.name != started[-1]) == results / "runs" / started[1]
    assert latest_run(results, lambda p: False) is None


def test_a_run_is_named_by_its_id_or_a_unique_prefix_or_suffix(tmp_path: Path):
    results = tmp_path / "exp" / "results"
    a = _run(results, "20261126T080000Z-001aaa")
    b = _run(results, "20261126T090000Z-002bbb")
    assert experiment_run(results, a.name) == a
    assert experiment_run(results, "20261126T09") == b
    assert experiment_run(results, "aaa") == a
    lab = tmp_path
    assert find_run(lab, "bbb") == b and find_run(lab, str(a)) == a.resolve()


def test_an_ambiguous_reference_lists_every_candidate(tmp_path: Path):
    results = tmp_path / "exp" / "results"
    _run(results, "20261126T080000Z-001aaa")
    _run(results, "20261126T090000Z-002bbb")
    expected = ("'20261126T' names 2 runs: 20261126T080000Z-001aaa, 20261126T090000Z-002bbb; "
                "give more of the id (any unique prefix or suffix names a run)")
    with pytest.raises(ConfigError) as exc:
        experiment_run(results, "20261126T")
    assert exc.value.render() == f"--run: {expected}"
    with pytest.raises(ConfigError) as exc:
        find_run(tmp_path, "20261126T")
    assert exc.value.render() == f"RUN: {expected}"


def test_no_run_is_a_config_error_and_a_not_found_with_the_same_message(tmp_path: Path):
    results = tmp_path / "exp" / "results"
    with pytest.raises(RunNotFound) as exc:
        experiment_run(results, "nope")
    assert exc.value.render() == f"--run: no run 'nope' in {results}"
    for i in range(7):
        _run(results, f"20261126T08000{i}Z-00{i}aaa")
    _run(results, "20261126T090000Z-000ccc", spec=False)  # a folder without its spec
    with pytest.raises(RunNotFound) as exc:
        experiment_run(results, "ccc")
    assert exc.value.render() == (
        f"--run: no run '20261126T090000Z-000ccc' in {results} (latest: 20261126T080003Z-"
        "003aaa, 20261126T080004Z-004aaa, 20261126T080005Z-005aaa, 20261126T080006Z-006aaa, "
        "20261126T090000Z-000ccc)")
    with pytest.raises(RunNotFound) as exc:
        find_run(tmp_path, "zzz")
    assert exc.value.render() == f"RUN: no run 'zzz' in lab {tmp_path}"
    assert isinstance(exc.value, ConfigError) and isinstance(exc.value, NotFound)
