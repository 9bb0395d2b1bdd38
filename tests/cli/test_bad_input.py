"""Bad input end to end: every malformed lab is refused the same way (DESIGN.md §2, §5).

The requirement: "Every malformed input gets exit code 2 and one clear message naming the file
and the field (and the allowed values), no traceback, and nothing under `results/` is created
or changed." Each entry of `BAD` below builds a valid mock experiment, breaks one thing, and
says what the one-line message must name. Both `ix run` and `ix validate` are checked, in
process (`ix_in_process`: which input is refused with which message is logic); one entry of
each kind is refused by the real command too, with the same answer (`CONTRACT`).
"""

import subprocess
import sys
import textwrap
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from dataclasses import field as dc_field
from pathlib import Path

import pytest

from conftest import Result, case, flat, ix_in_process, mock_experiment, run_ix, tree_digest, write
from ix.runtimes import available

EXP = "exp"
EXP_FILE = f"{EXP}/experiment.yaml"
EXPECTATIONS = ("must_trigger", "should_not_trigger", "acceptable")
EXPERIMENT_KEYS = ("name", "description", "skill", "subjects", "sensor", "sensors", "trials",
                   "cases", "runtime", "seed", "concurrency", "timeout_s", "goal")
SUBJECT_KEYS = ("name", "description", "runtime", "model", "skills", "config")
CASE_KEYS = ("id", "expectation", "rationale", "tags", "difficulty", "metadata")
LAB_KEYS = ("runtime", "trials", "concurrency", "timeout_s")
MOCK_KEYS = ("activation_rates", "default_rate", "error_rates", "latency_ms", "skill")
RUNTIME_KINDS = ", ".join(available())  # every kind this install has, sorted


# --------------------------------------------------------------------------- helpers

def exp_dir(lab: Path) -> Path:
    return lab / EXP


def good(lab: Path, **kwargs) -> Path:
    """The valid experiment every entry starts from: mock runtime, 3 must, 3 not, 1 edge."""
    return mock_experiment(lab, EXP, trials=2, **kwargs)


def experiment_yaml(lab: Path, text: str) -> None:
    """Replace experiment.yaml (the cases of `good` stay)."""
    write(exp_dir(lab) / "experiment.yaml", text)


def with_experiment_yaml(text: str) -> Callable[[Path], None]:
    def build(lab: Path) -> None:
        good(lab)
        experiment_yaml(lab, text)
    return build


def with_extra_yaml(extra: str) -> Callable[[Path], None]:
    """The good experiment with `extra` appended to experiment.yaml."""
    def build(lab: Path) -> None:
        good(lab, extra_yaml=extra)
    return build


def with_runtime_extra(extra: str) -> Callable[[Path], None]:
    def build(lab: Path) -> None:
        good(lab, runtime_extra=extra)
    return build


def subjects_yaml(subjects: str, extra: str = "") -> Callable[[Path], None]:
    """The good experiment with `subjects:` instead of `skill:`."""
    text = "name: exp\ntrials: 2\nruntime:\n  kind: mock\nsubjects:\n"
    text += textwrap.indent(textwrap.dedent(subjects).strip("\n"), "  ") + "\n"
    return with_experiment_yaml(text + textwrap.dedent(extra))


def case_file(name: str, text: str) -> Callable[[Path], None]:
    """The good experiment with `cases/<name>` (re)written as `text`."""
    def build(lab: Path) -> None:
        good(lab)
        write(exp_dir(lab) / "cases" / name, text)
    return build


def case_bytes(name: str, data: bytes) -> Callable[[Path], None]:
    def build(lab: Path) -> None:
        good(lab)
        (exp_dir(lab) / "cases" / name).write_bytes(data)
    return build


def no_cases_dir(lab: Path) -> None:
    good(lab)
    for p in (exp_dir(lab) / "cases").iterdir():
        p.unlink()
    (exp_dir(lab) / "cases").rmdir()


def cases_dir_without_md(lab: Path) -> None:
    good(lab)
    for p in (exp_dir(lab) / "cases").iterdir():
        p.rename(p.with_suffix(".txt"))


def duplicate_case_ids(lab: Path) -> None:
    good(lab)
    case(exp_dir(lab), "not-001", "should_not_trigger", extra="id: must-001\n")


