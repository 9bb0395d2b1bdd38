"""A run says plainly when it did not work (issue 16 §1, DESIGN.md §8): every trial of a
subject errored -> `failed` with the reason on stderr and in the summary, exit 2 when the
lab's configuration is the cause and 1 otherwise; a circuit breaker or a budget -> `cancelled`
with its `stop_reason`; errored trials -> an error block under the run's table. And (§8)
`spec.yaml`'s `sources.runtime` and `ix run --dry-run`'s token estimates tell the truth.
Each exit code (2, 1, 130, 0) and the dry run's text are the real command's; what a run records
and reports is asked in process (`ix_in_process`, the same `main`)."""

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from conftest import case, flat, ix_in_process, mock_experiment, run_ix, write

COLS80 = {"COLUMNS": "80"}


def _skill_lab(lab: Path, runtime: str | None, skill: str = "xlsx") -> Path:
    write(lab / "skills" / "xlsx" / "SKILL.md",
          "---\nname: xlsx\ndescription: Create and edit Excel spreadsheets.\n---\nBody\n")
    d = lab / "exp"
    write(d / "experiment.yaml", f"name: exp\nskill: {skill}\ntrials: 1\n"
          + (f"runtime: {runtime}\n" if runtime else ""))
    for i in range(1, 4):
        case(d, f"must-{i:03d}", "must_trigger", f"Make a spreadsheet of sales {i}")
        case(d, f"not-{i:03d}", "should_not_trigger", f"Write a poem about the sea {i}")
    return d


def _spec(d: Path) -> dict:
    (run,) = (d / "results" / "runs").iterdir()
    return yaml.safe_load((run / "spec.yaml").read_text(encoding="utf-8"))


def _summary(d: Path) -> dict:
    return json.loads((d / "results" / "summary-latest.json").read_text(encoding="utf-8"))


def test_no_api_key_fails_the_run_with_the_reason_and_exits_2(lab):
    """The default runtime (claude-code) without ANTHROPIC_API_KEY: not `completed`/exit 0
    with F1 0.000, but `failed`, what to do on stderr and in the summary, exit 2."""
    d = _skill_lab(lab, runtime=None)
    r = run_ix("run", "--lab", str(lab), env={**COLS80, "ANTHROPIC_API_KEY": "",
                                               "ANTHROPIC_AUTH_TOKEN": ""})
    assert r.code == 2, r.output
    last = flat(r.stderr).splitlines()[-1]
    assert "failed" in last and "missing_api_key" in last
    assert "ANTHROPIC_API_KEY is not set — set it, or choose `runtime: lexical`" in last
    s = _summary(d)
    assert s["run_status"] == "failed" == _spec(d)["status"]
    assert "missing_api_key" in s["reason"] and "runtime: lexical" in s["reason"]
    assert _spec(d)["reason"] == s["reason"]
    assert s["interpretation"]["status"] == "no_data"  # not "poor": nothing was measured
    (f,) = s["failed_subjects"]
    assert (f["subject"], f["kind"], f["trials"], f["configuration"]) == (
        "xlsx", "missing_api_key", 6, True)
    # the error block under the table: the kind, its count, one example, what to do
    assert "missing_api_key: 6" in r.stdout and "e.g. claude-code: set ANTHROPIC_API_KEY" \
        in r.stdout
    assert "F1 0.000" not in r.stdout and "all trials errored" in r.stdout
    assert "no goal: F1 of xlsx n/a" in r.stdout
    assert "…" not in r.output
    # --json: the summary on stdout, the reason still on stderr, the same exit code
    j = ix_in_process("run", "--lab", str(lab), "--json", env={"ANTHROPIC_API_KEY": "",
                                                               "ANTHROPIC_AUTH_TOKEN": ""})
    assert j.code == 2 and json.loads(j.stdout)["run_status"] == "failed"
    assert "missing_api_key" in flat(j.stderr)


