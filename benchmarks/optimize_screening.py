"""Real calls saved by `ix optimize --screen-with lexical`, at the same holdout outcome.

    .venv/bin/python benchmarks/optimize_screening.py              # ~3 minutes, offline
    .venv/bin/python benchmarks/optimize_screening.py --finalists 1 2 --seeds 0 1 2 3

Each lab is optimized twice on the same "expensive" real subject — without screening, and
screened with the `lexical` runtime as the proxy (`--finalists K`) — and the calls that
reached the real subject are counted at the wire. The real subject is a loopback Messages
API (the test suite's `FakeLLMServer`, `tests/optimize_lab.py`'s `lexical_route`): it routes
as the `lexical` runtime does at temperature 0 — so it is a proxy's best case, a subject the
proxy ranks almost as it does itself (the proxy runs at `lexical`'s defaults, temperature
0.5) — answers after `--latency-ms` and is priced at $3 / $15 per million tokens ($0.0042 a
call). The labs: the bundled example (examples/lab, `skill-activation`, 25 cases × 5 trials)
at each split seed of `--seeds`, and the weak-description lab of `tests/optimize_lab.py`
(`table-profile` described only as "Describes things.", 30 cases × 1 trial); each with the
offline `keywords` proposer (one to three candidates a round, often one round), and the
example at the first seed and the weak lab with an LLM-like proposer (`--proposer
anthropic`: the same loopback server, asked without skills, answers three candidates a
round, `optimize_lab.proposals`; its calls are not the subject's and are not counted).

The table: real calls and cost without and with screening, the saving, the holdout verdict
of each and whether the two holdout comparisons are the same (the same candidate judged,
the same paired counts). Nothing is downloaded; everything runs on 127.0.0.1.
"""

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src"), str(REPO / "tests"), str(REPO / "tests" / "runtimes")]

from fake_llm_servers import FakeLLMServer  # noqa: E402

from ix.api.optimize import Settings, optimize  # noqa: E402
from optimize_lab import is_subject_call, lexical_route, make_expensive, make_lab  # noqa: E402

EXAMPLE = REPO / "examples" / "lab"


def _copy_example(dest: Path) -> Path:
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns("results", "artifacts"))
    return dest


def _calls(api: FakeLLMServer) -> int:
    return sum(map(is_subject_call, api.api_requests()))


def _session(api: FakeLLMServer, lab: Path, experiment: str, settings: Settings,
             proposer: str) -> dict[str, Any]:
    before = _calls(api)
    started = time.perf_counter()
    state = optimize(lab, experiment, settings, proposer=proposer).state
    holdout = state.get("holdout") or {}
    best = state.get("best")
    described = next((c["description"] for r in state["rounds"] for c in r["candidates"]
                      if c["id"] == best), None)
    return {"calls": _calls(api) - before, "cost": state["cost_usd"],
            "seconds": time.perf_counter() - started, "verdict": holdout.get("verdict"),
            "outcome": (described, [s.get("pairs") for s in holdout.get("subjects") or []]),
            "candidates": sum(len(r["candidates"]) for r in state["rounds"]),
            "screening": state.get("screening")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3],
                        help="split seeds of the bundled example")
    parser.add_argument("--finalists", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--latency-ms", type=float, default=20.0)
    args = parser.parse_args()

    labs: list[tuple[str, str, int | None, str]] = [
        ("examples/lab", "skill-activation", s, "keywords") for s in args.seeds]
    labs += [("weak description", "profiling", None, "keywords"),
             ("examples/lab", "skill-activation", args.seeds[0], "anthropic"),
             ("weak description", "profiling", None, "anthropic")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="ix-screening-") as tmp, \
            FakeLLMServer("anthropic", router=lexical_route,
                          delay_s=args.latency_ms / 1000) as api:
        n = 0

        def fresh(name: str, experiment: str) -> Path:
            nonlocal n
            n += 1
            lab = (_copy_example(Path(tmp) / f"lab{n}") if name == "examples/lab"
                   else make_lab(Path(tmp) / f"lab{n}"))
            make_expensive(lab / experiment, api.base_url)
            return lab

        for name, experiment, seed, proposer in labs:
            plain = _session(api, fresh(name, experiment), experiment, Settings(seed=seed),
                             proposer)
            for k in args.finalists:
                screened = _session(api, fresh(name, experiment), experiment,
                                    Settings(seed=seed, screen_with="lexical", finalists=k),
                                    proposer)
                sc = screened["screening"] or {}
                assert screened["calls"] == sc.get("real_trials"), (screened, sc)
                rows.append({
                    "lab": (name if seed is None else f"{name} seed {seed}"),
                    "proposer": proposer, "k": k,
                    "cands": plain["candidates"], "plain": plain, "screened": screened,
                    "saved": plain["calls"] - screened["calls"],
                    "recorded": sc.get("saved_trials"),
                    "same": plain["outcome"] == screened["outcome"]})
                print(f"  {rows[-1]['lab']}, {proposer}, finalists {k}: done",
                      file=sys.stderr)

    print(f"real subject: loopback Messages API, {args.latency_ms:g} ms a call, $0.0042 a "
          "call; proxy: lexical (defaults); up to 5 rounds x 3 candidates; costs include "
          "the proposer's answers")
    print()
    print("| lab | proposer | finalists | candidates | real calls, plain | real calls, screened "
          "| saved | cost plain → screened | holdout verdict, plain | screened | same outcome |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        p, s = r["plain"], r["screened"]
        share = f" ({r['saved'] / p['calls']:.0%})" if p["calls"] else ""
        print(f"| {r['lab']} | {r['proposer']} | {r['k']} | {r['cands']} | {p['calls']} | "
              f"{s['calls']} | {r['saved']}{share} | ${p['cost']:.3f} → ${s['cost']:.3f} | "
              f"{p['verdict']} | {s['verdict']} | {'yes' if r['same'] else 'NO'} |")
    print()
    recorded = all(r["saved"] == r["recorded"] for r in rows if r["same"])
    print("saved calls as the session records them (screening.saved_trials) = the wire's "
          f"difference wherever the outcome is the same: {'yes' if recorded else 'NO'}")


if __name__ == "__main__":
    main()
