"""Nothing lost, nothing counted twice: resume, retry-failed, limits, filters, dry run."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from conftest import ix_in_process, run_ix, stable_summary, tree_digest, write


def experiment(lab: Path, *, cases: int = 20, trials: int | str = 10, latency: int = 20,
               extra: str = "") -> Path:
    d = lab / "e"
    for i in range(cases):
        e = "must_trigger" if i % 2 else "should_not_trigger"
        write(d / "cases" / f"c{i:02d}.md", f"---\nexpectation: {e}\ntags: [t{i % 3}]\n---\n"
              f"prompt {i}\n")
    write(d / "experiment.yaml",
          f"name: e\nskill: t\ntrials: {trials}\nconcurrency: 4\nseed: 11\n"
          f"runtime: {{kind: mock, default_rate: 0.5, latency_ms: {latency}, "
          f"error_rates: {{c03: 0.4}}}}\n{extra}")
    return d


def summary(d: Path) -> dict:
    return json.loads((d / "results" / "summary-latest.json").read_text())




def trials(d: Path) -> list[dict]:
    return [json.loads(x) for x in (d / "results" / "trials.jsonl").read_text().splitlines()
            if x.strip().endswith("}")]


def uninterrupted(tmp_path: Path) -> dict:
    """The summary of the same experiment run whole: a reference to compare with, made in
    process (the interrupted runs under test are real commands)."""
    ref = tmp_path / "reference"
    d = experiment(ref)
    assert ix_in_process("run", "--lab", str(ref)).code == 0
    return stable_summary(summary(d))


def start(lab: Path) -> subprocess.Popen:
    exe = Path(sys.executable).parent / "ix"
    env = {k: v for k, v in os.environ.items() if not k.startswith("IX_")}
    return subprocess.Popen([str(exe), "run", "--lab", str(lab)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def wait_for_lines(d: Path, n: int) -> None:
    path = d / "results" / "trials.jsonl"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if path.exists() and len(path.read_bytes().splitlines()) >= n:
            return
        time.sleep(0.01)
    raise AssertionError("the run wrote too few trials")


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["sigkill", "sigint"])
def test_a_killed_run_resumes_to_the_summary_of_an_uninterrupted_one(lab, tmp_path, sig):
    d = experiment(lab)
    proc = start(lab)
    wait_for_lines(d, 40)
    proc.send_signal(sig)
    proc.wait(timeout=30)
    before = len(trials(d))
    assert 40 <= before < 200
    # the killed process is real; the resume after it runs in process (a real `ix run
    # --resume` to exit 0 is test_a_torn_last_line_is_reported_and_that_trial_runs_again's)
    r = ix_in_process("run", "--lab", str(lab), "--resume")
    assert r.code == 0, r.output
    records = trials(d)
    keys = [(x["subject"], x["probe_id"], x["trial"]) for x in records]
    assert len(keys) == len(set(keys)) == 200  # none lost, none twice
    assert {x["run_id"] for x in records} == {summary(d)["run_id"]}
    assert stable_summary(summary(d)) == uninterrupted(tmp_path)
    spec = yaml.safe_load(next((d / "results" / "runs").iterdir()).joinpath("spec.yaml")
                          .read_text())
    assert spec["status"] == "completed" and spec["continued"][0]["mode"] == "resume"
    assert spec["trials_written"] == 200


def test_a_torn_last_line_is_reported_and_that_trial_runs_again(lab, tmp_path):
    d = experiment(lab, latency=0)
    # set-up: a stopped run to tear (the resume after it is what is tested)
    assert ix_in_process("run", "--lab", str(lab), "--max-trials", "50").code == 130
    path = d / "results" / "trials.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])  # a crash mid-line
    r = run_ix("run", "--lab", str(lab), "--resume")
    assert r.code == 0, r.output
    assert "torn last line" in r.stderr
    keys = [(x["probe_id"], x["trial"]) for x in trials(d)]
    assert len(keys) == len(set(keys)) == 200
    assert stable_summary(summary(d)) == uninterrupted(tmp_path)


def test_retry_failed_reruns_only_errored_trials_with_the_next_attempt(lab):
    d = experiment(lab, latency=0)
    assert ix_in_process("run", "--lab", str(lab)).code == 0  # set-up: the run to retry
    first = trials(d)
    errored = {(x["probe_id"], x["trial"]): x for x in first if x["error"]}
    assert errored
    r = run_ix("run", "--lab", str(lab), "--retry-failed", "--json")
    assert r.code == 0, r.output
    retried = trials(d)[len(first):]
    assert {(x["probe_id"], x["trial"]) for x in retried} == set(errored)
    for x in retried:
        old = errored[(x["probe_id"], x["trial"])]
        assert x["attempt"] == 1 and x["seed"] == old["seed"] and x["run_id"] == old["run_id"]
    s = json.loads(r.stdout)
    assert s["errors"] == sum(1 for x in retried if x["error"])  # the newer record counts
    assert s["subjects"][0]["trials"] == 200


def test_max_trials_stops_early_as_cancelled_and_resume_finishes(lab, tmp_path):
    d = experiment(lab, latency=0)
    r = run_ix("run", "--lab", str(lab), "--max-trials", "30", "--json")
    assert r.code == 130 and "--max-trials 30 reached" in r.stderr
    s = json.loads(r.stdout)
    assert s["run_status"] == "cancelled" and s["subjects"][0]["trials"] == 30
    assert ix_in_process("run", "--lab", str(lab), "--resume").code == 0
    assert stable_summary(summary(d)) == uninterrupted(tmp_path)


def test_the_circuit_breaker_stops_a_failing_subject_and_says_why(lab):
    d = lab / "b"
    write(d / "experiment.yaml", "name: b\nskill: t\ntrials: 10\nconcurrency: 1\n"
          "runtime: {kind: mock, error_rates: {c00: 1.0, c01: 1.0}}\n")
    for i in range(4):
        write(d / "cases" / f"c{i:02d}.md", f"---\nexpectation: must_trigger\n---\np{i}\n")
    r = run_ix("run", "--lab", str(lab), "--max-consecutive-errors", "5", "--json")
    s = json.loads(r.stdout)
    assert "t" in s["circuit_breaker"] and "5 consecutive" in s["circuit_breaker"]["t"]
    # at most one trial already handed to the single worker runs after the breaker trips
    assert 5 <= s["subjects"][0]["trials"] <= 6 and "circuit breaker" in r.stderr


def test_filters_choose_cases_and_are_recorded(lab):
    d = experiment(lab, trials=1, latency=0)
    r = ix_in_process("run", "--lab", str(lab), "--filter", "tag:t0,t1", "--filter", "!c0*",
                      "--json")
    assert r.code == 0, r.output
    ran = {x["probe_id"] for x in trials(d)}
    assert ran and all(not p.startswith("c0") for p in ran)
    assert all(int(p[1:]) % 3 in (0, 1) for p in ran)
    spec = yaml.safe_load(next((d / "results" / "runs").iterdir()).joinpath("spec.yaml")
                          .read_text())
    assert spec["overrides"]["filters"] == ["tag:t0,t1", "!c0*"]
    bad = ix_in_process("run", "--lab", str(lab), "--filter", "colour:red")
    assert bad.code == 2 and "--filter" in bad.stderr


def test_dry_run_plans_everything_and_writes_nothing(lab):
    experiment(lab)
    before = tree_digest(lab)
    r = ix_in_process("run", "--lab", str(lab), "--dry-run", "--json")
    assert r.code == 0, r.output
    [plan] = json.loads(r.stdout)
    assert plan["total_trials"] == 200 and plan["subjects"][0]["trials"] == 200
    assert tree_digest(lab) == before and not (lab / "e" / "results").exists()


def test_smoke_runs_one_trial_of_a_few_cases(lab):
    d = experiment(lab, latency=0)
    r = ix_in_process("run", "--lab", str(lab), "--smoke", "--json")
    assert r.code == 0, r.output
    records = trials(d)
    assert len(records) <= 3 and {x["trial"] for x in records} == {0}
    assert {x["expectation"] for x in records} == {"must_trigger", "should_not_trigger"}


def test_on_complete_runs_a_command_with_the_summary_path(lab, tmp_path):
    experiment(lab, cases=2, trials=1, latency=0)
    marker = tmp_path / "done.txt"
    script = write(tmp_path / "hook.py",
                   f"import sys; open({str(marker)!r}, 'w').write(sys.argv[-1])\n")
    r = ix_in_process("run", "--lab", str(lab), "--on-complete", f"{sys.executable} {script}")
    assert r.code == 0, r.output
    assert marker.read_text().endswith(".json") and Path(marker.read_text()).is_file()


def test_resume_refuses_a_changed_experiment_and_bad_flag_combinations(lab):
    d = experiment(lab, latency=0)
    # set-up: a stopped run to continue (the refusals after it are what is tested)
    assert ix_in_process("run", "--lab", str(lab), "--max-trials", "10").code == 130
    write(d / "cases" / "c99.md", "---\nexpectation: must_trigger\n---\nnew\n")
    # the file's real exit 2 of refused input; the other refusals in process
    r = run_ix("run", "--lab", str(lab), "--resume")
    assert r.code == 2 and "cases changed" in r.stderr
    both = ix_in_process("run", "--lab", str(lab), "--resume", "--retry-failed")
    assert both.code == 2
    lonely = ix_in_process("run", "--lab", str(lab), "--run", "x")
    assert lonely.code == 2 and "--run" in lonely.stderr
    unknown = ix_in_process("run", "--lab", str(lab), "--resume", "--run", "nosuch")
    assert unknown.code == 2 and "nosuch" in unknown.stderr


# --- trials: auto ---------------------------------------------------------------------------

AUTO = "min_trials: 2\nmax_trials: 10\n"


def adaptive(lab: Path, *, latency: int = 20, extra: str = "") -> Path:
    """Most cases are coin flips (they run to the maximum), some settle early; c03 errs."""
    return experiment(lab, trials="auto", latency=latency, extra=AUTO + extra)


def keys(d: Path) -> list[tuple[str, str, int]]:
    return sorted((x["subject"], x["probe_id"], x["trial"]) for x in trials(d))


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["sigkill", "sigint"])
def test_a_killed_adaptive_run_resumes_to_the_summary_of_an_uninterrupted_one(lab, tmp_path,
                                                                              sig):
    ref = tmp_path / "reference"
    whole = adaptive(ref, latency=0)
    assert ix_in_process("run", "--lab", str(ref)).code == 0  # the reference, run whole
    d = adaptive(lab)
    proc = start(lab)
    wait_for_lines(d, 30)
    proc.send_signal(sig)
    proc.wait(timeout=30)
    assert 30 <= len(trials(d)) < len(keys(whole))
    r = ix_in_process("run", "--lab", str(lab), "--resume")  # after the real kill, as above
    assert r.code == 0, r.output
    assert keys(d) == keys(whole)  # exactly the trials the rule gave: none lost, none twice
    s = summary(d)
    assert stable_summary(s) == stable_summary(summary(whole))
    assert {p["stopped"] for p in s["probe_results"]} == {"settled", "max_trials"}
    spec = yaml.safe_load((d / "results" / "runs" / s["run_id"] / "spec.yaml").read_text())
    assert spec["status"] == "completed" and spec["continued"][0]["mode"] == "resume"
    assert spec["trials_written"] == len(keys(whole))


def test_limits_stop_an_adaptive_run_as_cancelled_and_resume_finishes_it(lab, tmp_path):
    ref = tmp_path / "reference"
    whole = adaptive(ref, latency=0)
    assert ix_in_process("run", "--lab", str(ref)).code == 0  # the reference, run whole
    d = adaptive(lab, latency=0)
    # the real `--max-trials` stop (exit 130) is test_max_trials_stops_early_as_cancelled's
    r = ix_in_process("run", "--lab", str(lab), "--max-trials", "30", "--json")
    assert r.code == 130 and "--max-trials 30 reached" in r.stderr
    s = json.loads(r.stdout)
    assert s["run_status"] == "cancelled" and s["stop_reason"] == "--max-trials 30 reached"
    assert s["subjects"][0]["trials"] == len(trials(d)) == 30
    # nothing is spent by the mock, so a budget of 0 USD is reached by the first trial
    r = ix_in_process("run", "--lab", str(lab), "--resume", "--max-cost", "0", "--json")
    assert r.code == 130 and json.loads(r.stdout)["stop_reason"].startswith("--max-cost 0 USD")
    # the first trial, and those already under way: in flight, or done and waiting to be
    # counted (the orchestrator queues as many outcomes as it has workers: 4 each)
    assert 31 <= len(trials(d)) <= 30 + 2 * 4
    r = ix_in_process("run", "--lab", str(lab), "--resume")
    assert r.code == 0, r.output
    assert keys(d) == keys(whole)
    assert stable_summary(summary(d)) == stable_summary(summary(whole))


def test_the_time_limit_and_the_circuit_breaker_hold_an_adaptive_run(lab):
    d = adaptive(lab, latency=100)
    r = run_ix("run", "--lab", str(lab), "--time-limit", "0.3", "--json")
    assert r.code == 130, r.output
    assert json.loads(r.stdout)["stop_reason"] == "--time-limit 0.3 s reached"
    assert 0 < len(trials(d)) < 40  # 20 cases get 2 trials each before any more
    b = lab / "b"
    write(b / "experiment.yaml", f"name: b\nskill: t\ntrials: auto\n{AUTO}concurrency: 1\n"
          "runtime: {kind: mock, error_rates: {c00: 1.0, c01: 1.0}}\n")
    for i in range(4):
        write(b / "cases" / f"c{i:02d}.md", f"---\nexpectation: must_trigger\n---\np{i}\n")
    # (the real circuit breaker is test_the_circuit_breaker_stops_a_failing_subject's)
    r = ix_in_process("run", "--lab", str(lab), "b", "--max-consecutive-errors", "5",
                      "--json")
    s = json.loads(r.stdout)
    assert "5 consecutive" in s["circuit_breaker"]["t"] and "circuit breaker" in r.stderr
    ran = [x["probe_id"] for x in trials(b)]
    # without the breaker both failing cases would run to the maximum of 10
    assert ran.count("c00") < 10 and ran.count("c01") < 10
    assert s["subjects"][0]["trials"] == len(ran)


def _stop(outcomes: dict[int, bool | None], min_trials: int, max_trials: int) -> int:
    """How many trials the stopping rule gives a case with these outcomes (None: errored)."""
    from ix.stats.sequential import majority_vote_probability

    n = min_trials
    while n < max_trials:
        valid = [outcomes[t] for t in range(n) if outcomes[t] is not None]
        if valid:
            p = majority_vote_probability(sum(valid), len(valid), max_trials)
            if p >= 0.95 or p <= 0.05:
                break
        n += 1
    return n


def test_retry_failed_on_an_adaptive_run_reruns_errored_trials_and_reapplies_the_rule(lab):
    d = lab / "e"
    for i in range(6):
        write(d / "cases" / f"c{i:02d}.md", f"---\nexpectation: must_trigger\n---\np{i}\n")
    write(d / "experiment.yaml", f"name: e\nskill: t\ntrials: auto\n{AUTO}seed: 1\n"
          "runtime: {kind: mock, default_rate: 0.5, error_rates: {c00: 0.5, c01: 0.5, "
          "c02: 0.5, c03: 0.5, c04: 0.5, c05: 0.5}}\n")
    assert ix_in_process("run", "--lab", str(lab)).code == 0  # set-up: the run to retry
    first = trials(d)
    errored = {(x["probe_id"], x["trial"]) for x in first if x["error"]}
    # (the real `--retry-failed` is test_retry_failed_reruns_only_errored_trials's)
    r = ix_in_process("run", "--lab", str(lab), "--retry-failed", "--json")
    assert r.code == 0, r.output
    new = trials(d)[len(first):]
    assert {(x["probe_id"], x["trial"]) for x in new if x["attempt"] == 1} == errored
    latest: dict[str, dict[int, bool | None]] = {}
    for x in trials(d):
        latest.setdefault(x["probe_id"], {})[x["trial"]] = (
            None if x["error"] else x["reading"]["passed"])
    stopped = {p["probe_id"]: p["stopped"] for p in json.loads(r.stdout)["probe_results"]}
    extended = 0
    for case, outcomes in latest.items():
        before = sum(1 for x in first if x["probe_id"] == case)
        after = _stop({t: outcomes.get(t) for t in range(10)}, 2, 10)
        added = sorted(x["trial"] for x in new if x["probe_id"] == case and x["attempt"] == 0)
        # the rule, re-applied to the retried outcomes, ran exactly the trials it now asks for
        assert added == list(range(before, after)), case
        assert stopped[case] == ("max_trials" if after == 10 else "settled")
        extended += bool(added)
    assert extended  # (with this seed a retried trial unsettles a case, which gets more)


def test_a_continued_run_keeps_its_trials_rule(lab):
    d = adaptive(lab, latency=0)
    # set-up: a stopped run to continue (the refusal after it is what is tested)
    assert ix_in_process("run", "--lab", str(lab), "--max-trials", "10").code == 130
    (d / "experiment.yaml").write_text((d / "experiment.yaml").read_text()
                                       .replace("max_trials: 10", "max_trials: 12"))
    r = ix_in_process("run", "--lab", str(lab), "--resume")
    assert r.code == 2 and "trials: auto (2 to 10)" in r.stderr, r.output
    assert len(trials(d)) == 10
