"""`--executor ray` on a real two-node cluster: a head and a second node (`ray start
--address`) started here, on two loopback addresses of this machine.

Each trial line names the node that ran it and `spec.yaml` lists the cluster's nodes; a node
killed mid-run costs time, not trials: its tasks run again on the head, and every trial is
written exactly once, as a local run writes it.

The cluster uses token authentication, set explicitly on every node and on `ix` (`AUTH`), as
docs/running.md says: Ray 2.59+ turns it on for a head whenever a token exists on the machine
(`ray.init()` writes one), and a node without it then fails with `InvalidAuthToken`.
"""

import asyncio
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from conftest import flat, run_ix, tree_digest, write
from ix.domain.errors import TrialError
from ix.domain.types import Subject
from ix.engine.pipeline import NODE
from ix.engine.ray_executor import RESUBMITS, RayRuntime

RAY = Path(sys.executable).parent / "ray"
IX = Path(sys.executable).parent / "ix"
#: The cluster's token authentication: the same token on every node and on `ix`.
AUTH = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
ENV = {**{k: v for k, v in os.environ.items() if not k.startswith(("IX_", "RAY_AUTH_"))},
       "RAY_USAGE_STATS_ENABLED": "0", **AUTH}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_node(*args: str, timeout_s: float = 90) -> subprocess.Popen:
    """`ray start --block ARGS` in a session of its own, once the node is up: every process
    of the node (raylet, workers, agents) is in that session, so `kill_node` ends this node
    and no other (`ray stop` would end every Ray process of the user)."""
    temp = tempfile.mkdtemp(prefix="ixray-", dir="/tmp")  # Ray's socket paths must be short
    log = Path(temp) / "start.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(RAY), "start", "--block", f"--temp-dir={temp}", "--disable-usage-stats",
             "--object-store-memory=80000000",
             f"--dashboard-agent-listen-port={free_port()}", *args],
            env=ENV, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    proc.temp_dir = temp  # type: ignore[attr-defined]  # removed by `kill_node`
    deadline = time.monotonic() + timeout_s
    while b"Ray runtime started" not in log.read_bytes():
        if proc.poll() is not None or time.monotonic() > deadline:
            how = (f"exited with {proc.returncode}" if proc.poll() is not None
                   else f"not up within {timeout_s:.0f} s")
            text = log.read_text(errors="replace")  # before kill_node removes it
            kill_node(proc)
            raise AssertionError(f"ray start {' '.join(args)} {how}: {node_error(text)}\n"
                                 f"{text[-4000:]}")
        time.sleep(0.1)
    return proc


def node_error(log: str) -> str:
    """The errors a node's `ray start` logged, each once, in order (`Unauthenticated: RPC
    error: InvalidAuthToken: …` for a node without the cluster's token)."""
    said = [re.sub(r"^\[[^]]*\]\s*|^\S+ \S+\s+(ERROR|WARNING)\s+", "", line).strip()
            for line in log.splitlines()
            if re.search(r"error|Error|failed|Failed", line) and not line[:1].isspace()]
    return "; ".join(dict.fromkeys(said)) or "no error logged"


