"""`ix run` prints one screen per experiment and `ix report` leads with it (issue 33), through
the real `ix` at 80 columns: the verdict is the last line of `ix run`, each experiment is at
most 40 lines, no line is wider than 80 columns (but a path, printed whole beside its label),
and a condition's name is never wrapped: when a table would not fit, names become keys with a
legend. The real `ix` runs the examples, prints the report's table and the terminal's
warnings; the other runs and formats, at the same COLUMNS, in process."""

import json
import re
import shutil
from pathlib import Path

import pytest

from conftest import EXAMPLE_LAB, flat, ix_in_process, offline_example, run_ix, too_wide

NARROW = {"COLUMNS": "80"}


def _blocks(stdout: str) -> list[list[str]]:
    """The run's output cut into its experiments' screens (each starts with `name: N cases`)."""
    blocks: list[list[str]] = []
    for line in stdout.rstrip("\n").split("\n"):
        if re.match(r"^[a-z][\w.-]*: \d+ cases? × ", line) or line == "verdicts":
            blocks.append([])
        if blocks:
            blocks[-1].append(line)
    return blocks


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    lab = tmp_path_factory.mktemp("ex") / "lab"
    shutil.copytree(EXAMPLE_LAB, lab, ignore=offline_example(".ix"))
    r = run_ix("run", "--lab", str(lab), "--progress", "none", env=NARROW)
    assert r.code == 0, r.output
    return {"lab": lab, "run": r}


def test_the_bundled_examples_print_a_screen_each_with_the_verdicts_last(example):
    r = example["run"]
    blocks = _blocks(r.stdout)
    names = [b[0].split(":")[0] for b in blocks[:-1]]
    assert names == ["coexistence", "context-degradation", "outcome", "skill-activation"], \
        r.stdout
    for block in blocks[:-1]:
        while not block[-1]:
            block.pop()  # the blank line between experiments
        assert len(block) <= 40, "\n".join(block)
        # the verdict (or the headline) is the block's last line(s), after the run's files
        text = "\n".join(block)
        assert text.index("results:") < max(text.rfind("SUPPORTED — goal:"),
                                             text.rfind("no goal"))
    assert blocks[-1][0] == "verdicts" and r.stdout.rstrip().splitlines()[-1] == blocks[-1][-1]
    assert [line.split(":")[0] for line in blocks[-1][1:]] == names
    assert "coexistence: SUPPORTED (recall -0.294 [-0.46, -0.02])" in r.stdout
    # the outcome experiment's screen says at what cost, a line per subject
    assert "at what cost against without-skill" in r.stdout
    assert "  with-skill: output tokens +" in r.stdout
    assert not too_wide(r.stdout), too_wide(r.stdout)
    # each warning wraps to the width (its prefix first, for grep), through a pipe as well
    assert not too_wide(r.stderr), too_wide(r.stderr)
    warning = next(line for line in flat(r.stderr).splitlines() if "[too-few-cases]" in line)
    assert warning.startswith("ix: warning: ") and len(warning) > 80
    assert all(line.startswith(("ix: warning:", "  ")) for line in r.stderr.splitlines())
    # a lab's run says a line per experiment that warns, its codes and where the whole is
    design = [m for m in flat(r.stderr).splitlines() if " design warning" in m]
    assert len(design) == 3 and all("`ix validate " in m for m in design), r.stderr
    assert "`ix validate coexistence` says each" in flat(r.stderr)
    assert "needs about" not in r.stderr  # the warning in full: `ix validate`'s
    # the screen: one line per subject, the deltas, the cases that matter worst first
    co = "\n".join(blocks[0])
    assert re.search(r"a-only \(control\)\s+│ 1\.000 \[0\.85, 1\.00\] │ 17 must cases", co)
    assert re.search(r"a-plus-b\s+│\s+0\.706 │ -0\.29 \[-0\.46, -0\.02\] │\s+0\.016 │\s+0\.125 "
                     r"│\s+3", co), co
    cases = re.findall(r"^(must-\d+|not-\d+) ", co, re.M)
    assert cases[:3] == ["must-007", "must-011", "must-016"], co  # wrong in two, 1/9 first
    assert "between-case ICC" not in r.stdout and "pass^" not in r.stdout  # in --detail


