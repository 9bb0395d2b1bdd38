"""The resume reader (blocks of lines at once, else line by line) reads what a full JSON decode
reads, and a resumed run counts exactly what running its trials would have."""

import json
from types import SimpleNamespace

from conftest import ix_in_process, write
from ix.store import trial_scan
from ix.store.trial_scan import _fast_fields, _json_fields, read_state


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
    r = ix_in_process("run", "--lab", str(lab), "--json")  # real lines to read: in process
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


def _decoded(log, run_id):
    """What a resume must know, by decoding every line in full: the reference."""
    latest, usage, lines = {}, {}, 0
    for raw in log.read_bytes().splitlines(keepends=True):
        try:
            r = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(r, dict) or r.get("run_id") != run_id or "subject" not in r:
            continue
        lines += 1
        key = (r["subject"], r["probe_id"], r["trial"])
        code = 3 if r.get("error") else 1 if (r.get("reading") or {}).get("passed") else 2
        if key not in latest or r["attempt"] >= latest[key][0]:
            latest[key] = (r["attempt"], code)
        spent = usage.setdefault(r["subject"], [0, 0, 0.0])
        observation = r.get("observation") or {}
        spent[0] += observation.get("tokens_input", 0)
        spent[1] += observation.get("tokens_output", 0)
        spent[2] += observation.get("cost_usd", 0.0)
    return latest, usage, lines


def _state(state):
    return ({(s, p, t): (state.attempt(s, p, t), code) for s, p, t, code in state.outcomes()},
            state.usage, state.lines)


def test_the_block_reader_equals_decoding_every_line(lab, monkeypatch):
    d = lab / "r"
    write(d / "experiment.yaml", "\n".join([
        "name: r",
        "trials: 6",
        "sensors: [{kind: activation, skill: x}, {kind: latency, max_ms: 1000}]",
        "subjects:",
        "  - name: ünïcode subject",
        "    runtime: {kind: mock, default_rate: 0.5, error_rates: {must-1: 0.5}}",
        "  - name: plain",
        "    runtime: {kind: mock, default_rate: 0.5}",
    ]) + "\n")
    write(d / "cases" / "must-0.md", "---\nexpectation: must_trigger\n---\nSay \"0\"\n")
    write(d / "cases" / "must-1.md", "---\nexpectation: must_trigger\n---\nSay 1\n")
    write(d / "cases" / f"must-{'x' * 240}.md", "---\nexpectation: must_trigger\n---\nlong\n")
    # the log the reader is tried on, written in process
    assert ix_in_process("run", "--lab", str(lab)).code == 0
    r = ix_in_process("run", "--lab", str(lab), "--retry-failed", "--json")  # attempts 1 appear
    assert r.code == 0, r.output
    run_id = json.loads(r.stdout)["run_id"]
    write(d / "experiment.yaml", (d / "experiment.yaml").read_text().replace("sensors:", "#"))
    assert ix_in_process("run", "--lab", str(lab)).code == 0  # another run, one sensor per line
    log = d / "results" / "trials.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    ours = [json.loads(x) for x in lines if json.loads(x)["run_id"] == run_id]
    first = ours[0]

    def line(**changes):
        return (json.dumps({**first, **changes}, ensure_ascii=False) + "\n").encode()

    observation = {**first["observation"], "tokens_input": 120, "tokens_output": 7,
                   "cost_usd": 0.0125}
    odd = [
        line(trial=0, attempt=5, observation=observation),       # spent something
        line(trial=1, attempt=5, probe_id='must-"q"'),            # an escape in a name
        line(trial=2, attempt=5, observation=None, reading=None,  # an internal error
             error={"kind": "internal_error", "message": "boom"}),
        line(trial=3, attempt=5, trace="results/runs/x/traces/t.jsonl.gz"),
        line(trial=3, attempt=5, error={"kind": "x", "message": "again, later"}),  # a tie
        b"\n",
        b'{"note": "not a trial", "run_id": "' + run_id.encode() + b'"}\n',
        line(trial=4)[:-40] + b"\n",                              # corrupt
        (json.dumps({"run_id": run_id, "subject": "plain", "probe_id": "must-0", "trial": 5,
                     "attempt": 7, "reading": {"passed": True}, "error": None}) + "\n").encode(),
        (json.dumps({"subject": "plain", "probe_id": "must-0", "trial": 4, "attempt": 7,
                     "run_id": run_id, "reading": None, "error": None}) + "\n").encode(),
    ]
    torn = line(trial=5, attempt=9)[:-30]
    log.write_bytes(b"".join(lines[:5] + odd + lines[5:]) + torn)
    alone = []
    original = trial_scan._fast_fields
    monkeypatch.setattr(trial_scan, "_fast_fields",
                        lambda raw, rid: alone.append(raw) or original(raw, rid))
    expected = _decoded(log, run_id)
    assert expected[1]["ünïcode subject"][2] == 0.0125
    long = b"must-" + b"x" * 240  # the long case id, in either spacing
    normal = [x for x in lines if run_id.encode() in x and long not in x]
    assert len(normal) > 20
    warned = []
    for block in (97, 4096, 1 << 22):  # lines cut across blocks, and all in one
        alone.clear()
        warned.clear()
        assert _state(read_state(log, run_id, warned.append, block=block)) == expected
        assert [w.split(": skipped ")[1] for w in warned] == [
            "corrupt line", "corrupt line", "torn last line (a run stopped mid-write)"]
        # ix's own lines take the block path; the odd ones, and those whose names do not
        # fit the window at a line's start, are read one by one
        assert all(raw in odd or long in raw for raw in alone)
        assert any(long in raw for raw in alone) and not set(normal) & set(alone)
    assert _state(read_state(log, "no-such-run")) == ({}, {}, 0)


