"""Foreign formats: `ix import` (JSONL, CSV, Inspect AI logs) and `ix export` (JSONL, JSON,
Inspect AI logs)."""
