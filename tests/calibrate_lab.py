"""A lab for `ix calibrate` tests: an "expensive" subject and `lexical` as its proxy.

The skill `table-profile` names the words its must prompts are made of, so the lexical router
(temperature 0) fires on them and on nothing else. The expensive subject is either `mock`
with a latency (fires on the must cases at `rate`, elsewhere at 1 − `rate`), or a program
run by `agent-cli` (`expensive.py`) that sleeps, fires on those words unless its seed says
otherwise (one trial in ten), and reports a price of $0.01 a trial.
"""

import sys
from pathlib import Path

from optimize_lab import WORDS, write_cases

NOT_PROMPTS = (
    "Rebase my feature branch onto main and fix the conflicts.",
    "Write a haiku about autumn leaves.", "Translate this paragraph into French.",
    "What is the capital of Australia?", "Draft an email declining the meeting.",
    "Explain how a heat pump works.", "Refactor this Python function to use a dataclass.",
    "Suggest names for a bakery.", "Summarise the plot of Hamlet.",
    "Convert 30 miles to kilometres.", "Plan a three day trip to Lisbon.",
    "Review my cover letter.",
)
GOOD = "Profile a table, its columns, nulls, dtypes, cardinality, spreadsheet outliers."
BAD = "Describes things."

EXPENSIVE = '''\
import json, random, sys, time
prompt, seed = sys.stdin.read(), int(sys.argv[1])
time.sleep(0.05)
words = {WORDS!r}
fire = any(w in prompt for w in words) != (random.Random(seed).random() < 0.1)
if fire:
    print(json.dumps({{"type": "tool_call", "id": "t1", "name": "Skill",
                      "input": {{"skill": "table-profile"}}}}))
print(json.dumps({{"type": "usage", "input_tokens": 900, "output_tokens": 40,
                  "cost_usd": 0.01}}))
print(json.dumps({{"type": "end", "text": "done"}}))
'''


def _skill(lab: Path, name: str, description: str) -> None:
    folder = lab / "skills" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: '{description}'\n---\n\n"
                                     f"# {name}\n", encoding="utf-8")


def make_lab(lab: Path, subjects: str, n: int = 12) -> Path:
    """Experiment `profiling` in `lab` with `subjects:` as given (YAML, indented by two),
    `n` must and `n` not cases, the activation sensor on table-profile, 3 trials."""
    _skill(lab, "table-profile", GOOD)
    _skill(lab, "vague-profile", BAD)
    _skill(lab, "git-helper", "Git branches, rebases, merges and commit history.")
    (lab / "expensive.py").write_text(EXPENSIVE.format(WORDS=WORDS), encoding="utf-8")
    experiment = lab / "profiling"
    (experiment / "cases").mkdir(parents=True, exist_ok=True)
    (experiment / "experiment.yaml").write_text(
        "name: profiling\nruntime: {kind: lexical, temperature: 0}\n"
        "sensor: {kind: activation, skill: table-profile}\ntrials: 3\n"
        f"subjects:\n{subjects}", encoding="utf-8")
    write_cases(experiment, n, NOT_PROMPTS)
    return lab


def mock(rate: float, n: int = 12, latency_ms: int = 5) -> str:
    """A mock runtime (flow YAML) that fires on must cases at `rate` and on not cases at
    1 − `rate`."""
    rates = ", ".join([*(f"must-{i:03d}: {rate}" for i in range(n)),
                       *(f"not-{i:03d}: {round(1 - rate, 3)}" for i in range(n))])
    return f"{{kind: mock, latency_ms: {latency_ms}, activation_rates: {{{rates}}}}}"


def agent(lab: Path) -> str:
    """The expensive program as an agent-cli runtime (flow YAML)."""
    return (f"{{kind: agent-cli, argv: [{sys.executable}, {lab / 'expensive.py'}, "
            "'{{ seed }}'], stdin: '{{ prompt }}'}")
