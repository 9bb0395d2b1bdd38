"""The benchmark recipes of `ix new --template` (docs/recipes.md), as data.

`activation` (the default, with its own flags: `ix.api.integrations.scaffold`) and `outcome`
(a task experiment with files: `scaffold_outcome`) are made by their own code; the recipes
below are activation experiments that differ in what they compare, so each is one `Recipe`:
the question it asks, the blocks of experiment.yaml it adds (each under a comment that says
what to change), its cases and how to read its verdict. One writer makes them all
(`recipe_yaml`, `recipe_readme`, `recipe_cases`); every value goes through `dump_yaml`, so a
skill named `yes` or `1.0` stays a name.
"""

import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ix.fs.yamlio import dump_yaml

__all__ = ["RECIPES", "Recipe", "Setting", "recipe_cases", "recipe_readme", "recipe_yaml"]

#: A sweep's keys by runtime kind: a grid that kind understands. The control sets the key
#: to the first value (or leaves a default outside the grid), so it is never a cell run
#: twice (`ix validate`'s `unswept-control`).
SWEEP_GRID: Mapping[str, tuple[str, list[Any], Any]] = {
    "lexical": ("temperature", [0.0, 1.0], None),       # its default 0.5 is the control
    "mock": ("default_rate", [0.3, 0.9], 0.6),
    "claude-code": ("model", ["claude-sonnet-4-5", "claude-haiku-4-5"], "claude-sonnet-4-5"),
    "anthropic": ("model", ["claude-sonnet-4-5", "claude-haiku-4-5"], "claude-sonnet-4-5"),
    "openai": ("model", ["gpt-4.1", "gpt-4.1-mini"], "gpt-4.1"),
}
#: At most this many of the lab's other skills join a recipe's subjects.
NEIGHBOURS = 3


@dataclass(frozen=True)
class Setting:
    """What a recipe is made from: the experiment's name, the skill under test, the lab's
    other skills (sorted), the runtime kind given (None: the lab's default) and `--goal`."""

    name: str
    skill: str
    siblings: Sequence[str]
    runtime: str | None
    hypothesis: str | None


@dataclass(frozen=True)
class Recipe:
    """One benchmark recipe: `asks` (the question, one sentence), `blocks` (experiment.yaml
    after `name`, `description`, `runtime`: (comment, {key: value}) pairs), the cases
    (`must` and `not` templates to replace), `design` and `reads` (README and docs: what the
    cases are, how to read the verdict), `run` (the commands after `ix validate`)."""

    name: str
    asks: str
    description: Callable[[Setting], str]
    blocks: Callable[[Setting], list[tuple[str, dict[str, Any]]]]
    design: Callable[[Setting], list[str]]
    reads: str
    run: Callable[[str], list[str]] = lambda n: [f"ix run {n} --smoke", f"ix run {n}"]
    must: int = 1
    nots: int = 1
    needs_sibling: bool = False


def _hypothesis(s: Setting, default: str) -> str:
    return s.hypothesis.strip() if s.hypothesis and s.hypothesis.strip() else default


def _goal(s: Setting, compare: list[str], metric: str, direction: str, default: str
          ) -> dict[str, Any]:
    return {"goal": {"hypothesis": _hypothesis(s, default), "metric": metric,
                     "compare": compare, "direction": direction, "min_effect": 0.1,
                     "credibility": 0.95}}


def _sensor(s: Setting) -> dict[str, Any]:
    return {"sensor": {"kind": "activation", "skill": s.skill}}


def _basics() -> dict[str, Any]:
    return {"trials": 5, "seed": 0}


def _neighbours(s: Setting) -> list[str]:
    return list(s.siblings[:NEIGHBOURS])


# --------------------------------------------------------------------------- coexistence

def _coexistence(s: Setting) -> list[tuple[str, dict[str, Any]]]:
    control = f"{s.skill}-only"
    subjects: list[dict[str, Any]] = [
        {"name": control, "description": "control: the skill alone", "skills": [s.skill]}]
    subjects += [{"name": f"{s.skill}-plus-{b}", "description": f"{b} installed beside it",
                  "skills": [s.skill, b]} for b in _neighbours(s)]
    neighbour = _neighbours(s)[0]
    first = f"{s.skill}-plus-{neighbour}"
    return [("# the activation sensor looks for the skill under test in every subject",
             _sensor(s)),
            ("# an odd number >= 3 on a stochastic runtime", _basics()),
            ("# control + N: the skill alone first, then beside each neighbour in turn",
             {"subjects": subjects}),
            ("# supported / refuted / inconclusive after a run; min_effect: smaller counts as "
             "none", _goal(s, [control, first], "f1", "decrease",
                           f"Installing {neighbour} beside {s.skill} lowers {s.skill}'s F1"))]