def lab_config(text: str, trials: int | None = 2) -> Callable[[Path], None]:
    def build(lab: Path) -> None:
        mock_experiment(lab, EXP, trials=trials)
        write(lab / "ix.yaml", text)
    return build


def good_trials(lab: Path, value: str) -> None:
    """The good experiment with `trials: <value>` (written as YAML, so "5" is a string)."""
    mock_experiment(lab, EXP, trials=None, extra_yaml=f"trials: {value}\n")


def no_trials(lab: Path) -> None:
    """trials left to the defaults, so `$IX_DEFAULT_TRIALS` is the one that counts."""
    mock_experiment(lab, EXP, trials=None)


@dataclass(frozen=True)
class Bad:
    """One broken input and what the one-line message must name."""

    build: Callable[[Path], None]
    file: str | None                    # the file named, by its path from the lab
    field: Sequence[str] = ()           # all must appear: the field (or line) named
    allowed: Sequence[str] = ()         # all must appear: the allowed values or keys
    args: Callable[[Path], list[str]] | None = None  # default: ["--lab", <lab>]
    env: dict[str, str] = dc_field(default_factory=dict)
    usage: bool = False                 # a command-line usage error (click): no one-line rule
    commands: Sequence[str] = ("run", "validate")  # the commands that take these arguments


def p(id_: str, *args, **kwargs):
    return pytest.param(Bad(*args, **kwargs), id=id_)


