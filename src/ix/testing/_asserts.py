"""`assert_experiment` and `assert_goal`: an experiment's answer as a test's pass or fail.

Each runs the experiment through `ix.api` (or, with `rerun=False`, reads its latest run) and
raises `AssertionError` with the run's own sentences: the goal's lines
(`ix.report.answer.goal_lines`) or the metric with its credible interval. Bad input (no such
lab, experiment, subject or metric; no run to read) is an `ix.api.ConfigError`, not a
failure.
"""

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import ix.api
from ix.domain.errors import ConfigError
from ix.report.answer import METRICS, goal_lines, interval_text, metric_name, num_text
from ix.testing._session import SESSION, Asserted, tell

Summary = Mapping[str, Any]


def assert_experiment(name: str, metric: str = "f1", *, at_least: float | None = None,
                      at_most: float | None = None, credibility: float = 0.95,
                      subject: str | None = None, lab: str | Path | None = None,
                      rerun: bool | None = None, **run_options: Any) -> Summary:
    """Pass when the subject's `metric` is credibly at least `at_least` (its credible
    interval's lower bound ≥ it) and/or credibly at most `at_most` (upper bound ≤ it), at
    `credibility`; else `AssertionError`, one sentence with the value and the interval.

    `subject`: None is the goal's treatment (the subject under test) when the experiment has
    a goal, else its first subject (the control). `metric`: f1, precision, recall,
    pass_rate (correct_rate), activation_rate, or another `<key>` whose `<key>_ci` the
    summary holds (at the run's own level only). `lab`: a path or a name as `--lab` takes
    it (None: pytest's `--ix-lab`, else found from the working folder). `rerun`: False
    reads the latest run instead of running (None: pytest's `--ix-rerun/--ix-no-rerun`,
    else True). `run_options`: the overrides of `ix run` (trials, seed, runtime, subjects,
    filters, ...). Returns the run's summary.
    """
    if at_least is None and at_most is None:
        raise TypeError("assert_experiment needs at_least= or at_most= (or both)")
    if not 0 < credibility < 1:
        raise ConfigError(f"credibility must be between 0 and 1, not {credibility!r}",
                          field="credibility")
    summary = _summary(name, lab, rerun, run_options)
    _completed(summary)
    who = subject or _default_subject(summary)
    value, (lo, hi) = _estimate(summary, metric, who, credibility)
    level = f"({credibility * 100:g}%)"
    head = (f"{metric_name(_metric_key(metric), summary.get('sensor'))} of {who} "
            f"{num_text(value)} {interval_text([lo, hi])}")
    bounds: list[tuple[str, bool]] = []  # (the bound in words, whether the interval holds it)
    if at_least is not None:
        bounds.append((f"at least {_bound(at_least)}", lo is not None and lo >= at_least))
    if at_most is not None:
        bounds.append((f"at most {_bound(at_most)}", hi is not None and hi <= at_most))
    missed = [words for words, held in bounds if not held]
    text = (f"{head} is not credibly {' and '.join(missed)} {level}" if missed
            else f"{head} is credibly {' and '.join(w for w, _ in bounds)} {level}")
    tell(Asserted(_name(summary), "NOT MET" if missed else "MET", text,
                  str(summary.get("run_id")), not missed))
    if missed:
        raise AssertionError(f"{text} — {_run_words(summary)}")
    return summary


def assert_goal(name: str, *, lab: str | Path | None = None, rerun: bool | None = None,
                **run_options: Any) -> Summary:
    """Pass when the experiment's goal is `supported`; else `AssertionError` whose message is
    the goal's lines as `ix run` prints them (verdict, effect with its interval, evidence,
    what would settle it). An experiment without a goal is a `ConfigError`. `lab`, `rerun`
    and `run_options` as for `assert_experiment`. Returns the run's summary."""
    summary = _summary(name, lab, rerun, run_options)
    if not summary.get("goal"):
        raise ConfigError(f"experiment {_name(summary)} has no goal: add `goal:` to its "
                          "experiment.yaml, or check a metric with assert_experiment",
                          field="goal")
    return _judged(summary)


