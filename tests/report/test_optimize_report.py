"""The reports of an `ix optimize` session (`ix.report.optimize`): the verdict first, every
number whole at 80 columns, the lab's text shown as text (never markup, a table cell of its
own or HTML), and the word diff of the description. The states are a real session (the
example lab, offline) and edits of it: recommended, applied, no candidate, cancelled, just
started, several subjects, lab text full of markup."""

import copy
import html
import io
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt
from rich.console import Console

from conftest import EXAMPLE_LAB, offline_example
from ix.api.optimize import Settings, optimize
from ix.report.optimize import (
    OPTIMIZE_CSS,
    optimize_body_html,
    optimize_html,
    optimize_markdown,
    word_diff,
)
from ix.report.optimize_terminal import optimize_renderable
from optimize_lab import example_seed

RENDER = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
MARKUP = ("Handle [bold]CSV[/bold] files | tables <script>alert(1)</script> & "
          "[link=http://x.test]data[/link] ")


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A completed session of the example lab (keywords proposer, offline, ~2 s), at a split
    seed where a candidate beats the original on train (`example_seed`)."""
    lab = tmp_path_factory.mktemp("optimize") / "lab"
    shutil.copytree(EXAMPLE_LAB, lab, ignore=offline_example())
    state = optimize(lab, "skill-activation", Settings(seed=example_seed(EXAMPLE_LAB))).state
    assert state["status"] == "completed" and state["best"] != "original"  # set-up
    assert state["holdout"]["subjects"]
    return state


# --------------------------------------------------------------------------- states

def candidates(state: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for r in state["rounds"] for c in r["candidates"]]


def best(state: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in candidates(state) if c["id"] == state["best"])


def recommended(real: dict[str, Any]) -> dict[str, Any]:
    s = copy.deepcopy(real)
    s["holdout"].update(verdict="recommended", prob_better=0.97,
                        why="P(holdout F1 better) = 0.970 ≥ 0.9")
    s["holdout"]["subjects"][0]["prob_better"] = 0.97
    s.update(recommended=True, command=["ix", "optimize", "skill-activation"],
             recommended_file=str(Path(best(s)["file"]).parents[3] / "SKILL.md"))
    return s


def applied(real: dict[str, Any]) -> dict[str, Any]:
    s = recommended(real)
    s["applied"] = {"at": "2026-11-27T13:00:00.000Z", "file": s["skill_file"],
                    "backup": s["skill_file"] + ".20261127T130000Z.bak"}
    return s


def no_candidate(real: dict[str, Any]) -> dict[str, Any]:
    s = copy.deepcopy(real)
    for r in s["rounds"]:
        r["improved"] = False
    s.update(best="original", recommended=False, holdout={
        "run_id": None, "verdict": "no candidate", "subjects": [], "prob_better": None,
        "why": "no candidate beat the original description's train F1; nothing to judge on "
               "the holdout cases"})
    return s


def cancelled(real: dict[str, Any]) -> dict[str, Any]:
    s = copy.deepcopy(real)
    s.update(status="cancelled", reason="stopped by --max-cost [0.01 USD", holdout=None,
             finished_at=None, command=["ix", "optimize", "skill-activation"])
    return s


def started(real: dict[str, Any]) -> dict[str, Any]:
    """As `optimize.json` is before round 0 finished."""
    s = copy.deepcopy(real)
    s["original"].update(train=None, run_id=None)
    s.update(status="running", reason=None, stopped_early=None, finished_at=None, rounds=[],
             best="original", holdout=None, recommended=False, recommended_file=None)
    return s


def several_subjects(real: dict[str, Any]) -> dict[str, Any]:
    """A second subject with the skill: its F1s differ from the first's."""
    s = copy.deepcopy(real)
    s["subjects"].append("other")
    for c in [s["original"], *candidates(s)]:
        first = c["train"]["subjects"][0]
        c["train"]["subjects"].append({**first, "subject": "other", "f1": 0.123456,
                                       "f1_ci": [0.011111, 0.456789]})
    first = s["holdout"]["subjects"][0]
    s["holdout"]["subjects"].append({**copy.deepcopy(first), "subject": "other",
                                     "difference": 0.25, "difference_ci": [0.05, 1.0],
                                     "difference_sided": "upper", "prob_better": 0.987654})
    return s


def marked(real: dict[str, Any]) -> dict[str, Any]:
    """Lab text that means something to rich, Markdown and HTML, long enough to wrap."""
    s = recommended(real)
    old = MARKUP * 5 + "[unclosed tail " + "word " * 30
    s["original"]["description"] = old.strip()
    best(s)["description"] = (old.replace("tables", "tables|grids", 1) + "[red]more[/red]").strip()
    s["experiment"] = "exp|[b]<i>x</i>"
    s["rounds"][0]["rejected"] = [{"text": "[bold]rejected[/] | <script>x()</script>",
                                   "reason": "longer than 1024 characters [x"}]
    return s


