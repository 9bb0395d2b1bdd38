"""Batteries without a file (`ix batch --experiments ... --seeds ...`, `Lab.batch`), and
`ix batch --resume` after a kill: every trial exactly once, the report over every run."""

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from conftest import ix_in_process, mock_experiment, run_ix, write

VOLATILE = {"run_id", "started_at", "duration_ms"}


def snapshot(folder: Path) -> dict:
    return yaml.safe_load((folder / "battery.yaml").read_text())


def lines(experiment: Path) -> list[dict]:
    path = experiment / "results" / "trials.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip().endswith("}")]


def stable(records: list[dict]) -> list[tuple]:
    """The trial records without what differs between two runs of the same plan."""
    return sorted(tuple(sorted((k, json.dumps(v, sort_keys=True)) for k, v in r.items()
                               if k not in VOLATILE)) for r in records)


def test_a_battery_without_a_file_runs_what_the_same_file_runs(tmp_path):
    labs = {}
    for kind in ("file", "flags"):
        lab = tmp_path / kind
        mock_experiment(lab, "coex-a", rates={"must-001": 0.7}, trials=2)
        mock_experiment(lab, "coex-b", trials=2)
        mock_experiment(lab, "other", trials=2)
        labs[kind] = lab
    write(labs["file"] / "nightly.yaml", """
        name: batch
        experiments: [coex-*]
        subjects: [mock, random]
        seeds: 2
        trials: 1
    """)
    # in process: the real `ix batch` is test_flags_replace_the_fields_of_a_battery_file's
    by_file = ix_in_process("batch", str(labs["file"] / "nightly.yaml"), "--json")
    by_flags = ix_in_process("batch", "--lab", str(labs["flags"]), "--experiments", "coex-*",
                             "--subjects", "mock,random", "--seeds", "2", "--trials", "1",
                             "--json")
    assert by_file.code == 0 and by_flags.code == 0, by_file.output + by_flags.output
    a, b = (snapshot(Path(json.loads(r.stdout)["folder"])) for r in (by_file, by_flags))
    assert a["battery"] == b["battery"]  # the block a file would have held
    assert a["file"].endswith("nightly.yaml") and b["file"] is None
    assert b["command"][:3] == ["ix", "batch", "--lab"]
    keys = ("experiment", "path", "seed", "status")
    assert [{k: r[k] for k in keys} for r in a["runs"]] == \
        [{k: r[k] for k in keys} for r in b["runs"]] == [
        {"experiment": e, "path": e, "seed": s, "status": "completed"}
        for e in ("coex-a", "coex-b") for s in (0, 1)]
    for name in ("coex-a", "coex-b"):  # the same trials, draw for draw
        assert stable(lines(labs["file"] / name)) == stable(lines(labs["flags"] / name))
    assert not (labs["flags"] / "other" / "results").exists()


def test_flags_replace_the_fields_of_a_battery_file_and_bad_ones_name_the_flag(lab):
    mock_experiment(lab, "alpha", trials=1, n_must=1, n_not=1, n_edge=0)
    battery = write(lab / "b.yaml", "name: nightly\nexperiments: [alpha]\nseeds: 3\n")
    r = run_ix("batch", str(battery), "--seeds", "1,2,7", "--json")
    assert r.code == 0, r.output
    data = json.loads(r.stdout)
    assert data["battery"] == "nightly" and [v["seed"] for v in data["verdicts"]] == [1, 2, 7]
    assert snapshot(Path(data["folder"]))["battery"]["seeds"] == [1, 2, 7]
    for args, flag in ((("--seeds", "0"), "--seeds"), (("--seeds", "two"), "--seeds"),
                       (("--experiments", "nosuch*"), "--experiments"),
                       (("--subjects", "ghost"), "ghost")):
        # in process; the real exit 2 of this command line is the `nothing` below
        bad = ix_in_process("batch", "--lab", str(lab), *(() if "--experiments" in args
                                                          else ("--experiments", "alpha")),
                            *args)
        assert bad.code == 2 and flag in bad.stderr, (args, bad.output)
        assert "Traceback" not in bad.output
    nothing = run_ix("batch", "--lab", str(lab))
    assert nothing.code == 2 and "--experiments" in nothing.stderr


def test_lab_batch_runs_a_battery_given_by_its_fields_in_process(lab):
    import ix

    mock_experiment(lab, "coex-a", trials=1)
    mock_experiment(lab, "coex-b", trials=1)
    result = ix.Lab(lab).batch(experiments="coex-*", subjects=["mock"], seeds=2, trials=2)
    assert [(r.summary["experiment_name"], r.summary["seed"]) for r in result.runs] == [
        ("coex-a", 0), ("coex-a", 1), ("coex-b", 0), ("coex-b", 1)]
    assert result.status == "completed" and result.report["completed"] == 4
    snap = snapshot(result.folder)
    assert snap["file"] is None and snap["battery"]["name"] == "batch"
    assert snap["command"][0] == "ix.Lab.batch"
    assert all(len(lines(lab / e)) == 2 * 2 * 6 for e in ("coex-a", "coex-b"))


