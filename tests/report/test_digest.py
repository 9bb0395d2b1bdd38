"""`TrialDigest`, the report's trial sections gathered line by line as `ix run` records them:
the same sections as made from the whole list of lines at once."""

import random

from ix.eval.numbers import num
from ix.report import figures
from ix.report.digest import TrialDigest
from ix.stats.describe import describe


def line(subject: str, case: str, trial: int, *, passed: bool, skill: str | None = None,
         at_ms: int = 0, tokens: int = 0, usd: float = 0.0, error: str | None = None,
         attempt: int = 0) -> dict:
    calls = [{"name": "Skill", "input": {"skill": skill}}] if skill else []
    return {"subject": subject, "probe_id": case, "trial": trial, "attempt": attempt,
            "expectation": "must_trigger",
            "started_at": f"2026-11-29T21:12:{at_ms // 1000:02d}.{at_ms % 1000:03d}Z",
            "duration_ms": 5.0,
            "observation": {"content": f"answer {trial}", "tool_calls": calls,
                            "tokens_input": tokens, "tokens_output": 2 * tokens,
                            "cost_usd": usd},
            "reading": None if error else {"passed": passed, "score": float(passed),
                                           "metrics": {"x": trial}, "details": "d"},
            "error": {"kind": error, "message": "boom"} if error else None}


def test_a_case_shows_its_first_wrong_trial_that_invoked_a_skill_else_its_first():
    d = TrialDigest()
    for t in (line("a", "c", 0, passed=False), line("a", "c", 1, passed=True, skill="t"),
              line("a", "c", 2, passed=False, skill="other"),
              line("a", "c", 3, passed=False, skill="third"),
              line("b", "c", 0, passed=False), line("b", "c", 1, passed=False)):
        d.add(t)
    d.close()
    (row,) = d.failures()["cases"]
    assert (row["trials"], row["wrong"], row["failed"]) == (6, 5, 5)
    shown = {e["subject"]: (e["trial"], e["invoked"], e["answer"]) for e in row["examples"]}
    assert shown == {"a": (2, ["other"], "answer 2"), "b": (0, [], "answer 0")}


def test_costs_add_up_by_subject_case_and_in_total_retried_attempts_included():
    d = TrialDigest()
    d.add(line("a", "c1", 0, passed=True, tokens=10, usd=0.5, error="timeout"))
    d.add(line("a", "c1", 0, passed=True, tokens=1, usd=0.25, attempt=1))
    d.add(line("b", "c2", 0, passed=True, tokens=100, usd=1.0))
    d.add(line("a", "c2", 0, passed=True, tokens=1000, usd=2.0))
    d.close()
    cost = d.cost()
    assert list(cost["by_subject"]) == ["a", "b"] and list(cost["by_case"]) == ["c1", "c2"]
    assert cost["by_subject"]["a"] == {"attempts": 3, "tokens_input": 1011,
                                       "tokens_output": 2022, "cost_usd": 2.75}
    assert cost["by_case"]["c2"]["attempts"] == 2 and cost["by_case"]["c2"]["cost_usd"] == 3.0
    assert cost["total"] == {"attempts": 4, "tokens_input": 1111, "tokens_output": 2222,
                             "cost_usd": 3.75}
    assert d.failures()["errors"][0]["superseded"] == 1


