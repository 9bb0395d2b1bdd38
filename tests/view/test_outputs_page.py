"""The viewer's trial page shows the files a trial's subject made (DESIGN.md §10): text
inline, anything else as a download that is never rendered as a page; a path the trial did not
keep, or a copy changed since, is a 404 saying why."""

import json
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient

from conftest import ix_in_process, write
from ix.view.app import create_app

MAKER = """
import os
open("notes.txt", "w").write("<script>alert(1)</script> all done\\n")
open("blob.bin", "wb").write(bytes(range(256)))
os.symlink("/etc/passwd", "leak")
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Path:
    lab = tmp_path_factory.mktemp("outputs") / "lab"
    exp = lab / "made"
    write(exp / "maker.py", MAKER)
    write(exp / "experiment.yaml", f"""
        name: made
        trials: 1
        workspace: {{}}
        runtime: {{kind: command, argv: [{json.dumps(sys.executable)},
                   {json.dumps(str(exp / "maker.py"))}]}}
        sensor: {{kind: file_exists, path: notes.txt}}
        """)
    write(exp / "cases" / "a.md", "---\nexpectation: must_trigger\n---\nx\n")
    r = ix_in_process("run", "--lab", str(lab))
    assert r.code == 0, r.output
    return lab


@pytest.fixture(scope="module")
def client(lab: Path) -> TestClient:
    return TestClient(create_app(lab), base_url="http://127.0.0.1")


def run_id(lab: Path) -> str:
    (run,) = (lab / "made" / "results" / "runs").iterdir()
    return run.name


def output_url(lab: Path, path: str) -> str:
    return (f"/runs/{run_id(lab)}/output?subject=made&case=a&trial=0&attempt=0"
            f"&file={quote(path)}")


def test_the_trial_page_lists_the_outputs_text_inline_escaped(lab: Path, client: TestClient):
    page = client.get(f"/runs/{run_id(lab)}/trial?subject=made&case=a&trial=0")
    assert page.status_code == 200
    html = page.text
    assert "Files the subject made" in html and "(3)" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; all done" in html  # inline, escaped
    assert "<script>alert(1)" not in html
    assert "not kept: a symbolic link" in html
    assert html.count(">download</a>") == 2  # the text and the binary file; not the link


def test_an_output_downloads_as_bytes_never_as_a_page(lab: Path, client: TestClient):
    got = client.get(output_url(lab, "blob.bin"))
    assert got.status_code == 200 and got.content == bytes(range(256))
    assert got.headers["content-type"] == "application/octet-stream"
    assert got.headers["content-disposition"].startswith("attachment")
    notes = client.get(output_url(lab, "notes.txt"))
    assert notes.headers["content-type"] == "application/octet-stream"


@pytest.mark.parametrize("path", ["leak", "../../spec.yaml", "/etc/passwd", "nope.txt"])
def test_a_path_the_trial_did_not_keep_is_not_found(lab: Path, client: TestClient, path: str):
    got = client.get(output_url(lab, path))
    assert got.status_code == 404 and "kept no output" in got.text


def test_a_copy_changed_after_the_run_is_not_served(lab: Path, client: TestClient,
                                                    tmp_path: Path):
    (kept,) = (lab / "made" / "results" / "runs").glob("*/artifacts/made/a/0/blob.bin")
    original = kept.read_bytes()
    try:
        kept.write_bytes(b"tampered")
        got = client.get(output_url(lab, "blob.bin"))
        assert got.status_code == 404 and "changed after the run kept it" in got.text
    finally:
        kept.write_bytes(original)


def test_an_output_request_without_a_file_is_400(lab: Path, client: TestClient):
    got = client.get(f"/runs/{run_id(lab)}/output?subject=made&case=a&trial=0")
    assert got.status_code == 400 and "file: which output" in got.text
