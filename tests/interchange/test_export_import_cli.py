"""`ix export` and `ix import` end to end: the real command in a subprocess (docs/export.md);
the runs they read, and the export an import test starts from, are set-up, made in process, as
are repeats of a contract a real command here already shows (the other formats of the round
trip, most of the refused inputs)."""

import json
import time
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import read_eval_log

from conftest import flat, ix_in_process, mock_experiment, run_ix, tree_digest

RATES = {"must-001": 1.0, "must-002": 0.5, "not-001": 0.25}


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A lab with one completed mock run (read-only for the tests that use it)."""
    lab = tmp_path_factory.mktemp("cli") / "lab"
    lab.mkdir()
    mock_experiment(lab, "exp", rates=RATES, trials=4)
    r = ix_in_process("run", "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    summary = json.loads(r.stdout)
    return {"lab": lab, "run": summary["run_id"], "summary": summary}


def per_case(summary: dict[str, Any]) -> dict[tuple[str, str], tuple[int, int, int]]:
    return {(b["name"], p["probe_id"]): (p["n"], p["passed"], p["errors"])
            for b in summary["subjects"] for p in b["probe_results"]}


def test_help_lists_export_and_import() -> None:
    r = run_ix("--help")
    assert "export" in r.stdout and "import" in r.stdout


@pytest.mark.parametrize("fmt", ["inspect", "jsonl", "csv"])
def test_export_then_import_into_a_fresh_lab_gives_the_same_per_case_counts(
        made: dict[str, Any], tmp_path: Path, fmt: str) -> None:
    out = tmp_path / ("logs" if fmt == "inspect" else f"run.{fmt}")
    cli = run_ix if fmt == "jsonl" else ix_in_process  # one round trip by the real commands
    r = cli("export", made["run"][:17], "--lab", str(made["lab"]), "--format", fmt,
            "--out", str(out), "--json")
    assert r.code == 0, r.output
    exported = json.loads(r.stdout)
    assert exported["run_id"] == made["run"] and exported["trials"] == 6 * 4
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    r = cli("import", str(out), "--format", fmt, "--lab", str(fresh), "--json")
    assert r.code == 0, r.output
    imported = json.loads(r.stdout)
    assert imported["experiment"] == "exp" and imported["created_experiment"]
    summary = json.loads((Path(imported["run_dir"]) / "summary.json").read_text())
    assert per_case(summary) == per_case(made["summary"])
    assert summary["metrics"] == made["summary"]["metrics"]
    r = ix_in_process("ls", "--lab", str(fresh), "--json")
    assert r.code == 0 and imported["run_id"] in r.stdout


def test_inspect_export_prints_the_files_it_wrote(made: dict[str, Any], tmp_path: Path,
                                                 ) -> None:
    r = run_ix("export", made["run"], "--lab", str(made["lab"]), "--format", "inspect",
               "--out", str(tmp_path / "logs"))
    assert r.code == 0, r.output
    [path] = list((tmp_path / "logs").iterdir())
    assert path.name in r.stdout
    log = read_eval_log(str(path), header_only=True)
    assert log.status == "success" and log.eval.task == "exp"
    rate = made["summary"]["trial_level"]["correct"]["rate"]
    assert log.results.scores[0].metrics["accuracy"].value == pytest.approx(rate, abs=1e-6)


def test_an_existing_out_is_refused_without_force_and_replaced_with_it(
        made: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "run.jsonl"
    out.write_text("keep me\n")
    r = run_ix("export", made["run"], "--lab", str(made["lab"]), "--out", str(out))
    assert r.code == 2 and "--out" in flat(r.stderr) and "--force" in flat(r.stderr), r.output
    assert out.read_text() == "keep me\n"
    r = ix_in_process("export", made["run"], "--lab", str(made["lab"]), "--out", str(out),
                      "--force")
    assert r.code == 0, r.output
    assert len(out.read_text().splitlines()) == 24


def bad_jsonl(tmp: Path) -> Path:
    path = tmp / "bad.jsonl"
    path.write_text('{"subject": "s", "probe_id": "c", "trial": 0, '
                    '"expectation": "must_trigger", "reading": {"passed": true}, '
                    '"error": null}\n{"subject": "s", "probe_id": "c", "trial": "one"}\n')
    return path


def bad_inspect(tmp: Path) -> Path:
    path = tmp / "log.json"
    path.write_text('{"version": 2, "status": "success", "eval": {"model": "m"}, '
                    '"samples": []}')
    return path


def bad_csv(tmp: Path) -> Path:
    path = tmp / "t.csv"
    path.write_text("subject,probe_id,trial,passed\ns,c,0,yes please\n")
    return path


def binary(tmp: Path) -> Path:
    path = tmp / "t.csv"
    path.write_bytes(b"\x00\xff\xfe binary")
    return path


# (arguments after `ix`, with {lab}, {tmp}, {run} and {file} filled in; what the one-line
# message must name)
BAD: dict[str, tuple[list[str], Any, list[str]]] = {
    "unknown run": (["export", "20990101T000000Z-abcdef", "--out", "{tmp}/x.jsonl"], None,
                    ["RUN", "20990101T000000Z-abcdef"]),
    "unknown export format": (["export", "{run}", "--format", "xml", "--out", "{tmp}/x"],
                              None, ["--format", "xml"]),
    "out folder missing": (["export", "{run}", "--out", "{tmp}/no/such/x.jsonl"], None,
                           ["--out"]),
    "inspect out is a file": (["export", "{run}", "--format", "inspect", "--out",
                               "{tmp}/x.jsonl", "--force"], "touch", ["--out", "folder"]),
    "unknown import format": (["import", "{file}", "--format", "xml"], bad_jsonl,
                              ["--format", "xml"]),
    "missing import file": (["import", "{tmp}/nothing.jsonl", "--format", "jsonl"], None,
                            ["nothing.jsonl", "no such file"]),
    "malformed jsonl": (["import", "{file}", "--format", "jsonl", "--experiment", "exp"],
                        bad_jsonl, ["bad.jsonl", "line 2.trial"]),
    "inspect log without a task": (["import", "{file}", "--format", "inspect"], bad_inspect,
                                   ["log.json", "eval.task"]),
    "csv with a bad passed": (["import", "{file}", "--format", "csv", "--experiment", "exp"],
                              bad_csv, ["t.csv", "row 2.passed"]),
    "binary csv": (["import", "{file}", "--format", "csv"], binary, ["t.csv"]),
    "import naming no experiment": (["import", "{file}", "--format", "jsonl"], bad_jsonl,
                                    ["bad.jsonl"]),
    "new experiment with a path": (["import", "{file}", "--format", "jsonl", "--experiment",
                                    "a/b"], "good_jsonl", ["--experiment", "a/b"]),
}


# refused by the real command (one export, one import); the rest in process
REAL_REFUSALS = {"unknown run", "malformed jsonl"}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_exits_2_with_one_line_and_changes_nothing(name: str, made: dict[str, Any],
                                                             tmp_path: Path) -> None:
    args, make, must_name = BAD[name]
    file = None
    if make == "touch":
        (tmp_path / "x.jsonl").write_text("")
    elif make == "good_jsonl":
        file = tmp_path / "good.jsonl"
        r = ix_in_process("export", made["run"], "--lab", str(made["lab"]), "--out", str(file))
        assert r.code == 0, r.output
    elif make is not None:
        file = make(tmp_path)
    before = tree_digest(made["lab"])
    filled = [a.format(lab=made["lab"], tmp=tmp_path, run=made["run"], file=file)
              for a in args]
    cli = run_ix if name in REAL_REFUSALS else ix_in_process
    r = cli(*filled, "--lab", str(made["lab"]))
    assert r.code == 2, r.output
    assert "Traceback" not in r.output
    lines = flat(r.stderr).splitlines()
    assert len(lines) == 1 and lines[0].startswith("ix: error:"), r.stderr
    for word in must_name:
        assert word in lines[0], lines[0]
    assert tree_digest(made["lab"]) == before


def test_resume_passes_over_an_imported_run_and_refuses_to_continue_one(tmp_path: Path) -> None:
    """An imported run has no plan of its own: --resume takes the latest run ix executed,
    and naming the imported run is refused without touching the lab."""
    lab = tmp_path / "lab"
    lab.mkdir()
    mock_experiment(lab, "exp", rates=RATES, trials=2)
    first = ix_in_process("run", "--lab", str(lab), "--json")  # set-up: a run, exported
    assert first.code == 0, first.output
    executed = json.loads(first.stdout)["run_id"]
    out = tmp_path / "run.jsonl"
    assert ix_in_process("export", executed, "--lab", str(lab), "--format", "jsonl",
                  "--out", str(out)).code == 0
    time.sleep(1.1)  # run ids sort by their start second: the import must be the latest
    # set-up too: the import (the real `ix import` is the round trip's)
    r = ix_in_process("import", str(out), "--format", "jsonl", "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    imported = json.loads(r.stdout)["run_id"]
    assert imported > executed

    resumed = run_ix("run", "--lab", str(lab), "--resume", "--json")
    assert resumed.code == 0, resumed.output
    assert json.loads(resumed.stdout)["run_id"] == executed

    before = tree_digest(lab)
    refused = ix_in_process("run", "--lab", str(lab), "--resume", "--run", imported)
    assert refused.code == 2
    assert "imported" in flat(refused.stderr) and "--run" in flat(refused.stderr)
    assert "Traceback" not in refused.output
    assert tree_digest(lab) == before
