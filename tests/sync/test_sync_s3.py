"""`ix sync push|pull` against a local S3 (moto's server on 127.0.0.1), through the real `ix`
command: two labs pushing at once, a pull into a third, interrupted transfers, `ix run
--sync`, and the errors a user meets (no credentials, a bad URL, a backend not installed).
The runs a sync moves, and the reads that check what a pull left, are set-up and inspection:
in process (`ix_in_process`). A real S3 server and killed transfers: marked slow."""

import json
import signal
import subprocess
from pathlib import Path

import pytest

from conftest import _ix_argv, _ix_env, ix_in_process, mock_experiment, run_ix
from sync_support import S3, no_secret_in, synthetic_trials, trial_ids

RATES = {"must-001": 0.5, "must-002": 0.7, "not-001": 0.2}

pytestmark = pytest.mark.slow


def _lab(root: Path) -> Path:
    lab = root
    mock_experiment(lab, "exp", rates=RATES, trials=4)
    return lab


def _ids(lab: Path) -> list[tuple[str, str, str, int, int]]:
    return trial_ids(lab / "exp" / "results" / "trials.jsonl")


def _popen(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([*_ix_argv(), *args], env=_ix_env(None, env), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_two_labs_pushing_at_once_then_a_pull_gives_every_trial_exactly_once(tmp_path, s3: S3):
    a, b, c = _lab(tmp_path / "a"), _lab(tmp_path / "b"), tmp_path / "c"
    c.mkdir()
    for lab, seed in ((a, "1"), (b, "2")):
        r = ix_in_process("run", "exp", "--lab", str(lab), "--seed", seed, "--json",
                          env=s3.env())
        assert r.code == 0, r.output
    r = ix_in_process("tag", _ids(a)[0][0], "baseline", "--lab", str(a))
    assert r.code == 0, r.output
    pushes = [_popen("sync", "push", s3.url, "--lab", str(lab), "--json", env=s3.env())
              for lab in (a, b)]
    outputs = [p.communicate(timeout=120) for p in pushes]
    assert [p.returncode for p in pushes] == [0, 0], outputs
    sent = [json.loads(o[0]) for o in outputs]
    assert [s["trials"] for s in sent] == [len(_ids(a)), len(_ids(b))]

    r = run_ix("sync", "pull", s3.url, "--lab", str(c), "--json", env=s3.env())
    assert r.code == 0, r.output
    pulled = _ids(c)
    assert sorted(pulled) == sorted(_ids(a) + _ids(b))
    assert len(set(pulled)) == len(pulled) == json.loads(r.stdout)["trials"]
    assert (c / "exp" / "experiment.yaml").is_file()  # the definition came along
    assert {p.name for p in (c / "exp" / "results" / "runs").iterdir()} == \
        {i[0] for i in pulled}
    assert "baseline" in (c / "tags.yaml").read_text()
    audit = [json.loads(line) for line in (c / "audit.jsonl").read_text().splitlines()]
    assert sorted(x["action"] for x in audit) == ["run", "run", "tag"]

    # `ix results` and `ix query` read the index, brought up to date by the pull
    r = ix_in_process("query", "SELECT count(*) AS n, count(DISTINCT run_id) AS runs FROM trials",
                      "--lab", str(c), "--json")
    assert r.code == 0, r.output
    assert json.loads(r.stdout) == [{"n": len(pulled), "runs": 2}]
    r = ix_in_process("results", "--all-runs", "--lab", str(c), "--json")
    assert r.code == 0, r.output
    assert len(json.loads(r.stdout)) == len(pulled)

    # again, from every side: nothing more moves, nothing is duplicated
    for lab in (a, b):
        r = run_ix("sync", "push", s3.url, "--lab", str(lab), "--json", env=s3.env())
        assert r.code == 0 and json.loads(r.stdout)["lines"] == 0, r.output
    r = run_ix("sync", "pull", s3.url, "--lab", str(c), "--json", env=s3.env())
    assert r.code == 0 and json.loads(r.stdout)["lines"] == 0, r.output
    assert len(_ids(c)) == len(pulled)
    r = run_ix("sync", "pull", s3.url, "--lab", str(a), "--json", env=s3.env())
    assert r.code == 0, r.output
    assert sorted(_ids(a)) == sorted(pulled)  # a now has b's run too, once

    remote = s3.objects()
    assert no_secret_in(a, b, c, extra=remote) == []


def test_a_push_killed_mid_transfer_is_completed_by_running_it_again(tmp_path, s3: S3,
                                                                      stalling_proxy):
    lab = _lab(tmp_path / "lab")
    log = lab / "exp" / "results" / "trials.jsonl"
    synthetic_trials(log, "20261126T100000Z-000aaa", 250_000)  # three segments of 100,000
    proxy = stalling_proxy(marker=("PUT", "/trials/"), stall_after=1)
    push = _popen("sync", "push", s3.url, "--lab", str(lab), env=s3.env(proxy.url))
    try:
        assert proxy.stalled.wait(120), push.communicate(timeout=5)
        push.send_signal(signal.SIGKILL)  # one segment stored, the second on the wire
        push.wait(30)
    finally:
        if push.poll() is None:
            push.kill()
        proxy.release.set()
    stored = [k for k in s3.objects() if "/trials/" in k]
    assert len(stored) == 1  # it was interrupted: the log is not all there

    r = run_ix("sync", "push", s3.url, "--lab", str(lab), "--json", env=s3.env())
    assert r.code == 0, r.output
    done = json.loads(r.stdout)
    assert (done["trials"], done["trials_skipped"]) == (150_000, 100_000)
    lines = [line for k, v in s3.objects().items() if "/trials/" in k
             for line in v.splitlines()]
    assert len(lines) == len(set(lines)) == 250_000


def test_a_pull_killed_mid_transfer_leaves_the_lab_whole_and_a_rerun_completes_it(
        tmp_path, s3: S3, stalling_proxy):
    source = _lab(tmp_path / "source")
    synthetic_trials(source / "exp" / "results" / "trials.jsonl", "20261126T100000Z-000aaa",
                     250_000)
    r = ix_in_process("sync", "push", s3.url, "--lab", str(source), env=s3.env())
    assert r.code == 0, r.output
    lab = _lab(tmp_path / "lab")
    r = ix_in_process("run", "exp", "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    log = lab / "exp" / "results" / "trials.jsonl"
    before = log.read_bytes()
    files_before = {p: p.read_bytes() for p in lab.rglob("*") if p.is_file()
                    and ".ix" not in p.parts and p != log}

    proxy = stalling_proxy(marker=("GET", "/trials/"), stall_after=1)
    pull = _popen("sync", "pull", s3.url, "--lab", str(lab), env=s3.env(proxy.url))
    try:
        assert proxy.stalled.wait(120), pull.communicate(timeout=5)
        pull.send_signal(signal.SIGKILL)
        pull.wait(30)
    finally:
        if pull.poll() is None:
            pull.kill()
        proxy.release.set()
    after = log.read_bytes()
    assert after.startswith(before) and after.endswith(b"\n")  # appended whole lines only
    assert all(p.read_bytes() == data for p, data in files_before.items())
    assert len(trial_ids(log)) < len(before.splitlines()) + 250_000

    r = run_ix("sync", "pull", s3.url, "--lab", str(lab), "--json", env=s3.env())
    assert r.code == 0, r.output
    ids = trial_ids(log)
    assert len(ids) == len(set(ids)) == len(before.splitlines()) + 250_000
    assert log.read_bytes().startswith(before)


def test_ix_run_sync_pushes_the_run_it_made(tmp_path, s3: S3):
    lab = _lab(tmp_path / "lab")
    r = run_ix("run", "exp", "--lab", str(lab), "--sync", s3.url, env=s3.env())
    assert r.code == 0, r.output
    assert "synced 1 run(s) of exp" in r.stderr
    run_id = _ids(lab)[0][0]
    keys = s3.objects()
    assert any(k.startswith(f"team/exp/results/trials/{run_id}/") for k in keys)
    assert f"team/exp/results/runs/{run_id}/spec.yaml" in keys
    other = tmp_path / "other"
    other.mkdir()
    r = run_ix("sync", "pull", s3.url, "--lab", str(other), env=s3.env())
    assert r.code == 0, r.output
    assert sorted(_ids(other)) == sorted(_ids(lab))
    assert no_secret_in(lab, other, extra=keys) == []


def test_ix_run_sync_to_a_store_that_refuses_keeps_the_run_and_exits_2(tmp_path, s3: S3):
    lab = _lab(tmp_path / "lab")
    r = run_ix("run", "exp", "--lab", str(lab), "--sync", "s3://no-such-bucket-ix/x",
               env=s3.env())
    assert r.code == 2, r.output
    assert "ix sync push" in r.stderr and "Traceback" not in r.output
    assert _ids(lab)  # the run is kept


def test_missing_credentials_exit_2_naming_them_without_a_traceback(tmp_path, s3: S3,
                                                                     monkeypatch):
    lab = _lab(tmp_path / "lab")
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(key, raising=False)
    env = {k: v for k, v in s3.env().items()
           if k not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    for verb in ("push", "pull"):
        r = run_ix("sync", verb, s3.url, "--lab", str(lab), env=env)
        assert r.code == 2, r.output
        assert "credentials" in r.stderr and "Traceback" not in r.output
        assert "AWS_ACCESS_KEY_ID" in r.stderr  # what to set


def test_bad_urls_and_missing_backends_exit_2_saying_what_to_do(tmp_path):
    lab = _lab(tmp_path / "lab")
    cases = {
        "http://example.invalid/x": "not a sync URL",
        "s3://": "names no bucket",
        "s3://AKIA:hunter2@bucket/x": "holds a password",
        "gs://bucket/x": "pip install 'ix-lab[gcs]'",
        "az://container/x": "pip install 'ix-lab[azure]'",
        "lab-folder": "not a sync URL",
    }
    for url, said in cases.items():
        r = run_ix("sync", "push", url, "--lab", str(lab))
        assert r.code == 2, (url, r.output)
        assert said in r.stderr and "Traceback" not in r.output, (url, r.output)
        assert "hunter2" not in r.output
        r = run_ix("run", "exp", "--lab", str(lab), "--sync", url)
        assert r.code == 2 and said in r.stderr, (url, r.output)
    assert not (lab / "exp" / "results").exists()  # refused before anything ran


def test_file_urls_round_trip_through_a_folder(tmp_path):
    a, b = _lab(tmp_path / "a"), tmp_path / "b"
    b.mkdir()
    r = ix_in_process("run", "exp", "--lab", str(a), "--json")
    assert r.code == 0, r.output
    url = (tmp_path / "shared").as_uri()
    r = run_ix("sync", "push", url, "--lab", str(a))
    assert r.code == 0, r.output
    assert "pushed to" in r.stdout
    r = run_ix("sync", "pull", url, "--lab", str(b))
    assert r.code == 0, r.output
    assert _ids(b) == _ids(a)
    assert not [p for p in (tmp_path / "shared").rglob(".*")]  # no temporary file left


def test_a_prefix_ix_did_not_make_is_refused_both_ways_and_left_as_it_was(tmp_path, s3: S3):
    import boto3

    client = boto3.client("s3", endpoint_url=s3.endpoint, region_name="us-east-1")
    client.put_object(Bucket=s3.bucket, Key="team/exp/results/trials.jsonl", Body=b"{}\n")
    lab = _lab(tmp_path / "lab")
    synthetic_trials(lab / "exp" / "results" / "trials.jsonl", "20261126T100000Z-000aaa", 3)
    before = (lab / "exp" / "results" / "trials.jsonl").read_bytes()
    for verb in ("pull", "push"):
        r = run_ix("sync", verb, s3.url, "--lab", str(lab), env=s3.env())
        assert r.code == 2 and "ix-sync.json" in r.stderr, r.output
        assert "nothing was written" in r.stderr and "Traceback" not in r.output
    assert s3.objects() == {"team/exp/results/trials.jsonl": b"{}\n"}
    assert (lab / "exp" / "results" / "trials.jsonl").read_bytes() == before
