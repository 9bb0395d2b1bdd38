"""A conversation with a simulated user (issue 37, DESIGN.md §11), end to end: the subject is
a scripted model behind a loopback Messages API, the user a scripted program behind the
`command` runtime (the experiment's `simulated_user`), each side recorded, the whole dialogue
read by `user_goal` and `turns`, cached as one trial."""

import json
from pathlib import Path

import pytest

from conftest import ix_in_process, run_ix, write
from ix.eval.models import SimulatedUser
from ix.runtimes.simulated_user import GIVE_UP, user_prompt
from runtimes.fake_llm_servers import FAKE_KEY, INPUT_TOKENS, FakeLLMServer, Request, text_reply

KEY_ENV = "IX_TEST_KEY"

#: The user: gives its order number when asked, says [DONE] once the refund is approved,
#: gives up when told no. It counts its calls beside itself.
USER = """
import sys
prompt = sys.stdin.read()
with open(__file__ + ".calls", "a") as f:
    f.write("x")
last = prompt.split("ASSISTANT: ")[-1].split("\\n\\nWrite only")[0]
if "approved" in last:
    print("[DONE]")
elif "cannot" in last:
    print("[GIVE UP]")
else:
    print("It is order 42.")
"""


def agent(request: Request) -> object:
    """The scripted model: asks for the order number, then approves (or refuses, for a
    case about a gift card)."""
    said = json.dumps(request.body["messages"])
    if "gift card" in said:
        return text_reply("I cannot refund a gift card.")
    if "order 42" in said:
        return text_reply("Your refund for order 42 is approved.")
    return text_reply("Which order is it?")


def experiment(lab: Path, api: FakeLLMServer, sensors: str) -> Path:
    exp = lab / "support"
    write(exp / "user.py", USER)
    write(exp / "experiment.yaml", f"""
        name: support
        trials: 1
        sensors: {sensors}
        runtime: {{kind: anthropic, model: claude-sonnet-4-5, base_url: "{api.base_url}",
                   api_key_env: {KEY_ENV}, backoff_s: 0}}
        simulated_user:
          kind: command
          argv: [python3, {json.dumps(str(exp / "user.py"))}]
          stdin: "{{{{ prompt }}}}"
        """)
    for name, prompt, turns in (("refund", "I want a refund.", 4),
                                ("gift", "Refund my gift card.", 4),
                                ("stubborn", "I want a refund.", 1)):
        write(exp / "cases" / f"{name}.md",
              f"---\nexpectation: must_trigger\nuser: {{persona: a customer, goal: get a "
              f"refund, max_turns: {turns}}}\n---\n{prompt}\n")
    return exp


def test_a_simulated_user_talks_with_the_subject_until_its_goal_and_is_cached(lab: Path):
    with FakeLLMServer("anthropic", router=agent) as api:
        exp = experiment(lab, api, "[{kind: user_goal, max_turns: 3}, {kind: turns, max: 3}]")
        r = run_ix("run", "--lab", str(lab), "--cache", env={KEY_ENV: FAKE_KEY})
        assert r.code in (0, 1), r.output
        by = {x["probe_id"]: x for x in map(json.loads, (exp / "results" / "trials.jsonl")
                                            .read_text().splitlines())}
        refund = by["refund"]["observation"]
        assert [(m["role"], m["content"]) for m in refund["meta"]["conversation"]] == [
            ("user", "I want a refund."), ("assistant", "Which order is it?"),
            ("user", "It is order 42."), ("assistant", "Your refund for order 42 is approved."),
            ("user", "[DONE]")]
        assert refund["meta"]["stop"] == "goal" and refund["meta"]["turns"] == 2
        assert refund["content"] == "Your refund for order 42 is approved."
        assert refund["tokens_input"] == 2 * INPUT_TOKENS  # the subject's, not the user's
        # the second request carried the first exchange as history
        second = next(q for q in api.api_requests() if "order 42" in json.dumps(q.body))
        assert [m["role"] for m in second.body["messages"]] == ["user", "assistant", "user"]
        readings = {r["sensor_name"]: r["passed"] for r in by["refund"]["readings"]}
        assert readings == {"user_goal": True, "turns": True}
        gift = by["gift"]["observation"]["meta"]
        assert gift["stop"] == "gave_up" and gift["conversation"][-1]["content"] == GIVE_UP
        assert by["gift"]["readings"][0]["passed"] is False
        stubborn = by["stubborn"]["observation"]["meta"]
        assert stubborn["stop"] == "max_turns" and stubborn["turns"] == 1

        # both sides replayed from the cache: neither the model nor the user is asked
        requests, calls = len(api.api_requests()), (exp / "user.py.calls").read_text()
        assert requests == 2 + 1 + 1 and len(calls) == 2 + 1 + 0
        again = ix_in_process("run", "--lab", str(lab), "--cache", env={KEY_ENV: FAKE_KEY})
        assert again.code in (0, 1), again.output
        assert len(api.api_requests()) == requests
        assert (exp / "user.py.calls").read_text() == calls


def test_a_case_with_a_user_needs_a_simulated_user(lab: Path):
    with FakeLLMServer("anthropic", router=agent) as api:
        exp = experiment(lab, api, "[{kind: user_goal}]")
        yaml = (exp / "experiment.yaml").read_text()
        (exp / "experiment.yaml").write_text(yaml.split("simulated_user:")[0])
        r = run_ix("run", "--lab", str(lab), env={KEY_ENV: FAKE_KEY})
        assert r.code == 2 and "simulated_user" in r.stderr and "Traceback" not in r.stderr
        assert not (exp / "results").exists()
        write(exp / "cases" / "refund.md", "---\nexpectation: must_trigger\nuser: {goal: ''}\n"
              "---\nI want a refund.\n")
        r = ix_in_process("validate", "--lab", str(lab))
        assert r.code == 2 and "user.goal" in r.output, r.output


@pytest.mark.parametrize("persona", ["", "a hurried customer"])
def test_the_user_is_told_its_goal_the_conversation_and_how_to_end(persona: str):
    user = SimulatedUser(persona=persona, goal="get a refund", stop_when="[OK]")
    text = user_prompt(user, [{"role": "user", "content": "hi"},
                              {"role": "assistant", "content": "hello"}])
    assert "Your goal: get a refund" in text and "USER: hi\n\nASSISTANT: hello" in text
    assert "reply with exactly [OK]" in text and GIVE_UP in text
    assert ("You are this person: a hurried customer" in text) is bool(persona)
