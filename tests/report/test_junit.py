"""`ix report --format junit`: the goal (and with --per-case each case) as JUnit test cases
that validate against the schema CI systems read (tests/fixtures/junit/junit.xsd)."""

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema

from conftest import REPO, comparison_experiment, ix_in_process, run_ix

XSD = REPO / "tests" / "fixtures" / "junit" / "junit.xsd"
GOAL = """goal:
  hypothesis: the variant {word} recall
  metric: recall
  compare: [control, variant]
  direction: {direction}
  min_effect: 0.1
"""


@pytest.fixture(scope="module")
def schema() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(str(XSD))


def _lab(tmp: Path, direction: str, word: str) -> tuple[Path, str]:
    lab = tmp / "lab"
    lab.mkdir()
    comparison_experiment(lab, n_must=10, n_not=4, trials=5, control=0.95,
                          variants={"variant": 0.2},
                          goal=GOAL.format(direction=direction, word=word))
    r = ix_in_process("run", "--lab", str(lab), "--json")
    assert r.code in (0, 1), r.output
    return lab, json.loads(r.stdout)["run_id"]


def _junit(lab: Path, run: str, *args: str) -> str:
    r = ix_in_process("report", run, "--lab", str(lab), "--format", "junit", *args)
    assert r.code == 0, r.output
    return r.stdout


def test_a_refuted_goal_is_a_failure_carrying_the_verdict_and_validates(tmp_path, schema):
    lab, run = _lab(tmp_path, "increase", "improves")
    text = _junit(lab, run)
    schema.validate(text)
    suite = ET.fromstring(text).find("testsuite")
    assert suite is not None and suite.get("name") == "e"
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("1", "1", "0")
    [case] = suite.findall("testcase")
    assert case.get("name") == "goal: the variant improves recall"
    failure = case.find("failure")
    assert failure is not None and failure.get("type") == "refuted"
    assert failure.get("message", "").startswith("REFUTED — goal: the variant improves recall")
    assert "P(supported)" in (failure.text or "")
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["ix.run_id"] == run and props["ix.subject.variant"].startswith("recall ")


def test_per_case_adds_a_case_per_subject_failing_where_the_vote_is_wrong(tmp_path, schema):
    lab, run = _lab(tmp_path, "decrease", "degrades")
    text = _junit(lab, run, "--per-case")
    schema.validate(text)
    suite = ET.fromstring(text).find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    assert cases[0].get("name") == "goal: the variant degrades recall"
    assert not list(cases[0])  # supported: passed
    per_case = cases[1:]
    assert len(per_case) == 2 * 14
    assert {c.get("classname") for c in per_case} == {"e.control", "e.variant"}
    failed = [c for c in per_case if c.find("failure") is not None]
    assert failed and all(c.get("classname") == "e.variant" for c in failed)
    assert all(c.get("name", "").startswith("must-") for c in failed)
    message = failed[0].find("failure").get("message")  # type: ignore[union-attr]
    assert message.startswith("must case: the majority vote is wrong (")
    assert suite.get("failures") == str(len(failed))


def test_the_xsd_has_teeth(schema):
    """A test case without a classname, and a suite without its counts, are refused."""
    with pytest.raises(xmlschema.XMLSchemaValidationError):
        schema.validate('<testsuites><testsuite name="x" tests="1" failures="0" errors="0" '
                        'time="0" timestamp="2024-01-01T00:00:00" hostname="h" id="0" '
                        'package="p"><properties/><testcase name="a" time="0"/>'
                        '<system-out/><system-err/></testsuite></testsuites>')
    with pytest.raises(xmlschema.XMLSchemaValidationError):
        schema.validate('<testsuites><testsuite name="x"><properties/><system-out/>'
                        '<system-err/></testsuite></testsuites>')


def test_report_writes_junit_to_a_file_and_refuses_per_case_without_it(tmp_path, schema):
    """The real command: --format junit --out, and --per-case with another format (exit 2)."""
    lab, run = _lab(tmp_path, "increase", "improves")
    out = tmp_path / "junit.xml"
    done = run_ix("report", run, "--lab", str(lab), "--format", "junit", "--per-case",
                  "--out", str(out))
    assert done.code == 0, done.output
    schema.validate(str(out))
    refused = ix_in_process("report", run, "--lab", str(lab), "--per-case")
    assert refused.code == 2 and "--per-case" in refused.output