def test_the_timeline_of_a_big_run_bins_the_same_points_as_the_whole_list():
    rng = random.Random(7)
    lines = [line(rng.choice("ab"), f"c{i % 9}", i, passed=rng.random() < 0.5,
                  at_ms=rng.randrange(50_000), error="e" if rng.random() < 0.05 else None)
             for i in range(figures.TIMELINE_TRIALS * 2)]
    lines.append({**line("a", "c0", 10**6, passed=True), "started_at": "not a time"})
    for n in (figures.TIMELINE_TRIALS // 2, len(lines)):  # marked one by one, then binned
        d = TrialDigest()
        for t in lines[:n]:
            d.add(t)
        points = [p for p in map(figures.point, lines[:n]) if p is not None]
        assert d.timeline(["b", "a"]) == figures.timeline(points, ["b", "a"])


def test_the_breakdown_gives_describe_s_mean_and_sd_of_each_case_s_scores():
    rng = random.Random(3)
    d = TrialDigest()
    scores: dict[tuple[str, str], list[float]] = {}
    for i in range(300):
        subject, case = rng.choice("ab"), f"c{rng.randrange(7)}"
        t = line(subject, case, i, passed=True)
        t["reading"]["score"] = rng.random() * 10 ** rng.randrange(-3, 4)
        scores.setdefault((case, subject), []).append(t["reading"]["score"])
        d.add(t)
    d.close()
    rows = {r["probe_id"]: r["by_subject"] for r in d.breakdown([])}
    for (case, subject), values in scores.items():
        want = describe(values)
        got = rows[case][subject]
        assert (got["n"], got["mean"], got["sd"]) == (want.n, num(want.mean),
                                                      num(want.std) if want.n > 1 else None)
        assert (got["min"], got["max"]) == (num(min(values)), num(max(values)))


def test_the_live_feed_reads_a_line_as_the_log_reader_does_every_status_and_edge_included():
    """`add` reads the engine's record directly; `attempt` + `stand` (a log read back) read
    the same line with checks: the same sections, a trial without a reading included."""
    lines = [line("a", "c1", 0, passed=True, skill="t"), line("a", "c1", 1, passed=False),
             line("b", "c1", 0, passed=False, skill="other", error="timeout"),
             {**line("b", "c2", 0, passed=True), "reading": None},
             {**line("b", "c2", 1, passed=True), "expectation": "should_not_trigger"},
             line("a", "c2", 0, passed=False, tokens=3, usd=0.1)]
    live, read = TrialDigest(), TrialDigest()
    for t in lines:
        live.add(t)
        read.attempt(t)
        read.stand(t)
    live.close()
    assert live.timeline(["a", "b"]) == read.timeline(["a", "b"])
    assert [p.status for p in live._points or []] == [
        "ok", "wrong", "error", "wrong", "wrong", "wrong"]  # as `figures.outcome` says
    assert live.failures() == read.failures() and live.cost() == read.cost()
    assert live.breakdown([]) == read.breakdown([])


def test_outcomes_are_the_mean_of_case_means_the_same_live_and_read_back():
    """Tokens, time and cost per trial that stood without error, averaged per case, then over
    cases; cost per success is every attempt's cost over the right trials. `add` and a log
    read back (`digest_of`, whose lines are `kept`) give the same section."""
    from ix.report.run_report import digest_of

    lines = [line("a", "c1", 0, passed=True, tokens=10, usd=0.1),
             line("a", "c1", 1, passed=False, tokens=30, usd=0.3),
             line("a", "c2", 0, passed=True, tokens=50, usd=0.5),
             line("a", "c2", 1, passed=True, tokens=0, usd=0.2, error="timeout"),
             line("a", "c2", 1, passed=True, tokens=70, usd=0.7, attempt=1),
             line("b", "c1", 0, passed=True, tokens=20, usd=0.2),
             line("b", "c1", 1, passed=True, tokens=40, usd=0.4),
             line("b", "c2", 0, passed=False, tokens=90, usd=0.9),
             line("b", "c2", 1, passed=True, tokens=110, usd=1.1)]
    live = TrialDigest()
    for t in lines:
        live.add(t)
    live.close()
    got = live.outcomes(["a", "b"])
    assert got == digest_of(lines).outcomes(["a", "b"])
    # no tool call anywhere, no turns reported, every score 0 or 1: those are not listed
    assert got["metrics"] == ["tokens_input", "tokens_output", "cost_usd", "duration_ms"]
    # a: case means 20 (c1) and 60 (c2, its retry standing): 40; b: 30 and 100: 65
    assert got["by_subject"]["a"]["tokens_input"]["value"] == 40
    assert got["by_subject"]["b"]["tokens_input"]["value"] == 65
    assert got["by_subject"]["a"]["tokens_output"]["value"] == 80
    # a spent 0.1 + 0.3 + 0.5 + 0.2 (the timed-out attempt) + 0.7 on 3 right trials
    assert got["cost_per_success"]["a"]["value"] == num(1.8 / 3)
    (tokens,) = [c for c in got["comparisons"] if c["metric"] == "tokens_input"]
    assert tokens["control"] == "a" and tokens["subject"] == "b"
    assert tokens["difference"]["value"] == 25 and tokens["ratio"]["value"] == num(65 / 40)
    assert got["cost_per_success_ratio"]["b"]["value"] == num((2.6 / 3) / (1.8 / 3))


def test_a_run_without_a_trial_that_stood_has_no_outcomes():
    digest = TrialDigest()
    digest.add(line("a", "c1", 0, passed=True, error="timeout"))
    digest.close()
    assert digest.outcomes(["a"]) is None


def test_the_first_screen_says_at_what_cost_in_every_format_within_80_columns():
    """`ix report` leads with the changes against the control (terminal and Markdown); the
    details keep each subject's means."""
    import io

    from rich.console import Console

    from conftest import too_wide
    from ix.report.markdown import _outcome_changes, _outcomes
    from ix.report.tables import fit
    from ix.report.terminal import outcome_change_parts, outcome_parts

    digest = TrialDigest()
    for i in range(12):
        for subject, scale in (("without-skill", 1.0), ("with-a-rather-long-skill-name", 1.4)):
            digest.add(line(subject, f"case-{i:03d}", 0, passed=i % 3 > 0,
                            tokens=int(100 * scale * (1 + i % 5)), usd=0.01 * scale * (1 + i)))
    digest.close()
    report = {"outcomes": digest.outcomes(["without-skill", "with-a-rather-long-skill-name"])}
    buffer = io.StringIO()
    console = Console(file=buffer, width=80, no_color=True)
    for part in [*outcome_change_parts(report), *outcome_parts(report)]:
        console.print(fit(part))  # as every command prints: a table too wide becomes records
    text = buffer.getvalue()
    assert not too_wide(text)
    assert "at what cost: against without-skill" in text and "+40% [+40%, +40%]" in text
    assert "cost per success" in text and "outcomes per trial" in text
    md = "\n".join(_outcome_changes(report["outcomes"]) + _outcomes(report["outcomes"]))
    assert "**At what cost**: against without-skill" in md and "## Outcomes" in md
    assert outcome_change_parts({"outcomes": None}) == [] and _outcome_changes(None) == []


def test_a_cost_per_success_without_a_value_says_which_side_had_no_right_trial():
    from ix.report.outcome_text import comparison_rows, subject_rows

    digest = TrialDigest()
    for i in range(4):
        digest.add(line("terse", f"c{i}", 0, passed=False, tokens=10, usd=0.1))
        digest.add(line("fahrenheit", f"c{i}", 0, passed=i > 0, tokens=10, usd=0.1))
    digest.close()
    outcomes = digest.outcomes(["terse", "fahrenheit"])
    _, rows = subject_rows(outcomes)
    assert rows[-1][0] == "cost per success"
    assert rows[-1][1] == "– (no right trial)" and rows[-1][2].startswith("0.1333 [")
    assert comparison_rows(outcomes)[-1][:3] == ["fahrenheit", "cost per success",
                                                 "– (terse: no right trial)"]
    outcomes["cost_per_success"]["terse"]["value"] = 0.1  # were terse right, the ratio's own
    assert comparison_rows(outcomes)[-1][2] == "–"


def test_outcome_cells_never_use_exponents():
    from ix.report.outcome_text import ratio_cell, value_cell

    cell = value_cell("cost_usd", {"value": 1.3e-05, "ci": [2.87e-06, 0.00232]})
    assert cell == "0.00001300 [0.000002870, 0.002320]" and "e-" not in cell
    assert value_cell("duration_ms", {"value": 0.01, "ci": [None, None]}) == "0.0000100"
    assert value_cell("tokens_input", {"value": 12345.6, "ci": [12000.0, 13000.4]}) == \
        "12,346 [12,000, 13,000]"
    assert ratio_cell({"value": 1.38, "ci": [1.21, 1.57]}) == "+38% [+21%, +57%]"


def test_turns_tool_calls_and_a_graded_score_are_outcomes_too():
    """Turns where the runtime reports them, tool calls per trial, and the reading's score
    once one is not 0 or 1 (a judge's): each a mean of case means; the same read back."""
    from ix.report.run_report import digest_of

    lines = []
    for i, case in enumerate(("c1", "c2", "c3")):
        for trial in range(2):
            t = line("a", case, trial, passed=True, skill="x" if trial else None)
            t["observation"]["meta"] = {"num_turns": 2 + i + trial}
            t["reading"]["score"] = 0.5 + 0.1 * i
            lines.append(t)
    live = TrialDigest()
    for t in lines:
        live.add(t)
    live.close()
    got = live.outcomes(["a"])
    assert got == digest_of(lines).outcomes(["a"])
    assert {"tool_calls", "turns", "score"} <= set(got["metrics"])
    a = got["by_subject"]["a"]
    assert a["tool_calls"]["value"] == 0.5 and a["turns"]["value"] == 3.5
    assert a["score"]["value"] == num(0.6) and a["score"]["method"] == "t"


def test_each_quantitys_comparisons_are_holm_adjusted_across_the_subjects():
    from statsmodels.stats.multitest import multipletests

    digest = TrialDigest()
    for i in range(8):
        for subject, scale in (("control", 1.0), ("b", 1.1), ("c", 2.0)):
            for trial in range(2):
                digest.add(line(subject, f"case-{i}", trial, passed=True,
                                tokens=int(100 * scale * (1 + (i * 7 + trial * 3) % 5)),
                                usd=0.001 * scale))
    digest.close()
    got = digest.outcomes(["control", "b", "c"])
    tokens = [c for c in got["comparisons"] if c["metric"] == "tokens_input"]
    assert [c["subject"] for c in tokens] == ["b", "c"]
    raw = [c["p"] for c in tokens]
    expected = multipletests(raw, method="holm")[1]
    assert [c["p_holm"] for c in tokens] == [num(x) for x in expected]
    assert all(c["p_holm"] >= c["p"] for c in tokens)


def test_what_the_digest_says_includes_the_lines_it_still_holds_in_a_batch():
    """`add` takes lines in batches: `exact` and every section read them all first."""
    d = TrialDigest()
    d.add(line("a", "c1", 0, passed=True, tokens=3, usd=0.5))
    assert d.exact and d.cost()["total"]["attempts"] == 1
    d.add(line("a", "c1", 1, passed=True, attempt=1))  # its first attempt was never seen
    assert not d.exact
    d.add(line("a", "c2", 0, passed=False, tokens=4))
    assert d.cost()["total"]["tokens_input"] == 7
    assert [r["probe_id"] for r in d.failures()["cases"]] == ["c2"]
