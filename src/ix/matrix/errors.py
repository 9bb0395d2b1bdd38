"""Errors of the matrix: a graph that cannot run, and a component that failed while running."""

from collections.abc import Sequence
from typing import Any

from ix.matrix.construct import Construct


class DagError(Exception):
    """The components do not form a runnable graph; raised at compile time, before any work."""


class DuplicateComponentError(DagError):
    """Two components share a name, so artifacts and errors could not say which one acted."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"two components are named {name!r}; component names must be unique")


class MissingProviderError(DagError):
    """A component requires a kind that no component provides and that is not given."""

    def __init__(self, component: str, kind: str) -> None:
        self.component = component
        self.kind = kind
        super().__init__(
            f"component {component!r} requires kind {kind!r}, "
            "which no component provides and which is not given"
        )


class DuplicateProviderError(DagError):
    """Several sources provide one kind, so which artifact a reader sees would be ambiguous."""

    def __init__(self, kind: str, providers: Sequence[str]) -> None:
        self.kind = kind
        self.providers = tuple(providers)
        names = [repr(name) for name in self.providers]
        listed = ", ".join(names[:-1]) + " and " + names[-1]
        super().__init__(f"kind {kind!r} is provided by {listed}; exactly one may provide it")


class CycleError(DagError):
    """Components depend on each other in a loop; `cycle` lists them in data-flow order."""

    def __init__(self, cycle: Sequence[str]) -> None:
        self.cycle = tuple(cycle)
        path = " -> ".join(repr(name) for name in (*self.cycle, self.cycle[0]))
        super().__init__(f"components form a cycle: {path}")


class ComponentError(Exception):
    """A component raised; carries its name and the construct as it stood, for triage.

    The original exception is the `__cause__`. `construct` holds every artifact appended before
    the failure, so a caller can record partial progress instead of losing it.
    """

    def __init__(self, component: str, construct: Construct[Any], cause: BaseException) -> None:
        self.component = component
        self.construct = construct
        super().__init__(f"component {component!r} failed: {type(cause).__name__}: {cause}")
