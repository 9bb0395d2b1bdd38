"""`ix plan`: how many cases and trials an experiment needs, with the assumptions said aloud.

Three questions, each answered by `ix.stats.power` (STATS.md §9):
- width: how many units (cases, or trials of one case) until a rate's credible interval is
  at most this wide;
- independent: how many cases per subject to detect a difference between two subjects that
  ran different cases;
- paired: how many shared cases (or, given the cases, which difference) when both subjects
  run the same cases, K trials each (Miller 2024);
- goal: for an experiment with a goal, how many cases settle it under the goal's own rule
  (metric, direction, min_effect, credibility), sized from the t approximation and checked
  by simulating ix's rule (`ix.eval.goal_sizing`), with the probability of settling it.
Planning values can come from the latest run of an experiment instead of guesses. Every
impossible combination of flags is a `ConfigError` naming the flags, never a traceback.
"""

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from ix import api  # `api.loading` (the engine) loads when an experiment is planned
from ix.domain.errors import ConfigError
from ix.eval.goal_sizing import FINAL_REPLICATES, Basis, goal_size, unit
from ix.eval.outcomes import is_outcome_metric
from ix.stats.intervals import beta_interval
from ix.stats.power import (
    mde_paired,
    n_for_interval_width,
    n_paired,
    paired_variances,
    sample_size_two_proportions,
)
from ix.store.layout import ExperimentDir
from ix.store.summaries import summary_as_written

if TYPE_CHECKING:
    from ix.api.schemas import (
        FromDesign,
        GoalAnswer,
        IndependentAnswer,
        PairedAnswer,
        PlanOutput,
        WidthAnswer,
    )


#: Which cases an activation experiment's planning values are of (DESIGN.md §8).
Scope = Literal["must", "not"] | None


@dataclass(frozen=True)
class PlanningInputs:
    """Variances read off a previous run (per-case activation rates)."""

    source: str
    p: float
    sigma2_a: float
    sigma2_b: float
    omega2: float
    cases: int
    trials: int
    notes: tuple[str, ...]
    #: the kind of cases the values are of: "must" or "not" (an activation experiment's
    #: rates mean something only within one kind, DESIGN.md §8); None: every case
    scope: Scope = None


def inputs_from_run(experiment_dir: Path, pair: "list[str] | None" = None,
                    scoped: bool = False) -> PlanningInputs:
    """Planning values from `results/summary-latest.json`: of the goal's `compare` pair
    (control, treatment) when given and in the run, else of its first two subjects. With
    `scoped` (an activation experiment) only its must_trigger cases count, or, when it has
    none with a valid trial, its should_not_trigger ones (`scope`)."""
    path = ExperimentDir.at(experiment_dir).latest_summary
    if not path.is_file():
        raise ConfigError("no run yet: run the experiment first, or give --p / --sigma2 "
                          "explicitly", file=path)
    summary = summary_as_written(path)
    blocks = summary.get("subjects") or []
    if not blocks:
        raise ConfigError("summary has no subjects", file=path, field="subjects")
    notes: list[str] = []
    named = {b.get("name"): b for b in blocks}
    if pair and len(pair) == 2 and all(n in named for n in pair):
        blocks = [named[pair[0]], named[pair[1]]]   # the goal's pair, names whole
    scope: Scope = None
    if scoped:
        scope = "must" if _scores(blocks[0], "must_trigger") else "not"
    kind = {"must": "must_trigger", "not": "should_not_trigger"}.get(scope or "")
    a = _scores(blocks[0], kind)
    if not a:
        raise ConfigError("no case has a valid trial", file=path, field="probe_results")

    sigma2_a = sum(p * (1 - p) for p, _ in a.values()) / len(a)
    p = sum(p for p, _ in a.values()) / len(a)
    if len(blocks) > 1:
        b = _scores(blocks[1], kind)
        shared = sorted(set(a) & set(b))
        if not shared:
            raise ConfigError(f"{blocks[1]['name']} has no case in common with "
                              f"{blocks[0]['name']}", file=path, field="subjects")
        sigma2_a, sigma2_b, omega2 = paired_variances(
            [a[c][0] for c in shared], [a[c][1] for c in shared],
            [b[c][0] for c in shared], [b[c][1] for c in shared])
        notes.append(f"omega2 from the per-case differences of {blocks[0]['name']} and "
                     f"{blocks[1]['name']} over {len(shared)} shared cases, less trial noise")
    else:
        sigma2_b = sigma2_a
        omega2 = 0.0
        notes.append("one subject only: the variant is assumed to vary like the control "
                     "(sigma2_b = sigma2_a) and omega2 = 0, which is optimistic; give "
                     "--omega2 to be safer")
    trials = int(summary.get("trials_per_case") or max(n for _, n in a.values()))
    return PlanningInputs(source=str(path), p=p, sigma2_a=sigma2_a, sigma2_b=sigma2_b,
                          omega2=omega2, cases=len(a), trials=trials, notes=tuple(notes),
                          scope=scope)


