"""The `claude-code` runtime: the REAL Claude Code CLI (bundled in claude-agent-sdk) against a
loopback Messages API (`fake_messages_sse`), plus the runtime's own logic on a stand-in CLI.

Never skipped: the dev extra installs claude-agent-sdk, whose wheel carries the CLI.
"""

import asyncio
import json
import os
import stat
import sys
import tempfile
import textwrap
import time
import warnings
from pathlib import Path

import pytest
from fake_messages_sse import FAKE_KEY, FakeMessages, MarkerRouter

from ix.domain.errors import ConfigError, TrialError
from ix.domain.types import Subject
from ix.eval.models import EvalCase, HistoryToolCall, Turn
from ix.runtimes import RuntimeContext, build_runtime, get_kind
from ix.runtimes.claude_code import ISOLATION_ENV, REDACTED, ClaudeCodeRuntime, find_cli

BUILTIN = ["doctor", "plugin-authoring"]


def write_skill(root: Path, name: str, description: str, extra: str = "") -> dict[str, str]:
    d = root / "skills" / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n{extra}---\n# {name}\n\nDo the thing.\n",
        encoding="utf-8")
    (d / "scripts").mkdir(exist_ok=True)
    (d / "scripts" / "helper.py").write_text("print('hi')\n", encoding="utf-8")
    return {"name": name, "description": description, "path": str(d / "SKILL.md")}


@pytest.fixture(scope="module")
def api():
    with FakeMessages(router=MarkerRouter()) as server:
        yield server


