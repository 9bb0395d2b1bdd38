"""`FileStorage` implements the `Storage` port over real files."""

import json

from conftest import mock_experiment
from ix.domain.types import Reading
from ix.eval.models import ExperimentResults, ProbeResult, Verdict
from ix.eval.service import Storage
from ix.lab.results import read_trials
from ix.lab.storage import FileStorage


def test_file_storage_is_a_storage_and_round_trips(lab):
    exp = mock_experiment(lab, "folder-name")
    (exp / "experiment.yaml").write_text(
        (exp / "experiment.yaml").read_text().replace("name: folder-name", "name: by-name"))
    storage = FileStorage(lab)
    assert isinstance(storage, Storage)
    assert storage.list_experiments(lab) == [exp]
    loaded = storage.load_experiment(exp)
    assert loaded.name == "by-name" and len(loaded.cases) == 7

    verdict = Verdict(probe_id="must-001", trial=0, expectation="must_trigger",
                      reading=Reading(sensor_name="activation", passed=True, score=1.0))
    storage.append_result("by-name", verdict)
    storage.append_result("by-name", verdict.model_copy(update={"trial": 1}))
    records = list(read_trials(exp / "results" / "trials.jsonl"))
    assert [r["trial"] for r in records] == [0, 1]
    assert records[0]["reading"]["passed"] is True

    results = ExperimentResults(experiment_name="by-name", probe_results=(
        ProbeResult(probe_id="must-001", expectation="must_trigger", score=1.0, correct=True),
    ), precision=1.0, recall=1.0, f1=1.0, tp=1, status="excellent")
    path = storage.save_summary("by-name", results)
    latest = json.loads((exp / "results" / "summary-latest.json").read_text())
    assert json.loads(path.read_text()) == latest
    assert latest["metrics"]["f1"] == 1.0 and latest["probe_results"][0]["correct"] is True
