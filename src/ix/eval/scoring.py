"""From trials to verdicts to numbers: the row scorer and the aggregate step of `001_…`.

Rules a reader of a summary must know (also in docs/results.md):
- A case's `score` is the fraction of its *valid* trials whose reading passed; errored trials
  are counted apart and excluded. A case with no valid trial has `score: null`,
  `correct: null` and is left out of TP/FP/FN/TN.
- The majority vote activates when `score > 0.5` (so 0.5 does not), and is `correct` when it
  matches the expectation. `acceptable` cases never run and never count.
- An empty denominator gives None (printed "n/a", JSON null), never 0 or NaN: precision with
  no predicted positive (TP+FP = 0), recall with no must case voted (TP+FN = 0), and F1 =
  2TP/(2TP+FP+FN) with no TP, FP or FN. F1 with TP = FP = 0 < FN is 0, a defined value: the
  skill never activated on the cases it must take.
"""

import functools
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ix.domain.types import Reading
from ix.domain.verdicts import CaseTrials, ProbeResult, Scorer, Verdict, majority, scored
from ix.eval.models import SKILL_RUNTIMES, EvalCase, ExperimentResults
from ix.eval.outcomes import OutcomeSums

STATUS_THRESHOLDS: tuple[tuple[float, str], ...] = (
    (0.85, "excellent"), (0.70, "good"), (0.50, "needs_work"),
)
LOW = 0.8  # precision or recall below this raises an issue
#: A subject's probe results carry each trial's verdict (`ProbeResult.trials`, the summary's
#: `probe_results[].trials`) up to this many trials; above it they stay empty, so a summary
#: stays small (a verdict is ~20 bytes of indented JSON, twice for the control, whose block
#: is also the top level) and `trials.jsonl` holds them.
TRIALS_KEPT = 1000
#: What decides a call on the runtimes that never read a description: the true advice
#: where "broaden / narrow the description" would change nothing.
_NOT_READ = {
    "mock": "The mock runtime never reads the description: its default_rate and "
            "activation_rates (per case) set how often it calls the skill.",
    "random": "The random runtime ignores the prompt and the description: it calls the "
              "skill with probability p.",
    "scripted": "The scripted runtime answers as its `answers:` say: it fires the skills "
                "written there, whatever the description.",
}


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def compute_metrics(probe_results: Iterable[ProbeResult]) -> dict[str, float | int | None]:
    """Precision, recall, F1 and the confusion counts over the cases' votes (the majority
    vote, or the vote of the scorer that decided: `ProbeResult.fired`); a rate whose
    denominator is empty is None (undefined), not 0."""
    tp = fp = fn = tn = 0
    for p in probe_results:
        fired = p.fired
        if p.expectation == "must_trigger":
            tp, fn = (tp + 1, fn) if fired else (tp, fn + 1)
        elif p.expectation == "should_not_trigger":
            fp, tn = (fp + 1, tn) if fired else (fp, tn + 1)
    precision, recall = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
    f1 = (2 * precision * recall / (precision + recall) if precision and recall
          else 0.0 if fp + fn else None)  # = 2TP/(2TP+FP+FN); 0 when TP = 0 < FP + FN
    return {"precision": precision, "recall": recall, "f1": f1,
            "tp": tp, "fp": fp, "fn": fn, "tn": tn}


