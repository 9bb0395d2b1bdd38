"""`ix mcp`: the official MCP client, over a real stdio subprocess running `ix mcp --lab LAB`.

Each test starts the real command, connects with `mcp.ClientSession` and drives the lab the
way Claude Code would: create, validate, plan, run (with progress), read back, compare,
query, and cancel.
"""

import json
import os
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import _ix_argv, mock_experiment
from optimize_lab import make_lab

pytest.importorskip("mcp")

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

TOOLS = {"list_experiments", "show_experiment", "create_experiment", "validate_experiment",
         "plan_power", "run_experiment", "get_summary", "compare_runs", "query_results",
         "optimize_description"}


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IX_")}
    env["XDG_CONFIG_HOME"] = str(tmp / ".no-user-config")
    return env


@asynccontextmanager
async def connected(lab: Path, stderr: Path) -> AsyncIterator[ClientSession]:
    argv = _ix_argv()
    params = StdioServerParameters(command=argv[0], args=[*argv[1:], "mcp", "--lab", str(lab)],
                                   env=_env(lab.parent), cwd=lab.parent)
    with stderr.open("a", encoding="utf-8") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            yield session


def serve(lab: Path, stderr: Path, body: Callable[[ClientSession], Awaitable[None]]) -> None:
    """Run `body` against a fresh `ix mcp` process; its stderr must hold no traceback."""

    async def main() -> None:
        async with connected(lab, stderr) as session:
            with anyio.fail_after(120):
                await body(session)

    anyio.run(main)
    assert "Traceback" not in stderr.read_text(encoding="utf-8")


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool's structured result; the call must succeed."""
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text  # type: ignore[union-attr]
    assert result.structured_content is not None
    # the text a model reads says the same as the structured content
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
    return result.structured_content


async def error(session: ClientSession, tool: str, **arguments: Any) -> str:
    """A tool's error message; the call must fail as a result, not as a protocol error."""
    result = await session.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    return result.content[0].text  # type: ignore[union-attr]


CASES = [
    {"id": "must-001", "expectation": "must_trigger", "prompt": "Profile sales.csv for me."},
    {"id": "must-002", "expectation": "must_trigger", "prompt": "Summarise columns of a.csv",
     "tags": ["csv"], "difficulty": "easy"},
    {"id": "must-003", "expectation": "must_trigger", "prompt": "What is in data.csv?"},
    {"id": "not-001", "expectation": "should_not_trigger", "prompt": "Write a haiku.",
     "rationale": "Nothing to do with CSV files."},
    {"id": "not-002", "expectation": "should_not_trigger", "prompt": "Fix this regex."},
    {"id": "edge-001", "expectation": "acceptable", "prompt": "Average of column B."},
]


def _mock(rates: dict[str, float], **extra: Any) -> dict[str, Any]:
    return {"kind": "mock", "activation_rates": rates, "skill": "csv-summary", **extra}


def test_tools_are_listed_with_strict_described_input_schemas(lab, tmp_path):
    mock_experiment(lab)

    async def body(session: ClientSession) -> None:
        listed = {t.name: t for t in (await session.list_tools()).tools}
        assert set(listed) == TOOLS
        for tool in listed.values():
            assert tool.description and len(tool.description) > 40
            assert tool.input_schema["type"] == "object"
            assert tool.input_schema.get("additionalProperties") is False
        run = listed["run_experiment"].input_schema
        assert run["required"] == ["experiment"]
        assert {"experiment", "trials", "filters", "subjects", "budget"} <= set(run["properties"])
        assert "ctx" not in run["properties"]
        assert set(run["$defs"]["Budget"]["properties"]) == {"max_cost", "max_trials",
                                                              "time_limit"}
        trials = run["properties"]["trials"]["anyOf"]
        assert {"type": "integer", "minimum": 1} in trials
        assert {"const": "auto", "type": "string"} in trials
        create = listed["create_experiment"].input_schema
        assert create["required"] == ["name"]
        case = create["$defs"]["CaseInput"]
        assert set(case["required"]) == {"expectation", "prompt"}
        assert case["properties"]["expectation"]["enum"] == ["must_trigger",
                                                             "should_not_trigger", "acceptable"]
        assert listed["compare_runs"].input_schema["properties"]["runs"]["minItems"] == 2
        assert "group_by" in listed["query_results"].input_schema["properties"]

    serve(lab, tmp_path / "stderr.txt", body)