def _scores(block: dict[str, Any], expectation: str | None = None
            ) -> dict[str, tuple[float, int]]:
    return {p["probe_id"]: (float(p["score"]), int(p["n"]))
            for p in block.get("probe_results", []) if p.get("score") is not None and p["n"]
            and expectation in (None, p.get("expectation"))}


def plan_width(width: float, p: float = 0.5, level: float = 0.95) -> "WidthAnswer":
    _check_rate("--p", p)
    if not 0 < width < 1:
        raise ConfigError(f"must be between 0 and 1, got {width}", field="--width")
    n = n_for_interval_width(width, p=p, level=level)
    lo, hi = beta_interval(round(p * n), n, level=level)
    return {
        "question": "width",
        "n": n,
        "achieved_interval": [lo, hi],
        "assumptions": [
            f"the rate is near {p:g} (0.5 is the worst case: the widest interval)",
            f"{level:.0%} equal-tailed credible interval, Beta(1,1) prior",
            "the n units are independent: cases with one trial each, or the trials of one "
            "case; trials nested in cases count for less (see the clustered SE)",
        ],
    }


def plan_independent(mde: float, p1: float, *, alpha: float = 0.05, power: float = 0.8,
                     method: str = "unpooled") -> "IndependentAnswer":
    if not 0 < p1 < 1:
        raise ConfigError(f"the control's rate must lie strictly between 0 and 1 to detect a "
                          f"difference from it, got {p1:g}", field="--p1")
    if not 0 < mde < 1:
        raise ConfigError(f"must lie strictly between 0 and 1, got {mde:g}", field="--mde")
    if p1 + mde >= 1:
        raise ConfigError(f"--p1 {p1:g} + --mde {mde:g} = {p1 + mde:g} leaves the variant no "
                          f"rate below 1: lower --mde or --p1", field="--mde/--p1")
    p2 = p1 + mde
    n = sample_size_two_proportions(p1, p2, alpha=alpha, power=power, method=method)
    return {
        "question": "independent",
        "n_per_subject": n,
        "assumptions": [
            f"two subjects on different cases, rates {p1:g} and {p2:g} (difference {mde:g})",
            f"two-sided alpha {alpha:g}, power {power:g}, {method} normal approximation",
            "one trial per case (more trials per case help only as far as cases vary)",
        ],
    }


#: What a paired plan's difference is a difference of (`metric` in its answer), and what
#: that is (the first of its assumptions).
CASE_RATE = ("mean per-case rate",
             "each case's share of passing trials, averaged over the cases")
CASE_ACTIVATION_RATE = {
    scope: (f"mean per-case activation rate ({scope})",
            f"each case's share of trials that invoked the skill, averaged over the "
            f"{kind} cases")
    for scope, kind in (("must", "must_trigger"), ("not", "should_not_trigger"))}


