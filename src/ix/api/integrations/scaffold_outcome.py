"""`ix new NAME --template outcome --skill S`: an outcome experiment to fill in (DESIGN.md §10,
docs/outcomes.md): the agent without the skill (control) and with it, each case a task with
its files, a check program that grades what the agent left, a judge's rubric to fill in, and a
goal on the correct rate; `ix report` adds tokens, time, cost and the judge's scores against
the control."""

from typing import Any

from ix.fs.yamlio import dump_yaml

CONTROL = "without-skill"


def treatment(skill: str) -> str:
    return f"with-{skill}"


def outcome_yaml(name: str, skill: str, kind: str | None, goal: str | None) -> str:
    """experiment.yaml, with comments that say what to change."""
    runtime: Any = {"kind": kind or "claude-code"}
    if runtime["kind"] == "claude-code":
        runtime["task"] = True
    offline = runtime["kind"] == "command"
    if offline:  # a stand-in for the agent: the pipeline, tried before an agent is paid for
        runtime["argv"] = ["python3", "-c", STAND_IN, "{{ seed }}"]
    hypothesis = goal.strip() if goal and goal.strip() else (
        f"With {skill} installed, the agent does the task right on at least 10 points more "
        "of its trials.")
    config = {
        "name": name,
        "description": f"Does {skill} help the agent do the job, and at what cost in tokens, "
                       "time and money?",
    }
    lines = ["# Written by `ix new --template outcome`. docs/outcomes.md of ix explains "
             "every key.", "", dump_yaml(config).rstrip(),
             *(["# a stand-in for the agent, offline: it writes answer.txt on 40% of the",
                "# trials without the skill and 90% with it (.claude/skills/ in its",
                "# workspace); replace it with your agent's command"] if offline else
               ["# task: true lifts the activation probe's limits (2 turns, the Skill tool",
                "# only): 30 turns, Read/Write/Edit/Glob/Grep/Bash"]),
             dump_yaml({"runtime": runtime}).rstrip(),
             "# every trial runs in a fresh copy of its case's files (cases/<id>/files/);",
             "# {template: DIR} here would add files every case shares",
             "workspace: {}",
             "trials: 5                # an odd number >= 3: the agent is stochastic",
             "seed: 0",
             dump_yaml({"subjects": [
                 {"name": CONTROL, "description": "control, no skill installed"},
                 {"name": treatment(skill),
                  "description": f"{skill} installed in the workspace (.claude/skills/)",
                  "skills": [skill]}]}).rstrip(),
             "# check.py grades what the agent left in its workspace: exit 0 = done right;",
             "# rubrics/quality.md asks a model to grade the answer and the files it made",
             "# (needs ANTHROPIC_API_KEY; its dimensions join tokens, time and cost)",
             *(["# (offline: add it under sensors once a key is set)",
                "# - {kind: llm_judge, agent: rubrics/quality.md, inputs: [answer, files]}"]
               if offline else []),
             dump_yaml({"sensors": [{"kind": "check",
                                     "command": ["python3", "{{ experiment }}/check.py"]},
                                    *([] if offline else [
                                        {"kind": "llm_judge", "agent": "rubrics/quality.md",
                                         "inputs": ["answer", "files"]}])]}).rstrip(),
             "# After a run ix says supported / refuted / inconclusive; `ix report` adds",
             "# tokens, time, cost and the judge's scores per trial against the control.",
             "# A goal may name one of those instead, e.g. \"the skill adds at most 20%",
             "# output tokens\": {metric: output_tokens, direction: increase, at_most: 0.2,",
             "# relative: true}",
             dump_yaml({"goal": {"hypothesis": hypothesis, "metric": "pass_rate",
                                 "compare": [CONTROL, treatment(skill)],
                                 "direction": "increase", "min_effect": 0.1,
                                 "credibility": 0.95}}).rstrip()]
    return "\n".join(lines) + "\n"


