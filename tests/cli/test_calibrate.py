"""`ix calibrate`, the command: an "expensive" subject (a program that sleeps and reports a
price, run by agent-cli) calibrated against `lexical`, end to end offline; its --json output
against `ix schema calibrate`; bad input exit 2 on one line, nothing written."""

import json
from pathlib import Path

from pydantic import TypeAdapter

from calibrate_lab import agent, make_lab
from conftest import flat, ix_in_process, run_ix
from ix.api.schemas import SCHEMAS


def _lab(tmp_path: Path, proxy: str = "lexical") -> Path:
    lab = tmp_path / "lab"
    lab.mkdir(parents=True)
    return make_lab(lab, f"  - name: claude\n    runtime: {agent(lab)}\n"
                         f"    skills: [table-profile, git-helper]\n    proxy: {proxy}\n")


def test_ix_calibrate_answers_first_and_keeps_the_trials_as_a_run(tmp_path):
    lab = _lab(tmp_path)
    r = run_ix("calibrate", "profiling", "--n", "10", "--lab", str(lab), "--progress", "none",
               cwd=tmp_path, env={"COLUMNS": "80"})
    assert r.code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0].startswith("lexical agrees with claude on ") and "kappa" in lines[0]
    assert "to screen" in r.stdout and "not enough candidates: 1" in r.stdout
    assert "cost: subject $0.3000, proxy $0.0000" in r.stdout  # 10 cases x 3 trials x $0.01
    assert all(len(line) <= 80 for line in lines if str(lab) not in line)  # a path: whole
    runs = list((lab / "profiling" / "results" / "runs").iterdir())
    assert len(runs) == 1 and runs[0].name in r.stdout
    report = ix_in_process("report", runs[0].name, "--lab", str(lab), "--json")
    assert report.code == 0 and '"claude~proxy"' in report.stdout


def test_the_json_output_is_its_schema_and_bad_input_exits_2(tmp_path):
    lab = _lab(tmp_path)
    r = ix_in_process("calibrate", "profiling", "--n", "6", "--trials", "1", "--json",
                      "--lab", str(lab), cwd=tmp_path)
    assert r.code == 0, r.output
    data = json.loads(r.stdout)
    TypeAdapter(SCHEMAS["calibrate"].type).validate_python(data, strict=True)
    assert data["cost_usd"] == {"subject": 0.06, "proxy": 0.0} and data["trials"] == 1
    assert data["duration_ms"]["subject"] >= 50  # the program sleeps 50 ms a trial
    bad = _lab(tmp_path / "b", proxy="lexicl")
    r = ix_in_process("calibrate", "profiling", "--lab", str(bad), cwd=tmp_path)
    assert r.code == 2 and len(flat(r.stderr).splitlines()) == 1, r.output
    assert "experiment.yaml" in flat(r.stderr) and "subjects[0].proxy" in flat(r.stderr)
    assert "did you mean 'lexical'" in flat(r.stderr) and "Traceback" not in r.output
    assert not (bad / "profiling" / "results").exists()
