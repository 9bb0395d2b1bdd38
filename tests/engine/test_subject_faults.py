"""Subjects that misbehave: each fault is recorded on its own trial, never stops the run, and
never makes `ix` hold more than a bounded amount of memory.

The real `ix run` in a subprocess, against a real program (`command` runtime: a small Python
script that hangs, crashes, prints garbage, 10 MB or invalid UTF-8, depending on the case) and
a real HTTP server on 127.0.0.1 (`http` runtime: one route per fault). The `ix` process is
started by a tiny wrapper that reports the peak resident memory of `ix` and what it ran
(`RUSAGE_CHILDREN`), so the bound is measured, not guessed.
"""

import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import psutil
import pytest

from conftest import _ix_argv, case, write

PY = sys.executable
MB = 1 << 20
HUGE = 10 * MB
CAP = MB  # the runtimes' default max_output_bytes
RSS_LIMIT_MB = 300
INVALID_UTF8 = b"caf\xe9 \xff\xfe ok \xe2\x82\n"  # latin-1, lone bytes, a cut-off euro sign

SUBJECT = r'''
import json, os, signal, subprocess, sys, time
mode, marker = sys.argv[1], sys.argv[2]
out = sys.stdout.buffer
if mode == "ok":
    out.write(json.dumps({"ok": True}).encode())
elif mode == "hang":
    # a child of its own too: the whole process group must go when the trial times out
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", marker])
    time.sleep(120)
elif mode == "exit":
    sys.stderr.write("giving up\n")
    sys.exit(3)
elif mode == "signal":
    os.kill(os.getpid(), signal.SIGKILL)
elif mode == "raise":
    raise RuntimeError("the subject fell over")
elif mode == "garbage":
    out.write(bytes(range(256)) * 64)
elif mode == "huge":
    chunk = b'{"ok": true, "pad": "' + b"x" * (1 << 16) + b'"}\n'
    for _ in range(HUGE // len(chunk) + 1):
        out.write(chunk)
    sys.stderr.buffer.write(b"e" * HUGE)
elif mode == "badutf8":
    out.write(INVALID)
out.flush()
'''.replace("HUGE", str(HUGE)).replace("INVALID", repr(INVALID_UTF8))

RSS_WRAPPER = textwrap.dedent("""
    import json, resource, subprocess, sys
    proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
    print(json.dumps({"code": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr,
                      "peak_kib": peak}))
""")


