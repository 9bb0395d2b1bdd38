"""Design checks: is this experiment able to answer its question before any trial runs?

Pure: an `Experiment` and the numbers of a run's plan (the cases and subjects it takes, the
trials per case, each subject's runtime) in, a list of `DesignWarning` out. `ix validate`
and `ix run` print them as warnings; with `--strict` they are errors. docs/experiments.md
("Design checks") states each rule; the codes below are the stable names used there and in
`ix validate --json`.
"""

import math
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ConfigDict

from ix.domain.model import Model
from ix.domain.types import Subject
from ix.eval.goal_sizing import Basis, goal_size, unit
from ix.eval.models import SKILL_RUNTIMES, EvalCase, Experiment
from ix.eval.outcomes import is_outcome_metric
from ix.eval.sensors import target_skill
from ix.stats.beta import credible_interval
from ix.stats.power import n_for_interval_width

#: Without a goal (or with `min_effect: 0`), each side's 95% interval should be able to get
#: this narrow at the worst-case rate 0.5: 10 cases.
DEFAULT_WIDTH = 0.55
#: The smaller side of must_trigger / should_not_trigger below this share of the larger one.
BALANCE = 1 / 3
#: Runtimes assumed to answer the same way every time (capability tests, a person).
DETERMINISTIC = frozenset({"command", "http", "grpc", "human", "scripted"})
#: Metrics that only must_trigger cases feed.
MUST_ONLY = frozenset({"recall", "activation_rate"})

CODES = ("too-few-cases", "no-control", "one-trial-stochastic", "even-trials-stochastic",
         "unbalanced", "duplicate-prompt", "unseen-cases", "never-activates", "unchecked-judge",
         "rfc-spelling")


class DesignWarning(Model):
    """One design problem: a stable `code`, what is wrong and what to do, and the field of
    `experiment.yaml` (or `cases`) it is about."""

    model_config = ConfigDict(frozen=True)

    code: str
    message: str
    field: str


def is_stochastic(runtime: Mapping[str, Any]) -> bool:
    """Whether a runtime can answer one prompt differently on two trials.

    `mock` only when a rate lies strictly between 0 and 1, `random` unless `p` is 0 or 1,
    `lexical` unless `temperature: 0`; LLM runtimes always; `command`, `http`, `human` and
    `scripted` are taken as deterministic; an unknown kind as stochastic. An `ensemble` is
    not judged itself: its members, subjects of the same experiment, are.
    """
    kind = runtime.get("kind")
    if kind == "ensemble":
        return False
    if kind == "mock":
        rates = [runtime.get("default_rate", 0.0),
                 *dict(runtime.get("activation_rates") or {}).values(),
                 *dict(runtime.get("error_rates") or {}).values()]
        return any(_between(r) for r in rates)
    if kind == "random":
        return _between(runtime.get("p", 0.5))
    if kind == "lexical":
        return _number(runtime.get("temperature", 0.5)) > 0
    return kind not in DETERMINISTIC


def cases_needed(width: float, level: float) -> int:
    """Cases whose worst-case (rate 0.5) credible interval is at most `width` wide."""
    return n_for_interval_width(width, p=0.5, level=level)


def interval_width(n: int, level: float) -> float:
    """The width of the credible interval of a rate over `n` cases at the rate 0.5."""
    lo, hi = credible_interval(round(n / 2), n, level=level)
    return hi - lo


def check_design(experiment: Experiment, *, cases: Sequence[EvalCase] | None = None,
                 subjects: Sequence[Subject] | None = None,
                 runtimes: Mapping[str, Mapping[str, Any]] | None = None,
                 trials: int | None = None, adaptive: bool | None = None,
                 filtered: bool = False) -> list[DesignWarning]:
    """Every design warning for a run of `experiment`.

    `cases` and `subjects` are what the run takes (default: all of the experiment's; cases
    include the acceptable ones), `runtimes` each subject's runtime by name (default: its
    own), `trials`/`adaptive` the plan's; `filtered` says a `--filter` chose the cases.
    """
    cases = list(experiment.cases if cases is None else cases)
    subjects = list(experiment.subjects if subjects is None else subjects)
    runtimes = runtimes or {s.name: s.config.get("runtime") or experiment.runtime
                            for s in subjects}
    trials = experiment.trials if trials is None else trials
    adaptive = experiment.adaptive if adaptive is None else adaptive
    out: list[DesignWarning] = []
    sides = _too_few(experiment, cases, filtered, out, trials)
    _no_control(experiment, subjects, out)
    _one_trial(trials, adaptive, subjects, runtimes, out)
    _even_trials(trials, adaptive, subjects, runtimes, out)
    _unbalanced(experiment, cases, sides, filtered, out)
    _duplicates(cases, out)
    unseen = _unseen(experiment, cases, subjects, runtimes, out)
    _never_activates(experiment, cases, subjects, runtimes, unseen, out)
    return out


