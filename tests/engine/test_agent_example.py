"""The bundled agent example (examples/lab/agent) as `scripts/example` runs it: its scripted
model on 127.0.0.1 (fake_model.py, a real process), two subjects on the Messages API with
two tools each, every case a conversation with a simulated traveller. The goal's verdict,
the tools' calls in order, both sides of the conversation, and the transcript sensors."""

import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import EXAMPLE_LAB, ix_in_process


@pytest.fixture
def model(tmp_path: Path) -> Iterator[str]:
    """The example's scripted model, started as `scripts/example` starts it."""
    port_file = tmp_path / "port"
    proc = subprocess.Popen([sys.executable, str(EXAMPLE_LAB / "agent" / "fake_model.py"),
                             str(port_file)])
    try:
        for _ in range(200):
            if port_file.exists() and port_file.read_text():
                break
            time.sleep(0.02)
        yield f"http://127.0.0.1:{port_file.read_text()}"
    finally:
        proc.kill()
        proc.wait()


def test_the_agent_example_answers_its_goal_with_tools_and_a_simulated_user(
        request: pytest.FixtureRequest, model: str):
    # a folder as short as a clone's `examples/lab`: the screen prints its results folder
    # whole (pytest's tmp_path alone is 70 characters, which takes a line of its own)
    lab = Path(tempfile.mkdtemp(prefix="ix-agent-")) / "lab"
    request.addfinalizer(lambda: shutil.rmtree(lab.parent, ignore_errors=True))
    shutil.copytree(EXAMPLE_LAB / "agent", lab / "agent",
                    ignore=shutil.ignore_patterns("results"))
    r = ix_in_process("run", "--lab", str(lab), "agent", "--progress", "none",
                      env={"ANTHROPIC_BASE_URL": model, "EXAMPLE_API_KEY": "offline",
                           "COLUMNS": "80"})
    assert r.code == 0, r.output
    summary = json.loads((lab / "agent" / "results" / "summary-latest.json").read_text())
    assert summary["goal"]["verdict"] == "supported"
    # one screen (issue 33): at most 40 lines at 80 columns, the verdict last; the cost in
    # words and figures, a cost per success with no value (terse has no right trial) left out
    screen = r.stdout.rstrip("\n").splitlines()
    assert len(screen) <= 40 and screen[-2].startswith("SUPPORTED — goal:"), r.stdout
    assert "at what cost against terse (mean's change [95% CI], paired by case):" in screen
    cost = r.stdout[r.stdout.index("  fahrenheit: output tokens"):r.stdout.index("more cases")]
    assert "cost (USD) " in cost and "–" not in cost and "cost_per_success" not in cost, cost
    lines = [json.loads(x) for x in (lab / "agent" / "results" / "trials.jsonl")
             .read_text().splitlines()]
    assert len(lines) == 24 and all(x["error"] is None for x in lines)
    by = {(x["subject"], x["probe_id"]): x["observation"] for x in lines}
    # told to, the agent converts at once; the terse one only when the traveller asks again
    told = by[("fahrenheit", "lima")]
    assert [c["name"] for c in told["tool_calls"]] == ["lookup", "convert"]
    assert told["meta"]["stop"] == "goal" and told["meta"]["turns"] == 1
    terse = by[("terse", "lima")]
    assert [m["content"] for m in terse["meta"]["conversation"] if m["role"] == "user"] == [
        "How warm is it in Lima right now?", "In Fahrenheit, please.", "[DONE]"]
    assert [c["name"] for c in terse["tool_calls"]] == ["lookup", "lookup", "convert"]
    assert terse["content"].endswith("°F in Lima.")
    readings = {r["sensor_name"]: r["passed"] for x in lines
                if (x["subject"], x["probe_id"]) == ("terse", "lima") for r in x["readings"]}
    assert readings == {"user_goal": False, "tool_sequence": True, "turns": True}
