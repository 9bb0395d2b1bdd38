"""`ix batch BATTERY --lab LAB`: `--lab` is relative to the working directory, as for every
command, not to the battery file's folder (issue 14, item 9b). Without `--lab`, the lab is the
one the battery file is in."""

from pathlib import Path

from conftest import ix_in_process, mock_experiment, run_ix, write


def _runs(exp: Path) -> list[str]:
    runs = exp / "results" / "runs"
    return sorted(p.name for p in runs.iterdir()) if runs.is_dir() else []


def test_batch_lab_is_relative_to_the_working_directory(tmp_path: Path):
    mylab = tmp_path / "mylab"
    mock_experiment(mylab, "exp", trials=1)
    write(mylab / "nightly.yaml", "name: nightly\nexperiments: [exp]\nseeds: 1\n")
    # the real command: exit 0, `--lab` read against its working directory
    r = run_ix("batch", "mylab/nightly.yaml", "--lab", "mylab", cwd=tmp_path)
    assert r.code == 0, r.output
    assert len(_runs(mylab / "exp")) == 1
    assert len(list((mylab / "batteries").iterdir())) == 1


def test_batch_never_runs_in_a_lab_named_like_the_option_beside_the_battery(tmp_path: Path):
    """A lab `mylab/mylab` (the battery's folder joined with `--lab`) is another lab: the
    battery runs in `./mylab`, and the other one is left as it was."""
    mylab = tmp_path / "mylab"
    mock_experiment(mylab, "exp", trials=1)
    other = mock_experiment(mylab / "mylab", "exp", trials=1)
    write(mylab / "nightly.yaml", "name: nightly\nexperiments: [exp]\nseeds: [1, 2]\n")
    r = ix_in_process("batch", "mylab/nightly.yaml", "--lab", "mylab", "--json", cwd=tmp_path)
    assert r.code == 0, r.output
    assert len(_runs(mylab / "exp")) == 2
    assert not (other / "results").exists() and not (mylab / "mylab" / "batteries").exists()
    dry = ix_in_process("batch", "mylab/nightly.yaml", "--lab", "mylab", "--dry-run",
                        cwd=tmp_path)
    assert dry.code == 0 and "2 runs" in dry.stdout, dry.output


def test_batch_without_lab_runs_in_the_lab_of_the_battery_file(tmp_path: Path):
    mylab = tmp_path / "mylab"
    mock_experiment(mylab, "exp", trials=1)
    write(mylab / "nightly.yaml", "name: nightly\nexperiments: [exp]\nseeds: 1\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = ix_in_process("batch", str(mylab / "nightly.yaml"), cwd=elsewhere)
    assert r.code == 0, r.output
    assert len(_runs(mylab / "exp")) == 1


def test_batch_lab_that_is_no_folder_is_one_error_line(tmp_path: Path):
    mylab = tmp_path / "mylab"
    mock_experiment(mylab, "exp", trials=1)
    write(mylab / "nightly.yaml", "name: nightly\nexperiments: [exp]\nseeds: 1\n")
    r = run_ix("batch", "mylab/nightly.yaml", "--lab", "nolab", cwd=tmp_path)  # exit 2, real
    assert r.code == 2 and r.stderr.startswith("ix: error: --lab: no lab 'nolab'"), r.output
    assert "Traceback" not in r.output and _runs(mylab / "exp") == []
