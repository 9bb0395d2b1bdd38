"""The viewer's pages in-process (Starlette's test client) on a lab run by the real `ix run`:
the cases a run without a summary still shows, bad query strings, unknown ids."""

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from ix.view.app import create_app


def _tests_conftest() -> Any:
    spec = importlib.util.spec_from_file_location(
        "ix_tests_conftest", Path(__file__).resolve().parents[1] / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_shared = _tests_conftest()


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Path:
    lab = tmp_path_factory.mktemp("pages") / "lab"
    _shared.mock_experiment(lab, "exp", rates={"must-001": 1.0, "not-001": 1.0}, trials=3)
    for seed in ("1", "2"):
        r = _shared.run_ix("run", "--lab", str(lab), "exp", "--seed", seed)
        assert r.code == 0, r.output
    _shared.mock_experiment(lab, "fresh", trials=1)  # never run
    return lab


@pytest.fixture(scope="module")
def client(lab: Path) -> TestClient:
    return TestClient(create_app(lab), base_url="http://127.0.0.1")


def runs(lab: Path) -> list[str]:
    return sorted(p.name for p in (lab / "exp" / "results" / "runs").iterdir())


def message(html: str) -> str:
    found = re.search(r'class="error-message">([^<]*)<', html)
    return found.group(1) if found else ""


def test_an_experiment_without_runs_says_how_to_make_one(client: TestClient):
    page = client.get("/")
    assert page.status_code == 200
    assert "No run yet" in page.text and "ix run fresh" in page.text


def test_a_run_without_a_summary_shows_its_cases_from_the_trials(lab: Path,
                                                                  client: TestClient):
    first = runs(lab)[0]
    summary = lab / "exp" / "results" / "runs" / first / "summary.json"
    saved = summary.read_bytes()
    summary.unlink()
    try:
        page = client.get(f"/runs/{first}")
    finally:
        summary.write_bytes(saved)
    assert page.status_code == 200
    assert "No report yet" in page.text
    assert page.text.count('class="case-link"') == 6  # 3 must + 3 not (edge is not run)


def test_unknown_and_ambiguous_runs_are_404_saying_why(lab: Path, client: TestClient):
    assert client.get("/runs/19990101T000000Z-000000").status_code == 404
    page = client.get(f"/runs/{runs(lab)[0][:4]}")  # a prefix of both runs
    assert page.status_code == 404 and "names 2 runs" in message(page.text)


@pytest.mark.parametrize("query", [
    {"case": "must-001", "page": "x"},
    {"case": "must-001", "page": "0"},
    {"case": "must-001", "outcome": "maybe"},
])
def test_bad_query_strings_are_400(lab: Path, client: TestClient, query: dict[str, str]):
    assert client.get(f"/runs/{runs(lab)[0]}/trials", params=query).status_code == 400


def test_ids_that_name_nothing_are_404(lab: Path, client: TestClient):
    first = runs(lab)[0]
    assert client.get(f"/runs/{first}/trials", params={"case": "nope"}).status_code == 404
    assert client.get(f"/runs/{first}/trials", params={"case": "a\x00b"}).status_code == 404
    trial = {"subject": "target", "case": "must-001", "trial": "99"}
    assert client.get(f"/runs/{first}/trial", params=trial).status_code == 404
    # the mock runtime keeps no trace: the trial page says so, the trace page is a 404
    trial["trial"] = "0"
    assert "No trace for this trial" in client.get(f"/runs/{first}/trial", params=trial).text
    assert client.get(f"/runs/{first}/trace", params=trial).status_code == 404


def test_trials_are_paged_and_filtered(lab: Path, client: TestClient):
    first = runs(lab)[0]
    page = client.get(f"/runs/{first}/trials", params={"case": "must-001",
                                                       "outcome": "right"})
    assert page.status_code == 200
    assert page.text.count('class="trial-link"') == 3   # rate 1.0: all three right
    none = client.get(f"/runs/{first}/trials", params={"case": "must-001",
                                                       "outcome": "wrong"})
    assert "No trial matches" in none.text


def test_a_case_page_takes_its_intervals_from_the_summary_if_it_counts_the_same_trials(
        lab: Path, client: TestClient):
    """Reading a run never recomputes what its summary holds (issue 33): each subject's
    interval is the summary's `score_ci`, computed from the trials only when the summary
    counts other trials than the index holds."""
    second = runs(lab)[1]
    summary = lab / "exp" / "results" / "runs" / second / "summary.json"
    saved = summary.read_text(encoding="utf-8")

    def intervals(changes: dict[str, Any]) -> list[str]:
        data = json.loads(saved)
        for block in data["subjects"]:
            next(p for p in block["probe_results"] if p["probe_id"] == "must-001").update(changes)
        summary.write_text(json.dumps(data), encoding="utf-8")
        page = client.get(f"/runs/{second}/trials", params={"case": "must-001"})
        assert page.status_code == 200
        return re.findall(r'<span class="ci">([^<]*)</span>', page.text)

    try:
        computed = intervals({"n": 4})  # 3 trials in the index
        assert computed == ["[47.3, 100.0]"]  # 3 of 3: Beta(4, 1), one-sided: 0.05 ** (1/4)
        assert intervals({"score_ci": [0.111, 0.999]}) == ["[11.1, 99.9]"]
        assert intervals({"n": 4, "score_ci": [0.111, 0.999]}) == computed
    finally:
        summary.write_text(saved, encoding="utf-8")


def test_a_should_not_case_where_the_skill_fired_is_wrong_and_red_not_passed(
        lab: Path, client: TestClient):
    """DESIGN.md §8: the reading is "invoked", the outcome "wrong", coloured as bad."""
    first = runs(lab)[0]
    page = client.get(f"/runs/{first}/trials", params={"case": "not-001"})
    assert page.status_code == 200
    assert page.text.count('class="badge bad outcome-wrong">wrong<') == 3
    assert page.text.count('<td class="reading">invoked</td>') == 3
    assert "passed" not in page.text and "badge good" not in page.text
    wrong = client.get(f"/runs/{first}/trials", params={"case": "not-001", "outcome": "wrong"})
    assert wrong.text.count('class="trial-link"') == 3
    trial = client.get(f"/runs/{first}/trial",
                       params={"subject": "target", "case": "not-001", "trial": "0"})
    assert 'class="badge bad outcome-wrong">wrong<' in trial.text
    assert '<dd class="reading">invoked</dd>' in trial.text and "passed" not in trial.text.split(
        "trials.jsonl")[0]
    right = client.get(f"/runs/{first}/trial",
                       params={"subject": "target", "case": "not-002", "trial": "0"})
    assert 'class="badge good outcome-right">right<' in right.text
    assert '<dd class="reading">not invoked</dd>' in right.text


def test_a_context_and_sweep_run_page_shows_the_curve_and_the_sweep(tmp_path: Path):
    """`ix view` shows a run as its report does: the context curve and the sweep table."""
    lab = tmp_path / "lab"
    exp = lab / "ctx"
    _shared.write(exp / "experiment.yaml", """
        name: ctx
        trials: 2
        sensor: {kind: activation, skill: t}
        subjects:
          - {name: s, runtime: {kind: mock, default_rate: 0.9, context_decay: {half_life: 4}}}
        sweep: {context_decay.half_life: [4, 16]}
        context: {prefix: builtin:coding-session, lengths: [0, 8]}
        """)
    for i in range(3):
        _shared.case(exp, f"must-{i}", "must_trigger")
        _shared.case(exp, f"not-{i}", "should_not_trigger")
    assert _shared.ix_in_process("run", "--lab", str(lab)).code == 0  # set-up: the run shown
    [run] = [p.name for p in (exp / "results" / "runs").iterdir()]
    page = TestClient(create_app(lab), base_url="http://127.0.0.1").get(f"/runs/{run}")
    assert page.status_code == 200
    assert '<section id="context">' in page.text and '<section id="sweep">' in page.text
    assert "s[context_decay.half_life=16]" in page.text and "P(declines)" in page.text