#: Fewer cases than this under a goal on a quantity: its interval covers less than it says.
QUANTITY_CASES = 10

# --------------------------------------------------------------------------- the checks

def _too_few(exp: Experiment, cases: list[EvalCase], filtered: bool,
             out: list[DesignWarning], trials: int = 1) -> set[str]:
    """A goal with a min_effect needs the cases that settle it (`_too_few_for_goal`); else
    each side the metric depends on needs the cases for an interval 0.55 wide. Returns the
    sides reported."""
    goal = exp.goal or {}
    if is_outcome_metric(str(goal.get("metric", "f1"))):
        # a goal on tokens, time or cost: its t interval wants ten cases (STATS.md §13); the
        # rates' widths are asked of the correct rate, as with no goal
        if len(cases) < QUANTITY_CASES:
            out.append(DesignWarning(
                code="too-few-cases", field="cases",
                message=f"{len(cases)} case(s): the goal's {goal['metric']} is a mean of case "
                        f"means, whose interval covers as it says from about "
                        f"{QUANTITY_CASES} cases (docs/outcomes.md)"))
        goal = {}
    if float(goal.get("min_effect", 0.0) or 0.0) > 0:
        sized = _too_few_for_goal(exp, cases, filtered, out, trials)
        if sized is not None:
            return sized
    level = float(goal.get("credibility", 0.95))
    min_effect = float(goal.get("min_effect", 0.0) or 0.0)
    metric = goal.get("metric", "f1")
    width = min(2 * min_effect, DEFAULT_WIDTH) if min_effect > 0 else DEFAULT_WIDTH
    need = cases_needed(width, level)
    why = (f"the goal can only be refuted once the effect's interval fits inside "
           f"+/-min_effect, {width:.2g} wide" if min_effect > 0
           else f"ix asks for at most {width:.2g}")
    plan = f"ix plan --width {width:.2g}" + (f" --level {level:g}" if level != 0.95 else "")
    counts = _counts(cases)
    groups: list[tuple[str, int]]
    if exp.sensor != "activation" or metric == "pass_rate":
        groups = [("must_trigger and should_not_trigger",
                   counts["must_trigger"] + counts["should_not_trigger"])]
    elif metric in MUST_ONLY:
        groups = [("must_trigger", counts["must_trigger"])]
    else:
        groups = [(side, counts[side]) for side in ("must_trigger", "should_not_trigger")]
    chosen = " (after --filter)" if filtered else ""
    reported: set[str] = set()
    for side, n in groups:
        if n >= need:
            continue
        reported.add(side)
        what = goal.get("metric") or ("the correct rate" if exp.sensor != "activation"
                                      else "recall" if side == "must_trigger" else "precision")
        if n == 0:
            msg = f"no {side} cases{chosen}: {what} cannot be estimated"
        else:
            msg = (f"{n} {side} case(s){chosen}: a rate over {n} case(s) has a {level:.0%} "
                   f"interval up to {interval_width(n, level):.2f} wide, and so has {what}; "
                   f"{why}")
        out.append(DesignWarning(code="too-few-cases", field="cases",
                                 message=f"{msg}: about {need} cases at the worst-case "
                                         f"rate 0.5 (`{plan}`; add --p for a likelier "
                                         "rate)"))
    return reported