def test_a_log_without_the_run_or_any_newline_reads_as_empty(tmp_path):
    log = tmp_path / "trials.jsonl"
    assert _state(read_state(log, "R")) == ({}, {}, 0)  # no log yet
    log.write_bytes(b'{"run_id": "R", "subject": "s", "probe_id": "p", "trial": 0, "attempt": 0')
    warned = []
    assert _state(read_state(log, "R", warned.append)) == ({}, {}, 0)
    assert "line 1: skipped torn last line" in warned[0]


def test_preloading_a_run_counts_exactly_what_adding_each_trial_does():
    import random

    from ix.engine.resume import Continuation, RunState
    from ix.engine.run import _preload
    from ix.eval.models import EvalCase
    from ix.eval.scoring import Tally

    rng = random.Random(7)
    cases = [EvalCase(id=f"c{i}", prompt="p", expectation="must_trigger") for i in range(5)]
    state = RunState()
    for case in cases:
        for trial in range(rng.randint(0, 70)):
            state.record("s", case.id, trial, 0, rng.choice([0, 1, 2, 3]))
    state.usage["s"] = [5, 6, 0.5]
    for mode in ("resume", "retry_failed"):
        run = Continuation("R", mode, {"trials_mode": {"mode": "fixed"}, "trials": 70}, state)
        plan = SimpleNamespace(cases=cases, adaptive=False, trials=70, min_trials=2,
                               curriculum=None)
        fast, slow = Tally(cases), Tally(cases)
        _preload({"s": fast}, run, plan)
        for _subject, probe_id, trial, code in state.outcomes():
            if run.keeps(code):
                slow.add(probe_id, None if code == 3 else code == 1, trial)
        slow.spend(5, 6, 0.5)
        assert fast == slow and fast.counts == slow.counts and fast.trials > 0


def test_a_trial_beyond_the_runs_trials_per_case_is_skipped_not_allocated(tmp_path):
    """A hostile line naming trial 2**31 - 1 of the run would make the reader keep a byte per
    trial up to it (gigabytes per case); the run's own trials per case bound what is kept."""
    def line(trial: int, subject: str = "s") -> bytes:
        return (json.dumps({"run_id": "R", "experiment": "e", "subject": subject,
                            "probe_id": "p", "trial": trial, "seed": 1, "attempt": 0,
                            "expectation": "must_trigger", "observation": None,
                            "reading": {"passed": True}, "error": None}) + "\n").encode()
    log = tmp_path / "trials.jsonl"
    log.write_bytes(line(0) + line(2) + line((1 << 31) - 1) + line((1 << 31) - 1, "t"))
    warned: list[str] = []
    state = read_state(log, "R", warned.append, per_case=3)
    assert {k: len(v) for k, v in state.codes.items()} == {("s", "p"): 3}
    assert state.code("s", "p", 0) == trial_scan.PASSED and state.code("s", "p", 1) == 0
    assert len(warned) == 1 and "skipped 2 line(s) of run R naming a trial beyond its 3" \
        in warned[0]