def interpret(metrics: dict[str, float | int | None],
              probe_results: Sequence[ProbeResult] = (),
              activation: bool = True, runtime: str | None = None) -> dict[str, object]:
    """Status from F1, and what to do when precision or recall is below 0.8; `no_data` when
    no case had a valid trial (every trial errored): an F1 of 0 would then say "poor" of a
    subject that was never measured. `activation`: the first sensor reads whether the skill
    under test was invoked; else it is a capability sensor, and the words say "passed".
    `runtime`: the subject's runtime kind; advice about the description only for one that
    reads it (`SKILL_RUNTIMES`, or None: not known, as for an imported run)."""
    tp, fp, fn, tn = (int(metrics[k] or 0) for k in ("tp", "fp", "fn", "tn"))
    precision, recall = _float(metrics["precision"]), _float(metrics["recall"])
    if not tp + fp + fn + tn:
        return {"status": "no_data", "suggestions": [],
                "issues": ["No valid trial: every trial errored, so the metrics measure "
                           "nothing (see the run's errors)"]}
    if metrics["f1"] is None:  # only should_not cases, all quiet
        return {"status": "no_data", "suggestions": [],
                "issues": ["F1 is undefined (n/a): no must_trigger case has a vote and no "
                           "should_not case activated, so there is no TP, FP or FN"]}
    f1 = float(metrics["f1"])
    status = next((name for bound, name in STATUS_THRESHOLDS if f1 >= bound), "poor")
    issues: list[str] = []
    suggestions: list[str] = []
    wrong = {e: [p.probe_id for p in probe_results if p.expectation == e and not p.correct]
             for e in ("must_trigger", "should_not_trigger")}
    if precision is not None and precision < LOW:
        if activation:
            issues.append(f"Low precision ({precision:.2f}): the skill "
                          f"activates on {fp} case(s) it should not"
                          + _ids(wrong["should_not_trigger"]))
            suggestions.append(_description_advice(
                runtime, "Narrow the skill's description: say what it is not for, and "
                         "contrast it with the near-miss prompts that wrongly triggered it."))
        else:
            issues.append(f"Low precision ({precision:.2f}): the sensor "
                          f"passed on {fp} should_not case(s), where it should "
                          "fail" + _ids(wrong["should_not_trigger"]))
            suggestions.append("Read those cases' answers (`ix report` shows them): the "
                               "subject does what it should not, or the sensor is too lenient.")
    if recall is not None and recall < LOW:
        if activation:
            issues.append(f"Low recall ({recall:.2f}): the skill misses "
                          f"{fn} case(s) it should handle"
                          + _ids(wrong["must_trigger"]))
            suggestions.append(_description_advice(
                runtime, "Broaden the description with the words users actually type in the "
                         "missed prompts, and say plainly 'Use when ...'."))
        else:
            issues.append(f"Low recall ({recall:.2f}): the sensor failed "
                          f"on {fn} must case(s), where it should pass"
                          + _ids(wrong["must_trigger"]))
            suggestions.append("Read those cases' answers (`ix report` shows them): the "
                               "subject cannot do them yet, or the sensor is too strict.")
    return {"status": status, "issues": issues, "suggestions": list(dict.fromkeys(suggestions))}


def _description_advice(runtime: str | None, advice: str) -> str:
    """`advice` (about the skill's description) where the runtime reads descriptions, else
    what does decide its calls."""
    if runtime is None or runtime in SKILL_RUNTIMES:
        return advice
    return _NOT_READ.get(runtime, f"The {runtime} runtime does not read skill descriptions: "
                                  "what it runs decides whether the skill is called, so look "
                                  "there (`ix report` shows each case's answers).")


def _float(x: float | int | None) -> float | None:
    return None if x is None else float(x)


def _ids(ids: list[str], most: int = 5) -> str:
    if not ids:
        return ""
    shown = ", ".join(ids[:most]) + (", ..." if len(ids) > most else "")
    return f" ({shown})"


def sensor_keys(names: Sequence[str]) -> list[str]:
    """The names a trial's readings are summarised under: each reading's `sensor_name`, the
    second reading of a name `name#2`, the third `name#3` (two `matcher` sensors)."""
    seen: Counter[str] = Counter()
    out = []
    for name in names:
        seen[name] += 1
        out.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return out


@functools.lru_cache(maxsize=1024)
def _keys_of(names: tuple[str, ...]) -> tuple[str, ...]:
    """`sensor_keys` of a trial's sensor names, made once: a run's trials have one list of
    sensors, or a few (`Tally.sense` asks once a trial)."""
    return tuple(sensor_keys(names))