@pytest.mark.slow
def test_claude_code_designs_runs_and_reads_an_experiment_over_stdio(lab, tmp_path):
    """The issue's "done when": create, validate, plan, run with progress, then read back
    the summary, a comparison of two subjects and one of two runs, and query the trials."""
    mock_experiment(lab, "older")  # a lab with an experiment already in it

    async def body(session: ClientSession) -> None:
        created = await call(
            session, "create_experiment", name="csv-coexist", skill="csv-summary",
            allow_missing=True,
            subjects=["a-only", "a-plus-b"], runtime="mock",
            goal="Adding skill B lowers csv-summary's recall", cases=CASES)
        folder = lab / "csv-coexist"
        assert created["path"] == str(folder)
        assert sorted(created["files"]) == sorted(
            ["README.md", "experiment.yaml"] + [f"cases/{c['id']}.md" for c in CASES])
        assert created["validation"]["ok"], created["validation"]
        assert created["validation"]["cases"] == 5
        assert created["validation"]["skipped_acceptable"] == 1
        assert "rationale: Nothing to do with CSV files." in (
            folder / "cases" / "not-001.md").read_text()
        # Claude Code then edits experiment.yaml as a user would: what makes the subjects
        # differ (here, mock activation rates), the goal's metric and direction, the trials
        config = yaml.safe_load((folder / "experiment.yaml").read_text())
        assert config["goal"]["compare"] == ["a-only", "a-plus-b"]
        config["subjects"][0]["runtime"] = _mock({"must-001": 1.0, "must-002": 0.9,
                                                  "must-003": 0.9})
        config["subjects"][1]["runtime"] = _mock({"must-001": 0.5, "must-002": 0.2,
                                                  "must-003": 0.3})
        config["goal"].update(metric="recall", direction="decrease", min_effect=0.05)
        config.update(trials=4, seed=7)
        (folder / "experiment.yaml").write_text(yaml.safe_dump(config, sort_keys=False))

        shown = await call(session, "show_experiment", experiment="csv-coexist")
        assert [s["name"] for s in shown["subjects"]] == ["a-only", "a-plus-b"]
        assert shown["goal"]["metric"] == "recall" and shown["trials"] == 4
        assert {c["id"]: c["expectation"] for c in shown["cases"]}["not-002"] == \
            "should_not_trigger"
        assert shown["runs"] == [] and "name: csv-coexist" in shown["config"]

        listed = await call(session, "list_experiments")
        assert {e["name"] for e in listed["experiments"]} == {"older", "csv-coexist"}

        valid = await call(session, "validate_experiment", experiments=["csv-coexist"])
        (report,) = valid["experiments"]
        assert valid["ok"] and report["total_trials"] == 40
        assert [s["runtime"] for s in report["subjects"]] == ["mock", "mock"]
        # 3 must_trigger cases are too few for the goal's min_effect: said, with a code
        assert "too-few-cases" in {w["code"] for w in report["warnings"]}
        strict = await call(session, "validate_experiment", experiments=["csv-coexist"],
                            strict=True)
        assert not strict["ok"]
        refused = await error(session, "run_experiment", experiment="csv-coexist",
                              strict=True)
        assert "too-few-cases" in refused and "design" in refused

        planned = await call(session, "plan_power", experiment="csv-coexist", mde=0.3,
                             paired=True)
        # an activation experiment plans on its 3 must cases (of 5): activation rate (must)
        assert planned["from_design"]["cases"] == 3 and planned["from_design"]["trials"] == 4
        assert planned["from_design"]["scope"] == "must"
        (paired,) = planned["answers"]
        assert paired["question"] == "paired" and paired["n_cases"] >= 2
        assert paired["mde_for_cases"]["cases"] == 3 and paired["assumptions"]
        width = await call(session, "plan_power", width=0.2)
        assert width["answers"][0]["n"] > 50

        seen: list[tuple[float, float | None, str | None]] = []

        async def progress(done: float, total: float | None, message: str | None) -> None:
            seen.append((done, total, message))

        result = await session.call_tool("run_experiment", {"experiment": "csv-coexist"},
                                         progress_callback=progress)
        assert not result.is_error, result.content
        first = result.structured_content
        assert first is not None and first["status"] == "completed"
        assert first["trials_written"] == 40
        assert "too-few-cases" in {w["code"] for w in first["design_warnings"]}
        assert seen and seen[-1][:2] == (40, 40)
        assert [d for d, _, _ in seen] == sorted(d for d, _, _ in seen)
        assert all(total == 40 for _, total, _ in seen)
        assert "trial" in (seen[-1][2] or "")
        summary = first["summary"]
        assert summary["run_status"] == "completed"
        assert [b["name"] for b in summary["subjects"]] == ["a-only", "a-plus-b"]

        read = await call(session, "get_summary", experiment="csv-coexist")
        assert read["run_id"] == first["run_id"] and read["status"] == "completed"
        assert read["summary"]["run_id"] == first["run_id"]
        # two subjects: the variant against the control, and the goal's verdict
        (versus,) = read["summary"]["comparisons"]
        assert {versus["control"], versus["variant"]} == {"a-only", "a-plus-b"} or versus
        assert read["summary"]["goal"]["verdict"] in ("supported", "refuted", "inconclusive")
        # after a run, planning reads its rates and variances: what this design can detect
        replanned = await call(session, "plan_power", experiment="csv-coexist")
        assert replanned["from_run"]["cases"] == 3 and replanned["from_run"]["trials"] == 4
        assert replanned["from_run"]["scope"] == "must"
        assert replanned["answers"][0]["question"] == "goal"   # the goal's metric first
        [paired] = [a for a in replanned["answers"] if a["question"] == "paired"]
        assert paired["mde_for_cases"]["cases"] == 3
        by_prefix = await call(session, "get_summary", run=first["run_id"][:18], report=True)
        assert by_prefix["run_id"] == first["run_id"] and "report" in by_prefix

        second = await call(session, "run_experiment", experiment="csv-coexist", seed=8,
                            subjects=["a-plus-b"], filters=["must-*"])
        assert second["status"] == "completed" and second["trials_written"] == 3 * 4
        compared = await call(session, "compare_runs", runs=[first["run_id"], second["run_id"]])
        (change,) = compared["comparisons"]
        assert change["subject"] == "a-plus-b"
        assert compared["config_changes"][0]["changes"]

        rows = await call(session, "query_results", run=first["run_id"], subject="a-only",
                          limit=7)
        assert len(rows["rows"]) == 7 and rows["total"] == 20 and rows["truncated"]
        assert {r["subject"] for r in rows["rows"]} == {"a-only"}
        assert 0 <= rows["activation_rate"]["lo"] <= rows["activation_rate"]["hi"] <= 1
        assert "pass_rate" not in rows
        groups = await call(session, "query_results", experiment="csv-coexist",
                            group_by=["run", "subject"], all_runs=True)
        assert sorted((g["run_id"], g["subject"], g["n"]) for g in groups["groups"]) == sorted(
            [(first["run_id"], "a-only", 20), (first["run_id"], "a-plus-b", 20),
             (second["run_id"], "a-plus-b", 12)])
        counted = await call(session, "query_results",
                             sql="SELECT subject, count(*) AS n FROM trials "
                                 "WHERE experiment = 'csv-coexist' GROUP BY subject ORDER BY 1")
        assert counted["rows"] == [{"subject": "a-only", "n": 20},
                                   {"subject": "a-plus-b", "n": 32}]

    serve(lab, tmp_path / "stderr.txt", body)


