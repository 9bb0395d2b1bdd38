"""`ix optimize`: offline on the bundled example, a credible improvement applied (and not
applied without `--apply`), an LLM proposer on a loopback Messages API that must never see a
held-out prompt, and a session killed mid-run and continued by the same command.

Through the real command (`run_ix`): the bundled example (exit 0, its JSON), `--apply` (the
files it leaves), a `--max-cost` stop (exit 130), the SIGKILL and the command that continues
it, and one bad input (exit 2). The rest, and set-up, ask the same command tree in process
(`ix_in_process`)."""

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from fake_llm_servers import FAKE_KEY, FakeLLMServer, text_reply
from pydantic import TypeAdapter

from conftest import EXAMPLE_LAB, _ix_argv, _ix_env, ix_in_process, run_ix, tree_digest, write
from ix.api.schemas import OptimizeSession
from optimize_lab import example_seed, make_lab


def _session(experiment: Path) -> tuple[Path, dict]:
    folders = sorted((experiment / "results" / "optimize").iterdir())
    assert len(folders) == 1, folders
    return folders[0], json.loads((folders[0] / "optimize.json").read_text())


def _prompts(experiment: Path, ids: list[str]) -> list[str]:
    out = []
    for case_id in ids:
        text = (experiment / "cases" / f"{case_id}.md").read_text()
        out.append(text.split("---\n", 2)[2].strip())
    return out


def test_offline_example_improves_train_f1_and_judges_on_holdout(example_lab: Path) -> None:
    skill = example_lab / "skills" / "csv-summary" / "SKILL.md"
    before = skill.read_bytes()
    seed = example_seed(EXAMPLE_LAB)   # a split at which the proposer has words to add
    r = run_ix("optimize", "skill-activation", "--lab", str(example_lab), "--seed", str(seed),
               "--json")
    assert r.code == 0, r.output
    state = json.loads(r.stdout)
    TypeAdapter(OptimizeSession).validate_python(state)  # `ix schema optimize`
    assert state["status"] == "completed" and state["proposer"]["name"] == "keywords"
    assert "word router" in state["proposer"]["note"]
    train, holdout = state["split"]["train"], state["split"]["holdout"]
    assert train and holdout and not set(train) & set(holdout)
    best = next(c for rd in state["rounds"] for c in rd["candidates"]
                if c["id"] == state["best"])
    assert best["train"]["f1"] > state["original"]["train"]["f1"]
    lo, hi = best["train"]["subjects"][0]["f1_ci"]
    assert lo <= best["train"]["f1"] <= hi
    verdict = state["holdout"]
    assert verdict["verdict"] in ("recommended", "not recommended")
    (row,) = verdict["subjects"]
    assert (verdict["verdict"] == "recommended") == (row["failed"] == [])
    if verdict["verdict"] == "recommended":
        assert verdict["prob_better"] >= state["settings"]["credibility"]
        assert row["p_value"] <= 1 - state["settings"]["credibility"]
    else:
        assert all(f in verdict["why"] for f in row["failed"])
    assert row["difference_ci"][0] <= row["difference"] <= row["difference_ci"][1]
    assert sum(row["pairs"]["must"]) + sum(row["pairs"]["not"]) == len(holdout)
    assert skill.read_bytes() == before  # no --apply: the skill is untouched
    folder = Path(state["experiment_dir"]) / "results" / "optimize" / state["id"]
    for name in ("optimize.json", "proposer.jsonl", "report.md", "report.html"):
        assert (folder / name).is_file(), name
    assert (folder / "candidates" / best["id"] / "csv-summary" / "SKILL.md").is_file()
    # the proposer never read a held-out prompt
    log = (folder / "proposer.jsonl").read_text()
    experiment = example_lab / "skill-activation"
    for prompt in _prompts(experiment, holdout):
        assert json.dumps(prompt)[1:-1] not in log
    # the audit log has the session
    audit = [json.loads(x) for x in (example_lab / "audit.jsonl").read_text().splitlines()]
    assert any(a["action"] == "optimize" and a["details"]["session"] == state["id"]
               for a in audit)


