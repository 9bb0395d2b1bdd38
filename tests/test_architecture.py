"""The layers of DESIGN.md §1 are checked, not hoped for."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_import_linter_contracts_hold():
    exe = Path(sys.executable).parent / "lint-imports"
    proc = subprocess.run([str(exe), "--no-cache"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "broken" in proc.stdout and "0 broken" in proc.stdout


def test_a_layer_violation_would_be_caught(tmp_path):
    """The contract can fail: a copy of the package where matrix imports ix.eval breaks it."""
    import shutil

    copy = tmp_path / "repo"
    shutil.copytree(REPO / "src", copy / "src")
    shutil.copy(REPO / "pyproject.toml", copy / "pyproject.toml")
    bad = copy / "src" / "ix" / "matrix" / "artifact.py"
    bad.write_text("import ix.eval.models  # noqa\n" + bad.read_text())
    exe = Path(sys.executable).parent / "lint-imports"
    env = {"PYTHONPATH": str(copy / "src"), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([str(exe), "--no-cache"], cwd=copy, capture_output=True, text=True,
                          env=env)
    assert proc.returncode != 0
    assert "ix.matrix" in proc.stdout


def test_the_package_type_checks():
    exe = Path(sys.executable).parent / "mypy"
    proc = subprocess.run([str(exe)], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_code_passes_ruff():
    exe = Path(sys.executable).parent / "ruff"
    proc = subprocess.run([str(exe), "check", "--no-cache", "."], cwd=REPO, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_lab_holds_only_what_the_user_wrote_in_at_most_2000_lines():
    """Issue 34: `ix.lab` reads what the user wrote (experiment.yaml, cases, skills); disk
    helpers (fixtures' walking and hashing among them) live in `ix.fs`."""
    import ix.lab

    folder = Path(ix.lab.__file__).parent
    lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in folder.glob("*.py"))
    assert lines <= 2000, f"ix.lab is {lines} lines"
