"""`ProbeResult.trials` filled (domain models seed, "ProbeResult"): each case's trials with
their verdicts, in the summary's `probe_results[].trials` by trial index (true, false, null)
and on the domain object as `Verdict`s, up to `TRIALS_KEPT` trials per subject
(docs/results.md)."""

import json
from pathlib import Path

from conftest import ix_in_process, write
from ix.domain.verdicts import Verdict
from ix.eval.models import EvalCase
from ix.eval.scoring import TRIALS_KEPT, Tally


def cases() -> list[EvalCase]:
    return [EvalCase(id="m", prompt="p", expectation="must_trigger"),
            EvalCase(id="n", prompt="p", expectation="should_not_trigger")]


def test_tally_keeps_each_trials_verdict_in_trial_order() -> None:
    tally = Tally(cases())
    for trial, passed in ((2, True), (0, False), (1, None), (3, True)):
        tally.add("m", passed, trial)
    tally.sense("m", [("activation", True)])
    assert tally.trial_verdicts("m") == [(0, False), (1, None), (2, True), (3, True)]
    assert tally.verdicts_by_trial("m") == [False, None, True, True]
    assert tally.trial_verdicts("n") == [] == tally.verdicts_by_trial("n")
    gap = Tally(cases())  # a cancelled run may leave trial 1 unrun: no index to hang it on
    gap.add("m", True, 0)
    gap.add("m", False, 2)
    assert gap.trial_verdicts("m") == [(0, True), (2, False)]
    assert gap.verdicts_by_trial("m") == []
    m = tally.probe_results()[0]
    assert [(v.trial, v.passed) for v in m.trials] == [(0, False), (1, None), (2, True),
                                                       (3, True)]
    assert all(isinstance(v, Verdict) and v.probe_id == "m" for v in m.trials)
    assert m.trials[2].reading is not None and m.trials[2].reading.sensor_name == "activation"
    assert m.trials[1].reading is None  # errored: no verdict
    # the score is the majority rule's, over the valid trials only
    assert m.score == 2 / 3 and m.correct


def test_trials_are_left_out_above_the_cap_and_when_counted_without_an_index() -> None:
    big = Tally(cases())
    for t in range(TRIALS_KEPT + 1):
        big.add("m", t % 2 == 0, t)
    assert big.trial_verdicts("m") == [] and big.probe_results()[0].trials == ()
    assert big.probe_results()[0].score > 0.5  # the counts still stand
    at_cap = Tally(cases())
    for t in range(TRIALS_KEPT):
        at_cap.add("m", True, t)
    assert len(at_cap.trial_verdicts("m")) == TRIALS_KEPT
    no_index = Tally(cases())  # verdicts from outside ix (`LabStorage`) carry no index
    no_index.add("m", True)
    no_index.add("m", False, 1)
    assert no_index.trial_verdicts("m") == []


def test_the_summarys_probe_results_carry_the_standing_attempt_of_each_trial(
        tmp_path: Path) -> None:
    lab = tmp_path / "lab"
    d = lab / "pt"
    write(d / "experiment.yaml", """
        name: pt
        trials: 6
        sensor: {kind: activation, skill: s}
        runtime: {kind: mock, skill: s, activation_rates: {must-001: 0.6, not-001: 0.3},
                  error_rates: {must-001: 0.4}}
    """)
    write(d / "cases" / "must-001.md", "---\nexpectation: must_trigger\n---\nDo it\n")
    write(d / "cases" / "not-001.md", "---\nexpectation: should_not_trigger\n---\nDon't\n")
    r = ix_in_process("run", "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    run_id = json.loads(r.stdout)["run_id"]
    r = ix_in_process("run", "--lab", str(lab), "--retry-failed", "--json")
    assert r.code == 0, r.output
    lines = [json.loads(x) for x in (d / "results" / "trials.jsonl").read_text().splitlines()]
    standing: dict[tuple[str, int], dict] = {}
    for line in lines:
        if line["run_id"] == run_id:
            key = (line["probe_id"], line["trial"])
            if key not in standing or line["attempt"] >= standing[key]["attempt"]:
                standing[key] = line
    assert any(line["attempt"] > 0 for line in standing.values())  # the retry stands
    summary = json.loads((d / "results" / "runs" / run_id / "summary.json").read_text())
    seen = 0
    for probe in summary["subjects"][0]["probe_results"]:
        expected = [None if line["error"] else line["reading"]["passed"]
                    for (case, _), line in sorted(standing.items()) if case == probe["probe_id"]]
        assert probe["trials"] == expected
        assert len(probe["trials"]) == probe["n"] + probe["errors"] == 6
        assert probe["trials"].count(True) == probe["passed"]
        assert probe["trials"].count(None) == probe["errors"]
        seen += 1
    assert seen == 2
    assert summary["probe_results"] == summary["subjects"][0]["probe_results"]
