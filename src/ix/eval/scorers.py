"""Scorers: how a case's trials become its verdict (experiment.yaml's `scorers:`).

A scorer sees one case's counts (`ix.domain.verdicts.CaseTrials`) once the trials are in and
says whether the case is correct; the case's vote, and so TP/FP/FN/TN, precision, recall and
F1, follow from it. Nothing is asked of it per trial: the engine keeps counting as it always
has (`ix.eval.scoring.Tally`), so the choice costs nothing while trials run.

Built in (docs/experiments.md, "Scorers"):
- `majority` (the default): the vote activates when more than half the trials passed.
- `any`: correct when at least one trial is right (pass@k at k = the case's trials).
- `all`: correct when every trial is right (pass^k at k = the case's trials).
- `mean`: the vote activates when the mean of the first reading's score exceeds 0.5 (for a
  pass/fail sensor, the same as `majority`; for graded scores, their mean decides).
- `threshold` `{at: x, of: trials | score}`: correct when at least a fraction `x` of the
  trials are right (`of: trials`, the default), or the vote activates when the mean score
  is at least `x` (`of: score`). (Not `on:`, which YAML reads as `true`.)

A trial is *right* when its reading matches the case's expectation: passed on a
`must_trigger` case, not passed on a `should_not_trigger` one. A kind ix does not know is
looked up in the entry-point group `ix.scorers` (`ix.eval.plugins`): its object is called
with the options and returns an object with `verdict(case) -> bool`.
"""

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ix.domain.errors import ConfigError, did_you_mean, raise_all
from ix.domain.verdicts import CaseTrials, Scorer, activated
from ix.eval import plugins

__all__ = ["DEFAULT", "SCORER_KINDS", "Threshold", "build_scorer", "build_scorers",
           "scorer_name"]

#: The scorer of an experiment that names none (today's rule, and the seeds').
DEFAULT: dict[str, Any] = {"kind": "majority"}


def _vote_correct(case: CaseTrials, fired: bool) -> bool:
    return fired if case.expectation == "must_trigger" else not fired


@dataclass(frozen=True)
class Majority:
    """More than half the valid trials passed: the vote activates (a tie does not)."""

    def verdict(self, case: CaseTrials) -> bool:
        return _vote_correct(case, activated(case.rate))


@dataclass(frozen=True)
class AnyTrial:
    """Right on at least one trial: lenient (a must case that activated once, a should-not
    case that stayed quiet once)."""

    def verdict(self, case: CaseTrials) -> bool:
        return case.right >= 1


@dataclass(frozen=True)
class AllTrials:
    """Right on every trial: strict (reliability)."""

    def verdict(self, case: CaseTrials) -> bool:
        return case.right == case.valid


@dataclass(frozen=True)
class MeanScore:
    """The mean of the first reading's score above 0.5 activates the vote (a case whose
    readings carry no score: the fraction that passed)."""

    def verdict(self, case: CaseTrials) -> bool:
        mean = case.rate if case.mean_score is None else case.mean_score
        return _vote_correct(case, mean > 0.5)


@dataclass(frozen=True)
class Threshold:
    """`of: trials`: at least a fraction `at` of the trials right; `of: score`: the vote
    activates when the mean score is at least `at`."""

    at: float
    of: str = "trials"

    def verdict(self, case: CaseTrials) -> bool:
        if self.of == "score":
            mean = case.rate if case.mean_score is None else case.mean_score
            return _vote_correct(case, mean >= self.at)
        return case.right >= self.at * case.valid


#: Each built-in kind: its options (besides `kind`).
SCORER_KINDS: dict[str, tuple[str, ...]] = {
    "majority": (), "any": (), "all": (), "mean": (), "threshold": ("at", "of"),
}
_SIMPLE: dict[str, Scorer] = {"majority": Majority(), "any": AnyTrial(), "all": AllTrials(),
                              "mean": MeanScore()}


def build_scorer(spec: Mapping[str, Any], *, field: str = "scorers[0]") -> Scorer:
    """The scorer `spec` names (`{kind: ..., <options>}`); a `ConfigError` naming `field`'s
    key for a bad kind or option. A kind ix does not know is a plugin's (`ix.scorers`)."""
    kind, options, outside = plugins.listed_kind("scorer", spec, list(SCORER_KINDS),
                                                 field=field)
    if outside is not None:
        found: Scorer = outside
        return found
    allowed = SCORER_KINDS[kind]
    for key in options:
        if key not in allowed:
            takes = f"takes {', '.join(allowed)}" if allowed else "takes no option"
            raise ConfigError(f"unknown key {key!r}{did_you_mean(key, allowed)}: the {kind} "
                              f"scorer {takes}", field=f"{field}.{key}")
    if kind != "threshold":
        return _SIMPLE[kind]
    of = options.get("of", "trials")
    if of not in ("trials", "score"):
        raise ConfigError(f"must be trials (the fraction of right trials) or score (the "
                          f"mean score), got {of!r}", field=f"{field}.of")
    if "at" not in options:
        raise ConfigError("the threshold scorer needs 'at', e.g. {kind: threshold, at: 0.7}",
                          field=f"{field}.at")
    at = options["at"]
    if isinstance(at, bool) or not isinstance(at, int | float) or not math.isfinite(at) \
            or not 0 < at <= 1:
        raise ConfigError(f"must be a number in (0, 1], got {at!r}", field=f"{field}.at")
    return Threshold(float(at), of)


def build_scorers(specs: Sequence[Mapping[str, Any]] | None) -> tuple[Scorer, ...]:
    """Every scorer of `scorers:` (the default's when none is given), each checked; the
    first decides the cases' verdicts."""
    built, problems = [], []
    for i, spec in enumerate(specs or [DEFAULT]):
        try:
            built.append(build_scorer(spec, field=f"scorers[{i}]"))
        except ConfigError as exc:
            problems.append(exc)
    raise_all(problems)
    return tuple(built)


def scorer_name(spec: Mapping[str, Any]) -> str:
    """A scorer as one word or a short phrase: `majority`, `threshold at 0.7 (score)`."""
    kind = str(spec.get("kind"))
    if kind == "threshold":
        score = spec.get("of") == "score"
        return f"threshold at {spec.get('at')}" + (" (score)" if score else "")
    return kind
