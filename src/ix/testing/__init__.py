"""ix in pytest: an experiment's goal or metric as a test.

    from ix.testing import assert_experiment, assert_goal

    def test_the_skill_helps():
        assert_goal("skill-activation")

    def test_f1_is_high():
        assert_experiment("skill-activation", metric="f1", at_least=0.8)

Importing this module imports neither pytest nor the engine; the plugin
(`ix.testing.plugin`, entry point `pytest11`) adds `--ix-lab`, `--ix-collect`,
`--ix-rerun/--ix-no-rerun`, the `ix_lab` fixture and the "ix verdicts" summary (docs/pytest.md).
"""

from ix.testing._asserts import assert_experiment, assert_goal, check_experiment
from ix.testing._session import Asserted

__all__ = ["Asserted", "assert_experiment", "assert_goal", "check_experiment"]
