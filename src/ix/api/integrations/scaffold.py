"""`ix new NAME` (and the MCP server's `create_experiment`): a new experiment in the lab.

Writes `<lab>/<NAME>/experiment.yaml`, `cases/` (must / not / edge templates, or the cases
given) and a `README.md` that walks through Goal → Design → Run → Analysis. Every input is
checked before anything is written; the folder is assembled under a hidden temporary name
and renamed into place, so a failure leaves the lab as it was. An existing folder is never
overwritten.
"""

import os
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ix.api.integrations.recipes import (
    RECIPES,
    Setting,
    recipe_cases,
    recipe_readme,
    recipe_yaml,
)
from ix.api.integrations.scaffold_outcome import outcome_files, outcome_readme, outcome_yaml
from ix.api.subjects import list_subjects
from ix.domain.errors import ConfigError, raise_all
from ix.eval.models import DIFFICULTIES, EXPECTATIONS
from ix.eval.suggestions import closest
from ix.fs.resolve import find_lab, is_lab
from ix.fs.storage_faults import storage_error
from ix.fs.yamlio import dump_yaml
from ix.lab.loader import MissingSkill, check_experiment, missing_skill, skill_descriptions
from ix.runtimes import get_kind

#: A name is a folder name: letters, digits, `.`, `_`, `-`; it starts with a letter or digit.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_CASE_KEYS = ("id", "expectation", "prompt", "rationale", "tags", "difficulty")
_PREFIX = {"must_trigger": "must", "should_not_trigger": "not", "acceptable": "edge"}
#: The goal `ix new --goal` writes: the first two subjects, any difference beyond 0.1 in F1.
GOAL_DEFAULTS = {"metric": "f1", "direction": "differ", "min_effect": 0.1,
                 "credibility": 0.95}


#: What `ix new --template` makes (docs/recipes.md): an activation experiment, an outcome
#: experiment, or one of the benchmark recipes (`ix.api.integrations.recipes`).
TEMPLATES = ("activation", "coexistence", "context", "outcome", "sweep", "optimize")


def create_experiment(lab: str | Path | None, name: str, *, skill: str | None = None,
                      subjects: Sequence[str] = (), goal: str | None = None,
                      runtime: str | None = None,
                      cases: Sequence[Mapping[str, Any]] | None = None,
                      allow_missing: bool = False, template: str = "activation") -> Path:
    """Create the experiment `name` in `lab` (a path or a name as `--lab` takes it; None: the
    lab around the working directory, else the working directory itself) and return its
    folder.

    `skill` is the skill under test (the activation sensor's target); `subjects` the subjects
    to compare, control first (names of the subject registry become profiles); `goal` a
    hypothesis (with two or more subjects it becomes a `goal:` comparing the first two, else
    the description); `runtime` a runtime kind; `cases` optional `{id, expectation, prompt}`
    mappings (also `rationale`, `tags`, `difficulty`) instead of the templates.
    `ConfigError` on bad input, with nothing written: a `skill` that is not in the lab's
    skills/ too, unless `allow_missing` (you will add it; `ix validate` says it is missing
    until then). `template`: `activation` (does the skill fire?), `outcome` (does it help
    the agent do the job, and at what cost? `ix.api.integrations.scaffold_outcome`) or a
    benchmark recipe (`coexistence`, `context`, `sweep`, `optimize`:
    `ix.api.integrations.recipes`); all but `activation` need `skill` and name their own
    subjects.
    """
    if template not in TEMPLATES:
        raise ConfigError(f"unknown template {template!r}; allowed: {', '.join(TEMPLATES)}",
                          field="--template")
    lab_path = _lab(lab)
    _check_name(name)
    target = lab_path / name
    if target.exists() or target.is_symlink():
        raise ConfigError(f"{target} already exists; ix new never overwrites (choose another "
                          "name, or remove the folder)", field="NAME")
    subject_names = _subjects(subjects)
    if skill is not None:
        _check_name(skill, field="--skill", what="skill name")
        if not allow_missing and not _skill_exists(lab_path, skill):
            missing = missing_skill(skill, lab_path, "", "--skill")
            raise ConfigError(f"{missing.message}; pass --allow-missing to create the "
                              "experiment anyway and add the skill later", field="--skill")
    kind = _runtime(runtime)
    if template != "activation":
        if skill is None:
            raise ConfigError(f"the {template} template is about one skill under test: give "
                              "--skill", field="--skill")
        if subject_names or cases is not None:
            raise ConfigError(f"the {template} template names its subjects and writes "
                              "template cases; edit them once it is made", field="--subjects"
                              if subject_names else "cases")
    if template in RECIPES:
        assert skill is not None
        recipe = RECIPES[template]
        described = skill_descriptions(lab_path)
        siblings = [n for n, _ in closest(skill, described.get(skill, ""),
                                          [(n, d) for n, d in described.items() if n != skill])]
        if recipe.needs_sibling and not siblings:
            raise ConfigError(f"the {template} template puts {skill} beside the lab's other "
                              "skills, and its skills/ holds none: add one (skills/<name>/"
                              "SKILL.md), or choose --template activation", field="--template")
        setting = Setting(name=name, skill=skill, siblings=siblings, runtime=kind,
                          hypothesis=goal)
        text = recipe_yaml(recipe, setting)
        readme = recipe_readme(recipe, setting)
        written = [(f"cases/{f}", body) for f, body in recipe_cases(recipe, skill, _case_file)]
    elif template == "outcome":
        assert skill is not None
        text = outcome_yaml(name, skill, kind, goal)
        readme = outcome_readme(name, skill)
        written = outcome_files(skill)
    else:
        written = [(f"cases/{file_name}", body) for file_name, body in (
            _cases(cases, skill) if cases is not None else _templates(skill))]
        config = _config(name, skill, subject_names, goal, kind, lab_path)
        text = _yaml_text(config, skill, lab_path, subject_names, goal)
        readme = _readme(name, skill, subject_names, goal)
    tmp = lab_path / f".{name}.ix-new-{os.getpid()}"
    try:
        (tmp / "cases").mkdir(parents=True)
        (tmp / "experiment.yaml").write_text(text, encoding="utf-8")
        (tmp / "README.md").write_text(readme, encoding="utf-8")
        for file_name, body in written:
            (tmp / file_name).parent.mkdir(parents=True, exist_ok=True)
            (tmp / file_name).write_text(body, encoding="utf-8")
        os.rename(tmp, target)  # atomic; refuses a target that appeared meanwhile
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise storage_error(exc, "the experiment was not created", file=target) or ConfigError(
            f"cannot create the experiment: {exc.strerror or exc}", file=target,
            field="NAME") from None
    try:
        _check_loads(target, lab_path, allow_missing)
    except ConfigError:
        shutil.rmtree(target, ignore_errors=True)
        raise
    return target


