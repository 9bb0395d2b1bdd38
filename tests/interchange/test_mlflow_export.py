"""`ix export RUN --format mlflow`: a local MLflow tracking folder, read back with MLflow's
own client (docs/export.md, "MLflow"). The run is made in process; the export through the
API, and once through the real `ix`."""

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from conftest import ix_in_process, run_ix, tree_digest, write
from ix.api import transfer
from ix.domain.errors import ConfigError
from ix.interchange.mlflow_export import metric_name, subject_params


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    lab = tmp_path_factory.mktemp("mlf") / "lab"
    d = lab / "mlf"
    write(d / "experiment.yaml", """
        name: mlf
        trials: 3
        sensor: {kind: activation, skill: target}
        goal: {hypothesis: b is worse, metric: f1, compare: [a, b], direction: decrease,
               min_effect: 0.05}
        subjects:
          - name: a
            runtime: {kind: mock, skill: target, activation_rates: {must-001: 1.0,
                      must-002: 0.7}}
          - name: b
            runtime: {kind: mock, skill: target, activation_rates: {must-001: 0.3}}
    """)
    for case_id, expectation in (("must-001", "must_trigger"), ("must-002", "must_trigger"),
                                 ("not-001", "should_not_trigger")):
        write(d / "cases" / f"{case_id}.md", f"---\nexpectation: {expectation}\n---\nDo it\n")
    r = ix_in_process("run", "--lab", str(lab), "--json")
    assert r.code in (0, 1), r.output
    summary = json.loads(r.stdout)
    return {"lab": lab, "run": summary["run_id"], "summary": summary}


@pytest.fixture
def reader() -> Iterator[None]:
    """MLflow 3 reads its file store only when told it may (docs/export.md)."""
    saved = os.environ.get("MLFLOW_ALLOW_FILE_STORE")
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    yield
    if saved is None:
        os.environ.pop("MLFLOW_ALLOW_FILE_STORE", None)
    else:
        os.environ["MLFLOW_ALLOW_FILE_STORE"] = saved


def test_mlflow_reads_back_one_run_per_subject_under_the_ix_run_with_its_figures(
        made: dict[str, Any], tmp_path: Path, reader: None) -> None:
    out = tmp_path / "mlruns"
    before = tree_digest(made["lab"])
    transfer.export_run(made["lab"], made["run"], "mlflow", out)
    assert tree_digest(made["lab"]) == before
    client = MlflowClient(tracking_uri=f"file:{out}")
    experiment = client.get_experiment_by_name("mlf")
    assert experiment is not None
    runs = {r.info.run_name: r for r in client.search_runs([experiment.experiment_id])}
    assert set(runs) == {made["run"], "a", "b"}
    parent = runs[made["run"]]
    summary = made["summary"]
    assert parent.data.tags["ix.run_id"] == made["run"]
    assert parent.data.tags["ix.verdict"] == summary["goal"]["verdict"]
    assert parent.data.params["subjects"] == "a, b"
    assert sorted(a.path for a in client.list_artifacts(parent.info.run_id)) == \
        ["report.md", "summary.csv", "summary.json"]
    local = client.download_artifacts(parent.info.run_id, "summary.json", str(tmp_path))
    assert json.loads(Path(local).read_text())["run_id"] == made["run"]
    for block in summary["subjects"]:
        run = runs[block["name"]]
        assert run.info.status == "FINISHED"
        assert run.data.tags["mlflow.parentRunId"] == parent.info.run_id
        assert run.data.tags["ix.run_id"] == made["run"]
        assert run.data.params["subject"] == block["name"]
        assert run.data.params["experiment"] == "mlf"
        assert run.data.params["seed"] == str(summary["seed"])
        assert run.data.params["runtime"] == "mock"
        m, metrics = run.data.metrics, block["metrics"]
        for key in ("recall", "f1"):
            assert m[key] == pytest.approx(metrics[key])
            assert [m[f"{key}_ci_low"], m[f"{key}_ci_high"]] == \
                pytest.approx(metrics[f"{key}_ci"])
        assert m["pass_at_1"] == pytest.approx(block["pass_at_k"]["1"])
        assert m["errors"] == block["errors"]
        if metrics["precision"] is None:  # undefined: not logged, never 0
            assert "precision" not in m
    assert "model" not in runs["b"].data.params  # mock has none


def test_a_subjects_model_and_runtime_come_from_the_spec() -> None:
    spec = {"config": {"subjects": [
        {"name": "a", "runtime": {"kind": "anthropic", "model": "claude-x"}},
        {"name": "b", "model": "gpt-y", "runtime": {"kind": "openai"}}]}}
    assert subject_params(spec, "a") == {"runtime": "anthropic", "model": "claude-x"}
    assert subject_params(spec, "b") == {"runtime": "openai", "model": "gpt-y"}
    assert subject_params(spec, "c") == {}


def test_a_second_export_adds_nothing_unless_forced(made: dict[str, Any], tmp_path: Path,
                                                    reader: None) -> None:
    out = tmp_path / "mlruns"
    transfer.export_run(made["lab"], made["run"], "mlflow", out)
    before = tree_digest(out)
    with pytest.raises(ConfigError, match="already holds ix run"):
        transfer.export_run(made["lab"], made["run"], "mlflow", out)
    assert tree_digest(out) == before
    transfer.export_run(made["lab"], made["run"], "mlflow", out, force=True)
    client = MlflowClient(tracking_uri=f"file:{out}")
    experiment = client.get_experiment_by_name("mlf")
    assert experiment is not None
    assert len(client.search_runs([experiment.experiment_id])) == 6


def test_metric_names_are_ones_mlflow_accepts() -> None:
    assert metric_name("pass@3") == "pass_at_3"
    assert metric_name("pass^3") == "pass_hat_3"
    assert metric_name("sla[p95 ≤ 200 ms]") == "sla_p95 le 200 ms"
    assert metric_name("trial_rate.correct") == "trial_rate.correct"


def test_without_mlflow_the_export_exits_2_naming_the_extra(made: dict[str, Any],
                                                            tmp_path: Path) -> None:
    # a sitecustomize that hides mlflow from the real `ix`, as if the extra were missing
    hide = tmp_path / "hide"
    write(hide / "sitecustomize.py", """
        import sys
        sys.modules["mlflow"] = None
    """)
    env = {"PYTHONPATH": os.pathsep.join([str(hide), *sys.path])}
    out = tmp_path / "mlruns"
    r = run_ix("export", made["run"], "--format", "mlflow", "--out", str(out), "--lab",
               str(made["lab"]), env=env)
    assert r.code == 2, r.output
    assert "pip install 'ix-lab[mlflow]'" in r.stderr and "Traceback" not in r.output
    assert not out.exists()
