"""Capability tests end to end: `command` and `http` subjects judged by capability sensors,
through `ix run --json` on a lab written to disk. In the real `ix` (`run_ix`): a `command`
run (exit 0, what its program received and printed), the refusals of a bad sensor and runtime
(`ix run`, `ix validate`: exit 2), a trial timeout (exit 1, its program killed) and Ctrl-C;
the rest of the same command's logic (a second sensor, the `http` runs) through
`ix_in_process`."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import psutil
import pytest

from conftest import _ix_argv, case, ix_in_process, run_ix, write

PY = sys.executable

TOOL = """
import sys
prompt = sys.argv[1]
if prompt.startswith("greet"):
    print("HELLO " + prompt.split()[-1])
    sys.exit(0)
sys.stderr.write("not a greeting\\n")
print("nope")
sys.exit(2)
"""


def trials_of(experiment: Path) -> list[dict]:
    lines = (experiment / "results" / "trials.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def command_experiment(lab: Path, name: str, sensor_yaml: str, *, trials: int = 2,
                       extra: str = "") -> Path:
    d = lab / name
    write(d / "tool.py", TOOL)
    write(d / "experiment.yaml", f"""
        name: {name}
        trials: {trials}
        runtime:
          kind: command
          argv: [{json.dumps(PY)}, {json.dumps(str(d / "tool.py"))}, "{{{{ prompt }}}}"]
        {sensor_yaml}
        {extra}
        """)
    case(d, "greet-bob", "must_trigger", "greet bob")
    case(d, "greet-ann", "must_trigger", "greet ; rm -rf / $(whoami) | ann")
    case(d, "weather", "should_not_trigger", "what is the weather")
    case(d, "maybe", "acceptable", "greet maybe")
    return d


def test_command_with_matcher_must_trigger_means_the_sensor_passes(lab):
    exp = command_experiment(lab, "greet", "sensor: {kind: matcher, contains: HELLO}")
    r = run_ix("run", "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    summary = json.loads(r.stdout)
    m = summary["metrics"]
    assert (m["tp"], m["fn"], m["fp"], m["tn"]) == (2, 0, 0, 1)
    assert m["f1"] == 1.0 and summary["errors"] == 0
    scores = {p["probe_id"]: p["score"] for p in summary["probe_results"]}
    assert scores == {"greet-bob": 1.0, "greet-ann": 1.0, "weather": 0.0}
    records = trials_of(exp)
    assert len(records) == 3 * 2
    by_case = {rec["probe_id"]: rec for rec in records}
    bob = by_case["greet-bob"]["observation"]
    assert bob["exit_code"] == 0 and bob["stdout"] == "HELLO bob\n" and bob["stderr"] == ""
    assert by_case["greet-ann"]["observation"]["stdout"] == "HELLO ann\n"  # no shell
    weather = by_case["weather"]
    assert weather["observation"]["exit_code"] == 2
    assert weather["observation"]["stderr"] == "not a greeting\n"
    assert weather["reading"]["sensor_name"] == "matcher"
    assert weather["reading"]["passed"] is False and weather["reading"]["score"] == 0.0


def test_exit_code_and_two_sensors_give_readings(lab):
    exp = command_experiment(lab, "greet2", """sensors:
          - {kind: exit_code}
          - {kind: matcher, regex: "^HELLO [a-z]+$"}""", trials=1)
    r = ix_in_process("run", "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    m = json.loads(r.stdout)["metrics"]
    assert (m["tp"], m["fn"], m["fp"], m["tn"]) == (2, 0, 0, 1)  # judged by the first
    for rec in trials_of(exp):
        readings = rec["readings"]
        assert [x["sensor_name"] for x in readings] == ["exit_code", "matcher"]
        assert rec["reading"] == readings[0]
        ok = rec["probe_id"].startswith("greet")
        assert readings[0]["passed"] is ok and readings[1]["passed"] is ok
        assert readings[0]["metrics"] == {"exit_code": 0 if ok else 2}


def test_bad_sensor_and_runtime_options_stop_before_any_trial(lab):
    exp = command_experiment(lab, "bad", "sensor: {kind: matcher, regex: '('}")
    r = run_ix("run", "--lab", str(lab))
    assert r.code == 2 and "sensor.regex" in r.output and "Traceback" not in r.output
    assert not (exp / "results" / "trials.jsonl").exists()
    write(exp / "experiment.yaml", """
        name: bad
        runtime: {kind: command, argv: [echo, "{{ prompt "]}
        sensor: exit_code
        """)
    r = run_ix("validate", "--lab", str(lab))
    assert r.code == 2 and "runtime.argv: argv[1]: template error" in r.output


def test_a_trial_timeout_kills_the_program_and_is_recorded(lab):
    d = lab / "slow"
    write(d / "experiment.yaml", f"""
        name: slow
        trials: 1
        timeout_s: 0.5
        runtime:
          kind: command
          argv: [{json.dumps(PY)}, "-c", "import time; time.sleep(30)", "ix-e2e-sleeper"]
        sensor: exit_code
        """)
    case(d, "a", "must_trigger")
    case(d, "b", "should_not_trigger")
    # a subprocess: the programs ix kills are looked for among the processes left running
    r = run_ix("run", "--lab", str(lab), "--json", timeout=60)
    # every trial timed out: the run failed, not for its configuration (exit 1)
    assert r.code == 1, r.output
    assert json.loads(r.stdout)["errors"] == 2
    assert json.loads(r.stdout)["run_status"] == "failed"
    assert {rec["error"]["kind"] for rec in trials_of(d)} == {"timeout"}
    assert not _sleepers("ix-e2e-sleeper")


def _sleepers(marker: str) -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["cmdline"]) if marker in (p.info["cmdline"] or [])]


@pytest.mark.slow
def test_ctrl_c_cancels_the_run_and_leaves_no_program_running(lab):
    d = lab / "interrupted"
    write(d / "experiment.yaml", f"""
        name: interrupted
        trials: 3
        concurrency: 4
        runtime:
          kind: command
          argv: [{json.dumps(PY)}, "-c", "import time; time.sleep(60)", "ix-e2e-ctrl-c"]
        sensor: exit_code
        """)
    case(d, "a", "must_trigger")
    case(d, "b", "should_not_trigger")
    env = {k: v for k, v in os.environ.items() if not k.startswith("IX_")}
    proc = subprocess.Popen([*_ix_argv(), "run", "--lab", str(lab)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while len(_sleepers("ix-e2e-ctrl-c")) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(_sleepers("ix-e2e-ctrl-c")) == 4
    proc.send_signal(signal.SIGINT)  # the first lets trials in flight finish...
    time.sleep(0.3)
    assert len(_sleepers("ix-e2e-ctrl-c")) == 4
    proc.send_signal(signal.SIGINT)  # ...the second cancels them, programs included
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, out + err
    assert "Traceback" not in out + err
    assert not _sleepers("ix-e2e-ctrl-c")


# --- http ---

class Classifier(BaseHTTPRequestHandler):
    """POST /classify {"text": ...}: 400 for empty text, else {"label": "spam"|"ham"}."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        data = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.headers.get("X-Key") != "k-123":
            status, reply = 401, {"error": "no key"}
        elif not data["text"].strip("- "):
            status, reply = 400, {"error": "empty text"}
        else:
            label = "spam" if "win" in data["text"] else "ham"
            status, reply = 200, {"label": label, "case": data["case"]}
        body = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def service() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Classifier)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def http_experiment(lab: Path, name: str, url: str, sensor_yaml: str) -> Path:
    d = lab / name
    write(d / "experiment.yaml", f"""
        name: {name}
        trials: 2
        runtime:
          kind: http
          url: {url}/classify
          headers: {{X-Key: "{{{{ env.IX_E2E_KEY }}}}"}}
          body: {{text: "{{{{ prompt }}}}", case: "{{{{ case.id }}}}"}}
        {sensor_yaml}
        """)
    return d