def small_diff(real: dict[str, Any]) -> dict[str, Any]:
    s = recommended(real)
    s["original"]["description"] = "alpha beta gamma delta"
    best(s)["description"] = "alpha zeta gamma delta epsilon"
    return s


VARIANTS = {
    "real": (lambda r: copy.deepcopy(r), "no credible improvement: "),
    "recommended": (recommended, "recommended: {best} — P(holdout F1 better) = 0.970 ≥ 0.9"),
    "applied": (applied, "recommended: {best} — P(holdout F1 better) = 0.970 ≥ 0.9"),
    "no candidate": (no_candidate, "no candidate beat the original on the train cases"),
    "cancelled": (cancelled, "cancelled: stopped by --max-cost [0.01 USD"),
    "started": (started, "running: not finished yet"),
    "several subjects": (several_subjects, "no credible improvement"),
    "marked": (marked, "recommended: {best} — P(holdout F1 better) = 0.970 ≥ 0.9"),
}


def variant(real: dict[str, Any], name: str) -> tuple[dict[str, Any], str]:
    make, verdict = VARIANTS[name]
    return make(real), verdict.format(best=real["best"])


# --------------------------------------------------------------------------- renderers

def terminal(state: dict[str, Any], width: int = 80) -> str:
    """As `ix optimize` prints it (its stdout never crops: a long path stays whole)."""
    console = Console(width=width, record=True, color_system=None, file=io.StringIO())
    console.print(optimize_renderable(state), crop=False)
    return console.export_text()


def flat(text: str) -> str:
    return " ".join(text.split())


def shown(page: str) -> str:
    """The text an HTML page shows, its tags dropped and its entities read, flattened."""
    return flat(html.unescape(re.sub(r"<[^>]+>", " ", page)))


def interval(pair: list[float]) -> str:
    return f"[{pair[0]:.3f}, {pair[1]:.3f}]"


def numbers(state: dict[str, Any]) -> list[str]:
    """Every number the reports must show whole: train F1 with its interval per candidate and
    subject, the holdout F1s, differences, P(better)."""
    out = []
    for c in [state["original"], *candidates(state)]:
        out += [f"{s['f1']:.3f} {interval(s['f1_ci'])}" for s in c["train"]["subjects"]]
    for s in (state["holdout"] or {}).get("subjects") or []:
        out += [f"{s[k]['f1']:.3f} {interval(s[k]['f1_ci'])}" for k in ("original", "candidate")]
        out += [f"{s['difference']:+.3f} {interval(s['difference_ci'])}",
                f"P(holdout F1 better) = {s['prob_better']:.3f}"]
    return out


# --------------------------------------------------------------------------- the answer first

@pytest.mark.parametrize("name", list(VARIANTS))
def test_the_verdict_is_the_first_line_on_a_terminal(real, name):
    state, verdict = variant(real, name)
    first = terminal(state).splitlines()[0]
    assert first.startswith(verdict[:60]), first


@pytest.mark.parametrize("name", list(VARIANTS))
def test_markdown_and_html_give_the_verdict_then_holdout_rounds_description_files(real, name):
    state, verdict = variant(real, name)
    md = optimize_markdown(state)
    said = RENDER.render(md)
    found = [said.find(x) for x in (flat(verdict)[:40].replace("<", "&lt;"), "<h2>Holdout",
                                    "<h2>Rounds", "<h2>Description", "<h2>Session")]
    assert -1 not in found and found == sorted(found), found
    page = optimize_body_html(state)
    found = [page.find(x) for x in ('class="verdict verdict-', 'id="holdout"', 'id="rounds"',
                                    'id="description"', 'id="session"')]
    assert -1 not in found and found == sorted(found), found
    assert verdict[:40].replace("<", "&lt;").replace(">", "&gt;") in page


def test_a_recommended_session_says_that_apply_writes_it(real):
    state = recommended(real)
    out = flat(terminal(state))
    assert "the skill is unchanged: ix optimize skill-activation --apply writes it into " \
           f"{state['skill_file']}" in out
    assert f"recommended SKILL.md: {state['recommended_file']}" in out
    state["command"] = None
    assert "the same command with --apply writes it into" in flat(terminal(state))