BAD = [
    # ------------------------------------------------------------ experiment.yaml, as YAML
    p("yaml-syntax-error",
      with_experiment_yaml("name: exp\nskill: [target\ntrials: 2\nruntime: mock\n"),
      EXP_FILE, ["line ", "YAML"]),
    p("yaml-is-a-list", with_experiment_yaml("- name: exp\n- skill: target\n"),
      EXP_FILE, ["mapping"]),
    p("yaml-is-a-scalar", with_experiment_yaml("just a sentence\n"), EXP_FILE, ["mapping"]),
    p("yaml-empty-file", with_experiment_yaml(""), EXP_FILE, ["name"]),
    p("yaml-key-written-twice", with_extra_yaml("trials: 3\n"), EXP_FILE, ["trials", "twice"]),
    p("yaml-nested-key-written-twice",
      with_runtime_extra("default_rate: 0.1\ndefault_rate: 0.2"),
      EXP_FILE, ["default_rate", "twice"]),
    # ------------------------------------------------------------ experiment.yaml, keys
    p("missing-name", with_experiment_yaml("skill: target\ntrials: 2\nruntime: mock\n"),
      EXP_FILE, ["name", "missing"]),
    p("name-not-a-string", with_experiment_yaml("name: 12\nskill: target\nruntime: mock\n"),
      EXP_FILE, ["name"]),
    p("name-empty", with_experiment_yaml("name: ''\nskill: target\nruntime: mock\n"),
      EXP_FILE, ["name"]),
    p("unknown-top-level-key", with_extra_yaml("colour: red\n"),
      EXP_FILE, ["colour"], EXPERIMENT_KEYS),
    p("unknown-key-in-subject",
      subjects_yaml("- name: a\n  skils: [x]\n"),
      EXP_FILE, ["subjects[0].skils"], SUBJECT_KEYS),
    p("unknown-key-in-cases", with_extra_yaml("cases:\n  suite: cases/\n  glob: '*.md'\n"),
      EXP_FILE, ["cases.glob"], ["suite"]),
    p("unknown-key-in-goal", with_extra_yaml("goal:\n  hypothesis: h\n  metrc: f1\n"),
      EXP_FILE, ["goal.metrc"], ["hypothesis", "metric", "compare", "direction"]),
    # ------------------------------------------------------------ trials and other numbers
    p("trials-zero", lambda lab: good_trials(lab, "0"), EXP_FILE, ["trials"], ["1"]),
    p("trials-negative", lambda lab: good_trials(lab, "-1"), EXP_FILE, ["trials"], ["1"]),
    p("trials-string", lambda lab: good_trials(lab, '"5"'), EXP_FILE, ["trials", "integer"]),
    p("trials-float", lambda lab: good_trials(lab, "2.5"), EXP_FILE, ["trials", "integer"]),
    p("trials-bool", lambda lab: good_trials(lab, "true"), EXP_FILE, ["trials", "integer"]),
    p("concurrency-zero", with_extra_yaml("concurrency: 0\n"), EXP_FILE, ["concurrency"]),
    p("timeout-zero", with_extra_yaml("timeout_s: 0\n"), EXP_FILE, ["timeout_s"]),
    p("seed-string", with_extra_yaml("seed: abc\n"), EXP_FILE, ["seed"]),
    # ------------------------------------------------------------ subjects
    p("skill-and-subjects", with_extra_yaml("subjects:\n  - name: a\n"),
      EXP_FILE, ["skill", "subjects"]),
    p("subjects-not-a-list", subjects_yaml("name: a\n"), EXP_FILE, ["subjects"]),
    p("duplicate-subject-names", subjects_yaml("- name: a\n- name: a\n"),
      EXP_FILE, ["subjects[1].name", "'a'"]),
    p("subject-skill-missing", subjects_yaml("- name: a\n  skills: [nosuch-skill]\n"),
      EXP_FILE, ["subjects[0].skills[0]", "nosuch-skill"]),
    p("subject-runtime-unknown", subjects_yaml("- name: a\n  runtime: nosuch\n"),
      EXP_FILE, ["subjects[0].runtime", "nosuch"], [RUNTIME_KINDS]),
    p("subject-runtime-option-unknown",
      subjects_yaml("- name: a\n  runtime: {kind: mock, bogus: 1}\n"),
      EXP_FILE, ["subjects[0].runtime.bogus"], MOCK_KEYS),
    p("subject-config-unknown-key",
      subjects_yaml("- name: a\n  config: {bogus: 1}\n"),
      EXP_FILE, ["subjects[0].config.bogus"], MOCK_KEYS),
    # ------------------------------------------------------------ runtime
    p("runtime-unknown-kind",
      with_experiment_yaml("name: exp\nskill: target\ntrials: 2\nruntime: nosuch\n"),
      EXP_FILE, ["runtime", "nosuch"], [RUNTIME_KINDS]),
    p("runtime-unknown-option", with_runtime_extra("bogus: 1"),
      EXP_FILE, ["runtime.bogus"], MOCK_KEYS),
    p("runtime-rate-above-one", lambda lab: good(lab, rates={"must-001": 1.5}),
      EXP_FILE, ["runtime.activation_rates", "must-001"], ["1"]),
    p("runtime-option-string-for-number", with_runtime_extra('default_rate: "0.5"'),
      EXP_FILE, ["runtime.default_rate"]),
    p("runtime-option-bool-for-number", with_runtime_extra("latency_ms: true"),
      EXP_FILE, ["runtime.latency_ms"]),
    p("runtime-no-kind",
      with_experiment_yaml("name: exp\nskill: target\ntrials: 2\nruntime: {}\n"),
      EXP_FILE, ["runtime", "kind"]),
    # ------------------------------------------------------------ sensor
    p("sensor-unknown-kind", with_extra_yaml("sensor: nosuch\n"),
      EXP_FILE, ["sensor.kind", "nosuch"], ["activation"]),
    p("sensor-unknown-option", with_extra_yaml("sensor: {kind: activation, skil: target}\n"),
      EXP_FILE, ["sensor.skil"], ["skill", "mode"]),
    p("sensor-mode-bad", with_extra_yaml("sensor: {kind: activation, mode: last}\n"),
      EXP_FILE, ["sensor.mode"], ["any", "first"]),
    p("sensors-list-unknown-kind", with_extra_yaml("sensors: [activation, nosuch]\n"),
      EXP_FILE, ["sensors[1]", "nosuch"], ["activation"]),
    # ------------------------------------------------------------ cases folder
    p("cases-not-a-mapping", with_extra_yaml("cases: cases/\n"), EXP_FILE, ["cases"]),
    p("cases-suite-outside", with_extra_yaml("cases:\n  suite: ../\n"),
      EXP_FILE, ["cases.suite"]),
    p("cases-folder-missing", no_cases_dir, EXP_FILE, ["cases.suite"]),
    p("cases-folder-no-md", cases_dir_without_md, EXP_FILE, ["cases.suite", ".md"]),
    p("cases-all-acceptable", lambda lab: mock_experiment(lab, EXP, n_must=0, n_not=0),
      EXP_FILE, ["cases"], ["must_trigger", "should_not_trigger"]),
    # ------------------------------------------------------------ case files
    p("case-no-frontmatter", case_file("must-001.md", "How do I write evals?\n"),
      f"{EXP}/cases/must-001.md", ["expectation"], EXPECTATIONS),
    p("case-missing-expectation",
      case_file("must-001.md", "---\nid: must-001\n---\nHow do I write evals?\n"),
      f"{EXP}/cases/must-001.md", ["expectation"], EXPECTATIONS),
    p("case-unknown-expectation",
      case_file("must-001.md", "---\nexpectation: must\n---\nHow do I write evals?\n"),
      f"{EXP}/cases/must-001.md", ["expectation", "'must'"], EXPECTATIONS),
    p("case-unknown-key",
      case_file("must-001.md",
                "---\nexpectation: must_trigger\npriority: high\n---\nHow do I write evals?\n"),
      f"{EXP}/cases/must-001.md", ["priority"], CASE_KEYS),
    p("case-tags-not-a-list",
      case_file("must-001.md",
                "---\nexpectation: must_trigger\ntags: smoke\n---\nHow do I write evals?\n"),
      f"{EXP}/cases/must-001.md", ["tags", "list"]),
    p("case-difficulty-extreme",
      case_file("must-001.md",
                "---\nexpectation: must_trigger\ndifficulty: extreme\n---\nHow?\n"),
      f"{EXP}/cases/must-001.md", ["difficulty", "extreme"], ["easy", "medium", "hard"]),
    p("case-metadata-not-a-mapping",
      case_file("must-001.md",
                "---\nexpectation: must_trigger\nmetadata: [a, b]\n---\nHow?\n"),
      f"{EXP}/cases/must-001.md", ["metadata"]),
    p("case-duplicate-ids", duplicate_case_ids,
      f"{EXP}/cases/not-001.md", ["id", "must-001", "must-001.md"]),
    p("case-id-with-slash",
      case_file("must-001.md", "---\nid: a/b\nexpectation: must_trigger\n---\nHow?\n"),
      f"{EXP}/cases/must-001.md", ["id", "a/b"]),
    p("case-id-dotdot",
      case_file("must-001.md", "---\nid: ../escape\nexpectation: must_trigger\n---\nHow?\n"),
      f"{EXP}/cases/must-001.md", ["id", "../escape"]),
    p("case-empty-body",
      case_file("must-001.md", "---\nexpectation: must_trigger\n---\n   \n\n"),
      f"{EXP}/cases/must-001.md", ["body"]),
    p("case-unterminated-frontmatter",
      case_file("must-001.md", "---\nexpectation: must_trigger\nHow do I write evals?\n"),
      f"{EXP}/cases/must-001.md", ["---"]),
    p("case-frontmatter-yaml-error",
      case_file("must-001.md", "---\nexpectation: [must_trigger\n---\nHow?\n"),
      f"{EXP}/cases/must-001.md", ["line ", "YAML"]),
    p("case-frontmatter-is-a-list",
      case_file("must-001.md", "---\n- must_trigger\n---\nHow?\n"),
      f"{EXP}/cases/must-001.md", ["mapping"]),
    p("case-not-utf8",
      case_bytes("must-001.md", b"\xff\xfe---\nexpectation: must_trigger\n---\n\xe9t\xe9\n"),
      f"{EXP}/cases/must-001.md", ["UTF-8"]),
    p("case-binary-nul",
      case_bytes("must-001.md", b"---\nexpectation: must_trigger\n---\nab\x00\x00\x01\x02\n"),
      f"{EXP}/cases/must-001.md", ["NUL"]),
    p("case-key-written-twice",
      case_file("must-001.md",
                "---\nexpectation: must_trigger\nexpectation: acceptable\n---\nHow?\n"),
      f"{EXP}/cases/must-001.md", ["expectation", "twice"]),
    # ------------------------------------------------------------ goal
    p("goal-compare-unknown-subject",
      with_extra_yaml("goal:\n  hypothesis: h\n  compare: [target, ghost]\n"),
      EXP_FILE, ["goal.compare[1]", "ghost"], ["target"]),
    p("goal-direction-sideways",
      with_extra_yaml("goal:\n  hypothesis: h\n  direction: sideways\n"),
      EXP_FILE, ["goal.direction", "sideways"], ["increase", "decrease", "differ"]),
    # ------------------------------------------------------------ lab ix.yaml, environment
    p("lab-config-unknown-key", lab_config("trails: 3\n"), "lab/ix.yaml", ["trails"], LAB_KEYS),
    p("lab-config-trials-zero", lab_config("trials: 0\n", trials=None),
      "lab/ix.yaml", ["trials"], ["1"]),
    p("lab-config-yaml-error", lab_config("runtime: [mock\n"), "lab/ix.yaml", ["line ", "YAML"]),
    p("env-default-trials-zero", no_trials, None, ["$IX_DEFAULT_TRIALS", "'0'"],
      env={"IX_DEFAULT_TRIALS": "0"}),
    p("env-default-trials-abc", no_trials, None, ["$IX_DEFAULT_TRIALS", "'abc'"],
      env={"IX_DEFAULT_TRIALS": "abc"}),
    # ------------------------------------------------------------ command line
    p("cli-trials-zero", good, None, usage=True,
      args=lambda lab: ["--lab", str(lab), "--trials", "0"]),
    p("cli-concurrency-zero", good, None, usage=True, commands=["run"],
      args=lambda lab: ["--lab", str(lab), "--concurrency", "0"]),
    p("cli-seed-not-a-number", good, None, usage=True, commands=["run"],
      args=lambda lab: ["--lab", str(lab), "--seed", "x"]),
    p("cli-subject-unknown", good, None, ["--subject", "ghost"], ["target"], commands=["run"],
      args=lambda lab: ["--lab", str(lab), "--subject", "ghost"]),
    p("cli-runtime-unknown", good, None, ["--runtime", "nosuch"], [RUNTIME_KINDS],
      args=lambda lab: ["--lab", str(lab), "--runtime", "nosuch"]),
    p("cli-experiment-missing", good, None, ["EXPERIMENT", "nosuch"], [EXP],
      args=lambda lab: ["--lab", str(lab), "nosuch"]),
    p("cli-lab-missing", good, None, ["--lab", "missing-lab"],
      args=lambda lab: ["--lab", str(lab.parent / "missing-lab")]),
]