def _too_few_for_goal(exp: Experiment, cases: list[EvalCase], filtered: bool,
                      out: list[DesignWarning], trials: int) -> set[str] | None:
    """The goal's size from `ix.eval.goal_sizing.goal_size` — the one `ix plan` and a run's
    suggestion print — at the worst-case rate 0.5, by the one-sided t approximation (the
    simulation `ix plan` runs takes seconds). None when it cannot be sized here (a side the
    metric needs has no case): the width rule reports that."""
    raw = exp.goal or {}
    goal = {"direction": "differ", "credibility": 0.95, **raw,
            "metric": raw.get("metric") or "f1", "min_effect": float(raw["min_effect"])}
    metric = goal["metric"]
    counts = _counts(cases)
    must_only = metric in MUST_ONLY and exp.sensor == "activation"
    if not counts["must_trigger"] or (not must_only and metric in ("f1", "precision")
                                      and not counts["should_not_trigger"]):
        return None
    basis = Basis.design([c.expectation for c in cases], 0.5, trials)
    try:
        size = goal_size(goal, basis, simulate=False)
    except ValueError:
        return None
    if size.cases is None:
        return None
    n = counts["must_trigger"] + (0 if must_only else counts["should_not_trigger"])
    if n >= size.cases:
        return set()
    sides = {"must_trigger"} if must_only else {"must_trigger", "should_not_trigger"}
    chosen = " (after --filter)" if filtered else ""
    rule = f"{metric} {goal['direction']} beyond {goal['min_effect']:g}"
    out.append(DesignWarning(
        code="too-few-cases", field="cases",
        message=f"{n} {unit(metric).split(' (')[0]}{chosen}: the goal ({rule}) needs about "
                f"{size.cases} {size.unit} {size.method}, {size.criterion}; `ix plan "
                f"{exp.name}` simulates ix's own rule"))
    return sides


def _no_control(exp: Experiment, subjects: list[Subject], out: list[DesignWarning]) -> None:
    """A goal compares a control with a treatment: both must be in the run."""
    if exp.goal is None:
        return
    names = [s.name for s in subjects]
    compare = list(exp.goal.get("compare") or [s.name for s in exp.subjects[:2]])
    if len(names) < 2:
        out.append(DesignWarning(
            code="no-control", field="goal.compare",
            message=f"the goal compares two subjects, but this run has only "
                    f"{', '.join(names) or 'none'}: there is no control, so no verdict"))
        return
    missing = [n for n in compare if n not in names]
    if missing or len(compare) < 2:
        out.append(DesignWarning(
            code="no-control", field="goal.compare",
            message=f"the goal compares {' with '.join(compare) or 'nothing'}, but "
                    f"{', '.join(missing) or 'a second subject'} is not in this run (subjects: "
                    f"{', '.join(names)}): no verdict"))


