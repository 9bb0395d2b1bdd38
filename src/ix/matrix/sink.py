"""Where artifacts go as they are made, so results survive the process and can be inspected."""

import dataclasses
import json
import os
import secrets
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
    A name may hold `/` (subfolders of the kind's folder) but never climbs out of it: an
    absolute name, or one with an empty, `.` or `..` part, is a `ValueError`. `guard`, if
    given, is called with each file's path before it is written (and may raise).
    """

    def __init__(self, root: Path, name: Callable[[Artifact, Construct[Any]], str], *,
                 guard: Callable[[Path], object] | None = None) -> None:
        self.root = Path(root)
        self.name = name
        self.guard = guard
        self._made: set[Path] = set()

    def write(self, artifact: Artifact, construct: Construct[Any]) -> None:
        kind, given = artifact.kind, self.name(artifact, construct)
        for what, text in (("kind", kind), ("name", given)):
            parts = text.split("/")
            if "\\" in text or "\x00" in text or any(p in ("", ".", "..") for p in parts) \
                    or (what == "kind" and len(parts) > 1):
                raise ValueError(f"artifact {what} {text!r} would leave {self.root}")
        path = self.root / kind / f"{given}.json"
        directory = path.parent
        if self.guard is not None:
            self.guard(path)
        if directory not in self._made:
            directory.mkdir(parents=True, exist_ok=True)
            self._made.add(directory)
        record = {
            "id": artifact.id,
            "kind": artifact.kind,
            "producer": artifact.producer,
            "created_at": artifact.created_at.isoformat(),
            "data": artifact.data,
        }
        text = json.dumps(record, default=to_jsonable, ensure_ascii=False)
        # a fresh name (O_EXCL): never written through something that stood there
        temporary = directory / f".{path.name}.{secrets.token_hex(6)}.tmp"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
