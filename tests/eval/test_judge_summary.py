"""The summary's `judges` block (issue 36): a judge repeated to separate its own noise, a
panel of judges in agreement, people's labels (a file, or a person judging through the
`human` runtime) checking them. The judges are real programs behind the `command` runtime
whose answers are scripted with a known truth and a known noise."""

import json
import sys
from pathlib import Path

import pytest

from conftest import ix_in_process, run_ix, too_wide, write
from ix.eval.judge_summary import judges_block
from ix.report.judge_text import caveat_lines, flip_line, judge_lines
from ix.stats import judges as stats

#: Each output's true score is in its case's prompt (`truth=N`); the judge adds a noise of
#: ±1 drawn from (prompt, attempt): within-output variance 1 on the 0-10 scale. It counts
#: its calls in `calls.txt` beside it.
NOISY = """
import hashlib, json, pathlib, re, sys
prompt, attempt = sys.stdin.read(), sys.argv[1]
with open(pathlib.Path(__file__).with_name("calls.txt"), "a") as f:
    f.write("x")
truth = int(re.search(r"truth=(\\d+)", prompt).group(1))
draw = hashlib.sha256((prompt + attempt).encode()).digest()[0] % 2
print(json.dumps({"scores": {"quality": truth + (1 if draw else -1)}}))
"""

#: A lenient or a strict judge: it passes an output one point above or below its truth.
SHIFTED = """
import json, re, sys
prompt, shift = sys.stdin.read(), int(sys.argv[1])
truth = int(re.search(r"truth=(\\d+)", prompt).group(1))
print(json.dumps({"scores": {"quality": max(0, min(10, truth + shift))}}))
"""


def _command(script: Path, arg: str) -> str:
    return json.dumps({"kind": "command", "argv": [sys.executable, str(script), arg],
                       "stdin": "{{ prompt }}"})


def _experiment(lab: Path, sensors: str, truths: list[int]) -> Path:
    exp = lab / "e"
    write(exp / "noisy.py", NOISY)
    write(exp / "shifted.py", SHIFTED)
    write(exp / "rubric.md", f"""---
name: graded
runtime: {_command(exp / "noisy.py", "{{ attempt }}")}
dimensions: [quality]
scale: [0, 10]
pass_threshold: 0.5
---
Grade: {{{{ probe.prompt }}}}
""")
    write(exp / "experiment.yaml", f"""
        name: e
        trials: 1
        runtime: {{kind: mock}}
        {sensors}
        """)
    for i, truth in enumerate(truths):
        write(exp / "cases" / f"c{i:02d}.md",
              f"---\nexpectation: must_trigger\n---\ncase {i} truth={truth}\n")
    return exp


def _run(lab: Path, *args: str) -> dict:
    r = ix_in_process("run", "--lab", str(lab), "e", "--json", *args)
    assert r.code in (0, 1), r.output
    return json.loads(r.stdout)


def test_repeats_separate_the_judges_noise_and_are_cached(lab: Path):
    truths = [2, 8] * 6 + [5] * 3  # the last sit on the threshold: their repeats may differ
    exp = _experiment(lab, "sensors: [{kind: llm_judge, agent: rubric.md}]\n"
                           "        judge: {repeats: 3}", truths)
    summary = _run(lab, "--cache")
    [judge] = summary["judges"]
    assert judge["repeats"] == 3 and judge["status"] == "unchecked"
    assert (exp / "calls.txt").read_text() == "x" * 3 * len(truths)

    # every reading is the mean of its three judgements, which it keeps
    lines = [json.loads(x) for x in (exp / "results" / "trials.jsonl").read_text().splitlines()]
    scores = []
    for line in lines:
        each = [r["quality"] for r in line["reading"]["metrics"]["repeats"]]
        assert line["reading"]["metrics"]["quality"] == pytest.approx(sum(each) / 3, abs=1e-6)
        truth = truths[int(line["probe_id"][1:])]
        assert {abs(x - truth) for x in each} == {1}
        scores.append([x / 10 for x in each])
    noise = judge["noise"]
    want = stats.judge_noise(scores)
    assert noise["outputs"] == len(truths)
    assert noise["score"]["within_var"] == pytest.approx(want.within_var, abs=1e-6)
    # the judge's variance is 1 point² (0.01 on the 0-1 score); the outputs' 9 (0.09)
    assert noise["dimensions"]["quality"]["within_var"] == pytest.approx(1.0, abs=0.35)
    lo, hi = noise["score"]["icc"]["ci"]
    assert lo <= 0.9 <= hi
    unsettled = sum(len({x >= 0.5 for x in each}) > 1 for each in scores)
    assert noise["unsettled"] == unsettled > 0  # truth 5 ± 1 on a threshold of 5

    # the same run again from the cache: no judge is called, the same judgements
    again = _run(lab, "--cache")
    assert (exp / "calls.txt").read_text() == "x" * 3 * len(truths)
    assert again["judges"][0]["noise"] == noise


