"""`ix results` reads what a user means, and says it in the words of the glossary.

Issue 16 §6: by default the latest completed run of each experiment (not every run, import
and experiment pooled), `--all-runs` to pool; intervals that treat a case's trials as a
cluster; an imported copy of trials the lab holds counted once; "activation rate" and "correct
rate" for two different things, and "pass rate" for neither. Every expected number is
recomputed here from the raw trial lines. What the commands read and say is asked in process
(`ix_in_process`, the same `main`); the real `ix` keeps the command line's part: the table on
stdout with what it read said on stderr, and a wrong metric refused with exit 2.
"""

import json
import shutil
from pathlib import Path

import pytest
import yaml
from scipy import stats as sps

from conftest import REPO, comparison_experiment, ix_in_process, mock_experiment, run_ix
from ix.stats.clustered import hierarchical_interval
from ix.store.trials import read_trials

# must-001 always fires, must-002 never: trials of one case agree, cases disagree
RATES = {"must-001": 1.0, "must-002": 0.0, "must-003": 0.9, "not-001": 0.1, "not-002": 0.6}


def ok(*args: str, columns: int = 200) -> str:
    r = ix_in_process(*args, env={"COLUMNS": str(columns)})
    assert r.code == 0, r.output
    assert "Traceback" not in r.output
    return r.stdout


def ok_json(*args: str):
    return json.loads(ok(*args, "--json"))


def lines(lab: Path, experiment: str = "exp") -> list[dict]:
    return read_trials(lab / experiment / "results" / "trials.jsonl")


def run_in_process(lab: Path, *args: str) -> str:
    """`run` for set-up: the same `ix run`, in the test process."""
    r = ix_in_process("run", "--lab", str(lab), *args, "--json")
    assert r.code == 0, r.output
    assert "Traceback" not in r.output
    return json.loads(r.stdout)["run_id"]


@pytest.fixture(scope="module")
def _two_experiments(tmp_path_factory: pytest.TempPathFactory,
                     ) -> tuple[Path, Path, dict[str, str]]:
    """Three runs of two experiments, made once (set-up, in process), kept as a pristine
    copy beside the lab."""
    root = tmp_path_factory.mktemp("two-experiments")
    lab, pristine = root / "lab", root / "pristine"
    lab.mkdir()
    mock_experiment(lab, "exp", rates=RATES, trials=9, n_must=3, n_not=2, n_edge=0)
    mock_experiment(lab, "other", rates={"must-001": 0.5}, trials=3, n_must=1, n_not=1,
                    n_edge=0)
    runs = {"exp-1": run_in_process(lab, "exp"),
            "exp-2": run_in_process(lab, "exp", "--seed", "1"),
            "other": run_in_process(lab, "other")}
    shutil.copytree(lab, pristine, symlinks=True)
    return lab, pristine, runs


@pytest.fixture
def two_experiments(_two_experiments: tuple[Path, Path, dict[str, str]],
                    ) -> tuple[Path, dict[str, str]]:
    """The lab and its runs: the module's, restored at its own path (spec.yaml records it)
    from the pristine copy, so each test changes only its own."""
    lab, pristine, runs = _two_experiments
    shutil.rmtree(lab)
    shutil.copytree(pristine, lab, symlinks=True)
    return lab, dict(runs)


def test_default_scope_is_the_latest_completed_run_of_each_experiment(two_experiments):
    lab, runs = two_experiments
    got = ok_json("results", "--lab", str(lab))
    assert {r["run_id"] for r in got} == {runs["exp-2"], runs["other"]}
    assert len(got) == 5 * 9 + 2 * 3
    pooled = ok_json("results", "--lab", str(lab), "--all-runs")
    assert {r["run_id"] for r in pooled} == set(runs.values())
    assert len(pooled) == 2 * 5 * 9 + 2 * 3
    named = ok_json("results", "--lab", str(lab), "--run", runs["exp-1"])
    assert {r["run_id"] for r in named} == {runs["exp-1"]}

    # a run that did not complete is passed over: the one before it is the latest completed
    spec_file = lab / "exp" / "results" / "runs" / runs["exp-2"] / "spec.yaml"
    spec = yaml.safe_load(spec_file.read_text())
    spec["status"] = "cancelled"
    spec_file.write_text(yaml.safe_dump(spec))
    got = ok_json("results", "--lab", str(lab), "--stats")
    assert got[0]["n"] == 5 * 9 + 2 * 3
    listing = run_ix("results", "--lab", str(lab), "--experiment", "exp")  # the contract
    assert listing == ix_in_process("results", "--lab", str(lab), "--experiment", "exp")
    assert listing.code == 0 and {runs["exp-1"]} == {
        r["run_id"] for r in ok_json("results", "--lab", str(lab), "--experiment", "exp")}
    # the table says what it read, and how to read more (stderr: stdout stays the table)
    scope = " ".join(listing.stderr.split())
    assert "latest completed run of each experiment" in scope and "--all-runs" in scope
    assert runs["exp-1"] in scope


