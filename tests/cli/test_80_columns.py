"""Every command that prints a table, at COLUMNS=80 and 200: no value is cut ("…", a folded id
or name, an interval split over two lines), every run id printed names its run when pasted
back (whole, or any unique prefix or suffix), and Markdown is never wrapped (docs/cli.md,
"Output at any width"). The output is asked in process (`ix_in_process`: the same `main`,
whose console reads COLUMNS from the environment it is given); the real `ix` prints the same
at both widths for a sample of the commands (`REAL`), and keeps the contracts of its own:
`--help`, and an ambiguous run id refused with exit 2 in one message. stderr's messages
(`ix: warning: ...`, `ix: error: ...`) wrap to the width too, by one function
(`ix.report.tables.hanging`), never cutting a path, a `command` or a `[code]`."""

import re
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.cells import cell_len

from conftest import EXAMPLE_LAB, flat, ix_in_process, run_ix, too_wide, write
from ix.report.tables import hanging

SUBJECTS = ["xlsx-only", "xlsx-plus-docx", "xlsx-plus-docx-pdf", "xlsx-plus-docx-pdf-pptx"]
CASES = ["must-quarterly-revenue-pivot-table-by-region", "must-002", "must-003", "must-004",
         "not-convert-the-board-minutes-docx-to-pdf", "not-002", "not-003"]
EXPERIMENTS = ["office-skills-coexistence-with-four-subjects", "second-coexistence-experiment"]
RUN_ID = re.compile(r"\d{8}T\d{6}Z-[0-9a-f]{6}")
WIDTHS = ("80", "200")


def _experiment(lab: Path, name: str) -> None:
    subjects = "\n".join(f"  - name: {s}\n    description: xlsx with {s.count('-')} "
                         "neighbouring skills installed\n    skills: [xlsx]" for s in SUBJECTS)
    write(lab / name / "experiment.yaml", f"""
        name: {name}
        description: Does installing docx, pdf and pptx next to xlsx take its prompts?
        sensor: {{kind: activation, skill: xlsx}}
        trials: 3
        runtime:
          kind: mock
          activation_rates: {{{CASES[0]}: 0.8, must-002: 0.6, {CASES[4]}: 0.2}}
          default_rate: 0.5
          error_rates: {{must-002: 0.3}}
        subjects:
        {subjects}
        goal:
          hypothesis: Adding docx, pdf and pptx next to xlsx lowers xlsx's recall
          metric: recall
          compare: [xlsx-only, xlsx-plus-docx-pdf-pptx]
          direction: decrease
          min_effect: 0.05
        """.replace("\n        ", "\n"))
    for c in CASES:
        expectation = "must_trigger" if c.startswith("must") else "should_not_trigger"
        write(lab / name / "cases" / f"{c}.md",
              f"---\nexpectation: {expectation}\ntags: [finance-and-accounting, quarterly]\n"
              f"difficulty: hard\n---\nBuild the {c} spreadsheet for the board.\n")