def check_experiment(name: str, *, lab: str | Path | None = None,
                     rerun: bool | None = None) -> Summary:
    """What `--ix-collect`'s item for an experiment asserts: its goal is supported, or,
    without a goal, its run completed (said as `NO GOAL` in the terminal summary)."""
    summary = _summary(name, lab, rerun, {})
    if summary.get("goal"):
        return _judged(summary)
    _completed(summary)
    tell(Asserted(_name(summary), "NO GOAL", "the run completed; no goal to judge",
                  str(summary.get("run_id")), True))
    return summary


def _judged(summary: Summary) -> Summary:
    goal = dict(summary["goal"])
    _completed(summary)
    lines = goal_lines(goal, summary.get("sensor"))
    verdict = goal.get("verdict")
    passed = verdict == "supported"
    effect = lines[1] if len(lines) > 1 else str(goal.get("hypothesis") or "")
    tell(Asserted(_name(summary), (verdict or "no verdict").upper(), effect,
                  str(summary.get("run_id")), passed))
    if not passed:
        raise AssertionError("\n".join([*lines, f"({_run_words(summary)})"]))
    return summary


def _summary(name: str, lab: str | Path | None, rerun: bool | None,
             run_options: dict[str, Any]) -> Summary:
    """The summary of a new run of `name`, or of its latest run with `rerun` False."""
    where = ix.api.Lab(lab if lab is not None else SESSION.lab)
    rerun = rerun if rerun is not None else SESSION.rerun is not False
    if rerun:
        return where.run(name, **run_options).summary
    if run_options:
        raise TypeError(f"run options ({', '.join(sorted(run_options))}) need rerun=True")
    _, paths = ix.api.resolve(where.path, [name])
    reports = ix.api.reports  # the read side of `ix report`, imported here on first use
    summary: Summary = reports.read_summary(reports.latest_of(paths[0]))
    return summary


def _completed(summary: Summary) -> None:
    status = summary.get("run_status")
    if status != "completed":
        reason = summary.get("reason") or summary.get("stop_reason")
        raise AssertionError(f"the run did not complete ({status}"
                             f"{f': {reason}' if reason else ''}) — {_run_words(summary)}")


def _default_subject(summary: Summary) -> str:
    """The goal's treatment, else the first subject."""
    compare = (summary.get("goal") or {}).get("compare") or []
    if len(compare) >= 2:
        return str(compare[1])
    return str(summary["subjects"][0]["name"])


def _metric_key(metric: str) -> str:
    return "pass_rate" if metric == "correct_rate" else metric


def _estimate(summary: Summary, metric: str, subject: str,
              credibility: float) -> tuple[float | None, tuple[float | None, float | None]]:
    """The subject's estimate of `metric` and its interval at `credibility`: the summary's
    own `<metric>_ci` at the run's level, else the interval `ix leaderboard` gives from the
    subject's counts (`ix.report.leaderboard.standing`)."""
    blocks = {b["name"]: b for b in summary.get("subjects") or []}
    if subject not in blocks:
        raise ConfigError(f"no subject {subject!r} in run {summary.get('run_id')} of "
                          f"{_name(summary)} (subjects: {', '.join(blocks) or 'none'})",
                          field="subject")
    block = blocks[subject]
    metrics = block.get("metrics") or {}
    key = _metric_key(metric)
    level = (summary.get("statistics") or {}).get("level", 0.95)
    ci = metrics.get(f"{key}_ci")
    if isinstance(ci, list | tuple) and abs(credibility - level) < 1e-9:
        return metrics.get(key), (ci[0], ci[1])
    if key in METRICS:
        # `ix leaderboard`'s intervals: imported only for a credibility other than the run's
        from ix.report.leaderboard import counts_of, standing

        s = standing(counts_of(block), key, credibility)
        return s.estimate, s.interval
    allowed = ", ".join([*METRICS, "correct_rate"])
    raise ConfigError(f"no metric {metric!r} with an interval at {credibility:g} in run "
                      f"{summary.get('run_id')} (metrics: {allowed}; others at the run's "
                      f"level {level:g} only)", field="metric")


def _bound(x: float) -> str:
    """A threshold as the intervals beside it print (`0.80`), all its digits if it has more."""
    return f"{x:.2f}" if round(x, 2) == x else f"{x:g}"


def _name(summary: Summary) -> str:
    return str(summary.get("experiment_name"))


def _run_words(summary: Summary) -> str:
    return f"run {summary.get('run_id')} of {_name(summary)}"
