"""The unit of work of a graph, described by what it reads and what it writes."""

from typing import Any, Protocol, runtime_checkable

from ix.matrix.construct import Construct


@runtime_checkable
class Component(Protocol):
    """Reads the kinds in `requires` from a construct and returns the data of kind `provides`.

    A component returns plain data rather than an `Artifact` so it cannot misstate its own
    kind or producer: the orchestrator stamps those from `provides` and `name`. Declaring reads
    and writes up front is what lets the compiler order and parallelise components.
    """

    @property
    def name(self) -> str: ...

    @property
    def requires(self) -> frozenset[str]: ...

    @property
    def provides(self) -> str: ...

    async def run(self, construct: Construct[Any]) -> Any: ...
