"""Plugins through the real `ix`: distributions installed in a folder on PYTHONPATH. A plugin
that fails to import or rejects its options is exit 2 and one line naming the distribution,
never a traceback; an unknown kind no plugin provides keeps its did-you-mean."""

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema

from conftest import case, flat, run_ix, write
from ix.api.schemas import json_schema
from ix.runtimes import available

BROKEN = {"ix_broken": "raise RuntimeError('boom at import')\n"}


def python_path(*folders: Path) -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join([*map(str, folders),
                                           *filter(None, [os.environ.get("PYTHONPATH")])])}


def experiment(lab: Path, runtime: str, sensor: str = "sensor: {kind: contains, word: hi}"
               ) -> Path:
    d = lab / "exp"
    write(d / "experiment.yaml", f"name: exp\ntrials: 1\nruntime: {runtime}\n{sensor}\n")
    case(d, "must-001", "must_trigger", "hi there")
    case(d, "not-001", "should_not_trigger", "bye")
    return d


def assert_one_line_error(result, *parts: str) -> None:
    assert result.code == 2, result.output
    assert "Traceback" not in result.output
    [line] = flat(result.stderr).splitlines()
    for part in parts:
        assert part in line, line


def test_a_runtime_that_rejects_its_options_is_exit_2_naming_the_distribution(lab, echo_plugin):
    exp = experiment(lab, "{kind: echo, reply: 5}")
    result = run_ix("run", "--lab", str(lab), "exp", env=python_path(echo_plugin))
    assert_one_line_error(
        result, f"{exp / 'experiment.yaml'}: runtime: the runtime plugin 'echo' of "
                "ix-echo-plugin 1.0 (entry point ix.runtimes: echo = "
                "ix_echo_plugin:EchoRuntime) rejected its options: ValueError: reply must be "
                "text, got 5")
    assert not (exp / "results").exists()


def test_a_sensor_that_rejects_its_options_is_exit_2_at_its_field(lab, echo_plugin):
    exp = experiment(lab, "mock", "sensors: [activation, {kind: contains, wrod: hi}]")
    result = run_ix("validate", "--lab", str(lab), env=python_path(echo_plugin))
    assert_one_line_error(result, f"{exp / 'experiment.yaml'}: sensors[1].kind: the sensor "
                                  "plugin 'contains' of ix-echo-plugin 1.0",
                          "rejected its options: TypeError: ", "'wrod'")


def test_a_plugin_that_fails_to_import_is_exit_2_naming_the_distribution(lab, tmp_path,
                                                                         distribution):
    site = distribution(tmp_path / "site", "ix-broken", "0.3", BROKEN,
                        {"ix.runtimes": {"broken": "ix_broken:Runtime"}})
    exp = experiment(lab, "{kind: broken, speed: 3}", "sensor: activation")
    result = run_ix("run", "--lab", str(lab), "exp", env=python_path(site))
    assert_one_line_error(
        result, f"{exp / 'experiment.yaml'}: runtime: the runtime plugin 'broken' of "
                "ix-broken 0.3 (entry point ix.runtimes: broken = ix_broken:Runtime) could not "
                "be loaded: RuntimeError: boom at import")


def test_plugins_check_reports_the_one_that_does_not_import(tmp_path, distribution,
                                                            echo_plugin):
    site = distribution(tmp_path / "broken", "ix-broken", "0.3", BROKEN,
                        {"ix.sensors": {"broken": "ix_broken:Sensor"}})
    env = python_path(echo_plugin, site)
    listed = run_ix("plugins", "--json", env=env)
    assert listed.code == 0, listed.output
    output = json.loads(listed.stdout)
    jsonschema.Draft202012Validator(json_schema("plugins")).validate(output)
    rows = {(p["group"], p["name"]): p for p in output["plugins"]}
    assert rows[("sensor", "broken")] == {
        "group": "sensor", "name": "broken", "distribution": "ix-broken", "version": "0.3",
        "target": "ix_broken:Sensor", "shadowed": False, "loads": None, "error": None}
    checked = run_ix("plugins", "--check", env=env)
    assert checked.code == 1, checked.output
    assert "Traceback" not in checked.output
    assert "RuntimeError: boom at import" in checked.stdout
    assert "ix-echo-plugin" in checked.stdout and "yes" in checked.stdout


def test_an_unknown_kind_no_plugin_provides_keeps_its_did_you_mean(lab, echo_plugin):
    exp = experiment(lab, "mokc", "sensor: activation")
    result = run_ix("run", "--lab", str(lab), "exp")
    assert_one_line_error(result, f"{exp / 'experiment.yaml'}: runtime: unknown runtime "
                                  f"'mokc'; did you mean 'mock'? (allowed: "
                                  f"{', '.join(available())})")
    write(exp / "experiment.yaml", "name: exp\nruntime: mock\nsensor: {kind: contians}\n")
    result = run_ix("validate", "--lab", str(lab), env=python_path(echo_plugin))
    assert_one_line_error(result, "sensor.kind: unknown sensor 'contians'; did you mean "
                                  "'contains'? (allowed: ", "contains, ")


def test_help_imports_no_plugin_machinery():
    probe = ("import sys\nsys.argv = ['ix', '--help']\nfrom ix.cli import main\ntry:\n"
             "    main()\nexcept SystemExit:\n    pass\n"
             "assert 'ix.eval.plugins' not in sys.modules\n"
             "assert 'importlib.metadata' not in sys.modules, 'importlib.metadata'\n")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