def test_the_verdict_is_the_last_line_of_a_single_run(example):
    r = ix_in_process("run", "coexistence", "--lab", str(example["lab"]), "--progress", "none",
                      env=NARROW)
    assert r.code == 0, r.output
    tail = r.stdout.rstrip().splitlines()
    assert tail[-2].startswith("SUPPORTED — goal: Installing spreadsheet-insights"), tail[-4:]
    assert tail[-1].endswith("must trigger by at least 5 points.")
    assert "verdicts" not in tail  # one experiment: its own verdict is the last line


def test_detail_prints_every_table_and_still_ends_with_the_verdict(example):
    r = ix_in_process("run", "coexistence", "--lab", str(example["lab"]), "--progress", "none",
                      "--detail", env=NARROW)
    assert r.code == 0, r.output
    for table in ("coexistence · a-plus-b", "between-case ICC", "pass^9",
                  "a-plus-b vs a-only (control)", "flipped beyond trial noise"):
        assert table in r.stdout, table
    assert r.stdout.rstrip().splitlines()[-1].endswith("must trigger by at least 5 points.")
    assert not too_wide(r.stdout), too_wide(r.stdout)


def test_report_leads_with_the_same_screen_in_every_format(example):
    lab = example["lab"]
    run_id = re.search(r"`ix report (\S+)`", "\n".join(_blocks(example["run"].stdout)[0]))[1]
    table = run_ix("report", run_id, "--lab", str(lab), env=NARROW)  # the real command
    assert table.code == 0, table.output
    head = table.stdout.split("\ndetails\n")[0]
    assert head.index("SUPPORTED — goal:") < head.index("a-only (control)") \
        < head.index("cases that matter: 9 of 29")
    detail = "specificity and reliability per subject"
    assert detail not in head and detail in table.stdout
    assert not too_wide(table.stdout), too_wide(table.stdout)
    md = ix_in_process("report", run_id, "--lab", str(lab), "--format", "md").stdout
    assert md.index("**SUPPORTED**") < md.index("| a-only (control) | 1.000 [0.85, 1.00] |") \
        < md.index("**Cases that matter**: 9 of 29") < md.index("## Summary")
    data = json.loads(ix_in_process("report", run_id, "--lab", str(lab), "--json").stdout)
    assert next(iter(data)) == "screen"
    screen = data["screen"]
    assert screen["answer"]["kind"] == "comparisons"
    assert [c["probe_id"] for c in screen["cases_that_matter"]][:3] == \
        ["must-007", "must-011", "must-016"]
    assert screen["cases_that_matter"][0]["cells"]["a-plus-b"] == \
        {"hits": 1, "n": 9, "score": pytest.approx(1 / 9, abs=1e-6), "right": False,
         "errors": 0}
    html = Path(ix_in_process("report", run_id, "--lab", str(lab), "--format", "html", "--out",
                              str(lab / "r.html")).code == 0 and lab / "r.html").read_text()
    assert html.index('class="screen"') < html.index('id="summary"')


def test_on_a_terminal_warnings_wrap_by_the_rule_and_keep_commands_whole(example):
    """stderr on a terminal (FORCE_COLOR makes rich treat the pipe as one; NO_COLOR keeps the
    text plain): a warning wraps at 80 columns, never inside a `command` or between a label
    and its number."""
    r = run_ix("validate", "--lab", str(example["lab"]),
               env={**NARROW, "FORCE_COLOR": "1"})
    assert r.code == 0, r.output
    assert r.stderr.count("ix: warning:") == 3  # too few cases in three examples
    assert not too_wide(r.stderr), r.stderr
    assert "`ix plan coexistence`" in r.stderr and "rate 0.5" in r.stderr