def test_a_command_not_found_is_a_configuration_failure(lab):
    d = lab / "cmd"
    write(d / "experiment.yaml", "name: cmd\nskill: t\ntrials: 2\nsensor: exit_code\n"
          "runtime: {kind: command, argv: [no-such-program-ix-16, '{{ prompt }}']}\n")
    case(d, "must-001", "must_trigger")
    case(d, "not-001", "should_not_trigger")
    r = run_ix("run", "--lab", str(lab), env=COLS80)
    assert r.code == 2, r.output
    said = flat(r.stderr)
    assert "command_not_found" in said and "not installed or not on PATH" in said
    assert _summary(d)["run_status"] == "failed"
    # every format of `ix report` says why, under the run's id
    for fmt in ("table", "md", "json"):
        rep = ix_in_process("report", "--lab", str(lab), "--format", fmt, env=COLS80)
        assert rep.code == 0, rep.output
        words = " ".join(rep.stdout.replace("\\", "").split())
        assert "every trial of subject t errored" in words and "command_not_found" in words


@pytest.fixture
def failing_server() -> Iterator[str]:
    """A loopback HTTP server that answers every request 500."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = b"internal error: the model backend is down"
            self.send_response(500)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_a_subject_whose_service_errors_fails_the_run_with_exit_1(lab, failing_server):
    """Every trial errored, but not of the lab's configuration: `failed`, exit 1; a second
    subject that works is reported as it is, and the error block counts per subject."""
    d = lab / "svc"
    write(d / "experiment.yaml", f"""
        name: svc
        trials: 1
        sensor: http_status
        subjects:
          - name: up
            runtime: {{kind: mock, default_rate: 1.0}}
          - name: down
            runtime: {{kind: http, url: "{failing_server}", body: "{{{{ prompt }}}}",
                       retries: 0}}
        """)
    case(d, "must-001", "must_trigger")
    case(d, "must-002", "must_trigger")
    case(d, "not-001", "should_not_trigger")
    r = run_ix("run", "--lab", str(lab), env=COLS80)
    assert r.code == 1, r.output
    s = _summary(d)
    assert s["run_status"] == "failed"
    (f,) = s["failed_subjects"]
    assert (f["subject"], f["kind"], f["configuration"]) == ("down", "server_error", False)
    assert "HTTP 500" in f["example"] and "every trial of subject down errored" in s["reason"]
    (g,) = s["errors_by_kind"]
    assert g["subjects"] == {"down": 3} and g["count"] == 3
    assert "server_error: 3 (down 3)" in r.stdout
    said = flat(r.stderr)
    assert "run " in said and "failed" in said and "server_error" in said


def test_some_errored_trials_complete_the_run_with_an_error_block(lab):
    """Errors that leave valid trials: `completed`, exit 0, and the block under the table."""
    d = mock_experiment(lab, rates={"must-001": 1.0}, trials=3, n_edge=0,
                        runtime_extra="error_rates: {not-001: 1.0}")
    r = ix_in_process("run", "--lab", str(lab), env=COLS80)
    assert r.code == 0, r.output
    s = _summary(d)
    assert s["run_status"] == "completed" and s["reason"] is None
    assert s["failed_subjects"] == []
    assert [(g["kind"], g["count"]) for g in s["errors_by_kind"]] == [("runtime_error", 3)]
    assert "3 errored trial(s), not counted in the metrics:" in r.stdout
    assert "runtime_error: 3" in r.stdout and "e.g. mock: simulated error on not-001" \
        in r.stdout


def test_the_circuit_breaker_cancels_the_run_with_its_stop_reason(lab):
    """One case always errors, the others work: the breaker stops the subject after 3 errors
    in a row; the run is `cancelled` (stop_cause breaker), exit 130, not `completed`."""
    d = lab / "b"
    write(d / "experiment.yaml", "name: b\nskill: t\ntrials: 4\nconcurrency: 1\n"
          "runtime: {kind: mock, default_rate: 1.0, error_rates: {c01: 1.0}}\n")
    for i in range(3):
        case(d, f"c{i:02d}", "must_trigger")
    r = run_ix("run", "--lab", str(lab), "--max-consecutive-errors", "3", "--json")
    assert r.code == 130, r.output
    s = json.loads(r.stdout)
    assert s["run_status"] == "cancelled" == _spec(d)["status"]
    assert s["stop_cause"] == "breaker" == _spec(d)["stop_cause"]
    assert s["stop_reason"].startswith("circuit breaker: t stopped after 3 consecutive")
    assert "cancelled (circuit breaker" in flat(r.stderr)


def test_a_budget_cancels_the_run_with_stop_cause_budget(lab):
    d = mock_experiment(lab, rates={"must-001": 1.0}, trials=5)
    r = ix_in_process("run", "--lab", str(lab), "--max-trials", "4", "--json")
    assert r.code == 130
    s = json.loads(r.stdout)
    assert (s["run_status"], s["stop_cause"], s["stop_reason"]) == (
        "cancelled", "budget", "--max-trials 4 reached")
    assert _spec(d)["stop_cause"] == "budget"


def test_a_resumed_run_keeps_the_kinds_of_its_earlier_errors(lab):
    """The error block of a resumed run covers the errored trials it was started with."""
    mock_experiment(lab, rates={"must-001": 1.0}, trials=2, n_edge=0,
                    runtime_extra="error_rates: {must-001: 1.0}")
    assert ix_in_process("run", "--lab", str(lab), "--max-trials", "3").code == 130
    r = ix_in_process("run", "--lab", str(lab), "--resume", "--json")
    assert r.code == 0, r.output
    s = json.loads(r.stdout)
    assert s["errors"] == 2
    assert [(g["kind"], g["count"]) for g in s["errors_by_kind"]] == [("runtime_error", 2)]


def test_spec_records_where_the_runtime_came_from(lab):
    """`sources.runtime` names experiment.yaml when it sets the runtime (it said `built-in
    default`), `--runtime` when the flag does."""
    d = mock_experiment(lab, rates={"must-001": 1.0}, trials=1)
    assert ix_in_process("run", "--lab", str(lab)).code == 0
    assert _spec(d)["sources"]["runtime"] == "experiment.yaml"
    other = lab / "other"
    write(other / "experiment.yaml", "name: other\nskill: t\ntrials: 1\n")
    case(other, "must-001", "must_trigger")
    case(other, "not-001", "should_not_trigger")
    write(lab / "ix.yaml", "runtime: {kind: mock, default_rate: 0.5}\n")
    assert ix_in_process("run", "--lab", str(lab), "other").code == 0
    assert _spec(other)["sources"]["runtime"] == str(lab / "ix.yaml")
    for run in (other / "results" / "runs").iterdir():
        import shutil

        shutil.rmtree(run)
    assert ix_in_process("run", "--lab", str(lab), "other", "--runtime", "random").code == 0
    assert _spec(other)["sources"]["runtime"] == "--runtime"


def test_dry_run_estimates_tokens_only_for_runtimes_that_spend_them(lab):
    _skill_lab(lab, runtime="lexical")
    r = run_ix("run", "--lab", str(lab), "--dry-run", env=COLS80)
    assert r.code == 0 and "6 trials on lexical" in r.stdout
    assert "token" not in r.stdout
    j = json.loads(ix_in_process("run", "--lab", str(lab), "--dry-run", "--json").stdout)
    assert j[0]["subjects"][0]["estimated_input_tokens"] is None
    r = ix_in_process("run", "--lab", str(lab), "--dry-run", "--runtime", "claude-code",
                      env=COLS80)
    assert r.code == 0 and "input tokens" in r.stdout


def test_dry_run_shows_every_factor_of_its_total(lab):
    """cases × subjects × trials = total (issue 33: the subjects were left out), after a
    filter too; the --json plan keeps its fields."""
    d = lab / "exp"
    write(d / "experiment.yaml", "name: exp\ntrials: 3\nruntime: {kind: mock, default_rate: "
          "0.5}\nsubjects:\n" + "".join(f"  - name: s{i}\n" for i in range(4)))
    for i in range(1, 4):
        case(d, f"must-{i:03d}", "must_trigger", f"Make a spreadsheet of sales {i}")
        case(d, f"not-{i:03d}", "should_not_trigger", f"Write a poem about the sea {i}")
    r = ix_in_process("run", "--lab", str(lab), "--dry-run", env=COLS80)
    assert r.code == 0, r.output
    assert r.stdout.splitlines()[0] == "exp: 6 cases × 4 subjects × 3 trials = 72 trials"
    r = ix_in_process("run", "--lab", str(lab), "--dry-run", "--filter", "must-*", "--trials",
                      "auto", env=COLS80)
    assert r.stdout.splitlines()[0] == ("exp: 3 cases × 4 subjects × up to 9 trials = up to "
                                        "108 trials"), r.stdout
    assert "filters must-*" in r.stdout
    [plan] = json.loads(ix_in_process("run", "--lab", str(lab), "--dry-run", "--json").stdout)
    assert (plan["cases"], len(plan["subjects"]), plan["trials_per_case"],
            plan["total_trials"]) == (6, 4, "3", 72)
