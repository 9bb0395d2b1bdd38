"""`ix sanity` in process: the known subjects through the real pipeline, in a throwaway
folder, and what the checks make of their summaries."""

import shutil
from pathlib import Path

import pytest

from conftest import EXAMPLE_LAB, case, tree_digest, write
from ix.api.sanity import sanity
from ix.engine.plan import trial_seed
from ix.engine.sanity import check, run_sanity, sanity_plans
from ix.lab.loader import load_experiment
from ix.runtimes._seeding import uniform
from ix.stats.chance import chance_range


def test_the_example_experiment_passes_and_the_lab_is_left_as_it_was(tmp_path: Path):
    lab = tmp_path / "lab"
    shutil.copytree(EXAMPLE_LAB, lab, ignore=shutil.ignore_patterns("results", "artifacts"))
    before = tree_digest(lab)
    report = sanity(lab, ["skill-activation"])
    assert report.ok and report.kept is None
    assert [(c.subject, c.status) for c in report.checks] == [
        ("random", "pass"), ("perfect", "pass"), ("wrong", "pass")]
    assert report.checks[1].found == "105 of 105 trials right (100%), want 100%"
    assert report.experiments[0].trials == 3 * 105
    assert tree_digest(lab) == before  # no results/, nothing else
    assert not report.experiments[0].run_dir.exists()  # the throwaway folder is gone


def _experiment(lab: Path, extra: str = "", user: str = "") -> Path:
    d = write(lab / "e" / "experiment.yaml",
              "name: e\nskill: target\ntrials: 5\nruntime: {kind: mock}\n" + extra).parent
    for i in range(6):
        case(d, f"must-{i}", "must_trigger", extra=user)
        case(d, f"not-{i}", "should_not_trigger")
    return d


def test_a_broken_program_fails_every_check_and_the_runs_are_kept(tmp_path: Path):
    lab = tmp_path / "lab"
    _experiment(lab, "simulated_user: {kind: command, argv: [/nonexistent/user]}\n",
                user="user: {goal: an answer}\n")
    report = sanity(lab)
    assert not report.ok and report.kept is not None
    assert [c.status for c in report.checks] == ["fail"] * 3
    assert "command_not_found" in report.checks[0].found
    assert "30 of 60 trials errored" in report.checks[0].found
    kept = report.kept / "e"
    assert (kept / "experiment.yaml").is_file() and (kept / "results" / "trials.jsonl").is_file()
    assert not (lab / "e" / "results").exists()
    shutil.rmtree(report.kept)


def test_another_first_sensor_runs_the_random_subject_once_per_case_and_skips_perfect(
        tmp_path: Path):
    lab = tmp_path / "lab"
    d = _experiment(lab, "sensors:\n  - {kind: matcher, contains: CSV}\n"
                         "  - {kind: llm_judge, agent: rubric.md}\n")
    result = run_sanity(load_experiment(d, lab), tmp_path / "place")
    assert [(c.subject, c.status) for c in result.checks] == [("random", "pass"),
                                                              ("perfect", "skip")]
    assert result.checks[0].found == "12 trials, none errored"  # one per case, no judge
    assert "matcher" in result.checks[1].found


@pytest.mark.parametrize("extra,why", [
    ("sensor: {kind: llm_judge, agent: rubric.md}\n", "judges"),
    ("load: {rps: 1, duration_s: 1}\n", "load test"),
])
def test_what_sanity_cannot_check_is_a_skip_with_nothing_run(tmp_path: Path, extra, why):
    lab = tmp_path / "lab"
    d = _experiment(lab, extra)
    write(d / "rubric.md", "---\nname: r\n---\nIs it right?\n")
    result = run_sanity(load_experiment(d, lab), tmp_path / "place")
    assert [c.status for c in result.checks] == ["skip"] and why in result.checks[0].found
    assert not (tmp_path / "place").exists()


def test_the_known_subjects_test_the_experiments_target_skill(tmp_path: Path):
    lab = tmp_path / "lab"
    d = _experiment(lab)
    plans = sanity_plans(load_experiment(d, lab))
    assert [p.subjects[0].subject.name for p in plans] == ["random", "perfect", "wrong"]
    assert {p.subjects[0].target_skill for p in plans} == {"target"}
    assert all(p.trials == 5 and not p.adaptive and p.loaded.experiment.goal is None
               for p in plans)


def _summary(name: str, right: int, n: int, errors: int = 0, off: tuple[str, ...] = ()):
    probes = [{"probe_id": c, "correct": name != "perfect"} for c in off]
    block = {"name": name, "errors": errors, "probe_results": probes,
             "trial_level": {"correct": {"n_trials": n, "rate": right / n if n else None}}}
    return {"subjects": [block], "errors_by_kind": []}


def test_off_chance_imperfect_and_not_wrong_enough_scores_fail_with_what_to_do():
    # 100 fair-coin trials: 99.9% of them fall in 34..66
    assert check("e", "random", _summary("random", 34, 100)).status == "pass"
    low = check("e", "random", _summary("random", 33, 100))
    assert low.status == "fail" and "chance 34%–66%" in low.found and low.next
    bad = check("e", "perfect", _summary("perfect", 99, 100, off=("must-3",)))
    assert bad.status == "fail" and "want 100%" in bad.found and "must-3" in bad.next
    assert check("e", "wrong", _summary("wrong", 1, 100)).status == "fail"
    assert check("e", "wrong", _summary("wrong", 0, 100)).status == "pass"
    assert check("e", "random", _summary("random", 0, 0)).status == "fail"


def test_the_random_subjects_count_falls_in_its_range_as_often_as_the_level_says():
    """Coverage by simulation: over 2,000 experiment seeds of 20 cases × 5 trials, the random
    runtime's right trials (its draws from the real trial seeds) fall inside the 95% range
    about 95% of the time, so the check's 99.9% range is what it claims, not looser."""
    cases = [(f"must-{i}", True) for i in range(10)] + [(f"not-{i}", False) for i in range(10)]
    lo, hi = chance_range(100, 0.95)
    inside = 0
    for seed in range(2000):
        right = sum((uniform(trial_seed(seed, c, t), 0, 0) < 0.5) == must
                    for c, must in cases for t in range(5))
        inside += lo <= right <= hi
    assert 0.93 <= inside / 2000 <= 0.98
