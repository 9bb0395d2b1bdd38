"""`ix.store.layout`: the path objects name the same files the writers write."""

from datetime import UTC, datetime
from pathlib import Path

from ix.store.annotations import annotations_path
from ix.store.import_run import add_run
from ix.store.layout import ExperimentDir, RunDir
from ix.store.runs import run_dir


def test_the_path_objects_name_the_layout(tmp_path: Path):
    experiment = ExperimentDir.at(tmp_path / "exp")
    run = experiment.run("20261126T000000Z-abc123")
    assert experiment.path == tmp_path / "exp"
    assert experiment.results == tmp_path / "exp" / "results"
    assert experiment.trials == tmp_path / "exp" / "results" / "trials.jsonl"
    assert experiment.latest_summary == tmp_path / "exp" / "results" / "summary-latest.json"
    assert run.path == run_dir(experiment.results, run.run_id)
    assert run.run_id == "20261126T000000Z-abc123"
    assert (run.spec.name, run.lock.name, run.summary.name) == \
        ("spec.yaml", "run.lock", "summary.json")
    assert run.annotations == annotations_path(run.path)
    assert run.traces == run.path / "traces"
    assert RunDir(run.path) == run


def test_an_import_writes_where_the_layout_says(tmp_path: Path):
    experiment = ExperimentDir.at(tmp_path / "exp")
    line = {"run_id": "20261126T000000Z-abc123", "subject": "s", "case_id": "c", "trial": 0}
    folder = add_run(experiment.results, "20261126T000000Z-abc123", {"run_id": "x"},
                     {"status": "completed"}, [line], datetime(2026, 11, 26, tzinfo=UTC))
    run = experiment.run("20261126T000000Z-abc123")
    assert folder == run.path
    assert run.spec.is_file() and run.summary.is_file()
    assert experiment.trials.is_file() and experiment.latest_summary.is_file()


def test_a_run_folder_knows_its_experiment(tmp_path: Path):
    experiment = ExperimentDir.at(tmp_path / "exp")
    run = experiment.run("20261126T000000Z-abc123")
    assert run.experiment == experiment
    assert run.experiment.name == "exp"
    assert run.experiment.trials == tmp_path / "exp" / "results" / "trials.jsonl"


def test_the_file_names_are_defined_in_the_layout_only():
    import ix.store.annotations
    import ix.store.runs
    import ix.store.trials

    for module in (ix.store.annotations, ix.store.runs, ix.store.trials):
        source = Path(module.__file__ or "").read_text(encoding="utf-8")
        for name in ('"trials.jsonl"', '"summary-latest.json"', '"spec.yaml"', '"run.lock"',
                     '"summary.json"', '"annotations.jsonl"', '"traces"'):
            assert name not in source, (module.__name__, name)


def test_archived_summaries_of_one_second_never_overwrite_each_other(tmp_path: Path):
    """The engine's `save_summary` and an import's publication take the same names: the
    first free of summary-<stamp>.json, summary-<stamp>-2.json, ..."""
    from ix.store.summaries import save_summary

    experiment = ExperimentDir.at(tmp_path / "exp")
    finished = datetime(2026, 11, 26, 12, 0, 0, tzinfo=UTC)
    first = save_summary(experiment.results, {"n": 1}, finished)
    second = save_summary(experiment.results, {"n": 2}, finished)
    add_run(experiment.results, "20261126T120000Z-abc123", {"run_id": "x"}, {"n": 3},
            [{"run_id": "20261126T120000Z-abc123", "trial": 0}], finished)
    names = sorted(p.name for p in experiment.results.glob("summary-2*.json"))
    assert names == ["summary-20261126T120000Z-2.json", "summary-20261126T120000Z-3.json",
                     "summary-20261126T120000Z.json"]
    assert (first.name, second.name) == (names[2], names[0])
    assert [ExperimentDir.archived_stamp(experiment.results / n) for n in names] == \
        ["20261126T120000Z-2", "20261126T120000Z-3", "20261126T120000Z"]
    assert experiment.latest_summary.read_text() == \
        (experiment.results / names[1]).read_text()
