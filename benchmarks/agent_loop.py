"""What ix's agent loop costs beyond the model (issue 37): the `anthropic` runtime with two
tools against a loopback Messages API that answers at once (tests/runtimes/fake_llm_servers:
lookup, then convert, then the answer), so every millisecond is ix's, the SDK's and the
tools'.

    .venv/bin/python benchmarks/agent_loop.py [--trials 200]

Prints, per trial of three model calls and two tool calls: the wall time with `python` tools
(in process) and with `command` tools (a program each), each less a trial of one model
call and no tool (the same server, the same SDK), divided by the two extra calls — the
loop's cost per model call — and the command tool's cost per call against the python
tool's; and the same conversation through the simulated-user wrapper (two turns).
"""

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests" / "runtimes")]

from fake_llm_servers import FakeLLMServer, Request, text_reply, tool_reply  # noqa: E402

from ix.domain.types import Subject  # noqa: E402
from ix.eval.models import EvalCase, SimulatedUser  # noqa: E402
from ix.runtimes.registry import RuntimeContext, build_runtime  # noqa: E402
from ix.runtimes.simulated_user import SimulatedUserRuntime  # noqa: E402

TOOL = Path(tempfile.mkdtemp()) / "tool.py"
TOOL.write_text("import json, sys\nprint(json.dumps({'celsius': 21}))\n")


def agent(request: Request) -> object:
    results = [b for m in request.body["messages"] if isinstance(m.get("content"), list)
               for b in m["content"] if b.get("type") == "tool_result"]
    if "no tools" in json.dumps(request.body["messages"][0]):
        return text_reply("Hello.")
    if not results:
        return tool_reply("lookup", {"city": "Paris"})
    if len(results) == 1:
        return tool_reply("convert", {"celsius": 21})
    return text_reply("It is 69.8 F.")


def runtime(base_url: str, run: dict | None) -> object:
    spec = {"kind": "anthropic", "model": "claude-haiku-4-5", "base_url": base_url,
            "api_key_env": None, "backoff_s": 0}
    if run is not None:
        spec["tools"] = [{"name": n, "input_schema": {"type": "object"}, "run": run}
                         for n in ("lookup", "convert")]
    return build_runtime(spec, RuntimeContext())


async def timed(rt: object, case: EvalCase, trials: int) -> list[float]:
    subject = Subject(name="s")
    out = []
    for i in range(trials):
        t0 = time.perf_counter()
        await rt.invoke(subject, case, seed=i)  # type: ignore[attr-defined]
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=200)
    trials = parser.parse_args().trials
    case = EvalCase(id="c", prompt="How warm is it in Paris?", expectation="must_trigger")
    plain = EvalCase(id="p", prompt="no tools", expectation="must_trigger")
    with FakeLLMServer("anthropic", router=agent) as api:
        one = asyncio.run(timed(runtime(api.base_url, None), plain, trials))
        py = asyncio.run(timed(runtime(api.base_url, {
            "kind": "python", "function": "json:dumps"}), case, trials))
        cmd = asyncio.run(timed(runtime(api.base_url, {
            "kind": "command", "argv": [sys.executable, "-S", str(TOOL)]}), case,
            max(20, trials // 5)))
        user = build_runtime({"kind": "mock"}, RuntimeContext())
        talk = SimulatedUserRuntime(runtime(api.base_url, {
            "kind": "python", "function": "json:dumps"}), user)
        conv = asyncio.run(timed(talk, case.model_copy(update={"user": SimulatedUser(
            goal="know it", max_turns=2)}), trials))
    m1, mp, mc, mu = (statistics.median(x) for x in (one, py, cmd, conv))
    print(f"one model call, no tools:            {m1:7.2f} ms a trial (median of {trials})")
    print(f"3 model calls + 2 python tool calls: {mp:7.2f} ms a trial")
    print(f"  the loop's cost a model call:      {(mp - m1) / 2:7.2f} ms (beyond the first)")
    print(f"3 model calls + 2 command tool calls:{mc:7.2f} ms a trial")
    print(f"  a command tool call over a python one: {(mc - mp) / 2:7.2f} ms")
    print(f"a 2-turn conversation (mock user):   {mu:7.2f} ms a trial "
          f"({mu / mp:.2f}x the one-turn trial)")


if __name__ == "__main__":
    main()
