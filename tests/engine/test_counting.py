"""The engine counts trials into its tallies in batches (`ix.engine.run.COUNT_BATCH`): a run
that stops between two batches still has every trial it wrote in its summary."""

import json
import threading

from conftest import mock_experiment
from ix.engine.plan import Overrides, build_plan
from ix.engine.run import COUNT_BATCH, Limits, run_plan
from ix.lab.loader import load_experiment


def test_a_run_stopped_between_batches_counts_every_trial_it_wrote(lab):
    exp = mock_experiment(lab, n_must=20, n_not=20, n_edge=0, trials=5,
                          extra_yaml="concurrency: 1\n")
    plan = build_plan(load_experiment(exp, lab), Overrides())
    stop, seen = threading.Event(), []
    at = COUNT_BATCH + COUNT_BATCH // 2 + 1  # mid-batch

    def on_trial(record):
        seen.append(record)
        if len(seen) == at:
            stop.set()

    result = run_plan(plan, on_trial=on_trial, limits=Limits(stop=stop))
    assert result.status == "cancelled" and at <= result.written < plan.total
    lines = (exp / "results" / "trials.jsonl").read_text().splitlines()
    assert len(lines) == result.written == len(seen)
    counted = {p["probe_id"]: p["n"] + p["errors"] for p in result.summary["probe_results"]}
    on_disk: dict[str, int] = {}
    for line in map(json.loads, lines):
        on_disk[line["probe_id"]] = on_disk.get(line["probe_id"], 0) + 1
    assert {k: v for k, v in counted.items() if v} == on_disk
    assert sum(p["passed"] for p in result.summary["probe_results"]) == sum(
        bool(json.loads(x)["reading"]["passed"]) for x in lines)
