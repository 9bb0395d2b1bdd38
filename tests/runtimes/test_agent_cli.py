"""The `agent-cli` runtime: a scripted CLI prints each profile's events (for `claude`, a real
Claude Code transcript replayed), and the observation is what the transcript sensors read."""

import asyncio
import json
import sys
import time
from pathlib import Path

import psutil
import pytest

from conftest import ix_in_process, run_ix, write
from ix.domain.errors import ConfigError, TrialError
from ix.domain.types import Subject
from ix.eval.models import EvalCase
from ix.runtimes import RuntimeContext, build_runtime, get_kind
from ix.runtimes.agent_events import EventMapping, read_events
from ix.runtimes.claude_code import stream_observation
from ix.runtimes.claude_stream import parse_stream

PY = sys.executable
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "claude-stream"
SUBJECT = Subject(name="agent", description="d", config={})

#: The scripted CLI: prints the lines of the file named first (`{prompt}` in them replaced
#: by what it read on stdin), then exits with the code given second (0 by default).
SCRIPT = """
import sys
prompt = sys.stdin.read().strip()
for line in open(sys.argv[1], encoding="utf-8"):
    sys.stdout.write(line.replace("{prompt}", prompt))
sys.exit(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
"""

GENERIC = [
    {"type": "text", "text": "Looking at {prompt}."},
    "[debug] not JSON, kept in the trace",
    {"type": "tool_call", "id": "t1", "name": "search", "input": {"q": "weather"}},
    {"type": "tool_result", "id": "t1", "output": "sunny"},
    {"type": "usage", "input_tokens": 100, "output_tokens": 10, "cost_usd": 0.001},
    {"type": "turn"},
    {"type": "tool_call", "id": "t2", "name": "write", "input": {"path": "a.txt"}},
    {"type": "usage", "input_tokens": 150, "output_tokens": 20, "cost_usd": 0.002},
    {"type": "text", "text": "Done."},
    {"type": "end", "turns": 3},
]

#: `codex exec --json` (openai/codex, codex-rs/exec/src/exec_events.rs)
CODEX = [
    {"type": "thread.started", "thread_id": "0199a213-81c0-7800-8aa1-bbab2a035a53"},
    {"type": "turn.started"},
    {"type": "item.completed", "item": {"id": "item_0", "type": "reasoning",
                                        "text": "**Looking at the files**"}},
    {"type": "item.started", "item": {"id": "item_1", "type": "command_execution",
                                      "command": "bash -lc ls", "aggregated_output": "",
                                      "exit_code": None, "status": "in_progress"}},
    {"type": "item.completed", "item": {"id": "item_1", "type": "command_execution",
                                        "command": "bash -lc ls",
                                        "aggregated_output": "a.txt\n", "exit_code": 0,
                                        "status": "completed"}},
    {"type": "item.completed", "item": {"id": "item_2", "type": "agent_message",
                                        "text": "One file. Reading it."}},
    {"type": "item.completed", "item": {"id": "item_3", "type": "mcp_tool_call",
                                        "server": "docs", "tool": "fetch",
                                        "arguments": {"url": "https://x.test"},
                                        "result": None, "error": None,
                                        "status": "completed"}},
    {"type": "item.completed", "item": {"id": "item_4", "type": "command_execution",
                                        "command": "rm -rf /", "aggregated_output": "",
                                        "exit_code": None, "status": "declined"}},
    {"type": "item.completed", "item": {"id": "item_5", "type": "agent_message",
                                        "text": "a.txt holds one line."}},
    {"type": "turn.completed", "usage": {"input_tokens": 1200, "cached_input_tokens": 200,
                                         "output_tokens": 345}},
]


def events_file(tmp_path: Path, events: list) -> Path:
    path = tmp_path / "events.jsonl"
    path.write_text("".join((e if isinstance(e, str) else json.dumps(e)) + "\n"
                            for e in events), encoding="utf-8")
    return path


def scripted(tmp_path: Path, events: list | Path, code: int = 0) -> list[str]:
    script = tmp_path / "cli.py"
    script.write_text(SCRIPT, encoding="utf-8")
    path = events if isinstance(events, Path) else events_file(tmp_path, events)
    return [PY, str(script), str(path), str(code)]


def runtime(**options):
    return build_runtime({"kind": "agent-cli", **options}, RuntimeContext())


def invoke(rt, prompt: str = "the forecast"):
    case = EvalCase(id="c-1", prompt=prompt, expectation="must_trigger")
    return asyncio.run(rt.invoke(SUBJECT, case, seed=1))


def test_generic_events_give_the_answer_calls_in_order_usage_and_turns(tmp_path):
    rt = runtime(argv=scripted(tmp_path, GENERIC), stdin="{{ prompt }}")
    obs = invoke(rt)
    assert obs.content == "Looking at the forecast.\nDone."
    assert [(c.name, c.input) for c in obs.tool_calls] == [("search", {"q": "weather"}),
                                                           ("write", {"path": "a.txt"})]
    assert (obs.tokens_input, obs.tokens_output) == (250, 30)
    assert obs.cost_usd == pytest.approx(0.003)
    assert obs.meta["num_turns"] == 3  # the end event's, over the one turn event
    assert obs.meta["tool_results"] == 1 and obs.meta["tool_outputs"] == ["sunny", None]
    assert obs.meta["denied"] == [] and obs.meta["other_lines"] == 1
    assert len(obs.trace) == len(GENERIC) and obs.trace[1].startswith("[debug]")


