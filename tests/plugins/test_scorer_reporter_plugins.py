"""Scorer and reporter plugins (entry-point groups `ix.scorers`, `ix.reporters`), against
real installed-distribution layouts on `sys.path`: they decide and write, are listed by `ix
plugins`, recorded in spec.yaml, and a bad option or a failure names the distribution."""

from pathlib import Path

import pytest

from conftest import mock_experiment
from ix import api
from ix.api.options import Observer
from ix.domain.errors import ConfigError

RATES = {"must-001": 0.4, "must-002": 0.9, "must-003": 0.1,
         "not-001": 0.3, "not-002": 0.0, "not-003": 0.6}

MODULE = '''
import json
from pathlib import Path


class AtLeast:
    """A case is right when at least `n` of its trials are."""

    def __init__(self, *, n):
        if not isinstance(n, int):
            raise ValueError(f"n must be a whole number, got {n!r}")
        self.n = n

    def verdict(self, case):
        return case.right >= self.n


class Boom:
    def verdict(self, case):
        raise RuntimeError("kaboom")


class Csv:
    """One line per case of the control: id and whether it is right."""

    def __init__(self, *, fail=False):
        self.fail = fail

    def write(self, report, folder):
        if self.fail:
            raise RuntimeError("the printer is on fire")
        rows = [f"{c['probe_id']},{c['by_subject'][report['summary']['subjects'][0]]['correct']}"
                for c in report["summary"]["cases"]]
        path = Path(folder) / "cases.csv"
        path.write_text("\\n".join(rows) + "\\n")
        return path
'''


@pytest.fixture
def installed(tmp_path, distribution, fresh_plugins, monkeypatch) -> Path:
    root = distribution(tmp_path / "site", "ix-extras", "0.2", {"ix_extras": MODULE},
                        {"ix.scorers": {"at_least": "ix_extras:AtLeast", "boom": "ix_extras:Boom"},
                         "ix.reporters": {"csv": "ix_extras:Csv"}})
    monkeypatch.syspath_prepend(str(root))
    return root


class _Warnings(Observer):
    def __init__(self) -> None:
        self.said: list[str] = []

    def on_warning(self, message: str) -> None:
        self.said.append(message)


def test_a_scorer_plugin_decides_and_a_reporter_plugin_writes(lab, installed):
    mock_experiment(lab, "plug", rates=RATES, extra_yaml=(
        "scorers: [{kind: at_least, n: 2}]\nreporters: [md, csv]\n"))
    (result,) = api.run(lab, ["plug"])
    summary = result.summary
    assert summary["scorer"] == {"kind": "at_least", "n": 2}
    for p in summary["probe_results"]:
        right = p["passed"] if p["expectation"] == "must_trigger" else p["n"] - p["passed"]
        assert p["correct"] == (right >= 2)
    folder = Path(result.run_dir)
    lines = (folder / "cases.csv").read_text().splitlines()
    assert sorted(lines) == sorted(f"{p['probe_id']},{p['correct']}"
                                   for p in summary["probe_results"])
    assert (folder / "report.md").read_text().startswith("# ")
    spec = (folder / "spec.yaml").read_text()
    assert "group: scorer" in spec and "group: reporter" in spec
    listed = {(p.plugin.kind, p.plugin.name) for p in api.plugins.list_plugins()
              if p.plugin.distribution == "ix-extras"}
    assert listed == {("scorer", "at_least"), ("scorer", "boom"), ("reporter", "csv")}


def test_options_a_plugin_rejects_stop_the_run_before_it_starts(lab, installed):
    path = mock_experiment(lab, "rejects", rates=RATES, extra_yaml=(
        "scorers: [{kind: at_least, n: two}]\nreporters: [{kind: csv, colour: red}]\n"))
    plan, problems = api.check(path, lab)
    assert plan is None
    text = [p.render() for p in problems]
    assert any("scorers[0].kind" in t and "ix-extras 0.2" in t and "'two'" in t
               for t in text), text
    assert any("reporters[0].kind" in t and "colour" in t for t in text), text
    assert not (path / "results").exists()


def test_a_reporter_that_fails_is_a_warning_and_the_run_stands(lab, installed):
    mock_experiment(lab, "fails", rates=RATES, extra_yaml=(
        "reporters: [{kind: csv, fail: true}, json]\n"))
    heard = _Warnings()
    (result,) = api.run(lab, ["fails"], observer=heard)
    assert result.status == "completed"
    assert (Path(result.run_dir) / "report.data.json").is_file()  # the next one still wrote
    [said] = [w for w in heard.said if "a reporter failed" in w]
    assert "the printer is on fire" in said and "ix-extras 0.2" in said


def test_an_unknown_reporter_names_the_installed_ones(lab, installed):
    path = mock_experiment(lab, "unknown", rates=RATES, extra_yaml="reporters: [cvs]\n")
    with pytest.raises(ConfigError) as caught:
        api.plan(api.load(path, lab))
    assert caught.value.field == "reporters[0].kind"
    assert "did you mean 'csv'" in caught.value.message


def test_a_scorer_that_raises_fails_the_run_naming_it_and_keeps_the_trials(lab, installed):
    path = mock_experiment(lab, "boom", rates=RATES, extra_yaml="scorers: [boom]\n")
    with pytest.raises(ConfigError) as caught:
        api.run(lab, ["boom"])
    text = caught.value.render()
    assert text.startswith(f"{path / 'experiment.yaml'}: scorers[0].kind: the scorer plugin "
                           "'boom' of ix-extras 0.2"), text
    assert "verdict() raised RuntimeError: kaboom" in text
    results = path / "results"
    assert len((results / "trials.jsonl").read_text().splitlines()) == 6 * 5
    [spec] = (results / "runs").glob("*/spec.yaml")
    assert "status: failed" in spec.read_text()
