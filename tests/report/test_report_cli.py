"""`ix report`, `ix leaderboard`, regressions against a baseline, and the configuration diff of
`ix compare`: the real command on labs run with the mock runtime."""

import json
from collections import Counter
from pathlib import Path

import pytest
from scipy import integrate, stats

from conftest import case, flat, ix_in_process, mock_experiment, run_ix, tree_digest, write


def two_subjects(lab: Path, name: str = "exp", *, a: dict[str, float], b: dict[str, float],
                 errors_b: dict[str, float] | None = None, n_must: int = 4, n_not: int = 3,
                 trials: int = 5) -> Path:
    """Subjects `a` and `b` on the mock runtime, each with its own activation rates."""
    def runtime(rates: dict[str, float], errors: dict[str, float] | None) -> str:
        text = f"      kind: mock\n      activation_rates: {json.dumps(rates)}\n"
        if errors:
            text += f"      error_rates: {json.dumps(errors)}\n"
        return text

    d = lab / name
    write(d / "experiment.yaml",
          f"name: {name}\ntrials: {trials}\nsensor: {{kind: activation, skill: target}}\n"
          "subjects:\n  - name: a\n    runtime:\n" + runtime(a, None)
          + "  - name: b\n    runtime:\n" + runtime(b, errors_b))
    for i in range(1, n_must + 1):
        case(d, f"must-{i:03d}", "must_trigger")
    for i in range(1, n_not + 1):
        case(d, f"not-{i:03d}", "should_not_trigger")
    return d


def run_id(lab: Path, *args: str) -> str:
    """Set-up: the run a test's report, leaderboard or compare then reads (in process: the
    command under test is the one after it)."""
    r = ix_in_process("run", "--lab", str(lab), "--json", *args)
    assert r.code == 0, r.output
    return json.loads(r.stdout)["run_id"]


def report(lab: Path, *args: str, code: int = 0, cwd: Path | None = None) -> dict:
    """`ix report --json`, in process: its figures are under test (the command's exit 0 and
    output are the real `ix` in `test_formats_and_out_file`)."""
    r = ix_in_process("report", "--lab", str(lab), "--json", *args, cwd=cwd)
    assert r.code == code, r.output
    return json.loads(r.stdout)


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def standing(trials: list[dict], run: str) -> dict[tuple, dict]:
    """The latest attempt of each (subject, probe_id, trial) of `run` (DESIGN.md §3)."""
    out: dict[tuple, dict] = {}
    for t in trials:
        if t["run_id"] != run:
            continue
        key = (t["subject"], t["probe_id"], t["trial"])
        if key not in out or t["attempt"] >= out[key]["attempt"]:
            out[key] = t
    return out


def p_greater(a: tuple[float, float], b: tuple[float, float]) -> float:
    """P(X > Y), X ~ Beta(a), Y ~ Beta(b), by scipy quadrature (the test's own reference)."""
    x, y = stats.beta(*a), stats.beta(*b)
    return integrate.quad(lambda t: x.pdf(t) * y.cdf(t), 0, 1, limit=400, epsabs=1e-12)[0]


A = {"must-001": 0.95, "must-002": 0.9, "must-003": 0.8, "must-004": 0.7, "not-001": 0.1}
B = {"must-001": 0.3, "must-002": 0.2, "not-001": 0.6, "not-002": 0.5}


