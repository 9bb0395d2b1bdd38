"""A case's `history` (DESIGN.md §7): the turns before its prompt, loaded as typed turns in
an order a conversation can have, or refused naming the file and the turn."""

import asyncio
import hashlib
import json

import pytest

from conftest import case, write
from ix.domain.errors import ConfigError
from ix.engine.cache import stimulus_of
from ix.engine.plan import Overrides, build_plan
from ix.engine.resume import cases_digest
from ix.eval.models import EvalCase, HistoryToolCall, Turn
from ix.lab.loader import load_experiment

HISTORY = """history:
  - user: "Let's clean up the Q3 numbers."
  - assistant: "Sure. Which file?"
    tool_calls:
      - {name: Read, input: {file_path: q3.csv}, result: "region,amount"}
  - assistant: "Found it."
  - user: "That one. Thanks."
"""


def experiment(lab, history: str):
    exp = lab / "exp"
    write(exp / "experiment.yaml", "name: exp\nskill: t\nruntime: mock\n")
    case(exp, "must-001", "must_trigger", prompt="Now profile q3.csv.", extra=history)
    case(exp, "not-001", "should_not_trigger")
    return exp


def test_a_history_loads_as_turns_before_the_prompt(lab):
    loaded = load_experiment(experiment(lab, HISTORY), lab)
    must, plain = loaded.experiment.cases
    assert must.prompt == "Now profile q3.csv."
    assert must.history == (
        Turn(role="user", content="Let's clean up the Q3 numbers."),
        Turn(role="assistant", content="Sure. Which file?", tool_calls=(
            HistoryToolCall(name="Read", input={"file_path": "q3.csv"},
                            result="region,amount"),)),
        Turn(role="assistant", content="Found it."),
        Turn(role="user", content="That one. Thanks."))
    assert plain.history == ()


@pytest.mark.parametrize(("history", "field", "words"), [
    ("  - {user: a, assistant: b}\n", "history[0]", "not both"),
    ("  - tool_calls: []\n", "history[0]", "not neither"),
    ("  - {user: a, tool_calls: [{name: R, result: x}]}\n", "history[0].tool_calls",
     "only an assistant turn"),
    ("  - user: '  '\n", "history[0].user", "empty user turn"),
    ("  - assistant: hi\n", "history[0]", "opens with a user turn"),
    ("  - user: a\n  - assistant: b\n  - assistant: c\n", "history[2]",
     "two assistant turns in a row"),
    ("  - user: a\n  - assistant: ''\n", "history[1].assistant", "empty assistant turn"),
    ("  - user: a\n  - {assistant: b, tool_calls: [{name: R}]}\n",
     "history[1].tool_calls[0].result", "missing"),
    ("  - user: 3\n", "history[0].user", "valid string"),
    ("  - usr: a\n", "history[0].usr", "did you mean 'user'"),
    ("  user: a\n", "history", "valid list"),
])
def test_a_bad_history_names_the_file_and_the_turn(lab, history, field, words):
    exp = experiment(lab, "history:\n" + history)
    with pytest.raises(ConfigError) as caught:
        load_experiment(exp, lab)
    assert caught.value.field == field and words in caught.value.message
    assert str(caught.value.file).endswith("must-001.md")


def test_an_assistant_turn_of_tool_calls_alone_is_a_turn(lab):
    history = ("history:\n  - user: a\n  - assistant: ''\n    tool_calls: "
               "[{name: Read, result: x}]\n")
    [must, _] = load_experiment(experiment(lab, history), lab).experiment.cases
    assert must.history[1] == Turn(role="assistant", content="",
                                   tool_calls=(HistoryToolCall(name="Read", result="x"),))


def test_the_history_is_part_of_a_case_for_the_cache_and_for_resuming():
    """A changed history is another stimulus (no answer replayed from the cache) and other
    cases (no run continued on them); a case without one keys and digests as it did before
    histories existed, so caches and runs of earlier versions stay usable."""
    plain = EvalCase(id="must-001", prompt="p", expectation="must_trigger")
    talked = plain.model_copy(update={"history": (Turn(role="user", content="hi"),)})
    assert stimulus_of(plain) == {"id": "must-001", "prompt": "p", "expectation": "must_trigger",
                                  "rationale": "", "tags": [], "difficulty": None,
                                  "metadata": {}}
    assert stimulus_of(talked)["history"] == [{"role": "user", "content": "hi",
                                               "tool_calls": []}]
    assert cases_digest([plain]) == hashlib.sha256(b"must-001\tmust_trigger\tp").hexdigest()
    assert cases_digest([talked]) != cases_digest([plain])


def test_a_runtime_that_would_drop_the_history_is_refused_at_plan_time(lab):
    """mock and random never read the text (the history changes nothing); anthropic and
    openai send it; command and http send it where a template uses it; any other runtime
    would answer the prompt alone, so it is refused, naming the subject and the cases,
    before a trial runs."""
    exp = experiment(lab, HISTORY)
    build_plan(load_experiment(exp, lab))  # mock: nothing to refuse
    build_plan(load_experiment(exp, lab), Overrides(runtime="random"))
    with pytest.raises(ConfigError) as caught:
        build_plan(load_experiment(exp, lab), Overrides(runtime="human"))
    assert caught.value.message.startswith(
        "subject 't': the human runtime does not send a case's history yet, and 1 case(s) "
        "have one (must-001)") and caught.value.field == "--runtime"
    write(exp / "experiment.yaml",
          "name: exp\nskill: t\nruntime: {kind: command, argv: [echo, '{{ prompt }}']}\n")
    with pytest.raises(ConfigError) as caught:
        build_plan(load_experiment(exp, lab))
    assert caught.value.message.startswith(
        "subject 't': 1 case(s) have a history (must-001) and no template of the command "
        "runtime uses it")
    assert str(caught.value.file).endswith("experiment.yaml")
    for template in ("'{{ history }}'", "'{% for t in case.history %}{{ t.role }}{% endfor %}'"):
        write(exp / "experiment.yaml",
              f"name: exp\nskill: t\nruntime: {{kind: command, argv: [echo, {template}]}}\n")
        build_plan(load_experiment(exp, lab))


