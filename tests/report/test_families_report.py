"""Perturbation families in a report's figures (issue 32 item 9): variant cases reach the
"correct rate by difficulty" figure with their file's difficulty, and the rewordings of one
original count as one unit of its interval."""

import numpy as np
import pytest

from ix.report import figures
from ix.stats.clustered import hierarchical_interval
from ix.stats.intervals import beta_interval


def test_variant_cases_count_in_the_difficulty_figure_as_one_family_each():
    # two files of hard cases, each expanded into 4 variants that vote alike
    votes = {"a~1": True, "a~2": True, "a~3": True, "a~4": False,
             "b~1": False, "b~2": False, "b~3": False, "b~4": True}
    summary = {"subjects": [{"name": "s", "probe_results": [
        {"probe_id": c, "correct": v} for c, v in votes.items()]}]}
    rows = [{"probe_id": c, "difficulty": "hard", "family": c.split("~")[0]} for c in votes]
    (hard,) = figures.difficulty(summary, rows)["by_subject"]["s"]
    assert (hard["k"], hard["n"], hard["rate"]) == (4, 8, 0.5)
    lo, hi = hierarchical_interval(np.array([3, 1]), np.array([4, 4]), estimate=0.5)
    assert hard["ci"] == pytest.approx([lo, hi], abs=1e-6)
    flat_lo, flat_hi = beta_interval(4, 8)
    assert hi - lo > flat_hi - flat_lo  # 2 prompts, not 8 independent cases
    # without families (rows of case files only): the Beta over the cases, as before
    (old,) = figures.difficulty(summary, [{**r, "family": r["probe_id"]} for r in rows]
                                )["by_subject"]["s"]
    assert old["ci"] == pytest.approx([flat_lo, flat_hi], abs=1e-6)
