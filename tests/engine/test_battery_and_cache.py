"""`ix batch` runs experiments × subjects × seeds; `--cache` replays a run bit for bit."""

import json
import os
import stat

from conftest import ix_in_process, mock_experiment, run_ix, write


def test_a_battery_runs_every_experiment_and_seed_with_one_combined_report(lab):
    mock_experiment(lab, "alpha", rates={"must-001": 0.7}, trials=3)
    mock_experiment(lab, "alpha-two", trials=2)
    mock_experiment(lab, "beta", trials=2)
    battery = write(lab / "nightly.yaml", """
        name: nightly
        experiments: [alpha*]
        subjects: [mock, random]
        seeds: 2
        trials: 2
        output: batteries/{date}_{seq}
    """)
    r = run_ix("batch", str(battery), "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    data = json.loads(r.stdout)
    assert data["runs"] == 4 and data["completed"] == 4  # 2 experiments x 2 seeds
    rows = data["rows"]
    assert {(x["experiment"], x["seed"]) for x in rows} == {
        ("alpha", 0), ("alpha", 1), ("alpha-two", 0), ("alpha-two", 1)}
    assert {x["subject"] for x in rows} == {"mock", "random"}
    assert all(x["trials"] == 2 * 6 for x in rows)
    assert not (lab / "beta" / "results").exists()
    folder = lab / data["folder"].split(str(lab) + "/")[-1]
    assert (folder / "report.md").is_file() and (folder / "battery.yaml").is_file()
    assert "| alpha | 0 | mock |" in (folder / "report.md").read_text()
    # both reports are meant to be shared: the usual mode of a new file, not 0600
    mask = os.umask(0o022)
    os.umask(mask)
    for name in ("report.md", "report.json"):
        assert stat.S_IMODE((folder / name).stat().st_mode) == 0o666 & ~mask, name
    # each run is an ordinary run of its experiment
    runs = list((lab / "alpha" / "results" / "runs").iterdir())
    assert len(runs) == 2
    second = ix_in_process("batch", str(battery), "--lab", str(lab), "--json")
    assert json.loads(second.stdout)["folder"] != data["folder"]  # {seq} advances


def test_a_bad_battery_is_exit_2_naming_the_field_and_runs_nothing(lab):
    mock_experiment(lab, "alpha", trials=1)
    cases = [("experiments: [nosuch*]\n", "experiments[0]"), ("seeds: 0\n", "seeds"),
             ("colour: red\n", "colour"), ("subjects: [ghost]\n", "ghost")]
    for i, (body, field) in enumerate(cases):
        battery = write(lab / "b.yaml", "name: b\n" + (
            "" if body.startswith("experiments") else "experiments: [alpha]\n") + body)
        cli = run_ix if i == 0 else ix_in_process  # the first refusal by the real command
        r = cli("batch", str(battery), "--lab", str(lab))
        assert r.code == 2 and field in r.stderr and "Traceback" not in r.output, r.output
        assert not (lab / "alpha" / "results").exists()
        assert not (lab / "batteries").exists()


def test_a_cached_run_replays_bit_for_bit_without_calling_the_subject(lab):
    exp = mock_experiment(lab, rates={"must-001": 0.5, "not-001": 0.3}, trials=4)
    # set-up in process: the recording run and its cache's stats; the replay is real
    first = ix_in_process("run", "--lab", str(lab), "--cache", "--json")
    assert first.code == 0, first.output
    assert json.loads(ix_in_process("cache", "stats", "--lab", str(lab), "--json").stdout)[
        "entries"] == 24
    # replay mode never calls a subject: every trial comes from the cache
    replay = run_ix("run", "--lab", str(lab), "--cache", "--cache-mode", "replay", "--json")
    assert replay.code == 0, replay.output
    lines = [json.loads(x) for x in (exp / "results" / "trials.jsonl").read_text().splitlines()]
    a, b = lines[:24], lines[24:]

    def strip(x):
        return {k: v for k, v in x.items() if k not in ("run_id", "started_at", "duration_ms")}

    key = lambda x: (x["probe_id"], x["trial"])  # noqa: E731
    assert sorted(map(strip, a), key=key) == sorted(map(strip, b), key=key)
    s1, s2 = json.loads(first.stdout), json.loads(replay.stdout)
    assert s1["metrics"] == s2["metrics"] and s1["probe_results"] == s2["probe_results"]


def test_replay_mode_with_an_empty_cache_records_cache_misses(lab):
    exp = mock_experiment(lab, trials=1, n_must=1, n_not=1, n_edge=0)
    r = run_ix("run", "--lab", str(lab), "--cache-mode", "replay", "--json")
    # nothing recorded to replay: the run failed for its configuration, saying what to do
    assert r.code == 2, r.output
    assert json.loads(r.stdout)["run_status"] == "failed" and "then replay" in r.stderr
    kinds = {json.loads(x)["error"]["kind"]
             for x in (exp / "results" / "trials.jsonl").read_text().splitlines()}
    assert kinds == {"cache_miss"}
    # (a real exit 2: above)
    bad = ix_in_process("run", "--lab", str(lab), "--cache-mode", "sometimes")
    assert bad.code == 2 and "--cache" in bad.stderr