def test_a_panel_combines_its_judges_and_reports_their_agreement(lab: Path):
    exp = lab / "e"
    panel = ("sensors:\n          - kind: panel\n            agent: rubric.md\n"
             "            combine: majority\n            judges:\n"
             f"              - {{name: lenient, runtime: {_command(exp / 'shifted.py', '1')}}}\n"
             f"              - {{name: strict, runtime: {_command(exp / 'shifted.py', '-1')}}}\n"
             f"              - {{name: exact, runtime: {_command(exp / 'shifted.py', '0')}}}")
    truths = [2, 8, 5, 6, 4, 9, 1, 5]
    _experiment(lab, panel, truths)
    summary = _run(lab)
    by = {j["name"]: j for j in summary["judges"]}
    assert list(by) == ["graded", "lenient", "strict", "exact"]
    assert by["graded"]["members"] == ["lenient", "strict", "exact"]
    # majority: at truth 5 the lenient (6) and exact (5) pass, the strict (4) does not
    lines = [json.loads(x) for x in (exp / "results" / "trials.jsonl").read_text().splitlines()]
    for line in lines:
        truth = truths[int(line["probe_id"][1:])]
        readings = {r["sensor_name"]: r for r in line["readings"]}
        assert line["reading"]["sensor_name"] == "graded"
        assert line["reading"]["passed"] is (truth >= 5)
        assert readings["graded"]["metrics"]["quality"] == pytest.approx(truth)
    verdicts = [[float(t + s >= 5) for s in (1, -1, 0)] for t in truths]
    want = stats.krippendorff_alpha(verdicts, "nominal")
    alpha = by["graded"]["alpha"]["verdicts"]
    assert alpha["value"] == pytest.approx(want.value, abs=1e-6) and alpha["value"] < 1
    assert summary["outcomes"]["metrics"].count("graded.quality") == 1


def test_a_bad_judge_block_names_its_field(lab: Path):
    _experiment(lab, "sensors: [{kind: llm_judge, agent: rubric.md}]\n"
                     "        judge: {repeats: 0}", [2, 8])
    r = ix_in_process("validate", "--lab", str(lab), "e")
    assert r.code == 2 and "judge.repeats" in r.output, r.output
    assert not (lab / "e" / "results").exists()


def _line(case: str, readings: list[dict]) -> dict:
    return {"run_id": "r", "subject": "s", "probe_id": case, "trial": 0, "error": None,
            "readings": readings, "reading": readings[0]}


def _judge(name: str, runtime: str = "command", rubric: str = "q") -> dict:
    return {"name": name, "kind": "llm_judge", "rubric": rubric, "model": None,
            "runtime": runtime, "repeats": 1, "dimensions": ["q"], "min_kappa": 0.6,
            "members": [], "combine": None, "scale": [0, 10], "pass_threshold": 0.5}


def test_a_person_judging_through_the_human_runtime_labels_the_other_judges():
    # the model judge agrees with the person on 9 of 10 outputs; a judge of another rubric
    # is not checked by them
    person = [True, True, True, False, False, True, False, True, False, False]
    model = [*person[:9], True]
    lines = [_line(f"c{i}", [
        {"sensor_name": "model", "passed": m, "score": 0.9 if m else 0.1, "metrics": {"q": 9.0}},
        {"sensor_name": "person", "passed": p, "score": 0.8 if p else 0.2,
         "metrics": {"q": 8.0 if p else 2.0}},
        {"sensor_name": "other", "passed": m, "score": 0.5, "metrics": {"q": 5.0}}])
        for i, (m, p) in enumerate(zip(model, person, strict=True))]
    block = judges_block([_judge("model"), _judge("person", "human"),
                          _judge("other", rubric="r")], lines, [])
    by = {j["name"]: j for j in block}
    assert by["person"]["status"] == "human" and by["other"]["status"] == "unchecked"
    assert by["model"]["labelled"] == 10
    want = stats.agreement(model, person)
    assert by["model"]["agreement"]["kappa"]["value"] == pytest.approx(want.kappa.value)
    assert by["model"]["status"] == ("checked" if want.kappa.value >= 0.6 else "disagrees")
    assert [s["dimension"] for s in by["model"]["scores"]] == ["q"]


