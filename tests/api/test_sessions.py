"""Longitudinal studies (`sessions:` in experiment.yaml, `ix report --sessions`): each
completed run is one session, timed by its spec.yaml's `started_at`. The tests never wait:
they run real (mock) sessions, then give each run the start time the study needs, and pass
"now" to the report."""

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from conftest import ix_in_process, run_ix, write  # type: ignore[attr-defined]
from ix.api.integrations import ci
from ix.api.sessions import read_sessions, sessions_report
from ix.domain.errors import ConfigError
from ix.lab.loader import load_experiment
from ix.stats.trend import case_level_slope

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
MUST = [f"must-{i:03d}" for i in range(6)]
NOTS = [f"not-{i:03d}" for i in range(3)]


def _study(lab: Path, treatment: float, control: float = 0.5, sessions: str =
           "{every: 1w, count: 4}", name: str = "study") -> Path:
    """A control and a treatment (mock: activation on must cases at the given rates); the
    same cases each session."""
    def subject(who: str, p: float) -> str:
        rates = ", ".join([f"{c}: {p}" for c in MUST] + [f"{c}: 0.1" for c in NOTS])
        return f"  - name: {who}\n    runtime: {{kind: mock, activation_rates: {{{rates}}}}}"

    d = lab / name
    write(d / "experiment.yaml",
          f"name: {name}\ntrials: 4\nsensor: {{kind: activation, skill: a}}\n"
          f"sessions: {sessions}\nsubjects:\n{subject('control', control)}\n"
          f"{subject('treatment', treatment)}\n")
    for c in MUST:
        write(d / "cases" / f"{c}.md", f"---\nexpectation: must_trigger\n---\nDo {c}\n")
    for c in NOTS:
        write(d / "cases" / f"{c}.md", f"---\nexpectation: should_not_trigger\n---\nNot {c}\n")
    return d


def _session(lab: Path, at: datetime, treatment: float, name: str = "study") -> str:
    """Run one session, then date its run `at` (what a study run on that day records)."""
    _study(lab, treatment, name=name)
    r = ix_in_process("run", "--lab", str(lab), name, "--json")
    assert r.code == 0, r.output
    run = sorted((lab / name / "results" / "runs").iterdir())[-1]
    spec = run / "spec.yaml"
    text = spec.read_text(encoding="utf-8")
    stamp = at.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    spec.write_text(re.sub(r"(?m)^started_at: .*$", f"started_at: '{stamp}'", text, count=1),
                    encoding="utf-8")
    return run.name


def test_each_run_is_a_session_with_its_index_and_time_and_the_trend_is_per_subject(lab):
    times = [START, START + timedelta(days=7, hours=2), START + timedelta(days=13)]
    rates = (0.3, 0.6, 0.9)
    runs = [_session(lab, t, treatment) for t, treatment in zip(times, rates, strict=True)]
    indices = [yaml.safe_load((lab / "study/results/runs" / r / "spec.yaml").read_text())
               ["session"] for r in runs]
    assert indices == [{"index": i, "of": 4, "every": "1w"} for i in (1, 2, 3)]

    (block,) = sessions_report(lab, ["study"], now=times[-1] + timedelta(days=3))
    assert block["done"] == 3 and not block["complete"] and not block["due"]
    assert block["next_due"] == "2026-03-22T09:00:00Z"  # the last session + 1 week
    assert [s["run_id"] for s in block["sessions"]] == runs
    assert [s["elapsed"] for s in block["sessions"]] == pytest.approx([0, 7 / 7 + 2 / 168,
                                                                       13 / 7], abs=1e-6)
    control, treatment = block["trend"]
    assert treatment["slope"] > 0.05 and treatment["p_decline"] < 0.05
    assert treatment["slope_ci"][0] > 0
    # the same slope from the runs' own counts, on the weeks since the first session
    sessions = read_sessions(lab / "study")
    cases = sorted(sessions[0].subjects["treatment"])
    weeks = [(s.started_at - START) / timedelta(weeks=1) for s in sessions]
    expected = case_level_slope([[s.subjects["treatment"][c] for s in sessions]
                                 for c in cases], weeks)
    assert treatment["slope"] == pytest.approx(expected.slope, abs=1e-6)
    assert treatment["n_cases"] == len(MUST) + len(NOTS)
    assert control["slope_ci"][0] < 0 < control["slope_ci"][1]  # the control did not change
    # does the help keep up? the treatment's slope minus the control's, paired by case
    (versus,) = block["versus_control"]
    assert versus["subject"] == "treatment" and versus["control"] == "control"
    assert versus["diff"] == pytest.approx(treatment["slope"] - control["slope"], abs=2e-6)
    assert versus["diff_ci"][0] > 0 and versus["p_value_holm"] == versus["p_value"] < 0.05

    late = sessions_report(lab, ["study"], now=times[-1] + timedelta(days=8))[0]
    assert late["due"]
    _session(lab, START + timedelta(days=21), 0.9)
    (done,) = sessions_report(lab, ["study"], now=START + timedelta(days=30))
    assert done["complete"] and done["next_due"] is None and done["done"] == 4


