"""The `human` runtime: the case on stderr, the answer from stdin, through the real `ix` (every
run that reads answers, and `validate`'s exit 2); the other `validate` and the registry's
set-up run in process (`ix_in_process`)."""

import asyncio
import json
import os
import subprocess
from pathlib import Path

from conftest import _ix_argv, case, ix_in_process, run_ix, write
from ix.domain.errors import TrialError
from ix.domain.types import Subject
from ix.eval.models import EvalCase, ToolCall
from ix.runtimes.human import HumanOptions, HumanRuntime, LineReader, parse_answer
from ix.runtimes.registry import RuntimeContext, get_kind


def ix_with_input(*args: str, stdin: str, cwd: Path,
                  timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IX_")}
    env.update({"XDG_CONFIG_HOME": str(cwd / ".no-user-config"), "NO_COLOR": "1",
                "COLUMNS": "200"})
    return subprocess.run([*_ix_argv(), *args], input=stdin, cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def human_lab(lab: Path, extra: str = "", trials: int = 1) -> Path:
    write(lab / "skills" / "target" / "SKILL.md",
          "---\nname: target\ndescription: Summarise CSV files\n---\nbody\n")
    d = lab / "hum"
    write(d / "experiment.yaml", f"name: hum\nskill: target\ntrials: {trials}\n"
          f"runtime: {{kind: human, prompt_prefix: 'Answer as you would.'}}\n{extra}")
    case(d, "must-001", "must_trigger", "Summarise sales.csv")
    case(d, "must-002", "must_trigger", "What is in this CSV?")
    case(d, "not-001", "should_not_trigger", "What time is it?")
    return d


def records(d: Path) -> dict[str, dict]:
    lines = (d / "results" / "trials.jsonl").read_text().splitlines()
    return {r["probe_id"]: r for r in map(json.loads, lines)}


def test_a_human_run_reads_answers_from_stdin(lab):
    d = human_lab(lab)
    answers = "/skill target\nHere is the summary.\n.\nskill: target\n.\nIt is noon.\n.\n"
    r = ix_with_input("run", "--lab", str(lab), "--json", stdin=answers, cwd=lab.parent)
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)  # stdout is the summary only: the questions go to stderr
    assert summary["metrics"]["tp"] == 2 and summary["metrics"]["tn"] == 1
    assert summary["metrics"]["f1"] == 1.0 and summary["errors"] == 0
    got = records(d)
    must1 = got["must-001"]["observation"]
    assert must1["tool_calls"] == [{"name": "Skill", "input": {"skill": "target"}}]
    assert must1["content"] == "/skill target\nHere is the summary."
    assert must1["duration_ms"] >= 0
    assert got["must-002"]["observation"]["tool_calls"][0]["input"] == {"skill": "target"}
    assert got["not-001"]["observation"]["content"] == "It is noon."
    assert got["not-001"]["observation"]["tool_calls"] == []
    assert got["not-001"]["reading"]["passed"] is False
    for case_id, prompt in (("must-001", "Summarise sales.csv"), ("not-001", "What time")):
        assert case_id in r.stderr and prompt in r.stderr
    assert "Available skills: target" in r.stderr and "Summarise CSV files" in r.stderr
    assert "Answer as you would." in r.stderr
    assert r.stderr.index("must-001") < r.stderr.index("must-002") < r.stderr.index("not-001")


def test_end_of_input_without_an_answer_is_a_no_answer_error(lab):
    d = human_lab(lab)
    r = ix_with_input("run", "--lab", str(lab), "--json", stdin="no\n.\n", cwd=lab.parent)
    assert r.returncode == 0, r.stderr  # errored trials are reported, not a failure
    summary = json.loads(r.stdout)
    assert summary["errors"] == 2
    got = records(d)
    assert got["must-001"]["error"] is None
    assert got["must-001"]["observation"]["content"] == "no"
    for case_id in ("must-002", "not-001"):
        assert got[case_id]["error"]["kind"] == "no_answer"
        assert got[case_id]["observation"] is None


def test_end_of_input_ends_the_last_answer(lab):
    d = human_lab(lab)
    r = ix_with_input("run", "--lab", str(lab), "--json",
                      stdin="/skill target\n.\n/skill other\n.\nthe end", cwd=lab.parent)
    assert r.returncode == 0, r.stderr
    got = records(d)
    assert got["must-002"]["observation"]["tool_calls"][0]["input"] == {"skill": "other"}
    assert got["not-001"]["observation"]["content"] == "the end"
    assert got["not-001"]["error"] is None


def test_the_table_and_trials_of_a_human_run_with_two_trials(lab):
    d = human_lab(lab, trials=2)
    answers = "/skill target\n.\n/skill target\n.\nno\n.\n/skill target\n.\nno\n.\nno\n.\n"
    r = ix_with_input("run", "--lab", str(lab), stdin=answers, cwd=lab.parent)
    assert r.returncode == 0, r.stderr
    lines = (d / "results" / "trials.jsonl").read_text().splitlines()
    assert len(lines) == 6
    assert "must-002" in r.stdout and "1/2" in r.stdout  # activation 1 of 2 trials


def test_a_human_runs_one_trial_at_a_time(lab):
    human_lab(lab)
    r = ix_in_process("validate", "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    report = json.loads(r.stdout)[0]
    assert report["concurrency"] == 1
    assert report["subjects"][0]["runtime"] == "human"
    assert get_kind("human").default_concurrency == 1


def test_human_options_are_checked(lab):
    human_lab(lab)
    write(lab / "hum" / "experiment.yaml", "name: hum\nskill: target\n"
          "runtime: {kind: human, prompt_prefx: x}\n")
    r = run_ix("validate", "--lab", str(lab))
    assert r.code == 2 and "prompt_prefx" in r.stderr and "prompt_prefix" in r.stderr


def test_a_registry_subject_can_be_a_human(lab, tmp_path):
    human_lab(lab)
    home = {"XDG_CONFIG_HOME": str(tmp_path / "config")}
    assert ix_in_process("subjects", "add", "me", "--runtime", "human", env=home).code == 0
    write(lab / "hum" / "experiment.yaml", "name: hum\nruntime: mock\nsubjects: [me]\n"
          "sensor: {kind: activation, skill: target}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("IX_")}
    env.update(home)
    r = subprocess.run([*_ix_argv(), "run", "--lab", str(lab), "--json"], env=env,
                       input="/skill target\n.\n/skill target\n.\nno\n.\n", text=True,
                       capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["metrics"]["f1"] == 1.0


# --------------------------------------------------------------------------- in-process

def test_parse_answer():
    assert parse_answer(["/skill csv-summary", "ok"]) == (
        "/skill csv-summary\nok", (ToolCall(name="Skill", input={"skill": "csv-summary"}),))
    assert parse_answer(["", "Skill: x"])[1] == (ToolCall(name="Skill", input={"skill": "x"}),)
    assert parse_answer(["I would use /skill x"])[1] == ()
    assert parse_answer([]) == ("", ())


def _runtime(reader: LineReader, **options: object) -> HumanRuntime:
    import io

    return HumanRuntime(HumanOptions.model_validate(options), RuntimeContext(), reader=reader,
                        out=io.StringIO())


def test_waiting_for_an_answer_does_not_block_the_event_loop():
    read_fd, write_fd = os.pipe()
    reader = LineReader(os.fdopen(read_fd, "r"))
    runtime = _runtime(reader)
    subject = Subject(name="me")
    case_ = EvalCase(id="c", prompt="p", expectation="must_trigger")

    async def main() -> tuple[int, object]:
        ticks = 0
        task = asyncio.create_task(runtime.invoke(subject, case_))
        while not task.done() and ticks < 1000:
            ticks += 1
            if ticks == 5:
                os.write(write_fd, b"/skill t\n.\n")
            await asyncio.sleep(0.005)
        return ticks, await task

    try:
        ticks, observation = asyncio.run(main())
    finally:
        os.close(write_fd)
    assert ticks >= 5  # the loop kept running while the runtime waited
    assert observation.tool_calls == (ToolCall(name="Skill", input={"skill": "t"}),)


def test_a_timed_out_question_leaves_later_lines_to_the_next_one():
    read_fd, write_fd = os.pipe()
    reader = LineReader(os.fdopen(read_fd, "r"))
    runtime = _runtime(reader, timeout_s=0.05)
    subject = Subject(name="me")
    case_ = EvalCase(id="c", prompt="p", expectation="must_trigger")

    async def main() -> tuple[object, object]:
        try:
            await runtime.invoke(subject, case_)
            first: object = None
        except TrialError as exc:
            first = exc.kind
        os.write(write_fd, b"late\n.\n")
        second = await runtime.invoke(subject, case_)
        return first, second

    try:
        first, second = asyncio.run(main())
    finally:
        os.close(write_fd)
    assert first == "timeout"
    assert second.content == "late"  # type: ignore[attr-defined]


def test_a_closed_stream_is_no_answer():
    import io

    runtime = _runtime(LineReader(io.StringIO("")))
    try:
        asyncio.run(runtime.invoke(Subject(name="me"),
                                   EvalCase(id="c", prompt="p", expectation="must_trigger")))
    except TrialError as exc:
        assert exc.kind == "no_answer"
    else:
        raise AssertionError("expected no_answer")