def test_report_sections_agree_with_the_summary_and_the_trial_lines(lab):
    exp = two_subjects(lab, a=A, b=B, errors_b={"must-003": 0.5, "must-004": 0.3})
    rid = run_id(lab)
    data = report(lab, rid)
    summary = json.loads((exp / "results" / "runs" / rid / "summary.json").read_text())
    assert data["run"]["run_id"] == rid and data["run"]["experiment"] == "exp"
    assert data["run"]["status"] == "completed" and data["metric"] == "f1"

    # summary table: every cell is the summary's number
    cells = {row["probe_id"]: row["by_subject"] for row in data["summary"]["cases"]}
    for block in summary["subjects"]:
        for p in block["probe_results"]:
            cell = cells[p["probe_id"]][block["name"]]
            assert (cell["score"], cell["score_ci"], cell["passed"], cell["n"]) == \
                   (p["score"], p["score_ci"], p["passed"], p["n"])

    # leaderboard: a first; P(rank right) from U ~ Beta(TP+1, FP+FN+2), by scipy
    rows = data["leaderboard"]["rows"]
    assert [r["subject"] for r in rows] == ["a", "b"]
    m = {b["name"]: b["metrics"] for b in summary["subjects"]}
    u = {k: (v["tp"] + 1, v["fp"] + v["fn"] + 2) for k, v in m.items()}
    expected = p_greater(u["a"], u["b"])
    assert rows[0]["p_rank"] == pytest.approx(expected, abs=1e-6)
    assert rows[1]["p_rank"] == pytest.approx(expected, abs=1e-6)
    assert rows[0]["p_above_next"] == pytest.approx(expected, abs=1e-6)
    assert rows[0]["value"] == pytest.approx(m["a"]["f1"], abs=1e-6)
    assert rows[0]["ci"] == m["a"]["f1_ci"]

    # failure analysis, recomputed here from trials.jsonl
    kept = standing(lines(exp / "results" / "trials.jsonl"), rid)
    errored = [t for t in kept.values() if t["error"]]
    assert errored, "the mock's error_rates should have produced errors"
    [kind] = data["failures"]["errors"]
    assert kind["kind"] == "runtime_error" and kind["count"] == len(errored)
    assert kind["subjects"] == {"b": len(errored)}
    assert set(kind["cases"]) == {t["probe_id"] for t in errored}
    assert kind["examples"] and all(e["message"] for e in kind["examples"])
    failed = Counter()
    for (_, probe, _), t in kept.items():
        wrong = (t["expectation"] == "must_trigger") != bool(t["reading"] and
                                                            t["reading"]["passed"])
        failed[probe] += bool(t["error"]) or wrong
    worst = data["failures"]["cases"]
    assert {r["probe_id"]: r["failed"] for r in worst} == {k: v for k, v in failed.items() if v}
    rates = [r["fail_rate"] for r in worst]
    assert rates == sorted(rates, reverse=True)

    # breakdown: with the activation sensor, a reading's score is 1 or 0
    for row in data["breakdown"]:
        for subject, b in row["by_subject"].items():
            cell = cells[row["probe_id"]][subject]
            assert b["n"] == cell["n"]
            assert b["mean"] == pytest.approx(cell["passed"] / cell["n"], abs=1e-6)


def test_cost_is_summed_by_subject_case_and_in_total(lab):
    exp = two_subjects(lab, a=A, b=B, trials=3)
    rid = run_id(lab)
    path = exp / "results" / "trials.jsonl"
    records = lines(path)
    for t in records:  # the mock spends nothing: give every trial a known spend
        t["observation"]["tokens_input"] = 10 * (t["trial"] + 1)
        t["observation"]["tokens_output"] = 3
        t["observation"]["cost_usd"] = 0.001 if t["subject"] == "a" else 0.0025
    path.write_text("".join(json.dumps(t) + "\n" for t in records))
    cost = report(lab, rid)["cost"]
    assert cost["total"] == {"attempts": len(records),
                             "tokens_input": sum(10 * (t["trial"] + 1) for t in records),
                             "tokens_output": 3 * len(records),
                             "cost_usd": pytest.approx(len(records) / 2 * 0.0035)}
    per_subject = len(records) // 2
    assert cost["by_subject"]["b"]["cost_usd"] == pytest.approx(per_subject * 0.0025)
    assert cost["by_subject"]["a"]["tokens_input"] == per_subject // 3 * (10 + 20 + 30)
    assert set(cost["by_case"]) == {t["probe_id"] for t in records}
    assert cost["by_case"]["must-001"]["attempts"] == 6
    assert cost["by_case"]["not-002"]["cost_usd"] == pytest.approx(3 * 0.0035)
    text = ix_in_process("report", rid, "--lab", str(lab))
    assert "cost by subject" in text.stdout and "total:" in text.stdout


