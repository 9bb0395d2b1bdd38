"""`ix.Experiment(scorers=..., reporter=...)`: the same as experiment.yaml's `scorers:` and
`reporters:` — kinds and mappings written into the folder, user objects used in memory."""

from pathlib import Path

import pytest

import ix
from ix import api
from ix.domain.errors import ConfigError

CASES = [{"id": "must-001", "expectation": "must_trigger", "prompt": "hello"},
         {"id": "must-002", "expectation": "must_trigger", "prompt": "hello again"},
         {"id": "not-001", "expectation": "should_not_trigger", "prompt": "bye"}]
RUNTIME = {"kind": "mock", "activation_rates": {"must-001": 0.4, "must-002": 0.9,
                                                "not-001": 0.3}}


def _experiment(lab: Path, name: str, **kw) -> ix.Experiment:
    return ix.Experiment(name, cases=CASES, runtime=RUNTIME, skill="target", trials=5,
                         lab=lab, **kw)


def test_scorers_and_reporter_as_kinds_equal_the_yaml_keys(tmp_path):
    outcome = _experiment(tmp_path, "kinds", scorers=["any"],
                          reporter=["md", {"kind": "junit", "per_case": True}]).run()
    text = (tmp_path / "kinds" / "experiment.yaml").read_text()
    assert "scorers:\n- any\n" in text and "reporters:\n- md\n- kind: junit\n" in text
    assert outcome.summary["scorer"] == {"kind": "any"}
    folder = Path(outcome.result.run_dir)
    assert (folder / "report.md").is_file() and (folder / "report.junit.xml").is_file()
    # `ix run` of the folder it wrote decides the same way
    (again,) = api.run(tmp_path, ["kinds"])
    assert again.summary["probe_results"] == outcome.summary["probe_results"]


def test_a_scorer_object_and_a_reporter_object_are_used_in_memory(tmp_path):
    class AtLeastTwo:
        def verdict(self, case):
            return case.right >= 2

    class Keep:
        def __init__(self):
            self.runs = []

        def write(self, report, folder):
            self.runs.append((report["run"]["run_id"], Path(folder)))

    keep = Keep()
    outcome = _experiment(tmp_path, "objects", scorers=[AtLeastTwo()], reporter=keep).run()
    assert keep.runs == [(outcome.run_id, Path(outcome.result.run_dir))]
    for p in outcome.summary["probe_results"]:
        right = p["passed"] if p["expectation"] == "must_trigger" else p["n"] - p["passed"]
        assert p["correct"] == (right >= 2)
    text = (tmp_path / "objects" / "experiment.yaml").read_text()
    assert "kind: python" in text and "AtLeastTwo" in text
    # the folder alone cannot run it: the object lives only in this program
    plan, problems = api.check(tmp_path / "objects", tmp_path)
    assert plan is None and any("scorers[0].kind" in p.render() for p in problems)


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"scorers": [object()]}, "scorer"),
    ({"reporter": object()}, "reporter"),
    ({"scorers": [{"kind": "threshold", "at": 3}]}, "scorers[0].at"),
    ({"reporter": "pdf"}, "reporters[0].kind"),
])
def test_bad_scorers_and_reporters_name_the_argument(tmp_path, kwargs, field):
    with pytest.raises(ConfigError) as caught:
        _experiment(tmp_path, "bad", **kwargs).run()
    assert caught.value.field == field
