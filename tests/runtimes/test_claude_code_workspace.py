"""An outcome trial with the REAL Claude Code CLI (bundled in claude-agent-sdk) against a
loopback Messages API (DESIGN.md §10, issue 35): `ix run` runs the session in the case's
workspace as its project, with the subject's skill under `.claude/skills/`, in task mode; the
scripted model writes a file with the Write tool, and ix keeps it and judges it."""

import hashlib
import json
import re
import sys
from pathlib import Path

import pytest

from conftest import run_ix, write

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fake_messages_sse import FAKE_KEY, FakeMessages, Reply, Request, text, tool

ANSWER = "total=6\n"
WORKSPACE = re.compile(r"(/[^\s\"'<>\\]*ix-ws-[A-Za-z0-9_]+)")


def writer(request: Request) -> Reply:
    """Sum with the Write tool in the session's working folder (the workspace, which the CLI
    names to the model), then say it is done."""
    if request.last_user_has_tool_result():
        return text("Done: summary.txt holds the total.")
    folder = WORKSPACE.search(json.dumps(request.body))
    assert folder is not None, json.dumps(request.body)[:3000]
    return tool("Write", {"file_path": f"{folder.group(1)}/summary.txt", "content": ANSWER})


@pytest.mark.slow
def test_a_claude_code_task_writes_a_file_that_is_kept_and_judged(tmp_path: Path):
    lab = tmp_path / "lab"
    write(lab / "skills" / "csv-summary" / "SKILL.md", """
        ---
        name: csv-summary
        description: Summarize CSV files. Use for any CSV.
        ---
        # CSV summary
        Sum the numbers and write summary.txt.
    """)
    exp = lab / "task"
    write(exp / "experiment.yaml", """
        name: task
        trials: 1
        timeout_s: 90
        workspace: {}
        runtime: {kind: claude-code, model: claude-sonnet-4-5, task: true}
        subjects:
          - name: with-skill
            skills: [csv-summary]
        sensors:
          - {kind: file_matches, path: summary.txt, regex: "^total=6$"}
    """)
    write(exp / "cases" / "sum" / "files" / "input.csv", "1\n2\n3\n")
    write(exp / "cases" / "sum.md", "---\nexpectation: must_trigger\n---\n"
                                    "Sum input.csv into summary.txt.\n")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    with FakeMessages(router=writer) as api:
        r = run_ix("run", "--lab", str(lab), "--json", timeout=180,
                   env={"ANTHROPIC_API_KEY": FAKE_KEY, "ANTHROPIC_BASE_URL": api.url,
                        "TMPDIR": str(scratch)})
        first = next(q for q in api.requests if q.is_messages)
    assert r.code == 0, r.output
    (line,) = [json.loads(x) for x in (exp / "results" / "trials.jsonl").read_text().splitlines()]
    assert line["error"] is None and line["reading"]["passed"] is True, line
    assert [c["name"] for c in line["observation"]["tool_calls"]] == ["Write"]
    assert line["outputs"] == [{"path": "summary.txt", "size": len(ANSWER),
                                "sha256": hashlib.sha256(ANSWER.encode()).hexdigest()}]
    (kept,) = list((exp / "results" / "runs").glob("*/artifacts/with-skill/sum/0/summary.txt"))
    assert kept.read_text() == ANSWER
    # the session ran in the workspace (a fresh copy, removed since), its skill listed there
    assert WORKSPACE.search(json.dumps(first.body)) and "csv-summary" in first.listed_skills()
    assert not list(scratch.glob("ix-ws-*")) and (exp / "cases" / "sum" / "files"
                                                   / "input.csv").read_text() == "1\n2\n3\n"