COEXISTENCE = Recipe(
    name="coexistence",
    asks="Does installing another skill beside the skill under test take its prompts?",
    description=lambda s: f"Does {s.skill} keep its prompts when other skills are installed "
                          "beside it?",
    blocks=_coexistence,
    design=lambda s: [
        f"`{s.skill}-only` is the control; each `{s.skill}-plus-<skill>` adds one of the lab's "
        "other skills (up to three): control + N, every variant compared with the control "
        "on the same cases and seeds.",
        f"Must cases are requests for `{s.skill}`; the sharpest not cases are requests a "
        "neighbour serves (a neighbour that takes a must case lowers recall; one that "
        "leaves a not case alone can raise precision).",
    ],
    reads="The goal compares the control with the first neighbour on F1 (decrease beyond "
          "0.1). `supported`: the neighbour credibly costs the skill F1; `refuted`: any "
          "change is within 0.1; `inconclusive`: the intervals are too wide yet, and the "
          "verdict says how many cases would settle it. The comparisons table has every "
          "variant against the control, with the cases that flipped.",
    needs_sibling=True,
)


# --------------------------------------------------------------------------- context

LENGTHS = [0, 8, 32, 128]


def _context(s: Setting) -> list[tuple[str, dict[str, Any]]]:
    return [("# the activation sensor looks for the skill under test", _sensor(s)),
            ("", _basics()),
            ("", {"subjects": [{"name": s.skill, "skills": [s.skill, *_neighbours(s)]}]}),
            ("# every case runs after 0, 8, 32 and 128 turns of a coding session (a file of\n"
             "# turns in the `history` format instead of builtin:...; unit: turns, tool_calls\n"
             "# or tokens)",
             {"context": {"prefix": "builtin:coding-session", "lengths": LENGTHS,
                          "unit": "turns"}}),
            ("# the shortest length against the longest: a goal may name any two conditions",
             _goal(s, [f"{s.skill}[ctx=0]", f"{s.skill}[ctx={LENGTHS[-1]}]"], "recall",
                   "decrease", f"After {LENGTHS[-1]} turns {s.skill} fires on fewer of the "
                               "requests it should take"))]


CONTEXT = Recipe(
    name="context",
    asks="Does the skill still fire after a long conversation?",
    description=lambda s: f"Does {s.skill} still fire when the request comes after a long "
                          "session?",
    blocks=_context,
    design=lambda s: [
        "Each case runs at every length of the shared prefix (`context:`): the same prompt "
        f"after 0, 8, 32 and 128 turns, as `{s.skill}[ctx=N]`.",
        "A case may carry its own turns before the prompt (`history:` in its frontmatter).",
    ],
    reads="The context table gives recall, precision and F1 per length with intervals, "
          "each length against the shortest, and the trend: the mean per-case slope of the "
          "activation rate against log2(1 + length), with P(declines) — the one test of a "
          "decline. The goal compares the shortest and the longest length on recall.",
)


# --------------------------------------------------------------------------- sweep

def _sweep(s: Setting) -> list[tuple[str, dict[str, Any]]]:
    base: dict[str, Any] = {"name": "base", "skills": [s.skill, *_neighbours(s)]}
    grid: dict[str, Any] = {}
    key, values, own = SWEEP_GRID.get(s.runtime or "", (None, [], None))
    if key is not None:
        grid[key] = values
        if own is not None:
            if key == "model":
                base["model"] = own
            else:
                base["runtime"] = {"kind": s.runtime, key: own}
    if len(base["skills"]) > 1:
        grid["ablate"] = "skills"
    if not grid:  # no neighbour and a runtime without a known grid: the skill left out
        grid["ablate"] = "skills"
    return [("# the activation sensor looks for the skill under test", _sensor(s)),
            ("", _basics()),
            ("# the first subject is the control; the sweep makes its conditions",
             {"subjects": [base]}),
            ("# each combination is a subject, `base[key=value,...]`; `ablate: skills` also\n"
             "# leaves each skill out in turn (`base[-name]`). Any subject key or runtime\n"
             "# option: model, temperature, a.b for a key inside a mapping option",
             {"sweep": grid, "max_subjects": 50})]


SWEEP = Recipe(
    name="sweep",
    asks="Which setting or neighbouring skill changes the skill's activation most?",
    description=lambda s: f"Which model, setting or neighbouring skill changes how {s.skill} "
                          "fires?",
    blocks=_sweep,
    design=lambda s: [
        "`sweep:` expands the first subject into a grid; the subject as written is the "
        "control and runs once, every cell is compared with it on the same cases and seeds "
        "(Holm-adjusted).",
        "The grid's keys depend on the runtime (`model` for the API runtimes, `temperature` "
        "for lexical); `ix run --dry-run` prints it and its size.",
    ],
    reads="No goal: the sweep table ranks every condition on the report's metric with its "
          "interval and P(best), and names the best in words; each cell's comparison with "
          "the control says whether it differs credibly. A leave-one-out cell "
          "(`base[-name]`) that beats the control says that neighbour was taking prompts.",
)


