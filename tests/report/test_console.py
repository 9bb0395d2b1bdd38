"""The terminal summary of `ix run` (`ix.report.console`): a large run's per-case table shows
only the cases that matter, at most a screenful, and says where the others are."""

from typing import Any

from rich.console import Console, Group

from ix.report.console import CASES_SHOWN, cases_that_matter, run_cases


def probe(i: int, *, correct: bool = True, score: float | None = 1.0) -> dict[str, Any]:
    return {"probe_id": f"c-{i:03d}", "expectation": "must_trigger", "score": score,
            "score_ci": None if score is None else [0.5, 1.0], "passed": 3, "n": 3,
            "correct": None if score is None else correct, "errors": 3 if score is None else 0}


def summary(probes: list[dict[str, Any]], unsettled: tuple[int, ...] = (),
            flips: tuple[int, ...] = ()) -> dict[str, Any]:
    blocks = [{"name": name, "probe_results": probes,
               "unsettled": [{"probe_id": f"c-{i:03d}", "p_flip": 0.3} for i in unsettled]}
              for name in ("control", "variant")]
    return {"experiment_name": "exp", "run_id": "20261126T000000Z-abcdef", "subjects": blocks,
            "comparisons": [{"control": "control", "variant": "variant",
                             "flips": [{"probe_id": f"c-{i:03d}"} for i in flips]}]}


def text(s: dict[str, Any], block: int = 0) -> str:
    console = Console(width=80, record=True, color_system=None)
    console.print(Group(*run_cases(s, s["subjects"][block])))
    return console.export_text()


def rows(output: str) -> list[str]:
    return [line.split()[0] for line in output.splitlines() if line.startswith("c-")]


def test_cases_that_matter_are_wrong_then_unscored_then_unsettled_then_flipped():
    probes = [probe(0), probe(1, correct=False), probe(2, score=None), probe(3), probe(4),
              probe(5, correct=False)]
    block = {"probe_results": probes, "unsettled": [{"probe_id": "c-003", "p_flip": 0.3}]}
    found = [p["probe_id"] for p in cases_that_matter(block, {"c-004", "c-001"})]
    assert found == ["c-001", "c-005", "c-002", "c-003", "c-004"]


def test_a_run_that_fits_a_screen_prints_every_case():
    out = text(summary([probe(i) for i in range(CASES_SHOWN)]))
    assert rows(out) == [f"c-{i:03d}" for i in range(CASES_SHOWN)]
    assert "ix report" not in out


def test_a_large_run_prints_only_the_cases_that_matter_in_their_order_and_where_the_rest_are():
    probes = [probe(i, correct=i not in (40, 7)) for i in range(1000)]
    out = text(summary(probes, unsettled=(500,), flips=(900,)))
    assert rows(out) == ["c-007", "c-040", "c-500", "c-900"]
    said = " ".join(out.split())
    assert "the 4 wrong, unsettled or flipped cases of 1,000 shown" in said
    assert "`ix report 20261126T000000Z-abcdef` lists every case" in said


def test_more_cases_that_matter_than_a_screen_shows_the_worst_and_counts_the_others():
    probes = [probe(i, correct=i % 10 != 0) for i in range(1000)]  # 100 wrong
    out = text(summary(probes, unsettled=(1, 2, 3)))
    assert rows(out) == [f"c-{i:03d}" for i in range(0, 10 * CASES_SHOWN, 10)]
    assert (f"{CASES_SHOWN} of the 103 wrong, unsettled or flipped cases shown (1,000 cases "
            "in all)") in " ".join(out.split())


def test_a_large_run_with_nothing_wrong_says_so_without_a_table():
    out = text(summary([probe(i) for i in range(100)]))
    assert rows(out) == [] and "exp · control" in out
    assert "all 100 cases right and settled" in " ".join(out.split())


def test_a_flip_is_shown_for_both_the_control_and_the_variant():
    s = summary([probe(i) for i in range(100)], flips=(42,))
    assert rows(text(s, 0)) == rows(text(s, 1)) == ["c-042"]
