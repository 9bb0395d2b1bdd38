"""Every sensor in the reports (issue 20): with several sensors, `ix run` and `ix report`
(table, md, html) show each one's pass rate per subject and its difference per variant, at 80
columns without cutting a value; a capability experiment is worded with "pass rate", never
"activation"."""

import json
import re
from pathlib import Path

import pytest
from rich.cells import cell_len

from conftest import ix_in_process, run_ix, write

NARROW = {"COLUMNS": "80"}


BASELINE = "{must-001: 0.8, must-002: 0.6, not-001: 0.2}"
CANDIDATE = "{must-001: 0.4, must-002: 1.0, not-001: 0.0}"


def _experiment(lab: Path, sensors: str) -> Path:
    d = lab / "agent"
    write(d / "experiment.yaml", f"""
        name: agent
        trials: 5
        subjects:
          - name: baseline-agent
            runtime: {{kind: mock, skill: target, activation_rates: {BASELINE}}}
          - name: candidate-agent
            runtime: {{kind: mock, skill: target, activation_rates: {CANDIDATE}}}
        sensors:
        {sensors}
        """.replace("\n        ", "\n"))
    for c in ("must-001", "must-002"):
        write(d / "cases" / f"{c}.md", f"---\nexpectation: must_trigger\n---\nDo {c}\n")
    write(d / "cases" / "not-001.md", "---\nexpectation: should_not_trigger\n---\nNo\n")
    return d


SEVERAL = """  - {kind: tool_count, tool: Skill, min: 1}
  - denied
  - {kind: tool_sequence, expected: [Skill], mode: exact}"""


@pytest.fixture(scope="module")
def several(tmp_path_factory: pytest.TempPathFactory) -> dict:
    lab = tmp_path_factory.mktemp("report") / "lab"
    d = _experiment(lab, SEVERAL)
    r = run_ix("run", "agent", "--lab", str(lab), "--progress", "none", "--detail", env=NARROW)
    assert r.code in (0, 1), r.output
    summary = json.loads((d / "results" / "summary-latest.json").read_text())
    return {"lab": lab, "summary": summary, "run_output": r.stdout}


def _cells(summary: dict) -> list[str]:
    """Each subject's pass-rate cell of each sensor, as the tables print it."""
    out = []
    for block in summary["subjects"]:
        for s in block["sensors"].values():
            lo, hi = s["rate_ci"]
            out.append(f"{s['rate']:.2f} [{lo:.2f}, {hi:.2f}] {s['passed']}/{s['n']}")
    return out


def _narrow(text: str) -> None:
    """No line wider than 80 columns but a file's path, printed whole to be pasted (alone on
    its line, or beside its label)."""
    too_wide = [line for line in text.splitlines() if cell_len(line) > 80
                and not (len(line.split()) <= 2 and line.split()[-1].startswith("/"))]
    assert not too_wide, too_wide
    assert "…" not in text


def test_report_table_shows_every_sensor_at_80_columns_whole(several):
    # the real command (exit 0, its table at 80 columns); the `ix run` of `several` is real too
    r = run_ix("report", "--lab", str(several["lab"]), "--format", "table", env=NARROW)
    assert r.code == 0, r.output
    _narrow(r.stdout)
    assert "pass rate per sensor" in r.stdout
    for cell in _cells(several["summary"]):
        assert cell in r.stdout, cell  # never cut, never wrapped inside
    # the variant's difference per sensor, under its own row
    assert "sensor pass rate" in r.stdout
    for name in ("tool_count", "denied", "tool_sequence"):
        assert re.search(rf"^\s*{name}\s", r.stdout, re.M), name
    # their p is Holm-adjusted across variants × sensors, and the table says so (issue 32)
    assert "sensor pass rates: p Holm-adjusted across every variant × sensor" in r.stdout


def test_capability_experiment_reads_pass_rate_not_activation(several):
    r = ix_in_process("report", "--lab", str(several["lab"]), "--format", "table", env=NARROW)
    assert "summary: pass rate [95% CI]" in r.stdout
    assert "pass rate (must)" in r.stdout
    assert "activation" not in r.stdout.lower()
    run_output = several["run_output"]
    _narrow(run_output)
    assert "activation" not in run_output.lower()
    assert "pass rate (must)" in run_output
    for block in several["summary"]["subjects"]:
        for issue in block["interpretation"]["issues"]:
            assert "skill" not in issue and "sensor" in issue


def test_run_output_lists_every_sensor_of_each_subject(several):
    out = several["run_output"]
    for cell in _cells(several["summary"]):
        assert cell in out
    assert out.count("sensor tool_count: pass rate") == 2
    assert "(decides the trial)" in out
    assert "sensor pass rates: p Holm-adjusted across every variant × sensor" in out


def test_markdown_and_html_show_the_sensor_tables(several, tmp_path: Path):
    md = ix_in_process("report", "--lab", str(several["lab"]), "--format", "md")
    assert md.code == 0, md.output
    assert "## Sensors" in md.stdout and "Pass rate [95% CI]" in md.stdout
    assert "| sensor | baseline-agent | candidate-agent |" in md.stdout
    assert "sensor denied pass rate" in md.stdout
    assert "(variants × sensors)" in md.stdout  # the sensors' p: one Holm family (issue 32)
    assert "Sensor pass rates: p Holm-adjusted across every variant × sensor at once" in md.stdout
    for cell in _cells(several["summary"]):
        assert cell in md.stdout
    page = tmp_path / "r.html"
    html = ix_in_process("report", "--lab", str(several["lab"]), "--format", "html",
                         "--out", str(page))
    assert html.code == 0, html.output
    text = page.read_text()
    assert "Pass rate per sensor" in text and "Pass rate per case and subject" in text
    assert "<td>sensor tool_sequence</td>" in text
    assert "p Holm-adjusted across every variant × sensor at once" in text
    for cell in _cells(several["summary"]):
        assert cell in text


def test_one_sensor_gets_no_sensor_table(tmp_path: Path):
    lab = tmp_path / "lab"
    d = _experiment(lab, "  - {kind: activation, skill: target}")
    assert ix_in_process("run", "agent", "--lab", str(lab), "--progress", "none").code in (0, 1)
    summary = json.loads((d / "results" / "summary-latest.json").read_text())
    assert list(summary["subjects"][0]["sensors"]) == ["activation"]
    r = ix_in_process("report", "--lab", str(lab), "--format", "table", env=NARROW)
    assert r.code == 0, r.output
    assert "pass rate per sensor" not in r.stdout
    assert "sensor pass rate" not in r.stdout
    assert "summary: activation rate" in r.stdout
