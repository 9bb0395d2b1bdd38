"""A sweep through `ix`: the grid in the dry run, every condition run and compared with the
control, the summary's `sweep` block, the sweep table with P(best). The run (exit 0, its table
at 80 columns) and the HTML report written to a file go through the real `ix` (`run_ix`); the
dry run and the JSON and Markdown reports through `ix_in_process`."""

import json

from conftest import ix_in_process, run_ix, write
from ix.eval.schemas import summary_problems


def sweep_lab(lab):
    for name in ("csv", "sheets"):
        write(lab / "skills" / name / "SKILL.md",
              f"---\nname: {name}\ndescription: Skill {name}.\n---\nx\n")
    exp = lab / "e"
    write(exp / "experiment.yaml", """
        name: e
        trials: 4
        sensor: {kind: activation, skill: csv}
        subjects:
          - name: base
            skills: [csv, sheets]
            runtime: {kind: mock, default_rate: 0.5}
        sweep:
          default_rate: [0.1, 0.95]
          ablate: skills
        """)
    for i in range(8):
        write(exp / "cases" / f"must-{i}.md", f"---\nexpectation: must_trigger\n---\nm {i}\n")
        write(exp / "cases" / f"not-{i}.md",
              f"---\nexpectation: should_not_trigger\n---\nn {i}\n")
    return exp


def test_a_sweep_is_planned_run_summarised_and_reported(lab):
    exp = sweep_lab(lab)
    dry = ix_in_process("run", "--lab", str(lab), "--dry-run", "--json")
    assert dry.code == 0, dry.output
    [plan] = json.loads(dry.stdout)
    assert plan["grid"] == ("sweep of base: 2 default_rate × (all skills, or 2 left out) = "
                            "6 condition(s) + base: 7 subjects")
    assert not (exp / "results").exists()

    r = run_ix("run", "--lab", str(lab), env={"COLUMNS": "80"})
    assert r.code == 0, r.output
    assert "sweep of base: 2 default_rate × (all skills, or 2 left out)" in r.stdout
    assert "base[default_rate=0.95,-sheets]" in r.stdout and "P(best)" in r.stdout
    summary = json.loads((exp / "results" / "summary-latest.json").read_text())
    assert summary_problems(summary) == []
    sweep = summary["sweep"]
    assert (sweep["subject"], sweep["keys"], sweep["ablate"]) == (
        "base", {"default_rate": [0.1, 0.95]}, ["csv", "sheets"])
    assert [c["subject"] for c in sweep["conditions"]] == [
        "base", "base[default_rate=0.1]", "base[default_rate=0.1,-csv]",
        "base[default_rate=0.1,-sheets]", "base[default_rate=0.95]",
        "base[default_rate=0.95,-csv]", "base[default_rate=0.95,-sheets]"]
    # every condition is compared with the control, Holm-adjusted across them
    assert [c["variant"] for c in summary["comparisons"]] == [
        c["subject"] for c in sweep["conditions"][1:]]

    report = json.loads(ix_in_process("report", "--lab", str(lab), "--json", cwd=exp).stdout)
    table = report["sweep"]
    assert [row["subject"] for row in table["rows"]] == [
        c["subject"] for c in sweep["conditions"]]
    assert abs(sum(row["p_best"] for row in table["rows"]) - 1) < 1e-3
    low = next(row for row in table["rows"] if row["subject"] == "base[default_rate=0.1]")
    assert table["best"]["subject"].startswith("base[default_rate=0.95")
    assert low["p_best"] < 0.01
    page = lab / "report.html"
    assert run_ix("report", "--lab", str(lab), "--format", "html", "--out", str(page),
                  cwd=exp).code == 0
    text = page.read_text()
    section = text[text.index('<section id="sweep">'):]
    section = section[:section.index("</section>")]
    assert section.count('class="bar"') == 7
    assert all(f'<td class="name">{row["subject"]}</td>' in section for row in table["rows"])
    md = ix_in_process("report", "--lab", str(lab), "--format", "md", cwd=exp)
    assert "## Sweep of base" in md.stdout and "| base[default\\_rate=0.1,-csv] |" in md.stdout