def test_codex_events_give_its_commands_and_tools_and_its_last_message(tmp_path):
    rt = runtime(profile="codex", argv=scripted(tmp_path, CODEX))
    obs = invoke(rt)
    assert obs.content == "a.txt holds one line."
    assert [(c.name, c.input) for c in obs.tool_calls] == [
        ("command_execution", {"command": "bash -lc ls"}),
        ("fetch", {"url": "https://x.test"}),
        ("command_execution", {"command": "rm -rf /"})]
    assert obs.meta["tool_outputs"] == ["a.txt\n", None, ""]
    assert obs.meta["denied"] == [{"tool_name": "command_execution", "tool_use_id": "item_4",
                                   "input": {"command": "rm -rf /"}}]
    assert (obs.tokens_input, obs.tokens_output, obs.cost_usd) == (1200, 345, 0.0)
    assert obs.meta["num_turns"] is None  # codex reports none


def test_the_codex_profile_runs_codex_exec_with_the_prompt_on_stdin():
    options = get_kind("agent-cli").options.model_validate(
        {"profile": "codex", "extra_args": ["--model", "gpt-5"],
         "env_passthrough": ["HTTPS_PROXY"]})
    assert options.argv == ["codex", "exec", "--json", "--skip-git-repo-check", "-"]
    assert options.stdin == "{{ prompt }}" and options.extra_args == ["--model", "gpt-5"]
    assert options.env_passthrough == ["OPENAI_API_KEY", "CODEX_API_KEY", "OPENAI_BASE_URL",
                                       "HTTPS_PROXY"]
    # a kind of events given replaces the profile's, the others stay
    options = get_kind("agent-cli").options.model_validate(
        {"profile": "codex", "events": {"usage": []}})
    assert options.events.usage == [] and len(options.events.tool_call) == 4


def test_a_failed_codex_turn_is_an_agent_error(tmp_path):
    failed = [CODEX[0], {"type": "turn.failed", "error": {"message": "stream disconnected"}}]
    with pytest.raises(TrialError) as info:
        invoke(runtime(profile="codex", argv=scripted(tmp_path, failed, code=1)))
    assert (info.value.kind, info.value.message) == ("agent_error", "stream disconnected")


@pytest.mark.parametrize("name", ["multi_turn_bash_read", "skill_invoked_permission_denied"])
def test_the_claude_profile_reads_a_real_transcript_as_claude_code_does(tmp_path, name):
    transcript = FIXTURES / f"{name}.jsonl"
    obs = invoke(runtime(profile="claude", argv=scripted(tmp_path, transcript)))
    lines = [x for x in transcript.read_text().splitlines() if x.strip()]
    same = stream_observation(parse_stream(lines), 0, "", lines, 0)
    for field in ("content", "tool_calls", "tokens_input", "tokens_output", "cost_usd",
                  "duration_ms", "trace"):
        assert getattr(obs, field) == getattr(same, field), field
    assert obs.meta == {**same.meta, "wall_ms": obs.meta["wall_ms"], "profile": "claude"}
    if name == "multi_turn_bash_read":
        assert [c.name for c in obs.tool_calls] == ["Bash", "Read"]
        assert obs.meta["num_turns"] == 3 and obs.cost_usd > 0


#: Claude Code's stream in the mapping language: what a user writes for a CLI of that shape.
CLAUDE_AS_A_MAPPING = {
    "text": [{"match": {"type": "assistant", "parent_tool_use_id": None},
              "each": "message.content", "where": {"type": "text"}, "text": "text"}],
    "tool_call": [{"match": {"type": "assistant", "parent_tool_use_id": None},
                   "each": "message.content", "where": {"type": "tool_use"},
                   "name": "name", "input": "input", "id": "id"}],
    "tool_result": [{"match": {"type": "user"}, "each": "message.content",
                     "where": {"type": "tool_result"}, "id": "tool_use_id",
                     "output": "content"}],
    "denied": [{"match": {"type": "result"}, "each": "permission_denials",
                "name": "tool_name", "input": "tool_input", "id": "tool_use_id"}],
    "usage": [{"match": {"type": "result"},
               "input_tokens": ["usage.input_tokens", "usage.cache_read_input_tokens",
                                "usage.cache_creation_input_tokens"],
               "output_tokens": "usage.output_tokens", "cost_usd": "total_cost_usd"}],
    "end": [{"match": {"type": "result"}, "text": "result", "is_error": "is_error",
             "turns": "num_turns"}],
}


@pytest.mark.parametrize("name", ["multi_turn_bash_read", "skill_invoked_permission_denied",
                                  "no_skill_text_only"])
