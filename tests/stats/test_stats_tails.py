"""ix.stats.tails gives scipy.stats' binomial and noncentral-t tails and Student's t quantile
bit for bit, on and off the distributions' supports, without importing scipy.stats."""

import subprocess
import sys

import numpy as np
from scipy import stats

from ix.stats.tails import binom_sf, nct_sf, t_ppf


def test_binom_sf_is_scipys_on_and_off_the_support():
    rng = np.random.default_rng(1)
    n = rng.integers(0, 300, 5000)
    k = rng.integers(-3, 303, 5000) + rng.choice([0.0, 0.5], 5000)  # sf floors k, as scipy's
    p = np.where(rng.random(5000) < 0.1, rng.choice([0.0, 1.0], 5000), rng.random(5000))
    ours, theirs = binom_sf(k, n, p), stats.binom.sf(k, n, p)
    assert np.array_equal(ours, theirs, equal_nan=True)
    assert float(binom_sf(4, 9, 0.3)) == float(stats.binom.sf(4, 9, 0.3))
    assert (binom_sf(-1, 5, 0.3), binom_sf(5, 5, 0.3)) == (1.0, 0.0)


def test_nct_sf_and_t_ppf_are_scipys():
    rng = np.random.default_rng(2)
    df = rng.integers(1, 5000, 5000).astype(float)
    x, nc = rng.normal(0, 5, 5000), rng.normal(0, 10, 5000)
    q = rng.random(5000)
    assert np.array_equal(nct_sf(x, df, nc), stats.nct.sf(x, df, nc))
    assert np.array_equal(t_ppf(q, df), stats.t.ppf(q, df))
    cut = stats.t.ppf(0.95, 9)
    assert float(nct_sf(t_ppf(0.95, 9), 9, 2.5)) == float(stats.nct.sf(cut, 9, 2.5))


def test_the_tails_do_not_import_scipy_stats():
    probe = ("import sys; from ix.stats.tails import binom_sf, nct_sf, t_ppf; "
             "binom_sf(3, 9, 0.5); nct_sf(t_ppf(0.9, 5), 5, 1.0); "
             "print('scipy.stats' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=60).stdout.strip()
    assert out == "False"



def test_on_a_scipy_without_the_ufuncs_the_tails_are_scipy_stats():
    """scipy moves its private ufuncs (before 1.14 they sat in scipy.stats._boost): where
    scipy.special has none by these names, the tails go through scipy.stats."""
    probe = ("import types, scipy.special, scipy.stats as st\n"
             "scipy.special._ufuncs = types.SimpleNamespace()  # a scipy that moved them\n"
             "from ix.stats.tails import binom_sf, nct_sf\n"
             "print(binom_sf(4, 9, 0.3) == st.binom.sf(4, 9, 0.3),"
             " nct_sf(1.7, 9, 2.5) == st.nct.sf(1.7, 9, 2.5), binom_sf(9, 9, 0.3))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=60).stdout.split()
    assert out == ["True", "True", "0.0"]
