import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from matrix_support import arithmetic, collect_all, run_clean

from ix.matrix import Artifact, Construct, JsonDirectorySink, Orchestrator


def by_subject(artifact: Artifact, construct: Construct[Any]) -> str:
    return f"subject-{construct.subject}"


def test_json_directory_sink_writes_one_file_per_artifact_under_its_kind(tmp_path: Path) -> None:
    root = tmp_path / "artifacts"
    orchestrator = Orchestrator(
        arithmetic(), given=frozenset({"n"}), sink=JsonDirectorySink(root, by_subject)
    )
    outcomes = run_clean(
        collect_all(orchestrator, [Construct.seeded(i, {"n": i}) for i in (1, 2, 3)])
    )

    assert sorted(p.name for p in root.iterdir()) == ["numbers", "squares", "sum"]
    for kind in ("numbers", "squares", "sum"):
        assert sorted(p.name for p in (root / kind).iterdir()) == [
            "subject-1.json",
            "subject-2.json",
            "subject-3.json",
        ]
    done = next(o.construct for o in outcomes if o.construct.subject == 3)
    record = json.loads((root / "sum" / "subject-3.json").read_text(encoding="utf-8"))
    artifact = done.get("sum")
    assert record == {
        "id": artifact.id,
        "kind": "sum",
        "producer": "sum",
        "created_at": artifact.created_at.isoformat(),
        "data": 14,
    }
    assert datetime.fromisoformat(record["created_at"]) == artifact.created_at


def test_json_directory_sink_creates_directories_only_when_first_needed(tmp_path: Path) -> None:
    root = tmp_path / "not-yet"
    sink = JsonDirectorySink(root, lambda artifact, construct: artifact.id)
    assert not root.exists()
    sink.write(Artifact("only", "p", 1), Construct("s"))
    assert [p.name for p in root.iterdir()] == ["only"]


def test_json_directory_sink_serialises_models_dataclasses_sets_and_the_rest(
    tmp_path: Path,
) -> None:
    @dataclass
    class Point:
        x: int
        y: int

    class Model:  # duck-types a pydantic model
        def model_dump(self, mode: str) -> dict[str, str]:
            return {"mode": mode}

    data = {
        "point": Point(1, 2),
        "model": Model(),
        "tags": {"b", "a"},
        "pair": (1, 2),
        "path": Path("x"),
    }
    JsonDirectorySink(tmp_path, lambda a, c: "one").write(
        Artifact("mixed", "p", data), Construct("s")
    )
    written = json.loads((tmp_path / "mixed" / "one.json").read_text(encoding="utf-8"))["data"]
    assert written == {
        "point": {"x": 1, "y": 2},
        "model": {"mode": "json"},
        "tags": ["a", "b"],
        "pair": [1, 2],
        "path": "x",
    }


def test_json_directory_sink_leaves_no_temporary_files_and_overwrites_in_place(
    tmp_path: Path,
) -> None:
    sink = JsonDirectorySink(tmp_path, lambda a, c: "same")
    sink.write(Artifact("k", "p", 1), Construct("s"))
    sink.write(Artifact("k", "p", 2), Construct("s"))
    assert [p.name for p in (tmp_path / "k").iterdir()] == ["same.json"]
    assert json.loads((tmp_path / "k" / "same.json").read_text(encoding="utf-8"))["data"] == 2
