"""The blind pairwise judge (issue 36): a judge — a real program behind the `command` runtime,
its answers scripted — is shown the control's and the variant's answers to each case and
trial; the summary's `pairwise` block gives the variant's win share with its interval,
P(better) and the judge's position bias, measured and (with `swap: true`) cancelled."""

import asyncio
import json
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import ix_in_process, run_ix, too_wide, write
from ix.engine.plan import build_plan
from ix.engine.run import _then_pairs
from ix.lab.loader import load_experiment
from ix.stats import judges

#: A subject: its answer names it and the case.
SUBJECT = """
import sys
print(f"answer by {sys.argv[1]} to {sys.argv[2]}")
"""

#: The judge: counts its calls in calls.log; on `win-*` cases B's answer is better, on
#: `lose-*` A's; on `hard-*` it cannot tell and (its position bias) picks the first shown;
#: on `odd-*` it answers no JSON at all.
JUDGE = """
import json, sys
from pathlib import Path
prompt = sys.stdin.read()
with open(Path(__file__).with_name("calls.log"), "a") as f:
    f.write(prompt.replace("\\n", " ") + "\\n")
case = prompt.split("CASE: ")[1].split()[0]
first = prompt.split("FIRST: ")[1].split("\\n")[0]
if case.startswith("odd"):
    print("I would rather not say")
    sys.exit(0)
better = "B" if case.startswith("win") else "A" if case.startswith("lose") else None
if better is None:
    winner = "first"
else:
    winner = "first" if f"answer by {better} " in first else "second"
print(json.dumps({"winner": winner, "reasoning": "scripted"}))
"""


def experiment(lab: Path, cases: dict[str, int], *, swap: bool, trials: int = 2,
               sensors: str = "") -> Path:
    exp = lab / "e"
    py = json.dumps(sys.executable)
    subj = json.dumps(str(exp / "subject.py"))
    sensor = f"{{kind: pairwise_judge, rubric: compare.md, swap: {str(swap).lower()}}}"
    head = textwrap.dedent(f"""
        name: e
        trials: {trials}
        seed: 7
        subjects:
          - {{name: A, runtime: {{kind: command, argv: [{py}, {subj}, A, "{{{{ case.id }}}}"]}}}}
          - {{name: B, runtime: {{kind: command, argv: [{py}, {subj}, B, "{{{{ case.id }}}}"]}}}}
        """)
    write(exp / "experiment.yaml", head + (f"sensors:\n  - {sensor}\n{sensors}" if sensors
                                           else f"sensor: {sensor}\n"))
    write(exp / "subject.py", SUBJECT)
    write(exp / "judge.py", JUDGE)
    write(exp / "compare.md", f"""---
name: better
runtime: {{kind: command, argv: [{py}, {json.dumps(str(exp / "judge.py"))}],
          stdin: "{{{{ prompt }}}}"}}
---
Which answer is better?
CASE: {{{{ case.id }}}}
FIRST: {{{{ first }}}}
SECOND: {{{{ second }}}}
""")
    for prefix, n in cases.items():
        for i in range(n):
            write(exp / "cases" / f"{prefix}-{i}.md",
                  f"---\nexpectation: must_trigger\n---\nQuestion {prefix} {i}\n")
    return exp


def run(exp: Path, *args: str) -> dict:
    r = ix_in_process("run", "--lab", str(exp.parent), "e", *args)
    assert r.code in (0, 1, 130), r.output  # 130: stopped by --max-trials
    return json.loads((exp / "results" / "summary-latest.json").read_text())


def judgements(exp: Path) -> list[dict]:
    [log] = (exp / "results" / "runs").glob("*/pairwise.jsonl")
    return [json.loads(x) for x in log.read_text().splitlines()]