def test_screened_with_lexical_only_the_finalists_run_on_the_subject(example_lab: Path
                                                                     ) -> None:
    seed = example_seed(EXAMPLE_LAB)   # a split at which the proposer has candidates
    r = run_ix("optimize", "skill-activation", "--lab", str(example_lab), "--seed", str(seed),
               "--screen-with", "lexical", "--finalists", "1", "--json")
    assert r.code == 0, r.output
    state = json.loads(r.stdout)
    TypeAdapter(OptimizeSession).validate_python(state)
    screening = state["screening"]
    assert screening["name"] == "lexical" and screening["finalists"] == 1
    assert state["holdout"]["verdict"] in ("recommended", "not recommended")
    folder = Path(state["folder"])
    for rd in state["rounds"]:
        if not rd["candidates"]:   # the proposer had nothing new: nothing to screen
            assert "screen" not in rd
            continue
        assert len(rd["screen"]["finalists"]) == 1
        for c in rd["candidates"]:   # every candidate on the proxy, finalists on the subject
            assert (folder / "screen" / str(rd["round"]) / c["id"] / "results").is_dir()
            ran = (folder / "rounds" / str(rd["round"]) / c["id"] / "results").is_dir()
            assert ran == (c["id"] in rd["screen"]["finalists"])
    assert screening["saved_trials"] > 0
    report = (folder / "report.md").read_text()
    assert f"{screening['saved_trials']} saved" in report


def test_the_same_command_shows_a_completed_session_again(example_lab: Path) -> None:
    first = ix_in_process("optimize", "skill-activation", "--lab", str(example_lab), "--rounds",
                          "2", "--json")
    assert first.code == 0, first.output
    digest = tree_digest(example_lab / "skill-activation" / "results")
    again = ix_in_process("optimize", "skill-activation", "--lab", str(example_lab), "--rounds",
                          "2", "--json")
    assert again.code == 0, again.output
    assert json.loads(again.stdout)["id"] == json.loads(first.stdout)["id"]
    assert tree_digest(example_lab / "skill-activation" / "results") == digest


@pytest.fixture
def profiling(tmp_path: Path) -> Path:
    """A lab whose skill's description is weak: "Describes things." (see optimize_lab.py)."""
    return make_lab(tmp_path / "lab")


def test_a_credible_improvement_is_recommended_and_applied_only_with_apply(
        profiling: Path) -> None:
    skill = profiling / "skills" / "table-profile" / "SKILL.md"
    before = skill.read_bytes()
    r = ix_in_process("optimize", "profiling", "--lab", str(profiling), "--json")
    assert r.code == 0, r.output
    state = json.loads(r.stdout)
    assert state["holdout"]["verdict"] == "recommended", state["holdout"]
    assert state["holdout"]["prob_better"] >= 0.9
    assert skill.read_bytes() == before
    recommended = Path(state["recommended_file"])
    assert recommended.read_text() != before.decode()

    # the real command: the files `--apply` leaves
    applied = run_ix("optimize", "profiling", "--lab", str(profiling), "--apply", "--json")
    assert applied.code == 0, applied.output
    after = json.loads(applied.stdout)
    assert after["id"] == state["id"]  # the completed session, not a new one
    assert skill.read_bytes() == recommended.read_bytes()
    backup = Path(after["applied"]["backup"])
    assert backup.parent == skill.parent and backup.read_bytes() == before
    # only the description line changed
    old, new = before.decode().splitlines(), skill.read_text().splitlines()
    assert [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b] == [2]
    audit = [json.loads(x) for x in (profiling / "audit.jsonl").read_text().splitlines()]
    (line,) = [a for a in audit if a["action"] == "optimize-apply"]
    assert line["details"]["file"] == str(skill) and line["details"]["backup"] == str(backup)


def test_apply_without_a_recommendation_leaves_the_skill(lab: Path) -> None:
    _slow_lab(lab, latency_ms=0)
    skill = lab / "skills" / "target" / "SKILL.md"
    before = skill.read_bytes()
    r = ix_in_process("optimize", "slow", "--lab", str(lab), "--rounds", "1", "--apply")
    assert r.code == 0, r.output
    assert r.stdout.lstrip().startswith("no candidate"), r.stdout
    assert "nothing applied" in r.stderr
    assert skill.read_bytes() == before
    assert not list(skill.parent.glob("*.bak"))


