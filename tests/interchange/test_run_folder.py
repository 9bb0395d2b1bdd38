"""A self-contained run: `summary.csv` beside each run's `summary.json`, and the portable run
folder of `ix export RUN --folder DIR` (docs/export.md, "A portable run folder") read back by
`ix import` and `ix report`. Runs are made in process; one test goes through the real `ix`.
"""

import csv
import hashlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from conftest import ix_in_process, run_ix, tree_digest, write
from ix.api import reports, transfer
from ix.domain.errors import ConfigError
from ix.eval.summary_table import COLUMNS, summary_rows


def experiment(lab: Path) -> Path:
    """Two mock subjects; the control errors on some must-002 trials (so a retry makes a
    second attempt of them)."""
    d = lab / "fold"
    write(d / "experiment.yaml", """
        name: fold
        trials: 4
        sensor: {kind: activation, skill: target}
        goal: {hypothesis: the variant is worse, metric: f1, compare: [control, variant],
               direction: decrease, min_effect: 0.05}
        subjects:
          - name: control
            runtime: {kind: mock, skill: target, activation_rates: {must-001: 1.0,
                      must-002: 0.5, not-001: 0.3}, error_rates: {must-002: 0.4}}
          - name: variant
            runtime: {kind: mock, skill: target, activation_rates: {must-001: 0.7}}
    """)
    for case_id, expectation in (("must-001", "must_trigger"), ("must-002", "must_trigger"),
                                 ("not-001", "should_not_trigger")):
        write(d / "cases" / f"{case_id}.md",
              f"---\nexpectation: {expectation}\n---\nDo {case_id}\n")
    return d


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    lab = tmp_path_factory.mktemp("fold") / "lab"
    d = experiment(lab)
    r = ix_in_process("run", "--lab", str(lab), "--json")
    assert r.code in (0, 1), r.output
    run_id = json.loads(r.stdout)["run_id"]
    r = ix_in_process("run", "--lab", str(lab), "--retry-failed", "--json")
    assert r.code in (0, 1), r.output
    run = d / "results" / "runs" / run_id
    return {"lab": lab, "dir": d, "run": run_id, "run_dir": run,
            "summary": json.loads((run / "summary.json").read_text())}


def csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def counts(summary: dict[str, Any]) -> dict[tuple[str, str], tuple[int, int, int]]:
    return {(b["name"], p["probe_id"]): (p["n"], p["passed"], p["errors"])
            for b in summary["subjects"] for p in b["probe_results"]}


# ------------------------------------------------------------------------- summary.csv


def test_summary_csv_beside_the_json_holds_each_subjects_metrics_with_their_intervals(
        made: dict[str, Any]) -> None:
    rows = csv_rows((made["run_dir"] / "summary.csv").read_text(encoding="utf-8"))
    assert rows and tuple(rows[0]) == COLUMNS
    summary = made["summary"]
    by = {(r["subject"], r["metric"]): r for r in rows}
    assert {r["run_id"] for r in rows} == {made["run"]}
    assert {r["experiment"] for r in rows} == {"fold"}
    for block in summary["subjects"]:
        m = block["metrics"]
        for metric in ("precision", "recall", "f1"):
            row = by[(block["name"], metric)]
            if m[metric] is None:  # undefined: an empty cell, never 0
                assert row["value"] == ""
            else:
                assert float(row["value"]) == pytest.approx(m[metric])
            assert [float(row["ci_low"]), float(row["ci_high"])] == \
                pytest.approx(m[f"{metric}_ci"])
        correct = block["trial_level"]["correct"]
        row = by[(block["name"], "trial_rate.correct")]
        assert float(row["value"]) == pytest.approx(correct["rate"])
        assert int(row["n"]) == correct["n_trials"]
        assert int(by[(block["name"], "errors")]["value"]) == block["errors"]
        assert float(by[(block["name"], "pass@1")]["value"]) == \
            pytest.approx(block["pass_at_k"]["1"])
    # the control errored: its errors row says how many
    assert int(by[("control", "errors")]["value"]) == summary["subjects"][0]["errors"]
    # the subjects in the summary's order, the control first
    assert list(dict.fromkeys(r["subject"] for r in rows)) == ["control", "variant"]


