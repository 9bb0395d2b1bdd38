"""The resume reader's fast path reads the same fields as a full JSON decode, or defers."""

import json

from conftest import run_ix, write
from ix.engine.resume import _fast_fields, _json_fields, read_state


def test_the_fast_path_agrees_with_json_on_real_lines(lab):
    d = lab / "r"
    write(d / "experiment.yaml", "\n".join([
        "name: r",
        "trials: 4",
        "sensors: [{kind: activation, skill: x}, {kind: latency, max_ms: 1000}]",
        "subjects:",
        "  - name: ünïcode subject",
        "    runtime: {kind: mock, default_rate: 0.5, error_rates: {must-1: 0.5}}",
        "  - name: plain",
        "    runtime: {kind: mock, default_rate: 0.5}",
    ]) + "\n")
    for i in range(3):
        write(d / "cases" / f"must-{i}.md", f"---\nexpectation: must_trigger\n---\nSay \"{i}\"\n")
    r = run_ix("run", "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    run_id = json.loads(r.stdout)["run_id"]
    lines = (d / "results" / "trials.jsonl").read_bytes().splitlines(keepends=True)
    fast_hits = 0
    for raw in lines:
        slow = _json_fields(raw, run_id)
        fast = _fast_fields(raw, run_id)
        if fast is not None:
            fast_hits += 1
            assert fast == slow
        assert _fast_fields(raw, "another-run") in ((), None)
    assert fast_hits == len(lines)  # ix's own lines all take the fast path
    assert any(f[4] == 3 for f in map(lambda x: _json_fields(x, run_id), lines))  # errored


def test_lines_the_fast_path_cannot_read_fall_back_to_json(tmp_path):
    record = {"run_id": "R", "experiment": "e", "subject": 'with "quotes"', "probe_id": "p",
              "trial": 2, "seed": 1, "attempt": 1, "expectation": "must_trigger",
              "observation": None, "reading": None, "error": {"kind": "x", "message": "m"}}
    raw = (json.dumps(record) + "\n").encode()
    assert _fast_fields(raw, "R") is None
    assert _json_fields(raw, "R") == ('with "quotes"', "p", 2, 1, 3, 0, 0, 0.0)
    log = tmp_path / "trials.jsonl"
    log.write_bytes(raw + raw.replace(b'"attempt": 1', b'"attempt": 0'))
    state = read_state(log, "R")
    assert state.lines == 2 and state.attempt('with "quotes"', "p", 2) == 1
