"""The append-only ledger of artifacts gathered about one subject."""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from ix.matrix.artifact import Artifact

S = TypeVar("S")

_set = object.__setattr__


@dataclass(frozen=True, slots=True)
class Construct(Generic[S]):
    """Everything known about `subject`, as the artifacts that established it, in order.

    Immutable: `append` returns a new construct, so components running concurrently on one
    construct cannot see each other's half-finished work and every intermediate state stays
    valid. A latest-by-kind index is carried along and extended per append, keeping lookups
    O(1) on the hot path without rescanning the ledger.
    """

    subject: S
    artifacts: tuple[Artifact, ...] = ()
    _latest: dict[str, Artifact] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        artifacts = tuple(self.artifacts)
        _set(self, "artifacts", artifacts)
        _set(self, "_latest", {artifact.kind: artifact for artifact in artifacts})

    @classmethod
    def seeded(
        cls, subject: S, data: Mapping[str, Any], *, producer: str = "given"
    ) -> "Construct[S]":
        """A construct holding `data` up front (e.g. a probe's stimulus), one artifact per kind."""
        return cls(subject, tuple(Artifact(kind, producer, value) for kind, value in data.items()))

    def append(self, artifact: Artifact) -> "Construct[S]":
        """A new construct with `artifact` at the end; this one is left unchanged."""
        latest = self._latest.copy()
        latest[artifact.kind] = artifact
        new: Construct[S] = object.__new__(Construct)
        _set(new, "subject", self.subject)
        _set(new, "artifacts", (*self.artifacts, artifact))
        _set(new, "_latest", latest)
        return new

    def extend(self, artifacts: Iterable[Artifact]) -> "Construct[S]":
        """A new construct with `artifacts` appended in order."""
        construct = self
        for artifact in artifacts:
            construct = construct.append(artifact)
        return construct

    def get(self, kind: str) -> Artifact:
        """The latest artifact of `kind`; KeyError naming what is there if there is none."""
        try:
            return self._latest[kind]
        except KeyError:
            have = ", ".join(sorted(self._latest)) or "none"
            raise KeyError(f"construct has no artifact of kind {kind!r} (has: {have})") from None

    def data(self, kind: str) -> Any:
        """The data of the latest artifact of `kind`."""
        return self.get(kind).data

    def has(self, kind: str) -> bool:
        """Whether an artifact of `kind` has been recorded."""
        return kind in self._latest

    @property
    def kinds(self) -> frozenset[str]:
        """The kinds recorded so far."""
        return frozenset(self._latest)