def plan_paired(*, mde: float | None, cases: int | None, sigma2_a: float, sigma2_b: float,
                omega2: float, trials: int, alpha: float = 0.05,
                power: float = 0.8,
                metric: tuple[str, str] = CASE_RATE) -> "PairedAnswer":
    if trials < 1:
        raise ConfigError(f"must be at least 1, got {trials}", field="--trials")
    for name, v, most in (("--sigma2-a", sigma2_a, 0.25), ("--sigma2-b", sigma2_b, 0.25),
                          ("--omega2", omega2, 1.0)):
        if not (math.isfinite(v) and 0 <= v <= most):
            what = "a pass/fail trial" if most < 1 else "a difference of rates"
            raise ConfigError(f"the variance of {what} lies in [0, {most:g}], got {v}",
                              field=name)
    if sigma2_a == sigma2_b == omega2 == 0:
        raise ConfigError("all variances are zero (a planning rate of 0 or 1?): any "
                          "difference would be detected with one case; give a rate strictly "
                          "between 0 and 1 or a variance",
                          field="--p/--sigma2-a/--sigma2-b/--omega2")
    common = dict(sigma2_a=sigma2_a, sigma2_b=sigma2_b, omega2=omega2, k_a=trials,
                  k_b=trials, alpha=alpha, power=power)
    out: dict[str, Any] = {"question": "paired", "trials_per_case": trials,
                           "metric": metric[0]}
    if mde is not None:
        if not 0 < mde < 1:
            raise ConfigError(f"must be between 0 and 1, got {mde}", field="--mde")
        out["n_cases"] = n_paired(mde, **common)
        out["mde"] = mde
    if cases is not None:
        if cases < 2:
            raise ConfigError(f"must be at least 2, got {cases}", field="--cases")
        out["mde_for_cases"] = {"cases": cases, "mde": mde_paired(cases, **common)}
    out["assumptions"] = [
        f"the difference is in the {metric[0]} ({metric[1]}), variant − control",
        f"both subjects run the same cases, {trials} trial(s) each",
        f"within-case (trial) variance sigma2_a={sigma2_a:.4g}, sigma2_b={sigma2_b:.4g}; "
        f"variance of the per-case difference of true rates omega2={omega2:.4g}",
        f"two-sided alpha {alpha:g}, power {power:g}; Miller (2024) paired-difference formula",
    ]
    return cast("PairedAnswer", out)  # filled key by key, in the order of its JSON


def plan_goal(goal: dict[str, Any], basis: Basis, *, effect: float | None = None,
              power: float = 0.8, source: str,
              observed: float | None = None) -> "GoalAnswer":
    """How many cases settle `goal` (its metric, direction, min_effect, credibility) if the
    treatment differs from the control by `effect` on the goal's metric (default: twice
    min_effect in the goal's direction), capped at the room the control leaves, with the
    simulated probability of settling it: `ix.eval.goal_sizing.goal_size`, the one sizing
    `ix validate` and a run's suggestion print. `basis`: the design at a rate, or a run's
    counts of the goal's compare pair (then each simulated run is drawn from a population
    those counts leave plausible, as the inconclusive goal's suggestion does: after a run
    both print the same size). Which verdicts remain reachable goes in `reachable`."""
    metric, direction = goal["metric"], goal["direction"]
    m, c = float(goal["min_effect"]), float(goal["credibility"])
    if effect is None and m == 0:
        raise ConfigError("the goal's min_effect is 0: say which true effect to plan for "
                          "with --effect", field="--effect")
    if effect is not None and not (math.isfinite(effect) and -1 < effect < 1):
        raise ConfigError(f"a difference of rates lies strictly between -1 and 1, got "
                          f"{effect:g}", field="--effect")
    if effect is not None:
        beyond = (abs(effect) if direction == "differ"
                  else effect if direction == "increase" else -effect) - m
        if abs(beyond) < 1e-9:
            raise ConfigError(f"a true effect of {effect:+g} sits on the goal's boundary "
                              f"(min_effect {m:g}): no number of cases settles it",
                              field="--effect")
    if not basis.must.any():
        raise ConfigError(f"the experiment has no case of a kind {metric} needs",
                          field="goal.metric")
    if basis.trials > 62:
        raise ConfigError(f"at most 62 trials per case can be simulated, got "
                          f"{basis.trials}", field="--trials")
    try:
        size = goal_size(goal, basis, effect=effect, target=power, observed=observed)
    except ValueError as exc:
        raise ConfigError(str(exc), field="--effect") from None
    st = size.settling
    k = basis.trials
    uneven = ", the change as uneven as the pairs show" if basis.treatment is not None else ""
    out: dict[str, Any] = {
        "question": "goal", "compare": list(goal["compare"]),
        "metric": metric, "direction": direction, "min_effect": m, "credibility": c,
        "effect": size.effect, "effect_asked": size.asked if size.capped else None,
        "trials_per_case": k, "cases": size.cases, "unit": unit(metric),
        "target": power, "criterion": size.criterion, "reachable": size.reach,
        "p_settle": st.p_settle if st else None,
        "p_supported": st.p_supported if st else None,
        "p_refuted": st.p_refuted if st else None,
        "simulations": st.replicates if st else 0,
        "simulated_cases": st.cases if st else None, "t_start": size.start,
        "assumptions": [
            f"a true effect of {_fx(size.effect)} on {metric} (treatment - control)"
            + (f", {_fx(size.asked)} capped at the room the control's {metric} "
               f"{size.control:.3f} leaves" if size.capped and size.asked is not None
               and size.control is not None else "")
            + "; every case's rate of being right moves by the same amount",
            (f"the control's cases as in {source}, resampled, {k} trial(s) per case"
             if basis.control is None else
             f"the cases as in {source}: each simulated run draws from a population they "
             f"leave plausible (a Bayesian bootstrap of the cases, each case's rate from its "
             f"posterior{uneven}), {k} trial(s) per case"),
            f"the goal's rule: {direction} beyond {m:g} at credibility {c:g}; the size starts "
            f"from the one-sided t approximation and is checked by simulating ix's own "
            f"verdict ({FINAL_REPLICATES} seeded runs)",
        ],
    }
    if size.note is not None:
        out["note"] = size.note
    return cast("GoalAnswer", out)


