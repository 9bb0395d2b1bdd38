"""A lab for `ix optimize` tests whose skill can credibly be improved.

The skill `table-profile` says only "Describes things.", so the lexical router never picks it
for its must prompts, which share rare words (columns, nulls, dtypes, ...) that a better
description would name; a git skill sits beside it, and the not prompts are about other
things. Deterministic (lexical at temperature 0, one trial per case).
"""

import functools
import itertools
import json
import random
import re
import shutil
import tempfile
from pathlib import Path

import yaml
from fake_llm_servers import Reply, Request, skill_call, text_reply

from ix.runtimes.lexical import idf, skill_score, stem, words

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
    write_cases(experiment, n)
    return lab


def write_cases(experiment: Path, n: int, not_prompts: tuple[str, ...] = NOT_PROMPTS) -> None:
    """`n` must cases asking to profile a spreadsheet (three of `WORDS` each, in a seeded
    order) and `n` should-not cases from `not_prompts`, in the experiment's cases/."""
    combos = list(itertools.combinations(WORDS, 3))
    random.Random(1).shuffle(combos)
    for i in range(n):
        a, b, c = combos[i % len(combos)]
        (experiment / "cases" / f"must-{i:03d}.md").write_text(
            f"---\nexpectation: must_trigger\n---\nCheck the {a}, {b} and {c} of "
            f"orders_{i}.xlsx for me.\n", encoding="utf-8")
        (experiment / "cases" / f"not-{i:03d}.md").write_text(
            f"---\nexpectation: should_not_trigger\n---\n{not_prompts[i % len(not_prompts)]}\n",
            encoding="utf-8")


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


#: The "expensive" subject's model and price: $3 / $15 per million input / output tokens,
#: so each call (1,200 input and 40 output tokens) costs $0.0042.
EXPENSIVE_MODEL = "claude-expensive"
EXPENSIVE_PRICES = {EXPENSIVE_MODEL: {"input_per_mtok": 3.0, "output_per_mtok": 15.0}}


def is_subject_call(request: Request) -> bool:
    """A trial of the subject (its request offers the Skill tool), not a proposer's question."""
    return bool(isinstance(request.body, dict) and request.body.get("tools"))


def lexical_route(request: Request) -> Reply:
    """A loopback Messages API that routes as the `lexical` runtime does at temperature 0
    (BM25 of each listed skill's name and description against the prompt, a skill called
    only above the threshold 2.0, ties to none then by name): a real subject to optimize
    for, whose calls are counted at the wire (`FakeLLMServer.api_requests()`). Asked as a
    proposer (`--proposer anthropic`: no skills offered), it answers as `proposals` does."""
    texts = request.first_user_texts()
    if not is_subject_call(request):
        return proposals(request.prompt_text())
    listing = next(t for t in texts if t.startswith("<system-reminder>"))
    prompt = "\n".join(t for t in texts if t is not listing)
    skills = [line[2:].split(": ", 1) for line in listing.splitlines()
              if line.startswith("- ") and ": " in line]
    scores = {name: skill_score(name, description, prompt) for name, description in skills}
    best = max(sorted(scores), key=lambda n: scores[n], default=None)
    return skill_call(best) if best is not None and scores[best] > 2.0 else text_reply()


def listed_description(request: Request, skill: str) -> str:
    """The description of `skill` in a request's skill listing."""
    listing = next(t for t in request.first_user_texts() if t.startswith("<system-reminder>"))
    return next(line.split(": ", 1)[1] for line in listing.splitlines()
                if line.startswith(f"- {skill}: "))


def make_expensive(experiment: Path, base_url: str) -> Path:
    """`experiment` (its experiment.yaml rewritten) on the loopback Messages API at
    `base_url`, priced as `EXPENSIVE_PRICES` says: the real subject screening saves calls of."""
    config_file = experiment / "experiment.yaml"
    config = yaml.safe_load(config_file.read_text(encoding="utf-8"))
    config["runtime"] = {"kind": "anthropic", "base_url": base_url, "api_key_env": None,
                         "model": EXPENSIVE_MODEL, "prices": EXPENSIVE_PRICES, "retries": 0}
    config_file.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return experiment


_MISSED = re.compile(r'^- \[should trigger; [^]]*\] (".*")$', re.MULTILINE)
_CURRENT = re.compile(r'^Current description: (".*")$', re.MULTILINE)


def proposals(request_text: str) -> Reply:
    """Three candidates a round, as an LLM proposer would send them: the current description
    with "Also for ..." and the 2, 4 and 8 rarest words of the missed must prompts (by the
    lexical runtime's word weights; words of four letters or more, not in the description
    yet). Deterministic, offline."""
    current = json.loads(_CURRENT.search(request_text).group(1))
    have = set(words(current))
    missed = [json.loads(m) for m in _MISSED.findall(request_text)]
    found = {w for prompt in missed for w in re.findall(r"[a-z]+", prompt.lower())
             if len(w) >= 4 and w not in have and words(w)}
    ranked = sorted(found, key=lambda w: (-idf(stem(w)), w))
    out = [f"{current} Also for {', '.join(ranked[:n])}." for n in (2, 4, 8)
           if len(ranked) >= n or (n == 2 and ranked)]
    return text_reply(json.dumps({"descriptions": list(dict.fromkeys(out))}))