def test_a_variant_better_on_a_known_share_of_cases_gets_that_win_share(lab: Path):
    # B is better on 8 of 12 cases; the judge cannot read the `odd` case: errored, not counted
    exp = experiment(lab, {"win": 8, "lose": 4, "odd": 1}, swap=False)
    summary = run(exp)
    [entry] = summary["pairwise"]["variants"]
    assert entry["variant"] == "B" and entry["control"] == "A"
    assert entry["cases"] == 12 and entry["judgements"] == 24 and entry["errors"] == 2
    assert (entry["wins"], entry["losses"], entry["ties"]) == (16, 8, 0)
    share = entry["win_share"]
    assert share["value"] == pytest.approx(8 / 12, abs=1e-6)
    assert share["ci"][0] < 8 / 12 < share["ci"][1] and share["n"] == 12
    want = judges.pairwise([[1.0, 1.0]] * 8 + [[0.0, 0.0]] * 4)
    assert entry["p_better"] == pytest.approx(want.p_better, abs=1e-6)
    lines = judgements(exp)
    assert len(lines) == 26 and sum(1 for x in lines if x["error"]) == 2
    assert {x["error"]["kind"] for x in lines if x["error"]} == {"judge_unparseable"}
    # blind and seeded: both orders occur, each pair judged once, in a reproducible order
    assert {x["shown_first"] for x in lines} == {"variant", "control"}
    assert len({(x["probe_id"], x["trial"]) for x in lines}) == 26
    # the only sensor: each trial's own verdict is `answered`, and no trial errored
    assert summary["errors"] == 0 and summary["metrics"]["recall"] == 1.0


def test_position_bias_is_measured_and_cancelled_by_swapping(lab: Path):
    """On the 6 `hard` cases the judge always picks the answer shown first. Shown in both
    orders, each such case is one win and one loss (½, the truth: it cannot tell), so the win
    share is exactly the truth; the bias, P(first shown wins) − ½, is 6/(2·12) = 0.25."""
    exp = experiment(lab, {"win": 4, "lose": 2, "hard": 6}, swap=True)
    entry = run(exp)["pairwise"]["variants"][0]
    truth = (4 + 0.5 * 6) / 12
    assert entry["judgements"] == 48 and entry["errors"] == 0
    assert entry["win_share"]["value"] == pytest.approx(truth, abs=1e-6)
    bias = entry["position_bias"]
    assert bias["value"] == pytest.approx(0.25, abs=1e-6) and bias["n"] == 48
    assert bias["ci"][0] > 0 and bias["ci"][0] < 0.25 < bias["ci"][1]
    lines = judgements(exp)
    # both orders of every pair
    for key in {(x["probe_id"], x["trial"]) for x in lines}:
        assert sorted(x["shown_first"] for x in lines
                      if (x["probe_id"], x["trial"]) == key) == ["control", "variant"]


def test_without_swap_the_bias_is_still_measured_from_the_seeded_order(lab: Path):
    exp = experiment(lab, {"win": 4, "lose": 2, "hard": 6}, swap=False)
    entry = run(exp)["pairwise"]["variants"][0]
    lines = judgements(exp)
    assert entry["judgements"] == len(lines) == 24
    firsts = [x["winner"] == x["shown_first"] for x in lines]
    bias = entry["position_bias"]
    assert bias["value"] == pytest.approx(sum(firsts) / 24 - 0.5, abs=1e-6)
    assert bias["value"] > 0 and bias["ci"][0] < 0.25 < bias["ci"][1]
    # a hard case goes to whoever was shown first: the share moves with the coin
    hard_first = sum(1 for x in lines if x["probe_id"].startswith("hard")
                     and x["shown_first"] == "variant")
    want = (4 * 2 + hard_first) / 24
    assert entry["win_share"]["value"] == pytest.approx(want, abs=1e-6)


def test_a_resumed_run_judges_only_the_pairs_still_missing(lab: Path):
    exp = experiment(lab, {"win": 3, "lose": 3}, swap=True, trials=2)
    first = run(exp, "--max-trials", "10")
    calls = exp / "calls.log"
    made = len(calls.read_text().splitlines())
    done = judgements(exp)
    assert first["run_status"] == "cancelled" and made == len(done) > 0
    assert made < 2 * 12  # not every pair had both answers yet
    summary = run(exp, "--resume")
    lines = judgements(exp)
    assert len(calls.read_text().splitlines()) == len(lines) == 24  # the rest, and only it
    assert lines[:len(done)] == done
    assert summary["pairwise"]["variants"][0]["judgements"] == 24
    again = run(exp, "--resume")  # nothing missing: the judge is not asked again
    assert len(calls.read_text().splitlines()) == 24
    assert again["pairwise"] == summary["pairwise"]


