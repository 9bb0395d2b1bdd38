"""Grades summary.json against data.csv: exit 0 when the row count, the columns and every
column's mean are right; the fraction right as {"score": x} on the last line."""

import csv
import json
import sys
from pathlib import Path

rows = list(csv.reader(Path("data.csv").read_text(encoding="utf-8").splitlines()))
header, body = rows[0], rows[1:]
try:
    got = json.loads(Path("summary.json").read_text(encoding="utf-8"))
except (OSError, ValueError):
    print(json.dumps({"score": 0.0}))
    sys.exit(1)
right = [got.get("rows") == len(body), got.get("columns") == header]
for i, name in enumerate(header[1:], 1):  # the first column names the row
    values = [float(r[i]) for r in body if r[i].strip()]
    mean = round(sum(values) / len(values), 2) if values else None
    right.append((got.get("means") or {}).get(name) == mean)
score = sum(right) / len(right)
print(json.dumps({"score": round(score, 4)}))
sys.exit(0 if all(right) else 1)
