"""ix.stats.bayes_evals: the bayes_evals-compatible face over a cases × subjects 0/1 table,
given as a pandas DataFrame or as a plain dict."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ix.stats.bayes_evals import (
    independent_comparisons,
    independent_intervals,
    paired_comparisons,
)
from ix.stats.comparisons import paired_prob_a_beats_b, prob_a_beats_b
from ix.stats.paired_probit import probit_prob_a_beats_b

TABLE = {
    "claude": [1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1, 0],
    "gpt": [1, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0, 0],
    "mock": [0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0],
    "twin": [1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1, 0],
}
NAMES = list(TABLE)


@pytest.fixture(params=["dataframe", "dict"])
def table(request):
    return pd.DataFrame(TABLE) if request.param == "dataframe" else dict(TABLE)


def test_independent_intervals_are_beta_quantiles_per_subject_in_column_order(table):
    out = independent_intervals(table, alpha=0.1, prior=(0.5, 0.5))
    assert list(out) == NAMES
    for name, column in TABLE.items():
        k, n = sum(column), len(column)
        expected = stats.beta.ppf([0.05, 0.95], k + 0.5, n - k + 0.5)
        assert out[name] == pytest.approx(tuple(expected), abs=1e-13)


@pytest.mark.parametrize("compare", [independent_comparisons, paired_comparisons])
def test_comparison_matrices_have_nan_diagonals_and_complementary_entries(table, compare):
    m = compare(table)
    assert m.shape == (4, 4)
    assert np.all(np.isnan(np.diag(m)))
    off = ~np.eye(4, dtype=bool)
    assert np.all((m[off] >= 0) & (m[off] <= 1))
    np.testing.assert_allclose((m + m.T)[off], 1.0, atol=1e-12)


def test_independent_matrix_entries_are_prob_a_beats_b_on_column_totals(table):
    m = independent_comparisons(table, prior=(1, 1))
    totals = {name: sum(col) for name, col in TABLE.items()}
    n = len(TABLE["claude"])
    for i, a in enumerate(NAMES):
        for j, b in enumerate(NAMES):
            if i != j:
                assert m[i, j] == prob_a_beats_b(totals[a], n, totals[b], n)
    assert m[0, 3] == pytest.approx(0.5, abs=1e-12)  # identical columns


def test_paired_matrix_entries_come_from_each_pairs_two_by_two_table(table):
    m = paired_comparisons(table, model="dirichlet")
    a, b = np.array(TABLE["claude"]), np.array(TABLE["gpt"])
    s, t = int(np.sum((a == 1) & (b == 1))), int(np.sum((a == 1) & (b == 0)))
    u, v = int(np.sum((a == 0) & (b == 1))), int(np.sum((a == 0) & (b == 0)))
    assert (s, t, u, v) == (6, 3, 0, 3)
    assert m[0, 1] == paired_prob_a_beats_b(s, t, u, v)
    assert m[0, 1] == pytest.approx(stats.beta.sf(0.5, t + 1, u + 1), abs=1e-14)
    assert m[0, 3] == pytest.approx(0.5)  # no discordant pairs


def test_paired_matrix_defaults_to_the_probit_model_of_each_pairs_table(table):
    m = paired_comparisons(table)
    assert m[0, 1] == probit_prob_a_beats_b(6, 3, 0, 3)
    assert m[1, 0] == 1.0 - m[0, 1]
    assert m[0, 3] == pytest.approx(0.5, abs=1e-6)  # identical columns


def test_pairing_sharpens_the_comparison_of_nested_subjects():
    """gpt solves a subset of what claude solves: paired evidence is stronger."""
    table = pd.DataFrame(TABLE)
    assert paired_comparisons(table)[0, 1] > independent_comparisons(table)[0, 1]


def test_results_are_deterministic(table):
    assert np.array_equal(paired_comparisons(table), paired_comparisons(table), equal_nan=True)
    assert np.array_equal(independent_comparisons(table), independent_comparisons(table),
                          equal_nan=True)


def test_boolean_columns_are_accepted():
    df = pd.DataFrame({"a": [True, False, True], "b": [False, False, True]})
    assert independent_intervals(df)["a"] == independent_intervals({"a": [1, 0, 1]})["a"]


@pytest.mark.parametrize("bad", [
    {"a": [1, 0, 1], "b": [1, 0]},          # unequal lengths
    {"a": [1, 2, 0], "b": [1, 0, 0]},       # not 0/1
    {"a": [1, float("nan"), 0], "b": [1, 0, 0]},
    {},
])
def test_malformed_tables_are_rejected(bad):
    with pytest.raises(ValueError):
        paired_comparisons(bad)
    with pytest.raises(ValueError):
        independent_intervals(bad)
