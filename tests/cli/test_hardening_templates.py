"""User templates are bounded (issue 31, item 8): a case's `variants:` template, and a runtime
option's, renders within a size, a call depth and a time (`ix.eval.sandbox`).

A `variants:` template past a limit is exit 2 naming the case file and `variants`, with nothing
run, never a traceback nor a hang; a runtime option's (rendered by each trial) is that trial's
`template_error`, recorded, and the run ends. The time limits through the real `ix`, with a
timeout (the loops that ran for hours must end within seconds; `ix validate` and `ix run` exit
2, one trial's `template_error`); the other limits, whose exit 2 is the same contract, in
process.
"""

import json
import time
from pathlib import Path

import pytest

from conftest import case, ix_in_process, run_ix, write

#: (template, what the error says): a prompt of 40 million characters, a macro that calls
#: itself, two nested loops of 10^5 steps each (10^10 in all).
PAST_A_LIMIT = {
    "size": ("{{ 'a' * 40000000 }}", "makes a value of more than 1,000,000 characters"),
    "depth": ("{% macro again(n) %}{{ again(n) }}{% endmacro %}{{ again(1) }}",
              "nests calls more than 50 deep"),
    "time": ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}"
             "{% endfor %}", "takes more than 2 s to render"),
}


def _variants_lab(lab: Path, body: str) -> Path:
    exp = lab / "exp"
    write(exp / "experiment.yaml",
          "name: exp\ntrials: 1\nskill: target\nruntime: {kind: mock, default_rate: 1.0}\n")
    write(exp / "cases" / "must-001.md",
          "---\nexpectation: must_trigger\nvariants:\n  verb: [summarise, profile]\n---\n"
          f"{{{{ verb }}}} {body}\n")
    case(exp, "not-001", "should_not_trigger")
    return exp


@pytest.mark.parametrize("limit", sorted(PAST_A_LIMIT))
def test_a_variants_template_past_a_limit_is_exit_2_naming_the_case_file_and_variants(
        lab, limit):
    body, said = PAST_A_LIMIT[limit]
    exp = _variants_lab(lab, body)
    for command in ("validate", "run"):
        args = (command, "--lab", str(lab), *(["exp"] if command == "run" else []))
        started = time.monotonic()
        # the real command, with a timeout, for the time limit; the size and depth in process
        result = run_ix(*args, timeout=60) if limit == "time" else ix_in_process(*args)
        assert time.monotonic() - started < 30
        assert result.code == 2, result.output
        assert "Traceback" not in result.output
        assert f"{exp / 'cases' / 'must-001.md'}: variants: variant 1 does not render: " \
               f"{said}" in result.stderr, result.stderr
    assert not (exp / "results").exists()


def test_a_variants_template_that_fails_as_python_is_exit_2_not_a_traceback(lab):
    exp = _variants_lab(lab, "{{ 1 / 0 }}")
    result = ix_in_process("validate", "--lab", str(lab))
    assert result.code == 2, result.output
    assert "Traceback" not in result.output
    assert f"{exp / 'cases' / 'must-001.md'}: variants: variant 1 does not render: " \
           "ZeroDivisionError: division by zero" in result.stderr


@pytest.mark.parametrize("limit", ["size", "time"])
def test_a_runtime_option_template_past_a_limit_is_the_trials_template_error(lab, limit):
    body, said = PAST_A_LIMIT[limit]
    if limit == "size":  # the options' limit is higher: a prompt may be a long context
        body, said = ("{{ 'a' * 100000000 }}",
                      "makes a value of more than 64,000,000 characters")
    exp = lab / "exp"
    write(exp / "experiment.yaml", "name: exp\ntrials: 1\nsensor: exit_code\nruntime:\n"
                                   "  kind: command\n"
                                   f"  argv: [echo, {json.dumps(body)}]\n")
    case(exp, "must-001", "must_trigger")
    started = time.monotonic()
    # the real command, with a timeout, for the time limit; the size in process
    result = (run_ix("run", "--lab", str(lab), "exp", timeout=60) if limit == "time"
              else ix_in_process("run", "--lab", str(lab), "exp"))
    assert time.monotonic() - started < 30
    assert "Traceback" not in result.output
    [line] = [json.loads(x) for x in (exp / "results/trials.jsonl").read_text().splitlines()]
    assert line["error"]["kind"] == "template_error", line["error"]
    assert line["error"]["message"].startswith(f"argv[1]: {said}")
    assert result.code == 2, result.output  # every trial errored of a configuration kind


def test_a_template_nested_too_deep_to_compile_is_exit_2_not_a_traceback(lab):
    """25 loops one inside another parse, but Python compiles at most 20 nested blocks."""
    nested = "{% for a in [1] %}" * 25 + "{{ a }}" + "{% endfor %}" * 25
    exp = lab / "exp"
    write(exp / "experiment.yaml", "name: exp\ntrials: 1\nsensor: exit_code\nruntime:\n"
                                   f"  kind: command\n  argv: [echo, {json.dumps(nested)}]\n")
    case(exp, "must-001", "must_trigger")
    result = ix_in_process("validate", "--lab", str(lab))
    assert result.code == 2, result.output
    assert "Traceback" not in result.output
    assert f"{exp / 'experiment.yaml'}: runtime.argv: argv[1]: template error: nested too " \
           "deep to compile" in result.stderr, result.stderr
    _variants_lab(lab, nested.replace("{{ a }}", "{{ verb }}"))
    result = ix_in_process("validate", "--lab", str(lab))
    assert result.code == 2, result.output
    assert "Traceback" not in result.output
    assert f"{exp / 'cases' / 'must-001.md'}: body: the prompt is not a valid template: " \
           "nested too deep to compile" in result.stderr, result.stderr
