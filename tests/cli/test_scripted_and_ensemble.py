"""Through the real `ix`: a scripted subject's answers and an ensemble of subjects recorded
like any trial (`ix results` shows them), and a bad answer or member exits 2 naming the
file and the field, with nothing written."""

import json
from pathlib import Path

from conftest import case, run_ix, write

EXPERIMENT = """
name: e
sensor: {kind: activation, skill: t}
trials: 3
subjects:
  - name: script
    runtime:
      kind: scripted
      answers: {must-1: {skills: [t], text: Done.}, default: opposite}
  - name: chance
    runtime: {kind: random}
  - name: team
    ensemble: {members: [script, chance], combine: any}
"""


def _lab(tmp_path: Path, text: str) -> Path:
    d = write(tmp_path / "lab" / "e" / "experiment.yaml", text).parent
    case(d, "must-1", "must_trigger")
    case(d, "not-1", "should_not_trigger")
    return d


def test_scripted_and_ensemble_trials_are_recorded_and_listed(tmp_path: Path):
    d = _lab(tmp_path, EXPERIMENT)
    r = run_ix("run", "--lab", str(d.parent), "--progress", "none", "--json")
    assert r.code == 0, r.output
    rows = run_ix("results", "--lab", str(d.parent), "--json")
    assert rows.code == 0, rows.output
    by = {(x["subject"], x["probe_id"], x["trial"]): x for x in json.loads(rows.stdout)}
    assert len(by) == 3 * 2 * 3
    assert by[("script", "must-1", 0)]["invoked"] == ["t"]  # its answer: right
    assert by[("script", "not-1", 0)]["invoked"] == ["t"]   # default: opposite, wrong
    for trial in range(3):  # any: the ensemble fires wherever one member does
        for c in ("must-1", "not-1"):
            fired = any(by[(m, c, trial)]["passed"] for m in ("script", "chance"))
            assert by[("team", c, trial)]["passed"] is fired


def test_a_bad_answer_or_member_exits_2_naming_the_file_and_field(tmp_path: Path):
    d = _lab(tmp_path, EXPERIMENT.replace("skills: [t]", "skills: t"))
    file = str(d / "experiment.yaml")
    r = run_ix("validate", "--lab", str(d.parent))
    assert r.code == 2 and "Traceback" not in r.stderr
    assert f"{file}: subjects[0].runtime.answers.must-1.skills:" in r.stderr, r.stderr
    write(d / "experiment.yaml", EXPERIMENT.replace("[script, chance]", "[script, chanse]"))
    ran = run_ix("run", "--lab", str(d.parent), "--progress", "none")
    assert ran.code == 2 and "Traceback" not in ran.stderr
    assert f"{file}: subjects[2].ensemble.members[1]: no subject 'chanse'" in ran.stderr
    assert not (d / "results").exists()
