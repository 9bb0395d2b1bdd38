"""How close `ix.stats.paired_comparisons` (default: the latent bivariate-probit model, by
quadrature) comes to the original `bayes_evals` library (Bowyer, Aitchison & Ivanova 2025),
which estimates the same posterior with 10k importance samples.

The original is not on PyPI and is not vendored here. Fetch its one file and its example
table, then point this script at them:

    curl -LO https://raw.githubusercontent.com/sambowyer/bayes_evals/main/src/bayes_evals/bayes_evals.py
    curl -LO https://raw.githubusercontent.com/sambowyer/bayes_evals/main/examples/data/langchain_data_tool_use_FULL.csv
    .venv/bin/python benchmarks/bayes_evals_parity.py bayes_evals.py \
        langchain_data_tool_use_FULL.csv --seeds 100

It runs the original's `paired_comparisons` with `np.random.seed(s)` for each seed, and
prints the largest |ix − original| over the matrix for the seed average (the original's
answer less its Monte Carlo noise) and for single runs (what one call of the original gives).
Needs pandas; matplotlib, which the original imports for its plots, is stubbed if missing.
"""

import argparse
import importlib.util
import sys
import time
import types
from pathlib import Path

import numpy as np


def _load_original(path: Path) -> types.ModuleType:
    if importlib.util.find_spec("matplotlib") is None:   # only its plotting functions use it
        stub = types.ModuleType("matplotlib")
        stub.pyplot = types.ModuleType("matplotlib.pyplot")  # type: ignore[attr-defined]
        sys.modules["matplotlib"] = stub
        sys.modules["matplotlib.pyplot"] = stub.pyplot  # type: ignore[attr-defined]
    spec = importlib.util.spec_from_file_location("bayes_evals_original", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("original", type=Path, help="the original's bayes_evals.py")
    parser.add_argument("table", type=Path, help="a cases × models 0/1 CSV (its example)")
    parser.add_argument("--seeds", type=int, default=100)
    args = parser.parse_args()

    import pandas as pd

    from ix.stats.bayes_evals import paired_comparisons

    original = _load_original(args.original)
    df = pd.read_csv(args.table)
    started = time.perf_counter()
    ours = paired_comparisons(df)
    ix_seconds = time.perf_counter() - started
    runs = []
    for seed in range(args.seeds):
        np.random.seed(seed)  # the original draws from numpy's global generator
        runs.append(original.paired_comparisons(df).to_numpy())
    mean = np.mean(runs, axis=0)
    off = ~np.eye(len(df.columns), dtype=bool)
    single = [float(np.max(np.abs(run - ours)[off])) for run in runs]
    worst = np.unravel_index(np.nanargmax(np.where(off, np.abs(mean - ours), np.nan)),
                             mean.shape)
    print(f"{len(df)} cases × {len(df.columns)} models, {args.seeds} seeds of the original; "
          f"ix took {ix_seconds:.2f} s")
    print(f"max |ix − original seed average| = {np.max(np.abs(mean - ours)[off]):.4f} "
          f"({df.columns[worst[0]]} vs {df.columns[worst[1]]}: ix {ours[worst]:.4f}, "
          f"original {mean[worst]:.4f})")
    print(f"max |ix − one run of the original|: median over seeds {np.median(single):.4f}, "
          f"worst {max(single):.4f}")


if __name__ == "__main__":
    main()
