"""Warm start: what `ix serve` saves on `ix ls`, `ix report` and `ix run` of the example lab.

    .venv/bin/python benchmarks/warm_start.py [--runs 7]

Copies the bundled example lab (examples/lab, its offline experiments) to a temporary
folder, runs `ix run skill-activation` once to give `ix report` a run, starts `ix serve` on
a socket of its own, and times each command (wall clock, the whole `ix` process) `--runs`
times without the server (IX_NO_SERVE=1) and with it, interleaved; prints the median of each
and the saving. The server is stopped at the end.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

IX = str(Path(sys.executable).parent / "ix")
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "lab"
COMMANDS = {"ix ls": ["ls"], "ix report": ["report", "skill-activation"],
            "ix run": ["run", "skill-activation", "--trials", "2"]}


def timed(args: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run([IX, *args], env=env, cwd=cwd, capture_output=True, text=True)
    took = time.perf_counter() - started
    if done.returncode not in (0, 1):
        sys.exit(f"ix {' '.join(args)} failed ({done.returncode}): {done.stderr}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory(prefix="ixw-", dir="/tmp") as tmp:
        root = Path(tmp)
        lab = root / "lab"
        shutil.copytree(EXAMPLE, lab, ignore=shutil.ignore_patterns("results", ".ix"))
        env = {k: v for k, v in os.environ.items() if not k.startswith("IX_")}
        env.update(IX_SERVE_SOCKET=str(root / "serve.sock"), NO_COLOR="1", COLUMNS="100",
                   XDG_CONFIG_HOME=str(root / "config"))
        cold = {**env, "IX_NO_SERVE": "1"}
        timed(COMMANDS["ix run"], cold, lab)
        server = subprocess.Popen([IX, "serve"], env=env, stdout=subprocess.PIPE, text=True)
        assert server.stdout is not None
        server.stdout.readline()  # "serving on ...": imports done, listening
        try:
            times: dict[str, dict[str, list[float]]] = {
                name: {"cold": [], "warm": []} for name in COMMANDS}
            for _ in range(runs):
                for name, args in COMMANDS.items():
                    times[name]["cold"].append(timed(args, cold, lab))
                    times[name]["warm"].append(timed(args, env, lab))
        finally:
            subprocess.run([IX, "serve", "--stop"], env=env, capture_output=True)
            server.wait(timeout=30)
    print(f"median of {runs} runs (wall clock, seconds), without and with `ix serve`")
    print(f"{'command':<12}{'without':>10}{'with':>10}{'saved':>10}")
    for name, t in times.items():
        a, b = statistics.median(t["cold"]), statistics.median(t["warm"])
        print(f"{name:<12}{a:>10.3f}{b:>10.3f}{a - b:>9.3f} ({(a - b) / a:.0%})")


if __name__ == "__main__":
    main()
