"""Control suggestions: what an experiment could add to answer its question better.

Not problems (`ix.eval.design` says what is wrong): `ix validate` prints each as a
suggestion, never an error, under `--strict` too. Pure: the experiment, the run's subjects
and runtimes, the skills beside the one under test (name, description) and the runtime
options' defaults in; a list of `Suggestion` out. docs/experiments.md ("Control
suggestions") states each rule; the codes are the stable names used there and in
`ix validate --json`.

- `no-skill-baseline`: an outcome experiment (its first sensor is not `activation`) where
  every subject is given the skill under test: nothing says what the skill adds.
- `near-miss-cases`: an activation experiment with fewer should-not cases than an interval
  0.55 wide takes: a should-not case per sibling skill (the lab's, or a subject's listing),
  closest siblings first, each with a prompt idea from its description.
- `unswept-control`: a sweep whose control (the first subject, unswept) does not set a
  swept key: it runs at the runtime's default, which either repeats a cell of the grid or
  is a value no report can name.
"""

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ConfigDict

from ix.domain.model import Model
from ix.domain.types import ORIGIN, Subject, dotted_value
from ix.eval.design import DEFAULT_WIDTH, cases_needed
from ix.eval.models import SKILL_RUNTIMES, EvalCase, Experiment

__all__ = ["CODES", "MAX_SIBLINGS", "Suggestion", "closest", "prompt_idea", "suggest_controls"]

CODES = ("no-skill-baseline", "near-miss-cases", "unswept-control")
#: At most this many siblings are named (the closest to the skill under test first).
MAX_SIBLINGS = 6
_WORD = re.compile(r"[a-z][a-z0-9]{2,}")
#: Words that say nothing of what a skill is for.
_COMMON = frozenset({"the", "and", "for", "with", "when", "use", "user", "uses", "asks",
                     "wants", "needs", "this", "that", "your", "you", "from", "into", "any",
                     "all", "are", "its", "not", "can"})
_SENTENCE = re.compile(r"(?<=[.!?])\s")
#: A description's trigger clause ("Use when the user asks to …"): its request, if any.
_USE_WHEN = re.compile(r"\b(?:use (?:this |it )?(?:skill )?when(?:ever)?|when (?:the user|"
                       r"claude|you))\s+(?:the user\s+)?(?:asks?|wants?|needs?)\s+"
                       r"(?:to\s+|for\s+)?", re.IGNORECASE)
#: A prompt idea's clause is cut, at a comma, to about this many characters.
IDEA_CHARS = 90
_TRAILING = re.compile(r"(?:\s+(?:for|with|to|and|or|of|the|a|an|like|such as))+$",
                       re.IGNORECASE)


class Suggestion(Model):
    """One suggestion: a stable `code`, what to add and why, the field of
    `experiment.yaml` (or `cases`) it is about, and `examples` (YAML lines, prompt ideas)."""

    model_config = ConfigDict(frozen=True)

    code: str
    message: str
    field: str
    examples: tuple[str, ...] = ()


def suggest_controls(experiment: Experiment, *, cases: Sequence[EvalCase],
                     subjects: Sequence[Subject],
                     runtimes: Mapping[str, Mapping[str, Any]],
                     siblings: Sequence[tuple[str, str]] = (),
                     sweep: Mapping[str, Any] | None = None,
                     defaults: Mapping[str, Any] | None = None) -> list[Suggestion]:
    """Every control suggestion for a run of `experiment` (`cases`, `subjects` and their
    `runtimes` by name as the run takes them). `siblings`: (name, description) of the skills
    beside the one under test; `sweep`: the experiment's `sweep:`; `defaults`: the control's
    runtime option defaults by swept key (a key absent: unknown)."""
    out: list[Suggestion] = []
    target = _skill_under_test(experiment, subjects, runtimes)
    if experiment.sensor != "activation" and target is not None:
        out += _no_baseline(experiment, target, subjects, runtimes)
    if experiment.sensor == "activation" and target is not None:
        out += _near_misses(experiment, target, cases, siblings)
    if sweep:
        out += _unswept(subjects, runtimes, sweep, defaults or {})
    return out


def _reads_skills(s: Subject, runtimes: Mapping[str, Mapping[str, Any]]) -> bool:
    return (runtimes.get(s.name) or {}).get("kind") in SKILL_RUNTIMES


def _skills(s: Subject) -> list[str]:
    return [str(k.get("name")) for k in s.config.get("skills") or [] if isinstance(k, Mapping)]