def test_next_to_another_sensor_the_trials_keep_its_verdict(lab: Path):
    exp = experiment(lab, {"win": 2, "lose": 1}, swap=False, trials=1,
                     sensors="  - {kind: matcher, contains: 'by B'}\n")
    summary = run(exp)
    recall = {s["name"]: s["metrics"]["recall"] for s in summary["subjects"]}
    assert recall == {"A": 0.0, "B": 1.0}
    assert summary["pairwise"]["variants"][0]["win_share"]["value"] == pytest.approx(2 / 3)


@pytest.mark.parametrize(("change", "field"), [
    (("swap: true", "swapp: true"), "sensor.swapp"),
    (("rubric: compare.md", "rubric: missing.md"), "sensor.rubric"),
    (("rubric: compare.md, ", ""), "sensor.rubric"),
])
def test_a_bad_pairwise_judge_is_refused_naming_the_field(lab: Path, change: tuple[str, str],
                                                          field: str):
    exp = experiment(lab, {"win": 1}, swap=True)
    text = (exp / "experiment.yaml").read_text()
    assert change[0] in text
    (exp / "experiment.yaml").write_text(text.replace(*change))
    r = ix_in_process("validate", "--lab", str(lab), "e")
    assert r.code == 2 and field in r.stderr, r.output
    assert not (exp / "results").exists()


def test_the_cli_refuses_one_subject_and_prints_the_pairwise_line(lab: Path):
    """Through the real `ix`: exit 2 naming the file and field, nothing written; then the
    run's line at 80 columns, wrapped, never cut."""
    exp = experiment(lab, {"win": 3, "lose": 1}, swap=True, trials=1)
    good = (exp / "experiment.yaml").read_text()
    one = "\n".join(x for x in good.splitlines() if "name: B" not in x) + "\n"
    (exp / "experiment.yaml").write_text(one)
    r = run_ix("run", "--lab", str(lab), "e")
    assert r.code == 2 and "Traceback" not in r.stderr
    assert "experiment.yaml" in r.stderr and "subjects" in r.stderr
    assert "two subjects" in r.stderr and not (exp / "results").exists()
    (exp / "experiment.yaml").write_text(good)
    r = run_ix("run", "--lab", str(lab), "e", env={"COLUMNS": "80"})
    assert r.code == 0, r.output
    said = " ".join(r.stdout.split())
    assert "pairwise (blind, both orders): B wins 0.75" in said, r.stdout
    assert "of 4 cases vs control A" in said and "position bias +0.00" in said
    assert not too_wide(r.stdout)
    report = ix_in_process("report", "--lab", str(lab), "e", env={"COLUMNS": "80"})
    assert report.code == 0 and "B wins 0.75" in " ".join(report.stdout.split())
    assert not too_wide(report.stdout)
    html = lab / "r.html"
    assert ix_in_process("report", "--lab", str(lab), "e", "--format", "html", "--out",
                         str(html)).code == 0
    page = html.read_text()
    assert '<section id="pairwise">' in page and "B wins 0.75" in page
    md = ix_in_process("report", "--lab", str(lab), "e", "--format", "md").stdout
    assert "- pairwise (blind, both orders): B wins 0.75" in md


def test_a_run_stopped_by_the_user_keeps_the_judgements_already_made(lab: Path):
    """Ctrl-C before the judge's pass: the summary's block holds what earlier sessions
    judged (the log on disk), and the judge is not asked."""
    exp = experiment(lab, {"win": 2, "lose": 1}, swap=True, trials=1)
    run(exp)
    lines = judgements(exp)
    calls = len((exp / "calls.log").read_text().splitlines())
    plan = build_plan(load_experiment(exp, lab))
    [folder] = (exp / "results" / "runs").glob("*/pairwise.jsonl")

    async def interrupted() -> str:
        return "interrupted (SIGINT or SIGTERM); trials in flight were cancelled"

    judged: list[dict] = []
    stop = asyncio.run(_then_pairs(interrupted(), plan, folder.parent.name, folder.parent,
                                   exp / "results" / "trials.jsonl", judged, False, None))
    assert stop.startswith("interrupted") and judged == lines and len(lines) == 6
    assert len((exp / "calls.log").read_text().splitlines()) == calls
