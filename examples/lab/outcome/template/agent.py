"""A scripted stand-in for an agent: profiles data.csv into summary.json.

With the csv-summary skill installed in its workspace it follows the skill's steps (sniff
the header, count rows without it, keep every column) and rarely slips; without it, it often
counts the header as a row or drops the last column. What it spends is drawn from the trial's
seed (argv[1]), and printed as JSON on its last line for ix (`report_usage: true`).
"""

import csv
import json
import random
import sys
import time
from pathlib import Path

skill = Path(".claude/skills/csv-summary/SKILL.md")
careful = skill.is_file()
# the trial's seed, and which agent this is: two agents do not share their luck
rng = random.Random(2 * int(sys.argv[1]) + careful)
rows = list(csv.reader(Path("data.csv").read_text(encoding="utf-8").splitlines()))
header, body = rows[0], rows[1:]
slip = 0.12 if careful else 0.45
count = len(body) + (1 if rng.random() < slip else 0)  # the header counted as a row
columns = header[:-1] if rng.random() < slip / 2 else header  # the last column dropped
means = {}
for i, name in enumerate(columns[1:], 1):  # the first column names the row
    values = [float(r[i]) for r in body if r[i].strip()]
    means[name] = round(sum(values) / len(values), 2) if values else None
Path("summary.json").write_text(json.dumps({"rows": count, "columns": columns,
                                            "means": means}, indent=2), encoding="utf-8")
read = len(Path("data.csv").read_text(encoding="utf-8")) // 4
if careful:
    read += len(skill.read_text(encoding="utf-8")) // 4
tokens_input = int((900 + read) * rng.lognormvariate(0, 0.15))
tokens_output = int((220 if careful else 160) * rng.lognormvariate(0, 0.25))
time.sleep((0.03 if careful else 0.02) * rng.lognormvariate(0, 0.3))
cost = round((3 * tokens_input + 15 * tokens_output) / 1e6, 6)
print(json.dumps({"tokens_input": tokens_input, "tokens_output": tokens_output,
                  "cost_usd": cost}))