def test_a_command_template_gets_the_history_as_json(lab):
    """`{{ history }}` renders the turns as JSON; `case.history` is the same list."""
    exp = experiment(lab, HISTORY)
    write(exp / "experiment.yaml", "name: exp\nskill: t\nruntime: {kind: command, "
          "argv: [python3, -c, 'import sys; print(sys.argv[1])', '{{ history }}']}\n")
    plan = build_plan(load_experiment(exp, lab))
    [must] = [c for c in plan.cases if c.id == "must-001"]
    [sp] = plan.subjects
    obs = asyncio.run(sp.runtime.invoke(sp.subject, must))
    assert json.loads(obs.stdout) == [t.model_dump(mode="json") for t in must.history]
    assert json.loads(obs.stdout)[1]["tool_calls"][0] == {
        "name": "Read", "input": {"file_path": "q3.csv"}, "result": "region,amount"}


def test_an_http_runtime_sends_the_history_where_its_body_uses_it(lab):
    exp = experiment(lab, HISTORY)
    runtime = "runtime: {kind: http, url: 'http://127.0.0.1:9/x', body: {q: '{{ prompt }}'%s}}"
    write(exp / "experiment.yaml", "name: exp\nskill: t\n" + runtime % "" + "\n")
    with pytest.raises(ConfigError) as caught:
        build_plan(load_experiment(exp, lab))
    assert "no template of the http runtime uses it" in caught.value.message
    write(exp / "experiment.yaml",
          "name: exp\nskill: t\n" + runtime % ", turns: '{{ history }}'" + "\n")
    assert build_plan(load_experiment(exp, lab)).subjects[0].runtime.reads_history


@pytest.mark.parametrize(("context", "field", "words"), [
    ("{prefix: builtin:nope, lengths: [0]}", "context.prefix", "no built-in prefix 'nope'"),
    ("{prefix: missing.yaml, lengths: [0]}", "context.prefix", "no prefix file"),
    ("{prefix: builtin:coding-session, lengths: [8, 0]}", "context.lengths", "must increase"),
    ("{prefix: builtin:coding-session, lengths: [0, 0]}", "context.lengths", "must increase"),
    ("{prefix: builtin:coding-session, lengths: []}", "context.lengths", "at least 1"),
    ("{prefix: builtin:coding-session, lengths: [-1]}", "context.lengths[0]", "greater than"),
    ("{prefix: builtin:coding-session, lengths: [0, 9999]}", "context.lengths",
     "more than the prefix holds (174 turns"),
    ("{prefix: builtin:coding-session, lengths: [0], unit: words}", "context.unit",
     "'tokens' (got 'words')"),
    ("{prefix: builtin:coding-session}", "context.lengths", "missing"),
])
def test_a_bad_context_block_names_the_field(lab, context, field, words):
    exp = experiment(lab, "")
    write(exp / "experiment.yaml", f"name: exp\nskill: t\nruntime: mock\ncontext: {context}\n")
    with pytest.raises(ConfigError) as caught:
        load_experiment(exp, lab)
    assert caught.value.field == field and words in caught.value.message, caught.value
    assert str(caught.value.file).endswith("experiment.yaml")


def test_a_bad_turn_in_a_prefix_file_names_the_prefix_file(lab):
    exp = experiment(lab, "")
    write(exp / "prefixes" / "p.yaml", "- user: hi\n- assistant: a\n- assistant: b\n")
    write(exp / "experiment.yaml",
          "name: exp\nskill: t\nruntime: mock\ncontext: {prefix: prefixes/p.yaml, lengths: [0]}\n")
    with pytest.raises(ConfigError) as caught:
        load_experiment(exp, lab)
    assert caught.value.field == "history[2]" and str(caught.value.file).endswith("p.yaml")


def test_context_expands_every_subject_at_every_length_the_first_the_control(lab):
    exp = experiment(lab, "")
    write(exp / "prefixes" / "p.yaml", "- user: hi\n- assistant: hello\n- user: more\n")
    write(exp / "experiment.yaml", "name: exp\nsensor: {kind: activation, skill: t}\n"
          "subjects: [{name: a, runtime: mock}, {name: b, runtime: mock}]\n"
          "context: {prefix: prefixes/p.yaml, lengths: [0, 2, 3]}\n"
          "goal: {hypothesis: h, compare: ['a[ctx=0]', 'a[ctx=3]'], direction: decrease}\n")
    loaded = load_experiment(exp, lab)
    assert [s.name for s in loaded.experiment.subjects] == [
        "a[ctx=0]", "a[ctx=2]", "a[ctx=3]", "b[ctx=0]", "b[ctx=2]", "b[ctx=3]"]
    plan = build_plan(loaded)
    assert [len(p.context) for p in plan.subjects] == [0, 2, 3, 0, 2, 3]
    assert {p.target_skill for p in plan.subjects} == {"t"}
