"""`batch: true`: `ix run` sends its trials as provider batches, end to end.

The real `ix` in a subprocess, the official SDKs, and a loopback server implementing the batch
endpoints (`FakeBatchServer`: requests processed after a delay, some erroring, some expiring).
What must hold: every trial answered once and priced at the batch rate, the batch ids in
`spec.yaml`, and after a SIGKILL with a batch in flight, `--resume` collecting that batch
instead of submitting (and paying for) any trial twice.
"""

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from conftest import _ix_argv, _ix_env, flat, ix_in_process, run_ix
from runtimes.fake_batch_servers import FakeBatchServer
from runtimes.fake_llm_servers import FAKE_KEY, INPUT_TOKENS, OUTPUT_TOKENS
from runtimes.test_llm_runtimes import every_text_under, make_lab, router

#: Loopback batch servers that answer after a delay, and SIGKILL / ctrl-c mid-batch.
pytestmark = pytest.mark.slow

MODELS = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-4o-mini"}
PRICE = {"anthropic": (3.0, 15.0), "openai": (0.15, 0.60)}
KEY_ENV = "IX_TEST_BATCH_KEY"


def batch_lab(lab: Path, api: FakeBatchServer, provider: str) -> Path:
    """`make_lab`'s experiment (2 subjects x 3 cases x 3 trials) in batches, with no
    `concurrency:` of its own: every trial waits at once."""
    exp = make_lab(lab, f"""  kind: {provider}
          model: {MODELS[provider]}
          base_url: {api.base_url}
          api_key_env: {KEY_ENV}
          batch: true
          batch_poll_s: 0.1
          retries: 0""")
    config = exp / "experiment.yaml"
    config.write_text(config.read_text().replace("concurrency: 4\n", ""))
    return exp


def lines_of(exp: Path) -> list[dict]:
    return [json.loads(raw) for raw in
            (exp / "results/trials.jsonl").read_text().splitlines() if raw.strip()]


def spec_of(exp: Path, run_id: str) -> dict:
    return yaml.safe_load((exp / "results/runs" / run_id / "spec.yaml").read_text())


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_run_in_batches_answers_every_trial_once_at_the_batch_rate(lab, provider):
    with FakeBatchServer(provider, router=router, process_after_s=0.3,
                         max_requests=7) as api:
        exp = batch_lab(lab, api, provider)
        config = exp / "experiment.yaml"  # the server refuses more than 7: split at 7
        config.write_text(config.read_text().replace("batch: true", "batch: true\n"
                                                     "  batch_max_requests: 7"))
        env = {KEY_ENV: FAKE_KEY}
        # the plan's figures in process; the run below is the real command
        dry = ix_in_process("run", "llm", "--lab", str(lab), "--dry-run", "--json", env=env)
        assert dry.code == 0, dry.stderr
        for subject in json.loads(dry.stdout)[0]["subjects"]:
            assert subject["batch"] is True
            assert subject["estimated_cost_usd"] == pytest.approx(
                subject["standard_cost_usd"] / 2, rel=1e-6)
            assert subject["estimated_cost_usd"] > 0
        text = ix_in_process("run", "llm", "--lab", str(lab), "--dry-run", env=env)
        assert "at the batch rate (standard ~$" in text.stdout

        done = run_ix("run", "llm", "--lab", str(lab), "--json", "--progress", "json",
                      env=env)
        assert done.code == 0, done.stderr
        run_id = json.loads(done.stdout)["run_id"]
        events = [json.loads(x) for x in done.stderr.splitlines() if x.startswith("{")]
        told = [e for e in events if e["event"] == "batch"]
        assert {e["id"] for e in told if e["status"] == "submitted"} == \
            {b.id for b in api.batches}
        ended = [e for e in told if e["status"] == "ended"]
        assert sorted((e["id"], e["requests"], e["answered"]) for e in ended) == sorted(
            (b.id, len(b.custom_ids), len(b.custom_ids)) for b in api.batches)

        lines = lines_of(exp)
        assert len(lines) == 18  # 2 subjects x 3 cases x 3 trials, each once
        assert len({(x["subject"], x["probe_id"], x["trial"]) for x in lines}) == 18
        # 18 requests, at most 7 per batch: split at the (test's) request-count limit
        sizes = [len(b.custom_ids) for b in api.batches]
        assert sum(sizes) == 18 and max(sizes) == 7 and len(sizes) >= 3, sizes
        assert sorted(api.submitted_custom_ids()) == sorted(
            x["observation"]["meta"]["batch"]["custom_id"] for x in lines)
        inp, out = PRICE[provider]
        standard = (INPUT_TOKENS * inp + OUTPUT_TOKENS * out) / 1e6
        for x in lines:
            assert x["error"] is None
            assert x["observation"]["cost_usd"] == pytest.approx(standard / 2, rel=1e-6)
            assert x["observation"]["meta"]["batch"]["id"] in {b.id for b in api.batches}
        # the skill router behind the batch decided as it would have for standard requests
        took = {(x["subject"], x["probe_id"]) for x in lines if x["observation"]["tool_calls"]}
        assert took == {("with-skills", "must-001"), ("with-skills", "must-002")}
        spec = spec_of(exp, run_id)
        assert sorted(b["id"] for b in spec["batches"]) == sorted(b.id for b in api.batches)
        assert {b["provider"] for b in spec["batches"]} == {provider}
        assert sum(b["requests"] for b in spec["batches"]) == 18
        # the key reached the server only
        assert not [name for name, body in every_text_under(lab).items() if FAKE_KEY in body]


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_errored_and_expired_requests_fail_their_trials_and_retry_failed_rebatches(
        lab, provider):
    with FakeBatchServer(provider, router=router, process_after_s=0.2,
                         errored=lambda r: "haiku" in json.dumps(r.body),
                         expired=lambda r: "orders.csv" in json.dumps(r.body)) as api:
        exp = batch_lab(lab, api, provider)
        env = {KEY_ENV: FAKE_KEY}
        # the failing run in process; the retry below is the real command
        done = ix_in_process("run", "llm", "--lab", str(lab), "--json", env=env)
        lines = lines_of(exp)
        assert len(lines) == 18
        kinds = {(x["probe_id"], (x["error"] or {}).get("kind")) for x in lines}
        assert ("must-002", "batch_expired") in kinds
        assert any(c == "not-001" and k not in (None, "batch_expired") for c, k in kinds)
        assert all(k is None for c, k in kinds if c == "must-001")
        summary = json.loads(done.stdout)
        assert sum(block["errors"] for block in summary["subjects"]) == 12, done.stderr
        first = len(api.batches)
        api.errored = lambda r: False
        api.expired = lambda r: False
        again = run_ix("run", "llm", "--lab", str(lab), "--retry-failed", "--json", env=env)
        assert again.code in (0, 1), again.stderr
        retried = [cid for b in api.batches[first:] for cid in b.custom_ids]
        assert len(retried) == 12  # the 12 failed trials, in new batches, once each
        assert all(cid.startswith("ix-a1-") for cid in retried)
        assert len(lines_of(exp)) == 18 + 12