def test_retried_attempts_are_costed_but_only_the_latest_one_is_scored(lab):
    exp = two_subjects(lab, a=A, b=B, errors_b={"must-001": 0.6, "not-001": 0.6}, trials=6)
    rid = run_id(lab)
    r = ix_in_process("run", "--lab", str(lab), "--retry-failed", "--json")  # set-up
    assert r.code == 0, r.output
    records = [t for t in lines(exp / "results" / "trials.jsonl") if t["run_id"] == rid]
    kept = standing(records, rid)
    assert len(records) > len(kept), "the retry should have added attempts"
    data = report(lab, rid)
    assert data["cost"]["total"]["attempts"] == len(records)
    errors = {g["kind"]: g for g in data["failures"]["errors"]}
    still = sum(1 for t in kept.values() if t["error"])
    replaced = sum(1 for t in records if t["error"]) - still
    group = errors["runtime_error"]
    assert (group["count"], group["superseded"]) == (still, replaced)
    assert replaced > 0


def test_formats_and_out_file(lab, tmp_path):
    two_subjects(lab, a=A, b=B)
    rid = run_id(lab)
    table = run_ix("report", rid, "--lab", str(lab))  # the real command: exit 0, its table
    assert table.code == 0, table.output
    for text in ("summary: activation rate", "leaderboard by F1", "P(rank right)",
                 "score breakdown per case", "failure analysis", "cost"):
        assert text in table.stdout
    md = ix_in_process("report", rid, "--lab", str(lab), "--format", "md")
    assert md.stdout.startswith(f"# exp · run {rid}")
    for text in ("## Summary", "## Leaderboard by F1", "## Score breakdown per case",
                 "## Failure analysis", "## Cost", "| rank | subject | F1 [95% CI] |"):
        assert text in md.stdout
    out = tmp_path / "report.md"
    # the real command: the file as a process leaves it, and nothing on stdout
    r = run_ix("report", rid, "--lab", str(lab), "--format", "md", "--out", str(out))
    assert r.code == 0 and r.stdout == "" and out.read_text() == md.stdout
    out_json = tmp_path / "report.json"
    r = ix_in_process("report", rid, "--lab", str(lab), "--format", "json", "-o", str(out_json))
    assert r.code == 0 and json.loads(out_json.read_text())["run"]["run_id"] == rid
    out_txt = tmp_path / "report.txt"
    assert ix_in_process("report", rid, "--lab", str(lab), "--out", str(out_txt)).code == 0
    assert "leaderboard by F1" in out_txt.read_text()


def test_default_run_is_the_latest_of_the_experiment_the_directory_is_in(lab):
    one = mock_experiment(lab, "one", rates={"must-001": 0.9}, trials=2)
    mock_experiment(lab, "two", trials=2)
    run_id(lab, "one")
    latest = run_id(lab, "one")
    run_id(lab, "two")
    assert report(lab, cwd=one / "cases")["run"]["run_id"] == latest


@pytest.mark.parametrize(("args", "message"), [
    (["nosuchrun"], "no run, tag or experiment 'nosuchrun'"),
    (["20991231"], "no run, tag or experiment '20991231'"),
    (["--format", "html", "--out", "/nonexistent-dir/r.html"], "--out"),
    (["--format", "pdf"], "unknown format 'pdf'"),
    (["--json", "--format", "md"], "--format"),
    (["--metric", "accuracy"], "unknown metric 'accuracy'"),
    (["--baseline", "nosuchtag"], "no run or tag 'nosuchtag'"),
    (["--out", "/nonexistent-dir/r.md"], "--out"),
])
def test_bad_input_is_one_line_exit_2_and_the_lab_unchanged(lab, args, message):
    mock_experiment(lab, trials=1)
    run_id(lab)
    before = tree_digest(lab)
    # the real command once for the exit-2 contract (one line, no traceback); the other
    # refusals in process
    command = run_ix if args == ["nosuchrun"] else ix_in_process
    r = command("report", "--lab", str(lab), *args, cwd=lab / "exp")
    assert r.code == 2, r.output
    assert message in flat(r.stderr) and "Traceback" not in r.output
    assert len(flat(r.stderr).splitlines()) == 1
    assert tree_digest(lab) == before


def test_a_malformed_summary_is_named(lab):
    exp = mock_experiment(lab, trials=1)
    rid = run_id(lab)
    path = exp / "results" / "runs" / rid / "summary.json"
    for text, message in (('{"run_id": ', "not valid JSON"),
                          ('{"run_id": "x", "experiment_name": "exp", "subjects": [{"name": 1}]}',
                           "subjects[0]")):
        path.write_text(text)
        before = tree_digest(lab)
        r = ix_in_process("report", rid, "--lab", str(lab))
        assert r.code == 2 and str(path) in flat(r.stderr) and message in flat(r.stderr)
        assert "Traceback" not in r.output and tree_digest(lab) == before


