"""`ix sanity`'s contract through the real command: exit 0 / 1 / 2, the verdict first and
one line per check at 80 columns, the time it took, and the lab's results/ untouched."""

import json
import re
import shutil
from pathlib import Path

from pydantic import TypeAdapter

from conftest import EXAMPLE_LAB, case, run_ix, too_wide, tree_digest, write
from ix.api.schemas import SanityOutput


def test_the_example_lab_passes_says_how_long_and_writes_nothing(tmp_path: Path):
    lab = tmp_path / "lab"
    shutil.copytree(EXAMPLE_LAB, lab, ignore=shutil.ignore_patterns("results", "artifacts"))
    before = tree_digest(lab)
    r = run_ix("sanity", "--lab", str(lab), env={"COLUMNS": "80"})
    assert r.code == 0, r.output
    first, *rest = r.stdout.splitlines()
    assert re.fullmatch(r"Sanity PASS: 11 passed, 0 failed, 2 skipped; 1,420 trials in "
                        r"\d+\.\d s", first), first
    assert "PASS skill-activation: perfect: 105 of 105 trials right (100%), want 100%" in rest
    assert "SKIP outcome: perfect: the first sensor is check; only activation has a perfect" \
        in rest
    assert not too_wide(r.stdout)
    assert tree_digest(lab) == before


def test_a_failed_check_exits_1_and_keeps_the_runs_for_ix_results(tmp_path: Path):
    lab = tmp_path / "lab"
    d = write(lab / "e" / "experiment.yaml", "name: e\nskill: t\ntrials: 3\nruntime: mock\n"
              "simulated_user: {kind: command, argv: [/nonexistent/user]}\n").parent
    case(d, "must-1", "must_trigger", extra="user: {goal: an answer}\n")
    case(d, "not-1", "should_not_trigger")
    r = run_ix("sanity", "--lab", str(lab), "--json")
    assert r.code == 1, r.output
    out = json.loads(r.stdout)
    TypeAdapter(SanityOutput).validate_python(out)  # the schema `ix schema sanity` prints
    assert (out["ok"], out["failed"], out["passed"]) == (False, 3, 0)
    assert out["checks"][0]["status"] == "fail" and "command_not_found" in \
        out["checks"][0]["found"]
    kept = Path(out["kept"])
    listed = run_ix("results", "--all-runs", "--lab", str(kept), "--json")
    assert listed.code == 0 and len(json.loads(listed.stdout)) == 3 * 2 * 3
    assert not (d / "results").exists()
    shutil.rmtree(kept)


def test_bad_input_exits_2_naming_the_file_and_field_with_nothing_run(tmp_path: Path):
    lab = tmp_path / "lab"
    d = write(lab / "e" / "experiment.yaml", "name: e\nskill: t\ntrials: 0\n").parent
    case(d, "must-1", "must_trigger")
    r = run_ix("sanity", "--lab", str(lab))
    assert r.code == 2 and r.stdout == ""
    assert f"{d / 'experiment.yaml'}: trials:" in r.stderr and "Traceback" not in r.stderr
    missing = run_ix("sanity", "nope", "--lab", str(lab))
    assert missing.code == 2 and "no experiment 'nope'" in missing.stderr
