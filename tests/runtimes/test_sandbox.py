"""`sandbox: {network: false}` on the `command` runtime: the program cannot reach even a
server on the loopback that it reaches without the sandbox; where no namespace can be made,
the run stops before any trial (exit 2, the reason), never runs unisolated."""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import run_ix, write
from ix.engine.plan import Overrides, build_plan
from ix.engine.run import run_plan
from ix.lab.loader import load_experiment

PROBE = ("import sys, urllib.request\n"
         "try:\n"
         "    print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())\n"
         "except OSError as e:\n"
         "    print('no network:', type(e).__name__)\n")


class Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"hello")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()


def lab_with(lab: Path, url: str, sandbox: str) -> Path:
    exp = lab / "net"
    write(exp / "probe.py", PROBE)
    write(exp / "experiment.yaml", f"""
        name: net
        trials: 1
        runtime:
          kind: command
          argv: [{json.dumps(sys.executable)}, {json.dumps(str(exp / "probe.py"))}, "{url}"]
          {sandbox}
        sensor: {{kind: matcher, contains: hello, target: stdout}}
        """)
    write(exp / "cases" / "a.md", "---\nexpectation: should_not_trigger\n---\nx\n")
    return exp


@pytest.mark.parametrize(("sandbox", "reached"), [
    ("", True), ("sandbox: {network: true}", True), ("sandbox: {network: false}", False)])
def test_without_a_network_the_program_reaches_not_even_the_loopback(lab, server, sandbox,
                                                                     reached):
    exp = lab_with(lab, server, sandbox)
    run_plan(build_plan(load_experiment(exp, lab), Overrides()))
    (line,) = [json.loads(x) for x in (exp / "results" / "trials.jsonl").read_text().split("\n")
               if x]
    assert line["error"] is None
    assert line["observation"]["stdout"].strip() == ("hello" if reached else
                                                     "no network: URLError")


def test_where_no_namespace_can_be_made_the_run_stops_with_the_reason(lab, tmp_path):
    exp = lab_with(lab, "http://127.0.0.1:9/", "sandbox: {network: false}")
    empty = tmp_path / "bin"
    empty.mkdir()
    r = run_ix("run", "--lab", str(lab), env={"PATH": str(empty)})
    assert r.code == 2 and "network: false cannot be honoured" in r.stderr
    assert "unshare" in r.stderr and "Traceback" not in r.stderr
    assert not (exp / "results").exists()