def test_the_mapping_language_can_say_what_claude_codes_parser_reads(name):
    lines = (FIXTURES / f"{name}.jsonl").read_text().splitlines()
    read = read_events(lines, EventMapping.model_validate(CLAUDE_AS_A_MAPPING))
    parsed = parse_stream(lines)
    assert read.content("joined") == parsed.text
    assert [(c.name, c.input) for c in read.calls] == \
        [(t.name, t.input) for t in parsed.tool_uses]
    assert [d.name for d in read.denied or ()] == [d.tool_name for d in parsed.denied]
    assert (read.tokens_input, read.tokens_output) == (parsed.tokens_input_total,
                                                       parsed.tokens_output)
    assert read.cost_usd == pytest.approx(parsed.cost_usd)
    assert read.turns == parsed.num_turns and read.ended


def test_a_cli_that_exits_non_zero_without_an_end_is_a_cli_error(tmp_path):
    with pytest.raises(TrialError) as info:
        invoke(runtime(argv=scripted(tmp_path, GENERIC[:3], code=3)))
    assert info.value.kind == "cli_error" and "exited with code 3" in info.value.message


def test_a_cli_that_never_prints_the_end_event_is_no_end(tmp_path):
    with pytest.raises(TrialError) as info:
        invoke(runtime(argv=scripted(tmp_path, GENERIC[:-1])))
    assert info.value.kind == "no_end" and "8 event(s)" in info.value.message


def test_an_end_event_that_says_the_run_failed_is_an_agent_error(tmp_path):
    events = [{"type": "end", "is_error": True, "error": "out of budget"}]
    with pytest.raises(TrialError) as info:
        invoke(runtime(argv=scripted(tmp_path, events)))
    assert (info.value.kind, info.value.message) == ("agent_error", "out of budget")


@pytest.mark.parametrize("options,field", [
    ({"argv": ["x"], "events": {"end": []}}, "runtime.events.end"),
    ({"argv": ["x"], "events": {"tool_call": [{"match": {"type": "t"}}]}},
     "runtime.events.tool_call[0].name"),
    ({"argv": ["x"], "events": {"text": [{"text": "a..b"}]}}, "runtime.events.text[0].text"),
    ({"argv": ["x"], "events": {"usage": [{"tokens": "n"}]}}, "runtime.events.usage[0].tokens"),
    ({"argv": ["x"], "events": {"end": [{"match": {"type": {"a": 1}}}]}},
     "runtime.events.end[0].match.type"),
    ({"argv": ["x"], "profile": "gemini"}, "runtime.profile"),
    ({}, "runtime.argv"),  # the generic profile names no program
])
def test_a_bad_mapping_names_the_field(options, field):
    with pytest.raises(ConfigError) as info:
        runtime(**options)
    assert info.value.field == field


def test_timeout_s_fails_the_trial_and_kills_the_cli(tmp_path):
    rt = runtime(argv=[PY, "-c", "import time; print('{}', flush=True); time.sleep(60)"],
                 timeout_s=0.5)
    t0 = time.perf_counter()
    with pytest.raises(TrialError) as info:
        invoke(rt)
    assert info.value.kind == "timeout" and time.perf_counter() - t0 < 5
    assert not [c for c in psutil.Process().children(recursive=True)
                if "time.sleep(60)" in " ".join(c.cmdline())]


def test_ix_runs_a_scripted_cli_and_the_transcript_sensors_read_it(lab, tmp_path):
    argv = json.dumps(scripted(tmp_path, GENERIC))
    exp = lab / "agent"
    write(exp / "experiment.yaml", f"""
        name: agent
        trials: 1
        sensors:
          - {{kind: tool_sequence, expected: [search, write], mode: exact}}
          - {{kind: turns, max: 3}}
          - {{kind: denied}}
        runtime: {{kind: agent-cli, argv: {argv}, stdin: "{{{{ prompt }}}}"}}
        """)
    write(exp / "cases" / "c1.md", "---\nexpectation: must_trigger\n---\nthe forecast\n")
    r = ix_in_process("run", "--lab", str(lab))
    assert r.code == 0, r.output
    line = json.loads((exp / "results" / "trials.jsonl").read_text().splitlines()[-1])
    assert line["error"] is None
    assert line["observation"]["content"] == "Looking at the forecast.\nDone."
    assert {x["sensor_name"]: x["passed"] for x in line["readings"]} == \
        {"tool_sequence": True, "turns": True, "denied": True}


def test_ix_validate_refuses_a_bad_mapping_with_exit_2(lab):
    write(lab / "agent" / "experiment.yaml", """
        name: agent
        runtime: {kind: agent-cli, profile: codex, events: {end: [{is_eror: done}]}}
        """)
    write(lab / "agent" / "cases" / "c1.md", "---\nexpectation: must_trigger\n---\nhi\n")
    r = run_ix("validate", "--lab", str(lab))
    assert r.code == 2, r.output
    assert "runtime.events.end[0].is_eror" in r.output