def test_an_llm_proposer_never_sees_a_holdout_prompt(profiling: Path, tmp_path: Path) -> None:
    experiment = profiling / "profiling"
    with FakeLLMServer("anthropic") as api:
        api.router = lambda request: text_reply(json.dumps({"descriptions": [
            "Profile tabular files: columns, nulls, dtypes, cardinality and outliers of a "
            "spreadsheet.",
            "Checks spreadsheets.",
            "<b>bad</b> has a tag"]}))
        write(tmp_path / "config" / "ix" / "subjects.yaml", f"""
            proposer-api:
              runtime: {{kind: anthropic, base_url: "{api.base_url}", api_key_env: OPT_KEY}}
              model: claude-test
            """)
        r = ix_in_process("optimize", "profiling", "--lab", str(profiling), "--proposer",
                          "proposer-api", "--rounds", "2", "--json",
                          env={"XDG_CONFIG_HOME": str(tmp_path / "config"), "OPT_KEY": FAKE_KEY})
        requests = list(api.requests)
    assert r.code == 0, r.output
    state = json.loads(r.stdout)
    assert requests, "the proposer was never asked"
    holdout = _prompts(experiment, state["split"]["holdout"])
    train_misses = [m["prompt"] for m in state["original"]["train"]["misses"]]
    for request in requests:
        sent = json.dumps(request.body)
        for prompt in holdout:
            assert prompt not in sent and json.dumps(prompt)[1:-1] not in sent
    assert any(json.dumps(m)[1:-1] in json.dumps(requests[0].body) for m in train_misses)
    rejected = [x for rd in state["rounds"] for x in rd["rejected"]]
    assert any("XML tag" in x["reason"] for x in rejected)
    ids = [c["id"] for rd in state["rounds"] for c in rd["candidates"]]
    assert ids[:2] == ["r1c1", "r1c2"]
    folder = experiment / "results" / "optimize" / state["id"]
    assert FAKE_KEY not in "".join(p.read_text(errors="replace") for p in folder.rglob("*")
                                   if p.is_file())


def _slow_lab(lab: Path, latency_ms: int = 60) -> Path:
    """The mock ignores descriptions: every candidate draws what the original drew (the same
    subject names, so the same trial seeds) and none can win."""
    write(lab / "skills" / "target" / "SKILL.md",
          "---\nname: target\ndescription: Does the target task.\n---\n\nBody.\n")
    rates = {**{f"must-{i:03d}": 0.3 for i in range(8)},
             **{f"not-{i:03d}": 0.6 for i in range(8)}}
    shown = ", ".join(f"{k}: {v}" for k, v in rates.items())
    write(lab / "slow" / "experiment.yaml",
          "name: slow\ntrials: 3\nconcurrency: 2\nsensor: {kind: activation, skill: target}\n"
          f"runtime: {{kind: mock, latency_ms: {latency_ms}, activation_rates: {{{shown}}}}}\n"
          "subjects:\n  - name: s\n    skills: [target]\n")
    for i in range(8):
        write(lab / "slow" / "cases" / f"must-{i:03d}.md",
              f"---\nexpectation: must_trigger\n---\nPlease run the target task on file {i}.\n")
        write(lab / "slow" / "cases" / f"not-{i:03d}.md",
              f"---\nexpectation: should_not_trigger\n---\nUnrelated request number {i}.\n")
    return lab / "slow"


