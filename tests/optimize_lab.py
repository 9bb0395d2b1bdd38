"""A lab for `ix optimize` tests whose skill can credibly be improved.

The skill `table-profile` says only "Describes things.", so the lexical router never picks it
for its must prompts, which share rare words (columns, nulls, dtypes, ...) that a better
description would name; a git skill sits beside it, and the not prompts are about other
things. Deterministic (lexical at temperature 0, one trial per case).
"""

import functools
import itertools
import random
import shutil
import tempfile
from pathlib import Path

WORDS = ("columns", "nulls", "dtypes", "cardinality", "spreadsheet", "outliers")
NOT_PROMPTS = (
    "Rebase my feature branch onto main and fix the conflicts.",
    "Write a haiku about autumn leaves.", "Translate this paragraph into French.",
    "What is the capital of Australia?", "Draft an email declining the meeting.",
    "Explain how a heat pump works.", "Refactor this Python function to use a dataclass.",
    "Suggest names for a bakery.", "Summarise the plot of Hamlet.",
    "Convert 30 miles to kilometres.", "Plan a three day trip to Lisbon.",
    "Review my cover letter.", "Explain recursion to a child.",
    "List prime numbers below fifty.", "Fix the typo in my README.",
)


def _skill(lab: Path, name: str, description: str, body: str) -> None:
    folder = lab / "skills" / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n---\n\n{body}\n", encoding="utf-8")


def make_lab(lab: Path, n: int = 15) -> Path:
    """The lab at `lab`, with `n` must and `n` not cases in experiment `profiling`."""
    _skill(lab, "table-profile", "Describes things.", "# Table profile\n\nProfile a file.")
    _skill(lab, "git-helper", "Git branches, rebases, merges and commit history.",
           "# Git helper")
    experiment = lab / "profiling"
    (experiment / "cases").mkdir(parents=True)
    (experiment / "experiment.yaml").write_text(
        "name: profiling\nruntime: {kind: lexical, temperature: 0}\n"
        "sensor: {kind: activation, skill: table-profile}\ntrials: 1\n"
        "subjects:\n  - name: tp\n    skills: [table-profile, git-helper]\n", encoding="utf-8")
    combos = list(itertools.combinations(WORDS, 3))
    random.Random(1).shuffle(combos)
    for i in range(n):
        a, b, c = combos[i % len(combos)]
        (experiment / "cases" / f"must-{i:03d}.md").write_text(
            f"---\nexpectation: must_trigger\n---\nCheck the {a}, {b} and {c} of "
            f"orders_{i}.xlsx for me.\n", encoding="utf-8")
        (experiment / "cases" / f"not-{i:03d}.md").write_text(
            f"---\nexpectation: should_not_trigger\n---\n{NOT_PROMPTS[i % len(NOT_PROMPTS)]}\n",
            encoding="utf-8")
    return lab


@functools.cache
def example_seed(example: Path) -> int:
    """The first split seed at which the `keywords` proposer beats the original description
    on the train cases of `example`'s skill-activation experiment (the bundled example lab):
    then a session has a candidate to judge on the holdout cases. At some seeds it has none
    (no word is in two of the missed prompts), and which ones depends on the lexical router's
    draws; searched once per test process (~2 s a seed, in process)."""
    from ix.api.optimize import Settings, optimize

    with tempfile.TemporaryDirectory(prefix="ix-example-seed-") as tmp:
        for seed in range(20):
            lab = Path(tmp) / str(seed)
            shutil.copytree(example, lab, ignore=shutil.ignore_patterns("results", "artifacts"))
            state = optimize(lab, "skill-activation", Settings(rounds=1, seed=seed)).state
            if state["best"] != "original":
                return seed
    raise AssertionError("no split seed of 0-19 gives the example lab a candidate")