#: `--runtime command`: the agent's stand-in (argv[1] is the trial's seed, common to both
#: subjects): answer.txt on 40% of the trials without the skill, 90% with it.
STAND_IN = ("import os, random, sys; skills = '.claude/skills'; "
            "skilled = os.path.isdir(skills) and bool(os.listdir(skills)); "
            "done = random.Random(int(sys.argv[1])).random() < (0.9 if skilled else 0.4); "
            "done and open('answer.txt', 'w').write('done\\n'); "
            "print('done' if done else 'gave up')")


CHECK = '''"""Grades what the agent left in its workspace. The `check` sensor runs it
there after each trial: exit 0 when the task was done right; a JSON object with a "score" on
the last line of output gives partial credit. IX_CASE_ID names the case (one answer key per
case).

A placeholder: replace the test below with what "done right" means for your tasks.
"""

import json
import os
import sys
from pathlib import Path

case = os.environ.get("IX_CASE_ID", "")
done = Path("answer.txt").is_file() and Path("answer.txt").read_text().strip() != ""
print(json.dumps({"score": 1.0 if done else 0.0}))
sys.exit(0 if done else 1)
'''

TASK = """---
id: task-001
expectation: must_trigger      # the check should pass
rationale: Template. A real task, with the files it needs in cases/task-001/files/.
---
TODO: the task, as a user would ask it. For instance: read input.txt and write the answer to
answer.txt.
"""

INPUT = "TODO: the files the task needs go in this folder; each trial gets a fresh copy.\n"

RUBRIC = """---
name: quality
runtime: anthropic
model: claude-haiku-4-5
dimensions: [correctness, clarity]
scale: [1, 5]
pass_threshold: 0.6        # on the mean score, rescaled to [0, 1]
---
TODO: say what a good result of these tasks is. The judge sees the task, the agent's answer
and the files it made (below).

Task: {{ probe.prompt }}

Answer: {{ observation.content }}

Grade correctness (is the result right?) and clarity (would a user understand it?), each
from 1 to 5. Answer with JSON only: {"scores": {"correctness": 1-5, "clarity": 1-5},
"reasoning": "..."}
"""


def outcome_files(skill: str) -> list[tuple[str, str]]:
    """(path in the experiment, text) of the files besides experiment.yaml and README.md."""
    return [("check.py", CHECK), ("cases/task-001.md", TASK),
            ("cases/task-001/files/input.txt", INPUT), ("rubrics/quality.md", RUBRIC)]


def outcome_readme(name: str, skill: str) -> str:
    return f"""# {name}

Made by `ix new --template outcome`: does `{skill}` help the agent do the job, and at what
cost? docs/outcomes.md of ix explains every part.

## Design

- Each case is a task: `cases/<id>.md` (the request) and `cases/<id>/files/` (the files it
  needs; every trial gets a fresh copy, the originals are never touched). Replace the
  template `task-001`; aim for 10 or more tasks.
- `check.py` grades what the agent left in its workspace: exit 0 when the task was done
  right (a placeholder now: write the real test). It runs in the workspace after each trial;
  `IX_CASE_ID` names the case.
- `rubrics/quality.md` asks a model (`ANTHROPIC_API_KEY`) to grade each answer and the files
  the agent made, by dimension; write what a good result is. Its scores are compared like
  tokens and time (`quality.correctness`, `quality.clarity`).
- Two subjects: `{CONTROL}` (the control) and `{treatment(skill)}` (`{skill}` installed in the
  workspace under `.claude/skills/`).

## Run

    ix validate {name}
    ix run {name} --smoke     # one trial of a few cases: does it work at all?
    ix run {name}             # --max-cost USD caps the spending

## Analysis

    ix report                 # the verdict, then tokens, time, cost and the judge's scores
                              # against the control

The files each trial made are kept under `results/runs/<run>/artifacts/`.
"""


__all__ = ["CONTROL", "outcome_files", "outcome_readme", "outcome_yaml", "treatment"]
