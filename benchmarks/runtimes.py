"""Overheads of the real runtimes, through the real `ix run`.

    .venv/bin/python benchmarks/runtimes.py

1. `command`: per-trial overhead of spawning a program and parsing its output — 200 trials
   of `/bin/true` with the `exit_code` sensor, at concurrency 1 and 8, against the same
   experiment on the `mock` runtime (engine time: the run's started_at..finished_at).
2. `anthropic` / `openai`: concurrency reached against a loopback API that answers after
   200 ms (the fake servers of the test suite): 200 trials at concurrency 50, the most
   requests the server saw in flight, and the engine time against the ideal
   200 × 0.2 s / 50 = 0.8 s.
The claude-code stream parser has its own: benchmarks/claude_stream_parser.py.
"""

import json
import os
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "runtimes")]
IX = str(Path(sys.executable).parent / "ix")


def engine_seconds(summary: dict) -> float:
    def t(x: str) -> datetime:
        return datetime.fromisoformat(x.replace("Z", "+00:00"))

    return (t(summary["finished_at"]) - t(summary["started_at"])).total_seconds()


def run(lab: Path, *args: str, env: dict | None = None) -> dict:
    out = subprocess.run([IX, "run", "--lab", str(lab), "--json", *args], capture_output=True,
                         text=True, env={**os.environ, **(env or {})})
    if out.returncode not in (0, 1):
        raise SystemExit(out.stderr)
    return json.loads(out.stdout)


def command_overhead(root: Path) -> None:
    lab = root / "cmd"
    for name, runtime, sensor in (("cmd", "{kind: command, argv: [/bin/true]}", "exit_code"),
                                  ("mock", "{kind: mock, default_rate: 1.0}", "activation")):
        d = lab / name
        (d / "cases").mkdir(parents=True)
        for i in range(20):
            (d / "cases" / f"must-{i:03d}.md").write_text(
                f"---\nexpectation: must_trigger\n---\nrun {i}\n", encoding="utf-8")
        (d / "experiment.yaml").write_text(
            f"name: {name}\nskill: t\ntrials: 10\nruntime: {runtime}\nsensor: {sensor}\n",
            encoding="utf-8")
    print("1) command runtime: 200 trials of /bin/true (exit_code sensor) vs mock")
    for concurrency in ("1", "8"):
        cmd = engine_seconds(run(lab, "cmd", "--concurrency", concurrency))
        mock = engine_seconds(run(lab, "mock", "--concurrency", concurrency))
        print(f"   concurrency {concurrency}: command {cmd:.2f} s, mock {mock:.2f} s -> "
              f"{(cmd - mock) / 200 * 1000:.2f} ms per trial for spawn + parse")


def api_concurrency(root: Path) -> None:
    from fake_llm_servers import FAKE_KEY, FakeLLMServer, skill_call, text_reply

    from conftest import case, write

    def router(req):  # a Skill call for csv prompts, text otherwise
        text = req.prompt_text().split("</system-reminder>")[-1]
        return skill_call("csv-summary") if req.body.get("tools") and "csv" in text \
            else text_reply()

    print("\n2) API runtimes against a loopback server answering in 200 ms: 200 trials, "
          "concurrency 50, ideal 0.80 s")
    for provider, model in (("anthropic", "claude-haiku-4-5"), ("openai", "gpt-4o-mini")):
        with FakeLLMServer(provider, router=router, delay_s=0.2) as api:
            lab = root / provider
            write(lab / "skills/csv-summary/SKILL.md",
                  "---\nname: csv-summary\ndescription: Summarize CSV files.\n---\nbody\n")
            exp = lab / "load"
            write(exp / "experiment.yaml",
                  f"name: load\nsensor: {{kind: activation, skill: csv-summary}}\ntrials: 5\n"
                  f"runtime:\n  kind: {provider}\n  model: {model}\n  base_url: "
                  f"{api.base_url}\n  api_key_env: IX_BENCH_KEY\n"
                  "subjects:\n  - name: s\n    skills: [csv-summary]\n")
            for i in range(40):
                must = i % 2 == 1
                case(exp, f"{'must' if must else 'not'}-{i:03d}",
                     "must_trigger" if must else "should_not_trigger",
                     f"Summarize file{i}.csv" if must else f"Tell me joke number {i}")
            s = run(lab, "--concurrency", "50", env={"IX_BENCH_KEY": FAKE_KEY})
            seconds = engine_seconds(s)
            print(f"   {provider}: {s['errors']} errors, {len(api.api_requests())} requests, "
                  f"at most {api.max_in_flight} in flight; engine {seconds:.2f} s "
                  f"({seconds / 0.8:.2f}x ideal)")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="ix-bench-rt-") as tmp:
        command_overhead(Path(tmp))
        api_concurrency(Path(tmp))


if __name__ == "__main__":
    main()
