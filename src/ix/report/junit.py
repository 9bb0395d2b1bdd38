"""JUnit XML for `ix report --format junit`: a run's goal (and, with `per_case`, each case of
each subject) as test cases that a CI system shows beside its other tests (docs/reports.md).

One `<testsuite>` per run (named after its experiment) inside `<testsuites>`. The goal is one
test case: it passes when supported, fails when refuted (the verdict's sentences are the
failure's message and text), is skipped when inconclusive (the run's exit code is 0 then too)
and errors when there is no verdict (the compared subjects did not run). Without a goal, each
subject is a test case that errors only when every trial of it errored. With `--baseline`,
the baseline is one more test case, failing on a regression. With `per_case`, each (subject,
case) is a test case that fails when the case's majority vote is wrong and errors when no
trial of it stood.

The attributes are those both schemas CI systems read ask for (Jenkins' and Ant's
`junit.xsd`): a suite's counts, time, timestamp (UTC, no zone), hostname, id and package, its
`properties`, `system-out` and `system-err`; each test case's name, classname and time, with
at most one outcome inside.
"""

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ix.report.terminal import ci, fmt

#: What XML 1.0 cannot hold (control characters but tab and line breaks, lone surrogates,
#: U+FFFE and U+FFFF): replaced by U+FFFD, so a case id or a model's text never breaks the file.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_EXPECT = {"must_trigger": "must", "should_not_trigger": "should not",
           "acceptable": "acceptable"}


def _x(value: Any) -> str:
    return _NOT_XML.sub("\ufffd", str(value))


def _when(stamp: str | None) -> datetime | None:
    try:
        when = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        return None
    return when.astimezone(UTC) if when.tzinfo else when


def _seconds(run: Mapping[str, Any]) -> float:
    start, end = _when(run.get("started_at")), _when(run.get("finished_at"))
    if start is None or end is None:
        return 0.0
    return max(0.0, (end - start).total_seconds())


class _Suite:
    """One `<testsuite>` being filled: its test cases and their counts."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.cases: list[ET.Element] = []
        self.counts = {"failures": 0, "errors": 0, "skipped": 0}

    def case(self, name: str, classname: str, outcome: str | None = None,
             message: str = "", text: str = "", kind: str = "") -> None:
        """A test case; `outcome`: None (passed), failure, error or skipped."""
        element = ET.Element("testcase", {"name": _x(name), "classname": _x(classname),
                                          "time": "0"})
        if outcome is not None:
            child = ET.SubElement(element, outcome, {"message": _x(message),
                                                     "type": _x(kind or outcome)})
            child.text = _x(text or message)
            self.counts[outcome if outcome == "skipped" else outcome + "s"] += 1
        self.cases.append(element)


def report_junit(report: Mapping[str, Any], *, per_case: bool = False) -> str:
    """`report` (`ix report --format json`'s data) as a JUnit XML document."""
    run, screen = report["run"], report.get("screen") or {}
    experiment = str(run["experiment"])
    suite = _Suite(experiment)
    _goal(suite, experiment, report.get("goal"), list(screen.get("verdict") or []),
          screen.get("subjects") or [])
    baseline = report.get("baseline")
    if baseline:
        _baseline(suite, experiment, baseline)
    if per_case:
        _cases(suite, experiment, report["summary"])
    start = _when(run.get("started_at"))
    attrs = {"name": _x(experiment), "tests": str(len(suite.cases)),
             **{k: str(v) for k, v in suite.counts.items()},
             "time": f"{_seconds(run):.3f}",
             "timestamp": (start or datetime(1970, 1, 1)).strftime("%Y-%m-%dT%H:%M:%S"),
             "hostname": "localhost", "id": "0", "package": "ix"}
    root = ET.Element("testsuites", {"name": "ix", "tests": attrs["tests"],
                                     "failures": attrs["failures"], "errors": attrs["errors"],
                                     "time": attrs["time"]})
    element = ET.SubElement(root, "testsuite", attrs)
    properties = ET.SubElement(element, "properties")
    for name, value in _properties(report):
        ET.SubElement(properties, "property", {"name": name, "value": _x(value)})
    element.extend(suite.cases)
    ET.SubElement(element, "system-out").text = _x("\n".join(screen.get("verdict") or [])
                                                   or "no goal stated")
    ET.SubElement(element, "system-err").text = ""
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"


def _properties(report: Mapping[str, Any]) -> list[tuple[str, str]]:
    run, screen = report["run"], report.get("screen") or {}
    props = [("ix.run_id", run["run_id"]), ("ix.experiment", run["experiment"]),
             ("ix.status", run.get("status") or "n/a"), ("ix.metric", report["metric"])]
    for row in screen.get("subjects") or []:
        props.append((f"ix.subject.{row['name']}",
                      f"{screen.get('metric_label', report['metric'])} {fmt(row['value'])} "
                      f"{ci(row['ci'])} ({row['n']} {row['unit']}; {row['status']})"))
    return props


def _goal(suite: _Suite, experiment: str, goal: Mapping[str, Any] | None,
          verdict: list[str], subjects: list[Mapping[str, Any]]) -> None:
    if not goal:
        for row in subjects:
            errored = row["status"] == "all trials errored"
            suite.case(f"subject {row['name']}", experiment, "error" if errored else None,
                       f"every trial of {row['name']} errored", kind="errored")
        return
    name = f"goal: {goal.get('hypothesis') or goal.get('metric') or 'the goal'}"
    word = goal.get("verdict")
    text = "\n".join(verdict)
    head = verdict[0] if verdict else str(word)
    if word == "refuted":
        suite.case(name, experiment, "failure", head, text, "refuted")
    elif word == "inconclusive":
        suite.case(name, experiment, "skipped", head, text, "inconclusive")
    elif word != "supported":
        suite.case(name, experiment, "error", " ".join(verdict[:2]) or "no verdict", text,
                   "no verdict")
    else:
        suite.case(name, experiment)


def _baseline(suite: _Suite, experiment: str, b: Mapping[str, Any]) -> None:
    name = f"baseline {b['tag']} ({b['run']})"
    if not b["regressed"]:
        suite.case(name, experiment)
        return
    lines = [f"{r['subject']} {r['metric']}: {fmt(r['before'])} -> {fmt(r['after'])}, "
             f"difference {fmt(r['diff'])} {ci(r['diff_ci'])}, p worse (Holm) "
             f"{fmt(r['p_worse_holm'])}" for r in b["regressions"]]
    suite.case(name, experiment, "failure",
               f"{len(lines)} regression(s) against {b['tag']} ({b['rule']})",
               "\n".join(lines), "regression")


def _cases(suite: _Suite, experiment: str, summary: Mapping[str, Any]) -> None:
    for subject in summary["subjects"]:
        for row in summary["cases"]:
            cell = row["by_subject"].get(subject)
            if cell is None:
                continue
            expect = _EXPECT.get(row["expectation"], row["expectation"])
            counted = f"{cell['passed']}/{cell['n']} trials passed"
            classname = f"{experiment}.{subject}"
            if cell["score"] is None:
                suite.case(row["probe_id"], classname, "error",
                           f"no trial stood ({cell['errors']} errored)", kind="errored")
            elif not cell["correct"]:
                suite.case(row["probe_id"], classname, "failure",
                           f"{expect} case: the majority vote is wrong ({counted}, score "
                           f"{fmt(cell['score'])} {ci(cell['score_ci'])})", kind="wrong")
            else:
                suite.case(row["probe_id"], classname)