@pytest.fixture
def env(api, monkeypatch, tmp_path):
    """ix's environment for a trial: the fake key and URL; temp dirs under tmp_path."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
    monkeypatch.setenv("IX_TEST_SHOULD_NOT_LEAK", "leak")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    return scratch


@pytest.fixture
def skills(tmp_path):
    return [
        write_skill(tmp_path, "csv-summary", "Summarize CSV files: columns, rows, means."),
        write_skill(tmp_path, "git-release-notes", "Draft release notes from git history."),
    ]


def runtime(**options) -> ClaudeCodeRuntime:
    options.setdefault("env", {"CLAUDE_CODE_MAX_RETRIES": 0})
    rt = build_runtime({"kind": "claude-code", **options}, RuntimeContext(target_skill="x"))
    assert isinstance(rt, ClaudeCodeRuntime)
    return rt


def run(rt, subject: Subject, prompt: str):
    case = EvalCase(id="c", prompt=prompt, expectation="must_trigger")
    return asyncio.run(rt.invoke(subject, case, seed=1, attempt=0))


def gather(rt, pairs):
    async def go():
        return await asyncio.gather(
            *(rt.invoke(s, EvalCase(id=f"c{i}", prompt=p, expectation="must_trigger"))
              for i, (s, p) in enumerate(pairs)), return_exceptions=True)
    return asyncio.run(go())


# --- options and build ----------------------------------------------------------------------


def test_kind_is_registered_with_modest_concurrency():
    kind = get_kind("claude-code")
    assert kind.default_concurrency == 4
    opts = kind.options()
    assert (opts.model, opts.max_turns, opts.allowed_tools, opts.setting_sources) == \
        (None, 2, ["Skill"], ["project"])


@pytest.mark.parametrize("spec,field", [
    ({"max_turns": 0}, "runtime.max_turns"),
    ({"setting_sources": ["bogus"]}, "runtime.setting_sources[0]"),
    ({"allowed_tools": "Skill"}, "runtime.allowed_tools"),
    ({"env": {"ANTHROPIC_API_KEY": "x"}}, "runtime.env"),
    ({"sandbox": True}, "runtime.sandbox"),
    ({"pass_env": ["A=B"]}, "runtime.pass_env"),
    ({"env": {"X": True}}, "runtime.env"),
    ({"cli_path": "/nonexistent/claude"}, "runtime.cli_path"),
])
def test_bad_options_name_the_field(spec, field):
    with pytest.raises(ConfigError) as info:
        build_runtime({"kind": "claude-code", **spec}, RuntimeContext())
    assert info.value.field == field


def test_missing_cli_says_how_to_install(monkeypatch):
    import importlib.util
    import shutil
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(ConfigError) as info:
        find_cli()
    assert "pip install 'ix-lab[claude]'" in info.value.message


def test_the_bundled_cli_is_found():
    cli = find_cli()
    assert cli.name == "claude" and "_bundled" in cli.parts


def test_command_line_and_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    monkeypatch.setenv("IX_TEST_SHOULD_NOT_LEAK", "leak")
    monkeypatch.setenv("CLAUDECODE", "1")
    monkeypatch.setenv("TMPDIR", str(tmp_path / "elsewhere"))
    rt = runtime(model="claude-sonnet-4-5", max_turns=3, allowed_tools=["Skill", "Bash(git *)"],
                 env={"CLAUDE_CODE_MAX_RETRIES": 1, "DISABLE_TELEMETRY": "0"})
    argv = rt.argv()
    assert argv[1:] == ["-p", "--output-format", "stream-json", "--verbose",
                        "--no-session-persistence", "--max-turns", "3",
                        "--setting-sources", "project", "--allowedTools", "Skill,Bash(git *)",
                        "--model", "claude-sonnet-4-5"]
    env = rt.environment(tmp_path)
    assert env["HOME"] == str(tmp_path)
    assert env["ANTHROPIC_API_KEY"] == FAKE_KEY
    assert env["CLAUDE_CODE_DISABLE_BUNDLED_SKILLS"] == "1"
    assert env["CLAUDE_CODE_MAX_RETRIES"] == "1" and env["DISABLE_TELEMETRY"] == "0"
    assert "IX_TEST_SHOULD_NOT_LEAK" not in env and "CLAUDECODE" not in env
    assert "TMPDIR" not in env  # ix's own TMPDIR is not passed: each trial has its own
    assert rt.environment(tmp_path, tmp_path / "t")["TMPDIR"] == str(tmp_path / "t")
    assert rt.secrets(env) == [FAKE_KEY]
    # more variables by name, never by value in experiment.yaml; secret-looking ones redacted
    monkeypatch.setenv("MY_GATEWAY_TOKEN", "tok-0123456789")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    passing = runtime(pass_env=["MY_GATEWAY_TOKEN", "AWS_REGION", "UNSET_VAR"])
    penv = passing.environment(tmp_path)
    assert penv["MY_GATEWAY_TOKEN"] == "tok-0123456789" and penv["AWS_REGION"] == "eu-west-1"
    assert "UNSET_VAR" not in penv
    assert passing.secrets(penv) == [FAKE_KEY, "tok-0123456789"]  # longest first
    assert set(ISOLATION_ENV) <= set(env)
    control = runtime(setting_sources=[], allowed_tools=[], disable_slash_commands=True,
                      extra_args=["--append-system-prompt", "Be brief."])
    assert control.argv()[-6:] == ["--max-turns", "2", "--setting-sources=",
                                   "--disable-slash-commands", "--append-system-prompt",
                                   "Be brief."]
    assert "--allowedTools" not in control.argv()


# --- the real CLI against the fake API -----------------------------------------------------


def test_skill_call_is_observed(api, env, skills):
    rt = runtime(model="claude-sonnet-4-5")
    subject = Subject(name="with-skills", config={"skills": skills})
    before = len(api.messages_requests())
    obs = run(rt, subject, "Summarize data.csv [skill:csv-summary]")
    assert [(c.name, c.input) for c in obs.tool_calls] == [("Skill", {"skill": "csv-summary"})]
    assert obs.content == "Done."
    m = obs.meta
    assert m["init_skills"] == ["csv-summary", "git-release-notes", *BUILTIN]
    assert m["skills_invoked"] == ["csv-summary"] and m["first_tool"] == "Skill"
    assert m["denied"] == [] and m["exit_code"] == 0 and m["is_error"] is False
    # two requests; the CLI counts the loaded skill as a turn too (fixture: 3 requests, 4)
    assert m["num_turns"] == 3 and m["terminal_reason"] == "completed"
    assert m["model"] == "claude-sonnet-4-5" and m["claude_code_version"]
    assert "skills_mismatch" not in m
    assert obs.tokens_input == 2000 and obs.tokens_output == 40 and obs.cost_usd > 0
    assert obs.duration_ms > 0
    # what the CLI sent: the model asked for, the listing with exactly these skills
    sent = api.messages_requests()[before:]
    assert len(sent) == 2 and all(r.body["model"] == "claude-sonnet-4-5" for r in sent)
    assert all(r.body.get("stream") is True for r in sent)
    # bundled skills are off; the built-in plugin's skill stays (`doctor` is not listed)
    assert sent[0].listed_skills() == ["csv-summary", "git-release-notes", "plugin-authoring"]
    assert "- csv-summary: Summarize CSV files: columns, rows, means." in sent[0].all_text()
    assert "Base directory for this skill" in sent[1].user_text()  # the skill was loaded
    # the trace is the raw transcript; its project folder is gone
    init = json.loads(obs.trace[0])
    assert init["type"] == "system" and init["subtype"] == "init"
    assert not Path(init["cwd"]).exists()
    assert list(env.iterdir()) == []


def test_text_only_reply_has_no_tool_call(env, skills):
    obs = run(runtime(), Subject(name="s", config={"skills": skills}), "What is 2+2? [text:]")
    assert obs.tool_calls == () and obs.content == "Answered directly."
    assert obs.meta["first_tool"] is None and obs.meta["num_turns"] == 1


def test_control_subject_has_no_skills_folder(api, env):
    before = len(api.messages_requests())
    obs = run(runtime(), Subject(name="control"), "Summarize data.csv [text:]")
    assert obs.meta["init_skills"] == BUILTIN and "skills_mismatch" not in obs.meta
    first = api.messages_requests()[before]
    assert first.listed_skills() == ["plugin-authoring"]


def test_denied_skill_call_is_a_call_and_a_denial(env, tmp_path):
    guarded = write_skill(tmp_path, "csv-guarded", "Summarize CSV files.",
                          extra="allowed-tools: Bash(head:*)\n")
    rt = runtime(allowed_tools=[])
    obs = run(rt, Subject(name="s", config={"skills": [guarded]}),
              "Summarize data.csv [skill:csv-guarded]")
    assert [(c.name, c.input) for c in obs.tool_calls] == [("Skill", {"skill": "csv-guarded"})]
    denied = obs.meta["denied"]
    assert len(denied) == 1 and denied[0]["tool_name"] == "Skill"
    assert denied[0]["input"] == {"skill": "csv-guarded"}
    assert "Execute skill: csv-guarded" in denied[0]["message"]
    # allowed, the same call goes through
    obs = run(runtime(), Subject(name="s", config={"skills": [guarded]}),
              "Summarize data.csv [skill:csv-guarded]")
    assert obs.meta["denied"] == [] and obs.meta["skills_invoked"] == ["csv-guarded"]


def test_api_errors_are_trial_errors_with_the_status(env, skills):
    rt = runtime()
    subject = Subject(name="s", config={"skills": skills})
    e400, e529 = gather(rt, [(subject, "Summarize [error:400]"), (subject, "Hi [error:529]")])
    assert isinstance(e400, TrialError) and e400.kind == "api_error:400"
    assert "too long" in e400.message.lower()
    assert isinstance(e529, TrialError) and e529.kind == "api_error:529"
    assert list(env.iterdir()) == []


def test_api_error_after_an_observed_call_keeps_the_observation(env, skills):
    obs = run(runtime(), Subject(name="s", config={"skills": skills}),
              "Summarize data.csv [skill:csv-summary] [error-after:529]")
    assert obs.meta["skills_invoked"] == ["csv-summary"]
    assert obs.meta["is_error"] is True and obs.meta["api_error"]["status"] == 529


def test_a_retried_529_ends_in_success(api, env, skills):
    rt = runtime(env={"CLAUDE_CODE_MAX_RETRIES": 1})
    key = f"retry-{time.monotonic_ns()}"
    t0 = time.perf_counter()
    obs = run(rt, Subject(name="s", config={"skills": skills}),
              f"Summarize data.csv [flaky:{key}] [skill:csv-summary]")
    assert time.perf_counter() - t0 < 30
    assert obs.meta["skills_invoked"] == ["csv-summary"] and not obs.meta["is_error"]
    retries = obs.meta["api_retries"]
    assert len(retries) == 1 and retries[0]["error_status"] == 529


def test_max_turns_stop_is_not_an_error(env, skills):
    obs = run(runtime(max_turns=1), Subject(name="s", config={"skills": skills}),
              "Summarize data.csv [skill:csv-summary]")
    assert obs.meta["skills_invoked"] == ["csv-summary"]
    assert obs.meta["is_error"] is True and obs.meta["subtype"] == "error_max_turns"
    assert obs.meta["terminal_reason"] == "max_turns" and obs.meta["exit_code"] == 1


def test_manipulation_check_flags_unseen_skills_once_per_subject(env, skills):
    rt = runtime(setting_sources=[])  # project skills are not loaded at all
    subject = Subject(name="no-sources", config={"skills": skills})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = run(rt, subject, "Hi [text:]")
        second = run(rt, subject, "Hi again [text:]")
    assert first.meta["skills_mismatch"] == {"missing": ["csv-summary", "git-release-notes"],
                                             "unexpected": []}
    assert second.meta["skills_mismatch"] == first.meta["skills_mismatch"]
    mine = [w for w in caught if "no-sources" in str(w.message)]
    assert len(mine) == 1 and issubclass(mine[0].category, RuntimeWarning)


def test_no_api_key_is_a_clear_trial_error(env, monkeypatch, skills):
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(TrialError) as info:
        run(runtime(), Subject(name="s", config={"skills": skills}), "Hi")
    assert info.value.kind == "missing_api_key"
    assert list(env.iterdir()) == []


def test_the_key_never_reaches_the_observation(env, skills):
    obs = run(runtime(), Subject(name="s", config={"skills": skills}),
              "Summarize [skill:csv-summary]")
    dumped = json.dumps(obs.model_dump(mode="json")) + "\n".join(obs.trace)
    assert FAKE_KEY not in dumped and json.loads(obs.trace[0])["apiKeySource"]


# --- the runtime's own logic, on a stand-in CLI -------------------------------------------


def fake_cli(tmp_path: Path, body: str) -> str:
    """A stand-in `claude`: a Python script; `result(text)` prints a success result line."""
    path = tmp_path / "fake-claude"
    prelude = textwrap.dedent("""\
        import json, os, subprocess, sys
        def result(text):
            print(json.dumps({"type": "result", "subtype": "success", "is_error": False,
                              "num_turns": 1, "result": text}), flush=True)
    """)
    path.write_text(f"#!{sys.executable}\n{prelude}{textwrap.dedent(body)}", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_secrets_are_redacted_from_errors(env, tmp_path):
    printer = fake_cli(tmp_path, """\
        sys.stdin.read()
        print("auth failed for", os.environ["ANTHROPIC_API_KEY"], file=sys.stderr)
        sys.exit(3)
    """)
    with pytest.raises(TrialError) as info:
        run(runtime(cli_path=printer), Subject(name="s"), "Hi")
    assert info.value.kind == "cli_error" and "code 3" in info.value.message
    assert FAKE_KEY not in info.value.message and REDACTED in info.value.message


def test_secrets_are_redacted_from_the_trace(env, tmp_path):
    printer = fake_cli(tmp_path, """\
        sys.stdin.read()
        key = os.environ["ANTHROPIC_API_KEY"]
        print(json.dumps({"type": "system", "subtype": "init", "skills": [], "k": key}))
        result("ok " + key)
    """)
    obs = run(runtime(cli_path=printer), Subject(name="s"), "Hi")
    assert obs.content == f"ok {REDACTED}" and len(obs.trace) == 2
    assert FAKE_KEY not in "".join(obs.trace) and REDACTED in obs.trace[0]


def test_prompt_goes_in_on_stdin_verbatim(env, tmp_path):
    echo = fake_cli(tmp_path, "result(sys.stdin.read())\n")
    prompt = "--looks like a flag\nand ünïcode, \"quotes\" and $HOME"
    assert run(runtime(cli_path=echo), Subject(name="s"), prompt).content == prompt


def test_no_result_line_is_an_error(env, tmp_path):
    silent = fake_cli(tmp_path, "sys.stdin.read()\nprint('not json')\n")
    with pytest.raises(TrialError) as info:
        run(runtime(cli_path=silent), Subject(name="s"), "Hi")
    assert info.value.kind == "no_result"


def test_cancel_kills_the_process_group_and_removes_the_folder(env, tmp_path, skills):
    pids = tmp_path / "pids"
    hang = fake_cli(tmp_path, f"""\
        child = subprocess.Popen(["sleep", "300"])
        open({str(pids)!r}, "w").write(f"{{os.getpid()}} {{child.pid}}")
        child.wait()
    """)
    rt = runtime(cli_path=hang)
    subject = Subject(name="s", config={"skills": skills})

    async def go():
        case = EvalCase(id="c", prompt="Hi", expectation="must_trigger")
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(rt.invoke(subject, case), timeout=1.5)

    asyncio.run(go())
    assert list(env.iterdir()) == []
    cli, child = (int(p) for p in pids.read_text().split())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and (_alive(cli) or _alive(child)):
        time.sleep(0.05)
    assert not _alive(cli) and not _alive(child)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purpose
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


LISTER = """\
    sys.stdin.read()
    def files(root):
        return sorted(os.path.relpath(os.path.join(d, f), root)
                      for d, _, fs in os.walk(root) for f in fs)
    result(json.dumps({"project": files("."), "home": files(os.environ["HOME"]),
                       "tmp": files(os.environ["TMPDIR"]),
                       "skills": files(".claude/skills") if os.path.isdir(".claude") else None}))
