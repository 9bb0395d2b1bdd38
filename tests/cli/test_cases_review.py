"""Generated cases with review (issue 38): a `generate` probe asks a model (here a real
program behind the `command` runtime) for must, should-not and near-miss prompts for the
experiment's skill; they are drafts that never run until `ix cases review` accepts them
(over a pipe, through the real `ix`), or `ix run --include-drafts` runs them as they are."""

import json
import sys
from pathlib import Path

from conftest import ix_in_process, run_ix, write

GENERATOR = """
import json, sys
with open(__file__ + ".calls", "a") as f:
    f.write("x")
print(json.dumps({"must": ["Summarize sales.csv", "Profile orders.csv"],
                  "should_not": ["Write a haiku"], "near_miss": ["Open an Excel file"]}))
"""


def experiment(lab: Path) -> Path:
    write(lab / "skills" / "csv-summary" / "SKILL.md",
          "---\nname: csv-summary\ndescription: Summarize CSV files.\n---\n# CSV\n")
    exp = lab / "gen"
    write(exp / "generator.py", GENERATOR)
    write(exp / "experiment.yaml", f"""
        name: gen
        sensor: {{kind: activation, skill: csv-summary}}
        trials: 1
        runtime: {{kind: command, argv: [{json.dumps(sys.executable)},
                                        {json.dumps(str(exp / "generator.py"))}]}}
        subjects:
          - {{name: s, skills: [csv-summary], runtime: {{kind: mock, default_rate: 1.0}}}}
        probe: {{kind: generate, from: skill, n: 2, runtime: command}}
        """)
    write(exp / "cases" / "must-001.md", "---\nexpectation: must_trigger\n---\nSummarize a.csv\n")
    return exp


def ran(exp: Path) -> list[str]:
    return sorted({json.loads(x)["probe_id"] for x in (exp / "results" / "trials.jsonl")
                   .read_text().splitlines()})


def test_drafts_wait_for_review_and_accepted_ones_run(lab: Path):
    exp = experiment(lab)
    r = ix_in_process("run", "--lab", str(lab), "gen")
    assert r.code in (0, 1), r.output
    assert "4 generated draft case(s) wait for review" in " ".join(r.stderr.split())
    assert ran(exp) == ["must-001"]  # no draft ran

    # accept the first must, drop the second, skip the should-not, accept the near miss
    r = run_ix("cases", "review", "gen", "--lab", str(lab), stdin="y\nn\ns\ny\n")
    assert r.code == 0, r.output
    assert "accepted 2, dropped 1; 1 draft(s) still wait" in " ".join(r.stdout.split())
    accepted = (exp / "cases" / "gen-must-001.md").read_text()
    assert "expectation: must_trigger" in accepted and "generated_by: generate" in accepted
    assert "status" not in accepted and accepted.endswith("Summarize sales.csv\n")
    assert (exp / "cases" / "gen-near-001.md").exists()
    assert not (exp / "cases" / "gen-must-002.md").exists()

    # the accepted cases run; the skipped draft waits; the model was asked once in all
    r = ix_in_process("run", "--lab", str(lab), "gen")
    assert r.code in (0, 1), r.output
    assert ran(exp) == ["gen-must-001", "gen-near-001", "must-001"]
    assert "1 generated draft case(s) wait" in " ".join(r.stderr.split())
    # --include-drafts runs the one still waiting, never the dropped one
    r = ix_in_process("run", "--lab", str(lab), "gen", "--include-drafts")
    assert r.code in (0, 1), r.output
    assert "gen-not-001" in ran(exp) and "gen-must-002" not in ran(exp)
    assert (exp / "generator.py.calls").read_text() == "x"


def test_a_generate_probe_needs_one_source(lab: Path):
    exp = experiment(lab)
    yaml = (exp / "experiment.yaml").read_text()
    (exp / "experiment.yaml").write_text(yaml.replace("from: skill, ", ""))
    r = ix_in_process("run", "--lab", str(lab), "gen")
    assert r.code == 2 and "probe.from" in r.stderr, r.output
