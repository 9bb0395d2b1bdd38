"""Where artifacts go as they are made, so results survive the process and can be inspected."""

import dataclasses
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ix.matrix.artifact import Artifact
from ix.matrix.construct import Construct


@runtime_checkable
class ArtifactSink(Protocol):
    """Receives each artifact right after it is appended, with the construct it now belongs to.

    Synchronous on purpose: it runs on the orchestrator's hot path, and a sink that needs to
    do slow I/O should buffer and hand off rather than stall the event loop per artifact.
    """

    def write(self, artifact: Artifact, construct: Construct[Any]) -> None: ...


def to_jsonable(obj: Any) -> Any:
    """`json.dumps` default hook: pydantic-like models, dataclasses, sets, then `str`.

    Duck-typed (`model_dump`) so the matrix needs no pydantic import.
    """
    model_dump = getattr(obj, "model_dump", None)
    if callable(model_dump) and not isinstance(obj, type):
        return model_dump(mode="json")
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    if isinstance(obj, set | frozenset):
        try:
            return sorted(obj)  # a set has no order of its own; make the file reproducible
        except TypeError:
            return list(obj)
    if isinstance(obj, tuple):
        return list(obj)
    return str(obj)


class JsonDirectorySink:
    """Writes each artifact to `root/<kind>/<name(artifact, construct)>.json`.

    One file per artifact keeps writes independent and lets a reader `ls` one kind. Files are
    written to a temporary name then renamed, so a reader never sees a half-written file.
    """

    def __init__(self, root: Path, name: Callable[[Artifact, Construct[Any]], str]) -> None:
        self.root = Path(root)
        self.name = name
        self._made: set[str] = set()

    def write(self, artifact: Artifact, construct: Construct[Any]) -> None:
        directory = self.root / artifact.kind
        if artifact.kind not in self._made:
            directory.mkdir(parents=True, exist_ok=True)
            self._made.add(artifact.kind)
        record = {
            "id": artifact.id,
            "kind": artifact.kind,
            "producer": artifact.producer,
            "created_at": artifact.created_at.isoformat(),
            "data": artifact.data,
        }
        text = json.dumps(record, default=to_jsonable, ensure_ascii=False)
        path = directory / f"{self.name(artifact, construct)}.json"
        temporary = directory / f".{path.name}.{os.getpid()}.tmp"
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)
