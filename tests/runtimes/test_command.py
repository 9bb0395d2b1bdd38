"""The `command` runtime: real programs, started without a shell, killed when cancelled."""

import asyncio
import json
import os
import sys
import time
from pathlib import Path

import psutil
import pytest

from ix.domain.errors import ConfigError, TrialError
from ix.domain.types import Subject
from ix.eval.models import EvalCase
from ix.runtimes import RuntimeContext, build_runtime

PY = sys.executable
SUBJECT = Subject(name="subj", description="d", config={"model": "m-1"})

ECHO = """
import json, os, sys
print(json.dumps({"argv": sys.argv[1:], "stdin": sys.stdin.read(),
                  "var": os.environ.get("IX_T_VAR"), "path": bool(os.environ.get("PATH")),
                  "cwd": os.getcwd()}))
"""


def case(prompt: str = "p", case_id: str = "c-1", **extra) -> EvalCase:
    return EvalCase(id=case_id, prompt=prompt, expectation="must_trigger", **extra)


def runtime(**options):
    return build_runtime({"kind": "command", **options}, RuntimeContext())


def invoke(rt, stimulus=None, subject=SUBJECT):
    return asyncio.run(rt.invoke(subject, stimulus or case(), seed=1))


def test_argv_stdin_and_env_are_rendered_and_no_shell_sees_the_prompt(tmp_path):
    marker = tmp_path / "pwned"
    prompt = f"hi; rm -rf / $(touch {marker}) | touch {marker} & `touch {marker}` > x"
    rt = runtime(
        argv=[PY, "-c", ECHO, "{{ prompt }}", "{{ case.id }}", "{{ case.metadata.x }}",
              "{{ case.tags | join(',') }}", "{{ subject.name }}/{{ subject.model }}"],
        stdin="Q: {{ prompt }}\n",
        env={"IX_T_VAR": "{{ case.expectation }}:{{ env.HOME }}"},
    )
    obs = invoke(rt, case(prompt, metadata={"x": 42}, tags=("a", "b")))
    got = json.loads(obs.stdout)
    assert got["argv"] == [prompt, "c-1", "42", "a,b", "subj/m-1"]
    assert got["stdin"] == f"Q: {prompt}\n"
    assert got["var"] == f"must_trigger:{os.environ['HOME']}"
    assert got["path"] is True  # `env` is merged over the current environment
    assert not marker.exists()
    assert obs.exit_code == 0 and obs.stderr == "" and obs.content == obs.stdout
    assert obs.duration_ms >= 0 and obs.meta is None


def test_without_stdin_the_program_reads_end_of_file_at_once():
    rt = runtime(argv=[PY, "-c", ECHO])
    got = json.loads(invoke(rt).stdout)
    assert got["stdin"] == "" and got["argv"] == []


def test_exit_code_and_stderr_are_observed():
    rt = runtime(argv=[PY, "-c", "import sys; print('out'); sys.stderr.write('bad\\n'); "
                                 "sys.exit(3)"])
    obs = invoke(rt)
    assert (obs.exit_code, obs.stdout, obs.stderr) == (3, "out\n", "bad\n")


def test_a_program_that_ignores_a_large_stdin_is_fine():
    rt = runtime(argv=[PY, "-c", "print('done')"], stdin="{{ prompt }}")
    obs = invoke(rt, case("x" * 5_000_000))
    assert obs.exit_code == 0 and obs.stdout == "done\n"


def test_cwd_relative_to_the_process_working_directory(tmp_path, monkeypatch):
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path)
    rt = runtime(argv=[PY, "-c", ECHO], cwd="work")
    assert json.loads(invoke(rt).stdout)["cwd"] == str((tmp_path / "work").resolve())
    with pytest.raises(TrialError) as info:
        invoke(runtime(argv=[PY, "-c", ECHO], cwd="missing"))
    assert info.value.kind == "cwd_not_found"


def test_a_missing_program_is_command_not_found():
    with pytest.raises(TrialError) as info:
        invoke(runtime(argv=["ix-no-such-program-xyz", "{{ prompt }}"]))
    assert info.value.kind == "command_not_found"
    assert "ix-no-such-program-xyz" in info.value.message


def test_output_beyond_the_limit_is_truncated_and_the_program_still_finishes():
    rt = runtime(argv=[PY, "-c", "import sys; sys.stdout.write('y' * 5_000_000); "
                                 "sys.stderr.write('e'); sys.exit(7)"])
    obs = invoke(rt)
    assert len(obs.stdout) == 1 << 20 and set(obs.stdout) == {"y"}
    assert obs.exit_code == 7 and obs.stderr == "e"
    assert obs.meta["truncated"] is True
    assert obs.meta["stdout_bytes"] == 5_000_000 and obs.meta["stderr_bytes"] == 1


def test_truncation_mid_character_drops_the_partial_character():
    rt = runtime(argv=[PY, "-c", "import sys; sys.stdout.buffer.write('é'.encode() * 10)"],
                 max_output_bytes=5)
    obs = invoke(rt)
    assert obs.stdout == "éé" and obs.meta["truncated"] is True


