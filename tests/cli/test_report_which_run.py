"""`ix report [RUN|EXPERIMENT]`: which run a report reads when given an experiment's name, or
nothing (inside an experiment, at the lab's root), and the errors when there is none
(docs/reports.md, "Which run"). The real command for the contract (exit 0 with its note on
stderr, exit 2 with one line); the runs, and the other choices of run, in process."""

import json
from pathlib import Path

import pytest

from conftest import flat, ix_in_process, mock_experiment, run_ix

RATES = {"must-001": 0.9, "must-002": 0.8, "not-001": 0.1}


def made(lab: Path, experiment: str, *args: str) -> str:
    """Set-up: a run of `experiment` (in process); its id."""
    r = ix_in_process("run", experiment, "--lab", str(lab), "--json", "--progress", "none",
                      *args)
    assert r.code in (0, 130), r.output
    return json.loads(r.stdout)["run_id"]


def status(lab: Path, experiment: str, run: str) -> str:
    spec = (lab / experiment / "results" / "runs" / run / "spec.yaml").read_text()
    return next(line.split(":", 1)[1].strip() for line in spec.splitlines()
                if line.startswith("status:"))


def three_experiments(lab: Path) -> dict[str, str]:
    """`one`: a completed run, then a cancelled one (the latest); `two`: a cancelled run only,
    the lab's latest; `three`: no run."""
    for name in ("one", "two", "three"):
        mock_experiment(lab, name, rates=RATES, n_must=2, n_not=1, n_edge=0, trials=3)
    out = {"one completed": made(lab, "one"),
           "one cancelled": made(lab, "one", "--max-trials", "2"),
           "two cancelled": made(lab, "two", "--max-trials", "2")}
    assert [status(lab, k.split()[0], v) for k, v in out.items()] == \
        ["completed", "cancelled", "cancelled"]
    return out


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The lab of `three_experiments`, shared by the tests that only read it (or tag)."""
    lab = tmp_path_factory.mktemp("which-run") / "lab"
    lab.mkdir()
    return lab, three_experiments(lab)


def reported(lab: Path, *args: str, cwd: Path, command=ix_in_process) -> tuple[str, str]:
    """The run `ix report` read, and its stderr: in process (which run is logic), or with
    `command=run_ix` the real command."""
    r = command("report", "--json", *args, cwd=cwd, env={"COLUMNS": "80"})
    assert r.code == 0, r.output
    return json.loads(r.stdout)["run"]["run_id"], r.stderr


def test_an_experiments_name_or_path_reports_its_latest_completed_run(shared):
    lab, runs = shared
    first = runs["one completed"]
    for ref in ("one", "./one", str(lab / "one")):
        run, said = reported(lab, ref, cwd=lab)
        assert run == first, ref  # not the later, cancelled one
        assert said == ""
    # run ids, prefixes, suffixes and tags name runs as before
    assert ix_in_process("tag", first, "good", "--lab", str(lab)).code == 0
    for ref in (first, first[:-2], first[-6:], "good"):
        assert reported(lab, "--lab", str(lab), ref, cwd=lab)[0] == first, ref


def test_an_experiment_with_no_completed_run_reports_its_latest_and_says_so(shared):
    lab, runs = shared
    run, said = reported(lab, "two", cwd=lab, command=run_ix)  # the real command, its note
    assert run == runs["two cancelled"]
    assert flat(said) == (f"ix: experiment two has no completed run; reporting its latest, "
                            f"{run} (cancelled)")


def test_no_argument_is_the_labs_latest_run_at_its_root_and_the_experiments_inside_one(
        shared):
    lab, runs = shared
    run, said = reported(lab, cwd=lab)
    assert run == runs["two cancelled"]
    assert said == f"ix: report of two run {run}, the lab's latest\n"
    run, said = reported(lab, cwd=lab / "one" / "cases")
    assert run == runs["one cancelled"] and said == ""


@pytest.mark.parametrize("args", [(), ("three",)])
def test_no_finished_run_is_one_line_exit_2_saying_how_to_make_one(lab, args):
    for name in ("three", "four"):
        mock_experiment(lab, name, n_must=1, n_not=1, n_edge=0, trials=1)
    r = ix_in_process("report", *args, cwd=lab)  # the real exit 2: the unknown name's test
    assert r.code == 2 and r.stdout == "", r.output
    assert len(flat(r.stderr).splitlines()) == 1 and "Traceback" not in r.stderr
    assert "no finished run yet" in flat(r.stderr) and "`ix run" in flat(r.stderr)


def test_an_unknown_name_lists_the_experiments_and_the_latest_runs(shared):
    lab, runs = shared
    r = run_ix("report", "nosuch", cwd=lab)  # the real command: exit 2, one line
    assert r.code == 2 and r.stdout == "", r.output
    line, = flat(r.stderr).splitlines()
    assert "no run, tag or experiment 'nosuch'" in line
    assert "experiments: one, three, two" in line
    assert (f"latest runs: {runs['two cancelled']} of two, {runs['one cancelled']} of one, "
            f"{runs['one completed']} of one") in line


def test_a_run_wins_over_an_experiment_of_the_same_name_and_the_note_says_how(lab):
    """A run-id suffix that is also an experiment's folder name names the run (as before
    experiments could be named); the note names the path that reports the experiment."""
    from ix.api.reports import report_run

    runs = three_experiments(lab)
    first = runs["one completed"]
    suffix = first[-6:]
    mock_experiment(lab, suffix, rates=RATES, n_must=2, n_not=1, n_edge=0, trials=3)
    own = made(lab, suffix)
    notes: list[str] = []
    assert report_run(lab, suffix, cwd=lab, note=notes.append).name == first
    assert notes == [f"'{suffix}' names run {first} (a run wins over an experiment); give a "
                     f"path for experiment {suffix}'s latest run: ix report ./{suffix}"]
    assert report_run(lab, f"./{suffix}", cwd=lab).name == own


def test_the_mcp_get_summary_chooses_as_ix_report_does(shared):
    """No `run`: an experiment's latest completed run (else its latest, with a `note`), and
    with no experiment either the lab's latest run — in process, the tool's own function."""
    from ix.mcp.tools import LabTools

    lab, runs = shared
    tools = LabTools(lab)
    assert tools.get_summary(experiment="one")["run_id"] == runs["one completed"]
    two = tools.get_summary(experiment="two")
    assert two["run_id"] == runs["two cancelled"] and "no completed run" in two["note"]
    latest = tools.get_summary()
    assert latest["run_id"] == runs["two cancelled"] and "the lab's latest" in latest["note"]