"""


def test_skill_folders_are_copied_whole(env, tmp_path, skills):
    # a skill given as a loose SKILL.md in a folder of another name: only SKILL.md is copied
    loose = tmp_path / "exp" / "SKILL.md"
    loose.parent.mkdir()
    loose.write_text("---\nname: loose\ndescription: d\n---\nbody\n", encoding="utf-8")
    (tmp_path / "exp" / "experiment.yaml").write_text("name: x\n", encoding="utf-8")
    subject = Subject(name="s", config={"skills": [
        *skills, {"name": "loose", "description": "d", "path": str(loose)}]})
    seen = json.loads(run(runtime(cli_path=fake_cli(tmp_path, LISTER)), subject, "Hi").content)
    assert seen["skills"] == [
        "csv-summary/SKILL.md", "csv-summary/scripts/helper.py",
        "git-release-notes/SKILL.md", "git-release-notes/scripts/helper.py",
        "loose/SKILL.md"]


def test_a_control_subject_gets_an_empty_project_home_and_tmp(env, tmp_path):
    seen = json.loads(run(runtime(cli_path=fake_cli(tmp_path, LISTER)),
                          Subject(name="control"), "Hi").content)
    assert seen == {"project": [], "home": [], "tmp": [], "skills": None}


# --- a case's history ----------------------------------------------------------------------


def test_a_history_reaches_the_real_cli_as_prior_turns_with_the_listing(api, env, skills):
    """The REAL CLI resumes the session ix wrote into the trial's HOME: the request carries
    the history's turns in order — text, tool_use, tool_result with paired ids — then the
    prompt, and the skill listing is still there (with the resumed turn's context, where the
    CLI puts it when the transcript has none)."""
    case = EvalCase(
        id="c", prompt="Now give me a profile of q3.csv.", expectation="must_trigger",
        history=(Turn(role="user", content="Let's clean up the Q3 numbers."),
                 Turn(role="assistant", content="Sure. Which file?",
                      tool_calls=(HistoryToolCall(name="Read", input={"file_path": "q3.csv"},
                                                  result="region,amount"),)),
                 Turn(role="assistant", content="Found it."),
                 Turn(role="user", content="That one. Thanks.")))
    before = len(api.requests)
    obs = asyncio.run(runtime().invoke(Subject(name="s", config={"skills": skills}), case))
    assert obs.meta["exit_code"] == 0, obs.meta
    [request] = [r for r in api.requests[before:] if r.path.startswith("/v1/messages")][-1:]
    messages = request.body["messages"]

    def texts(m):
        c = m["content"]
        return [c] if isinstance(c, str) else [
            b.get("text") or f"{b['type']}:{b.get('name') or b.get('tool_use_id')}" for b in c]

    flat = [(m["role"], t) for m in messages for t in texts(m)]
    history = [("user", "Let's clean up the Q3 numbers."), ("assistant", "Sure. Which file?"),
               ("assistant", "tool_use:Read"), ("user", "tool_result:toolu_ix_1_0"),
               ("assistant", "Found it."), ("user", "That one. Thanks.")]
    assert flat[:len(history)] == history
    [use] = [b for m in messages if m["role"] == "assistant" and isinstance(m["content"], list)
             for b in m["content"] if b["type"] == "tool_use"]
    assert use == {"type": "tool_use", "id": "toolu_ix_1_0", "name": "Read",
                   "input": {"file_path": "q3.csv"}}
    [last_user] = [m for m in messages if m["role"] == "user"][-1:]
    assert texts(last_user)[-1] == case.prompt
    after = [t for m in messages[len(history):] for t in texts(m)]
    assert any("The following skills are available for use with the Skill tool" in t
               and "- csv-summary: Summarize CSV files" in t for t in after)