def _start_batch(lab: Path, *args: str) -> subprocess.Popen:
    exe = Path(sys.executable).parent / "ix"
    env = {k: v for k, v in os.environ.items() if not k.startswith("IX_")}
    return subprocess.Popen([str(exe), "batch", "--lab", str(lab), *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _count(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


@pytest.mark.slow
def test_sigkill_mid_battery_then_resume_gives_every_trial_exactly_once(lab):
    per_run = 6 * 10  # 6 cases x 10 trials, one subject: ~1 s a run
    for name in ("alpha", "beta"):
        mock_experiment(lab, name, trials=10, n_edge=0, extra_yaml="concurrency: 2\n",
                        runtime_extra="latency_ms: 30\ndefault_rate: 0.5")
    proc = _start_batch(lab, "--experiments", "alpha,beta", "--seeds", "2")
    log = lab / "alpha" / "results" / "trials.jsonl"
    deadline = time.monotonic() + 60
    # kill inside alpha's second run (seed 1), before its end: its id is not in the snapshot
    while _count(log) < per_run + 8 and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    killed_at = _count(log)
    assert per_run + 8 <= killed_at < 2 * per_run, killed_at
    [folder] = (lab / "batteries").iterdir()
    before = snapshot(folder)
    assert [r["status"] for r in before["runs"]] == ["completed", "running", "pending",
                                                     "pending"]
    assert before["runs"][1]["run_id"] is None and "finished_at" not in before
    assert not (folder / "report.json").exists()

    r = run_ix("batch", "--resume", "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    data = json.loads(r.stdout)
    assert data["folder"] == str(folder) and data["runs"] == 4 and data["completed"] == 4
    after = snapshot(folder)
    assert [r["status"] for r in after["runs"]] == ["completed"] * 4
    assert after["resumed"][0]["command"][:3] == ["ix", "batch", "--resume"]
    runs = {(x["experiment"], x["seed"]): x["run_id"] for x in after["runs"]}
    for name in ("alpha", "beta"):
        records = lines(lab / name)
        keys = Counter((x["run_id"], x["subject"], x["probe_id"], x["trial"]) for x in records)
        assert len(keys) == 2 * per_run and set(keys.values()) == {1}, name  # exactly once
        assert {x["run_id"] for x in records} == {runs[(name, 0)], runs[(name, 1)]}
        # no run was started twice: one folder per (experiment, seed)
        assert len(list((lab / name / "results" / "runs").iterdir())) == 2
    spec = yaml.safe_load((lab / "alpha" / "results" / "runs" / runs[("alpha", 1)]
                           / "spec.yaml").read_text())
    assert spec["status"] == "completed" and spec["continued"][0]["mode"] == "resume"
    report = json.loads((folder / "report.json").read_text())
    assert [(v["experiment"], v["seed"]) for v in report["verdicts"]] == [
        ("alpha", 0), ("alpha", 1), ("beta", 0), ("beta", 1)]
    assert all(row["trials"] == per_run for row in report["rows"])
    # a finished battery resumed again only reads its runs back
    again = ix_in_process("batch", "--resume", str(folder), "--json")
    assert again.code == 0 and json.loads(again.stdout)["rows"] == data["rows"]
    assert len(lines(lab / "alpha")) == 2 * per_run


def test_resume_refuses_what_would_change_the_battery_and_a_lab_without_one(lab):
    mock_experiment(lab, "alpha", trials=1)
    r = run_ix("batch", "--resume", "--lab", str(lab))
    assert r.code == 2 and "no battery to resume" in r.stderr
    # set-up (in process): a finished battery to resume
    assert ix_in_process("batch", "--lab", str(lab), "--experiments", "alpha").code == 0
    for extra in (("--seeds", "2"), ("--dry-run",)):
        bad = ix_in_process("batch", "--resume", "--lab", str(lab), *extra)  # (real: above)
        assert bad.code == 2 and "--resume" in bad.stderr and extra[0] in bad.stderr
    notdir = ix_in_process("batch", "--resume", str(lab / "alpha" / "experiment.yaml"))
    assert notdir.code == 2 and "battery folder" in notdir.stderr


def test_on_complete_gets_each_summary_and_the_battery_report(lab, tmp_path):
    mock_experiment(lab, "alpha", trials=1)
    marker = tmp_path / "called.json"
    script = write(tmp_path / "hook.py", f"""
        import json, os, sys
        print("the hook's own output")
        json.dump({{"argv": sys.argv[1:], "battery": os.environ["IX_BATTERY"],
                   "report": os.environ["IX_REPORT"], "status": os.environ["IX_RUN_STATUS"]}},
                  open({str(marker)!r}, "w"))
    """)
    r = run_ix("batch", "--lab", str(lab), "--experiments", "alpha", "--seeds", "2",
               "--on-complete", f"{sys.executable} {script}", "--json")
    assert r.code == 0, r.output
    data = json.loads(r.stdout)  # the hook's print went to stderr: stdout stays JSON
    called = json.loads(marker.read_text())
    assert called["battery"] == data["folder"] and called["status"] == "completed"
    assert called["argv"][-1] == called["report"] == str(Path(data["folder"]) / "report.json")
    summaries = called["argv"][:-1]
    assert len(summaries) == 2 and all(Path(p).is_file() for p in summaries)
    assert {json.loads(Path(p).read_text())["run_id"] for p in summaries} == {
        v["run_id"] for v in data["verdicts"]}
    assert "the hook's own output" in r.stderr