@pytest.fixture(scope="module")
def wide_lab(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    lab = tmp_path_factory.mktemp("w") / "lab"
    write(lab / "skills" / "xlsx" / "SKILL.md",
          "---\nname: xlsx\ndescription: 'Spreadsheets: pivot tables, formulas, charts.'\n---\n")
    for name in EXPERIMENTS:
        _experiment(lab, name)
    runs = []  # set-up, in process: the commands under test are the ones below
    for seed in ("1", "2"):
        r = ix_in_process("run", EXPERIMENTS[0], "--lab", str(lab), "--seed", seed,
                          "--progress", "none", "--json")
        assert r.code in (0, 1), r.output
        runs.append(RUN_ID.search(r.stdout).group(0))
    write(lab / "nightly.yaml", f"""
        name: nightly
        experiments: [{EXPERIMENTS[1]}]
        seeds: 2
        trials: 3
        output: batteries/{{date}}_{{seq}}
        """)
    tag = ix_in_process("tag", runs[0], "before-the-docx-skill-was-installed",
                        "--lab", str(lab))
    assert tag.code == 0, tag.output
    note = ix_in_process("annotate", runs[0], CASES[0],
                         "xlsx-plus-docx-pdf-pptx took it to pdf", "--lab", str(lab))
    assert note.code == 0, note.output
    return {"lab": lab, "runs": runs}


def _commands(lab: Path, runs: list[str], tmp: Path) -> dict[str, list[str]]:
    """Every command of `ix --help` that prints a table or run ids, with realistic arguments."""
    a, b = runs
    return {
        "run": ["run", EXPERIMENTS[1], "--progress", "none"],
        "run --dry-run": ["run", "--dry-run"],
        "validate": ["validate"],
        "sanity": ["sanity", EXPERIMENTS[0]],
        "ls": ["ls"],
        "batch": ["batch", str(lab / "nightly.yaml")],
        "batch --dry-run": ["batch", str(lab / "nightly.yaml"), "--dry-run"],
        "compare": ["compare", a[-6:], b[-6:]],
        "plan EXPERIMENT": ["plan", EXPERIMENTS[0]],
        "plan --mde": ["plan", "--mde", "0.1", "--paired", "--trials", "5"],
        "report": ["report", a],
        "report --format md": ["report", a, "--format", "md"],
        "report --format github": ["report", a, "--format", "github"],
        "leaderboard": ["leaderboard"],
        "leaderboard --format md": ["leaderboard", "--format", "md"],
        "tag": ["tag"],
        "annotate --list": ["annotate", a, "--list"],
        "results": ["results"],
        "results --group-by": ["results", "--group-by", "subject", "--group-by", "case"],
        "results --stats": ["results", "--stats"],
        "query": ["query", "SELECT run_id, subject, probe_id, avg(score) AS activation, "
                           "count(*) AS trials FROM trials GROUP BY ALL ORDER BY ALL"],
        "export": ["export", a[:-2], "--format", "csv", "--out", str(tmp / "a.csv"), "--force"],
        "cache stats": ["cache", "stats"],
        "subjects list": ["subjects", "list"],
        "schema --list": ["schema", "--list"],
        "optimize": ["optimize", EXPERIMENTS[1], "--rounds", "1", "--progress", "none"],
        "calibrate": ["calibrate", EXPERIMENTS[1], "--proxy", "lexical", "--n", "7",
                      "--progress", "none"],
        "plugins": ["plugins"],
        "judge check": ["judge", "check", a],  # no label here: its table, test_judge_check
    }


#: Markdown is printed as it is, never wrapped (its table rows are wider than 80 columns).
MARKDOWN = {"report --format md", "report --format github", "leaderboard --format md", "batch"}
#: Commands of `ix --help` that print no table: what they print is checked elsewhere.
NO_TABLE = {"new": "a list of created files", "import": "one line naming the new run",
            "view": "a server", "mcp": "a server (JSON-RPC)",
            "ci": "a workflow file (tests/ci/)",
            "pause": "one line naming the run (tests/cli/test_pause.py)",
            "serve": "a server (tests/cli/test_serve.py)",
            "continue": "one line naming the run (tests/cli/test_pause.py)",
            "sync": "one line of counts (tests/sync/)",
            "label": "one line counting the labels added (tests/cli/test_judge_check.py)",
            "cases": "one line counting the case files written (tests/cli/test_cases_import.py)"}


def _cut_values(text: str) -> list[str]:
    """Every sign of a value cut: an ellipsis, an id or name that is not whole, an interval
    that does not close on its line. An archived summary's name (`summary-<stamp>.json`, or
    `-2`, `-3`, ... when runs end within one second) is no run id."""
    problems = [f"ellipsis in {line!r}" for line in text.splitlines() if "…" in line]
    unarchived = re.sub(r"-\d{8}T\d{6}Z(?:-\d+)?\.json", "", text)
    for token in re.findall(r"\b\d{8}T[0-9A-Za-z-]*", unarchived):
        if not RUN_ID.fullmatch(token):
            problems.append(f"run id cut: {token!r}")
    for token in re.findall(r"xlsx(?:-[a-z]+)*", text):
        if token not in {"xlsx", *SUBJECTS}:
            problems.append(f"subject cut: {token!r}")
    for token in re.findall(r"\b(?:must|not)-[a-z0-9][a-z0-9-]*", text):
        if token not in CASES:
            problems.append(f"case id cut: {token!r}")
    for token in re.findall(r"\b(?:office-sk|second-co)[a-z-]*", text):
        if token not in EXPERIMENTS:
            problems.append(f"experiment cut: {token!r}")
    for start, rest in re.findall(r"(\[[-+]?\d)([^\]\n]*\]?)", text):
        # an end is a number as `ix.report.outcome_text.number` writes it: `0.0412`, `297`,
        # `1,234` (3 significant digits, no exponent) or `–` (none)
        if not re.fullmatch(r"[\d.,]*, (?:[-+]?\d[\d,]*(?:\.\d+)?|–)\]", rest) \
                and "%" not in rest:
            problems.append(f"interval cut: {start + rest!r}")
    return problems


def _labels() -> list[str]:
    return list(_commands(Path("lab"), ["r" * 23, "s" * 23], Path("tmp")))


def test_every_command_that_prints_a_table_is_checked_here():
    listed = re.findall(r"^  ([a-z]+)\s", run_ix("--help").stdout.split("Commands:")[1],
                        flags=re.M)
    assert len(listed) > 10, "ix --help lists too few commands"
    for name in listed:
        assert name in NO_TABLE or any(c.split()[0] == name for c in _labels()), \
            f"`ix {name}` is in ix --help but neither checked here nor in NO_TABLE"


_PASTED: set[str] = set()


@pytest.mark.slow
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("label", _labels())
def test_no_value_is_cut_and_every_run_id_printed_names_its_run(wide_lab, tmp_path, label,
                                                                width):
    lab, runs = wide_lab["lab"], wide_lab["runs"]
    args = _commands(lab, runs, tmp_path)[label]  # type: ignore[arg-type]
    r = ix_in_process(*args, "--lab", str(lab), env={"COLUMNS": width}, cwd=tmp_path)
    assert r.code in (0, 1), f"ix {label} at {width}: {r.output}"
    problems = _cut_values(r.stdout)
    assert not problems, f"ix {label} at COLUMNS={width}: {problems}\n{r.stdout}"
    if width == "80" and label not in MARKDOWN:  # a table that does not fit reflows
        wide = [line for line in r.stdout.splitlines() if cell_len(line.rstrip()) > 80
                and set(line) & set("│┃━╇")]
        assert not wide, f"ix {label}: lines wider than 80 columns\n" + "\n".join(wide)
    for run_id in sorted(set(RUN_ID.findall(r.stdout)) - _PASTED):  # whole, and by suffix
        for ref in (run_id, run_id[-6:]):
            pasted = ix_in_process("report", ref, "--lab", str(lab), "--json")
            assert pasted.code == 0 and f'"run_id": "{run_id}"' in pasted.stdout, \
                (label, ref, pasted.output)
        _PASTED.add(run_id)


#: Commands whose output the real `ix` must print as `main` does in process (one at both
#: widths; commands that make a new run are left out: its id and times differ).
REAL = [("compare", "200"), *((label, "80") for label in
                              ("compare", "report", "leaderboard", "results --group-by",
                               "validate"))]


@pytest.mark.parametrize(("label", "width"), REAL)
def test_the_real_command_prints_what_main_prints_in_process(wide_lab, tmp_path, label, width):
    lab, runs = wide_lab["lab"], wide_lab["runs"]
    args = [*_commands(lab, runs, tmp_path)[label], "--lab", str(lab)]  # type: ignore[arg-type]
    real = run_ix(*args, env={"COLUMNS": width}, cwd=tmp_path)
    assert real.code in (0, 1) and real.stdout.strip(), real.output
    assert ix_in_process(*args, env={"COLUMNS": width}, cwd=tmp_path) == real


def test_markdown_is_never_wrapped(wide_lab):
    lab, runs = wide_lab["lab"], wide_lab["runs"]
    texts = {w: ix_in_process("report", runs[0], "--format", "md", "--lab", str(lab),
                              env={"COLUMNS": w}).stdout for w in WIDTHS}
    assert texts["80"] == texts["200"]
    rows = [line for line in texts["80"].splitlines() if line.startswith("|")]
    assert rows and all(line.rstrip().endswith("|") for line in rows)
    assert any(len(line) > 80 for line in rows)  # demanding: the rows are wider than 80
    board = ix_in_process("leaderboard", "--format", "md", "--lab", str(lab),
                          env={"COLUMNS": "80"})
    assert board.code == 0 and "xlsx-plus-docx-pdf-pptx" in board.stdout
    batch = ix_in_process("batch", str(lab / "nightly.yaml"), "--lab", str(lab),
                          env={"COLUMNS": "80"})
    assert batch.code in (0, 1), batch.output
    rows = [line for line in batch.stdout.splitlines() if line.startswith("|")]
    assert rows and all(line.rstrip().endswith("|") for line in rows), batch.stdout


def test_a_unique_prefix_or_suffix_names_a_run_and_an_ambiguous_one_lists_every_candidate(
        wide_lab):
    lab, (a, b) = wide_lab["lab"], wide_lab["runs"]
    both = ix_in_process("compare", a[-6:], b[:-3], "--lab", str(lab), "--json")
    assert both.code == 0, both.output
    assert ix_in_process("results", "--run", b[-4:], "--lab", str(lab), "--stats").code == 0
    assert ix_in_process("export", a[-6:], "--format", "jsonl", "--out",
                         str(Path(lab) / "x.jsonl"), "--lab", str(lab)).code == 0
    for args in (["report", a[:4]], ["results", "--run", a[:4]], ["compare", a[:4], b]):
        r = ix_in_process(*args, "--lab", str(lab))
        if args[0] == "report":  # the contract, through the real command once
            assert run_ix(*args, "--lab", str(lab)) == r
        assert r.code == 2, (args, r.output)
        line = flat(r.stderr.strip())  # one message (wrapped to the width)
        assert line.startswith("ix: error:") and "\n" not in line and "Traceback" not in line
        assert a in line and b in line, line  # every candidate, so one can be pasted
    r = ix_in_process("run", EXPERIMENTS[0], "--resume", "--run", a[-6:], "--lab", str(lab),
                      "--progress", "none")
    assert r.code == 0 and a in r.stdout, r.output


# ------------------------------------------------- expanded names: [ctx=…] and sweep cells

NARROW = {"COLUMNS": "80"}
LONG = "frontend-design-plus-theme-factory"


@pytest.fixture(scope="module")
def context_lab(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Two subjects with long names × five context lengths, and a sweep: 20 conditions."""
    lab = tmp_path_factory.mktemp("ctx") / "lab"
    shutil.copytree(EXAMPLE_LAB / "context-degradation" / "cases",
                    lab / "long-context" / "cases")
    shutil.copytree(EXAMPLE_LAB / "skills", lab / "skills")
    rates = ", ".join(f"must-{i:03d}: 0.9" for i in range(1, 11))
    subject = """
          - name: {name}
            skills: [csv-summary]
            runtime: {{kind: mock, activation_rates: {{{rates}}}, default_rate: 0.02,
                      context_decay: {{half_life: {half}}}}}"""
    write(lab / "long-context" / "experiment.yaml", """
        name: long-context
        sensor: {kind: activation, skill: csv-summary}
        trials: 3
        subjects:""" + subject.format(name=LONG, rates=rates, half=32)
          + subject.format(name=LONG + "-and-pdf", rates=rates, half=16) + """
        sweep:
          context_decay.half_life: [32, 8]
        max_subjects: 50
        context:
          prefix: builtin:coding-session
          lengths: [0, 8, 16, 32, 128]
          unit: turns
        """)
    r = ix_in_process("run", "--lab", str(lab), "--progress", "none", env=NARROW)
    assert r.code == 0, r.output
    return {"lab": lab, "run": r}


def test_a_context_experiment_of_long_names_is_one_screen_with_a_legend(context_lab):
    r = context_lab["run"]
    lines = r.stdout.rstrip().splitlines()
    assert len(lines) <= 40, r.stdout
    assert not too_wide(r.stdout), too_wide(r.stdout)
    assert "by context length" in r.stdout and "trend [95% CI]" in r.stdout
    # every condition the screen names is whole, in the legend
    legend = dict(re.findall(r"\b([A-Z]) = (\S+)", r.stdout))
    assert LONG in legend.values() and f"{LONG}-and-pdf" in legend.values(), r.stdout
    assert f"{LONG}[context_decay.half_life=8]" in legend.values(), r.stdout
    for token in re.findall(r"frontend[\w\[\].=-]*", r.stdout):
        assert token.startswith(LONG) and token.count("[") == token.count("]"), token
    assert lines[-1].startswith("no goal: F1 of") or lines[-1].startswith("(a `goal:`")


def test_validate_and_report_of_expanded_names_fit_80_columns(context_lab):
    lab = context_lab["lab"]
    v = ix_in_process("validate", "--lab", str(lab), env=NARROW)
    assert v.code == 0, v.output
    assert not too_wide(v.stdout), too_wide(v.stdout)
    assert f"{LONG}[context_decay.half_life=8][ctx=128]" in v.stdout
    rep = run_ix("report", "--lab", str(lab), env=NARROW, cwd=lab / "long-context")
    assert rep.code == 0, rep.output
    assert not too_wide(rep.stdout), too_wide(rep.stdout)
    assert "failure analysis" in rep.stdout
    # the real command, as `main` prints it in process (the run above was made in process)
    assert ix_in_process("report", "--lab", str(lab), env=NARROW, cwd=lab / "long-context") == rep


# ------------------------------------------------------- stderr: messages wrapped, never cut

LONG_PATH = "/tmp/" + "/".join(["a-rather-long-folder-name"] * 5) + "/experiment.yaml"


def _held(text: str, lines: list[str], width: int, prefix: str) -> None:
    """What `hanging` promises: every word kept, in order; the prefix on the first line; each
    later line indented; no line wider than `width` but a single token too long to break."""
    assert " ".join(" ".join(lines).split()) == " ".join(text.split())
    assert lines[0].startswith(prefix)
    assert all(line.startswith("  ") and line[2:3] != " " for line in lines[1:]), lines
    assert all(cell_len(line) <= width or " " not in line.strip() for line in lines), lines


def test_a_message_wraps_at_spaces_and_never_cuts_a_path_a_command_or_a_code():
    text = (f"ix: warning: {LONG_PATH}: cases: 17 must_trigger cases: the goal (recall "
            "decrease beyond 0.05) needs about 1250 must_trigger cases if the true effect is "
            "-0.1 (twice min_effect); `ix plan coexistence --trials 5` simulates ix's own "
            "rule [too-few-cases]")
    lines = hanging(text, 80, keep=len("ix: warning:"))
    _held(text, lines, 80, "ix: warning:")
    assert len(lines) > 3 and f"  {LONG_PATH}:" in lines  # longer than 80: whole, alone
    assert any("`ix plan coexistence --trials 5`" in line for line in lines)
    assert lines[-1].endswith(" [too-few-cases]")
    assert hanging("ix: error: short", 80, keep=10) == ["ix: error: short"]
    assert hanging("ix: warning: 00000000", 20, keep=12) == ["ix: warning:", "  00000000"]
    # a prefix wider than the line is broken as any text is: no line wider than it needs
    long = hanging("run 20261130T153522Z-0e2bf4 of exp failed: no key", 30, keep=42)
    assert long == ["run 20261130T153522Z-0e2bf4 of", "  exp failed: no key"]
    # a message of several lines: each wrapped, its continuations under its own indent
    assert hanging("ix: error: a b\n  c d e f g h", 10, keep=10) == [
        "ix: error:", "  a b", "  c d e f", "    g h"]


@given(st.lists(st.text("abcxyz019/.-_", min_size=1, max_size=120), min_size=1, max_size=40),
       st.integers(20, 200))
def test_any_message_keeps_every_word_within_the_width(words, width):
    text = "ix: warning: " + " ".join(words)
    _held(text, hanging(text, width, keep=len("ix: warning:")), width, "ix: warning:")


def test_validate_of_the_example_lab_prints_its_warnings_within_80_columns(tmp_path):
    """The design warnings of the examples (too few cases, one trial, a key not set) are
    each 200-400 characters: through a pipe at 80 columns each wraps, its `ix: warning:`
    first, the rest of it indented, every word kept."""
    lab = tmp_path / "lab"
    shutil.copytree(EXAMPLE_LAB, lab, ignore=shutil.ignore_patterns("results", "artifacts"))
    r = run_ix("validate", "--lab", str(lab), env={"COLUMNS": "80", "EXAMPLE_API_KEY": ""})
    assert r.code == 0, r.output
    assert not too_wide(r.stdout) and not too_wide(r.stderr), too_wide(r.output)
    messages = flat(r.stderr).splitlines()
    assert len(messages) >= 5 and all(m.startswith("ix: warning: ") for m in messages), \
        r.stderr
    assert sum("[too-few-cases]" in m for m in messages) >= 3, r.stderr
    assert f"{lab / 'coexistence' / 'experiment.yaml'}: cases: 17 must_trigger cases" \
        in flat(r.stderr)
    assert "`ix plan coexistence` simulates" in flat(r.stderr)
    assert r.stderr.count("ix: warning:") == len(messages)  # a prefix per message, for grep
    assert all(line.startswith(("ix: warning:", "  ")) for line in r.stderr.splitlines())
    assert max(map(len, messages)) > 200  # demanding: what was one line is wrapped