# --------------------------------------------------------------------------- inputs

def _lab(lab: str | Path | None) -> Path:
    if lab is not None:
        return find_lab(lab)
    cwd = Path.cwd().resolve()
    for path in (cwd, *cwd.parents):
        if is_lab(path):
            return path
    return cwd  # the first experiment makes the working directory a lab


def _check_name(name: str, field: str = "NAME", what: str = "experiment name") -> None:
    if not isinstance(name, str) or not NAME.fullmatch(name) or ".." in name:
        raise ConfigError(f"invalid {what} {name!r}: use letters, digits, '.', '_' and '-' "
                          "(starting with a letter or digit, at most 100), no path "
                          "separators or '..'", field=field)


def _subjects(names: Sequence[str]) -> list[str]:
    out: list[str] = []
    for raw in names:
        for part in str(raw).split(","):
            part = part.strip()
            if not part:
                continue
            _check_name(part, field="--subjects", what="subject name")
            if part in out:
                raise ConfigError(f"subject {part!r} is given twice", field="--subjects")
            out.append(part)
    return out


def _runtime(kind: str | None) -> str | None:
    if kind is None or not kind.strip():
        return None

    try:
        get_kind(kind.strip())
    except ConfigError as exc:
        raise ConfigError(exc.message, field="--runtime") from None
    return kind.strip()


def _registry_names() -> set[str]:
    return {s.name for s in list_subjects()}


# --------------------------------------------------------------------------- experiment.yaml

def _config(name: str, skill: str | None, subjects: list[str], goal: str | None,
            kind: str | None, lab: Path) -> dict[str, Any]:
    has_goal = bool(goal and goal.strip()) and len(subjects) >= 2
    description = (goal.strip() if goal and goal.strip() and not has_goal
                   else f"What does {skill or name} do when it should, and when it should not?")
    config: dict[str, Any] = {"name": name, "description": description}
    if kind is not None:
        config["runtime"] = kind
    if skill is not None:
        if subjects:
            config["sensor"] = {"kind": "activation", "skill": skill}
        else:
            config["skill"] = skill
    config["trials"] = 5
    config["seed"] = 0
    if subjects:
        known = _registry_names()
        given = [skill] if skill is not None and _skill_exists(lab, skill) else []
        items: list[Any] = []
        for i, s in enumerate(subjects):
            entry: dict[str, Any] = {"name": s}
            if s in known:
                entry["profile"] = s
            entry["description"] = "control" if i == 0 else f"variant {i}"
            if given:
                entry["skills"] = list(given)
            items.append(entry)
        config["subjects"] = items
    if has_goal:
        config["goal"] = {"hypothesis": goal.strip() if goal else "",
                          "metric": GOAL_DEFAULTS["metric"], "compare": subjects[:2],
                          **{k: v for k, v in GOAL_DEFAULTS.items() if k != "metric"}}
    return config