def test_an_applied_session_says_where_the_skill_and_its_backup_are(real):
    state = applied(real)
    out = flat(terminal(state))
    assert f"applied: {state['skill_file']} now has the recommended description; the old " \
           f"file is kept as {state['applied']['backup']}" in out
    assert "--apply" not in out
    assert state["applied"]["backup"] in optimize_markdown(state)
    assert f"<code>{state['applied']['backup']}</code>" in optimize_body_html(state)


def test_without_a_better_candidate_no_holdout_and_no_diff_are_shown(real):
    out = flat(terminal(no_candidate(real)))
    assert "no holdout run: no candidate beat the original on the train cases" in out
    assert "candidate only" not in out and "word diff" not in out
    assert "no candidate replaced it" in out
    assert re.search(r"\b0 +│ original +│ [0-9.]+ \[[0-9.]+, [0-9.]+\] .*│ best *$",
                     terminal(no_candidate(real)), re.M)


@pytest.mark.parametrize("make", [cancelled, started])
def test_an_unfinished_session_says_how_to_continue_it(real, make):
    state = make(real)
    out = flat(terminal(state))
    assert "run the same command again to continue it" in out
    held = f"not run yet: {len(state['split']['holdout'])} cases are held out, never shown " \
           "to the proposer"
    assert f"holdout {held}" in out
    assert held in optimize_markdown(state) and held in optimize_body_html(state)


def test_a_session_before_round_0_finished_shows_its_original_as_not_yet_scored(real):
    out = terminal(started(real))
    assert re.search(r"^ +0 │ original +│ +n/a │ n/a +│ +n/a │ best so far", out, re.M), out
    assert "no candidate has beaten it so far" in out


# --------------------------------------------------------------------------- 80 columns

@pytest.mark.parametrize("name", ["real", "several subjects", "marked", "applied"])
def test_every_number_is_whole_on_one_line_at_80_columns(real, name):
    state, _ = variant(real, name)
    out = terminal(state)
    lines = out.splitlines()
    expected = numbers(state)
    assert expected
    missing = [n for n in expected if not any(n in line for line in lines)]
    assert missing == []
    assert "…" not in out and "..." not in out
    too_wide = [line for line in lines if len(line.rstrip()) > 80
                and len(line.split()) > 1]  # only one path longer than the width, whole
    assert too_wide == []


def test_the_interval_of_a_one_sided_difference_says_so(real):
    out = flat(terminal(several_subjects(real)))
    assert "+0.250 [0.050, 1.000] (95%, one-sided: the difference lies above the " \
           "equal-tailed interval)" in out
    assert "(95%, equal-tailed)" in out  # the first subject's


def test_the_paired_counts_and_the_number_of_held_out_cases_are_shown(real):
    state = copy.deepcopy(real)
    state["holdout"]["subjects"][0]["pairs"] = {"must": [3, 1, 2, 0], "not": [0, 4, 1, 5]}
    out = terminal(state)
    assert re.search(r"^must_trigger \(6\) +│ +3 │ +1 │ +2 │ +0$", out, re.M), out
    assert re.search(r"^should_not_trigger \(10\) +│ +0 │ +4 │ +1 │ +5$", out, re.M), out
    n = len(state["split"]["holdout"])
    assert f"on {n} held-out cases, which never reached the proposer" in flat(out)


def test_the_rule_the_exact_test_and_each_missed_condition_are_shown(real):
    """A gain resting on 2 changed cases: the rule the session was judged by, the exact
    test with the improved and worsened cases, and each condition missed, in every report;
    a session from before the rule shows its one condition and no exact test."""
    state = copy.deepcopy(real)
    state["settings"].update(credibility=0.95, tolerance=0.05, min_changed=3)
    missed = ["exact paired p = 0.250 > 0.05 (were each changed case a coin flip, a "
              "difference this large would be that common)",
              "the gain rests on 2 improved case(s), fewer than 3 (of 2 changed)"]
    state["holdout"]["subjects"][0].update(p_value=0.25, improved=2, worsened=0,
                                           failed=missed)
    rule = ("recommended only if P(holdout F1 better) ≥ 0.95, the exact paired test's p ≤ "
            "0.05, the 95% interval ends above -0.05 and at least 3 held-out case(s) improved")
    exact = "exact paired p = 0.250 (2 held-out case(s) improved, 0 worsened)"
    out = flat(terminal(state))
    assert rule in out and exact in out
    assert all(f"not met: {m}" in out for m in missed)
    md, page = shown(RENDER.render(optimize_markdown(state))), shown(optimize_body_html(state))
    for text in (rule, "Exact paired p = 0.250 (2 held-out case(s) improved, 0 worsened)",
                 *missed):
        assert text in md and text in page, text
    for key in ("p_value", "improved", "worsened", "failed"):
        del state["holdout"]["subjects"][0][key]
    del state["settings"]["tolerance"], state["settings"]["min_changed"]
    out = flat(terminal(state))
    assert "recommended only if P(holdout F1 better) ≥ 0.95" in out
    assert "exact paired" not in out and "not met" not in out


