"""`ix optimize --apply` attacked (issue 31, item 4): a lab from elsewhere ships a completed
session whose `optimize.json` names a file outside the lab, or a skill reached through a
symlink. The real `ix` runs in a subprocess, under the default arguments.

What must hold: `--apply` writes only the experiment's own skill, `<lab>/skills/<name>/SKILL.md`
as the lab names it (never a path read from the session), reached through no symlink and still
the file the session started from; a session that does not record what the lab says (its
experiment, skill, skill bytes, subjects) is refused, exit 2, naming `optimize.json` and the
field, before anything is written; and a continued session never reads a file its state names.
"""

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import ix_in_process, run_ix, tree_digest
from optimize_lab import make_lab

SKILL = Path("skills") / "table-profile" / "SKILL.md"


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lab with a completed session that recommends a description (made once)."""
    lab = make_lab(tmp_path_factory.mktemp("shipped") / "lab")
    r = ix_in_process("optimize", "profiling", "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    assert json.loads(r.stdout)["recommended"], r.stdout
    return lab


@pytest.fixture
def lab(shipped: Path, tmp_path: Path) -> Path:
    """The shipped lab as a user received it: a copy, in a folder of its own."""
    dest = tmp_path / "home" / "lab"
    shutil.copytree(shipped, dest, symlinks=True)
    return dest


def session(lab: Path) -> Path:
    (folder,) = (lab / "profiling" / "results" / "optimize").iterdir()
    return folder


def forge(lab: Path, **fields: object) -> dict:
    state_file = session(lab) / "optimize.json"
    state = {**json.loads(state_file.read_text()), **fields}
    state_file.write_text(json.dumps(state, indent=2))
    return state


def snapshot(root: Path) -> tuple[dict[str, str], dict[str, str]]:
    """Every file's digest, and every symlink's target."""
    links = {str(p.relative_to(root)): os.readlink(p) for p in root.rglob("*") if p.is_symlink()}
    return tree_digest(root), links


def apply(lab: Path):
    return run_ix("optimize", "profiling", "--lab", str(lab), "--apply", "--json")


def one_error_line(stderr: str) -> str:
    errors = [x for x in stderr.strip().splitlines() if x.startswith("ix: error:")]
    assert len(errors) == 1 and "Traceback" not in stderr, stderr
    return errors[0]


def test_apply_writes_the_labs_own_skill_never_the_file_a_session_names(lab: Path) -> None:
    # the user's own copy of the skill, whose bytes the lab's author knows
    theirs = lab.parent / ".claude" / "skills" / "table-profile" / "SKILL.md"
    theirs.parent.mkdir(parents=True)
    shutil.copyfile(lab / SKILL, theirs)
    before = theirs.read_bytes()
    state = forge(lab, skill_file=str(theirs))
    r = apply(lab)
    assert r.code == 0, r.output
    applied = json.loads(r.stdout)
    assert applied["id"] == state["id"]  # the completed session, shown again and applied
    assert (lab / SKILL).read_bytes() == (session(lab) / "SKILL.md").read_bytes() != before
    assert applied["applied"]["file"] == applied["skill_file"] == str(lab / SKILL)
    assert Path(applied["applied"]["backup"]).parent == (lab / SKILL).parent
    assert theirs.read_bytes() == before
    assert list(theirs.parent.iterdir()) == [theirs]  # no .bak beside it


def test_a_session_that_does_not_match_the_lab_is_refused(lab: Path) -> None:
    victim = lab.parent / "project" / "pkg" / "__init__.py"  # empty: its content is known
    victim.parent.mkdir(parents=True)
    victim.write_bytes(b"")
    forge(lab, skill_file=str(victim), skill_sha256=hashlib.sha256(b"").hexdigest())
    before = snapshot(lab.parent)
    r = apply(lab)
    assert r.code == 2, r.output
    line = one_error_line(r.stderr)
    assert "optimize.json: skill_sha256:" in line, line
    assert snapshot(lab.parent) == before


@pytest.mark.parametrize("link", [SKILL, SKILL.parent, SKILL.parent.parent],
                         ids=["skill file", "skill folder", "skills folder"])
def test_apply_never_writes_through_a_symlinked_skill(lab: Path, link: Path) -> None:
    # the skill reached through a link to the user's files, with the very bytes it had:
    # the session's key matches, as it would after a run on the linked skill
    elsewhere = lab.parent / "elsewhere" / link.name
    elsewhere.parent.mkdir()
    shutil.move(lab / link, elsewhere)
    (lab / link).symlink_to(elsewhere, target_is_directory=elsewhere.is_dir())
    forge(lab, skill_file=os.path.realpath(lab / SKILL))  # what such a run records
    before = snapshot(lab.parent)
    r = apply(lab)
    assert r.code == 2, r.output
    line = one_error_line(r.stderr)
    assert "--apply:" in line, line
    assert snapshot(lab.parent) == before


def test_a_continued_session_never_reads_a_file_its_state_names(lab: Path) -> None:
    secret = lab.parent / ".ssh" / "id_ed25519"
    secret.parent.mkdir()
    secret.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nsecret\n")
    folder = session(lab)
    state = json.loads((folder / "optimize.json").read_text())
    best = state["best"]
    for rnd in state["rounds"]:
        for c in rnd["candidates"]:
            if c["id"] == best:
                c["file"] = str(secret)
    # left unfinished before its holdout step: the same command continues it
    shutil.rmtree(folder / "holdout")
    (folder / "SKILL.md").unlink()
    forge(lab, rounds=state["rounds"], status="cancelled", holdout=None, recommended=False,
          recommended_file=None)
    r = run_ix("optimize", "profiling", "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    after = json.loads(r.stdout)
    assert after["id"] == state["id"] and after["status"] == "completed"
    assert after["recommended"], after["holdout"]
    recommended = (folder / "SKILL.md").read_text()
    assert "secret" not in recommended and "PRIVATE KEY" not in recommended
    assert recommended == (folder / "candidates" / best / "table-profile" / "SKILL.md").read_text()
