"""The RFC's own experiment.yaml (`probes: [{file, expectation}]`, `sensors: [{type,
target_skill}]`, `scorers: [{type: passfail}]`, `reporters: [{type: console}]`) is read as
ix's spelling, every check of ix's fields applying, with an `rfc-spelling` note per field."""

from pathlib import Path

import pytest

from conftest import run_ix, write
from ix import api
from ix.api.design import design_warnings
from ix.eval.dialect import normalise

RFC = """\
name: "skill-activation-eval"
subjects:
  - name: "claude-with-build-eval"
    runtime: {kind: mock, activation_rates: {eval-framework-question: 1.0}}
    skills: ["build-eval"]
probes:
  - file: "cases/must-activate/eval-framework-question.md"
    expectation: "must_trigger"
  - file: "cases/should-not/unrelated-coding-question.md"
    expectation: "should_not_trigger"
trials: 5
sensors:
  - type: "activation"
    target_skill: "build-eval"
scorers:
  - type: "passfail"
reporters:
  - type: "console"
"""
IX = """\
name: "skill-activation-eval"
subjects:
  - name: "claude-with-build-eval"
    runtime: {kind: mock, activation_rates: {eval-framework-question: 1.0}}
    skills: ["build-eval"]
cases:
  files:
    - {file: cases/must-activate/eval-framework-question.md, expectation: must_trigger}
    - {file: cases/should-not/unrelated-coding-question.md, expectation: should_not_trigger}
trials: 5
sensors: [{kind: activation, skill: build-eval}]
scorers: [majority]
reporters: [console]
"""


def _lab(lab: Path, name: str, text: str) -> Path:
    write(lab / "skills" / "build-eval" / "SKILL.md",
          "---\nname: build-eval\ndescription: Build an eval framework; use when asked to "
          "set up evals.\n---\nBody.\n")
    d = lab / name
    write(d / "experiment.yaml", text)
    # the RFC's case files: plain Markdown, the expectation in experiment.yaml
    write(d / "cases" / "must-activate" / "eval-framework-question.md",
          "How do I set up an eval framework for my skill?\n")
    write(d / "cases" / "should-not" / "unrelated-coding-question.md",
          "Reverse a linked list in Python.\n")
    return d


def test_normalise_rewrites_each_rfc_field_and_says_so():
    data, notes = normalise({"name": "x", "probes": [{"file": "a.md", "expectation":
                                                       "must_trigger"}],
                             "sensors": [{"type": "activation", "target_skill": "s"}],
                             "scorers": [{"type": "passfail"}, "any"],
                             "reporters": [{"type": "console"}, {"kind": "md"}]})
    assert data == {"name": "x", "cases": {"files": [{"file": "a.md",
                                                      "expectation": "must_trigger"}]},
                    "sensors": [{"kind": "activation", "skill": "s"}],
                    "scorers": [{"kind": "majority"}, "any"],
                    "reporters": [{"kind": "console"}, {"kind": "md"}]}
    assert [field for field, _ in notes] == ["probes", "sensors[0]", "scorers[0]",
                                             "reporters[0]"]
    assert normalise(data) == (data, [])     # ix's own spelling is left as it is


def test_the_rfc_spelling_plans_the_same_run_as_ix_s_with_a_note_per_field(lab):
    rfc, own = _lab(lab, "rfc", RFC), _lab(lab, "own", IX)
    plan_rfc, plan_own = api.plan(api.load(rfc, lab)), api.plan(api.load(own, lab))
    assert [(c.id, c.expectation, c.prompt) for c in plan_rfc.cases] == \
        [(c.id, c.expectation, c.prompt) for c in plan_own.cases] == [
            ("eval-framework-question", "must_trigger",
             "How do I set up an eval framework for my skill?"),
            ("unrelated-coding-question", "should_not_trigger",
             "Reverse a linked list in Python.")]
    assert plan_rfc.loaded.spec.sensors == plan_own.loaded.spec.sensors
    assert plan_rfc.loaded.spec.scorers == [{"kind": "majority"}]
    notes = {w.field: w.message for w in design_warnings(plan_rfc) if w.code == "rfc-spelling"}
    assert set(notes) == {"probes", "sensors[0]", "scorers[0]", "reporters[0]"}
    assert "{kind: activation, skill: build-eval}" in notes["sensors[0]"]
    assert not [w for w in design_warnings(plan_own) if w.code == "rfc-spelling"]
    (result,) = api.run(lab, ["rfc"])
    assert result.summary["metrics"]["tp"] == 1 and result.summary["metrics"]["tn"] == 1
    assert (Path(result.run_dir) / "report.txt").is_file()


@pytest.mark.parametrize(("probes", "field", "words"), [
    ("[{file: cases/nowhere.md, expectation: must_trigger}]", "cases.files[0].file",
     "not found"),
    ("[{file: ../elsewhere.md, expectation: must_trigger}]", "cases.files[0].file",
     "inside the experiment"),
    ("[{file: cases/should-not/unrelated-coding-question.md, expectation: maybe}]",
     "cases.files[0].expectation", "must_trigger"),
])
def test_a_bad_probe_is_refused_naming_the_field(lab, probes, field, words):
    d = _lab(lab, "bad", RFC.split("probes:")[0] + f"probes: {probes}\ntrials: 5\n")
    write(lab / "elsewhere.md", "outside\n")
    plan, problems = api.check(d, lab)
    assert plan is None
    rendered = [p.render() for p in problems]
    hit = [r for r in rendered if f"{d / 'experiment.yaml'}: {field}" in r]
    assert hit and words in hit[0], rendered


def test_ix_validate_notes_the_rfc_spelling_and_strict_refuses_it(lab):
    d = _lab(lab, "rfc", RFC)
    r = run_ix("validate", "rfc", cwd=lab)
    assert r.code == 0, r
    assert (f"ix: warning: {d / 'experiment.yaml'}: probes: the RFC's spelling, read as "
            "ix's: cases: {files: [{file: ..., expectation: ...}]}") in r.stderr
    assert "sensors[0]: the RFC's spelling, read as ix's: {kind: activation, skill: " \
           "build-eval}" in r.stderr
    assert r.stderr.count("[rfc-spelling]") == 4
    assert run_ix("validate", "rfc", "--strict", cwd=lab).code == 2