def test_the_keywords_proposer_s_note_and_rationale_are_shown(real):
    note = real["proposer"]["note"]
    assert "optimises for a word router" in note
    rationale = next(r["rationale"] for r in real["rounds"] if r.get("rationale"))
    for text in (flat(terminal(real)), shown(RENDER.render(optimize_markdown(real))),
                 shown(optimize_body_html(real))):
        assert flat(note) in text and flat(rationale) in text


def test_a_long_description_wraps_whole_at_80_columns(real):
    state = marked(real)
    out = terminal(state)
    assert max(len(line.rstrip()) for line in out.splitlines()
               if len(line.split()) > 1) <= 80
    assert flat(state["original"]["description"]) in flat(out)
    assert flat(best(state)["description"]) in flat(out)


# --------------------------------------------------------------------------- lab text is text

def test_markup_in_the_lab_text_is_printed_as_it_is(real):
    state = marked(real)
    out = flat(terminal(state))
    assert "Handle [bold]CSV[/bold] files | tables <script>alert(1)</script>" in out
    assert "[link=http://x.test]data[/link]" in out
    assert "[bold]rejected[/] | <script>x()</script> — longer than 1024 characters [x" in out
    assert "exp|[b]<i>x</i>" in out


def test_markdown_renders_the_lab_text_as_text_in_its_own_cells(real):
    state = marked(real)
    said = RENDER.render(optimize_markdown(state))
    assert "<script" not in said and "<i>" not in said and "<a " not in said
    assert "Handle [bold]CSV[/bold] files | tables &lt;script&gt;alert(1)&lt;/script&gt;" in said
    for table in re.findall(r"<table>.*?</table>", said, re.S):
        rows = re.findall(r"<tr>(.*?)</tr>", table, re.S)
        widths = {len(re.findall(r"<t[hd][ >]", row)) for row in rows}
        assert len(widths) == 1, table


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def test_html_escapes_the_lab_text_and_loads_nothing(real):
    state = marked(real)
    page = optimize_html(state)
    parser = _Tags()
    parser.feed(page)
    names = [tag for tag, _ in parser.tags]
    assert "script" not in names and "i" not in names and "b" not in names
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    [csp] = [a["content"] for tag, a in parser.tags
             if tag == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert csp is not None and csp.startswith("default-src 'none'")
    assert [a for _, a in parser.tags if a.get("src") or a.get("href", "#").startswith(
        ("http", "//"))] == []


def test_every_css_rule_of_the_session_report_is_scoped_to_the_report():
    css = re.sub(r"/\*.*?\*/", "", OPTIMIZE_CSS, flags=re.S)
    selectors = [s.strip() for block in re.findall(r"([^{}]+)\{[^{}]*\}", css)
                 for s in block.split(",")]
    assert selectors
    assert [s for s in selectors if not s.startswith(".ix-report")] == []


# --------------------------------------------------------------------------- word diff

def test_word_diff_gives_the_runs_of_same_deleted_and_inserted_words():
    assert word_diff("a b  c d", "a x c d e") == [
        ("same", "a"), ("del", "b"), ("ins", "x"), ("same", "c d"), ("ins", "e")]
    assert word_diff("a b", "a b") == [("same", "a b")]
    assert word_diff("", "new words") == [("ins", "new words")]
    assert word_diff("old one", "") == [("del", "old one")]


def test_the_word_diff_is_struck_red_and_green_on_a_terminal_and_marked_in_md_and_html(real):
    state = small_diff(real)
    console = Console(width=80, color_system="standard", force_terminal=True,
                      file=io.StringIO())
    segments = list(console.render(optimize_renderable(state)))
    deleted = next(s for s in segments if "[-beta-]" in s.text)
    inserted = [s for s in segments if s.text.startswith("{+")]
    assert deleted.style is not None and deleted.style.strike and \
        deleted.style.color is not None and deleted.style.color.name == "red"
    assert [s.text for s in inserted] == ["{+zeta+}", "{+epsilon+}"]
    assert all(s.style is not None and s.style.color is not None
               and s.style.color.name == "green" for s in inserted)
    assert "alpha [-beta-] {+zeta+} gamma delta {+epsilon+}" in flat(terminal(state))
    assert "> alpha ~~beta~~ **zeta** gamma delta **epsilon**" in optimize_markdown(state)
    assert "alpha <del>beta</del> <ins>zeta</ins> gamma delta <ins>epsilon</ins>" in \
        optimize_body_html(state)