def test_summary_rows_of_a_load_run_are_the_service_figures() -> None:
    load = {"subjects": [{
        "subject": "svc", "offered_rps": 50, "achieved_rps": 49.5,
        "requests": {"completed": 99, "errored": 1},
        "error_rate": 0.01, "error_rate_ci": [0.0003, 0.054],
        "latency_ms": {"n": 99, "p50": {"value": 100.0, "ci": [95.0, 104.0]},
                       "p95": {"value": 180.0, "ci": [170.0, None]},
                       "p99": {"value": None, "ci": [None, None]}},
        "sla": [{"objective": "p95 ≤ 200 ms", "rate": 0.97, "rate_ci": [0.92, 0.99],
                 "n": 100}]}]}
    block = {"name": "svc", "metrics": {"precision": 1.0, "precision_ci": [0.4, 1.0],
                                        "recall": 1.0, "tp": 2},
             "trial_level": {"correct": {"rate": 0.96, "ci": [0.9, 0.99], "n_trials": 150}},
             "errors": 0, "trials": 150}
    rows = {r.metric: r for r in summary_rows({"subjects": [block], "load": load})}
    # a service is not worded as a classifier: no precision, recall or confusion counts
    assert not {"precision", "recall", "tp"} & set(rows)
    assert rows["trial_rate.correct"].value == 0.96
    assert (rows["error_rate"].value, rows["error_rate"].n) == (0.01, 100)
    assert (rows["latency_p95_ms"].ci_low, rows["latency_p95_ms"].ci_high) == (170.0, None)
    assert rows["latency_p99_ms"].value is None
    assert rows["sla[p95 ≤ 200 ms]"].value == 0.97
    assert rows["achieved_rps"].n == 99


# ------------------------------------------------------------------------- the folder


def test_folder_holds_the_latest_attempts_byte_for_byte_with_a_manifest_of_digests(
        made: dict[str, Any], tmp_path: Path) -> None:
    before = tree_digest(made["lab"])
    out = tmp_path / "portable"
    result = transfer.export_run(made["lab"], made["run"], "folder", out)
    assert tree_digest(made["lab"]) == before  # the lab holds no second copy
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "spec.yaml",
                                                     "summary.csv", "summary.json",
                                                     "trials.jsonl"]
    raw = [line for line in (made["dir"] / "results" / "trials.jsonl").read_bytes()
           .splitlines(keepends=True) if json.loads(line)["run_id"] == made["run"]]
    # the retry made second attempts: each trial's highest attempt (a later line on a tie)
    best: dict[tuple[str, str, int], bytes] = {}
    for line in raw:
        r = json.loads(line)
        key = (r["subject"], r["probe_id"], r["trial"])
        if key not in best or r["attempt"] >= json.loads(best[key])["attempt"]:
            best[key] = line
    assert len(raw) > len(best)
    kept = [line for line in raw if line in set(best.values())]
    assert (out / "trials.jsonl").read_bytes() == b"".join(kept)
    assert result.trials == len(kept) == len(best)
    manifest = json.loads((out / "manifest.json").read_text())
    assert (manifest["format"], manifest["run_id"], manifest["experiment"]) == \
        ("ix-run-folder", made["run"], "fold")
    assert manifest["subjects"] == ["control", "variant"] and manifest["trials"] == len(kept)
    for entry in manifest["files"]:
        data = (out / entry["name"]).read_bytes()
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()
        assert entry["bytes"] == len(data)
    run = made["run_dir"]
    assert (out / "summary.json").read_bytes() == (run / "summary.json").read_bytes()
    assert (out / "spec.yaml").read_bytes() == (run / "spec.yaml").read_bytes()
    # nothing from the clock: the same run exported again gives the same bytes
    again = tmp_path / "again"
    transfer.export_run(made["lab"], made["run"], "folder", again)
    assert tree_digest(again) == tree_digest(out)


