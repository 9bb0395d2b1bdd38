"""The first screen's data (`ix.report.screen`) and ix's one wrapping rule for terminal text
(`ix.report.tables`), in process: which cases matter and in what order, which subjects stand
side by side, the headline without a goal; where a line may break, and names that become keys
with a legend rather than wrap."""

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ix.report import console
from ix.report import tables as layout
from ix.report.screen import CASES_SHOWN, screen
from ix.report.screen_text import title


def _probe(case: str, hits: int, n: int = 5, right: bool | None = True) -> dict[str, Any]:
    return {"probe_id": case, "expectation": "must_trigger" if case.startswith("must")
            else "should_not_trigger", "score": None if right is None else hits / n,
            "score_ci": [0.1, 0.9], "correct": right, "n": n, "passed": hits,
            "errors": 0 if right is not None else n}


def _block(name: str, probes: list[dict[str, Any]], recall: float = 0.5) -> dict[str, Any]:
    return {"name": name, "probe_results": probes, "errors": 0, "trials": 50,
            "metrics": {"precision": 1.0, "recall": recall, "f1": 0.6, "tp": 3, "fp": 0,
                        "fn": 3, "tn": 4, "precision_ci": [0.5, 1.0],
                        "recall_ci": [0.2, 0.8], "f1_ci": [0.3, 0.8]},
            "trial_level": {"must_trigger": {"rate": 0.4, "ci": [0.2, 0.6], "n_cases": 6}},
            "interpretation": {"status": "poor", "issues": [], "suggestions": []}}


def _summary(blocks: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"experiment_name": "e", "run_id": "r", "run_status": "completed",
            "trials_per_case": 5, "subjects": blocks, "sensor": "activation", **extra}


def test_cases_that_matter_are_the_worst_first_and_at_most_ten():
    cases = [f"must-{i:02d}" for i in range(14)]
    a = _block("a", [_probe(c, 5) for c in cases])
    right_in_b = {i: i == 12 for i in range(12)} | {12: True, 13: None}  # 13: all errored
    b = _block("b", [_probe(c, 1, right=right_in_b[i]) for i, c in enumerate(cases)])
    c = _block("c", [_probe(c, 1, right=i > 3) for i, c in enumerate(cases)])
    s = screen(_summary([a, b, c]))
    rows = s["cases_that_matter"]
    assert len(rows) == CASES_SHOWN and s["cases_that_matter_total"] == 13
    assert [r["probe_id"] for r in rows[:4]] == cases[:4]  # wrong in b and c
    assert all(r["wrong_in"] == 2 for r in rows[:4]) and rows[4]["wrong_in"] == 1
    assert s["case_columns"] == ["a", "b", "c"]
    assert rows[0]["cells"]["a"] == {"hits": 5, "n": 5, "score": 1.0, "right": True,
                                     "errors": 0}


def test_with_many_subjects_the_cases_table_shows_the_goals_pair_and_counts_the_rest():
    names = [f"s{i}" for i in range(6)]
    blocks = [_block(n, [_probe("must-1", 0, right=i == 0), _probe("not-1", 0)])
              for i, n in enumerate(names)]
    s = screen(_summary(blocks, goal={"hypothesis": "h", "metric": "recall",
                                      "compare": ["s0", "s3"], "verdict": "supported"}))
    assert s["case_columns"] == ["s0", "s3"] and s["conditions"] == 6
    assert s["cases_that_matter"][0]["wrong_in"] == 5
    assert s["subjects"][0]["role"] == "control" and s["subjects"][3]["role"] == "treatment"
    no_goal = screen(_summary(blocks))
    assert no_goal["case_columns"][0] == "s0" and len(no_goal["case_columns"]) == 2


def test_the_judged_metric_and_its_n_follow_the_goal_and_say_their_scope():
    block = _block("a", [_probe("must-1", 5)])
    recall = screen(_summary([block], goal={"metric": "recall", "hypothesis": "h",
                                            "verdict": None}))
    assert recall["subjects"][0] | {} == {**recall["subjects"][0], "value": 0.5,
                                         "unit": "must cases", "n": 6}
    rate = screen(_summary([block], goal={"metric": "activation_rate", "hypothesis": "h"}))
    assert rate["metric_label"] == "activation rate (must)"
    assert (rate["subjects"][0]["value"], rate["subjects"][0]["n"]) == (0.4, 6)
    none = screen(_summary([block]))
    assert none["verdict"] == [] and none["headline"] == {
        "subject": "a", "metric": "f1", "value": 0.6, "ci": [0.3, 0.8]}


