"""`ix sanity`: run an experiment with subjects whose scores are known before they run, and
check that the pipeline gives them (`003_…`'s SANITY-CHECK).

Three subjects replace the experiment's own: `random` (the target skill with p = 0.5, so each
trial is right with probability ½ whatever its case), `perfect` and `wrong` (`scripted`,
`answers: perfect` and `wrong`). Through the real loader, plan, runtimes, sensors, trial log
and summary, the random subject must score inside the exact 99.9% range of a fair coin, the
perfect one 100% and the wrong one 0%, with no errored trial. Nothing calls a model: judge
sensors and the pairwise judge are left out, and an experiment whose simulated user is a
model is not checked. The runs are written where the caller says (`ix.api.sanity`: a
throwaway folder, beside a copy of the experiment: a lab of its own), never into the lab's
`results/`.
"""

import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from ix.domain.errors import ConfigError
from ix.domain.types import ORIGIN, Subject
from ix.engine.plan import Overrides, Plan, build_plan
from ix.engine.run import run_plan
from ix.eval.schemas import SubjectBlock, Summary
from ix.eval.sensors import JUDGE_KINDS, PAIRWISE_JUDGE
from ix.lab.loader import LoadedExperiment
from ix.runtimes import get_kind
from ix.stats.chance import chance_range
from ix.store.layout import RESULTS_DIR

#: The known subjects, by name: their runtimes.
SUBJECTS: dict[str, dict[str, Any]] = {
    "random": {"kind": "random", "p": 0.5},
    "perfect": {"kind": "scripted", "answers": "perfect"},
    "wrong": {"kind": "scripted", "answers": "wrong"},
}
#: How much of a fair coin's mass the random subject's range holds: a right pipeline fails
#: the check once in a thousand experiments (and always the same ones: the seeds are fixed).
LEVEL = 0.999
#: The sensor a scripted subject can be made perfect (or perfectly wrong) for by rule.
SCRIPTABLE = "activation"
DOCS = "docs/running.md, \"ix sanity\""

Status = Literal["pass", "fail", "skip"]


@dataclass(frozen=True)
class Check:
    """One check of one experiment: what was found, and on failure (or a skip) what to do."""

    experiment: str
    subject: str
    status: Status
    found: str
    next: str = ""


@dataclass(frozen=True)
class Sanity:
    """One experiment's checks, the run they read (None: nothing ran) and its trials."""

    experiment: str
    checks: tuple[Check, ...]
    run_dir: Path | None = None
    trials: int = 0


def unchecked(loaded: LoadedExperiment) -> str | None:
    """Why sanity cannot check this experiment (None: it can)."""
    spec, exp = loaded.spec, loaded.experiment
    if spec.load is not None:
        return "a load test (`load:`) times a service; sanity checks scores"
    kinds = [s["kind"] for s in spec.sensors] if spec.sensors else [exp.sensor]
    if all(k in (*JUDGE_KINDS, PAIRWISE_JUDGE) for k in kinds):
        return "its sensors are judges, which call a model, and sanity never pays for one"
    user = spec.simulated_user
    if user is not None and any(c.user for c in exp.cases) and _pays(user):
        return (f"its simulated user runs on {user['kind']}, which calls a model, and sanity "
                "never pays for one")
    return None


def _pays(runtime: dict[str, Any]) -> bool:
    """Whether a runtime spec sends prompts to a model that bills them (a plugin: taken as
    one, since nothing says it does not)."""
    try:
        return get_kind(str(runtime.get("kind"))).spends_tokens
    except ConfigError:
        return True


def sanity_plans(loaded: LoadedExperiment) -> list[Plan]:
    """A plan per known subject, in place of the experiment's subjects (the random one alone
    when the first sensor is not activation: no rule makes a scripted subject perfect for
    it). Each runs alone: a run of several subjects compares them, which sanity does not
    need and which costs more than its trials. The experiment must be checkable
    (`unchecked`)."""
    exp, spec = loaded.experiment, loaded.spec
    free, first = _free_sensors(loaded)
    names = tuple(SUBJECTS) if first == SCRIPTABLE else ("random",)
    origin = exp.subjects[0].config.get(ORIGIN, exp.subjects[0].name) if exp.subjects else ""
    plans = []
    for name in names:
        subject = Subject(name=name, description=f"ix sanity: {name}",
                          config={"runtime": dict(SUBJECTS[name]), "skills": [],
                                  ORIGIN: origin})
        checked = replace(
            loaded, experiment=exp.model_copy(update={"subjects": (subject,), "goal": None,
                                                      "adaptive": False}),
            spec=spec.model_copy(update={"sensors": free, "goal": None, "gate": []}),
            context=None)
        # without a chance check, one trial of each case shows that it runs without an error
        plan = build_plan(checked, Overrides(trials=exp.trials if first == SCRIPTABLE else 1))
        plans.append(replace(plan, pairwise=None, gates=()))
    return plans