@dataclass
class _Counts:
    valid: int = 0
    passed: int = 0
    errors: int = 0
    # bit t set: trial t was valid / passed. Pairs two subjects' trials by index for paired
    # comparisons, in two integers per case however many trials ran.
    valid_bits: int = 0
    passed_bits: int = 0
    error_bits: int = 0  # bit t set: trial t errored (or had no verdict)


@dataclass
class Tally:
    """Per-case counts for one subject, fed one trial at a time: memory grows with cases only."""

    cases: Sequence[EvalCase]
    counts: dict[str, _Counts] = field(default_factory=dict)
    errors: int = 0
    trials: int = 0
    tokens_input: int = 0
    tokens_output: int = 0
    cost_usd: float = 0.0
    versions: set[str] = field(default_factory=set)  # model ids / CLI versions reported
    #: case id -> trials per first skill invoked (None: no skill), valid trials only
    routes: dict[str, Counter[str | None]] = field(default_factory=dict)
    #: sensor name (`sensor_keys`) -> case id -> [passed, valid]: every sensor's readings of
    #: the valid trials, in the order the sensors first read (the summary's `sensors`)
    sensors: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    #: tokens, time, cost, scores and a judge's dimensions by case (the summary's `outcomes`)
    outcomes: OutcomeSums = field(default_factory=OutcomeSums)
    #: the names of the subject's `llm_judge` sensors: their scores by dimension join
    #: `outcomes` (`<judge>.<dimension>`)
    judges: frozenset[str] = frozenset()
    #: what decides each case once its trials are in (`scorers:`, `ix.eval.scorers`); None:
    #: the majority vote. Never asked per trial.
    scorer: Scorer | None = None

    def spend(self, tokens_input: int, tokens_output: int, cost_usd: float) -> None:
        """Add one trial's usage (errored trials cost money too)."""
        self.tokens_input += tokens_input
        self.tokens_output += tokens_output
        self.cost_usd += cost_usd

    def __post_init__(self) -> None:
        self.counts = {c.id: _Counts() for c in self.cases}

    def include(self, case: EvalCase) -> None:
        """Count `case` too, after the others: a case first met while counting (verdicts
        from outside ix, `ix.store.lab_storage`). A case already counted is left as it is."""
        if case.id not in self.counts:
            self.cases = [*self.cases, case]
            self.counts[case.id] = _Counts()

    def add(self, probe_id: str, passed: bool | None, trial: int | None = None) -> None:
        """Count one trial: `passed` from its primary reading, `None` when it errored."""
        c = self.counts[probe_id]
        self.trials += 1
        if passed is None:
            c.errors += 1
            self.errors += 1
            if trial is not None:
                c.error_bits |= 1 << trial
            return
        c.valid += 1
        c.passed += passed
        if trial is not None:
            bit = 1 << trial
            c.valid_bits |= bit
            if passed:
                c.passed_bits |= bit

    def sense(self, probe_id: str, readings: Iterable[tuple[str, bool | None]]) -> None:
        """Count one valid trial's readings, (sensor name, passed) in the sensors' order; a
        reading with no verdict (passed None: n/a) is not counted, as no valid trial."""
        pairs = tuple(readings)
        # one sensor (the common case): its name is its key, no `_keys_of` to ask
        keys = (pairs[0][0],) if len(pairs) == 1 else _keys_of(tuple(n for n, _ in pairs))
        sensors = self.sensors
        for key, (_, ok) in zip(keys, pairs, strict=True):
            by_case = sensors.get(key)
            if by_case is None:  # listed, even with no verdict yet
                by_case = sensors[key] = {}
            if ok is None:
                continue
            cell = by_case.get(probe_id)
            if cell is None:
                cell = by_case[probe_id] = [0, 0]
            cell[0] += ok
            cell[1] += 1

    def route(self, probe_id: str, first_invoked: str | None) -> None:
        """Count which skill took one valid trial's prompt (`ix.eval.routing`)."""
        counter = self.routes.get(probe_id)
        if counter is None:
            counter = self.routes[probe_id] = Counter()
        counter[first_invoked] += 1

    def case_trials(self, case: EvalCase) -> CaseTrials:
        """What a scorer sees of `case`: its counts and its mean score."""
        c = self.counts[case.id]
        mean = self.outcomes.means("score", (case.id,)).get(case.id)
        return CaseTrials(case.id, case.expectation, c.passed, c.valid, mean)

    def vote(self, case: EvalCase) -> bool | None:
        """The case's vote (it activated / passed as a whole) by the tally's scorer; None
        with no valid trial."""
        c = self.counts[case.id]
        if not c.valid:
            return None
        if self.scorer is None:
            return c.passed / c.valid > 0.5
        return scored(self.case_trials(case), self.scorer).fired

    def trial_verdicts(self, probe_id: str) -> list[tuple[int, bool | None]]:
        """The case's trials in index order, each with its verdict (None: errored or no
        verdict); empty when this subject ran more than `TRIALS_KEPT` trials, or when its
        trials were counted without their index (then `n + errors` still counts them)."""
        c = self.counts[probe_id]
        if self.trials > TRIALS_KEPT or c.valid_bits.bit_count() != c.valid \
                or c.error_bits.bit_count() != c.errors or c.valid_bits & c.error_bits:
            return []
        every, out, t = c.valid_bits | c.error_bits, [], 0
        while every >> t:
            if every >> t & 1:
                out.append((t, bool(c.passed_bits >> t & 1) if c.valid_bits >> t & 1
                            else None))
            t += 1
        return out

    def verdicts_by_trial(self, probe_id: str) -> list[bool | None]:
        """The summary's form of the case's trials: element t is trial t's verdict (None:
        errored or no verdict); empty unless trials 0 .. k-1 all ran (`trial_verdicts`; a
        cancelled run can leave gaps)."""
        pairs = self.trial_verdicts(probe_id)
        if any(t != i for i, (t, _) in enumerate(pairs)):
            return []
        return [ok for _, ok in pairs]

    def probe_results(self, scorer: Scorer | None = None) -> list[ProbeResult]:
        """Each case's `ProbeResult`, decided by `scorer` (default: the tally's; none: the
        majority vote), with its trials' `Verdict`s (`trial_verdicts`; a trial's observation
        is not kept: it is in `trials.jsonl`)."""
        scorer = scorer or self.scorer
        sensor = next(iter(self.sensors), "sensor")
        results = []
        for c in self.cases:
            counts = self.counts[c.id]
            trials = tuple(
                Verdict(probe_id=c.id, trial=t, expectation=c.expectation,
                        reading=None if ok is None else Reading(sensor_name=sensor, passed=ok))
                for t, ok in self.trial_verdicts(c.id))
            if scorer is None:
                results.append(majority(c.id, c.expectation, counts.passed, counts.valid,
                                        trials))
            else:
                results.append(scored(self.case_trials(c), scorer).model_copy(
                    update={"trials": trials}))
        return results

    def results(self, experiment_name: str, activation: bool = True,
                runtime: str | None = None) -> ExperimentResults:
        """The subject's results; `activation`: the first sensor is the activation sensor,
        `runtime` the subject's runtime kind (`interpret`'s words)."""
        probes = self.probe_results()
        counted = [p for p, c in zip(probes, self.cases, strict=True) if self.counts[c.id].valid]
        metrics = compute_metrics(counted)
        verdict = interpret(metrics, counted, activation, runtime)
        return ExperimentResults(
            experiment_name=experiment_name, probe_results=tuple(probes),
            precision=_float(metrics["precision"]), recall=_float(metrics["recall"]),
            f1=_float(metrics["f1"]), tp=int(metrics["tp"] or 0), fp=int(metrics["fp"] or 0),
            fn=int(metrics["fn"] or 0), tn=int(metrics["tn"] or 0),
            status=str(verdict["status"]),
            issues=tuple(verdict["issues"]), suggestions=tuple(verdict["suggestions"]),  # type: ignore[arg-type]
        )