@pytest.mark.slow
def test_sigkill_mid_session_then_the_same_command_continues_it(lab: Path) -> None:
    experiment = _slow_lab(lab)
    argv = [*_ix_argv(), "optimize", "slow", "--lab", str(lab), "--rounds", "2", "--json"]
    proc = subprocess.Popen(argv, env=_ix_env(lab, None), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    trials = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = list((experiment / "results" / "optimize").glob(
            "*/rounds/1/r1c1/results/trials.jsonl"))
        if found and len(found[0].read_text().splitlines()) >= 5:
            trials = found[0]
            break
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    assert trials is not None, "round 1 never started"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()
    folder, state = _session(experiment)
    assert state["status"] == "running" and state["rounds"] == []
    asked = (folder / "proposer.jsonl").read_text().splitlines()
    assert len(asked) == 1
    kept = len(trials.read_text().splitlines())

    r = run_ix("optimize", "slow", "--lab", str(lab), "--rounds", "2", "--json")  # after SIGKILL
    assert r.code == 0, r.output
    again, state = _session(experiment)
    assert again == folder and state["status"] == "completed"
    assert "continuing optimize session" in r.stderr
    # round 1 was not asked again, and its run was resumed, not restarted
    entries = [json.loads(x) for x in (folder / "proposer.jsonl").read_text().splitlines()]
    assert [e["round"] for e in entries].count(1) == 1
    lines = [json.loads(x) for x in trials.read_text().splitlines() if x.strip()]
    keys = [(x["subject"], x["probe_id"], x["trial"]) for x in lines]
    assert len(keys) == len(set(keys)) and len(lines) >= kept
    assert len(set(keys)) == 3 * len(state["split"]["train"])
    runs = list((trials.parent / "runs").iterdir())
    assert len(runs) == 1  # resumed, not started again
    assert {x["run_id"] for x in lines} == {runs[0].name}


BAD_INPUT = [
    (["--holdout", "1.5"], "--holdout"),
    (["--proposer", "nonesuch"], "--proposer"),
    (["--skill", "nonesuch"], "--skill"),
    (["--credibility", "0.2"], "--credibility"),
    (["--tolerance", "1.5"], "--tolerance"),
    (["--tolerance", "-0.1"], "--tolerance"),
    (["--min-changed", "0"], "--min-changed"),
    (["--screen-with", "nosuch"], "--screen-with"),
    (["--screen-with", "lexical", "--finalists", "0"], "--finalists"),
    (["--finalists", "1"], "--finalists"),   # without --screen-with it would mean nothing
]


@pytest.mark.parametrize(("args", "field"), BAD_INPUT)
def test_bad_input_is_named_and_writes_nothing(example_lab: Path, args: list[str],
                                               field: str) -> None:
    before = tree_digest(example_lab)
    # the first through a real process (exit 2 of the command), the others in process
    ix = run_ix if args == BAD_INPUT[0][0] else ix_in_process
    r = ix("optimize", "skill-activation", "--lab", str(example_lab), *args)
    assert r.code == 2, r.output
    assert field in r.stderr and "Traceback" not in r.stderr
    assert tree_digest(example_lab) == before


def test_max_cost_stops_the_session_and_a_larger_budget_continues_it(profiling: Path,
                                                                     tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "OPT_KEY": FAKE_KEY}
    with FakeLLMServer("anthropic") as api:
        api.router = lambda request: text_reply(json.dumps({"descriptions": [
            "Profile spreadsheets: columns, nulls, dtypes.", "Checks nulls in spreadsheets."]}))
        # 1,200 input and 40 output tokens at $1,000 per million: $1.24 an answer
        write(tmp_path / "config" / "ix" / "subjects.yaml", f"""
            pricey:
              runtime:
                kind: anthropic
                base_url: "{api.base_url}"
                api_key_env: OPT_KEY
                prices: {{claude-test: {{input_per_mtok: 1000, output_per_mtok: 1000}}}}
              model: claude-test
            """)
        args = ("optimize", "profiling", "--lab", str(profiling), "--proposer", "pricey",
                "--json")
        stopped = run_ix(*args, "--max-cost", "0.5", env=env)  # real: exit 130
        assert stopped.code == 130, stopped.output
        state = json.loads(stopped.stdout)
        assert state["status"] == "cancelled" and "--max-cost 0.5" in state["reason"]
        assert state["cost_usd"] == pytest.approx(1.24) and state["rounds"] == []
        assert "run the same command again" in stopped.stderr
        done = ix_in_process(*args, "--max-cost", "5", env=env)
        asked = len(api.requests)
    assert done.code == 0, done.output
    final = json.loads(done.stdout)
    assert final["id"] == state["id"] and final["status"] == "completed"
    assert asked == 1  # the answer paid for was logged, not bought again
    assert final["cost_usd"] == pytest.approx(1.24)


def test_cached_runs_replay_a_description_tried_before(example_lab: Path) -> None:
    first = ix_in_process("optimize", "skill-activation", "--lab", str(example_lab), "--cache",
                          "--json")
    assert first.code == 0, first.output
    # fewer rounds: another session; every description it tries ran before, on the same
    # cases and seeds, so replay (which never calls a subject) answers every trial
    again = ix_in_process("optimize", "skill-activation", "--lab", str(example_lab), "--rounds",
                          "2", "--cache-mode", "replay", "--json")
    assert again.code == 0, again.output
    a, b = json.loads(first.stdout), json.loads(again.stdout)
    assert a["id"] != b["id"]
    assert b["original"]["train"] == a["original"]["train"]
    for old, new in zip(a["rounds"], b["rounds"], strict=False):
        assert [c["train"] for c in new["candidates"]] == [c["train"] for c in old["candidates"]]
    trials = (example_lab / "skill-activation" / "results" / "optimize").glob(
        f"{b['id']}/**/trials.jsonl")
    lines = [json.loads(x) for t in trials for x in t.read_text().splitlines()]
    assert lines and all(x["error"] is None for x in lines)