def test_invalid_utf8_is_replaced_not_fatal():
    rt = runtime(argv=[PY, "-c", "import sys; sys.stdout.buffer.write(b'ok \\xff\\xfe end')"])
    obs = invoke(rt)
    assert obs.stdout == "ok \ufffd\ufffd end"


def test_an_unknown_template_variable_is_a_template_error():
    rt = runtime(argv=[PY, "-c", "pass", "{{ case.metadata.missing }}"])
    with pytest.raises(TrialError) as info:
        invoke(rt, case(metadata={"x": 1}))
    assert info.value.kind == "template_error"
    assert "argv[3]" in info.value.message and "'missing'" in info.value.message
    with pytest.raises(TrialError) as info:
        invoke(runtime(argv=[PY, "{{ promt }}"]))
    assert info.value.kind == "template_error" and "promt" in info.value.message


def test_env_is_not_a_template_variable_of_argv_and_unset_variables_are_errors():
    with pytest.raises(TrialError) as info:
        invoke(runtime(argv=[PY, "-c", "pass", "{{ env.HOME }}"]))
    assert info.value.kind == "template_error" and "env" in info.value.message
    with pytest.raises(TrialError) as info:
        invoke(runtime(argv=[PY, "-c", "pass"], env={"A": "{{ env.IX_SURELY_UNSET_42 }}"}))
    assert "IX_SURELY_UNSET_42" in info.value.message and "not set" in info.value.message


def test_the_sandbox_keeps_templates_out_of_python_internals():
    rt = runtime(argv=[PY, "-c", "pass", "{{ case.__class__.__mro__ }}"])
    with pytest.raises(TrialError) as info:
        invoke(rt)
    assert info.value.kind == "template_error"


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_cancelling_the_trial_kills_and_reaps_the_process_group(tmp_path):
    pids = tmp_path / "pids"
    script = tmp_path / "sleeper.py"
    script.write_text(
        "import os, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}')\n"
        "time.sleep(60)\n")
    rt = runtime(argv=[PY, str(script)])

    async def main():
        task = asyncio.ensure_future(rt.invoke(SUBJECT, case()))
        while not pids.exists() or not pids.read_text():
            await asyncio.sleep(0.02)
        t0 = time.perf_counter()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.perf_counter() - t0

    elapsed = asyncio.run(main())
    assert elapsed < 5
    leader, child = map(int, pids.read_text().split())
    # The leader was our child: reaped before the trial ended, so not even a zombie.
    with pytest.raises(ProcessLookupError):
        os.kill(leader, 0)
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(child), "the program's own child outlived the trial"


def test_a_timeout_around_the_trial_kills_the_process(tmp_path):
    rt = runtime(argv=[PY, "-c", "import os, time; print(os.getpid(), flush=True); "
                                 "time.sleep(60)"])

    async def main():
        await asyncio.wait_for(rt.invoke(SUBJECT, case()), 0.5)

    t0 = time.perf_counter()
    with pytest.raises(TimeoutError):
        asyncio.run(main())
    assert time.perf_counter() - t0 < 5
    me = psutil.Process()
    assert not [c for c in me.children(recursive=True) if "time.sleep(60)" in
                " ".join(c.cmdline())]


def test_many_trials_at_once():
    rt = runtime(argv=[PY, "-c", "import sys; print(sys.argv[1])", "{{ case.id }}"])

    async def main():
        return await asyncio.gather(*(rt.invoke(SUBJECT, case(case_id=f"c{i}"))
                                      for i in range(20)))

    assert [o.stdout for o in asyncio.run(main())] == [f"c{i}\n" for i in range(20)]


@pytest.mark.parametrize("options,field", [
    ({}, "runtime.argv"),
    ({"argv": []}, "runtime.argv"),
    ({"argv": "echo hi"}, "runtime.argv"),
    ({"argv": ["echo", "{{ prompt "]}, "runtime.argv"),
    ({"argv": ["echo"], "stdin": "{% if %}"}, "runtime.stdin"),
    ({"argv": ["echo"], "env": {"A": 1}}, "runtime.env.A"),
    ({"argv": ["echo"], "env": {"A": "{{"}}, "runtime.env.A"),
    ({"argv": ["echo"], "max_output_bytes": 0}, "runtime.max_output_bytes"),
    ({"argv": ["echo"], "shell": True}, "runtime.shell"),
])
def test_bad_options_name_the_field(options, field):
    with pytest.raises(ConfigError) as info:
        runtime(**options)
    assert info.value.field == field


def test_registered_with_a_default_concurrency():
    from ix.runtimes import get_kind

    kind = get_kind("command")
    assert 4 <= kind.default_concurrency <= 32


def test_stdin_path_is_independent_of_argv(tmp_path: Path):
    rt = runtime(argv=[PY, "-c", "import sys; print(sys.stdin.read().upper(), end='')"],
                 stdin="{{ prompt }}")
    assert invoke(rt, case("héllo")).stdout == "HÉLLO"