# --------------------------------------------------------------------------- optimize

def _optimize(s: Setting) -> list[tuple[str, dict[str, Any]]]:
    return [("# the activation sensor looks for the skill whose description is improved",
             _sensor(s)),
            ("", _basics()),
            ("# the skill beside its neighbours: a description is judged among them",
             {"subjects": [{"name": s.skill, "skills": [s.skill, *_neighbours(s)]}]})]


OPTIMIZE = Recipe(
    name="optimize",
    asks="Does a new description make the skill fire when, and only when, it should, on "
         "cases no proposer saw?",
    description=lambda s: f"Can {s.skill}'s description be improved, judged on held-out "
                          "cases?",
    blocks=_optimize,
    design=lambda s: [
        "`ix optimize` splits the cases once into train and holdout (stratified, seeded): "
        "proposers see only the train cases; the verdict is judged on the holdout. Write "
        "20 or more of each kind, so that the holdout can tell.",
        f"`{s.skill}`'s SKILL.md is never changed without `--apply`: candidates run in "
        "copies.",
    ],
    reads="`ix optimize` recommends a candidate only if, on the holdout, P(F1 better) is at "
          "least the credibility, the exact paired test agrees, the interval allows no loss "
          "beyond the tolerance, and at least 3 held-out cases improved; else it says "
          "\"no credible improvement\" and which condition was missed (docs/optimize.md).",
    run=lambda n: [f"ix run {n} --smoke", f"ix optimize {n} --rounds 3",
                   f"ix optimize {n} --apply"],
    must=4, nots=4,
)


#: The recipes by name, in the order `ix new --help` lists them (with activation and
#: outcome, which have code of their own).
RECIPES: Mapping[str, Recipe] = {r.name: r for r in (COEXISTENCE, CONTEXT, SWEEP, OPTIMIZE)}


# --------------------------------------------------------------------------- the writer

def recipe_yaml(recipe: Recipe, s: Setting) -> str:
    """experiment.yaml: the recipe's blocks, each under its comment."""
    lines = [f"# Written by `ix new --template {recipe.name}` (docs/recipes.md of ix):",
             *textwrap.wrap(recipe.asks, width=88, initial_indent="# ",
                            subsequent_indent="# "), "",
             dump_yaml({"name": s.name, "description": recipe.description(s)}).rstrip()]
    if s.runtime is None:
        lines.append("# runtime: lexical      # offline baseline; claude-code for the real "
                     "thing (default: the lab's ix.yaml, else claude-code)")
    else:
        lines.append(dump_yaml({"runtime": s.runtime}).rstrip())
    for comment, block in recipe.blocks(s):
        if comment:
            lines.append(comment)
        lines.append(dump_yaml(block).rstrip())
    return "\n".join(lines) + "\n"


def recipe_cases(recipe: Recipe, skill: str,
                 case_file: Callable[..., tuple[str, str]]) -> list[tuple[str, str]]:
    """The must / not / edge templates, numbered (`case_file` writes one)."""
    what = f"the {skill} skill"
    out = [case_file(f"must-{i:03d}", "must_trigger",
                     f"TODO ({i}): a request that clearly needs {what}, written as a user "
                     "would.", rationale="Template: replace it.")
           for i in range(1, recipe.must + 1)]
    out += [case_file(f"not-{i:03d}", "should_not_trigger",
                      f"TODO ({i}): a near miss: a request a neighbouring skill serves, "
                      f"not {what}.", rationale="Template: replace it.")
            for i in range(1, recipe.nots + 1)]
    out.append(case_file("edge-001", "acceptable",
                         f"TODO: an ambiguous request where calling {what} or not are both "
                         "fine.", rationale="Template: acceptable cases never run."))
    return out


def recipe_readme(recipe: Recipe, s: Setting) -> str:
    design = "\n".join(f"- {line}" for line in recipe.design(s))
    run = "\n".join(f"    {line}" for line in [f"ix validate {s.name}", *recipe.run(s.name)])
    return f"""# {s.name}

Made by `ix new --template {recipe.name}`: {recipe.asks} docs/recipes.md of ix explains the
recipe.

## Design

{design}
- Cases are `cases/*.md`: requests that must trigger `{s.skill}` (`must-NNN.md`), near
  misses that must not (`not-NNN.md`) and ambiguous ones (`edge-NNN.md`, never run). Replace
  the templates; aim for 10 or more of each of the first two. `ix validate {s.name}` checks
  the design and suggests controls.

## Run

{run}

## Reading the verdict

{recipe.reads}
"""