def _skill_exists(lab: Path, skill: str) -> bool:
    return (lab / "skills" / skill / "SKILL.md").is_file()


def _yaml_text(config: dict[str, Any], skill: str | None, lab: Path, subjects: list[str],
               goal: str | None) -> str:
    """experiment.yaml with comments that say what to change (docs/experiments.md)."""
    lines = ["# Written by `ix new`. Keys and rules: docs/experiments.md of ix.", ""]
    lines.append(dump_yaml({k: config[k] for k in ("name", "description")}).rstrip())
    if "runtime" not in config:
        lines.append("# runtime: lexical      # offline baseline; claude-code for the real "
                     "thing (default: the lab's ix.yaml, else claude-code)")
    for key in ("runtime", "skill", "sensor"):
        if key in config:
            lines.append(dump_yaml({key: config[key]}).rstrip())
    lines.append("trials: 5                # an odd number >= 3 on a stochastic runtime; or "
                 "`auto`")
    lines.append("seed: 0")
    if "subjects" in config:
        lines.append("# The first subject is the control; give each variant the skills that "
                     "make it differ.")
        lines.append(dump_yaml({"subjects": config["subjects"]}).rstrip())
    if "goal" in config:
        lines.append("# After a run ix says supported / refuted / inconclusive (min_effect is "
                     "the region of practical equivalence).")
        lines.append(dump_yaml({"goal": config["goal"]}).rstrip())
    elif goal and goal.strip():
        lines.append("# A goal compares two subjects (control, treatment): list a second "
                     "subject, then")
        lines.append("# goal: {hypothesis: ..., metric: f1, compare: [control, treatment], "
                     "direction: differ, min_effect: 0.1}")
    if skill is not None and not _skill_exists(lab, skill):
        lines.append(f"# Put the skill under test at skills/{skill}/SKILL.md in the lab, or "
                     "list it by path under a subject's `skills`.")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- cases

def _case_file(case_id: str, expectation: str, prompt: str, rationale: str = "",
               tags: Sequence[str] = (), difficulty: str | None = None) -> tuple[str, str]:
    meta: dict[str, Any] = {"id": case_id, "expectation": expectation}
    if rationale:
        meta["rationale"] = rationale
    if tags:
        meta["tags"] = list(tags)
    if difficulty:
        meta["difficulty"] = difficulty
    return f"{case_id}.md", f"---\n{dump_yaml(meta)}---\n{prompt.strip()}\n"


def _templates(skill: str | None) -> list[tuple[str, str]]:
    what = f"the {skill} skill" if skill else "the subject"
    return [
        _case_file("must-001", "must_trigger",
                   f"TODO: a request that clearly needs {what}, written as a user would.",
                   rationale=f"Template: a direct request {what} exists for. Replace it; aim "
                             "for 10 or more must-NNN cases."),
        _case_file("not-001", "should_not_trigger",
                   "TODO: a near miss: a request on a neighbouring topic that does not need "
                   f"{what}.",
                   rationale="Template: a near miss it must not trigger on. Replace it; aim "
                             "for as many not-NNN cases as must-NNN ones."),
        _case_file("edge-001", "acceptable",
                   f"TODO: an ambiguous request where calling {what} or not are both fine.",
                   rationale="Template: documents an ambiguous prompt; acceptable cases are "
                             "never run and never count."),
    ]


