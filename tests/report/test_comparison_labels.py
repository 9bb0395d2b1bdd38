"""The goal's metric reads as primary and every other comparison metric as exploratory, with
"unadjusted" next to its interval and P(better), in the terminal and the Markdown report;
the terminal table fits 80 columns without cutting a value."""

import random

from rich.console import Console

from ix.eval.comparisons import compare_subjects
from ix.eval.models import EvalCase
from ix.eval.scoring import Tally
from ix.report.console import comparison_table
from ix.report.markdown import _comparisons


def _comparisons_of(primary):
    cases = ([EvalCase(id=f"must-{i}", prompt="-", expectation="must_trigger")
              for i in range(8)]
             + [EvalCase(id=f"not-{i}", prompt="-", expectation="should_not_trigger")
                for i in range(4)])
    rng = random.Random(3)
    tallies = []
    for p in (0.9, 0.3, 0.85):
        t = Tally(cases)
        for c in cases:
            for j in range(5):
                rate = p if c.expectation == "must_trigger" else 0.1
                t.add(c.id, rng.random() < rate, j)
        tallies.append(t)
    metrics = []
    for t in tallies:
        r = t.results("e")
        metrics.append({"tp": r.tp, "fp": r.fp, "fn": r.fn, "f1": r.f1})
    return compare_subjects(["control", "a-much-longer-variant-name", "b"], tallies, metrics,
                            cases, primary=primary)


def test_the_terminal_table_labels_roles_and_fits_80_columns():
    console = Console(width=80, record=True)
    console.print(comparison_table({"comparisons": _comparisons_of("recall")}))
    text = console.export_text()
    assert "…" not in text and max(map(len, text.splitlines())) <= 80
    assert "primary" in text and "goal's metric" in text
    assert "exploratory" in text and text.count("unadjusted") == 2  # 2 variants
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("recall"))
    assert first < next(i for i, line in enumerate(lines) if line.startswith("precision"))


def test_markdown_marks_the_primary_metric_and_the_unadjusted_ones():
    lines = "\n".join(_comparisons(_comparisons_of("f1")))
    assert "## Comparisons" in lines and "| F1 (primary) |" in lines
    rows = [line for line in lines.splitlines() if line.startswith("| recall")]
    assert len(rows) == 2 and all(row.count("(unadjusted)") == 2 for row in rows)