def test_bad_inputs_are_error_results_naming_the_argument(lab, tmp_path):
    mock_experiment(lab, "exp")

    async def body(session: ClientSession) -> None:
        text = await error(session, "run_experiment", experiment="exp", trail=3)
        assert "trail" in text and "unknown argument" in text and "trials" in text
        text = await error(session, "run_experiment", experiment="exp", trials=0)
        assert "trials" in text and "greater than or equal to 1" in text
        text = await error(session, "run_experiment", trials=2)
        assert "experiment: required" in text
        text = await error(session, "run_experiment", experiment="exp",
                           budget={"max_cost": -1})
        assert "budget.max_cost" in text
        text = await error(session, "run_experiment", experiment="nope")
        assert "experiment" in text and "no experiment 'nope'" in text and "exp" in text
        text = await error(session, "run_experiment", experiment="exp", subjects=["ghost"])
        assert "subjects" in text and "ghost" in text
        text = await error(session, "run_experiment", experiment="../etc")
        assert "experiment" in text
        text = await error(session, "get_summary", experiment="exp")
        assert "no finished run" in text
        text = await error(session, "compare_runs", runs=["only-one"])
        assert "runs" in text
        text = await error(session, "query_results", sql="DELETE FROM trials")
        assert "sql" in text.lower()
        text = await error(session, "query_results", sql="SELECT 1", subject="x")
        assert "sql" in text and "subject" in text
        text = await error(session, "plan_power")
        assert "say what to plan" in text
        # create_experiment: an existing name is refused, the folder untouched
        before = (lab / "exp" / "experiment.yaml").read_text()
        text = await error(session, "create_experiment", name="exp", skill="s",
                           cases=CASES[:1])
        assert "already exists" in text and "name" in text
        assert (lab / "exp" / "experiment.yaml").read_text() == before
        text = await error(session, "create_experiment", name="dup", skill="s",
                           allow_missing=True,
                           cases=[CASES[0], CASES[0]])
        assert "cases[1].id" in text and not (lab / "dup").exists()
        text = await error(session, "create_experiment", name="bad", skill="s",
                           allow_missing=True,
                           cases=[{"id": "x", "expectation": "sometimes", "prompt": "p"}])
        assert "cases[0].expectation" in text and not (lab / "bad").exists()
        # an unknown runtime: the error names the argument, and nothing is left behind
        text = await error(session, "create_experiment", name="broken", skill="s",
                           allow_missing=True,
                           runtime="warp-drive", cases=CASES[:1])
        assert "runtime" in text and "warp-drive" in text and not (lab / "broken").exists()
        text = await error(session, "create_experiment", name="../up", skill="s")
        assert "name" in text and not (lab.parent / "up").exists()
        # without cases: templates to replace, and the validation says what is missing
        # a skill not in the lab's skills/ is refused, unless allow_missing
        text = await error(session, "create_experiment", name="templates", skill="s")
        assert "'s' not found" in text and "allow" in text and not (lab / "templates").exists()
        made = await call(session, "create_experiment", name="templates", skill="s",
                          allow_missing=True)
        assert {"cases/must-001.md", "cases/not-001.md", "cases/edge-001.md"} <= set(
            made["files"])
        # the server is still there
        names = [e["name"] for e in (await call(session, "list_experiments"))["experiments"]]
        assert names == ["exp", "templates"]

    serve(lab, tmp_path / "stderr.txt", body)