def test_import_of_the_folder_gives_the_runs_counts_and_verdict_in_a_fresh_lab(
        made: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "portable"
    transfer.export_run(made["lab"], made["run"], "folder", out)
    lab2 = tmp_path / "lab2"
    lab2.mkdir()
    result = transfer.import_results(lab2, out, transfer.import_format(None, out))
    assert result.format == "folder" and result.created_experiment
    assert result.subjects == ("control", "variant")
    assert counts(result.summary) == counts(made["summary"])
    # the goal the spec recorded comes along, so the import states the same verdict
    assert result.summary["goal"]["verdict"] == made["summary"]["goal"]["verdict"]
    assert (result.run_dir / "summary.csv").is_file()  # an imported run has one too
    with pytest.raises(ConfigError, match="imported before"):
        transfer.import_results(lab2, out, "folder")


def test_report_pointed_at_the_folder_reads_its_own_trials(
        made: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "portable"
    transfer.export_run(made["lab"], made["run"], "folder", out)
    data = reports.report(made["lab"], str(out))
    lab_data = reports.report(made["lab"], made["run"])
    assert data["run"]["run_id"] == made["run"] and data["run"]["folder"] == str(out)
    # the sections built from trial lines match the lab's (read from the folder's own log;
    # its case files are not in the folder, so no prompt; its superseded attempts neither)

    def cases(report: dict[str, Any]) -> list[tuple[Any, ...]]:
        return [(c["probe_id"], c["trials"], c["failed"], c["wrong"], c["by_subject"],
                 c["examples"]) for c in report["failures"]["cases"]]

    assert cases(data) == cases(lab_data) and cases(data)
    assert data["failures"]["errored_trials"] == lab_data["failures"]["errored_trials"]


@pytest.mark.parametrize("damage", ["edit", "remove"])
def test_a_folder_changed_since_export_is_refused_naming_the_file(
        made: dict[str, Any], tmp_path: Path, damage: str) -> None:
    out = tmp_path / "portable"
    transfer.export_run(made["lab"], made["run"], "folder", out)
    trials = out / "trials.jsonl"
    if damage == "edit":
        data = trials.read_bytes()  # one more space: still JSON, no longer the same bytes
        trials.write_bytes(data[:-1] + b" \n")
    else:
        trials.unlink()
    lab2 = tmp_path / "lab2"
    lab2.mkdir()
    with pytest.raises(ConfigError) as caught:
        transfer.import_results(lab2, out, "folder")
    assert "trials.jsonl" in caught.value.render()
    assert "files[" in caught.value.render()
    assert list(lab2.iterdir()) == []


def test_export_target_reads_folder_as_format_folder_and_refuses_mixing() -> None:
    assert transfer.export_target(None, None, Path("d")) == ("folder", Path("d"))
    assert transfer.export_target(None, Path("x.jsonl"), None) == ("jsonl", Path("x.jsonl"))
    for fmt, out in (("csv", None), (None, Path("x"))):
        with pytest.raises(ConfigError):
            transfer.export_target(fmt, out, Path("d"))
    with pytest.raises(ConfigError, match="--out"):
        transfer.export_target("csv", None, None)
    with pytest.raises(ConfigError, match="--format"):
        transfer.import_format(None, Path("plain.jsonl"))


def test_ix_export_folder_then_ix_import_it_without_a_format(made: dict[str, Any],
                                                            tmp_path: Path) -> None:
    out = tmp_path / "portable"
    r = run_ix("export", made["run"], "--folder", str(out), "--lab", str(made["lab"]))
    assert r.code == 0, r.output
    assert r.stdout.startswith(f"exported run {made['run']} (fold, ")
    assert (out / "manifest.json").is_file()
    lab2 = tmp_path / "lab2"
    lab2.mkdir()
    r = run_ix("import", str(out), "--lab", str(lab2), "--json")
    assert r.code == 0, r.output
    assert json.loads(r.stdout)["format"] == "folder"
    r = run_ix("export", made["run"], "--folder", str(tmp_path / "b"), "--out",
               str(tmp_path / "c"), "--lab", str(made["lab"]))
    assert r.code == 2 and r.stderr.startswith("ix: error:") and "--folder" in r.stderr