def kill_node(proc: subprocess.Popen) -> None:
    """SIGKILL every process of the node started by `proc` (its session), as a machine that
    dies takes them all at once."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getsid(int(entry)) == proc.pid:
                    os.kill(int(entry), signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue
    proc.wait(timeout=30)
    shutil.rmtree(proc.temp_dir, ignore_errors=True)  # type: ignore[attr-defined]


@pytest.fixture
def head() -> Iterator[str]:
    """A head with one CPU and the resource `head`; its address."""
    port = free_port()
    proc = start_node("--head", f"--port={port}", "--num-cpus=1", '--resources={"head": 1}',
                      "--include-dashboard=false", f"--dashboard-port={free_port()}")
    try:
        yield f"127.0.0.1:{port}"
    finally:
        kill_node(proc)


def second_node(head: str, ip: str) -> subprocess.Popen:
    """A second node at `ip` (another loopback address: a node of its own to Ray) with one
    CPU and the resource `worker`."""
    return start_node(f"--address={head}", f"--node-ip-address={ip}", "--num-cpus=1",
                      '--resources={"worker": 1}')


def experiment(lab: Path, *, latency: int = 0, trials: int = 6) -> Path:
    d = lab / "e"
    for i in range(8):
        e = "must_trigger" if i % 2 else "should_not_trigger"
        write(d / "cases" / f"c{i}.md", f"---\nexpectation: {e}\n---\nprompt {i}\n")
    write(d / "experiment.yaml",
          f"name: e\nskill: t\ntrials: {trials}\nseed: 5\nconcurrency: 4\n"
          f"runtime: {{kind: mock, default_rate: 0.6, latency_ms: {latency}, "
          f"error_rates: {{c3: 0.5}}}}\n")
    return d


def records(d: Path) -> list[dict]:
    path = d / "results" / "trials.jsonl"
    return [json.loads(raw) for raw in path.read_text().splitlines()] if path.exists() else []


def comparable(d: Path) -> list[dict]:
    """The trial lines without what differs between two runs of the same trials: times, ids
    and where they ran."""
    out = []
    for rec in records(d):
        for key in ("run_id", "started_at", "duration_ms", "node"):
            rec.pop(key, None)
        if rec["observation"]:
            rec["observation"].pop("duration_ms", None)
        out.append(rec)
    return sorted(out, key=lambda r: (r["subject"], r["probe_id"], r["trial"], r["attempt"]))


def spec(d: Path) -> dict:
    (run,) = (d / "results" / "runs").iterdir()
    return yaml.safe_load((run / "spec.yaml").read_text())


def ray_run(lab: Path, head: str) -> subprocess.Popen:
    """The real `ix run` on the cluster, two trials per Ray task (so that four trials in
    flight make two tasks, one per node)."""
    return subprocess.Popen([str(IX), "run", "--lab", str(lab), "--executor", "ray",
                             "--address", head], env={**ENV, "IX_RAY_BATCH": "2"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def nodes_by_resource(d: Path) -> dict[str, dict]:
    """The cluster `spec.yaml` lists, by the resource each node was given."""
    cluster = spec(d)["executor"]["cluster"]
    return {next(r for r in n["resources"] if r in ("head", "worker")): n for n in cluster}


@pytest.mark.slow
def test_trials_run_on_both_nodes_and_a_node_killed_mid_run_costs_none(head, tmp_path):
    node = second_node(head, "127.0.0.2")
    try:
        d = experiment(tmp_path / "ray", latency=150, trials=12)
        proc = ray_run(tmp_path / "ray", head)
        deadline = time.monotonic() + 60
        while not any(rec.get("node", {}).get("ip") == "127.0.0.2" for rec in records(d)):
            assert proc.poll() is None and time.monotonic() < deadline, "no trial on the node"
            time.sleep(0.02)
    finally:
        kill_node(node)
    time.sleep(0.5)  # what the node answered before it died is written by now
    before = len(records(d))
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    assert spec(d)["status"] == "completed"

    executor = spec(d)["executor"]  # the cluster the run joined, each node as it was given
    assert executor["nodes"] == 2 and executor["cpus"] == 2
    nodes = nodes_by_resource(d)
    assert nodes["worker"]["ip"] == "127.0.0.2"
    assert nodes["head"]["resources"] == {"CPU": 1, "head": 1}
    assert nodes["worker"]["resources"] == {"CPU": 1, "worker": 1}
    ids = {n["id"]: {k: n[k] for k in ("id", "ip", "host")} for n in nodes.values()}

    lines = records(d)
    for rec in lines:  # each line names the node that ran it, as spec.yaml lists it
        assert rec["node"] == ids[rec["node"]["id"]]
    assert {r["node"]["id"] for r in lines[:before]} == set(ids)  # both ran trials
    assert before < len(lines)  # and after the kill, only the head did
    assert {r["node"]["id"] for r in lines[before:]} == {nodes["head"]["id"]}

    keys = Counter((r["subject"], r["probe_id"], r["trial"], r["attempt"]) for r in lines)
    assert len(keys) == 8 * 12 and set(keys.values()) == {1}  # every trial exactly once
    assert AUTH["RAY_AUTH_TOKEN"] not in stderr + tree_text(tmp_path / "ray")  # never written
    assert not any(r["error"] and r["error"]["kind"] == "executor_error" for r in lines)
    local = experiment(tmp_path / "local", latency=0, trials=12)
    assert run_ix("run", "--lab", str(tmp_path / "local")).code == 0
    assert all("node" not in rec for rec in records(local))  # only where it ran elsewhere
    assert comparable(d) == comparable(local)  # the trials run again answered the same


@pytest.mark.slow
@pytest.mark.parametrize(("auth", "told"), [
    ({}, "set RAY_AUTH_MODE=token and the cluster's token"),
    ({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)},
     "is not the cluster's"),
], ids=["no-token", "another-token"])
def test_ix_without_the_clusters_token_says_what_to_set(head, tmp_path, auth, told):
    experiment(tmp_path / "lab")
    before = tree_digest(tmp_path / "lab")
    env = {**{k: v for k, v in ENV.items() if k not in AUTH}, **auth,
           "RAY_gcs_server_port_wait_time_s": "2"}  # Ray's retries: 2 s, not 20
    result = subprocess.run([str(IX), "run", "--lab", str(tmp_path / "lab"), "--executor", "ray",
                             "--address", head], env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 2, result.stderr
    (said,) = [line for line in flat(result.stderr).splitlines() if line.startswith("ix: error:")]
    assert f"--address: cannot join the Ray cluster at {head}: " in said
    assert "(InvalidAuthToken)" in said and told in said and "docs/running.md" in said
    assert "Traceback" not in result.stdout + result.stderr
    assert tree_digest(tmp_path / "lab") == before


def tree_text(root: Path) -> str:
    """Every file under `root`, as text (gzipped traces unpacked)."""
    import gzip

    return "".join((gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes())
                   .decode(errors="replace") for p in sorted(root.rglob("*")) if p.is_file())


# --- the driver's side, in process: a fake Ray task stands for the cluster ----------------

class FakeTask:
    """`task.remote(...)`: an awaitable that raises the next of `failures`, else runs the
    calls as a worker would (the answer is the stimulus), on node `n1`."""

    def __init__(self, *failures: BaseException, gate: "asyncio.Event | None" = None):
        self.failures = list(failures)
        self.sent: list[list] = []
        self.gate = gate

    def remote(self, spec: str, target_skill: str | None, calls: list) -> "asyncio.Future":
        self.sent.append([call[1] for call in calls])
        failure = self.failures.pop(0) if self.failures else None
        return asyncio.ensure_future(self._answer(calls, failure))

    async def _answer(self, calls: list, failure: BaseException | None) -> tuple:
        if self.gate is not None:
            await self.gate.wait()
        await asyncio.sleep(0)
        if failure is not None:
            raise failure
        return {"id": "n1", "ip": "10.0.0.1", "host": "a"}, [("ok", c[1]) for c in calls]


def trials(runtime: RayRuntime, n: int) -> list[tuple]:
    """`n` trials through `runtime`, each as the trial component runs it: (answer or error
    kind, the node it names)."""
    async def one(i: int) -> tuple:
        NODE.set(None)
        try:
            answer = await runtime.invoke(Subject(name="s"), f"case{i}", seed=i)
        except TrialError as exc:
            return (exc.kind, exc.message, NODE.get())
        return (answer, NODE.get())

    async def all_of() -> list[tuple]:
        return list(await asyncio.gather(*(asyncio.ensure_future(one(i)) for i in range(n))))

    return asyncio.run(all_of())


NODE_N1 = {"id": "n1", "ip": "10.0.0.1", "host": "a"}


def test_the_calls_of_one_turn_go_as_tasks_of_at_most_a_batch():
    task = FakeTask()
    got = trials(RayRuntime(None, "{}", None, task, batch=2), 5)
    assert task.sent == [["case0", "case1"], ["case2", "case3"], ["case4"]]
    assert got == [(f"case{i}", NODE_N1) for i in range(5)]


def test_a_task_lost_with_its_node_runs_again_and_each_trial_answers_once():
    from ray.exceptions import NodeDiedError, WorkerCrashedError

    task = FakeTask(NodeDiedError("node died"), WorkerCrashedError())
    runtime = RayRuntime(None, "{}", None, task, batch=4)
    assert trials(runtime, 3) == [(f"case{i}", NODE_N1) for i in range(3)]
    assert task.sent == [["case0", "case1", "case2"]] * 3
    assert runtime.resubmitted == 2


def test_a_cluster_that_keeps_losing_the_task_ends_with_executor_errors():
    from ray.exceptions import NodeDiedError

    task = FakeTask(*[NodeDiedError("gone")] * (RESUBMITS + 1))
    got = trials(RayRuntime(None, "{}", None, task, batch=4), 2)
    assert len(task.sent) == RESUBMITS + 1
    assert [(kind, node) for kind, _, node in got] == [("executor_error", None)] * 2
    assert "NodeDiedError" in got[0][1] and f"lost {RESUBMITS + 1} times" in got[0][1]


def test_a_task_that_failed_by_itself_is_not_run_again():
    from ray.exceptions import RaySystemError

    task = FakeTask(RaySystemError("ix is not installed on the worker"))
    got = trials(RayRuntime(None, "{}", None, task, batch=4), 2)
    assert len(task.sent) == 1
    assert got[0][:1] == ("executor_error",) and "ix is not installed" in got[0][1]


def test_a_task_whose_trials_are_all_cancelled_is_cancelled(monkeypatch):
    import ray

    cancelled: list = []
    monkeypatch.setattr(ray, "cancel", cancelled.append)

    async def scenario() -> None:
        task = FakeTask(gate=asyncio.Event())
        runtime = RayRuntime(None, "{}", None, task, batch=4)
        calls = [asyncio.ensure_future(runtime.invoke(Subject(name="s"), f"c{i}"))
                 for i in range(2)]
        await asyncio.sleep(0.01)  # sent, and waiting on the (gated) worker
        calls[0].cancel()
        await asyncio.sleep(0.01)
        assert not cancelled  # the other trial still waits for the task
        calls[1].cancel()
        await asyncio.sleep(0.01)
        assert len(cancelled) == 1

    asyncio.run(scenario())


@pytest.mark.parametrize("raw", ["0", "-2", "many", "1.5"])
def test_a_batch_size_that_is_no_positive_whole_number_is_refused(monkeypatch, raw):
    from ix.domain.errors import ConfigError
    from ix.engine.ray_executor import _positive

    monkeypatch.setenv("IX_RAY_BATCH", raw)
    with pytest.raises(ConfigError, match="positive number of trials") as caught:
        _positive("IX_RAY_BATCH", 32, int)
    assert caught.value.field == "IX_RAY_BATCH"
    monkeypatch.setenv("IX_RAY_BATCH", "7")
    assert _positive("IX_RAY_BATCH", 32, int) == 7


def test_a_line_naming_its_node_is_read_back_without_decoding_it(tmp_path, monkeypatch):
    """`node` goes after `attempt`: the head and tail a resume reads stay as they were, so a
    Ray run's log resumes as fast as a local one's (no line read on its own)."""
    from ix.engine.pipeline import _placed
    from ix.store import trial_scan
    from ix.store.trials import encode_line

    rec = {"run_id": "r1", "experiment": "e", "subject": "s", "probe_id": "c1", "trial": 0,
           "seed": 5, "attempt": 0, "expectation": "must_trigger",
           "started_at": "2026-01-01T00:00:00.000Z", "duration_ms": 1.0,
           "observation": {"content": "x", "tool_calls": [], "tokens_input": 0,
                           "tokens_output": 0, "cost_usd": 0.0},
           "reading": {"sensor_name": "activation", "passed": True, "score": 1.0,
                       "metrics": {}, "details": ""}, "error": None}
    path = tmp_path / "trials.jsonl"
    with path.open("wb") as f:
        for trial in range(20):
            line = encode_line(_placed({**rec, "trial": trial}, NODE_N1))  # type: ignore[arg-type]
            f.write(line if isinstance(line, bytes) else line.encode())
    assert list(json.loads(path.read_text().splitlines()[0]))[6:8] == ["attempt", "node"]
    alone: list[int] = []
    monkeypatch.setattr(trial_scan._Scan, "_line", lambda self, raw, n: alone.append(n))
    state = trial_scan.read_state(path, "r1")
    assert alone == []
    assert state.lines == 20 and len(state.codes[("s", "c1")]) == 20


@pytest.mark.parametrize(("runtime", "named"), [({"kind": "human"}, "'human' runtime"),
                                                ({"kind": "anthropic", "batch": True},
                                                 "batch API")])
def test_a_subject_that_must_run_here_is_refused_before_anything_runs(runtime, named):
    from types import SimpleNamespace

    from ix.domain.errors import ConfigError
    from ix.engine.ray_executor import on_ray

    plan = SimpleNamespace(subjects=[SimpleNamespace(subject=Subject(name="s"),
                                                     runtime_spec=runtime)])
    with pytest.raises(ConfigError, match=named) as caught:
        on_ray(plan)  # type: ignore[arg-type]
    assert caught.value.field == "--executor"