def _stochastic(subjects: list[Subject],
                runtimes: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The subjects whose runtime answers differently each time, as "name (kind)"."""
    return [f"{s.name} ({runtimes[s.name].get('kind')})" for s in subjects
            if s.name in runtimes and is_stochastic(runtimes[s.name])]


def _one_trial(trials: int, adaptive: bool, subjects: list[Subject],
               runtimes: Mapping[str, Mapping[str, Any]], out: list[DesignWarning]) -> None:
    if trials != 1 or adaptive:
        return
    noisy = _stochastic(subjects, runtimes)
    if noisy:
        out.append(DesignWarning(
            code="one-trial-stochastic", field="trials",
            message=f"one trial per case on a stochastic runtime: {', '.join(noisy)}; each "
                    "case's majority vote is a single draw and its interval spans most of "
                    "[0, 1]: use an odd number of trials >= 3, or trials: auto"))


def tie_share(trials: int) -> float:
    """P(a case whose true rate is ½ votes "activated" after `trials` trials): below ½ at an
    even count, where a tie (trials/2 of trials) counts as not activated — 0.377 at 10."""
    ties = math.comb(trials, trials // 2) / 2**trials if trials % 2 == 0 else 0.0
    return (1 - ties) / 2


def _even_trials(trials: int, adaptive: bool, subjects: list[Subject],
                 runtimes: Mapping[str, Mapping[str, Any]], out: list[DesignWarning]) -> None:
    """An even fixed trial count on a stochastic runtime: ties in the majority vote."""
    if adaptive or trials < 2 or trials % 2:
        return
    noisy = _stochastic(subjects, runtimes)
    if noisy:
        out.append(DesignWarning(
            code="even-trials-stochastic", field="trials",
            message=f"an even number of trials per case ({trials}) on a stochastic runtime: "
                    f"{', '.join(noisy)}; a tie ({trials // 2} of {trials}) counts as not "
                    f"activated, so a case whose true rate is 0.5 votes activated only "
                    f"{tie_share(trials):.1%} of the time: use an odd number "
                    f"({trials - 1} or {trials + 1})"))


def _unbalanced(exp: Experiment, cases: list[EvalCase], reported: set[str], filtered: bool,
                out: list[DesignWarning]) -> None:
    """Activation experiments need both sides: recall alone rewards a skill that always fires."""
    if exp.sensor != "activation":
        return
    counts = _counts(cases)
    must, not_ = counts["must_trigger"], counts["should_not_trigger"]
    chosen = " (after --filter)" if filtered else ""
    if not_ == 0 and must and "should_not_trigger" not in reported:
        msg = (f"no should_not_trigger cases{chosen}: a subject that always activates would "
               "score perfectly; add near-miss prompts it must not trigger on")
    elif must == 0 and not_ and "must_trigger" not in reported:
        msg = (f"no must_trigger cases{chosen}: a subject that never activates would score "
               "perfectly; add prompts it must trigger on")
    elif must and not_ and min(must, not_) < BALANCE * max(must, not_):
        small = "must_trigger" if must < not_ else "should_not_trigger"
        msg = (f"unbalanced expectations{chosen}: {must} must_trigger vs {not_} "
               f"should_not_trigger; the {small} side is under a third of the other, so its "
               "metric is far less certain; aim for similar counts")
    else:
        return
    out.append(DesignWarning(code="unbalanced", field="cases", message=msg))


def _duplicates(cases: list[EvalCase], out: list[DesignWarning]) -> None:
    """Cases that ask the same question: the same prompt (ignoring case and whitespace) and
    the same files (a task with other fixtures is another question)."""
    seen: dict[tuple[str, str], list[EvalCase]] = {}
    for case in cases:
        files = case.workspace.digest if case.workspace is not None else ""
        seen.setdefault((" ".join(case.prompt.split()).casefold(), files), []).append(case)
    for group in seen.values():
        if len(group) < 2:
            continue
        ids = ", ".join(c.id for c in group)
        labels = sorted({c.expectation for c in group})
        clash = f" but different expectations ({', '.join(labels)})" if len(labels) > 1 else ""
        out.append(DesignWarning(
            code="duplicate-prompt", field="cases",
            message=f"cases {ids} have the same prompt (ignoring case and whitespace)"
                    f"{' and files' if group[0].workspace is not None else ''}{clash}: "
                    "a duplicate counts one question twice; keep one"))


def _unseen(exp: Experiment, cases: list[EvalCase], subjects: list[Subject],
            runtimes: Mapping[str, Mapping[str, Any]], out: list[DesignWarning]) -> set[str]:
    """A skill that no subject (on a runtime that reads skills) is given can never activate.
    Returns the subjects reported."""
    if exp.sensor != "activation":
        return set()
    reported: set[str] = set()
    must = sum(1 for c in cases if c.expectation == "must_trigger")
    by_target: dict[str, list[tuple[int, Subject]]] = {}
    for s in subjects:
        runtime = runtimes.get(s.name) or {}
        if runtime.get("kind") not in SKILL_RUNTIMES:
            continue
        by_target.setdefault(target_skill(exp.sensor_options, exp.skill, s.name), []).append(
            (_index(exp, s.name), s))
    for target, group in by_target.items():
        if any(target in _visible_skills(s, runtimes.get(s.name) or {}) for _, s in group):
            continue
        names = ", ".join(s.name for _, s in group)
        reported.update(s.name for _, s in group)
        i = group[0][0]
        out.append(DesignWarning(
            code="unseen-cases", field=f"subjects[{i}].skills" if i >= 0 else "skill",
            message=f"no subject is given the skill {target!r} that the activation sensor "
                    f"looks for ({names}): it can never be called, so the {must} "
                    "must_trigger case(s) can only fail; add it to a subject's skills (a "
                    "folder under the lab's skills/) or set the sensor's skill"))
    return reported


def _never_activates(exp: Experiment, cases: list[EvalCase], subjects: list[Subject],
                     runtimes: Mapping[str, Mapping[str, Any]], reported: set[str],
                     out: list[DesignWarning]) -> None:
    """A subject that can never call the skill: `mock` with no positive rate for any case of
    the run, or a subject given no skills at all on a runtime that reads them (those whose
    skill no subject has are `unseen-cases`; a condition that leaves the skill out with
    `ablate: skills` does so on purpose). Its recall is 0 by construction, not measured."""
    if exp.sensor != "activation":
        return
    ids = {c.id for c in cases}
    mocks: dict[str, list[str]] = {}  # field -> subjects: one line for a runtime they share
    for s in subjects:
        runtime = runtimes.get(s.name) or {}
        kind = runtime.get("kind")
        if kind == "mock" and not _mock_can_fire(runtime, ids):
            mocks.setdefault(_runtime_field(s, runtime), []).append(s.name)
        elif (kind in SKILL_RUNTIMES and s.name not in reported
              and not s.config.get("skills") and not _ablated(s)):
            i = _index(exp, s.name)
            out.append(DesignWarning(
                code="never-activates", field=f"subjects[{i}].skills" if i >= 0 else "skill",
                message=f"subject {s.name} ({kind}) is given no skills: the skill the "
                        "activation sensor looks for can never be called, so its must_trigger "
                        "cases can only fail; give it the skill under test"))
    for field, names in mocks.items():
        who = f"subject {names[0]}" if len(names) == 1 else f"subjects {', '.join(names)}"
        out.append(DesignWarning(
            code="never-activates", field=field,
            message=f"{who} (mock) never call{'s' if len(names) == 1 else ''} the skill: "
                    "default_rate is 0 and no case of the run has a positive "
                    "activation_rates entry, so recall is 0 by construction; set "
                    "default_rate (`runtime: {kind: mock, default_rate: 0.8}`) or "
                    "activation_rates"))


def _mock_can_fire(runtime: Mapping[str, Any], case_ids: set[str]) -> bool:
    rates = dict(runtime.get("activation_rates") or {})
    return (_number(runtime.get("default_rate", 0.0)) > 0
            or any(_number(r) > 0 for cid, r in rates.items() if cid in case_ids))


def _runtime_field(subject: Subject, runtime: Mapping[str, Any]) -> str:
    """Where the subject's runtime was written: `--runtime` when the command line replaced
    it, the subject's own `runtime`, else the experiment's."""
    own = subject.config.get("runtime") or {}
    if own.get("kind") != runtime.get("kind"):
        return "--runtime"
    where = (subject.config.get("runtime_origins") or {}).get("kind")
    field = where[1] if isinstance(where, list | tuple) and len(where) == 2 else ""
    return f"{field}.default_rate" if field.startswith("subjects[") else "runtime.default_rate"


def _ablated(subject: Subject) -> bool:
    """A condition of `ablate: skills` (`<subject>[-name]`), which leaves a skill out."""
    sweep = subject.config.get("sweep")
    return isinstance(sweep, Mapping) and sweep.get("without") is not None


# --------------------------------------------------------------------------- helpers

def _visible_skills(subject: Subject, runtime: Mapping[str, Any]) -> set[str]:
    if runtime.get("disable_slash_commands"):
        return set()
    names = {str(k.get("name")) for k in subject.config.get("skills") or []
             if isinstance(k, Mapping)}
    only = runtime.get("skills") if runtime.get("kind") == "lexical" else None
    return names & set(only) if isinstance(only, list) else names


def _index(exp: Experiment, name: str) -> int:
    """The subject's place under `subjects:`, or -1 with the `skill:` shorthand."""
    if exp.skill is not None:
        return -1
    return next((i for i, s in enumerate(exp.subjects) if s.name == name), -1)


def _counts(cases: list[EvalCase]) -> dict[str, int]:
    counts = {"must_trigger": 0, "should_not_trigger": 0, "acceptable": 0}
    for c in cases:
        counts[c.expectation] += 1
    return counts


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else 0.0


def _between(value: Any) -> bool:
    return 0.0 < _number(value) < 1.0