def test_a_judge_below_its_min_kappa_disagrees():
    human = [True, False] * 5
    lines = [_line(f"c{i}", [{"sensor_name": "model", "passed": True, "score": 1.0,
                              "metrics": {}}]) for i in range(10)]
    labels = [{"run_id": None, "subject": None, "probe_id": f"c{i}", "trial": None,
               "sensor": "model", "dimension": None, "value": h, "labeller": "ana"}
              for i, h in enumerate(human)]
    [entry] = judges_block([_judge("model")], lines, labels)
    assert entry["status"] == "disagrees" and entry["labelled"] == 10
    [entry] = judges_block([{**_judge("model"), "min_kappa": -1.0}], lines, labels)
    assert entry["status"] == "checked"


def test_the_verdict_says_whether_its_judge_was_checked_and_the_report_shows_it(
        lab: Path, tmp_path: Path):
    truths = [2, 8, 3, 7, 1, 9, 4, 6]
    _experiment(lab, "sensors: [{kind: llm_judge, agent: rubric.md}]", truths)
    r = ix_in_process("run", "--lab", str(lab), "e", env={"COLUMNS": "80"})
    assert r.code in (0, 1), r.output
    said = " ".join(r.stdout.split())
    assert "judged by graded, not checked against labels (`ix label" in said
    assert not too_wide(r.stdout)

    # people agree with the judge on all but one output
    table = tmp_path / "labels.csv"
    table.write_text("probe_id,sensor,value\n" + "\n".join(
        f"c{i:02d},graded,{'pass' if (t >= 5) != (i == 0) else 'fail'}"
        for i, t in enumerate(truths)) + "\n")
    assert ix_in_process("label", "--import", str(table), "--experiment", "e",
                         "--lab", str(lab)).code == 0
    r = ix_in_process("report", "--lab", str(lab), "e", env={"COLUMNS": "80"})
    assert r.code == 0, r.output
    said = " ".join(r.stdout.split())
    lines = [json.loads(x) for x in (lab / "e" / "results" / "trials.jsonl").read_text()
             .splitlines()]
    judged = {x["probe_id"]: x["reading"]["passed"] for x in lines}
    want = stats.agreement([judged[f"c{i:02d}"] for i in range(len(truths))],
                           [(t >= 5) != (i == 0) for i, t in enumerate(truths)])
    assert f"judged by graded: κ {want.kappa.value:.2f}" in said
    assert "graded: disagrees" in said or "graded: checked" in said
    assert "true pass rate" in said and "against 8 labels" in said
    assert not too_wide(r.stdout)
    data = json.loads(ix_in_process("report", "--lab", str(lab), "e", "--format",
                                    "json").stdout)
    [judge] = data["judges"]
    assert judge["labelled"] == 8 and data["screen"]["judge"][0].startswith("judged by graded")


def test_validate_warns_of_a_verdict_on_an_unchecked_judge_and_strict_refuses_it(
        lab: Path, tmp_path: Path):
    _experiment(lab, "sensors: [{kind: llm_judge, agent: rubric.md}]", [2, 8] * 6)
    r = ix_in_process("validate", "--lab", str(lab), "e")
    assert r.code == 0 and "[unchecked-judge]" in r.output, r.output
    r = ix_in_process("validate", "--lab", str(lab), "e", "--strict")
    assert r.code == 2 and "unchecked-judge" in r.output, r.output

    table = tmp_path / "labels.csv"
    table.write_text("probe_id,sensor,value\nc00,graded,fail\n")
    assert ix_in_process("label", "--import", str(table), "--experiment", "e",
                         "--lab", str(lab)).code == 0
    r = ix_in_process("validate", "--lab", str(lab), "e", "--strict")
    assert r.code == 0 and "unchecked-judge" not in r.output, r.output

    # after a run, people who contradict the judge: its κ falls below min_kappa
    assert ix_in_process("run", "--lab", str(lab), "e").code in (0, 1)
    lines = [json.loads(x) for x in (lab / "e" / "results" / "trials.jsonl").read_text()
             .splitlines()]
    table.write_text("probe_id,sensor,value\n" + "\n".join(
        f"{x['probe_id']},graded,{'fail' if x['reading']['passed'] else 'pass'}"
        for x in lines) + "\n")
    assert ix_in_process("label", "--import", str(table), "--experiment", "e",
                         "--lab", str(lab)).code == 0
    r = ix_in_process("validate", "--lab", str(lab), "e")
    assert r.code == 0 and "below its min_kappa 0.6" in " ".join(r.output.split()), r.output
    assert ix_in_process("report", "--lab", str(lab), "e", "--format", "html", "--out",
                         str(tmp_path / "r.html")).code == 0
    html = (tmp_path / "r.html").read_text()
    assert '<section id="judges">' in html and "judged by graded: κ" in html
    assert "graded: disagrees" in html
    md = ix_in_process("report", "--lab", str(lab), "e", "--format", "md").stdout
    assert "## Judges" in md and "- ⚠ judged by graded: κ" in md
    assert "below its min\\_kappa" in " ".join(md.split())