# --------------------------------------------------------------------------- checks

def no_results(lab: Path) -> bool:
    return not any(p.name == "results" for p in lab.rglob("*"))


def check_refused(result: Result, bad: Bad, lab: Path, before: dict[str, str]) -> None:
    shown = f"exit {result.code}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
    assert result.code == 2, shown
    assert "Traceback" not in result.output, shown
    assert tree_digest(lab) == before, "the lab changed\n" + shown
    assert no_results(lab), "a results/ folder was created\n" + shown
    if bad.usage:
        return
    message = flat(result.stderr.rstrip("\n"))  # one message, unwrapped
    assert "\n" not in message, "more than one line on stderr\n" + shown
    assert message.startswith("ix: error:"), shown
    if bad.file is not None:
        assert bad.file in message, f"the file {bad.file!r} is not named\n" + shown
    for part in bad.field:
        assert part in message, f"{part!r} is not named\n" + shown
    for value in bad.allowed:
        assert value in message, f"the allowed value {value!r} is not listed\n" + shown


# --------------------------------------------------------------------------- tests

def arguments(bad: Bad, lab: Path) -> list[str]:
    return bad.args(lab) if bad.args else ["--lab", str(lab)]


def problems_of(results: dict[str, Result], bad: Bad, lab: Path,
                before: dict[str, str]) -> list[str]:
    problems = []
    for command, result in results.items():
        try:
            check_refused(result, bad, lab, before)
        except AssertionError as exc:
            problems.append(f"ix {command}: {exc}")
    return problems