@pytest.mark.slow
def test_cancelling_a_run_keeps_its_trials_and_the_server_serves_on(lab, tmp_path):
    mock_experiment(lab, "slow", n_must=10, n_not=10, n_edge=0, trials=10,
                    runtime_extra="latency_ms: 100", extra_yaml="concurrency: 2\n")

    async def body(session: ClientSession) -> None:
        started = anyio.Event()
        count = 0

        async def progress(done: float, total: float | None, message: str | None) -> None:
            nonlocal count
            count += 1
            if done >= 6:
                started.set()

        async def run() -> None:
            await session.call_tool("run_experiment", {"experiment": "slow"},
                                    progress_callback=progress)

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await started.wait()
            # while it runs the server answers, and refuses a second run of it
            assert (await call(session, "list_experiments"))["experiments"][0]["status"] == \
                "running"
            text = await error(session, "run_experiment", experiment="slow")
            assert "already going on" in text
            tg.cancel_scope.cancel()  # the client gives up: notifications/cancelled
        # the run stops scheduling, finishes the trials in flight and records itself
        with anyio.fail_after(20):
            while True:
                try:
                    got = await call(session, "get_summary", experiment="slow")
                except AssertionError:  # no summary yet
                    got = None
                if got is not None:
                    break
                await anyio.sleep(0.05)
        summary = got["summary"]
        assert got["status"] == "cancelled" and summary["run_status"] == "cancelled"
        assert "stopped on request" in summary["stop_reason"]
        trials = summary["subjects"][0]["trials"]
        assert 6 <= trials < 200
        rows = await call(session, "query_results", run=got["run_id"], limit=0)
        assert rows["total"] == trials
        # and the server still works: a short run to the end
        done = await call(session, "run_experiment", experiment="slow", budget={"max_trials": 3})
        assert done["status"] == "cancelled" and done["trials_written"] == 3
        assert "--max-trials 3" in done["stop_reason"]
        assert (await call(session, "list_experiments"))["experiments"][0]["last_run"] == \
            done["run_id"]

    serve(lab, tmp_path / "stderr.txt", body)


