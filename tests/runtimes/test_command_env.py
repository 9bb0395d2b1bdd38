"""The `command` runtime's environment is an allowlist: a program sees `BASE_ENV`, `LC_*`,
the names in `env_passthrough` and its `env` option, never ix's API keys by default."""

import asyncio
import json
import sys

import pytest

from ix.domain.errors import ConfigError
from ix.domain.types import Subject
from ix.eval.models import EvalCase
from ix.runtimes import RuntimeContext, build_runtime

PY = sys.executable
DUMP = "import json, os; print(json.dumps(dict(os.environ)))"


def environment_of(monkeypatch: pytest.MonkeyPatch, **options) -> dict[str, str]:
    """The environment the program saw, run with `options` in a known environment."""
    for name, value in {"ANTHROPIC_API_KEY": "sk-ant-not-for-programs-123456",
                        "DEPLOY_TOKEN": "dep-0123456789", "PLAIN_SETTING": "plain",
                        "LC_TIME": "C", "LANG": "C.UTF-8", "TZ": "UTC"}.items():
        monkeypatch.setenv(name, value)
    rt = build_runtime({"kind": "command", "argv": [PY, "-c", DUMP], **options},
                       RuntimeContext())
    obs = asyncio.run(rt.invoke(Subject(name="s"), EvalCase(id="c", prompt="p",
                                                             expectation="must_trigger")))
    assert obs.exit_code == 0, obs.stderr
    return json.loads(obs.stdout)


def test_a_program_inherits_only_the_base_environment(monkeypatch: pytest.MonkeyPatch):
    seen = environment_of(monkeypatch)
    assert {"ANTHROPIC_API_KEY", "DEPLOY_TOKEN", "PLAIN_SETTING"}.isdisjoint(seen)
    assert seen["LC_TIME"] == "C" and seen["LANG"] == "C.UTF-8" and seen["TZ"] == "UTC"
    assert seen["PATH"] and seen["HOME"]


def test_env_passthrough_adds_names_and_env_sets_values(monkeypatch: pytest.MonkeyPatch):
    seen = environment_of(monkeypatch, env_passthrough=["DEPLOY_TOKEN", "NOT_SET_ANYWHERE"],
                          env={"GIVEN": "{{ env.PLAIN_SETTING }}-{{ case.id }}",
                               "LANG": "en_GB.UTF-8"})
    assert seen["DEPLOY_TOKEN"] == "dep-0123456789"
    assert "NOT_SET_ANYWHERE" not in seen  # a name that is not set stays unset
    assert seen["GIVEN"] == "plain-c" and seen["LANG"] == "en_GB.UTF-8"  # env wins
    assert "ANTHROPIC_API_KEY" not in seen and "PLAIN_SETTING" not in seen


@pytest.mark.parametrize("value,field", [
    ("DEPLOY_TOKEN", "runtime.env_passthrough"),
    ({"DEPLOY_TOKEN": 1}, "runtime.env_passthrough"),
    (["PATH", 3], "runtime.env_passthrough[1]"),
    (["PATH", None], "runtime.env_passthrough[1]"),
    (["A=B"], "runtime.env_passthrough[0]"),
    ([""], "runtime.env_passthrough[0]"),
    (["9LIVES"], "runtime.env_passthrough[0]"),
])
def test_a_bad_env_passthrough_names_the_field(value, field):
    with pytest.raises(ConfigError) as info:
        build_runtime({"kind": "command", "argv": ["env"], "env_passthrough": value},
                      RuntimeContext())
    assert info.value.field == field
