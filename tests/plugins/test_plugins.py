"""The plugin lookup in process (`ix.eval.plugins`), against real installed-distribution
layouts on `sys.path`: runtime, sensor and probe kinds ix does not know come from entry points,
built-in kinds win and never cause a scan, and every failure is a `ConfigError` naming the
distribution, its version and the entry point."""

import asyncio
from pathlib import Path

import pytest

from conftest import mock_experiment
from ix import api
from ix.domain.errors import ConfigError
from ix.domain.types import Interaction, Subject
from ix.eval import plugins
from ix.eval.models import EvalCase
from ix.eval.sensors import build_sensor
from ix.runtimes import RuntimeContext, build_runtime, get_kind

CASE = EvalCase(id="must-001", prompt="hi there", expectation="must_trigger")


@pytest.fixture
def echo(echo_plugin: Path, fresh_plugins, monkeypatch) -> Path:
    monkeypatch.syspath_prepend(str(echo_plugin))
    return echo_plugin


def test_an_unknown_runtime_kind_is_built_by_the_installed_plugin(echo):
    kind = get_kind("echo")
    assert (kind.history, kind.default_concurrency, kind.spends_tokens) == ("unused", 4, False)
    assert kind.summary == "Answers every case with its prompt after a fixed reply."
    runtime = build_runtime({"kind": "echo", "reply": "said:"}, RuntimeContext())
    observation = asyncio.run(runtime.invoke(Subject(name="s"), CASE, seed=1, attempt=0))
    assert observation.content == "said: hi there"
    assert plugins.in_use("runtime", "echo") is not None


def test_a_sensor_and_a_probe_come_from_plugins_too(echo):
    sensor = build_sensor("contains", {"word": "there"}, target_skill="t")
    observation = asyncio.run(build_runtime({"kind": "echo"}, RuntimeContext()).invoke(
        Subject(name="s"), CASE))
    [reading] = sensor.sense(Interaction(stimulus=CASE, trial_index=0, observation=observation))
    assert (sensor.name, reading.sensor_name, reading.passed) == ("contains", "contains", True)
    assert list(plugins.load_probe("numbered", {"n": 3}).generate()) == [
        "case 0", "case 1", "case 2"]


def test_installed_lists_each_entry_point_with_its_distribution(echo):
    found = [(p.kind, p.name, p.distribution, p.version, p.target)
             for p in plugins.installed() if p.distribution == "ix-echo-plugin"]
    assert found == [
        ("runtime", "echo", "ix-echo-plugin", "1.0", "ix_echo_plugin:EchoRuntime"),
        ("sensor", "contains", "ix-echo-plugin", "1.0", "ix_echo_plugin:ContainsSensor"),
        ("probe", "numbered", "ix-echo-plugin", "1.0", "ix_echo_plugin:NumberedProbe"),
    ]


def test_options_the_plugin_rejects_are_a_config_error_naming_the_distribution(echo):
    with pytest.raises(ConfigError) as caught:
        build_runtime({"kind": "echo", "colour": "red"}, RuntimeContext())
    assert caught.value.field == "runtime.kind"
    message = caught.value.message
    assert message.startswith("the runtime plugin 'echo' of ix-echo-plugin 1.0 (entry point "
                              "ix.runtimes: echo = ix_echo_plugin:EchoRuntime) rejected its "
                              "options: TypeError: ")
    assert "'colour'" in message
    with pytest.raises(ConfigError, match=r"rejected its options: TypeError: .*'word'") as bad:
        build_sensor("contains", {}, target_skill="t", field="sensors[1]")
    assert bad.value.field == "sensors[1].kind"


def test_a_plugin_that_fails_to_import_is_a_config_error(tmp_path, distribution, fresh_plugins,
                                                         monkeypatch):
    site = distribution(tmp_path / "bad", "ix-broken", "0.3",
                              {"ix_broken": "raise RuntimeError('boom\\nat import')\n"},
                              {"ix.runtimes": {"broken": "ix_broken:Runtime"}})
    monkeypatch.syspath_prepend(str(site))
    with pytest.raises(ConfigError) as caught:
        get_kind("broken")
    assert caught.value.field == "runtime.kind"
    assert caught.value.message == (
        "the runtime plugin 'broken' of ix-broken 0.3 (entry point ix.runtimes: broken = "
        "ix_broken:Runtime) could not be loaded: RuntimeError: boom at import")
    [listed] = [p for p in plugins.installed() if p.name == "broken"]
    assert "RuntimeError: boom at import" in (plugins.check(listed) or "")
    assert plugins.in_use("runtime", "broken") is None  # checked, not in use


def test_built_in_kinds_win_and_their_plugin_is_never_imported(tmp_path, distribution,
                                                              fresh_plugins, monkeypatch):
    site = distribution(tmp_path / "shadow", "ix-shadow", "1.0",
                              {"ix_shadow": "raise RuntimeError('imported')\n"},
                              {"ix.runtimes": {"mock": "ix_shadow:Mock"},
                               "ix.sensors": {"latency": "ix_shadow:Latency"}})
    monkeypatch.syspath_prepend(str(site))
    assert get_kind("mock").default_concurrency == 100
    assert build_sensor("latency", {"max_ms": 10}, target_skill="t").name == "latency"
    shown = {p.plugin.name: p.shadowed for p in api.plugins.list_plugins()
             if p.plugin.distribution == "ix-shadow"}
    assert shown == {"mock": True, "latency": True}


def test_runs_of_built_in_kinds_never_scan_entry_points(lab, fresh_plugins, monkeypatch):
    def scan(kind):
        raise AssertionError(f"scanned the {kind} entry points")

    monkeypatch.setattr(plugins, "_scan", scan)
    exp = mock_experiment(lab, trials=1, extra_yaml="sensors: [activation, {kind: latency, "
                                                    "max_ms: 1000}]\n")
    plan = api.plan(api.load(exp, lab))
    assert plan.plugins == ()


def test_two_distributions_with_one_name_is_refused(tmp_path, distribution, fresh_plugins,
                                                    monkeypatch):
    for dist in ("ix-one", "ix-two"):
        site = distribution(tmp_path / dist, dist, "2.0", {},
                                  {"ix.sensors": {"same": f"{dist.replace('-', '_')}:S"}})
        monkeypatch.syspath_prepend(str(site))
    with pytest.raises(ConfigError, match=r"2 installed plugins provide the sensor 'same': "
                                          r".*ix-one 2\.0.*ix-two 2\.0.*uninstall all but one"):
        build_sensor("same", {}, target_skill="t")


def test_an_unknown_probe_names_the_installed_ones(echo):
    with pytest.raises(ConfigError, match=r"unknown probe 'numbred'; did you mean 'numbered'"):
        plugins.load_probe("numbred")


def test_a_plan_records_the_plugins_it_uses(echo, lab):
    exp = lab / "exp"
    (exp / "cases").mkdir(parents=True)
    (exp / "experiment.yaml").write_text(
        "name: exp\ntrials: 1\nruntime: {kind: echo}\nsensor: {kind: contains, word: hi}\n")
    (exp / "cases" / "must-001.md").write_text("---\nexpectation: must_trigger\n---\nhi\n")
    plan = api.plan(api.load(exp, lab))
    assert [p.spec() for p in plan.plugins] == [
        {"group": "runtime", "name": "echo", "distribution": "ix-echo-plugin", "version": "1.0"},
        {"group": "sensor", "name": "contains", "distribution": "ix-echo-plugin",
         "version": "1.0"},
    ]