def regression_lab(lab: Path) -> tuple[Path, str]:
    exp = mock_experiment(lab, rates={f"must-{i:03d}": 0.95 for i in range(1, 11)},
                          n_must=10, n_not=4, trials=5)
    base = run_id(lab)
    r = ix_in_process("tag", base, "baseline", "--lab", str(lab))
    assert r.code == 0, r.output
    return exp, base


def test_a_real_regression_against_the_baseline_exits_1(lab):
    exp, base = regression_lab(lab)
    yaml = (exp / "experiment.yaml").read_text().replace(": 0.95", ": 0.15")
    (exp / "experiment.yaml").write_text(yaml)
    worse = run_id(lab)
    # the real command: exit 1 on a regression, said on stderr
    r = run_ix("report", worse, "--lab", str(lab), "--baseline", "baseline", "--json")
    assert r.code == 1, r.output
    b = json.loads(r.stdout)["baseline"]
    assert b["tag"] == "baseline" and b["run"] == base and b["regressed"]
    regressed = {x["metric"]: x for x in b["regressions"]}
    assert {"recall", "activation_rate"} <= set(regressed)
    assert all(x["diff_ci"][1] < 0 and x["subject"] == "target" for x in b["regressions"])
    # every metric whose interval lies below zero, and only those, is flagged
    [entry] = b["comparison"]["comparisons"]
    assert set(regressed) == {k for k, m in entry["metrics"].items()
                              if m["diff"] is not None and m["diff_ci"][1] < 0}
    # a metric undefined on a side (precision with nothing predicted) is not compared
    assert all((m["diff"] is None) == bool(m.get("not_compared"))
               for m in entry["metrics"].values())
    assert "regression" in flat(r.stderr) and "recall" in flat(r.stderr)
    text = ix_in_process("report", worse, "--lab", str(lab), "--baseline", "baseline")
    assert text.code == 1 and "regression(s)" in text.stdout


def test_the_same_configuration_again_is_no_regression(lab):
    _, base = regression_lab(lab)
    again = run_id(lab)  # same experiment, same seed: the same trials
    r = ix_in_process("report", again, "--lab", str(lab), "--baseline", "baseline", "--json")
    assert r.code == 0, r.output
    b = json.loads(r.stdout)["baseline"]
    assert b["regressed"] is False and b["regressions"] == [] and b["run"] == base
    md = ix_in_process("report", again, "--lab", str(lab), "--baseline", "baseline", "-f",
                       "md")
    assert md.code == 0 and "No regression" in md.stdout


def test_a_baseline_with_nothing_in_common_is_bad_input(lab):
    regression_lab(lab)
    other = lab / "other"
    write(other / "experiment.yaml", "name: other\ntrials: 1\nskill: target\nruntime: mock\n")
    case(other, "x-001", "must_trigger")
    rid = run_id(lab, "other")
    before = tree_digest(lab)
    r = ix_in_process("report", rid, "--lab", str(lab), "--baseline", "baseline")
    assert r.code == 2 and "no case in common" in flat(r.stderr) and "--baseline" in flat(r.stderr)
    assert tree_digest(lab) == before


def test_compare_shows_what_changed_in_configuration(lab):
    exp = mock_experiment(lab, rates={"must-001": 0.9}, trials=3)
    first = run_id(lab)
    yaml = (exp / "experiment.yaml").read_text().replace("must-001: 0.9", "must-001: 0.2")
    (exp / "experiment.yaml").write_text(yaml + "timeout_s: 30\n")
    second = run_id(lab, "--seed", "7")
    r = run_ix("compare", first, second, "--lab", str(lab), "--json")  # the real command
    assert r.code == 0, r.output
    [item] = json.loads(r.stdout)["config_changes"]
    assert item["run"] == second
    changes = {c["path"]: c for c in item["changes"]}
    rate = changes["config.subjects[target].runtime.activation_rates.must-001"]
    assert (rate["change"], rate["before"], rate["after"]) == ("changed", 0.9, 0.2)
    assert (changes["seed"]["before"], changes["seed"]["after"]) == (0, 7)
    assert changes["config.timeout_s"]["after"] == 30
    assert not any(p.startswith(("run_id", "started_at", "status")) for p in changes)
    text = ix_in_process("compare", first, second, "--lab", str(lab))
    assert f"configuration changed in {second}" in text.stdout
    assert "activation_rates.must-001: 0.9 → 0.2" in text.stdout
    third = run_id(lab, "--seed", "7")
    r = ix_in_process("compare", second, third, "--lab", str(lab), "--json")
    assert json.loads(r.stdout)["config_changes"] == [{"run": third, "changes": [],
                                                        "skills": []}]