def test_the_correct_rate_stands_with_its_interval_and_an_older_summary_without_one():
    block = _block("a", [_probe("must-1", 5), _probe("must-2", 0, right=False),
                         _probe("not-1", 0), _probe("edge-1", 0, right=None)])
    goal = {"metric": "pass_rate", "hypothesis": "h"}
    old = screen(_summary([block], goal=goal))["subjects"][0]     # a 2.5 summary
    assert (old["value"], old["ci"], old["n"]) == (2 / 3, None, 3)
    block["metrics"] |= {"pass_rate": 0.7, "pass_rate_ci": [0.39, 0.89]}
    new = screen(_summary([block], goal=goal))["subjects"][0]
    assert (new["value"], new["ci"], new["n"]) == (0.7, [0.39, 0.89], 10)  # tp+fp+fn+tn


def test_a_subject_whose_every_trial_errored_has_no_value():
    block = _block("a", [_probe("must-1", 0, right=None)])
    block["errors"] = block["trials"]
    row = screen(_summary([block]))["subjects"][0]
    assert (row["value"], row["status"]) == (None, "all trials errored")


def test_the_title_counts_in_words_that_agree_with_their_number():
    one = screen(_summary([_block("a", [_probe("must-1", 1, n=1)])], trials_per_case=1))
    assert title(one).plain == "e: 1 case × 1 subject × 1 trial, completed"
    two = screen(_summary([_block("a", [_probe("must-1", 5), _probe("not-1", 0)]),
                           _block("b", [_probe("must-1", 5), _probe("not-1", 0)])]))
    assert title(two).plain == "e: 2 cases × 2 subjects × 5 trials, completed"


def _lines(text: str, width: int) -> list[str]:
    cuts = layout._cuts(text, width)
    return [text[a:b].rstrip() for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


def test_a_line_never_breaks_inside_a_command_an_interval_or_between_a_label_and_its_value():
    text = ("P(supported) = 0.959, P(refuted) = 0.041; supported if P(effect < -0.05) >= 0.95, "
            "else inconclusive; `ix report 20261129T053557Z-362099` lists every case, "
            "activation on not 0.156 [0.07, 0.37] of 783 trials")
    for width in range(40, 90):  # the command (35 columns) fits every width
        lines = _lines(text, width)
        assert all(len(line) <= width for line in lines), (width, lines)
        joined = "\n".join(lines)
        for whole in ("`ix report 20261129T053557Z-362099`", ">= 0.95", "not 0.156",
                      "[0.07, 0.37]", "783 trials", "= 0.959", "P(effect < -0.05)"):
            assert whole in joined, (width, whole, lines)


def test_the_cost_line_never_breaks_inside_a_quantitys_name():
    change = {"value": 1.47, "ci": [1.28, 1.68]}
    outcomes = {"level": 0.95, "metrics": {"tokens_output": {}, "duration_ms": {},
                                           "cost_usd": {}},
                "comparisons": [{"control": "without-skill", "subject": "with-skill",
                                 "metric": m, "ratio": change}
                                for m in ("tokens_output", "duration_ms", "cost_usd")],
                "cost_per_success_ratio": {"with-skill": {"value": 0.84, "ci": [0.67, 0.98]}}}
    (_, cost) = console._cost(outcomes)
    for width in range(30, 90):
        out = Console(width=width, record=True, color_system=None)
        out.print(layout.fit(cost))  # as the screen prints it
        lines = out.export_text().splitlines()
        assert all(len(line) <= width for line in lines), (width, lines)
        joined = "\n".join(lines)
        for whole in ("output tokens +47%", "time (s) +47%", "cost per success -16%"):
            assert whole in joined, (width, whole, lines)


def test_a_path_wider_than_the_line_stands_whole_and_a_long_parenthesis_still_wraps():
    path = "/tmp/" + "x" * 90 + "/trials.jsonl"
    assert _lines(f"trials: {path} and more", 80) == ["trials:", path, "and more"]
    prose = "(" + " ".join(["word"] * 40) + ")"
    assert all(len(line) <= 80 for line in _lines(prose, 80))


def test_names_become_keys_with_a_legend_only_when_a_table_would_not_fit():
    names = ["frontend-design-plus-theme-factory[ctx=0]",
             "frontend-design-plus-theme-factory[context_decay.half_life=8][ctx=128]"]

    def build(label):
        t = Table("case", *(label(n) for n in names), "wrong in")
        t.add_row("must-001", "5/5 ✓", "0/5 ✗", "3 of 8")
        return [t, Text(f"{label(names[1])} declines faster")]

    def render(width: int) -> str:
        console = Console(width=width, record=True, color_system=None)
        console.print(layout.Keyed(names, build))
        return console.export_text()

    wide = render(200)
    assert "A = " not in wide and names[1] in wide
    narrow = render(80)
    assert narrow.startswith(f"A = {names[0]}\nB = {names[1]}\n"), narrow
    assert "B declines faster" in narrow
    assert all(len(line) <= 80 for line in narrow.splitlines())
    assert layout.letters(28)[-3:] == ["Z", "AA", "AB"]
