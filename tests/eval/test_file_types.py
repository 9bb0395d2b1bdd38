"""The summary and `spec.yaml` have types (`ix.eval.schemas.Summary`,
`ix.store.spec_schema.RunSpec`) that the engine is held to and readers rely on: a real run's
files validate against them, and a summary that is not one is refused naming the file."""

import json
import shutil
from pathlib import Path

import pytest
import yaml

from conftest import flat, mock_experiment, run_ix, write
from ix.api.reports import read_summary
from ix.domain.errors import ConfigError
from ix.engine.plan import build_plan
from ix.engine.run import run_plan
from ix.eval.schemas import SCHEMA_VERSION, summary_adapter, summary_problems
from ix.lab.loader import load_experiment
from ix.store.spec_schema import spec_adapter


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> Path:
    """A finished two-subject mock run with errors, two sensors and a goal: its folder."""
    lab = tmp_path_factory.mktemp("types") / "lab"
    exp = mock_experiment(lab, rates={"must-001": 0.9}, n_must=3, n_not=3, trials=3)
    write(exp / "experiment.yaml", """
        name: exp
        trials: 3
        runtime: {kind: mock, default_rate: 0.6, error_rates: {must-002: 0.5}}
        sensors: [activation, {kind: latency, max_ms: 60000}]
        subjects:
          - name: control
          - name: variant
            runtime: {kind: mock, default_rate: 0.8}
        goal: {hypothesis: the variant activates more, metric: recall, direction: increase,
               min_effect: 0.05}
    """)
    result = run_plan(build_plan(load_experiment(exp, lab)), command=["ix", "run"])
    assert result.status == "completed"
    return result.run_dir


def test_a_real_runs_summary_validates_against_its_type(ran):
    for path in (ran / "summary.json", ran.parent.parent / "summary-latest.json"):
        data = json.loads(path.read_text())
        summary_adapter().validate_python(data)  # closed: an undeclared key fails here
        assert data["schema_version"] == SCHEMA_VERSION and summary_problems(data) == []
    assert read_summary(ran)["run_id"] == ran.name


def test_a_real_runs_spec_validates_against_its_type(ran):
    spec = yaml.safe_load((ran / "spec.yaml").read_text())
    spec_adapter().validate_python(spec)  # closed: an undeclared key fails here
    assert spec["status"] == "completed" and spec["trials_written"] > 0


def test_a_spec_key_the_type_does_not_declare_is_caught(ran):
    spec = yaml.safe_load((ran / "spec.yaml").read_text())
    with pytest.raises(ValueError, match="surprise"):
        spec_adapter().validate_python({**spec, "surprise": 1})


def test_a_summary_missing_a_key_is_refused_naming_the_file_and_the_key(ran, tmp_path):
    data = json.loads((ran / "summary.json").read_text())
    del data["metrics"]
    del data["subjects"][1]["usage"]
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps(data))
    with pytest.raises(ConfigError) as caught:
        read_summary(folder)
    assert str(caught.value.file) == str(folder / "summary.json")
    assert "missing metrics, subjects[1].usage" in caught.value.message
    assert "not a run summary" in caught.value.message


def test_a_wrong_type_is_named_with_its_place(ran, tmp_path):
    data = json.loads((ran / "summary.json").read_text())
    data["subjects"][0]["probe_results"][0]["n"] = "three"
    assert summary_problems(data) == [
        "subjects[0].probe_results[0].n: Input should be a valid integer, unable to parse "
        "string as an integer"]


def test_a_key_from_a_newer_minor_version_is_not_a_problem(ran):
    data = json.loads((ran / "summary.json").read_text())
    data["added_in_1_2"] = {"anything": True}
    data["subjects"][0]["also_new"] = 1
    assert summary_problems(data) == []


def test_ix_report_refuses_it_in_one_line_exit_2(ran, tmp_path):
    """The CLI contract: the file and the missing key on one line of stderr, exit 2 (main's
    four-key check let this summary through: `ix report` exited 0)."""
    lab = tmp_path / "lab"
    shutil.copytree(ran.parents[3], lab)
    path = lab / "exp" / "results" / "runs" / ran.name / "summary.json"
    data = json.loads(path.read_text())
    del data["subjects"][0]["trial_level"]
    path.write_text(json.dumps(data))
    r = run_ix("report", ran.name, "--lab", str(lab))
    assert r.code == 2, r.output
    assert str(path) in flat(r.stderr) and "missing subjects[0].trial_level" in flat(r.stderr)
    assert len(flat(r.stderr).splitlines()) == 1 and "Traceback" not in r.output
