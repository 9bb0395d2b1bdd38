"""`trials: auto` without `max_trials` gets an odd maximum (no tied majority votes)."""

from conftest import mock_experiment
from ix.engine.plan import Overrides, build_plan
from ix.lab.loader import DEFAULT_MAX_TRIALS, load_experiment


def test_auto_without_max_trials_runs_at_most_nine(lab):
    d = mock_experiment(lab, trials=None, extra_yaml="trials: auto\n")
    exp = load_experiment(d, lab).experiment
    assert DEFAULT_MAX_TRIALS == 9
    assert (exp.adaptive, exp.min_trials, exp.trials) == (True, 2, 9)


def test_trials_auto_on_the_command_line_runs_at_most_nine(lab):
    d = mock_experiment(lab, trials=4)
    plan = build_plan(load_experiment(d, lab), Overrides(trials="auto"))
    assert (plan.adaptive, plan.min_trials, plan.trials) == (True, 2, 9)