def test_all_runs_is_in_help_and_docs():
    text = " ".join(ok("results", "--help").split())
    assert "--all-runs" in text and "latest completed run of each experiment" in text
    cli_doc = (REPO / "docs" / "cli.md").read_text()
    assert "--all-runs" in cli_doc


def test_an_imported_copy_of_a_run_is_counted_once(two_experiments, tmp_path):
    lab, runs = two_experiments
    before = ok_json("results", "--lab", str(lab), "--all-runs", "--stats")[0]
    export = tmp_path / "exp-2.jsonl"
    ok("export", runs["exp-2"], "--lab", str(lab), "--format", "jsonl", "--out", str(export))
    ok("import", str(export), "--lab", str(lab), "--format", "jsonl", "--experiment", "copy")
    (copy_id,) = {r["run_id"] for r in lines(lab, "copy")}

    for args in ((), ("--all-runs",)):
        after = ok_json("results", "--lab", str(lab), *args, "--stats")[0]
        expected = before if args else ok_json("results", "--lab", str(lab), "--stats",
                                               "--experiment", "exp", "--experiment", "other")[0]
        assert (after["n"], after["passed"]) == (expected["n"], expected["passed"])
    listing = ix_in_process("results", "--lab", str(lab), "--all-runs")
    assert copy_id in " ".join(listing.stderr.split())  # said to be left out
    # named, the copy is read: nothing is hidden from a user who asks for it
    assert len(ok_json("results", "--lab", str(lab), "--run", copy_id)) == 5 * 9


def test_intervals_treat_the_trials_of_a_case_as_a_cluster(two_experiments):
    lab, runs = two_experiments
    (row,) = ok_json("results", "--lab", str(lab), "--run", runs["exp-2"], "--case", "must-*",
                     "--stats")
    raw = [r for r in lines(lab) if r["run_id"] == runs["exp-2"]
           and r["probe_id"].startswith("must-") and not r["error"]]
    cases = sorted({r["probe_id"] for r in raw})
    k = [sum(r["reading"]["passed"] for r in raw if r["probe_id"] == c) for c in cases]
    n = [sum(r["probe_id"] == c for r in raw) for c in cases]
    rate = sum(k) / sum(n)
    assert row["cases"] == 3 and row["activation_rate"] == pytest.approx(rate)
    lo, hi = hierarchical_interval(k, n, estimate=rate)
    assert (row["activation_rate_lo"], row["activation_rate_hi"]) == pytest.approx((lo, hi))
    naive = sps.beta.ppf([0.025, 0.975], sum(k) + 1, sum(n) - sum(k) + 1)
    # 27 trials of 3 cases that disagree are not 27 independent draws
    assert row["activation_rate_hi"] - row["activation_rate_lo"] > 1.5 * (naive[1] - naive[0])


def test_correct_rate_counts_majority_votes_as_the_summary_does(two_experiments):
    lab, runs = two_experiments
    (row,) = ok_json("results", "--lab", str(lab), "--run", runs["exp-2"], "--stats")
    summary = json.loads((lab / "exp" / "results" / "runs" / runs["exp-2"] /
                          "summary.json").read_text())
    voted = [p for p in summary["probe_results"] if p["correct"] is not None]
    assert (row["votes"], row["correct"]) == (len(voted), sum(p["correct"] for p in voted))
    assert row["correct_rate"] == pytest.approx(row["correct"] / row["votes"])
    assert row["correct_rate_lo"] <= row["correct_rate"] <= row["correct_rate_hi"]
    # recomputed from the raw lines: a case is activated when more than half its trials passed
    raw = [r for r in lines(lab) if r["run_id"] == runs["exp-2"] and not r["error"]]
    right = 0
    for case in {r["probe_id"] for r in raw}:
        trials = [r for r in raw if r["probe_id"] == case]
        fired = 2 * sum(r["reading"]["passed"] for r in trials) > len(trials)
        right += fired == (trials[0]["expectation"] == "must_trigger")
    assert row["correct"] == right
    # the activation rate is a different thing: the share of trials in which the skill fired
    passed = sum(r["reading"]["passed"] for r in raw)
    assert row["activation_rate"] == pytest.approx(passed / len(raw))
    assert row["activation_rate"] != pytest.approx(row["correct_rate"])


def test_one_word_one_meaning_in_results_compare_report_and_glossary(two_experiments):
    lab, runs = two_experiments
    for columns in (80, 200):
        table = ok("results", "--lab", str(lab), "--group-by", "experiment", columns=columns)
        flat = " ".join(table.split())
        assert "activation rate" in flat and "correct rate" in flat
        assert "pass rate" not in flat.lower()
        compared = " ".join(ok("compare", runs["exp-1"], runs["exp-2"], "--lab", str(lab),
                               columns=columns).split())
        assert "correct rate" in compared and "pass rate" not in compared.lower()
    for fmt in ("table", "md", "html"):
        text = ok("report", runs["exp-2"], "--lab", str(lab), "--format", fmt)
        assert "pass rate" not in text.lower(), fmt
    rows = ok_json("results", "--lab", str(lab), "--stats")
    assert "pass_rate" not in rows[0]
    glossary = (REPO / "docs" / "results.md").read_text()
    assert "## Glossary" in glossary
    for word in ("**activation rate**", "**correct rate**", "**majority vote**"):
        assert glossary.count(word) == 1, word