def _free_sensors(loaded: LoadedExperiment) -> tuple[list[dict[str, Any]] | None, str]:
    """The experiment's `sensors:` without the judges (None: it has one `sensor:`), and the
    kind of the first that is left."""
    listed = loaded.spec.sensors
    if not listed:
        return None, loaded.experiment.sensor
    free = [s for s in listed if s["kind"] not in (*JUDGE_KINDS, PAIRWISE_JUDGE)]
    return free, free[0]["kind"]


def run_sanity(loaded: LoadedExperiment, place: Path) -> Sanity:
    """Run the known subjects on `loaded` with its results under `place` (a folder of the
    caller's, standing for the lab), and check what the summary says of each."""
    name = loaded.experiment.name
    why = unchecked(loaded)
    if why is not None:
        return Sanity(name, (Check(name, "", "skip", why, "nothing to do"),))
    plans = sanity_plans(loaded)
    where = place / loaded.path.name  # the experiment as written, for `ix results --lab`
    top = str(loaded.path)
    shutil.copytree(loaded.path, where, symlinks=True, dirs_exist_ok=True,
                    ignore=lambda folder, _: [RESULTS_DIR] if folder == top else [])
    # a conversation's answers are several (the subject fires if any turn does): right at
    # chance only on a prompt alone
    chance = len(plans) > 1 and not any(c.user for c in loaded.experiment.cases)
    checks, written = [], 0
    for plan in plans:
        plan = replace(plan, loaded=replace(plan.loaded, path=where, lab=place))
        result = run_plan(plan, command=["ix", "sanity", loaded.path.name])
        if result.status == "cancelled":  # Ctrl-C: the check is not made, and says so
            raise KeyboardInterrupt
        checks.append(check(name, plan.subjects[0].subject.name, result.summary, chance))
        written += result.written
    if len(plans) == 1:
        checks.append(Check(name, "perfect", "skip",
                            f"the first sensor is {_free_sensors(loaded)[1]}; only "
                            "activation has a perfect answer by rule",
                            "to check it, run a scripted subject with per-case answers "
                            "(docs/runtimes.md, scripted)"))
    return Sanity(name, tuple(checks), where, written)


def check(experiment: str, subject: str, summary: Summary, chance: bool = True) -> Check:
    """What the summary says of one known subject, against what it must say (the random
    one, without `chance`, only that it ran without an error: for a sensor other than
    activation, an answer that ignores the prompt is not right half the time)."""
    block = next(b for b in summary["subjects"] if b["name"] == subject)
    correct = block["trial_level"]["correct"]
    n, rate = correct["n_trials"], correct["rate"]
    right = round((rate or 0.0) * n)
    if block["errors"]:
        kinds = summary.get("errors_by_kind") or []
        said = f" ({kinds[0]['kind']}: {kinds[0]['example']})" if kinds else ""
        hint = kinds[0].get("hint") if kinds else None
        return Check(experiment, subject, "fail",
                     f"{block['errors']} of {block['errors'] + n} trials errored{said}",
                     hint or "fix what fails without a model (a program, a sensor, the "
                     "simulated user); the kept run has every error")
    if n == 0:
        return Check(experiment, subject, "fail", "no trial was scored",
                     f"check the cases and sensors ({DOCS})")
    if subject == "random" and not chance:
        return Check(experiment, subject, "pass", f"{n} trials, none errored")
    if subject == "random":
        lo, hi = chance_range(n, LEVEL)
        found = (f"{right} of {n} trials right ({_pct(right, n)}), chance "
                 f"{_pct(lo, n)}–{_pct(hi, n)}")
        if lo <= right <= hi:
            return Check(experiment, subject, "pass", found)
        return Check(experiment, subject, "fail", found,
                     "a subject that ignores the prompt scores off chance: the sensor reads "
                     "something besides the answer, or cases repeat; see the kept run")
    want = n if subject == "perfect" else 0
    found = f"{right} of {n} trials right ({_pct(right, n)}), want {_pct(want, n)}"
    if right == want:
        return Check(experiment, subject, "pass", found)
    off = _off_cases(block, subject)
    return Check(experiment, subject, "fail", found,
                 f"cases scored against their expectation: {off}; check the activation "
                 "sensor's skill and those cases' `expectation`")


def _off_cases(block: SubjectBlock, subject: str) -> str:
    """The cases whose majority vote is not what the subject was scripted to get."""
    want = subject == "perfect"
    ids = [p["probe_id"] for p in block["probe_results"]
           if p.get("correct") is not None and p["correct"] is not want]
    return ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")


def _pct(k: int, n: int) -> str:
    return f"{100 * k / n:.0f}%" if n else "n/a"
