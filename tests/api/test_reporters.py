"""`reporters:` (`ix.api.reporters`): at the end of a run each named output is written into
the run folder, named after its format, with what `ix report --format` makes of the same run;
a bad reporter is refused before anything runs."""

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import mock_experiment, run_ix
from ix import api
from ix.report.outputs import report_text

RATES = {"must-001": 0.4, "must-002": 0.9, "must-003": 0.1,
         "not-001": 0.3, "not-002": 0.0, "not-003": 0.6}
ALL = "reporters: [console, md, html, json, {kind: junit, per_case: true}, github]\n"


def test_each_reporter_writes_its_format_into_the_run_folder(lab):
    mock_experiment(lab, "every", rates=RATES, extra_yaml=ALL + "scorers: [all]\n")
    (result,) = api.run(lab, ["every"])
    folder = Path(result.run_dir)
    data = api.reports.report(lab, str(folder))
    for fmt, suffix in (("md", "md"), ("github", "github.md"), ("table", "txt")):
        assert (folder / f"report.{suffix}").read_text() == report_text(fmt, data), fmt
    assert json.loads((folder / "report.data.json").read_text()) == json.loads(
        json.dumps(data, default=str))
    suites = ET.fromstring((folder / "report.junit.xml").read_text())
    cases = [c.get("name") for c in suites.iter("testcase")]
    assert any("must-001" in (name or "") for name in cases), cases   # per_case: true
    assert (folder / "report.html").read_text().lstrip().lower().startswith("<!doctype html")
    text = (folder / "report.txt").read_text()
    assert result.run_id in text and "scorer all" in text
    assert "(the case's verdict by the all scorer)" in text
    assert " · scorer all" in (folder / "report.md").read_text().splitlines()[2]
    # the run's own report.json (what `ix report` reads) is untouched by the json reporter
    assert json.loads((folder / "report.json").read_text()) != json.loads(
        (folder / "report.data.json").read_text())


def test_without_reporters_the_run_folder_holds_no_report_file(lab):
    mock_experiment(lab, "none", rates=RATES)
    (result,) = api.run(lab, ["none"])
    assert not list(Path(result.run_dir).glob("report.*.*"))
    assert not list(Path(result.run_dir).glob("report.md"))


@pytest.mark.parametrize(("yaml", "field", "words"), [
    ("reporters: [pdf]", "reporters[0].kind", "built-in: console, md, html, json, junit"),
    ("reporters: [md, {kind: md}]", "reporters[1].kind", "named twice"),
    ("reporters: [{kind: md, wide: true}]", "reporters[0].wide", "takes no option"),
    ("reporters: [{kind: junit, per_case: yes please}]", "reporters[0].per_case",
     "true or false"),
    ("reporters: md", "reporters", ""),
])
def test_a_bad_reporter_is_refused_before_anything_runs(lab, yaml, field, words):
    path = mock_experiment(lab, "bad", rates=RATES, extra_yaml=yaml + "\n")
    plan, problems = api.check(path, lab)
    rendered = [p.render() for p in problems]
    assert plan is None
    hit = [r for r in rendered if f"{path / 'experiment.yaml'}: {field}:" in r]
    assert hit and words in hit[0], rendered
    assert not (path / "results").exists()


def test_ix_run_writes_the_reporters_files_and_refuses_a_bad_one(lab):
    mock_experiment(lab, "cli", rates=RATES,
                    extra_yaml="reporters: [md, {kind: junit}]\n")
    r = run_ix("run", "cli", cwd=lab)
    assert r.code == 0, r
    [folder] = (lab / "cli" / "results" / "runs").iterdir()
    assert (folder / "report.md").read_text().startswith("# cli · run ")
    assert ET.fromstring((folder / "report.junit.xml").read_text()).tag == "testsuites"
    bad = mock_experiment(lab, "bad", rates=RATES, extra_yaml="reporters: [{kind: pdf}]\n")
    r = run_ix("run", "bad", cwd=lab)
    assert r.code == 2, r
    assert (f"{bad / 'experiment.yaml'}: reporters[0].kind: unknown reporter 'pdf'"
            in r.stderr), r.stderr
    assert "Traceback" not in r.stderr and not (bad / "results").exists()
