"""`ix.testing` and its pytest plugin: a goal or a metric as a test, in a real pytest run.

The plugin is found through its entry point (`pytest11`), so the runs here are `python -m
pytest` in a subprocess on a temporary project: a lab with a refuted goal, a supported one and
an experiment without a goal, and a test file that asserts them.
"""

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from conftest import comparison_experiment, mock_experiment, write
from ix.api import ConfigError
from ix.report.answer import goal_lines
from ix.testing import assert_experiment, assert_goal

GOAL = ("goal:\n  hypothesis: the skill helps\n  metric: recall\n  direction: increase\n"
        "  min_effect: 0.05\n  compare: [control, with-skill]\n")

TESTS = '''
from ix.testing import assert_experiment, assert_goal

def test_refuted_goal():
    assert_goal("refuted")

def test_supported_goal():
    assert_goal("supported")

def test_f1_is_credibly_high():
    assert_experiment("supported", metric="f1", at_least=0.5)

def test_f1_is_not_credibly_perfect():
    assert_experiment("supported", metric="f1", at_least=0.99)
'''

READS = '''
from ix.testing import assert_experiment, assert_goal

def test_read_by_the_option():
    assert_goal("supported")  # --ix-no-rerun

def test_read_by_the_argument(ix_lab):
    assert_experiment("refuted", metric="recall", at_least=0.5, subject="control",
                      lab=ix_lab.path, rerun=False)
'''


def project(root: Path) -> Path:
    """A project: lab/ (refuted, supported, plain without a goal) and tests/."""
    lab = root / "lab"
    comparison_experiment(lab, n_must=10, n_not=4, trials=3, control=0.9,
                          variants={"with-skill": 0.2}, goal=GOAL, name="refuted")
    comparison_experiment(lab, n_must=10, n_not=4, trials=3, control=0.2,
                          variants={"with-skill": 0.9}, goal=GOAL, name="supported")
    mock_experiment(lab, "plain", trials=2, runtime_extra="default_rate: 0.8")
    write(root / "pytest.ini", "[pytest]\n")
    write(root / "tests" / "test_skill.py", TESTS)
    write(root / "reads" / "test_reads.py", READS)
    return lab


def pytest_run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("IX_", "PYTEST_"))}
    env.update(XDG_CONFIG_HOME=str(root / ".no-user-config"), NO_COLOR="1", COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA",
                           "-W", "ignore::UserWarning", *args],
                          cwd=root, env=env, capture_output=True, text=True, timeout=240)


def latest_summary(experiment: Path) -> dict:
    return json.loads((experiment / "results" / "summary-latest.json").read_text())


def runs(lab: Path) -> list[str]:
    return sorted(str(p.relative_to(lab)) for p in lab.glob("*/results/runs/*"))


def test_a_refuted_goal_fails_with_its_sentences_and_the_summary_lists_each_verdict(
        tmp_path: Path):
    found = [e.value for e in entry_points(group="pytest11") if e.name == "ix"]
    assert found == ["ix.testing.plugin"], \
        "no pytest11 entry point `ix`: reinstall ix (`pip install -e .`) to register it"
    lab = project(tmp_path)
    r = pytest_run(tmp_path, "tests", "--ix-lab", "lab", "--ix-collect", "-v")
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    # the test file's assertions: a refuted goal fails, with the goal's own lines
    assert "FAILED tests/test_skill.py::test_refuted_goal" in out
    assert "PASSED tests/test_skill.py::test_supported_goal" in out
    for line in goal_lines(latest_summary(lab / "refuted")["goal"]):
        assert line in out, line
    assert "REFUTED — goal: the skill helps" in out
    # a metric's threshold: passes when the interval's lower bound is above it, else one
    # sentence with the value and the interval
    assert "PASSED tests/test_skill.py::test_f1_is_credibly_high" in out
    assert "FAILED tests/test_skill.py::test_f1_is_not_credibly_perfect" in out
    f1 = next(b for b in latest_summary(lab / "supported")["subjects"]
              if b["name"] == "with-skill")["metrics"]
    lo, hi = f1["f1_ci"]
    assert (f"F1 of with-skill {f1['f1']:.3f} [{lo:.2f}, {hi:.2f}] is not credibly at least "
            "0.99 (95%) — run ") in out
    # --ix-collect: each experiment.yaml of the lab (outside the test paths) is an item
    assert "lab/refuted/experiment.yaml::ix:refuted FAILED" in out
    assert "lab/supported/experiment.yaml::ix:supported PASSED" in out
    assert "lab/plain/experiment.yaml::ix:plain PASSED" in out
    assert "7 passed" not in out and "3 failed, 4 passed" in out
    # the terminal summary: one line per assertion, verdict word first
    section = out[out.index("ix verdicts"):]
    assert "REFUTED      refuted: recall: control " in section
    assert "SUPPORTED    supported: recall: control " in section
    assert "NO GOAL      plain: the run completed; no goal to judge" in section
    assert "NOT MET      supported: F1 of with-skill" in section
    assert "\nMET          supported: F1 of with-skill" in section

    # --ix-no-rerun (and rerun=False) read the latest run: no new run folder
    before = runs(lab)
    r = pytest_run(tmp_path, "reads", "--ix-lab", "lab", "--ix-no-rerun")
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "2 passed" in out
    assert runs(lab) == before
    assert f"(run {latest_summary(lab / 'supported')['run_id']})" in out


def test_the_interval_at_another_credibility_is_the_leaderboards(lab: Path):
    comparison_experiment(lab, n_must=10, n_not=4, trials=3, control=0.2,
                          variants={"with-skill": 0.9}, goal=GOAL, name="supported")
    summary = assert_goal("supported", lab=lab)
    # the default subject is the goal's treatment; at 0.95 the summary's own interval
    assert_experiment("supported", at_least=0.5, lab=lab, rerun=False)
    with pytest.raises(AssertionError, match=r"^recall of control 0\.\d{3} \[0\.\d\d, "
                       r"0\.\d\d\] is not credibly at most 0\.01 \(80%\) — run "):
        assert_experiment("supported", "recall", at_most=0.01, credibility=0.8,
                          subject="control", lab=lab, rerun=False)
    wide = summary["subjects"][0]["metrics"]["recall_ci"]
    with pytest.raises(AssertionError) as narrow:
        assert_experiment("supported", "recall", at_most=0.0, credibility=0.5,
                          subject="control", lab=lab, rerun=False)
    lo, hi = (float(x) for x in str(narrow.value).split("[")[1].split("]")[0].split(", "))
    assert wide[0] <= lo and hi < wide[1]  # a 50% interval inside the 95% one


def test_a_missing_experiment_run_subject_or_goal_is_a_configuration_error(lab: Path):
    mock_experiment(lab, "plain", trials=2, runtime_extra="default_rate: 0.8")
    with pytest.raises(ConfigError, match="no experiment 'nope' in lab"):
        assert_goal("nope", lab=lab)
    with pytest.raises(ConfigError, match="has no finished run yet"):
        assert_experiment("plain", at_least=0.5, lab=lab, rerun=False)
    with pytest.raises(ConfigError, match="has no goal"):
        assert_goal("plain", lab=lab)
    with pytest.raises(ConfigError, match="no subject 'nobody'"):
        assert_experiment("plain", at_least=0.5, subject="nobody", lab=lab, rerun=False)
    with pytest.raises(TypeError, match="at_least= or at_most="):
        assert_experiment("plain", lab=lab)
    with pytest.raises(ConfigError, match="no lab"):
        assert_goal("plain", lab=lab / "elsewhere")
