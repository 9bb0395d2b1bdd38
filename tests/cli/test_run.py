"""`ix run` end to end on real files, checked against `001_…` and DESIGN.md: what a run writes
and decides is asked in process (`ix_in_process`); what the command line itself does (the
bundled example, output, exit codes, finding the lab from the working folder, `--version` and
`--help`) through the real command."""

import json
import os
import re
from pathlib import Path

import yaml

from conftest import ix_in_process, mock_experiment, run_ix, write

TRIAL_FIELDS_001 = {"probe_id", "trial", "expectation", "observation", "reading"}
TRIAL_FIELDS_IX = {"run_id", "experiment", "subject", "seed", "attempt", "started_at", "error"}
VOLATILE = {"run_id", "started_at", "duration_ms"}


def trials_of(experiment: Path) -> list[dict]:
    lines = (experiment / "results" / "trials.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def latest(experiment: Path) -> dict:
    return json.loads((experiment / "results" / "summary-latest.json").read_text())


def stable(record: dict) -> dict:
    out = {k: v for k, v in record.items() if k not in VOLATILE}
    if out.get("observation"):
        out["observation"] = {k: v for k, v in out["observation"].items() if k != "duration_ms"}
    return out


def test_example_lab_runs_offline_and_gives_a_nontrivial_result(example_lab):
    r = run_ix("run", "--lab", str(example_lab), "skill-activation")
    assert r.code == 0, r.output
    summary = latest(example_lab / "skill-activation")
    m = summary["metrics"]
    assert 0.0 < m["f1"] < 1.0
    assert m["tp"] + m["fn"] >= 10 and m["fp"] + m["tn"] >= 10
    rates = [p["score"] for p in summary["probe_results"]]
    assert any(0.0 < s < 1.0 for s in rates), "some cases should vary across trials"
    assert "F1 [95% CI]" in r.stdout and "no goal: F1 of csv-summary" in r.stdout


def test_trial_lines_and_summary_have_the_fields_of_001(lab):
    exp = mock_experiment(lab, rates={"must-001": 1.0, "must-002": 0.0, "not-001": 1.0})
    r = ix_in_process("run", "--lab", str(lab))
    assert r.code == 0, r.output
    records = trials_of(exp)
    assert len(records) == (3 + 3) * 5  # acceptable cases never run
    for rec in records:
        assert rec.keys() >= TRIAL_FIELDS_001 | TRIAL_FIELDS_IX
        assert rec["expectation"] in ("must_trigger", "should_not_trigger")
        assert rec["reading"]["sensor_name"] == "activation"
        assert set(rec["reading"]) >= {"passed", "score", "sensor_name", "metrics", "details"}
        assert set(rec["observation"]) >= {"content", "tool_calls", "duration_ms",
                                            "tokens_input", "tokens_output"}
        assert rec["reading"]["score"] == (1.0 if rec["reading"]["passed"] else 0.0)
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", rec["started_at"])
    must1 = [x for x in records if x["probe_id"] == "must-001"]
    assert all(x["observation"]["tool_calls"] == [{"name": "Skill", "input": {"skill": "target"}}]
               for x in must1)
    assert sorted(x["trial"] for x in must1) == [0, 1, 2, 3, 4]

    summary = latest(exp)
    assert {"experiment_name", "probe_results", "metrics", "interpretation"} <= summary.keys()
    assert summary["experiment_name"] == "exp"
    assert set(summary["metrics"]) >= {"precision", "recall", "f1", "tp", "fp", "fn", "tn"}
    assert set(summary["interpretation"]) == {"status", "issues", "suggestions"}
    by_id = {p["probe_id"]: p for p in summary["probe_results"]}
    assert set(by_id) == {"must-001", "must-002", "must-003", "not-001", "not-002", "not-003"}
    assert by_id["must-001"]["score"] == 1.0 and by_id["must-001"]["correct"] is True
    assert by_id["must-002"]["score"] == 0.0 and by_id["must-002"]["correct"] is False
    assert by_id["not-001"]["correct"] is False and by_id["not-002"]["correct"] is True
    assert summary["metrics"]["tp"] == 1
    assert summary["metrics"]["fp"] == 1 and summary["metrics"]["fn"] == 2
    assert summary["metrics"]["tn"] == 2
    assert summary["metrics"]["precision"] == 0.5
    assert abs(summary["metrics"]["recall"] - 1 / 3) < 1e-6
    assert summary["interpretation"]["status"] == "poor"
    assert len(summary["interpretation"]["issues"]) == 2  # precision and recall both < 0.8
    assert summary["run_status"] == "completed" and summary["errors"] == 0
    assert summary["subjects"][0]["name"] == "target"
    archived = list((exp / "results").glob("summary-*.json"))
    names = sorted(p.name for p in archived)
    assert "summary-latest.json" in names
    stamped = [n for n in names if n != "summary-latest.json"]
    assert len(stamped) == 1 and re.fullmatch(r"summary-\d{8}T\d{6}Z\.json", stamped[0])
    assert json.loads((exp / "results" / stamped[0]).read_text()) == summary


def test_run_folder_records_the_exact_configuration(lab):
    exp = mock_experiment(lab, rates={"must-001": 0.5})
    r = ix_in_process("run", "--lab", str(lab), "--seed", "7", "--trials", "3")
    assert r.code == 0, r.output
    summary = latest(exp)
    run_dir = exp / "results" / "runs" / summary["run_id"]
    spec = yaml.safe_load((run_dir / "spec.yaml").read_text())
    assert spec["status"] == "completed" == summary["run_status"]
    assert spec["seed"] == 7 and spec["trials"] == 3 and spec["seeding"] == "common"
    assert spec["sources"]["trials"] == "--trials"
    assert spec["command"][:2] == ["ix", "run"] and "--seed" in spec["command"]
    assert spec["versions"]["ix"] and spec["versions"]["python"]
    assert spec["config"]["subjects"][0]["runtime"]["kind"] == "mock"
    assert spec["config"]["subjects"][0]["runtime"]["activation_rates"] == {"must-001": 0.5}
    assert spec["started_at"] <= spec["finished_at"]
    assert "git_commit" in spec
    assert json.loads((run_dir / "summary.json").read_text()) == summary
    assert {rec["run_id"] for rec in trials_of(exp)} == {summary["run_id"]}


def test_same_seed_gives_identical_trials_apart_from_timestamps(lab):
    exp = mock_experiment(lab, rates={"must-001": 0.5, "must-002": 0.3, "not-001": 0.6},
                          runtime_extra="error_rates: {not-002: 0.3}")
    assert ix_in_process("run", "--lab", str(lab), "--seed", "42").code == 0
    first = trials_of(exp)
    assert ix_in_process("run", "--lab", str(lab), "--seed", "42").code == 0
    second = trials_of(exp)[len(first):]
    key = lambda r: (r["subject"], r["probe_id"], r["trial"])  # noqa: E731
    a = sorted(map(stable, first), key=key)
    b = sorted(map(stable, second), key=key)
    assert a == b
    assert first[0]["run_id"] != second[0]["run_id"]
    # and a different seed really changes the draws
    assert ix_in_process("run", "--lab", str(lab), "--seed", "43").code == 0
    third = sorted(map(stable, trials_of(exp)[2 * len(first):]), key=key)
    assert [r["seed"] for r in third] != [r["seed"] for r in a]
    assert [r["reading"] for r in third] != [r["reading"] for r in a]


def test_trial_seed_is_derived_as_design_says(lab):
    import hashlib

    exp = mock_experiment(lab, n_must=1, n_not=1, n_edge=0, trials=2)
    assert ix_in_process("run", "--lab", str(lab), "--seed", "5").code == 0
    for rec in trials_of(exp):  # common to every subject: the subject is not in it
        text = f"5:{rec['probe_id']}:{rec['trial']}".encode()
        expected = int.from_bytes(hashlib.sha256(text).digest()[:8], "big") >> 1
        assert rec["seed"] == expected


def test_trial_count_precedence_flag_then_yaml_then_env_then_five(lab):
    with_yaml = mock_experiment(lab, "with-yaml", trials=3, n_must=1, n_not=1, n_edge=0)
    without = mock_experiment(lab, "without", trials=None, n_must=1, n_not=1, n_edge=0)

    def count(exp: Path) -> int:
        return len(trials_of(exp)) // 2

    env = {"IX_DEFAULT_TRIALS": "4"}
    assert ix_in_process("run", "--lab", str(lab), "without").code == 0
    assert count(without) == 5
    (without / "results").rename(without / "old1")
    assert ix_in_process("run", "--lab", str(lab), "without", env=env).code == 0
    assert count(without) == 4
    assert ix_in_process("run", "--lab", str(lab), "with-yaml", env=env).code == 0
    assert count(with_yaml) == 3
    (with_yaml / "results").rename(with_yaml / "old2")
    r = ix_in_process("run", "--lab", str(lab), "with-yaml", "--trials", "2", env=env)
    assert r.code == 0 and count(with_yaml) == 2


def test_lab_ix_yaml_sets_defaults_below_the_experiment(lab):
    exp = mock_experiment(lab, trials=None, n_must=1, n_not=1, n_edge=0)
    write(lab / "ix.yaml", "trials: 6\n")
    assert ix_in_process("run", "--lab", str(lab), env={"IX_DEFAULT_TRIALS": "4"}).code == 0
    assert len(trials_of(exp)) == 12


def test_errored_trials_are_recorded_counted_and_excluded(lab):
    exp = mock_experiment(lab, rates={"must-001": 1.0}, n_must=2, n_not=1, n_edge=0,
                          runtime_extra="error_rates: {must-001: 1.0, must-002: 0.5}")
    r = ix_in_process("run", "--lab", str(lab), "--trials", "20")
    assert r.code == 0, r.output  # errored trials are reported, not a failure
    records = trials_of(exp)
    errored = [x for x in records if x["error"]]
    assert {x["error"]["kind"] for x in errored} == {"runtime_error"}
    assert all(x["reading"] is None and x["observation"] is None for x in errored)
    must1 = [x for x in records if x["probe_id"] == "must-001"]
    assert all(x["error"] for x in must1)
    assert 0 < sum(1 for x in records if x["probe_id"] == "must-002" and x["error"]) < 20
    summary = latest(exp)
    assert summary["errors"] == len(errored)
    p1 = next(p for p in summary["probe_results"] if p["probe_id"] == "must-001")
    assert p1["score"] is None and p1["correct"] is None and p1["errors"] == 20
    m = summary["metrics"]
    assert m["tp"] + m["fn"] == 1  # must-001 had no valid trial: out of the counts
    assert "errored trial" in r.stdout


def test_acceptable_cases_never_reach_a_trial(lab):
    exp = mock_experiment(lab, n_must=1, n_not=1, n_edge=3)
    assert ix_in_process("run", "--lab", str(lab)).code == 0
    assert not [x for x in trials_of(exp) if x["probe_id"].startswith("edge")]
    assert latest(exp)["skipped_cases"] == ["edge-001", "edge-002", "edge-003"]


def test_a_reader_skips_a_torn_last_line_and_the_next_run_removes_it(lab):
    exp = mock_experiment(lab, n_must=1, n_not=1, n_edge=0, trials=2)
    assert ix_in_process("run", "--lab", str(lab)).code == 0
    path = exp / "results" / "trials.jsonl"
    with path.open("a") as f:
        f.write('{"probe_id": "must-001", "trial": 0, "expec')  # a crash mid-write
    from ix.store.trials import read_trials

    warnings: list[str] = []
    assert len(list(read_trials(path, warn=warnings.append))) == 4
    assert len(warnings) == 1 and "line 5" in warnings[0]
    r = run_ix("run", "--lab", str(lab))
    assert r.code == 0
    assert "ix: warning:" in r.stderr and "line 5: removed a torn last line" in r.stderr
    lines = path.read_text().splitlines()
    assert len(lines) == 4 + 4 and all(json.loads(x) for x in lines)


def test_artifacts_flag_writes_one_json_file_per_artifact(lab):
    exp = mock_experiment(lab, n_must=1, n_not=1, n_edge=0, trials=2)
    assert ix_in_process("run", "--lab", str(lab), "--artifacts").code == 0
    art = exp / "artifacts"
    kinds = sorted(p.name for p in art.iterdir())
    assert kinds == ["probe.stimulus", "scorer.verdict", "sensor.reading", "trial.observation"]
    assert sorted(p.name for p in (art / "probe.stimulus").iterdir()) == [
        "must-001.json", "not-001.json"]
    verdicts = sorted(p.name for p in (art / "scorer.verdict").iterdir())
    assert verdicts == ["must-001-trial-0.json", "must-001-trial-1.json",
                        "not-001-trial-0.json", "not-001-trial-1.json"]
    doc = json.loads((art / "scorer.verdict" / "must-001-trial-1.json").read_text())
    assert doc["kind"] == "scorer.verdict" and doc["producer"] == "scorer"
    assert doc["data"] in trials_of(exp)


def test_json_output_is_the_summary(lab):
    exp = mock_experiment(lab)
    r = run_ix("run", "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    assert json.loads(r.stdout) == latest(exp)


def test_lab_is_found_by_walking_up_and_cwd_picks_the_experiment(lab):
    a = mock_experiment(lab, "a", n_must=1, n_not=1, n_edge=0, trials=1)
    b = mock_experiment(lab, "b", n_must=1, n_not=1, n_edge=0, trials=1)
    assert run_ix("run", cwd=a / "cases").code == 0  # the real command finds its lab
    assert (a / "results").is_dir() and not (b / "results").exists()
    assert ix_in_process("run", cwd=lab).code == 0
    assert (b / "results").is_dir() and len(trials_of(a)) == 4


def test_lab_by_name_is_searched_from_the_project_root(tmp_path):
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    mock_experiment(project / "evals" / "mylab", "e", n_must=1, n_not=1, n_edge=0, trials=1)
    (project / "src" / "deep").mkdir(parents=True)
    r = run_ix("run", "--lab", "mylab", cwd=project / "src" / "deep")
    assert r.code == 0, r.output
    assert (project / "evals" / "mylab" / "e" / "results" / "trials.jsonl").is_file()


def test_experiment_given_as_a_path(lab, tmp_path):
    exp = mock_experiment(lab, "pathy", n_must=1, n_not=1, n_edge=0, trials=1)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert ix_in_process("run", str(exp), cwd=elsewhere).code == 0
    assert len(trials_of(exp)) == 2


def test_validate_writes_nothing_and_describes_the_plan(example_lab):
    r = ix_in_process("validate", "--lab", str(example_lab), "--json")
    assert r.code == 0, r.output
    reports = {x["experiment"]: x for x in json.loads(r.stdout)}
    assert all(x["ok"] for x in reports.values())
    report = reports["skill-activation"]
    assert report["cases"] >= 20
    assert report["subjects"][0]["skills"] == ["csv-summary", "git-release-notes", "sql-tuning"]
    assert not list(example_lab.glob("*/results"))


def test_ls_lists_experiments_with_their_last_run(lab):
    mock_experiment(lab, "one", n_must=1, n_not=1, n_edge=0, trials=1)
    mock_experiment(lab, "two", n_must=1, n_not=1, n_edge=0, trials=1)
    assert ix_in_process("run", "--lab", str(lab), "one").code == 0
    r = run_ix("ls", "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    data = json.loads(r.stdout)
    rows = {e["name"]: e for e in data["experiments"]}
    assert rows["one"]["status"] == "completed" and rows["one"]["last_run"]
    assert rows["two"]["last_run"] is None
    assert rows["one"]["cases"] == {"must_trigger": 1, "should_not_trigger": 1, "acceptable": 0}
    table = ix_in_process("ls", "--lab", str(lab))
    assert "one" in table.stdout and "never" in table.stdout


def test_version_and_help():
    r = run_ix("--version")
    assert r.code == 0 and re.fullmatch(r"ix \d+\.\d+\.\d+\S*\n", r.stdout)
    h = run_ix("--help")
    assert h.code == 0
    for command in ("run", "validate", "ls"):
        assert command in h.stdout
    rh = ix_in_process("run", "--help")  # `--help` of the real command is checked above
    for flag in ("--lab", "--trials", "--seed", "--runtime", "--json", "--artifacts"):
        assert flag in rh.stdout


def test_several_subjects_share_cases_and_common_seeds(lab):
    d = lab / "multi"
    write(d / "experiment.yaml", """
        name: multi
        trials: 4
        runtime: {kind: random, p: 0.5}
        sensor: {kind: activation, skill: a}
        subjects:
          - name: control
          - name: variant
            runtime: {kind: mock, default_rate: 1.0}
    """)
    write(d / "cases" / "must-001.md", "---\nexpectation: must_trigger\n---\nhello\n")
    write(d / "cases" / "not-001.md", "---\nexpectation: should_not_trigger\n---\nbye\n")
    r = ix_in_process("run", "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    summary = json.loads(r.stdout)
    assert [s["name"] for s in summary["subjects"]] == ["control", "variant"]
    assert summary["subject"] == "control"
    variant = summary["subjects"][1]
    assert all(p["score"] == 1.0 for p in variant["probe_results"])
    records = trials_of(d)
    assert len(records) == 2 * 2 * 4
    seeds = {(x["subject"], x["probe_id"], x["trial"]): x["seed"] for x in records}
    # common random numbers (DESIGN.md §2): the same case and trial draw alike in every subject
    assert seeds[("control", "must-001", 0)] == seeds[("variant", "must-001", 0)]
    assert seeds[("control", "must-001", 0)] != seeds[("control", "must-001", 1)]
    only = ix_in_process("run", "--lab", str(lab), "--subject", "variant", "--json")
    assert [s["name"] for s in json.loads(only.stdout)["subjects"]] == ["variant"]


def test_runtime_flag_overrides_every_subject(example_lab):
    r = ix_in_process("run", "--lab", str(example_lab), "skill-activation", "--runtime",
                      "random", "--trials", "2", "--json")
    assert r.code == 0, r.output
    spec_dir = example_lab / "skill-activation" / "results" / "runs"
    [run] = list(spec_dir.iterdir())
    spec = yaml.safe_load((run / "spec.yaml").read_text())
    assert spec["config"]["subjects"][0]["runtime"] == {"kind": "random"}


def test_timeout_is_recorded_per_trial_and_never_fatal(lab):
    exp = mock_experiment(lab, n_must=1, n_not=1, n_edge=0, trials=2,
                          extra_yaml="timeout_s: 0.05\n", runtime_extra="latency_ms: 2000")
    r = run_ix("run", "--lab", str(lab))
    # every trial ran and was recorded; all of them timing out fails the run (issue 16)
    assert r.code == 1, r.output
    kinds = {x["error"]["kind"] for x in trials_of(exp)}
    assert kinds == {"timeout"}
    assert latest(exp)["errors"] == 4 and latest(exp)["run_status"] == "failed"
    assert "timeout_s" in latest(exp)["reason"]


def test_no_secret_from_the_environment_reaches_the_files(lab):
    exp = mock_experiment(lab, n_must=1, n_not=1, n_edge=0, trials=1)
    secret = "sk-ant-test-" + os.urandom(8).hex()
    assert ix_in_process("run", "--lab", str(lab), env={"ANTHROPIC_API_KEY": secret}).code == 0
    for p in (exp / "results").rglob("*"):
        if p.is_file():
            assert secret not in p.read_text(encoding="utf-8", errors="replace")


def test_a_large_run_prints_the_cases_that_matter_and_ix_report_prints_every_case(lab):
    rates = {f"must-{i:03d}": 1.0 for i in range(2, 16)} | {"not-002": 1.0}
    mock_experiment(lab, rates=rates, n_must=15, n_not=15, n_edge=0, trials=3)
    # `ix run`'s output of a real process is checked on the example lab; `ix report`'s here
    r = ix_in_process("run", "--lab", str(lab), "--progress", "none")
    assert r.code == 0, r.output
    shown = [line.split()[0] for line in r.stdout.splitlines()
             if re.match(r"(must|not)-\d{3} ", line)]
    assert shown == ["must-001", "not-002"]  # the two wrong cases of 30
    run_id = re.search(r"every table, case and diagnostic: `ix report (\S+)`",
                       " ".join(r.stdout.split()))
    assert run_id is not None, r.stdout
    report = run_ix("report", run_id.group(1), "--lab", str(lab))
    assert report.code == 0, report.output
    listed = set(re.findall(r"\b(?:must|not)-\d{3}\b", report.stdout))
    assert len(listed) == 30, report.stdout
