"""`--executor ray`: a real Ray head on 127.0.0.1, started here; the real `ix` joins it.

A run on Ray must record what a local run records (same seeds, same observations, same
summary), and resume, Ctrl-C and batteries must work the same.
"""

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from conftest import run_ix, stable_summary, tree_digest, write
from engine.test_ray_cluster import (
    AUTH,
    comparable,
    experiment,
    free_port,
    kill_node,
    spec,
    start_node,
)


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A one-node Ray cluster (2 CPUs) with its head on 127.0.0.1, asking for the token of
    `AUTH` (which `ix` is given too); its address. Stopped by killing its own processes
    (`ray stop` would stop every Ray cluster of the user)."""
    port = free_port()
    head = start_node("--head", "--node-ip-address=127.0.0.1", f"--port={port}",
                      "--num-cpus=2", "--include-dashboard=false",
                      f"--dashboard-port={free_port()}")
    try:
        yield f"127.0.0.1:{port}"
    finally:
        kill_node(head)


def summary(d: Path) -> dict:
    return stable_summary(json.loads((d / "results" / "summary-latest.json").read_text()))


@pytest.mark.slow
def test_a_run_on_ray_records_what_a_local_run_records(cluster, tmp_path):
    local, remote = experiment(tmp_path / "local"), experiment(tmp_path / "ray")
    assert run_ix("run", "--lab", str(tmp_path / "local")).code == 0
    result = run_ix("run", "--lab", str(tmp_path / "ray"), "--executor", "ray",
                    "--address", cluster, env=AUTH)
    assert result.code == 0, result.output
    assert comparable(remote) == comparable(local)
    assert len(comparable(remote)) == 8 * 6
    assert any(r["error"] for r in comparable(remote))  # errors travel back as errors
    assert summary(remote) == summary(local)
    executor = spec(remote)["executor"]
    assert executor["kind"] == "ray" and executor["address"] == cluster
    assert executor["nodes"] == 1 and executor["cpus"] == 2
    (node,) = executor["cluster"]
    assert node["resources"] == {"CPU": 2}
    for raw in (remote / "results" / "trials.jsonl").read_text().splitlines():
        assert json.loads(raw)["node"] == {k: node[k] for k in ("id", "ip", "host")}
    assert spec(local)["executor"] == {"kind": "local"}


def _start(lab: Path, cluster: str) -> subprocess.Popen:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("IX_")}, **AUTH}
    return subprocess.Popen([str(Path(sys.executable).parent / "ix"), "run", "--lab", str(lab),
                             "--executor", "ray", "--address", cluster],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)


def _wait_for_lines(d: Path, n: int) -> None:
    path = d / "results" / "trials.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if path.exists() and len(path.read_bytes().splitlines()) >= n:
            return
        time.sleep(0.02)
    raise AssertionError("the run wrote too few trials")


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["sigkill", "sigint"])
def test_a_run_on_ray_killed_midway_resumes_to_the_uninterrupted_summary(cluster, tmp_path,
                                                                         sig):
    reference = experiment(tmp_path / "reference", latency=100)
    assert run_ix("run", "--lab", str(tmp_path / "reference")).code == 0
    lab = tmp_path / "lab"
    d = experiment(lab, latency=100)
    proc = _start(lab, cluster)
    _wait_for_lines(d, 8)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=120)
    if sig == signal.SIGINT:
        assert proc.returncode == 130, stderr
        assert spec(d)["status"] == "cancelled"
        assert json.loads((d / "results" / "summary-latest.json").read_text())[
            "run_status"] == "cancelled"
    else:
        assert proc.returncode == -signal.SIGKILL
    written = len(comparable(d))
    assert 8 <= written < 48
    resumed = run_ix("run", "--lab", str(lab), "--resume", "--executor", "ray",
                     "--address", cluster, env=AUTH)
    assert resumed.code == 0, resumed.output
    assert len(comparable(d)) == 48  # exactly the missing trials ran
    assert comparable(d) == comparable(reference)
    assert summary(d) == summary(reference)
    assert spec(d)["continued"][-1]["executor"]["kind"] == "ray"


@pytest.mark.slow
def test_a_battery_runs_on_ray(cluster, tmp_path):
    lab = tmp_path / "lab"
    experiment(lab)
    battery = write(lab / "nightly.yaml", "name: nightly\nexperiments: [e]\nseeds: 2\n"
                                          "trials: 2\noutput: batteries/{date}_{seq}\n")
    result = run_ix("batch", str(battery), "--lab", str(lab), "--executor", "ray",
                    "--address", cluster, "--json", env=AUTH)
    assert result.code == 0, result.output
    report = json.loads(result.stdout)
    assert report["runs"] == 2 and report["completed"] == 2
    specs = [yaml.safe_load(p.read_text())
             for p in (lab / "e" / "results" / "runs").glob("*/spec.yaml")]
    assert [s["executor"]["kind"] for s in specs] == ["ray", "ray"]


@pytest.mark.slow
def test_a_human_subject_cannot_leave_this_process(cluster, tmp_path):
    d = write(tmp_path / "lab" / "e" / "experiment.yaml",
              "name: e\nskill: t\ntrials: 1\nruntime: {kind: human}\n").parent
    write(d / "cases" / "c.md", "---\nexpectation: must_trigger\n---\nhi\n")
    before = tree_digest(tmp_path / "lab")
    result = run_ix("run", "--lab", str(tmp_path / "lab"), "--executor", "ray",
                    "--address", cluster, env=AUTH)
    assert result.code == 2
    assert "human" in result.stderr and "--executor" in result.stderr
    assert "Traceback" not in result.output
    assert tree_digest(tmp_path / "lab") == before


@pytest.mark.parametrize(("args", "message"), [
    (["--executor", "ray", "--address", "127.0.0.1:{port}"], "no Ray cluster answers"),
    (["--executor", "ray", "--address", "no-port"], "expected HOST:PORT"),
    (["--executor", "dask"], "unknown executor 'dask'"),
    (["--address", "127.0.0.1:6379"], "add --executor ray"),
])
def test_bad_executor_flags_exit_2_and_touch_nothing(tmp_path, args, message):
    experiment(tmp_path / "lab")
    before = tree_digest(tmp_path / "lab")
    args = [a.format(port=free_port()) for a in args]
    result = run_ix("run", "--lab", str(tmp_path / "lab"), *args)
    assert result.code == 2, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output
    assert tree_digest(tmp_path / "lab") == before