def test_mcp_query_results_has_the_same_scope_and_words(two_experiments):
    from ix.mcp.tools import LabTools

    lab, runs = two_experiments
    tools = LabTools(lab)
    shown = tools.query_results(limit=3)
    assert len(shown["rows"]) == 3 and shown["total"] == 5 * 9 + 2 * 3
    assert "pass_rate" not in shown and "latest completed run" in shown["scope"]
    # the rates are of every matching trial, not of the rows returned
    (row,) = ok_json("results", "--lab", str(lab), "--stats")
    assert shown["activation_rate"]["valid"] == row["valid"]
    assert shown["activation_rate"]["estimate"] == pytest.approx(row["activation_rate"])
    assert shown["correct_rate"]["valid"] == row["votes"]
    for scope in ("must", "not"):  # each activation rate with its scope (DESIGN.md §8)
        rate = shown[f"activation_rate_{scope}"]
        assert rate["metric"] == f"activation_rate_{scope}"
        assert (rate["passed"], rate["valid"]) == (row[f"passed_{scope}"], row[f"valid_{scope}"])
        assert rate["estimate"] == pytest.approx(row[f"activation_rate_{scope}"])
    wrong = tools.query_results(correct=False, limit=500)
    assert wrong["rows"] and all(r["outcome"] == "wrong" for r in wrong["rows"])
    pooled = tools.query_results(group_by=["run"], all_runs=True)
    assert {g["run_id"] for g in pooled["groups"]} == set(runs.values())


def test_correct_rate_is_accepted_where_pass_rate_is(two_experiments):
    lab, _ = two_experiments
    board = ix_in_process("leaderboard", "--lab", str(lab), "--metric", "correct_rate")
    assert board.code == 0 and "Traceback" not in board.output, board.output
    wrong = run_ix("leaderboard", "--lab", str(lab), "--metric", "correct_rat")
    assert wrong.code == 2 and "ix: error:" in wrong.stderr
    from ix.lab.schema import GoalSpec

    assert GoalSpec(hypothesis="h", metric="correct_rate").metric == "pass_rate"


def test_every_activation_rate_says_its_scope_must_or_not(two_experiments):
    """DESIGN.md §8: `activation_rate_must` / `_not` are the rates of one kind of case each,
    recomputed here from the raw lines, with intervals that cluster by case; the table shows
    those, labelled, and no unlabelled pooled rate."""
    lab, runs = two_experiments
    (row,) = ok_json("results", "--lab", str(lab), "--run", runs["exp-2"], "--stats")
    raw = [r for r in lines(lab) if r["run_id"] == runs["exp-2"] and not r["error"]]
    for scope, expectation in (("must", "must_trigger"), ("not", "should_not_trigger")):
        mine = [r for r in raw if r["expectation"] == expectation]
        cases = sorted({r["probe_id"] for r in mine})
        k = [sum(r["reading"]["passed"] for r in mine if r["probe_id"] == c) for c in cases]
        n = [sum(r["probe_id"] == c for r in mine) for c in cases]
        rate = sum(k) / sum(n)
        assert (row[f"passed_{scope}"], row[f"valid_{scope}"]) == (sum(k), sum(n))
        assert row[f"activation_rate_{scope}"] == pytest.approx(rate)
        lo, hi = hierarchical_interval(k, n, estimate=rate)
        assert (row[f"activation_rate_{scope}_lo"], row[f"activation_rate_{scope}_hi"]) == \
            pytest.approx((lo, hi))
    r = ix_in_process("results", "--lab", str(lab), "--run", runs["exp-2"], "--stats",
                      env={"COLUMNS": "80"})
    assert r.code == 0, r.output
    table = " ".join(r.stdout.split())
    assert "activation rate (must)" in table and "activation rate (not)" in table
    assert "activation rate [95% CI]" not in table and "activation rate:" not in table
    assert "estimate [95% CI] and counts — invoked/valid" in " ".join(r.stderr.split())
    assert (f"{row['activation_rate_must']:.2f} [{row['activation_rate_must_lo']:.2f}, "
            f"{row['activation_rate_must_hi']:.2f}] {row['passed_must']}/{row['valid_must']}"
            ) in table


def test_results_lead_with_the_goals_metric_and_say_so(tmp_path: Path):
    lab = tmp_path / "lab"
    comparison_experiment(lab, n_must=3, n_not=2, trials=3, control=0.9,
                          variants={"variant": 0.5}, name="exp",
                          goal="goal: {hypothesis: h, metric: correct_rate}\n")
    run_in_process(lab, "exp")
    r = ix_in_process("results", "--lab", str(lab), "--group-by", "subject",
                      env={"COLUMNS": "400"})
    assert r.code == 0, r.output
    header = " ".join(r.stdout.splitlines()[0].split())
    assert header.index("correct rate") < header.index("activation rate (must)")
    flat = " ".join(r.stderr.split())
    assert "the goal's metric of exp: pass_rate; the correct rate column (the same) leads" \
        in flat