def _fx(x: float | None) -> str:
    return "n/a" if x is None else "0" if x == 0 else f"{x:+.3g}"


def _check_rate(field: str, p: float) -> None:
    if not 0 <= p <= 1:
        raise ConfigError(f"a rate must be between 0 and 1, got {p}", field=field)


def plan_power(lab: str | Path | None = None, experiment: str | None = None, *,
               width: float | None = None, mde: float | None = None, paired: bool = False,
               p: float | None = None, trials: int | None = None, cases: int | None = None,
               sigma2_a: float | None = None, sigma2_b: float | None = None,
               omega2: float | None = None, alpha: float = 0.05, power: float = 0.8,
               level: float = 0.95, method: str = "unpooled",
               effect: float | None = None) -> "PlanOutput":
    """What `ix plan` answers, as data: `{"answers": [...], "from_run" | "from_design": ...}`.

    With `experiment`, the planning values come from its latest run; before its first run,
    from its design (its cases and trials, rate 0.5, omega2 = 0), said so in `from_design`.
    With `experiment` and neither `width` nor `mde`: the cases its goal needs (`plan_goal`,
    planned for a true `effect`, default twice the goal's min_effect), or, without a goal,
    what the current design can detect. Raises ConfigError naming the flags on any
    impossible combination.
    """
    for name, value in (("--alpha", alpha), ("--power", power), ("--level", level)):
        if not 0 < value < 1:
            raise ConfigError(f"must be between 0 and 1, got {value}", field=name)
    if method not in ("unpooled", "pooled", "cohen_h"):
        raise ConfigError(f"unknown method {method!r}; allowed: unpooled, pooled, cohen_h",
                          field="--method")
    if p is not None and not (math.isfinite(p) and 0 <= p <= 1):
        raise ConfigError(f"a rate must be between 0 and 1, got {p}", field="--p")
    if trials is not None and trials < 1:
        raise ConfigError(f"must be at least 1, got {trials}", field="--trials")
    if effect is not None and experiment is None:
        raise ConfigError("--effect plans an experiment's goal: name the EXPERIMENT",
                          field="--effect")
    paired_only = [name for name, v in (("--cases", cases), ("--sigma2-a", sigma2_a),
                                        ("--sigma2-b", sigma2_b), ("--omega2", omega2))
                   if v is not None]
    if paired_only and not paired and (experiment is None or width is not None
                                       or mde is not None):
        raise ConfigError(f"{', '.join(paired_only)} describe(s) the paired design: add "
                          "--paired", field=paired_only[0])
    inputs: PlanningInputs | None = None
    design: FromDesign | None = None
    planned: Any = None
    if experiment is not None:
        lab_path, paths = api.loading.resolve(lab, [experiment])
        if ExperimentDir.at(paths[0]).latest_summary.is_file():
            planned = api.loading.validate(lab_path, [str(paths[0])])[0]
            pair = _goal(planned)
            inputs = inputs_from_run(paths[0], pair["compare"] if pair else None,
                                     scoped=planned.loaded.experiment.sensor == "activation")
        else:
            planned = api.loading.validate(lab_path, [str(paths[0])])[0]
            rate = p if p is not None else 0.5
            cases_of = list(planned.cases)
            scope: Scope = None
            if planned.loaded.experiment.sensor == "activation":
                must = [c for c in cases_of if c.expectation == "must_trigger"]
                scope = "must" if must else "not"
                cases_of = must or [c for c in cases_of
                                    if c.expectation == "should_not_trigger"]
            inputs = PlanningInputs(
                source=str(planned.loaded.config_file), p=rate, sigma2_a=rate * (1 - rate),
                sigma2_b=rate * (1 - rate), omega2=0.0, cases=len(cases_of),
                trials=planned.trials, notes=("no run yet: the design's cases and trials, a "
                                              f"rate of {rate:g} and omega2 = 0 (optimistic)",),
                scope=scope)
            design = {"experiment": planned.loaded.experiment.name, "cases": inputs.cases,
                      "trials": inputs.trials, "notes": list(inputs.notes), "scope": scope}
    rate = p if p is not None else (inputs.p if inputs else 0.5)
    answers: list[WidthAnswer | IndependentAnswer | PairedAnswer | GoalAnswer] = []
    goal = _goal(planned)
    if effect is not None and goal is None:
        raise ConfigError(f"{experiment} has no goal to plan for", field="--effect")
    asks = width is not None or mde is not None or paired
    if width is not None:
        answers.append(plan_width(width, rate, level))
    if mde is not None and not paired:
        answers.append(plan_independent(mde, rate, alpha=alpha, power=power, method=method))
    if paired or (inputs is not None and not asks and effect is None):
        k = trials if trials is not None else (inputs.trials if inputs else 1)
        s2a = sigma2_a if sigma2_a is not None else (
            inputs.sigma2_a if inputs else rate * (1 - rate))
        s2b = sigma2_b if sigma2_b is not None else (inputs.sigma2_b if inputs else s2a)
        w2 = omega2 if omega2 is not None else (inputs.omega2 if inputs else 0.0)
        n_cases = cases if cases is not None else (inputs.cases if inputs else None)
        if mde is None and n_cases is None:
            raise ConfigError("say what to plan for the paired design: --mde (how many "
                              "cases) or --cases (which difference)", field="--paired")
        scope = inputs.scope if inputs is not None else None
        try:
            answers.append(plan_paired(mde=mde, cases=n_cases, sigma2_a=s2a, sigma2_b=s2b,
                                       omega2=w2, trials=k, alpha=alpha, power=power,
                                       metric=CASE_ACTIVATION_RATE[scope] if scope
                                       else CASE_RATE))
        except ConfigError:
            # unasked (a goal follows): a run whose rates sit at 0 or 1 has no variance to
            # plan a paired difference on, but its goal can still be sized
            if paired or goal is None:
                raise
    if goal is not None and (effect is not None or not asks):
        if is_outcome_metric(goal["metric"]):
            answers.append({"question": "goal", "cases": None, "assumptions": [],
                            "note": f"the goal is on {goal['metric']}: ix plan sizes goals on "
                                    "rates; a run's inconclusive verdict says how many cases "
                                    "would settle it, from the spread it saw"})
        elif effect is None and float(goal["min_effect"]) == 0:
            answers.append({"question": "goal", "cases": None, "assumptions": [],
                            "note": "the goal's min_effect is 0: give --effect, the true "
                                    "effect to plan for"})
        else:
            answers.append(_plan_goal_of(goal, planned, inputs if design is None else None,
                                         p=p, trials=trials, effect=effect, power=power))
    # the goal's metric first: what the experiment asks comes before what the design allows
    answers.sort(key=lambda a: a["question"] != "goal")
    if not answers:
        raise ConfigError("say what to plan: --width W (interval width), --mde D (difference "
                          "between subjects), optionally --paired", field="ix plan")
    result: PlanOutput = {"answers": answers}
    if design is not None:
        result["from_design"] = design
    elif inputs is not None:
        result["from_run"] = {"summary": inputs.source, "scope": inputs.scope, "p": inputs.p,
                              "sigma2_a": inputs.sigma2_a, "sigma2_b": inputs.sigma2_b,
                              "omega2": inputs.omega2, "cases": inputs.cases,
                              "trials": inputs.trials, "notes": list(inputs.notes)}
    return result


