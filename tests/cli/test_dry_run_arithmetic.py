"""`ix run --dry-run`'s headline: the total with every factor (`ix.cli.run._arithmetic`), also
when subjects differ in trial count or a `load:` run's requests make the trials."""

from ix.cli.run import _arithmetic


def plan(cases: int, per_case: str, trials: list[int]) -> dict:
    return {"experiment": "e", "path": "e", "cases": cases, "skipped_acceptable": 0,
            "trials_per_case": per_case, "total_trials": sum(trials), "concurrency": 4,
            "filters": [], "subjects": [{"name": f"s{i}", "trials": t}
                                        for i, t in enumerate(trials)]}


def test_every_factor_is_shown():
    assert _arithmetic(plan(12, "9", [108] * 10)) == \
        "12 cases × 10 subjects × 9 trials = 1080 trials"
    assert _arithmetic(plan(1, "1", [1])) == "1 case × 1 subject × 1 trial = 1 trial"


def test_auto_trials_are_a_ceiling():
    assert _arithmetic(plan(3, "auto, up to 9", [27, 27])) == \
        "3 cases × 2 subjects × up to 9 trials = up to 54 trials"


def test_a_load_run_and_unequal_subjects_add_up_each_subjects_trials():
    assert _arithmetic(plan(4, "13", [50, 50])) == "2 subjects × 50 trials = 100 trials (4 cases)"
    assert _arithmetic(plan(4, "3", [12, 6])) == "12 + 6 = 18 trials (4 cases, 2 subjects)"
