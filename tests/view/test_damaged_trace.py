"""A damaged trace is shown as damaged, never a 500 (issue 14, item 9, the viewer's part).

The viewer's real app (Starlette's test client, which raises on a server error) serves a lab
run by the real `ix run`, whose trial lines are then pointed at a transcript holding a line
nested 50,000 deep (the decoder gives up), one nested 300 deep (it decodes, but indenting it
would make megabytes), a 5,000-digit number, a torn line, plain text and a normal line.
"""

import gzip
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

LINES = [
    json.dumps({"type": "system", "subtype": "init", "model": "m-1", "tools": ["Skill"]}),
    "[" * 50_000 + "]" * 50_000,
    json.dumps({"type": "telemetry", "v": 1})[:-1] + ', "deep": ' + "[" * 300 + "]" * 300 + "}",
    '{"type": "telemetry", "n": ' + "7" * 5000 + "}",
    '{"type": "assistant", "message": {"content": [{"type": "text", "text": "cut sh',
    "a plain text line",
    json.dumps({"type": "result", "subtype": "success", "num_turns": 1, "result": "done"}),
]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict[str, Any]]:
    lab = tmp_path_factory.mktemp("damaged") / "lab"
    _shared.mock_experiment(lab, "exp", rates={"must-001": 1.0}, trials=1)
    r = _shared.run_ix("run", "--lab", str(lab), "exp", "--json")
    assert r.code == 0, r.output
    run_id = json.loads(r.stdout)["run_id"]
    results = lab / "exp" / "results"
    traces = results / "runs" / run_id / "traces"
    traces.mkdir()
    with gzip.open(traces / "damaged.jsonl.gz", "wt", encoding="utf-8") as f:
        f.write("\n".join(LINES) + "\n")
    log = results / "trials.jsonl"
    first = json.loads(log.read_bytes().splitlines()[0])
    trace = f"runs/{run_id}/traces/damaged.jsonl.gz"
    with log.open("a", encoding="utf-8") as f:
        f.write(json.dumps({**first, "trial": 5, "trace": trace}) + "\n")
        deep = json.dumps({**first, "trial": 6})[:-1] + ', "x": ' + "[" * 300 + "]" * 300 + "}"
        f.write(deep + "\n")
        f.write(json.dumps({**first, "trial": 7}).replace('"trial": 7', '"trial": 7, "n": '
                                                          + "7" * 5000) + "\n")
    return lab, run_id, first


@pytest.fixture(scope="module")
def client(lab) -> TestClient:
    return TestClient(create_app(lab[0]), base_url="http://127.0.0.1")


def _query(first: dict[str, Any], trial: int) -> dict[str, Any]:
    return {"subject": first["subject"], "case": first["probe_id"], "trial": trial}


def test_a_damaged_trace_page_shows_each_damaged_line_as_damaged(lab, client: TestClient):
    _, run_id, first = lab
    r = client.get(f"/runs/{run_id}/trace", params=_query(first, 5))
    assert r.status_code == 200, r.text[:500]
    page = r.text
    titles = re.findall(r'<li class="event kind-(\w+)[^"]*">\s*<div class="event-head">'
                        r'<span class="kind">[^<]*</span> <span class="title">([^<]*)</span>',
                        page)
    assert [kind for kind, _ in titles] == ["system", "damaged", "damaged", "damaged",
                                            "damaged", "text", "result"]
    damaged = [title for kind, title in titles if kind == "damaged"]
    assert damaged == ["line 2 is nested deeper than the viewer decodes",
                       "line 3 is nested more than 200 levels deep",
                       "line 4 is a number too long to read",
                       damaged[3]]
    assert damaged[3].startswith("line 5 is not valid JSON")
    assert "<strong>damaged</strong>: 4 lines could not be read or shown" in page
    assert "a plain text line" in page and "session start" in page
    assert len(page) < 200_000  # 100 KB of brackets are shown by their first 300 characters


def test_a_trial_nested_deep_is_shown_on_one_line(lab, client: TestClient):
    _, run_id, first = lab
    r = client.get(f"/runs/{run_id}/trial", params=_query(first, 6))
    assert r.status_code == 200
    assert "[" * 300 in r.text  # its JSON on one line, not 300 levels of indentation
    assert len(r.text) < 100_000


def test_a_trial_whose_line_does_not_decode_is_not_found(lab, client: TestClient):
    _, run_id, first = lab
    r = client.get(f"/runs/{run_id}/trial", params=_query(first, 7))
    assert r.status_code == 404
    assert client.get(f"/runs/{run_id}/trace", params=_query(first, 7)).status_code == 404