def test_http_status_sensor_on_a_local_service(lab, service):
    d = http_experiment(lab, "status", service, "sensor: {kind: http_status, expected: 200}")
    case(d, "text", "must_trigger", "win a prize")
    case(d, "empty", "should_not_trigger", "---")
    r = ix_in_process("run", "--lab", str(lab), "--json", env={"IX_E2E_KEY": "k-123"})
    assert r.code == 0, r.output
    m = json.loads(r.stdout)["metrics"]
    assert (m["tp"], m["fn"], m["fp"], m["tn"]) == (1, 0, 0, 1)
    records = {rec["probe_id"]: rec for rec in trials_of(d)}
    assert records["empty"]["observation"]["status"] == 400  # a result, not an error
    assert records["empty"]["error"] is None
    assert json.loads(records["empty"]["observation"]["body"]) == {"error": "empty text"}
    ok = records["text"]["observation"]
    assert ok["status"] == 200 and ok["headers"]["content-type"] == "application/json"
    assert "k-123" not in (d / "results" / "trials.jsonl").read_text()
    spec = next((d / "results" / "runs").glob("*/spec.yaml")).read_text()
    assert "k-123" not in spec


def test_http_json_path_matcher(lab, service):
    d = http_experiment(lab, "spam", service,
                        "sensor: {kind: matcher, json_path: label, equals: spam}")
    case(d, "prize", "must_trigger", "you win a prize")
    case(d, "lunch", "should_not_trigger", "lunch at noon?")
    case(d, "empty", "should_not_trigger", "--")
    r = ix_in_process("run", "--lab", str(lab), "--json", env={"IX_E2E_KEY": "k-123"})
    assert r.code == 0, r.output
    summary = json.loads(r.stdout)
    m = summary["metrics"]
    assert (m["tp"], m["fn"], m["fp"], m["tn"]) == (1, 0, 0, 2)
    records = {rec["probe_id"]: rec for rec in trials_of(d)}
    assert json.loads(records["prize"]["observation"]["body"]) == {"label": "spam",
                                                                   "case": "prize"}
    assert "no key 'label'" in records["empty"]["reading"]["details"]


def test_http_without_the_secret_is_a_template_error_per_trial(lab, service):
    d = http_experiment(lab, "nokey", service, "sensor: http_status")
    case(d, "a", "must_trigger", "hi")
    case(d, "b", "should_not_trigger", "--")
    r = ix_in_process("run", "--lab", str(lab), "--json")
    # every trial failed for a missing secret: a configuration failure, exit 2
    assert r.code == 2, r.output
    assert json.loads(r.stdout)["run_status"] == "failed" and "template_error" in r.stderr
    records = trials_of(d)
    assert {rec["error"]["kind"] for rec in records} == {"template_error"}
    assert "IX_E2E_KEY" in records[0]["error"]["message"]