@pytest.mark.parametrize("bad", BAD)
def test_bad_input_is_refused(bad: Bad, lab: Path, tmp_path: Path) -> None:
    """`ix run` and `ix validate` refuse it the same way."""
    bad.build(lab)
    before = tree_digest(lab)
    results = {command: ix_in_process(command, *arguments(bad, lab), cwd=tmp_path, env=bad.env)
               for command in bad.commands}
    problems = problems_of(results, bad, lab, before)
    assert not problems, "\n\n".join(problems)


#: One entry of each kind: experiment.yaml, a case file, the lab's ix.yaml, the environment,
#: a usage error (click's own message), a lab that is not there.
CONTRACT = ("yaml-syntax-error", "case-not-utf8", "lab-config-unknown-key",
            "env-default-trials-abc", "cli-seed-not-a-number", "cli-lab-missing")


@pytest.mark.parametrize("bad", [b for b in BAD if b.id in CONTRACT])
def test_the_real_command_refuses_as_in_process(bad: Bad, lab: Path, tmp_path: Path) -> None:
    """The contract itself, in a subprocess (`ix run` and `ix validate` side by side: both only
    read): exit 2, one line, no traceback, nothing written; and `ix_in_process`, which the
    other entries go through, gives the same exit code, stdout and stderr."""
    bad.build(lab)
    before = tree_digest(lab)
    args = arguments(bad, lab)
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {command: pool.submit(run_ix, command, *args, cwd=tmp_path, env=bad.env)
                   for command in bad.commands}
        results = {command: f.result() for command, f in futures.items()}
    problems = problems_of(results, bad, lab, before)
    assert not problems, "\n\n".join(problems)
    for command, real in results.items():
        assert ix_in_process(command, *args, cwd=tmp_path, env=bad.env) == real, command