@pytest.mark.parametrize(("diff", "flips"), [(0.3, True), (1.5, False)])
def test_judge_noise_could_flip_a_verdict_on_its_dimension_only_near_the_threshold(
        diff: float, flips: bool):
    # 12 cases x 2 trials x 3 repeats, the judge's variance 1.2 within an output: its own
    # error of the effect is sqrt(2 * 1.2 / (3 * 2 * 12)) = 0.183; the threshold is 0.5
    judge = {**_judge("graded"), "repeats": 3, "status": "unchecked",
             "noise": {"outputs": 48, "unsettled": 0, "score": {},
                       "dimensions": {"q": {"within_var": 1.2}}}}
    summary = {"judges": [judge], "trials_per_case": 2,
               "subjects": [{"name": "A", "probe_results": [{}] * 12}],
               "goal": {"metric": "graded.q", "direction": "increase", "min_effect": 0.5,
                        "effect": {"diff": diff, "control": 5.0}}}
    line = flip_line(summary, judge)
    gap = f"{abs(diff - 0.5):.3f}"
    assert line == (f"judge noise alone {'could' if flips else 'could not'} flip this verdict: "
                    f"the effect lies {gap} from the goal's threshold; the judge's own error of "
                    f"it is 0.183" + (" (more repeats settle it)" if flips else ""))
    assert line in caveat_lines(summary)
    # a goal on another quantity does not rest on the judge's noise
    summary["goal"]["metric"] = "output_tokens"
    assert flip_line(summary, judge) is None


def test_several_judges_of_one_rubric_outside_a_panel_get_their_agreement():
    a = [True, True, False, True, False, False, True, True, False, True]
    b = [True, False, False, True, False, True, True, True, False, True]
    lines = [_line(f"c{i}", [
        {"sensor_name": "sonnet", "passed": x, "score": float(x), "metrics": {}},
        {"sensor_name": "haiku", "passed": y, "score": float(y), "metrics": {}},
        {"sensor_name": "other", "passed": x, "score": 0.5, "metrics": {}}])
        for i, (x, y) in enumerate(zip(a, b, strict=True))]
    block = judges_block([_judge("sonnet"), _judge("haiku"), _judge("other", rubric="r")],
                         lines, [])
    by = {j["name"]: j for j in block}
    want = stats.krippendorff_alpha([[float(x), float(y)] for x, y in zip(a, b, strict=True)])
    assert by["sonnet"]["alpha"] == by["haiku"]["alpha"]
    assert by["sonnet"]["alpha"]["verdicts"]["value"] == pytest.approx(want.value, abs=1e-6)
    assert by["other"]["alpha"] is None  # alone on its rubric
    assert "the judges of rubric q agree: Krippendorff's α" in "\n".join(judge_lines(block))


def test_a_person_judging_on_the_terminal_checks_the_model_judge_through_the_real_ix(
        lab: Path):
    """The person grades the same rubric (its `name`) on the `human` runtime, answering over
    a pipe: the summary's block counts each answer as a label of the model judge."""
    exp = _experiment(lab, "sensors:\n"
                           "          - {kind: llm_judge, agent: rubric.md}\n"
                           "          - {kind: llm_judge, agent: person.md, name: person}\n"
                           "        concurrency: 1", [2, 8, 3, 7, 6, 4])
    write(exp / "person.md", """---
name: graded
runtime: human
dimensions: [quality]
scale: [0, 10]
---
Grade: {{ probe.prompt }} (answer {"scores": {"quality": 0-10}})
""")
    answers = "".join(f'{{"scores": {{"quality": {q}}}}}\n.\n' for q in (9, 1, 9, 1, 1, 9))
    r = run_ix("run", "--lab", str(lab), "e", "--json", stdin=answers)
    assert r.code in (0, 1), r.stderr
    by = {j["name"]: j for j in json.loads(r.stdout)["judges"]}
    assert by["person"]["status"] == "human" and by["person"]["runtime"] == "human"
    lines = [json.loads(x) for x in (exp / "results" / "trials.jsonl").read_text().splitlines()]
    verdicts = {x["probe_id"]: {r["sensor_name"]: r["passed"] for r in x["readings"]}
                for x in lines}
    model = [verdicts[c]["graded"] for c in sorted(verdicts)]
    person = [verdicts[c]["person"] for c in sorted(verdicts)]
    assert sorted(person) == [False] * 3 + [True] * 3
    want = stats.agreement(model, person)
    assert by["graded"]["labelled"] == 6 and by["graded"]["status"] != "unchecked"
    assert by["graded"]["agreement"]["kappa"]["value"] == pytest.approx(want.kappa.value,
                                                                         abs=1e-6)
