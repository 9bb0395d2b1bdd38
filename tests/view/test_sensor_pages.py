"""Every sensor in the viewer (issue 20), in-process (Starlette's test client) on a lab run by
`ix run` (set-up, in process): a run's page shows the per-sensor table of its report, the
compare page each sensor's pass rate in both runs and the difference, and a capability
experiment (first sensor not `activation`) is worded "pass rate" on the run, trials and
compare pages, while an activation experiment keeps "activation rate"."""

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from ix.api import compare_runs
from ix.report.tables import decimal
from ix.view.app import create_app


def _tests_conftest() -> Any:
    spec = importlib.util.spec_from_file_location(
        "ix_tests_conftest", Path(__file__).resolve().parents[1] / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_shared = _tests_conftest()
SUBJECTS = {"baseline-agent": "{must-001: 0.8, must-002: 0.6, not-001: 0.2}",
            "candidate-agent": "{must-001: 0.3, must-002: 1.0, not-001: 0.0}"}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Path:
    lab = tmp_path_factory.mktemp("sensor-pages") / "lab"
    subjects = "\n".join(f"  - name: {s}\n    runtime: {{kind: mock, skill: target, "
                         f"activation_rates: {r}}}" for s, r in SUBJECTS.items())
    _shared.write(lab / "agent" / "experiment.yaml",
                  f"name: agent\ntrials: 5\nsubjects:\n{subjects}\nsensors:\n"
                  "  - {kind: tool_count, tool: Skill, min: 1}\n"
                  "  - {kind: matcher, contains: directly}\n")
    for c in ("must-001", "must-002"):
        _shared.case(lab / "agent", c, "must_trigger")
    _shared.case(lab / "agent", "not-001", "should_not_trigger")
    for seed in ("1", "2"):
        r = _shared.ix_in_process("run", "agent", "--lab", str(lab), "--seed", seed,
                                  "--progress", "none")
        assert r.code in (0, 1), r.output
    _shared.mock_experiment(lab, "exp", rates={"must-001": 1.0}, trials=3)  # activation
    r = _shared.ix_in_process("run", "exp", "--lab", str(lab), "--progress", "none")
    assert r.code in (0, 1), r.output
    return lab


@pytest.fixture(scope="module")
def client(lab: Path) -> TestClient:
    return TestClient(create_app(lab), base_url="http://127.0.0.1")


def _runs(lab: Path, experiment: str = "agent") -> list[str]:
    return sorted(p.name for p in (lab / experiment / "results" / "runs").iterdir())


def _summary(lab: Path, run: str) -> dict:
    return json.loads((lab / "agent" / "results" / "runs" / run / "summary.json").read_text())


def _text(html: str) -> str:
    """The page's text, tags dropped and white space folded."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_the_run_page_shows_every_sensor_in_capability_words(lab: Path, client: TestClient):
    run = _runs(lab)[1]
    page = client.get(f"/runs/{run}")
    assert page.status_code == 200
    assert "Pass rate per sensor" in page.text
    summary = _summary(lab, run)
    for block in summary["subjects"]:
        assert list(block["sensors"]) == ["tool_count", "matcher"]
        for s in block["sensors"].values():  # each subject's cell, as the report prints it
            lo, hi = s["rate_ci"]
            assert f"{s['rate']:.2f} [{lo:.2f}, {hi:.2f}] {s['passed']}/{s['n']}" in page.text
    assert "Pass rate of each case per subject" in page.text
    assert "activation rate" not in _text(page.text).lower()


def test_a_run_without_a_summary_is_worded_from_its_spec(lab: Path, client: TestClient):
    run = _runs(lab)[0]
    summary = lab / "agent" / "results" / "runs" / run / "summary.json"
    saved = summary.read_bytes()
    summary.unlink()
    try:
        page = client.get(f"/runs/{run}")
        trials = client.get(f"/runs/{run}/trials", params={"case": "must-001"})
    finally:
        summary.write_bytes(saved)
    assert page.status_code == 200 and "No report yet" in page.text
    assert "Pass rate of each case per subject" in page.text
    assert trials.status_code == 200 and "<th>pass rate [95% CI]</th>" in trials.text


def test_the_trials_page_header_follows_the_first_sensor(lab: Path, client: TestClient):
    page = client.get(f"/runs/{_runs(lab)[1]}/trials", params={"case": "must-002"})
    assert page.status_code == 200
    assert "<th>pass rate [95% CI]</th>" in page.text
    assert "activation rate" not in page.text.lower()
    other = client.get(f"/runs/{_runs(lab, 'exp')[0]}/trials", params={"case": "must-001"})
    assert other.status_code == 200
    assert "<th>activation rate [95% CI]</th>" in other.text
    run_page = client.get(f"/runs/{_runs(lab, 'exp')[0]}")
    assert "Activation rate of each case per subject" in run_page.text
    assert "Pass rate per sensor" not in run_page.text  # one sensor: no sensor table


def test_the_compare_page_shows_each_sensor_and_capability_words(lab: Path,
                                                                 client: TestClient):
    a, b = _runs(lab)
    page = client.get("/compare", params={"a": a, "b": b})
    assert page.status_code == 200
    text = _text(page.text)
    assert "Pass rate per sensor over the shared cases" in text
    assert "pass rate (must)" in text and "activation rate" not in text.lower()
    result = compare_runs(lab, [a, b])
    names = [entry["subject"] for entry in result["comparisons"]]
    starts = [text.index(f"{n} metric A B") for n in names] + [len(text)]
    for i, entry in enumerate(result["comparisons"]):
        section = text[starts[i]:starts[i + 1]]
        assert list(entry["sensors"]) == ["tool_count", "matcher"]
        for name, m in entry["sensors"].items():
            cells = [f"{_num(r['rate'])} [{_num(r['rate_ci'][0])}, {_num(r['rate_ci'][1])}] "
                     f"{r['passed']}/{r['n']}" for r in (m["rate_before"], m["rate_after"])]
            delta = f"{_num(m['diff'])} [{_num(m['diff_ci'][0])}, {_num(m['diff_ci'][1])}]"
            row = (f"{name} {'(decides) ' if m['primary'] else ''}{cells[0]} {cells[1]} {delta} "
                   f"{_num(m['p_better'])} {_num(m['p_value'])}")
            assert row in section, (row, section)


def _num(x: float) -> str:
    return decimal(x, 3, grouping=True)
