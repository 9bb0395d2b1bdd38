"""`LabStorage`, the seed's `Storage` over a lab (`ix.Lab(...).storage()`): outside verdicts
in, one run out, which ix's readers read as they read a run ix made."""

import json
from pathlib import Path

import pytest

from conftest import ix_in_process, write
from ix.api import Lab, query_results
from ix.domain import Reading, Storage, Verdict, aggregate_readings
from ix.domain.errors import ConfigError
from ix.eval.models import EvalObservation, ExperimentResults
from ix.eval.scoring import compute_metrics
from ix.store.layout import ExperimentDir
from ix.store.lookup import latest_run
from ix.store.spec import read_spec
from ix.store.summaries import read_summary
from ix.store.trial_schema import TrialLine

OUTCOMES = {  # case: trial outcomes (None: no verdict)
    "must-001": [True, True, False, None],
    "must-002": [False, False, True],
    "not-001": [False, False, False],
}


@pytest.fixture
def lab(tmp_path: Path) -> Path:
    write(tmp_path / "ix.yaml", "")
    write(tmp_path / "routing" / "experiment.yaml",
          "name: routing\nskill: s\ntrials: 3\nruntime: {kind: mock}\n")
    for case in OUTCOMES:
        expectation = "must_trigger" if case.startswith("must") else "should_not_trigger"
        write(tmp_path / "routing" / "cases" / f"{case}.md",
              f"---\nexpectation: {expectation}\n---\nprompt of {case}\n")
    return tmp_path


def verdicts() -> list[Verdict]:
    out = []
    for case, outcomes in OUTCOMES.items():
        expectation = "must_trigger" if case.startswith("must") else "should_not_trigger"
        for trial, passed in enumerate(outcomes):
            out.append(Verdict(
                probe_id=case, trial=trial, expectation=expectation,
                observation=EvalObservation(content=f"answer {trial}", tokens_input=10,
                                            tokens_output=3, cost_usd=0.001),
                reading=None if passed is None
                else Reading(sensor_name="activation", passed=passed)))
    return out


def results_of(given: list[Verdict]) -> ExperimentResults:
    probes = tuple(aggregate_readings([v for v in given if v.probe_id == case])
                   for case in OUTCOMES)
    metrics = compute_metrics(probes)
    return ExperimentResults(experiment_name="routing", probe_results=probes,
                             precision=metrics["precision"], recall=metrics["recall"],
                             f1=metrics["f1"])


def test_verdicts_become_a_completed_run_that_ix_reads(lab):
    given = verdicts()
    with Lab(lab).storage(subject="mine") as storage:
        assert isinstance(storage, Storage)
        assert storage.list_experiments(lab) == [lab / "routing"]
        assert storage.load_experiment(lab / "routing").name == "routing"
        for v in given:
            storage.append_result("routing", v)
        log = ExperimentDir.at(lab / "routing").trials
        lines = [json.loads(x) for x in log.read_text().splitlines()]
        assert len(lines) == len(given)  # on disk before the summary
        for line in lines:
            TrialLine.model_validate(line)
        run = latest_run(ExperimentDir.at(lab / "routing").results)
        assert run is not None and read_spec(run)["status"] == "running"
        path = storage.save_summary("routing", results_of(given))
    assert path.is_file()
    spec = read_spec(run)
    assert spec["status"] == "completed" and spec["trials_written"] == len(given)
    summary = read_summary(run)
    [subject] = summary["subjects"]
    assert subject["name"] == "mine"
    probes = {p["probe_id"]: p for p in subject["probe_results"]}
    assert probes["must-001"]["score"] == pytest.approx(2 / 3)  # the None is left out
    assert probes["must-001"]["correct"] is True and probes["must-002"]["correct"] is False
    assert probes["not-001"]["correct"] is True
    metrics = subject["metrics"]
    assert (metrics["tp"], metrics["fn"], metrics["fp"], metrics["tn"]) == (1, 1, 0, 1)
    found = query_results(lab, experiment="routing")
    rate = found.activation_rate()
    assert len(found.rows()) == len(given) and (rate.valid, rate.errors) == (len(given) - 1, 1)
    shown = ix_in_process("report", "--lab", str(lab), "routing")
    assert shown.code == 0 and "mine" in shown.output


def test_results_that_contradict_the_log_are_refused_and_the_run_is_not_completed(lab):
    given = verdicts()
    storage = Lab(lab).storage()
    for v in given[:-1]:  # not-001 has one trial fewer: its score is the same, still right
        storage.append_result("routing", v)
    flipped = results_of(given).model_copy(update={"probe_results": tuple(
        p.model_copy(update={"correct": not p.correct}) if p.probe_id == "must-002" else p
        for p in results_of(given).probe_results)})
    with pytest.raises(ConfigError, match="must-002"):
        storage.save_summary("routing", flipped)
    run = latest_run(ExperimentDir.at(lab / "routing").results)
    assert run is not None and read_spec(run)["status"] == "running"
    storage.close()  # a run never saved: cancelled, its lines kept
    assert read_spec(run)["status"] == "cancelled"
    assert len(ExperimentDir.at(lab / "routing").trials.read_text().splitlines()) == 9


def test_bad_input_names_what_is_wrong(lab):
    storage = Lab(lab).storage()
    with pytest.raises(ConfigError, match="no experiment 'nowhere'"):
        storage.append_result("nowhere", verdicts()[0])
    with pytest.raises(ConfigError, match="acceptable"):
        storage.append_result("routing", Verdict(probe_id="x", trial=0,
                                                 expectation="acceptable"))
    with pytest.raises(ConfigError, match="no verdict of experiment"):
        storage.save_summary("routing", results_of(verdicts()))
    storage.close()
