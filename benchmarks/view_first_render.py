"""`ix view` on a run of 100,000 trials: time to first render of the run page.

    .venv/bin/python benchmarks/view_first_render.py [--cases 100] [--trials 500]
                                                      [--subjects 2] [--no-browser]

Writes a lab with one run of cases × subjects × trials (default 100 × 2 × 500 = 100,000)
by a real `ix run` on the mock runtime at latency 0 (~10 s), then, each time on a freshly
started `ix view --port 0` (so nothing is cached in the viewer; the lab's query index is
built by the first server and reused after, as it would be in use):

- startup: from starting the command until it prints its URL;
- HTTP: GET of the run page until the full response, right after the URL is printed (cold:
  the viewer builds the run's report at startup, in the background, and this request waits
  for that build), then again (warm: cached), with the size; and on another fresh server,
  the first GET `--settle` seconds after the URL is printed (a user who looks at the
  experiments list first finds the report ready);
- Chromium (Debian's /usr/bin/chromium, headless, via Playwright): navigation to the run
  page until the `load` event, cold on a fresh server and then warm;
- the other pages on the warm server: experiments, a case's trials (first and last page of
  1,000), one trial, its (absent) trace is not asked for.

The viewer never ships the trials: the run page holds the report (aggregates, a binned
timeline) and one row per case; a case page holds 50 trials.
"""

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

import httpx

IX = str(Path(sys.executable).parent / "ix")
ENV = {k: v for k, v in os.environ.items() if not k.startswith("IX_")}
CHROMIUM = Path("/usr/bin/chromium")


def make_lab(root: Path, cases: int, trials: int, subjects: int) -> tuple[Path, str]:
    lab = root / "lab"
    exp = lab / "big"
    (exp / "cases").mkdir(parents=True)
    names = "\n".join(f"  - name: s{i}" for i in range(subjects))
    (exp / "experiment.yaml").write_text(
        "name: big\n"
        f"trials: {trials}\n"
        "runtime:\n  kind: mock\n  default_rate: 0.5\n  latency_ms: 0\n  skill: target\n"
        "  error_rates: {must-0001: 0.1}\n"
        "sensor:\n  kind: activation\n  skill: target\n"
        f"subjects:\n{names}\n", encoding="utf-8")
    for i in range(cases):
        kind, expectation = ("must", "must_trigger") if i % 2 == 0 else ("not",
                                                                        "should_not_trigger")
        (exp / "cases" / f"{kind}-{i + 1:04d}.md").write_text(
            f"---\nexpectation: {expectation}\ndifficulty: {('easy', 'medium', 'hard')[i % 3]}\n"
            f"---\nPrompt {i}\n", encoding="utf-8")
    t0 = time.perf_counter()
    subprocess.run([IX, "run", "--lab", str(lab), "big"], check=True, env=ENV,
                   stdout=subprocess.DEVNULL)
    print(f"ix run: {cases * trials * subjects:,} trials in {time.perf_counter() - t0:.1f} s")
    run_id = next((exp / "results" / "runs").iterdir()).name
    return lab, run_id


class Viewer:
    """A fresh `ix view --port 0`; `started` is how long it took to print its URL."""

    def __init__(self, lab: Path):
        t0 = time.perf_counter()
        self.proc = subprocess.Popen([IX, "view", "--lab", str(lab), "--port", "0"],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, env=ENV, start_new_session=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        self.started = time.perf_counter() - t0
        self.url = line.split(" at ", 1)[1].split()[0]

    def stop(self) -> None:
        os.killpg(self.proc.pid, signal.SIGINT)
        self.proc.wait(timeout=30)


def get(url: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    response = httpx.get(url, timeout=120)
    elapsed = time.perf_counter() - t0
    response.raise_for_status()
    return elapsed, len(response.content)


def browser_load(url: str, browser: object) -> float:
    page = browser.new_page()  # type: ignore[attr-defined]
    t0 = time.perf_counter()
    page.goto(url, wait_until="load", timeout=120_000)
    elapsed = time.perf_counter() - t0
    page.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--trials", type=int, default=500)
    parser.add_argument("--subjects", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3, help="cold starts measured")
    parser.add_argument("--settle", type=float, default=10.0,
                        help="seconds to wait before the 'settled' first request")
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ix-view-bench-") as tmp:
        lab, run_id = make_lab(Path(tmp), args.cases, args.trials, args.subjects)
        run_path = f"runs/{run_id}"
        case = "must-0001"
        figures: dict[str, list[float]] = {}
        size = 0

        def note(name: str, value: float) -> None:
            figures.setdefault(name, []).append(value)

        for _ in range(args.repeat):  # HTTP, cold then warm, each on a fresh server
            viewer = Viewer(lab)
            try:
                note("startup (command to URL printed)", viewer.started)
                cold, size = get(viewer.url + run_path)
                note("run page, HTTP, cold (first request)", cold)
                note("run page, HTTP, warm", get(viewer.url + run_path)[0])
                note("experiments page, HTTP", get(viewer.url)[0])
                trials = f"{viewer.url}{run_path}/trials?"
                note("case trials, page 1 of 20", get(trials + urlencode({"case": case}))[0])
                note("case trials, page 20 of 20",
                     get(trials + urlencode({"case": case, "page": 20}))[0])
                note("one trial", get(f"{viewer.url}{run_path}/trial?" + urlencode(
                    {"subject": "s0", "case": case, "trial": 250}))[0])
            finally:
                viewer.stop()
            viewer = Viewer(lab)
            try:
                time.sleep(args.settle)
                note(f"run page, HTTP, first request {args.settle:g} s after start",
                     get(viewer.url + run_path)[0])
            finally:
                viewer.stop()
        if not args.no_browser and CHROMIUM.exists():
            from playwright.sync_api import sync_playwright

            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True)
                for _ in range(args.repeat):
                    viewer = Viewer(lab)
                    try:
                        note("run page, Chromium to load, cold",
                             browser_load(viewer.url + run_path, browser))
                        note("run page, Chromium to load, warm",
                             browser_load(viewer.url + run_path, browser))
                    finally:
                        viewer.stop()
                browser.close()
        total = args.cases * args.subjects * args.trials
        print(f"\nix view, one run of {total:,} trials ({args.cases} cases × {args.subjects} "
              f"subjects × {args.trials} trials); median of {args.repeat} (min–max):")
        for name, values in figures.items():
            print(f"  {name:<40} {statistics.median(values):7.3f} s "
                  f"({min(values):.3f}–{max(values):.3f})")
        print(f"  {'run page response size':<40} {size / 1024:7.1f} KiB")


if __name__ == "__main__":
    main()
