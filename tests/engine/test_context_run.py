"""`context:` end to end in process: every subject at every length, the prefix reaching the
runtime before each case, and the answers falling as the conversation grows."""

import json
from pathlib import Path

import pytest
from fake_llm_servers import FAKE_KEY, FakeLLMServer, skill_call, text_reply

from conftest import run_ix, write
from ix.api.experiments import dry_run, run
from ix.lab.context import chars, tokens
from ix.lab.loader import load_experiment
from ix.runtimes._conversation import anthropic_messages, openai_messages
from ix.runtimes._skills import skill_listing

KEY_ENV = "IX_TEST_ANTHROPIC_KEY"
pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")
LENGTHS = [0, 8, 32]


def lab_with_context(lab: Path, runtime: str, lengths=LENGTHS, unit: str = "turns") -> Path:
    exp = lab / "e"
    write(lab / "skills" / "csv" / "SKILL.md",
          "---\nname: csv\ndescription: Profile CSV files. Use for any .csv question.\n---\nx\n")
    write(exp / "experiment.yaml", f"""
        name: e
        trials: 2
        sensor: {{kind: activation, skill: csv}}
        subjects:
          - name: base
            skills: [csv]
            runtime: {runtime}
        context:
          prefix: builtin:coding-session
          lengths: {lengths}
          unit: {unit}
        """)
    for i in range(6):
        write(exp / "cases" / f"must-{i:03d}.md",
              f"---\nexpectation: must_trigger\n---\nProfile data{i}.csv for me.\n")
        write(exp / "cases" / f"not-{i:03d}.md",
              f"---\nexpectation: should_not_trigger\n---\nWrite a haiku about rain {i}.\n")
    return exp


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_every_request_carries_exactly_the_prefix_at_its_length_and_routing_falls(
        lab, provider):
    """Through the real `ix`: a loopback API that calls the skill only while few messages
    precede the last user message gives a credible decline in the summary's context block,
    and each request it received is the prefix cut at the subject's length, then the case —
    message for message."""
    def last_text(body):
        content = body["messages"][-1]["content"]
        return content if isinstance(content, str) else content[-1]["text"]

    def router(request):
        near = len(request.body["messages"]) <= 20  # ctx=8: 13 messages, ctx=32: 45
        return skill_call("csv") if near and "csv" in last_text(request.body) else text_reply()

    model = "claude-sonnet-4-5" if provider == "anthropic" else "gpt-4.1"
    with FakeLLMServer(provider, router=router) as api:
        exp = lab_with_context(lab, f"{{kind: {provider}, model: {model}, "
                               f"base_url: '{api.base_url}', api_key_env: {KEY_ENV}}}")
        r = run_ix("run", "--lab", str(lab), env={KEY_ENV: FAKE_KEY})
        requests = api.api_requests()
    assert r.code == 0, r.output
    loaded = load_experiment(exp, lab)
    context, cases = loaded.context, {c.prompt: c for c in loaded.experiment.cases}
    assert [s.name for s in loaded.experiment.subjects] == [
        "base[ctx=0]", "base[ctx=8]", "base[ctx=32]"]
    listing = skill_listing([("csv", "Profile CSV files. Use for any .csv question.")])
    sent = anthropic_messages if provider == "anthropic" else openai_messages
    seen: dict[int, int] = {}
    for request in requests:
        messages = request.body["messages"]
        # the prompt ends the last user message (after the listing, at length 0 in OpenAI's)
        [case] = [c for p, c in cases.items() if last_text(request.body).endswith(p)]
        matches = [n for n in LENGTHS if messages == sent(context.cut(n), case.prompt, listing)]
        assert len(matches) == 1, json.dumps(messages)[:300]
        seen[matches[0]] = seen.get(matches[0], 0) + 1
    assert seen == {n: 12 * 2 for n in LENGTHS}  # 12 cases x 2 trials at every length
    assert len(context.cut(8)) == 8 and len(context.cut(32)) == 32
    summary = json.loads((exp / "results" / "summary-latest.json").read_text())
    rates = {s["name"]: s["trial_level"]["must_trigger"]["rate"] for s in summary["subjects"]}
    assert rates == {"base[ctx=0]": 1.0, "base[ctx=8]": 1.0, "base[ctx=32]": 0.0}
    [base] = summary["context"]["subjects"]
    assert base["trend"]["slope"] < 0 and base["trend"]["p_decline"] > 0.99
    assert base["versus_shortest"][-1]["p_lower"] > 0.99


@pytest.mark.parametrize(("unit", "length", "check"), [
    ("turns", 8, lambda cut: len(cut) == 8),
    ("tool_calls", 5, lambda cut: sum(len(t.tool_calls) for t in cut) == 5
     and cut[-1].tool_calls),
    ("tokens", 200, lambda cut: True),
])
def test_a_length_counts_its_unit_from_the_start_of_the_prefix(lab, unit, length, check):
    exp = lab_with_context(lab, "{kind: mock}", lengths=[0, length], unit=unit)
    context = load_experiment(exp, lab).context
    cut = context.cut(length)
    assert context.cut(0) == () and check(cut)
    if unit == "tokens":  # the shortest start reaching the length
        assert sum(tokens(t) for t in cut) >= length > sum(tokens(t) for t in cut[:-1])


def test_a_mock_with_context_decay_declines_with_the_length(lab):
    exp = lab_with_context(lab, "{kind: mock, default_rate: 1.0, context_decay: {half_life: 4}}")
    [result] = run(lab)
    assert result.status == "completed"
    summary = json.loads((exp / "results" / "summary-latest.json").read_text())
    rates = [s["trial_level"]["must_trigger"]["rate"] for s in summary["subjects"]]
    assert rates[0] == 1.0 and rates[0] > rates[1] > rates[2]


def test_the_dry_run_estimate_counts_the_prefix_and_the_history(lab):
    """~one token per four characters of everything a trial sends: the prefix at the
    subject's length, the case's own history, the prompt, the skill listing."""
    exp = lab_with_context(lab, "{kind: anthropic, model: claude-sonnet-4-5}")
    [plan] = dry_run(lab)
    by_name = {s["name"]: s["estimated_input_tokens"] for s in plan["subjects"]}
    context = load_experiment(exp, lab).context
    cases = load_experiment(exp, lab).experiment.cases
    listing = len("csv") + len("Profile CSV files. Use for any .csv question.") + 4
    for n in LENGTHS:
        before = sum(chars(t) for t in context.cut(n))
        sent = sum(len(c.prompt) + before for c in cases) * 2 + listing * len(cases) * 2
        assert by_name[f"base[ctx={n}]"] == sent // 4
    assert by_name["base[ctx=0]"] < by_name["base[ctx=8]"] < by_name["base[ctx=32]"]