def run_measured(*args: str, cwd: Path, timeout: float = 120) -> tuple[int, str, str, float]:
    """`ix ARGS` through the wrapper: exit code, stdout, stderr and peak RSS in MB (the largest
    of `ix` and every process it waited for)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("IX_")}
    env.update(XDG_CONFIG_HOME=str(cwd / ".no-user-config"), NO_COLOR="1", COLUMNS="200")
    wrapper = cwd / "rss_wrapper.py"
    wrapper.write_text(RSS_WRAPPER)
    proc = subprocess.run([PY, str(wrapper), *_ix_argv(), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    return report["code"], report["stdout"], report["stderr"], report["peak_kib"] / 1024


def trial_lines(experiment: Path) -> list[bytes]:
    return (experiment / "results" / "trials.jsonl").read_bytes().splitlines()


def by_case(experiment: Path) -> dict[str, dict]:
    return {r["probe_id"]: r for r in map(json.loads, trial_lines(experiment))}


def processes_with(marker: str) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        if marker in (p.info["cmdline"] or []):
            found.append(p)
    return found


# --------------------------------------------------------------------------- command

COMMAND_CASES = ["ok", "hang", "exit", "signal", "raise", "garbage", "huge", "badutf8"]


@pytest.mark.slow
def test_command_subject_faults_are_recorded_per_trial_with_bounded_memory(lab: Path,
                                                                           tmp_path: Path):
    marker = f"ix-fault-orphan-{uuid.uuid4().hex}"
    d = lab / "faults"
    write(d / "subject.py", SUBJECT)
    write(d / "experiment.yaml", f"""
        name: faults
        trials: 1
        timeout_s: 3
        concurrency: 8
        runtime:
          kind: command
          argv: [{json.dumps(PY)}, {json.dumps(str(d / "subject.py"))}, "{{{{ prompt }}}}",
                 {marker}]
        sensor: {{kind: matcher, json_path: ok, equals: true}}
        """)
    for mode in COMMAND_CASES:
        case(d, mode, "must_trigger", mode)

    code, out, err, peak_mb = run_measured("run", "--lab", str(lab), "--json", cwd=tmp_path)

    assert code == 0, out + err  # faults are results or errored trials, never a failed run
    assert "Traceback" not in err
    summary = json.loads(out)
    assert summary["errors"] == 1  # only the hang is an error; the rest are observations
    assert peak_mb < RSS_LIMIT_MB, f"peak RSS {peak_mb:.0f} MB"
    t = by_case(d)
    assert set(t) == set(COMMAND_CASES)

    assert t["ok"]["error"] is None and t["ok"]["reading"]["passed"] is True

    hang = t["hang"]
    assert hang["error"]["kind"] == "timeout" and "timeout_s=3" in hang["error"]["message"]
    assert hang["reading"] is None
    deadline = time.monotonic() + 5
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not processes_with(marker), "the hanging subject's child outlived its trial"

    assert t["exit"]["error"] is None
    assert t["exit"]["observation"]["exit_code"] == 3
    assert t["exit"]["observation"]["stderr"] == "giving up\n"
    assert t["signal"]["observation"]["exit_code"] == -9  # killed by SIGKILL
    assert t["raise"]["observation"]["exit_code"] == 1
    assert "RuntimeError: the subject fell over" in t["raise"]["observation"]["stderr"]
    for mode in ("exit", "signal", "raise"):
        assert t[mode]["reading"]["passed"] is False
        assert "is not JSON" in t[mode]["reading"]["details"]

    garbage = t["garbage"]
    assert garbage["error"] is None and garbage["reading"]["passed"] is False
    assert "is not JSON" in garbage["reading"]["details"]
    assert "\ufffd" in garbage["observation"]["stdout"]

    huge = t["huge"]
    obs = huge["observation"]
    assert huge["error"] is None
    assert obs["meta"] == {"truncated": True, "stdout_bytes": obs["meta"]["stdout_bytes"],
                           "stderr_bytes": HUGE, "max_output_bytes": CAP}
    assert obs["meta"]["stdout_bytes"] >= HUGE  # the full size is recorded, the text is not
    assert len(obs["stdout"].encode()) <= CAP and len(obs["stderr"].encode()) <= CAP
    assert obs["stdout"].startswith('{"ok": true, "pad": "xxx')
    assert huge["reading"]["passed"] is False  # the cut JSON no longer parses: judged so
    # content and stdout (the same text) and stderr, each at most the cap, and a little more
    longest = max(len(line) for line in trial_lines(d))
    assert longest < 3 * CAP + 16 * 1024, f"a trial line of {longest} bytes"

    bad = t["badutf8"]["observation"]
    assert bad["stdout"] == INVALID_UTF8.decode("utf-8", "replace")
    assert bad["stdout"].startswith("caf\ufffd \ufffd\ufffd ok")
    assert t["badutf8"]["error"] is None


def test_a_subject_cut_at_a_lower_cap_records_the_cap(lab: Path, tmp_path: Path):
    """`max_output_bytes` is an option: a trial line is as small as the user asks."""
    d = lab / "capped"
    write(d / "subject.py", SUBJECT)
    write(d / "experiment.yaml", f"""
        name: capped
        trials: 1
        runtime:
          kind: command
          argv: [{json.dumps(PY)}, {json.dumps(str(d / "subject.py"))}, huge, none]
          max_output_bytes: 4096
        sensor: exit_code
        """)
    case(d, "huge", "must_trigger")
    code, out, err, _ = run_measured("run", "--lab", str(lab), "--json", cwd=tmp_path)
    assert code == 0, out + err
    obs = by_case(d)["huge"]["observation"]
    assert obs["meta"]["truncated"] is True and obs["meta"]["max_output_bytes"] == 4096
    assert len(obs["stdout"]) == 4096 and len(obs["stderr"]) == 4096
    assert obs["exit_code"] == 0  # the program was read to its end: its exit code is real
    assert max(len(line) for line in trial_lines(d)) < 16 * 1024


# --------------------------------------------------------------------------- http

class Faulty(BaseHTTPRequestHandler):
    """GET /<fault>: a well-formed answer, or one fault per route."""

    protocol_version = "HTTP/1.1"
    release = threading.Event()

    def log_message(self, *args):
        pass

    def _send(self, status: int, body: bytes, content_type: str = "application/json",
              length: int | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        fault = self.path.strip("/")
        if fault == "ok":
            self._send(200, b'{"ok": true}')
        elif fault == "hang":
            self.release.wait(60)
        elif fault == "crash":  # the connection drops without an answer
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
        elif fault == "torn":  # promises more than it sends, then drops
            self._send(200, b'{"ok": tr', length=1000)
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
        elif fault == "error":
            self._send(500, b"internal trouble")
        elif fault == "garbage":
            self._send(200, bytes(range(256)) * 64)
        elif fault == "huge":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(HUGE))
            self.end_headers()
            chunk = b"x" * (1 << 16)
            try:
                for _ in range(HUGE // len(chunk)):
                    self.wfile.write(chunk)
            except OSError:
                pass  # the client stopped reading at its cap: expected
        elif fault == "badutf8":
            self._send(200, INVALID_UTF8, content_type="text/plain")
        else:
            self._send(404, b"{}")


@pytest.fixture
def faulty_server() -> Iterator[str]:
    Faulty.release.clear()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Faulty)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    Faulty.release.set()
    httpd.shutdown()
    httpd.server_close()


HTTP_CASES = ["ok", "hang", "crash", "torn", "error", "garbage", "huge", "badutf8"]


def test_http_subject_faults_are_recorded_per_trial_with_bounded_memory(lab: Path,
                                                                        tmp_path: Path,
                                                                        faulty_server: str):
    d = lab / "http-faults"
    write(d / "experiment.yaml", f"""
        name: http-faults
        trials: 1
        timeout_s: 3
        concurrency: 8
        runtime:
          kind: http
          method: GET
          url: "{faulty_server}/{{{{ case.id }}}}"
          retries: 0
        sensor: {{kind: matcher, json_path: ok, equals: true, target: body}}
        """)
    for fault in HTTP_CASES:
        case(d, fault, "must_trigger", fault)

    code, out, err, peak_mb = run_measured("run", "--lab", str(lab), "--json", cwd=tmp_path)

    assert code == 0, out + err
    assert "Traceback" not in err
    assert peak_mb < RSS_LIMIT_MB, f"peak RSS {peak_mb:.0f} MB"
    t = by_case(d)
    assert set(t) == set(HTTP_CASES)
    assert t["ok"]["error"] is None and t["ok"]["reading"]["passed"] is True

    kinds = {name: (rec["error"] or {}).get("kind") for name, rec in t.items()}
    assert kinds == {"ok": None, "hang": "timeout", "crash": "connection_error",
                     "torn": "connection_error", "error": "server_error", "garbage": None,
                     "huge": None, "badutf8": None}
    assert json.loads(out)["errors"] == 4
    assert "HTTP 500: internal trouble" in t["error"]["error"]["message"]
    for name in ("hang", "crash", "torn", "error"):
        assert t[name]["reading"] is None

    garbage = t["garbage"]
    assert garbage["reading"]["passed"] is False
    assert "is not JSON" in garbage["reading"]["details"]
    assert "\ufffd" in garbage["observation"]["body"]

    huge = t["huge"]["observation"]
    assert huge["meta"] == {"truncated": True, "max_output_bytes": CAP}
    assert len(huge["body"]) == CAP and huge["status"] == 200
    assert max(len(line) for line in trial_lines(d)) < 2 * CAP + 16 * 1024  # content, body

    bad = t["badutf8"]["observation"]
    assert bad["body"] == INVALID_UTF8.decode("utf-8", "replace")


def test_an_unreachable_http_subject_is_an_error_per_trial(lab: Path, tmp_path: Path):
    """Nothing listens on the port: every trial is a `connection_error`, each recorded; the
    run ends `failed` (exit 1: the subject's service, not the lab's configuration)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    d = lab / "unreachable"
    write(d / "experiment.yaml", f"""
        name: unreachable
        trials: 2
        runtime: {{kind: http, method: GET, url: "http://127.0.0.1:{port}/x", retries: 1,
                   backoff_s: 0}}
        sensor: http_status
        """)
    case(d, "a", "must_trigger")
    case(d, "b", "should_not_trigger")
    code, out, err, _ = run_measured("run", "--lab", str(lab), "--json", cwd=tmp_path)
    assert code == 1, out + err
    assert json.loads(out)["run_status"] == "failed" and "connection_error" in err
    records = [json.loads(x) for x in trial_lines(d)]
    assert len(records) == 4
    assert {r["error"]["kind"] for r in records} == {"connection_error"}
    assert all("gave up after 2 tries" in r["error"]["message"] for r in records)