def test_without_the_extra_ix_mcp_exits_2_and_says_what_to_install(lab, tmp_path):
    mock_experiment(lab)
    shadow = tmp_path / "no-mcp" / "mcp"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError(\"No module named 'mcp'\")\n")
    env = _env(tmp_path) | {"PYTHONPATH": str(shadow.parent)}
    proc = subprocess.run([*_ix_argv(), "mcp", "--lab", str(lab)], env=env,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "pip install 'ix-lab[mcp]'" in proc.stderr
    assert proc.stdout == "" and "Traceback" not in proc.stderr


def test_a_missing_lab_exits_2_before_serving(tmp_path):
    proc = subprocess.run([*_ix_argv(), "mcp", "--lab", str(tmp_path / "nowhere")],
                          env=_env(tmp_path), capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, cwd=tmp_path)
    assert proc.returncode == 2 and "--lab" in proc.stderr and proc.stdout == ""
    assert "Traceback" not in proc.stderr


def test_ix_help_lists_mcp():
    proc = subprocess.run([*_ix_argv(), "--help"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "COLUMNS": "200"})
    assert "mcp" in proc.stdout


@pytest.mark.slow
def test_sigterm_mid_run_records_it_cancelled_and_stdout_is_only_the_protocol(lab, tmp_path):
    exp = mock_experiment(lab, "slow", n_must=4, n_not=0, n_edge=0, trials=50,
                          runtime_extra="latency_ms: 100", extra_yaml="concurrency: 2\n")
    proc = subprocess.Popen([*_ix_argv(), "mcp", "--lab", str(lab)], env=_env(tmp_path),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None

    def send(message: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        proc.stdin.flush()

    send({"id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}})
    assert json.loads(proc.stdout.readline())["result"]["serverInfo"]["name"] == "ix"
    send({"method": "notifications/initialized"})
    send({"id": 2, "method": "tools/call", "params": {
        "name": "run_experiment", "arguments": {"experiment": "slow"},
        "_meta": {"progressToken": "p"}}})
    lines = [proc.stdout.readline() for _ in range(3)]
    proc.terminate()
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    for line in lines + out.splitlines():
        assert json.loads(line)["jsonrpc"] == "2.0", line  # nothing else on stdout
    spec = yaml.safe_load(next((exp / "results" / "runs").glob("*/spec.yaml")).read_text())
    assert spec["status"] == "cancelled" and spec["trials_written"] >= 3


@pytest.mark.slow
def test_optimize_description_screens_with_a_proxy(tmp_path: Path) -> None:
    lab = make_lab(tmp_path / "lab")

    async def body(session) -> None:
        message = await error(session, "optimize_description", experiment="profiling",
                              screen_with="nosuch")
        assert "--screen-with" in message and "nosuch" in message
        state = await call(session, "optimize_description", experiment="profiling",
                           rounds=1, screen_with="lexical", finalists=1)
        assert state["screening"]["name"] == "lexical"
        assert state["rounds"][0]["screen"]["finalists"] == [
            state["rounds"][0]["screen"]["ranking"][0]["id"]]
        assert state["screening"]["saved_trials"] > 0

    serve(lab, tmp_path / "stderr.txt", body)


def test_optimize_description_recommends_applies_and_reports_progress(tmp_path: Path) -> None:
    lab = make_lab(tmp_path / "lab")
    skill = lab / "skills" / "table-profile" / "SKILL.md"
    before = skill.read_bytes()
    steps: list[str] = []

    async def body(session) -> None:
        async def progress(done: float, total: float | None, message: str | None) -> None:
            steps.append(message or "")

        result = await session.call_tool("optimize_description", {
            "experiment": "profiling", "rounds": 2, "apply": True},
            progress_callback=progress)
        assert not result.is_error, result.content[0].text
        state = result.structured_content
        assert state["holdout"]["verdict"] == "recommended"
        assert state["applied"]["backup"].endswith(".bak")
        message = await error(session, "optimize_description", experiment="profiling",
                              holdout=2)
        assert "holdout" in message
        listed = await call(session, "list_experiments")
        assert listed

    serve(lab, tmp_path / "stderr.txt", body)
    assert any(s.startswith("round 0") for s in steps) and any("holdout" in s for s in steps)
    assert skill.read_bytes() != before
    backups = list(skill.parent.glob("SKILL.md.*.bak"))
    assert len(backups) == 1 and backups[0].read_bytes() == before