def leaderboard(lab: Path, *args: str, code: int = 0) -> dict:
    """`ix leaderboard --json`, in process: its figures are under test (the real command is
    the table of `test_leaderboard_takes_each_experiments_latest_completed_run_and_pools_them`)."""
    r = ix_in_process("leaderboard", "--lab", str(lab), "--json", *args)
    assert r.code == code, r.output
    return json.loads(r.stdout)


def test_leaderboard_takes_each_experiments_latest_completed_run_and_pools_them(lab):
    two_subjects(lab, "one", a=A, b=B)
    two_subjects(lab, "two", a=A, b=B, n_must=3, n_not=2)
    done_one = run_id(lab, "one")
    done_two = run_id(lab, "two")
    # set-up: a cancelled run, newer than the completed one, that the leaderboard must pass over
    assert ix_in_process("run", "one", "--lab", str(lab), "--max-trials", "3").code == 130
    data = leaderboard(lab)
    boards = {b["experiment"]: b for b in data["boards"]}
    assert {r["run"] for r in boards["one"]["rows"]} == {done_one}   # not the cancelled run
    assert {r["run"] for r in boards["two"]["rows"]} == {done_two}
    for board in boards.values():
        assert [r["subject"] for r in board["rows"]] == ["a", "b"]
        assert sum(r["p_best"] for r in board["rows"]) == pytest.approx(1, abs=1e-9)
    overall = {r["subject"]: r for r in data["overall"]["rows"]}
    for subject in ("a", "b"):
        assert overall[subject]["n"] == sum(
            next(r["n"] for r in b["rows"] if r["subject"] == subject) for b in boards.values())
        assert overall[subject]["experiments"] == "2/2"
    text = run_ix("leaderboard", "--lab", str(lab))  # the real command
    assert "overall: counts pooled" in text.stdout and "P(rank right)" in text.stdout
    md = ix_in_process("leaderboard", "--lab", str(lab), "--format", "md")
    assert "## one" in md.stdout and "## Overall" in md.stdout


def test_leaderboard_of_named_runs_and_experiments(lab):
    two_subjects(lab, "one", a=A, b=B)
    mock_experiment(lab, "empty", trials=1)
    r1 = run_id(lab, "one")
    r2 = run_id(lab, "one", "--seed", "5")
    data = leaderboard(lab, "--run", r1, "--run", r2)
    [board] = data["boards"]
    assert {(r["subject"], r["run"]) for r in board["rows"]} == {
        (s, r) for s in "ab" for r in (r1, r2)}
    assert data["overall"] is None
    only = leaderboard(lab, "--experiment", "one", "--metric", "pass_rate")
    [board] = only["boards"]
    assert board["metric"] == "pass_rate" and {r["run"] for r in board["rows"]} == {r2}
    everything = leaderboard(lab)
    assert "empty: no completed run" in everything["notes"]
    for args, message in ((["--run", "nope"], "no run or tag 'nope'"),
                          (["--experiment", "nope"], "no experiment 'nope'"),
                          (["--metric", "speed"], "unknown metric"),
                          (["--experiment", "empty"], "nothing to rank")):
        before = tree_digest(lab)
        # in process: the exit-2 contract is the real command's in the report's bad input
        r = ix_in_process("leaderboard", "--lab", str(lab), *args)
        assert r.code == 2 and message in flat(r.stderr) and "Traceback" not in r.output, args
        assert tree_digest(lab) == before


def test_help_lists_the_commands():
    r = run_ix("--help")
    for command in ("report", "leaderboard", "tag", "annotate"):
        assert command in r.stdout
    r = ix_in_process("report", "--help")
    assert "--baseline" in r.stdout and "--format" in r.stdout