def _goal(planned: Any) -> dict[str, Any] | None:
    """The experiment's goal with its `compare` resolved (its first two subjects by
    default), or None."""
    if planned is None or planned.loaded.experiment.goal is None:
        return None
    raw = planned.loaded.experiment.goal
    goal = dict(raw) if isinstance(raw, dict) else raw.model_dump()
    names = [s.subject.name for s in planned.subjects]
    goal["compare"] = goal.get("compare") or names[:2]
    return goal


def _plan_goal_of(goal: dict[str, Any], planned: Any, inputs: PlanningInputs | None, *,
                  p: float | None, trials: int | None, effect: float | None,
                  power: float) -> "GoalAnswer":
    """`plan_goal` for an experiment: from its latest run (`inputs`), the per-case counts of
    the goal's `compare` pair — the cases both ran, as the run's suggestion reads them —
    else (or with --p) its design's cases at rate p (default 0.5, the worst case)."""
    import numpy as np

    control, treatment = goal["compare"][:2]
    if inputs is not None and p is None:
        path = Path(inputs.source)
        summary = summary_as_written(path)
        blocks = {b.get("name"): b for b in summary.get("subjects") or []}
        if control not in blocks:
            raise ConfigError(f"the goal's control {control} is not in the latest run "
                              f"(subjects: {', '.join(map(str, blocks))})", file=path,
                              field="goal.compare")

        def rows(name: str) -> dict[str, Any]:
            return {r["probe_id"]: r for r in (blocks.get(name) or {}).get("probe_results", [])
                    if r.get("score") is not None and r.get("n")
                    and r.get("expectation") in ("must_trigger", "should_not_trigger")}

        rc, rt = rows(control), rows(treatment)
        both = treatment in blocks
        ids = [i for i in rc if i in rt] if both else list(rc)

        def counts(r: dict[str, Any]) -> tuple[Any, Any]:
            valid = np.array([int(r[i]["n"]) for i in ids], dtype=np.int64)
            passed = np.rint(np.array([float(r[i]["score"]) for i in ids]) * valid)
            return passed.astype(np.int64), valid

        must = np.array([rc[i]["expectation"] == "must_trigger" for i in ids], dtype=bool)
        basis = Basis(must=must, trials=trials or inputs.trials,
                      words=f"from the latest run's rates ({control} vs {treatment})"
                      if both else f"from the latest run's rates ({control})",
                      control=counts(rc), treatment=counts(rt) if both else None)
        source = f"the latest run ({path}), {control}" + (f" and {treatment}" if both else "")
        g = summary.get("goal") or {}
        observed = ((g.get("effect") or {}).get("diff")
                    if list(g.get("compare") or []) == [control, treatment] else None)
    else:
        rate = p if p is not None else 0.5
        basis = Basis.design([c.expectation for c in planned.cases], rate,
                             trials or planned.trials)
        source = (f"the design of {planned.loaded.experiment.name}, every case right with "
                  f"probability {rate:g}")
        observed = None
    return plan_goal(goal, basis, effect=effect, power=power, source=source,
                     observed=observed)
