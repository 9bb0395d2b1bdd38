"""Design checks of a planned run (`ix validate`, before `ix run`): see `ix.eval.design`.

A smoke run (`--smoke`) is checked as the full run it previews, so that the warnings come
before the expensive run, not after it.
"""

from dataclasses import replace
from typing import Any

from ix.api.imported import refuse_unrunnable_import
from ix.api.reports import current_judges
from ix.domain.errors import ConfigError
from ix.engine.filters import apply_filters
from ix.engine.judged import described
from ix.engine.plan import Plan, build_plan
from ix.eval.design import CODES, DesignWarning, check_design
from ix.eval.dialect import CODE as DIALECT
from ix.eval.dialect import notes as spelling_notes
from ix.eval.suggestions import Suggestion, suggest_controls
from ix.fs.yamlio import load_yaml_file
from ix.lab.loader import skill_descriptions
from ix.report.answer import num_text
from ix.report.judge_text import resting_judge, who
from ix.runtimes.registry import get_kind
from ix.store.labels import latest_labels, read_labels
from ix.store.lookup import latest_of
from ix.store.summaries import read_summary

__all__ = ["CODES", "DesignError", "DesignWarning", "Suggestion", "design_suggestions",
           "design_warnings"]


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
    spelled = spelling_warnings(plan)
    if plan.overrides.smoke:
        plan = build_plan(plan.loaded, replace(plan.overrides, smoke=False))
    if plan.load is not None:  # a load test's unit is the request, not the case
        return spelled
    exp = plan.loaded.experiment
    return [*spelled, *check_design(
        exp,
        cases=apply_filters(exp.cases, plan.overrides.filters),
        subjects=[sp.subject for sp in plan.subjects],
        runtimes={sp.subject.name: sp.runtime_spec for sp in plan.subjects},
        trials=plan.trials, adaptive=plan.adaptive, filtered=bool(plan.overrides.filters),
    ), *judge_warnings(plan)]


def spelling_warnings(plan: Plan) -> list[DesignWarning]:
    """`rfc-spelling`: each field of experiment.yaml written in the RFC's spelling, which ix
    read as its own (`ix.eval.dialect`), and how ix spells it."""
    try:
        data = load_yaml_file(plan.loaded.config_file)
    except ConfigError:  # changed since it loaded: the next load will say
        return []
    return [DesignWarning(code=DIALECT, field=field, message=(
        f"the RFC's spelling, read as ix's: {spelling} (write that; docs/experiments.md, "
        "\"The RFC's spelling\")")) for field, spelling in spelling_notes(data)]


def judge_warnings(plan: Plan) -> list[DesignWarning]:
    """`unchecked-judge`: the verdict rests on a judge (the goal names one of its
    dimensions, or it is the first sensor) that no label of people checks, or whose κ
    against them, on the latest run, is below its `min_kappa` (docs/judges.md)."""
    judges = described(plan)
    goal: dict[str, Any] = (plan.loaded.experiment.goal or {}) if judges else {}
    sensor = (plan.loaded.spec.sensors or [{"kind": plan.loaded.experiment.sensor}])[0]
    judge = resting_judge({"judges": judges, "goal": goal, "sensor": sensor["kind"]})
    if judge is None:
        return []
    field = "goal.metric" if str(goal.get("metric", "")).startswith(f"{judge['name']}.") \
        else "sensors[0]" if plan.loaded.spec.sensors else "sensor"
    labels = [x for x in latest_labels(read_labels(plan.loaded.path))
              if x["sensor"] == judge["name"]]
    if not labels:
        return [DesignWarning(code="unchecked-judge", field=field, message=(
            f"the verdict rests on the judge {who(judge)}, which no label checks: after a "
            "run, `ix label RUN` labels a sample (or `ix label --import FILE`), and the "
            "report then states its agreement with people (docs/judges.md)"))]
    try:
        run_dir = latest_of(plan.loaded.path)
    except ConfigError:
        return []
    summary = read_summary(run_dir)
    if not summary.get("judges"):
        return []
    checked = {j["name"]: j for j in current_judges(run_dir, summary)}.get(judge["name"])
    if checked is None or checked["status"] != "disagrees":
        return []
    agreement = checked["agreement"]
    kappa = agreement["kappa"]["value"] if agreement and "kappa" in agreement else None
    return [DesignWarning(code="unchecked-judge", field=field, message=(
        f"the verdict rests on the judge {who(judge)}, whose κ against people's labels on "
        f"run {run_dir.name} is {num_text(kappa, 2)}, below its min_kappa {judge['min_kappa']:g}: "
        "improve its rubric or model, or state a lower `min_kappa` (docs/judges.md)"))]


def design_suggestions(plan: Plan) -> list[Suggestion]:
    """The control suggestions of `plan` (`ix validate`; `ix.eval.suggestions`): the
    siblings are the lab's skills and those the subjects are given, each with its
    SKILL.md's description; the defaults, the control runtime's options' own."""
    if plan.load is not None:
        return []
    loaded = plan.loaded
    exp = loaded.experiment
    siblings = skill_descriptions(loaded.lab)
    for sp in plan.subjects:
        for given in sp.subject.config.get("skills") or []:
            siblings.setdefault(str(given.get("name")), str(given.get("description") or ""))
    runtimes = {sp.subject.name: sp.runtime_spec for sp in plan.subjects}
    sweep = loaded.spec.sweep or {}
    defaults: dict[str, Any] = {}
    if sweep and plan.subjects:
        defaults = _option_defaults(plan.subjects[0].runtime_spec, sweep)
    return suggest_controls(exp, cases=apply_filters(exp.cases, plan.overrides.filters),
                            subjects=[sp.subject for sp in plan.subjects], runtimes=runtimes,
                            siblings=list(siblings.items()), sweep=sweep, defaults=defaults)


def _option_defaults(runtime: dict[str, Any], keys: Any) -> dict[str, Any]:
    """The runtime kind's default for each swept key that is one of its options (a dotted
    key, or a kind ix cannot build here, has none)."""
    try:
        fields = get_kind(str(runtime.get("kind"))).options.model_fields
    except ConfigError:
        return {}
    out: dict[str, Any] = {}
    for key in keys:
        field = fields.get(key)
        if field is not None and not field.is_required():
            default = field.get_default(call_default_factory=True)
            if isinstance(default, str | int | float | bool):
                out[key] = default
    return out