def _skill_under_test(exp: Experiment, subjects: Sequence[Subject],
                      runtimes: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The experiment's `skill`, else the sensor's, else a skill every subject on a runtime
    that reads skills is given (None: no such skill, or no such subject)."""
    named = exp.sensor_options.get("skill") if exp.sensor == "activation" else None
    if isinstance(named, str) and named:
        return named
    if exp.skill:
        return exp.skill
    reading = [s for s in subjects if _reads_skills(s, runtimes)]
    if not reading:
        return None
    common = [k for k in _skills(reading[0]) if all(k in _skills(s) for s in reading)]
    return common[0] if common else None


def _no_baseline(exp: Experiment, target: str, subjects: Sequence[Subject],
                 runtimes: Mapping[str, Mapping[str, Any]]) -> list[Suggestion]:
    reading = [s for s in subjects if _reads_skills(s, runtimes)]
    if not reading or any(target not in _skills(s) for s in reading):
        return []  # a subject without it is the baseline (or no runtime reads skills)
    treated = f"with-{target}" if exp.skill else str(reading[0].config.get(ORIGIN)
                                                          or reading[0].name)
    field = "skill" if exp.skill else "subjects"
    return [Suggestion(
        code="no-skill-baseline", field=field,
        message=f"every subject is given {target}, so nothing measures what it adds: "
                + ("replace `skill:` with a control without it and a subject with it"
                   if exp.skill else "add a control without it, first under subjects")
                + ", and a goal comparing the two",
        examples=("subjects:", f"  - name: without-{target}", "    skills: []",
                  f"  - name: {treated}", f"    skills: [{target}]",
                  "goal:", "  metric: pass_rate", f"  compare: [without-{target}, {treated}]",
                  "  direction: increase", "  min_effect: 0.1"))]


def _near_misses(exp: Experiment, target: str, cases: Sequence[EvalCase],
                 siblings: Sequence[tuple[str, str]]) -> list[Suggestion]:
    have = sum(1 for c in cases if c.expectation == "should_not_trigger")
    need = cases_needed(DEFAULT_WIDTH, 0.95)
    others = [(n, d) for n, d in dict(siblings).items() if n != target and d.strip()]
    if have >= need or not others:
        return []
    ranked = closest(target, dict(siblings).get(target, ""), others)
    shown = ranked[:MAX_SIBLINGS]
    more = (f" (the {len(shown)} closest of {len(ranked)})"
            if len(ranked) > len(shown) else "")
    examples = tuple(f"cases/not-{name}-001.md: {prompt_idea(desc)}" for name, desc in shown)
    return [Suggestion(
        code="near-miss-cases", field="cases",
        message=f"{have} should_not_trigger case(s), fewer than the {need} a precision "
                f"interval 0.55 wide takes: the sharpest are near misses, requests a "
                f"sibling skill serves; one per sibling{more}: "
                f"{', '.join(n for n, _ in shown)}",
        examples=examples)]


def prompt_idea(description: str) -> str:
    """A should-not prompt idea from a sibling's description: its trigger clause ("Use when
    the user asks to merge PDFs" → "Can you merge PDFs?") or else its first sentence ("Help
    me with this: extract text and tables from PDF files."), cut at a comma to about 90
    characters. Words are never cut."""
    text = " ".join(description.split())
    found = _USE_WHEN.search(text)
    clause = text[found.end():] if found else text
    clause = _SENTENCE.split(clause, maxsplit=1)[0]
    clause = re.split(r"\s[-–—]\s|[;:]", clause, maxsplit=1)[0].strip().rstrip(" .")
    kept = ""
    for part in clause.split(", "):
        if kept and len(kept) + 2 + len(part) > IDEA_CHARS:
            break
        kept = f"{kept}, {part}" if kept else part
    clause = _TRAILING.sub("", kept).rstrip(" ,") or text
    if clause[1:2].islower():  # "Extract text" → "extract text"; "PDF forms" stays
        clause = clause[:1].lower() + clause[1:]
    return f'"Can you {clause}?"' if found else f'"Help me with this: {clause}."'


def closest(target: str, description: str, others: Sequence[tuple[str, str]]
            ) -> list[tuple[str, str]]:
    """`others` (name, description), the closest to the skill `target` first: the most
    words shared with its name and description (names break ties)."""
    mine = _words(f"{description} {target.replace('-', ' ')}")
    return sorted(others, key=lambda nd: (-len(mine & _words(f"{nd[1]} {nd[0]}")), nd[0]))


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower())) - _COMMON


def _unswept(subjects: Sequence[Subject], runtimes: Mapping[str, Mapping[str, Any]],
             sweep: Mapping[str, Any], defaults: Mapping[str, Any]) -> list[Suggestion]:
    """Each swept key the control leaves to the runtime's default."""
    if not subjects:
        return []
    control = subjects[0]
    name = str(control.config.get(ORIGIN) or control.name)
    runtime = runtimes.get(control.name) or {}
    kind = runtime.get("kind")
    own: dict[str, Any] = {**runtime, **{k: control.config.get(k)
                                         for k in ("model", "concurrency")
                                         if control.config.get(k) is not None}}
    out: list[Suggestion] = []
    for key, values in sweep.items():
        if key == "ablate" or dotted_value(own, key) is not None:
            continue
        grid = ", ".join(_shown(v) for v in values)
        if key in defaults and defaults[key] is not None:
            default = defaults[key]
            if default not in values:
                continue  # an unswept control at a known value: what a sweep wants
            message = (f"the control {name} sets no {key}, so it runs at {kind}'s default "
                       f"{_shown(default)}, which the cell {key}={_shown(default)} runs "
                       f"again: set it on {name}, and that cell is the control, run once")
            value = default
        else:
            message = (f"the control {name} sets no {key}, so it runs at {kind}'s default, "
                       f"which no report can name, and every cell ({key}: [{grid}]) is "
                       f"compared with it: set the value you compare with on {name} (one of "
                       "the grid makes that cell the control)")
            value = values[0]
        out.append(Suggestion(code="unswept-control", field=f"sweep.{key}", message=message,
                              examples=_setting(name, key, value)))
    return out


def _setting(name: str, key: str, value: Any) -> tuple[str, ...]:
    """The YAML lines that set `key` on the subject `name`."""
    if key in ("model", "concurrency"):
        return ("subjects:", f"  - name: {name}", f"    {key}: {_shown(value)}")
    *path, last = key.split(".")
    lines = ["subjects:", f"  - name: {name}", "    runtime:"]
    for i, part in enumerate(path):
        lines.append(f"{'  ' * (i + 3)}{part}:")
    lines.append(f"{'  ' * (len(path) + 3)}{last}: {_shown(value)}")
    return tuple(lines)


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