def _start(lab: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([*_ix_argv(), "run", "llm", "--lab", str(lab), "--json"],
                            env=_ix_env(lab, env), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_sigkill_with_a_batch_in_flight_then_resume_gives_every_trial_exactly_once(
        lab, provider):
    with FakeBatchServer(provider, router=router, process_after_s=None) as api:
        exp = batch_lab(lab, api, provider)
        env = {KEY_ENV: FAKE_KEY}
        proc = _start(lab, env)
        deadline = time.monotonic() + 60
        while not api.batches and time.monotonic() < deadline:
            time.sleep(0.05)
        assert api.batches, "no batch was submitted"
        runs = exp / "results/runs"
        while time.monotonic() < deadline:  # the ids are on disk before ix waits on them
            specs = list(runs.glob("*/spec.yaml"))
            listed = (yaml.safe_load(specs[0].read_text()) or {}).get("batches") or [] \
                if specs else []
            if sum(b["requests"] for b in listed) == 18:
                break
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        assert not (exp / "results/trials.jsonl").exists() or not lines_of(exp)
        submitted = list(api.submitted_custom_ids())
        assert len(submitted) == 18
        api.release(after_s=0.2)

        resumed = run_ix("run", "llm", "--lab", str(lab), "--resume", "--json", env=env)
        assert resumed.code == 0, resumed.stderr
        lines = lines_of(exp)
        assert len(lines) == 18
        assert len({(x["subject"], x["probe_id"], x["trial"]) for x in lines}) == 18
        assert api.submitted_custom_ids() == submitted  # nothing submitted twice
        assert sorted(submitted) == sorted(
            x["observation"]["meta"]["batch"]["custom_id"] for x in lines)


def test_a_second_ctrl_c_cancels_the_batches_and_resume_sends_the_rest(lab):
    with FakeBatchServer("anthropic", router=router, process_after_s=None) as api:
        exp = batch_lab(lab, api, "anthropic")
        env = {KEY_ENV: FAKE_KEY}
        proc = _start(lab, env)
        deadline = time.monotonic() + 60
        while not api.batches and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        first = [b.id for b in api.batches]  # the trials may have filled more than one
        assert "Ctrl-C again" in err and first[0] in err
        assert sorted(api.cancels) == sorted(first)
        assert f"cancelled {len(first)} batch" in err
        cancelled = sorted(api.submitted_custom_ids())
        api.process_after_s = 0.2  # the batches sent from now on are answered

        resumed = run_ix("run", "llm", "--lab", str(lab), "--resume", "--json", env=env)
        assert resumed.code == 0, resumed.stderr
        lines = lines_of(exp)
        assert len(lines) == 18 and all(x["error"] is None for x in lines)
        resent = [cid for b in api.batches[len(first):] for cid in b.custom_ids]
        assert sorted(resent) == cancelled  # each cancelled request sent again, once


def test_a_cached_batch_run_replays_without_a_new_batch(lab):
    """`--cache` wraps the runtime: its batches still get the run's journal and no trial
    timeout; the second run is answered from the cache, with no batch at all."""
    with FakeBatchServer("anthropic", router=router, process_after_s=0.2) as api:
        exp = batch_lab(lab, api, "anthropic")
        config = exp / "experiment.yaml"  # a trial timeout shorter than the batch takes
        config.write_text(config.read_text() + "timeout_s: 1\n")
        api.process_after_s = 2.0
        env = {KEY_ENV: FAKE_KEY}
        # the run that fills the cache in process; the one it answers is the real command
        first = ix_in_process("run", "llm", "--lab", str(lab), "--cache", "--json", env=env)
        assert first.code == 0, first.stderr
        summary = json.loads(first.stdout)
        assert sum(block["errors"] for block in summary["subjects"]) == 0
        assert spec_of(exp, summary["run_id"])["batches"]
        made = len(api.batches)
        second = run_ix("run", "llm", "--lab", str(lab), "--cache", "--json", env=env)
        assert second.code == 0, second.stderr
        assert len(api.batches) == made
        assert len(lines_of(exp)) == 36


def test_a_journal_line_that_is_no_journal_line_is_skipped_with_a_warning_naming_it(lab):
    """`batches.jsonl` may come from elsewhere (a synced or cloned lab): a line that is not
    an object, or lacks a key, or has one of the wrong type, is skipped with a warning naming
    the file and the line; the resume goes on and submits nothing again."""
    with FakeBatchServer("anthropic", router=router, process_after_s=0.1) as api:
        exp = batch_lab(lab, api, "anthropic")
        env = {KEY_ENV: FAKE_KEY}
        first = ix_in_process("run", "llm", "--lab", str(lab), "--json", env=env)  # set-up
        assert first.code == 0, first.stderr
        [journal] = (exp / "results/runs").glob("*/batches.jsonl")
        kept = len(journal.read_text().splitlines())
        bad = ['[1, 2]', '"a string"', '{"event": "submit"}', '{"event": "created", "token": 5, '
               '"id": "msgbatch_x"}', '{"event": "cancel"}', '{"event": "submit", "token": "t", '
               '"subject": "control", "at": "not a time", "custom_ids": ["x"]}',
               '{"event": "created", "token": "t", "id": ["msgbatch_x"]}', '{"no": "event"}']
        with journal.open("a", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in bad))
        made = len(api.batches)
        again = run_ix("run", "llm", "--lab", str(lab), "--resume", "--json", env=env)
        assert again.code == 0, again.stderr
        assert "Traceback" not in again.output
        for number in range(kept + 1, kept + len(bad) + 1):
            assert f"{journal}: line {number}: skipped line that is no batch journal line" \
                in flat(again.stderr), again.stderr
        assert len(api.batches) == made and len(lines_of(exp)) == 18


def test_a_symlinked_journal_is_refused_and_what_it_points_at_left_untouched(lab, tmp_path):
    """A run folder whose `batches.jsonl` is a symlink (a lab from elsewhere) is refused
    with exit 2 naming it before anything is written: ix never appends to the link's
    target, nor submits a batch."""
    with FakeBatchServer("anthropic", router=router, process_after_s=0.1,
                         expired=lambda r: "orders.csv" in json.dumps(r.body)) as api:
        exp = batch_lab(lab, api, "anthropic")
        env = {KEY_ENV: FAKE_KEY}
        first = ix_in_process("run", "llm", "--lab", str(lab), "--json", env=env)  # set-up
        assert first.code in (0, 1), first.stderr  # the expired requests failed their trials
        [journal] = (exp / "results/runs").glob("*/batches.jsonl")
        target = tmp_path / "notes.txt"
        target.write_bytes(journal.read_bytes())
        journal.unlink()
        journal.symlink_to(target)
        before = {p: p.read_bytes() for p in (target, journal.parent / "spec.yaml")}
        api.expired = lambda r: False
        made = len(api.batches)
        again = run_ix("run", "llm", "--lab", str(lab), "--retry-failed", "--json", env=env)
        assert again.code == 2, again.output
        assert "Traceback" not in again.output
        [line] = flat(again.stderr).splitlines()
        assert str(journal) in line and "symbolic link" in line
        assert {p: p.read_bytes() for p in before} == before
        assert len(api.batches) == made
