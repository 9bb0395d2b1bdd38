"""`seeding:` (DESIGN.md §2): new runs draw common trial seeds and say so in spec.yaml; a run
made before (no `seeding` in its spec.yaml) resumes and retries with the per-subject seeds it
started with; `seeding: per-subject` reproduces such a run afresh."""

import hashlib
import json
from pathlib import Path

import pytest
import yaml

import ix
from conftest import ix_in_process, run_ix, write
from ix.domain.errors import ConfigError


def earlier_rule(seed: int, subject: str, case_id: str, trial: int) -> int:
    """The trial seed of runs made before common random numbers (written out here, as the
    runs on disk have it)."""
    text = f"{seed}:{subject}:{case_id}:{trial}".encode()
    return int.from_bytes(hashlib.sha256(text).digest()[:8], "big") >> 1


def experiment(lab: Path, extra: str = "") -> Path:
    d = lab / "e"
    for i in range(8):
        e = "must_trigger" if i % 2 else "should_not_trigger"
        write(d / "cases" / f"c{i:02d}.md", f"---\nexpectation: {e}\n---\nprompt {i}\n")
    mock = "{kind: mock, default_rate: 0.5, error_rates: {c03: 0.4}}"
    write(d / "experiment.yaml",
          "name: e\ntrials: 6\nconcurrency: 2\nseed: 11\nsensor: {kind: activation, skill: t}\n"
          f"subjects:\n  - name: a\n    runtime: {mock}\n  - name: b\n    runtime: {mock}\n"
          + extra)
    return d


def lines(d: Path) -> list[dict]:
    return [json.loads(x) for x in (d / "results" / "trials.jsonl").read_text().splitlines()]


def spec(d: Path) -> dict:
    (run,) = (d / "results" / "runs").iterdir()
    return yaml.safe_load((run / "spec.yaml").read_text())


def drawn(records: list[dict]) -> dict:
    """What each trial drew, latest attempt: (subject, case, trial) -> (seed, outcome)."""
    out = {}
    for r in sorted(records, key=lambda r: r["attempt"]):
        out[r["subject"], r["probe_id"], r["trial"]] = (
            r["seed"], r["attempt"], r["error"] is None and r["reading"]["passed"])
    return out


def test_seeding_per_subject_draws_as_runs_made_before_and_spec_yaml_says_which(lab, tmp_path):
    d = experiment(lab, "seeding: per-subject\n")
    assert ix_in_process("run", "--lab", str(lab)).code == 0
    assert spec(d)["seeding"] == "per-subject"
    for r in lines(d):
        assert r["seed"] == earlier_rule(11, r["subject"], r["probe_id"], r["trial"])
    common = experiment(tmp_path / "common")
    assert ix_in_process("run", "--lab", str(tmp_path / "common")).code == 0
    assert spec(common)["seeding"] == "common"
    seeds = {(r["probe_id"], r["trial"]): set() for r in lines(common)}
    for r in lines(common):
        seeds[r["probe_id"], r["trial"]].add(r["seed"])
    assert all(len(s) == 1 for s in seeds.values())  # a and b drew alike


def test_a_run_made_before_common_seeds_resumes_and_retries_with_its_own_seeds(lab, tmp_path):
    # the whole run, as ix drew it before common seeds: the reference
    whole = experiment(tmp_path / "whole", "seeding: per-subject\n")
    assert ix_in_process("run", "--lab", str(tmp_path / "whole")).code == 0
    # the same run stopped early, then made to look as one of then: no `seeding` anywhere
    d = experiment(lab, "seeding: per-subject\n")
    # set-up in process; the resume after it is the real command (exit 0)
    assert ix_in_process("run", "--lab", str(lab), "--max-trials", "30").code == 130
    experiment(lab)
    run_dir = next((d / "results" / "runs").iterdir())
    old = yaml.safe_load((run_dir / "spec.yaml").read_text())
    del old["seeding"]
    (run_dir / "spec.yaml").write_text(yaml.safe_dump(old))

    r = run_ix("run", "--lab", str(lab), "--resume")
    assert r.code == 0, r.output
    assert len(lines(d)) == 2 * 8 * 6
    assert "seeding" not in spec(d)  # what it was made with stays unsaid, and per subject
    assert drawn(lines(d)) == drawn(lines(whole))
    errored = {(r["subject"], r["probe_id"], r["trial"]) for r in lines(d) if r["error"]}
    assert errored
    r = ix_in_process("run", "--lab", str(lab), "--retry-failed")
    assert r.code == 0, r.output
    retried = [r for r in lines(d) if r["attempt"] == 1]
    assert {(r["subject"], r["probe_id"], r["trial"]) for r in retried} == errored
    for r in retried:
        assert r["seed"] == earlier_rule(11, r["subject"], r["probe_id"], r["trial"])


def test_an_unknown_seeding_is_exit_2_naming_the_file_and_the_field(lab):
    d = experiment(lab, "seeding: shared\n")
    r = run_ix("validate", "--lab", str(lab))
    assert r.code == 2
    assert str(d / "experiment.yaml") in r.stderr and "seeding" in r.stderr
    assert "common" in r.stderr and "per-subject" in r.stderr


def test_ix_experiment_takes_seeding_and_checks_it(tmp_path):
    cases = [{"id": "c1", "expectation": "must_trigger", "prompt": "p"}]
    runtime = {"kind": "mock", "default_rate": 0.5}
    run = ix.Experiment("e", cases=cases, subjects=[{"name": "a"}, {"name": "b"}],
                        runtime=runtime, skill=None, trials=3, seed=4, seeding="per-subject",
                        sensors=[{"kind": "activation", "skill": "t"}],
                        lab=tmp_path / "ok").run()
    assert run.status == "completed"
    for r in lines(tmp_path / "ok" / "e"):
        assert r["seed"] == earlier_rule(4, r["subject"], r["probe_id"], r["trial"])
    with pytest.raises(ConfigError) as caught:
        ix.Experiment("e", cases=cases, runtime=runtime, seeding="shared",
                      lab=tmp_path / "bad").run()
    assert caught.value.field == "seeding"
