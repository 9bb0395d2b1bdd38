"""`JsonDirectorySink` never writes outside its folder, whatever the name function returns."""

import os
from pathlib import Path

import pytest

from ix.matrix import Artifact, Construct, JsonDirectorySink


@pytest.mark.parametrize("name", ["../escape", "a/../../escape", "/etc/escape", "a//b", ".",
                                  "a\\b", "a\x00b", ""])
def test_a_name_that_would_leave_the_folder_is_refused(tmp_path: Path, name: str) -> None:
    root = tmp_path / "artifacts"
    sink = JsonDirectorySink(root, lambda a, c: name)
    with pytest.raises(ValueError, match="would leave"):
        sink.write(Artifact("kind", "p", 1), Construct("s"))
    assert sorted(p.name for p in tmp_path.rglob("*")) == []


def test_a_name_may_name_a_subfolder_of_its_kind(tmp_path: Path) -> None:
    sink = JsonDirectorySink(tmp_path, lambda a, c: f"{c.subject}/one")
    sink.write(Artifact("kind", "p", 1), Construct("s"))
    assert (tmp_path / "kind" / "s" / "one.json").is_file()
    assert [p.name for p in (tmp_path / "kind" / "s").iterdir()] == ["one.json"]


def test_the_guard_sees_each_path_before_it_is_written(tmp_path: Path) -> None:
    seen: list[Path] = []

    def guard(path: Path) -> None:
        seen.append(path)
        raise PermissionError("no")

    sink = JsonDirectorySink(tmp_path, lambda a, c: "x", guard=guard)
    with pytest.raises(PermissionError):
        sink.write(Artifact("kind", "p", 1), Construct("s"))
    assert seen == [tmp_path / "kind" / "x.json"] and not (tmp_path / "kind").exists()


def test_a_symlink_at_the_temporary_name_is_never_written_through(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text("keep", encoding="utf-8")
    (tmp_path / "kind").mkdir()
    # the temporary name used to be predictable, `.<name>.<pid>.tmp`: a link planted there
    (tmp_path / "kind" / f".x.json.{os.getpid()}.tmp").symlink_to(target)
    JsonDirectorySink(tmp_path, lambda a, c: "x").write(Artifact("kind", "p", 1), Construct("s"))
    assert target.read_text(encoding="utf-8") == "keep"