def test_one_session_has_no_trend_yet_and_none_is_due_at_once(lab):
    _study(lab, 0.5)
    (empty,) = sessions_report(lab, ["study"], now=START)
    assert empty["done"] == 0 and empty["due"] and empty["trend"] == []
    _session(lab, START, 0.5)
    (one,) = sessions_report(lab, ["study"], now=START + timedelta(days=1))
    assert one["trend"][0]["slope"] is None
    assert one["trend"][0]["note"] == "a trend needs two sessions"


@pytest.mark.parametrize(("sessions", "field"), [
    ("{every: 2 weeks, count: 8}", "sessions.every"),
    ("{every: 0d, count: 8}", "sessions.every"),
    ("{every: 1w, count: 1}", "sessions.count"),
    ("{every: 1w, count: 8, at: monday}", "sessions"),
])
def test_a_bad_sessions_block_names_the_file_and_the_field(lab, sessions, field):
    d = _study(lab, 0.5, sessions=sessions)
    with pytest.raises(ConfigError) as caught:
        load_experiment(d, lab)
    assert caught.value.file is not None and Path(caught.value.file).name == "experiment.yaml"
    assert (caught.value.field or "").startswith(field)


@pytest.mark.parametrize(("every", "cron"), [
    ("1h", "17 * * * *"), ("6h", "17 */6 * * *"), ("24h", "17 3 * * *"), ("1d", "17 3 * * *"),
    ("7d", "17 3 * * 1"), ("1w", "17 3 * * 1")])
def test_the_ci_schedule_comes_from_the_sessions_period(every, cron):
    assert ci.session_cron(every) == cron
    assert ci.check_cron(cron) == cron


@pytest.mark.parametrize("every", ["5h", "3d", "2w"])
def test_a_period_cron_cannot_repeat_asks_for_a_schedule(every):
    with pytest.raises(ConfigError, match="give --schedule") as caught:
        ci.session_cron(every)
    assert caught.value.field == "--schedule"


def test_ci_init_schedules_the_sessions_unless_told(tmp_path):
    lab = tmp_path / "lab"
    _study(lab, 0.5)
    assert ci.plan_workflow(lab, cwd=tmp_path).schedule == "17 3 * * 1"
    assert '- cron: "17 3 * * 1"' in ci.plan_workflow(lab, cwd=tmp_path).text
    assert ci.plan_workflow(lab, cwd=tmp_path, schedule="0 6 * * 2").schedule == "0 6 * * 2"
    _study(lab, 0.5, sessions="{every: 1d, count: 30}", name="daily")
    with pytest.raises(ConfigError, match="every 1d and every 1w"):
        ci.plan_workflow(lab, cwd=tmp_path)
    assert ci.plan_workflow(lab, cwd=tmp_path, experiments=["daily"]).schedule == "17 3 * * *"


def test_ix_report_sessions_answers_first_and_refuses_an_experiment_without_sessions(lab):
    _session(lab, START, 0.4)
    _session(lab, START + timedelta(days=7), 0.8)
    r = run_ix("report", "--sessions", "study", "--lab", str(lab))
    assert r.code == 0, r.output
    first, *rest = r.stdout.splitlines()
    assert first == "study: 2 of 4 sessions done (every 1w); next due 2026-03-16 09:00 UTC" \
        + " (due now)"
    assert any(line.startswith("  treatment: +") and "per week [" in line for line in rest)
    assert "the difference from control, its change per week (cases paired; Holm p):" in rest
    assert "  2  2026-03-09 09:00 UTC  control " in r.stdout
    as_json = json.loads(run_ix("report", "--sessions", "study", "--lab", str(lab),
                                "--json").stdout)
    assert as_json[0]["done"] == 2 and as_json[0]["metric"] == "correct_rate"
    write(lab / "plain" / "experiment.yaml", "name: plain\nruntime: mock\n")
    write(lab / "plain" / "cases" / "a.md", "---\nexpectation: must_trigger\n---\nDo a\n")
    mixed = ix_in_process("report", "--sessions", "study", "--baseline", "b", "--lab", str(lab))
    assert mixed.code == 2 and "--baseline" in mixed.stderr
    bad = run_ix("report", "--sessions", "plain", "--lab", str(lab))
    assert bad.code == 2 and "Traceback" not in bad.output
    assert "experiment.yaml" in bad.stderr and "sessions" in bad.stderr
