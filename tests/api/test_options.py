"""`ix.api.RunOptions`: a bad option is refused when the options are made, saying which and
what is allowed; `Observer` does nothing unless told to."""

import dataclasses
from typing import Any

import pytest

from ix import api
from ix.api.options import trial_listener


def test_defaults_are_those_of_ix_run_without_flags() -> None:
    options = api.RunOptions()
    assert (options.artifacts, options.command, options.continue_mode, options.run_id,
            options.cache, options.executor, options.address, options.strict) == (
        False, None, None, None, None, "local", None, False)
    assert options.limits == api.Limits()


@pytest.mark.parametrize(("given", "field", "says"), [
    ({"continue_mode": "resum"}, "--resume",
     "unknown continue_mode 'resum'; allowed: resume, retry_failed"),
    ({"run_id": "20260101T000000Z"}, "--run", "names the run that --resume or --retry-failed"),
    ({"cache": "sometimes"}, "--cache", "unknown cache mode 'sometimes'; allowed: use"),
    ({"executor": "dask"}, "--executor", "unknown executor 'dask'; allowed: local, ray"),
    ({"address": "ray://head:10001"}, "--address", "only --executor ray joins a cluster"),
])
def test_a_bad_value_is_a_config_error_naming_the_option(given: dict[str, Any], field: str,
                                                         says: str) -> None:
    with pytest.raises(api.ConfigError) as caught:
        api.RunOptions(**given)
    assert caught.value.field == field
    assert says in caught.value.message


@pytest.mark.parametrize(("given", "says"), [
    ({"limits": {"max_trials": 3}}, "RunOptions.limits must be an ix.api.Limits"),
    ({"command": "ix run"}, "RunOptions.command must be a list of strings"),
    ({"command": ["ix", 3]}, "RunOptions.command must be a list of strings"),
    ({"artifacts": "yes"}, "RunOptions.artifacts must be a bool"),
    ({"strict": 1}, "RunOptions.strict must be a bool"),
])
def test_a_value_of_the_wrong_type_is_a_type_error(given: dict[str, Any], says: str) -> None:
    with pytest.raises(TypeError, match=says):
        api.RunOptions(**given)


def test_options_are_frozen_and_keep_a_copy_of_the_command() -> None:
    argv = ["ix", "run"]
    options = api.RunOptions(command=argv, continue_mode="resume", run_id="r1",
                             cache="replay", executor="ray", address="auto")
    argv.append("--later")
    assert options.command == ["ix", "run"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.strict = True  # type: ignore[misc]


def test_a_bare_observer_hears_nothing_and_costs_no_call_per_trial() -> None:
    quiet = api.Observer()
    quiet.on_plan(None)  # type: ignore[arg-type]
    quiet.on_trial({})
    quiet.on_warning("x")
    assert trial_listener(quiet) is None

    class Counting(api.Observer):
        def on_trial(self, record: dict[str, Any]) -> None:
            pass

    counting = Counting()
    assert trial_listener(counting) == counting.on_trial