def test_the_contract_sample_is_in_bad():
    assert len([b for b in BAD if b.id in CONTRACT]) == len(CONTRACT)


def test_the_unbroken_experiment_is_valid(lab: Path, tmp_path: Path) -> None:
    """The control: every entry above starts from this, and it passes `ix validate`."""
    good(lab)
    result = ix_in_process("validate", "--lab", str(lab), cwd=tmp_path)
    assert result.code == 0, result.output
    assert no_results(lab)


def test_one_bad_experiment_stops_the_whole_run(lab: Path, tmp_path: Path) -> None:
    """`ix run` with no EXPERIMENT validates every experiment first: nothing runs at all."""
    mock_experiment(lab, "a-good", trials=2)
    mock_experiment(lab, "b-bad", trials=2)
    write(lab / "b-bad" / "cases" / "must-002.md", "---\nexpectation: must\n---\nHow?\n")
    mock_experiment(lab, "c-good", trials=2)
    before = tree_digest(lab)

    result = ix_in_process("run", "--lab", str(lab), cwd=tmp_path)

    assert result.code == 2, result.output
    assert "Traceback" not in result.output
    message = flat(result.stderr.rstrip("\n"))  # one message, unwrapped
    assert "\n" not in message and message.startswith("ix: error:"), result.output
    assert "b-bad/cases/must-002.md" in message and "expectation" in message, result.output
    assert tree_digest(lab) == before
    assert no_results(lab), "a good experiment ran although another one is broken"

    validated = ix_in_process("validate", "--lab", str(lab), cwd=tmp_path)
    assert validated.code == 2, validated.output
    assert "Traceback" not in validated.output
    assert "b-bad/cases/must-002.md" in validated.stderr
    assert tree_digest(lab) == before


def test_earlier_results_are_untouched_by_a_bad_run(lab: Path, tmp_path: Path) -> None:
    exp = mock_experiment(lab, EXP, trials=2, rates={"must-001": 1.0, "not-001": 0.5})
    # the earlier results the bad commands below must leave alone
    first = ix_in_process("run", "--lab", str(lab), cwd=tmp_path)
    assert first.code == 0, first.output
    results_before = tree_digest(exp / "results")
    assert "trials.jsonl" in results_before and "summary-latest.json" in results_before

    write(exp / "cases" / "must-002.md", "---\nexpectation: must_trigger\nexpectation: x\n"
                                         "---\nHow?\n")
    lab_before = tree_digest(lab)
    for command in ("run", "validate"):
        again = ix_in_process(command, "--lab", str(lab), cwd=tmp_path)
        assert again.code == 2, again.output
        assert "Traceback" not in again.output
        message = flat(again.stderr.rstrip("\n"))  # one message, unwrapped
        assert "\n" not in message and message.startswith("ix: error:"), again.output
        assert "cases/must-002.md" in message, again.output
        assert tree_digest(exp / "results") == results_before
        assert tree_digest(lab) == lab_before


def test_an_error_naming_an_extra_keeps_its_brackets():
    """Error text is text, not rich markup: `ix-lab[view]` must print whole."""
    code = ("import sys; sys.modules['uvicorn'] = None\n"
            "from ix.cli.main import main\n"
            "sys.argv = ['ix', 'view']\n"
            "main()\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "ix: error: ix view needs the web extra: " \
                                  "pip install 'ix-lab[view]'"