def _cases(cases: Sequence[Mapping[str, Any]], skill: str | None) -> list[tuple[str, str]]:
    if isinstance(cases, str | bytes) or not isinstance(cases, Sequence):
        raise ConfigError("must be a list of {id, expectation, prompt}", field="cases")
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    numbers = dict.fromkeys(_PREFIX.values(), 0)
    for i, case in enumerate(cases):
        where = f"cases[{i}]"
        if not isinstance(case, Mapping):
            raise ConfigError("must be a mapping {id, expectation, prompt}", field=where)
        unknown = sorted(set(case) - set(_CASE_KEYS))
        if unknown:
            raise ConfigError(f"unknown key {unknown[0]!r}; allowed keys: "
                              f"{', '.join(_CASE_KEYS)}", field=f"{where}.{unknown[0]}")
        expectation = case.get("expectation")
        if expectation not in EXPECTATIONS:
            raise ConfigError(f"must be one of {', '.join(EXPECTATIONS)}, got {expectation!r}",
                              field=f"{where}.expectation")
        prompt = case.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise ConfigError("the prompt must be a non-empty string", field=f"{where}.prompt")
        prefix = _PREFIX[str(expectation)]
        numbers[prefix] += 1
        case_id = case.get("id")
        if case_id is None:
            case_id = f"{prefix}-{numbers[prefix]:03d}"
            while case_id in seen:
                numbers[prefix] += 1
                case_id = f"{prefix}-{numbers[prefix]:03d}"
        if not isinstance(case_id, str):
            raise ConfigError("must be a string", field=f"{where}.id")
        _check_name(case_id, field=f"{where}.id", what="case id")
        if case_id in seen:
            raise ConfigError(f"duplicate case id {case_id!r}", field=f"{where}.id")
        seen.add(case_id)
        tags = case.get("tags") or []
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise ConfigError("must be a list of strings", field=f"{where}.tags")
        difficulty = case.get("difficulty")
        if difficulty is not None and difficulty not in DIFFICULTIES:
            raise ConfigError(f"must be one of {', '.join(DIFFICULTIES)}",
                              field=f"{where}.difficulty")
        rationale = case.get("rationale") or ""
        if not isinstance(rationale, str):
            raise ConfigError("must be a string", field=f"{where}.rationale")
        out.append(_case_file(case_id, str(expectation), prompt, rationale, tags, difficulty))
    if not any(("expectation: must_trigger" in body or "expectation: should_not_trigger"
                in body) for _, body in out):
        raise ConfigError("needs at least one must_trigger or should_not_trigger case "
                          "(acceptable cases never run)", field="cases")
    return out


# --------------------------------------------------------------------------- README

def _readme(name: str, skill: str | None, subjects: list[str], goal: str | None) -> str:
    what = f"`{skill}`" if skill else "the subject"
    hypothesis = goal.strip() if goal and goal.strip() else "(state one: what do you expect, " \
                                                            "and what would change your mind?)"
    compare = (f"`{subjects[0]}` (control) against `{', '.join(subjects[1:])}`"
               if len(subjects) >= 2 else "one subject; add a second to compare")
    return f"""# {name}

Made by `ix new`. Work through the four phases, editing this README as you go.

## Goal

Hypothesis: {hypothesis}

A goal (`goal:` in experiment.yaml) compares two subjects, control first, on one metric
(`f1`, `recall`, `precision`, `activation_rate`, `pass_rate`) with a direction and a
`min_effect` (smaller effects count as none). Subjects: {compare}.

## Design

- Cases are `cases/*.md`: frontmatter (`id`, `expectation`, `rationale`) and the prompt.
  Replace the templates: prompts that must trigger {what} (`must-NNN.md`), near misses that
  must not (`not-NNN.md`), and ambiguous ones (`edge-NNN.md`, `acceptable`: never run).
  Aim for 10 or more of each of the first two, in similar numbers.
- `ix validate {name}` checks the design: too few cases for the intervals you need, no
  control for a goal, one trial on a stochastic runtime, unbalanced or duplicate cases,
  cases no subject can see. `--strict` makes these warnings errors.
- `ix plan --width 0.2` (or `--mde 0.1 --paired`) says how many cases you need.

## Run

    ix run {name} --smoke     # one trial of a few cases: does it work at all?
    ix run {name}             # the full run; --max-cost USD caps the spending

## Analysis

    ix report                          # every estimate with its 95% interval
    ix compare RUN_A RUN_B             # before / after a change to the skill

Read the intervals, not only the point estimates. `inconclusive` means the data cannot
tell yet: the verdict says how many cases would settle it. Claim no more than the interval
allows.
"""


def _check_loads(path: Path, lab: Path, allow_missing: bool) -> None:
    """The new experiment loads as `ix validate` loads it (planning also needs the runtime's
    tools, e.g. the Claude Code CLI, which are the user's to install); with `allow_missing`
    the skill under test may be missing."""
    _, problems = check_experiment(path, lab)
    raise_all([p for p in problems if not (allow_missing and isinstance(p, MissingSkill))])
