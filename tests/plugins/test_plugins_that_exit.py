"""Plugins cannot fake success: a plugin that calls `sys.exit(0)` or raises another
`BaseException` (at its import, when called with its options, in `invoke`, `sense` or
`generate`) is a plugin error naming its distribution, version and entry point — exit 2 before
a run, a failed trial (kind `plugin_error`, in the trial log) during one — never exit 0 with
nothing done, never a traceback, never a hang. Ctrl-C from plugin code still stops ix."""

import json
from pathlib import Path

import pytest

from conftest import case, flat, run_ix, write
from plugins.test_plugins_cli import assert_one_line_error, python_path

#: One plugin of each kind; `IX_TEST_STOP_AT` says where it raises `IX_TEST_STOP_WITH`.
EXITING = '''
import asyncio, os, sys

from ix.eval.models import EvalObservation

AT = os.environ.get("IX_TEST_STOP_AT", "")


def stop():
    raise eval(os.environ["IX_TEST_STOP_WITH"])


if AT == "import":
    stop()


class Runtime:
    history = "unused"

    def __init__(self, **options):
        if AT == "factory":
            stop()

    async def invoke(self, subject, stimulus, *, seed=0, attempt=0):
        await asyncio.sleep(0)
        if AT == "invoke":
            stop()
        return EvalObservation(content="ok")


class Sensor:
    name = "stops"

    def __init__(self, **options):
        pass

    def sense(self, interaction):
        if AT == "sense":
            stop()
        return []


class Probe:
    def __init__(self, **options):
        pass

    def generate(self):
        yield {"prompt": "one", "expectation": "must_trigger"}
        if AT == "generate":
            stop()
'''

ENTRY_POINTS = {"ix.runtimes": {"exiting": "ix_exiting:Runtime"},
                "ix.sensors": {"stops": "ix_exiting:Sensor"},
                "ix.probes": {"stopping": "ix_exiting:Probe"}}
NAMED = "the runtime plugin 'exiting' of ix-exiting 0.2 (entry point ix.runtimes: exiting = " \
        "ix_exiting:Runtime)"


@pytest.fixture
def site(tmp_path: Path, distribution) -> Path:
    return distribution(tmp_path / "site", "ix-exiting", "0.2", {"ix_exiting": EXITING},
                        ENTRY_POINTS)


def experiment(lab: Path, runtime: str = "{kind: exiting}", sensor: str = "activation",
               extra: str = "") -> Path:
    d = lab / "exp"
    write(d / "experiment.yaml",
          f"name: exp\ntrials: 1\nruntime: {runtime}\nsensor: {sensor}\n{extra}")
    case(d, "must-001", "must_trigger", "hi there")
    return d


def env(site: Path, at: str, raised: str) -> dict[str, str]:
    return {**python_path(site), "IX_TEST_STOP_AT": at, "IX_TEST_STOP_WITH": raised}


@pytest.mark.parametrize(("at", "raised", "said"), [
    ("import", "SystemExit(0)", "could not be loaded: SystemExit: 0"),
    ("factory", "SystemExit(0)", "rejected its options: SystemExit: 0"),
    ("import", "BaseException('at import')", "could not be loaded: BaseException: at import"),
    ("factory", "GeneratorExit()", "rejected its options: GeneratorExit"),
])
def test_a_plugin_that_exits_at_import_or_when_built_is_exit_2_not_success(
        lab, site, at, raised, said):
    exp = experiment(lab)
    for command in ("validate", "run"):
        result = run_ix(command, "--lab", str(lab), *(["exp"] if command == "run" else []),
                        env=env(site, at, raised))
        assert_one_line_error(result, f"{exp / 'experiment.yaml'}: runtime: {NAMED} {said}",
                              "a plugin must raise an exception, not stop ix")
    assert not (exp / "results").exists()


def test_plugins_check_reports_a_plugin_that_exits_at_import(site):
    result = run_ix("plugins", "--check", "--json", env=env(site, "import", "SystemExit(0)"))
    assert result.code == 1, result.output
    assert "Traceback" not in result.output
    rows = {p["name"]: p for p in json.loads(result.stdout)["plugins"]}
    assert rows["exiting"]["loads"] is False
    assert rows["exiting"]["error"].startswith("SystemExit: 0 (a plugin must raise")


@pytest.mark.parametrize(("runtime", "sensor", "at", "raised", "method"), [
    ("{kind: exiting}", "activation", "invoke", "SystemExit(0)", "the runtime plugin "
     "'exiting' of ix-exiting 0.2 (entry point ix.runtimes: exiting = ix_exiting:Runtime): "
     "invoke() raised SystemExit: 0"),
    ("{kind: exiting}", "activation", "invoke", "asyncio.CancelledError()", "invoke() raised "
     "CancelledError"),
    ("mock", "{kind: stops}", "sense", "SystemExit(0)", "the sensor plugin 'stops' of "
     "ix-exiting 0.2 (entry point ix.sensors: stops = ix_exiting:Sensor): sense() raised "
     "SystemExit: 0"),
])
def test_a_plugin_that_exits_in_a_trial_fails_that_trial_and_the_run(
        lab, site, runtime, sensor, at, raised, method):
    exp = experiment(lab, runtime, sensor)
    result = run_ix("run", "--lab", str(lab), "exp", env=env(site, at, raised), timeout=60)
    assert result.code == 1, result.output  # the run failed: every trial of it errored
    assert "Traceback" not in result.output
    said = flat(result.stderr)
    assert "plugin_error" in said
    assert "stopped (`sys.exit()`) instead of raising an exception" in said  # the hint
    [line] = [json.loads(x) for x in (exp / "results/trials.jsonl").read_text().splitlines()]
    assert line["error"]["kind"] == "plugin_error"
    assert method in line["error"]["message"]


def test_a_probe_that_exits_while_generating_is_exit_2(lab, site):
    exp = experiment(lab, "mock", extra="probe: {kind: stopping}\n")
    result = run_ix("run", "--lab", str(lab), "exp", env=env(site, "generate", "SystemExit(0)"))
    assert_one_line_error(result, f"{exp / 'experiment.yaml'}: probe: the probe plugin "
                                  "'stopping' of ix-exiting 0.2 (entry point "
                                  "ix.probes: stopping = ix_exiting:Probe): generate() raised "
                                  "SystemExit: 0")
    assert not (exp / "results" / "trials.jsonl").exists()


def test_ctrl_c_from_plugin_code_still_stops_ix(lab, site):
    exp = experiment(lab)
    result = run_ix("run", "--lab", str(lab), "exp",
                    env=env(site, "invoke", "KeyboardInterrupt()"), timeout=60)
    assert result.code == 130, result.output
    assert "Traceback" not in result.output
    assert not (exp / "results/trials.jsonl").exists() \
        or "plugin_error" not in (exp / "results/trials.jsonl").read_text()
