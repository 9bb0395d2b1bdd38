"""The bundled agent example (examples/lab/agent) as `scripts/example` runs it: its scripted
model on 127.0.0.1 (fake_model.py, a real process), two subjects on the Messages API with
two tools each, every case a conversation with a simulated traveller. The goal's verdict,
the tools' calls in order, both sides of the conversation, and the transcript sensors."""

import json
import shutil
import subprocess
import sys
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
        tmp_path: Path, model: str):
    lab = tmp_path / "lab"
    shutil.copytree(EXAMPLE_LAB / "agent", lab / "agent",
                    ignore=shutil.ignore_patterns("results"))
    r = ix_in_process("run", "--lab", str(lab), "agent", "--json",
                      env={"ANTHROPIC_BASE_URL": model, "EXAMPLE_API_KEY": "offline"})
    assert r.code == 0, r.output
    summary = json.loads(r.stdout)
    assert summary["goal"]["verdict"] == "supported"
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
