"""`ix view`'s optimize sessions: listed under their experiment, each on its own page (the
session's report), a malformed or unknown id the viewer's 404 page; the lab's text escaped."""

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from conftest import EXAMPLE_LAB, offline_example
from ix.api.optimize import Settings, optimize
from ix.view.app import create_app
from optimize_lab import example_seed

#: A session made by hand (a copy of the real one): its lab text means something to HTML.
FORGED = "opt-20200101-000000-abcdef"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example lab with one real session (offline, ~2 s) and a forged copy of it."""
    lab = tmp_path_factory.mktemp("optimize-view") / "lab"
    shutil.copytree(EXAMPLE_LAB, lab, ignore=offline_example())
    state = optimize(lab, "skill-activation",
                     Settings(rounds=2, seed=example_seed(EXAMPLE_LAB))).state
    assert state["status"] == "completed"  # set-up
    forged = dict(state, id=FORGED, skill="csv<script>alert(1)</script>", status="cancelled",
                  reason="stopped [bold]here[/bold]", holdout=None)
    forged["original"] = dict(state["original"], description="Use <img src=x onerror=y> | [b]")
    folder = lab / "skill-activation" / "results" / "optimize" / FORGED
    folder.mkdir(parents=True)
    (folder / "optimize.json").write_text(json.dumps(forged), encoding="utf-8")
    return lab


@pytest.fixture(scope="module")
def client(lab: Path) -> TestClient:
    return TestClient(create_app(lab), base_url="http://127.0.0.1")


def real_id(lab: Path) -> str:
    [found] = [p.name for p in (lab / "skill-activation" / "results" / "optimize").iterdir()
               if p.name != FORGED]
    return found


def state(lab: Path, session_id: str) -> dict[str, Any]:
    path = lab / "skill-activation" / "results" / "optimize" / session_id / "optimize.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def message(html: str) -> str:
    found = re.search(r'class="error-message">([^<]*)<', html)
    return found.group(1) if found else ""


def test_the_experiments_page_lists_each_session_linked_with_its_status_and_verdict(
        lab: Path, client: TestClient):
    page = client.get("/")
    assert page.status_code == 200
    section = page.text.split("<h2>skill-activation</h2>")[1].split("</section>")[0]
    sid = real_id(lab)
    rows = re.findall(r"<tr>(.*?)</tr>", section.split('class="sessions"')[1].split("<tbody>")[1],
                      re.S)
    assert [re.findall(r'href="/optimize/([^"]+)"', r) for r in rows] == [[sid], [FORGED]]
    verdict = state(lab, sid)["holdout"]["why"]
    escaped = verdict.replace("<", "&lt;").replace(">", "&gt;")
    assert "status-completed" in rows[0] and escaped in rows[0]
    assert "status-cancelled" in rows[1] and "cancelled: stopped [bold]here[/bold]" in rows[1]
    assert "csv&lt;script&gt;alert(1)&lt;/script&gt;" in rows[1]


def test_a_session_page_shows_its_report_with_its_stylesheets_and_nothing_inline(
        lab: Path, client: TestClient):
    sid = real_id(lab)
    page = client.get(f"/optimize/{sid}")
    assert page.status_code == 200
    s = state(lab, sid)
    body = page.text
    for shown in (s["holdout"]["why"].replace("<", "&lt;").replace(">", "&gt;"),
                  'id="holdout"', 'id="rounds"',
                  'id="description"', f"candidate {s['best']}"):
        assert shown in body
    assert '<link rel="stylesheet" href="/static/report.css">' in body
    assert '<link rel="stylesheet" href="/static/optimize.css">' in body
    assert "<style" not in body and " style=" not in body and "<script" not in body
    assert "script-src 'none'" in page.headers["content-security-policy"]
    css = client.get("/static/optimize.css")
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    assert ".ix-report del" in css.text


def test_the_lab_text_of_a_session_page_is_escaped(client: TestClient):
    page = client.get(f"/optimize/{FORGED}")
    assert page.status_code == 200
    assert "<script" not in page.text and "<img" not in page.text
    assert "csv&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    assert "Use &lt;img src=x onerror=y&gt; | [b]" in page.text
    assert "cancelled: stopped [bold]here[/bold]" in page.text
    assert "run the same command again to continue it" in page.text


@pytest.mark.parametrize("ref", [
    "nope", "20261127", "opt-20200101-000000-abcde", "opt-20200101-000000-abcdeff",
    "opt-20200101-000000-ABCDEF", "opt-20200101-000000-abcdef.json", "%2e%2e%2fx",
    "opt-20200101-000000-abcdef%00", "20200101T000000Z-abcdef", "x" * 300,
])
def test_a_malformed_session_id_is_the_404_page(client: TestClient, ref: str):
    page = client.get(f"/optimize/{ref}")
    assert page.status_code == 404
    assert 'class="error-message"' in page.text
    assert "Traceback" not in page.text


def test_an_unknown_session_is_the_404_page_saying_so(client: TestClient):
    page = client.get("/optimize/opt-20200101-000000-000000")
    assert page.status_code == 404
    assert message(page.text) == "no optimize session opt-20200101-000000-000000 in this lab"


def test_an_unreadable_session_file_leaves_the_experiments_page_up(lab: Path, tmp_path: Path):
    copy = tmp_path / "lab"
    shutil.copytree(lab, copy)
    broken = copy / "skill-activation" / "results" / "optimize" / FORGED / "optimize.json"
    broken.write_text("{torn", encoding="utf-8")
    client = TestClient(create_app(copy), base_url="http://127.0.0.1")
    page = client.get("/")
    assert page.status_code == 200 and "<h2>skill-activation</h2>" in page.text
    assert client.get(f"/optimize/{FORGED}").status_code == 404
