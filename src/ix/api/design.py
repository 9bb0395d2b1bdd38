"""Design checks of a planned run (`ix validate`, before `ix run`): see `ix.eval.design`.

A smoke run (`--smoke`) is checked as the full run it previews, so that the warnings come
before the expensive run, not after it.
"""

from dataclasses import replace

from ix.domain.errors import ConfigError
from ix.engine.filters import apply_filters
from ix.engine.plan import Plan, build_plan
from ix.eval.design import CODES, DesignWarning, check_design
from ix.lab.schema import refuse_unrunnable_import

__all__ = ["CODES", "DesignError", "DesignWarning", "design_warnings"]


class DesignError(ConfigError):
    """`--strict`: design warnings refused as errors; `warnings` holds them, by experiment."""

    def __init__(self, warnings: list[tuple[Plan, list[DesignWarning]]]):
        self.warnings = warnings
        count = sum(len(w) for _, w in warnings)
        first = warnings[0][0].loaded.config_file if warnings else None
        super().__init__(f"{count} design check(s) failed under --strict; nothing was run "
                         "(fix them, or drop --strict to run anyway)", file=first,
                         field="design")


def design_warnings(plan: Plan) -> list[DesignWarning]:
    """The design warnings of `plan` (with `--smoke`: of the full run it stands for).

    None for an experiment `ix import` made that `ix run` refuses (placeholders, no runtime):
    it is a record of trials made elsewhere, not a design to be run.
    """
    try:
        refuse_unrunnable_import(plan.loaded.spec, plan.loaded.config_file,
                                 runtime_override=plan.overrides.runtime)
    except ConfigError:
        return []
    if plan.overrides.smoke:
        plan = build_plan(plan.loaded, replace(plan.overrides, smoke=False))
    if plan.load is not None:  # a load test's unit is the request, not the case
        return []
    exp = plan.loaded.experiment
    return check_design(
        exp,
        cases=apply_filters(exp.cases, plan.overrides.filters),
        subjects=[sp.subject for sp in plan.subjects],
        runtimes={sp.subject.name: sp.runtime_spec for sp in plan.subjects},
        trials=plan.trials, adaptive=plan.adaptive, filtered=bool(plan.overrides.filters),
    )
